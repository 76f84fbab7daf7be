package ws

import (
	"fmt"
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
