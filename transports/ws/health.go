package ws

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Health is what an application may assume about a Stream's data, after
// Ably's connection states.
type Health int32

const (
	// HealthConnecting: started, and some stream has not delivered its first
	// message yet.
	HealthConnecting Health = iota
	// HealthLive: connected, and every stream is contiguous (no gap, restart
	// or unanswered subscription being repaired).
	HealthLive
	// HealthRecovering: disconnected, or a stream is being repaired (a gap, a
	// restart, a server behind the client), for less than
	// StreamConfig.SuspendAfter. Data may be late; the Stream is escalating
	// on its own.
	HealthRecovering
	// HealthSuspended: connecting or recovering for SuspendAfter or longer.
	// Treat the streams' data as stale (do not price from it); the Stream
	// keeps trying, with backoff, and returns to HealthLive when repaired.
	HealthSuspended
	// HealthClosed: the Stream stopped (Close, the end of Start's context, or
	// the Path closed: see Err).
	HealthClosed
)

var healthNames = [...]string{"CONNECTING", "LIVE", "RECOVERING", "SUSPENDED", "CLOSED"}

// String returns the state's name in capitals ("LIVE").
func (h Health) String() string {
	if h < 0 || int(h) >= len(healthNames) {
		return fmt.Sprintf("Health(%d)", int(h))
	}
	return healthNames[h]
}

// MarshalText renders the name, for JSON.
func (h Health) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// StreamEventKind says what a StreamEvent reports.
type StreamEventKind int

const (
	// StreamEventHealth: the Stream's Health changed (From, To).
	StreamEventHealth StreamEventKind = iota
	// StreamEventGap: a stream skipped sequence numbers (Seq is the last
	// delivered, Got the message that arrived); a resume was sent.
	StreamEventGap
	// StreamEventEscalation: a stream's repair was not done in time and went
	// one rung up (Step: "resume", "snapshot" or "reconnect"; Trouble says
	// what is being repaired: "attach", "gap", "behind", "restart").
	StreamEventEscalation
	// StreamEventRepaired: a stream's repair finished (Trouble) after Took.
	StreamEventRepaired
	// StreamEventRestart: a stream's server restarted its numbering (a new
	// Epoch, or Got far below Seq); a snapshot of the new numbering is
	// delivered with Message.Restart set.
	StreamEventRestart
	// StreamEventConnectionLost: the connection to Endpoint was lost or
	// dropped (Err, which holds no server-sent text).
	StreamEventConnectionLost
	// StreamEventDialFailed: a connect to Endpoint failed, in a reconnect
	// round or a make-before-break move (Err, which holds no server-sent
	// text). It is the Stream's own evidence: it weighs on which endpoint
	// the Stream tries next, never on where orders go.
	StreamEventDialFailed
)

var streamEventNames = [...]string{"health", "gap", "escalation", "repaired", "restart", "connection-lost", "dial-failed"}

// String returns the kind's name ("gap").
func (k StreamEventKind) String() string {
	if k < 0 || int(k) >= len(streamEventNames) {
		return fmt.Sprintf("StreamEventKind(%d)", int(k))
	}
	return streamEventNames[k]
}

// MarshalText renders the name, for JSON.
func (k StreamEventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// StreamEvent is something a Stream reports through StreamConfig.OnEvent. No
// field holds server-sent text or an address.
type StreamEvent struct {
	Time time.Time
	Kind StreamEventKind
	// From and To: StreamEventHealth.
	From, To Health
	// Stream, Seq (last delivered), Got (the sequence that arrived), Epoch
	// (the new one), Trouble, Step and Took as the kind says.
	Stream  string
	Seq     uint64
	Got     uint64
	Epoch   string
	Trouble string
	Step    string
	Took    time.Duration
	// Endpoint and Err: StreamEventConnectionLost and StreamEventDialFailed.
	Endpoint string
	Err      error
}

// String renders the event on one line.
func (e StreamEvent) String() string {
	switch e.Kind {
	case StreamEventHealth:
		return fmt.Sprintf("ws: health %v → %v", e.From, e.To)
	case StreamEventGap:
		return fmt.Sprintf("ws: %s gap: last %d, got %d", e.Stream, e.Seq, e.Got)
	case StreamEventEscalation:
		return fmt.Sprintf("ws: %s %s not repaired in time: %s", e.Stream, e.Trouble, e.Step)
	case StreamEventRepaired:
		return fmt.Sprintf("ws: %s %s repaired after %v", e.Stream, e.Trouble, e.Took)
	case StreamEventRestart:
		return fmt.Sprintf("ws: %s restarted numbering (last %d, got %d, epoch %q)", e.Stream, e.Seq, e.Got, e.Epoch)
	case StreamEventConnectionLost:
		return fmt.Sprintf("ws: connection to %s lost: %v", e.Endpoint, e.Err)
	case StreamEventDialFailed:
		return fmt.Sprintf("ws: connect to %s failed: %v", e.Endpoint, e.Err)
	}
	return e.Kind.String()
}

// Stats are the counters a failover drill asks for, and the Health.
type Stats struct {
	// Endpoint the stream is connected to now ("" while disconnected).
	Endpoint string
	// Connects counts successful connections, Reconnects those after the first,
	// DialFailures failed dials (every candidate of a round counts), Fallbacks
	// reconnects that landed on an endpoint other than the active one,
	// Migrations make-before-break moves to the active endpoint.
	Connects, Reconnects, DialFailures, Fallbacks, Migrations uint64
	// Subscribes counts streams attached fresh; Resumes streams resumed from
	// their last sequence; Snapshots resumes the server answered with a snapshot.
	Subscribes, Resumes, Snapshots uint64
	// Messages handed to the Handler; Duplicates dropped (seq <= last); Gaps
	// detected and GapsRepaired (by replay or snapshot).
	Messages, Duplicates, Gaps, GapsRepaired uint64
	// ServerErrors counts error messages from the server.
	ServerErrors uint64
	// Disconnected is the total time without a live connection since Start.
	Disconnected time.Duration
	// Health is the Stream's health now (Stream.Health).
	Health Health
	// Held counts messages dropped while a gap or restart was being repaired
	// (the repair brings them, or a snapshot supersedes them).
	Held uint64
	// Restarts counts streams whose server restarted its numbering (a new
	// epoch, or sequence far below the last): each delivered a snapshot with
	// Message.Restart set.
	Restarts uint64
	// Escalations counts repair rungs climbed after the first request (a
	// resume again, a snapshot asked for, a reconnect); SnapshotRequests
	// the snapshots asked for; StallReconnects the connections dropped
	// because a repair was not done in time.
	Escalations, SnapshotRequests, StallReconnects uint64
	// OversizedFrames counts messages over ReadLimit; BadFrames messages the
	// Protocol could not parse. Each replaced its connection.
	OversizedFrames, BadFrames uint64
	// ShortLived counts connections that died within HealthyAfter of their
	// handshake (each counted as a failed round for the backoff).
	ShortLived uint64
}

// Health returns what the application may assume about the data now (see
// Health). It is safe to call from any goroutine, the Handler included, and
// is current even while the Handler runs: SUSPENDED is reached on time.
func (s *Stream) Health() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.healthLocked(time.Now())
}

func (s *Stream) healthLocked(now time.Time) Health {
	switch {
	case s.closed:
		return HealthClosed
	case !s.started:
		return HealthConnecting
	case !s.troubleSince.IsZero() && now.Sub(s.troubleSince) >= s.cfg.SuspendAfter:
		return HealthSuspended
	case !s.allKnown:
		return HealthConnecting
	case !s.troubleSince.IsZero():
		return HealthRecovering
	}
	return HealthLive
}

// Stats returns a copy of the counters.
func (s *Stream) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	st := s.stats
	if !s.since.IsZero() {
		st.Disconnected += now.Sub(s.since)
	}
	st.Health = s.healthLocked(now)
	return st
}

func (s *Stream) count(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

// event reports e to OnEvent and the log. Run goroutine only.
func (s *Stream) event(e StreamEvent) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	lvl := slog.LevelInfo
	switch e.Kind {
	case StreamEventEscalation, StreamEventRestart:
		lvl = slog.LevelWarn
	case StreamEventHealth:
		if e.To == HealthSuspended {
			lvl = slog.LevelWarn
		}
	}
	s.log.Log(context.Background(), lvl, e.String())
	if s.cfg.OnEvent != nil {
		s.cfg.OnEvent(e)
	}
}

// reassess recomputes what Health derives from (the oldest trouble, whether
// every stream started) and reports a change of health. Run goroutine only.
func (s *Stream) reassess(now time.Time) {
	var ts time.Time
	all := true
	for _, t := range s.tracks {
		if !t.known {
			all = false
		}
		if t.troubled() && (ts.IsZero() || t.since.Before(ts)) {
			ts = t.since
		}
	}
	s.mu.Lock()
	if !s.since.IsZero() && (ts.IsZero() || s.since.Before(ts)) {
		ts = s.since
	}
	s.troubleSince, s.allKnown = ts, all
	h := s.healthLocked(now)
	s.mu.Unlock()
	s.reportHealth(now, h)
}

func (s *Stream) reportHealth(now time.Time, h Health) {
	if h != s.reported {
		from := s.reported
		s.reported = h
		s.event(StreamEvent{Time: now, Kind: StreamEventHealth, From: from, To: h})
	}
}

// suspendAt returns when the health will turn SUSPENDED unless repaired; zero
// when it will not, or already did.
func (s *Stream) suspendAt() time.Time {
	if s.reported == HealthSuspended {
		return time.Time{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.troubleSince.IsZero() {
		return time.Time{}
	}
	return s.troubleSince.Add(s.cfg.SuspendAfter)
}
