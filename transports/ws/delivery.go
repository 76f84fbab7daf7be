package ws

import (
	"context"
	"errors"
	"time"
)

// Delivery: every connection's reader hands the loop what it read (an
// inbound); receive decides whose it is, and frame applies it to its
// stream's track and hands the Handler what is next in order.

// inbound is one read from a connection: a parsed message, or the error that
// ended the connection.
type inbound struct {
	l    *live
	f    Frame
	data []byte
	err  error
}

// receive handles one read from a connection: a message, or the error that
// ended the connection.
func (s *Stream) receive(ctx context.Context, in inbound) {
	switch {
	case in.l != s.cur && in.l != s.next:
		// A connection already replaced: its frames are covered by the
		// resume on its successor.
	case in.err != nil:
		switch {
		case errors.Is(in.err, ErrFrameTooLarge):
			s.count(func(st *Stats) { st.OversizedFrames++ })
		case errors.Is(in.err, ErrBadFrame):
			s.count(func(st *Stats) { st.BadFrames++ })
		}
		s.drop(ctx, in.l, in.err, false)
	case in.l == s.cur && s.next != nil && (in.f.Kind == FrameTick || in.f.Kind == FrameSnapshot) && s.next.acked[in.f.Stream]:
		// The new connection answered for this stream: from here its
		// frames are the stream, contiguous from the resume point, and
		// the old connection's are not needed (mixing the two could
		// look like a gap).
	default:
		if r := s.frame(in); r != reqNone {
			s.repair(ctx, in.l, in.f.Stream, r)
		}
		if s.next != nil && in.l == s.next && len(s.next.acked) == len(s.cfg.Streams) {
			s.cutover()
			s.follow(ctx)
		}
	}
}

// frame applies one parsed server message: duplicates dropped, gaps and
// restarts repaired, everything else handed to the Handler in order. It
// returns what to send at once on the message's connection.
func (s *Stream) frame(in inbound) request {
	f := in.f
	switch f.Kind {
	case FrameError:
		s.count(func(st *Stats) { st.ServerErrors++ })
		s.log.Warn("ws: server error", "endpoint", in.l.c.Endpoint(), "message", redact(f.Err))
		return reqNone
	case FrameOther:
		return reqNone
	}
	t := s.tracks[f.Stream]
	if t == nil {
		return reqNone
	}
	in.l.acked[f.Stream] = true
	s.answered(in.l, f)
	now := time.Now()
	prior := *t
	o := t.frame(now, f, s.cfg.ReplayWindow)
	s.noteOutcome(now, f, prior, t, o)
	if o.v != vDeliver {
		return o.req
	}
	if o.restart {
		s.count(func(st *Stats) { st.Restarts++ })
		if prior.trouble != troubleRestart {
			s.event(StreamEvent{Time: now, Kind: StreamEventRestart, Stream: f.Stream, Seq: prior.last, Got: f.Seq, Epoch: f.Epoch})
		}
	}
	s.count(func(st *Stats) { st.Messages++ })
	s.cfg.Handler(Message{Stream: f.Stream, Seq: f.Seq, Snapshot: f.Kind == FrameSnapshot, Restart: o.restart,
		Epoch: f.Epoch, Data: in.data, Endpoint: in.l.c.Endpoint()})
	return o.req
}
