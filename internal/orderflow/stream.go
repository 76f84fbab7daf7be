package orderflow

import (
	"sort"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/transports/ws"
)

// StreamStats is what the price handler saw of one stream.
type StreamStats struct {
	Stream string
	// First and Last sequence numbers delivered; Messages delivered.
	First, Last uint64
	Messages    int
	// Duplicates: a sequence delivered again (or out of order). Gaps: a tick
	// that skipped ahead without a snapshot. Both must be 0.
	Duplicates, Gaps int
	// Snapshots after the first message (a resume the server could not
	// replay); Missed: ticks skipped by gaps and snapshots.
	Snapshots int
	Missed    uint64
	// Endpoints the stream was delivered from, in order; MaxStall is the
	// longest silence between two messages.
	Endpoints []string
	MaxStall  time.Duration
}

type streamState struct {
	StreamStats
	lastAt time.Time
}

// SeqChecker is a ws.Handler that verifies every stream's sequence: each
// number once, in order, no gap; snapshots flagged. Safe for concurrent use.
type SeqChecker struct {
	rec     *Recorder
	mu      sync.Mutex
	streams map[string]*streamState
}

// NewSeqChecker returns a checker that notes stream moves in rec (may be nil).
func NewSeqChecker(rec *Recorder) *SeqChecker {
	return &SeqChecker{rec: rec, streams: map[string]*streamState{}}
}

func (s *SeqChecker) note(format string, a ...any) {
	if s.rec != nil {
		s.rec.Note(Info, "ws", format, a...)
	}
}

// Handle is the ws.Handler.
func (s *SeqChecker) Handle(m ws.Message) {
	now := time.Now()
	s.mu.Lock()
	st, ok := s.streams[m.Stream]
	if !ok {
		st = &streamState{StreamStats: StreamStats{Stream: m.Stream, First: m.Seq, Last: m.Seq, Messages: 1, Endpoints: []string{m.Endpoint}}, lastAt: now}
		s.streams[m.Stream] = st
		s.mu.Unlock()
		kind := "tick"
		if m.Snapshot {
			kind = "snapshot"
		}
		s.note("stream %s subscribed on %s, first %s seq %d", m.Stream, m.Endpoint, kind, m.Seq)
		return
	}
	if stall := now.Sub(st.lastAt); stall > st.MaxStall {
		st.MaxStall = stall
	}
	st.lastAt = now
	if m.Seq <= st.Last {
		st.Duplicates++
		s.mu.Unlock()
		s.note("stream %s: seq %d delivered again (last %d): DUPLICATE", m.Stream, m.Seq, st.Last)
		return
	}
	prev, prevEP := st.Last, st.Endpoints[len(st.Endpoints)-1]
	skipped := m.Seq - prev - 1
	switch {
	case m.Snapshot:
		st.Snapshots++
		st.Missed += skipped
	case skipped > 0:
		st.Gaps++
		st.Missed += skipped
	}
	st.Last = m.Seq
	st.Messages++
	moved := m.Endpoint != prevEP
	if moved {
		st.Endpoints = append(st.Endpoints, m.Endpoint)
	}
	s.mu.Unlock()
	switch {
	case moved && skipped == 0:
		s.note("stream %s resumed on %s at seq %d (last from %s: %d) — no gap, no repeat", m.Stream, m.Endpoint, m.Seq, prevEP, prev)
	case moved:
		s.note("stream %s moved to %s at seq %d (last from %s: %d): %d tick(s) skipped (snapshot=%v)", m.Stream, m.Endpoint, m.Seq, prevEP, prev, skipped, m.Snapshot)
	case m.Snapshot:
		s.note("stream %s: snapshot at seq %d after %d: %d tick(s) skipped", m.Stream, m.Seq, prev, skipped)
	case skipped > 0:
		s.note("stream %s: GAP %d → %d", m.Stream, prev, m.Seq)
	}
}

// Stats returns every stream's counters, sorted by stream name.
func (s *SeqChecker) Stats() []StreamStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]StreamStats, 0, len(s.streams))
	for _, st := range s.streams {
		c := st.StreamStats
		c.Endpoints = append([]string(nil), st.Endpoints...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Stream < out[j].Stream })
	return out
}
