package ws

import (
	"context"
	"fmt"
	"time"
)

// Recovery: each stream's track (track.go) says what its repair needs — a
// resume from the last sequence delivered, a snapshot, or a new connection —
// and when the next rung of its ladder is due (GapTimeout). The Stream sends
// those requests on the connection feeding the stream (repair), climbs the
// rungs as they fall due (climb), keeps one timer on the earliest of them
// (arm), and reports what each message did to a repair (noteOutcome).

// repair sends what a stream's repair asks for on the connection feeding it.
func (s *Stream) repair(ctx context.Context, l *live, name string, r request) {
	if l == nil || r == reqNone {
		return // disconnected: the next connection's hello asks
	}
	var err error
	switch r {
	case reqResume:
		t := s.tracks[name]
		err = s.send(l, func() ([]byte, error) { return s.resume(map[string]Position{name: {t.last, t.epoch}}) })
	case reqSnapshot:
		s.count(func(st *Stats) { st.SnapshotRequests++ })
		err = s.send(l, func() ([]byte, error) { return s.proto.Subscribe([]string{name}) })
	case reqReconnect:
		t := s.tracks[name]
		s.count(func(st *Stats) { st.StallReconnects++ })
		s.drop(ctx, l, fmt.Errorf("%w: %s %s for %v", ErrStall, name, t.trouble, time.Since(t.since).Round(time.Millisecond)), true)
		return
	}
	if err != nil {
		s.drop(ctx, l, fmt.Errorf("ws: send %s for %s: %w", r, name, err), false)
	}
}

// feeder returns the connection a stream's messages come from: a move's new
// connection once it answered for the stream, the current one otherwise.
func (s *Stream) feeder(name string) *live {
	if s.next != nil && s.next.acked[name] {
		return s.next
	}
	return s.cur
}

// climb fires every rung that is due.
func (s *Stream) climb(ctx context.Context, now time.Time) {
	for _, name := range s.cfg.Streams {
		t := s.tracks[name]
		for r := t.fire(now, s.cfg.GapTimeout); r != reqNone; r = t.fire(now, s.cfg.GapTimeout) {
			s.dirty = true
			s.count(func(st *Stats) { st.Escalations++ })
			s.event(StreamEvent{Time: now, Kind: StreamEventEscalation, Stream: name, Seq: t.last, Trouble: t.trouble.String(), Step: r.String()})
			s.repair(ctx, s.feeder(name), name, r)
		}
	}
}

// arm sets the wake timer to the next rung due or the suspension.
func (s *Stream) arm() {
	var at time.Time
	for _, t := range s.tracks {
		if d := t.due(s.cfg.GapTimeout); !d.IsZero() && (at.IsZero() || d.Before(at)) {
			at = d
		}
	}
	if d := s.suspendAt(); !d.IsZero() && (at.IsZero() || d.Before(at)) {
		at = d
	}
	s.wake.Stop()
	if !at.IsZero() {
		s.wake.Reset(time.Until(at))
	}
}

// answered counts the first answer on l to the resume its hello sent for the
// message's stream: a resume honoured, or answered with a snapshot.
func (s *Stream) answered(l *live, f Frame) {
	if r := s.resuming[f.Stream]; r == l {
		delete(s.resuming, f.Stream)
		if f.Kind == FrameSnapshot {
			s.count(func(st *Stats) { st.Snapshots++ })
		} else {
			s.count(func(st *Stats) { st.Resumes++ })
		}
	}
}

// noteOutcome reports what one message did to its stream's repair: a trouble
// begun (a gap, a restart), a message dropped or held, a repair done. prior
// is the stream's track before the message, t the track after it.
func (s *Stream) noteOutcome(now time.Time, f Frame, prior track, t *track, o outcome) {
	if o.began != troubleNone || o.ended != troubleNone || !prior.known || o.restart {
		s.dirty = true
	}
	switch o.began {
	case troubleGap:
		s.count(func(st *Stats) { st.Gaps++ })
		s.event(StreamEvent{Time: now, Kind: StreamEventGap, Stream: f.Stream, Seq: prior.last, Got: f.Seq})
	case troubleRestart:
		s.event(StreamEvent{Time: now, Kind: StreamEventRestart, Stream: f.Stream, Seq: prior.last, Got: f.Seq, Epoch: f.Epoch})
	}
	switch o.v {
	case vDrop:
		s.count(func(st *Stats) { st.Duplicates++ })
	case vHold:
		s.count(func(st *Stats) { st.Held++ })
	}
	if o.ended == troubleGap {
		s.count(func(st *Stats) { st.GapsRepaired++ })
	}
	// A first snapshot in time, or a connection briefly behind (a replay
	// overlapping what was delivered), is no news.
	if o.ended == troubleGap || o.ended == troubleRestart || (o.ended != troubleNone && o.escalated) {
		s.event(StreamEvent{Time: now, Kind: StreamEventRepaired, Stream: f.Stream, Seq: t.last, Trouble: o.ended.String(), Took: now.Sub(prior.since)})
	}
}
