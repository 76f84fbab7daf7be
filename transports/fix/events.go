package fix

import (
	"fmt"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/internal/safetext"
)

// EventKind says what an Initiator Event reports.
type EventKind int

const (
	// EventLogonFailed: a logon was refused or never answered; Cause is the
	// diagnosis, Attempt the number of consecutive failures, Backoff the wait
	// before the next attempt.
	EventLogonFailed EventKind = iota + 1
	// EventLogonHalted: LogonFailureLimit consecutive failures; the session
	// stops reconnecting and SendOrder fails with ErrLogonHalted until Resume.
	EventLogonHalted
	// EventLogonResumed: Resume cleared a logon halt.
	EventLogonResumed
	// EventStatusUnsupported: the counterparty answered an OrderStatusRequest
	// with "unsupported message type"; the reconciler stops asking it and uses
	// its configured fallback (Detail says which).
	EventStatusUnsupported
)

// String returns a short lower-case name.
func (k EventKind) String() string {
	switch k {
	case EventLogonFailed:
		return "logon-failed"
	case EventLogonHalted:
		return "logon-halted"
	case EventLogonResumed:
		return "logon-resumed"
	case EventStatusUnsupported:
		return "status-unsupported"
	}
	return "unknown"
}

// LogonCause is the diagnosis of a failed logon.
type LogonCause int

const (
	// LogonNoAnswer: the connection ended or timed out before the counterparty
	// answered the Logon.
	LogonNoAnswer LogonCause = iota + 1
	// LogonSeqTooLow: the counterparty's Logon carried a MsgSeqNum lower than
	// the session expected: the counterparty restarted its numbers (it resets
	// at logon, or this endpoint is another session than the last one).
	LogonSeqTooLow
	// LogonSeqTooHigh: the counterparty refused our MsgSeqNum as too high or
	// too low for its own session state ("MsgSeqNum too low/high" in its
	// Logout): our numbers restarted while the counterparty's did not.
	LogonSeqTooHigh
	// LogonRejected: the counterparty answered the Logon with a Logout (Text
	// says why) that names no sequence or credential problem.
	LogonRejected
	// LogonCredentials: the counterparty's Logout names the credentials
	// (user name, password, authentication).
	LogonCredentials
)

// String returns a short lower-case name.
func (c LogonCause) String() string {
	switch c {
	case LogonNoAnswer:
		return "no-answer"
	case LogonSeqTooLow:
		return "counterparty-seq-too-low"
	case LogonSeqTooHigh:
		return "our-seq-refused"
	case LogonRejected:
		return "logon-rejected"
	case LogonCredentials:
		return "credentials"
	}
	return "unknown"
}

// advice says what to change for a cause under the current sequence model.
func (c LogonCause) advice(m SequenceModel) string {
	switch c {
	case LogonSeqTooLow:
		if m != SequenceResetOnLogon {
			return "the counterparty restarts its sequence numbers at logon: choose Options.Sequence = SequenceResetOnLogon (or SequenceResetOnSwitch if it keeps numbers across reconnects to one region)"
		}
		return "the counterparty's sequence numbers are below ours although every logon resets: check the broker's session configuration"
	case LogonSeqTooHigh:
		if m != SequenceContinue {
			return "the counterparty keeps its sequence numbers while we reset them: choose Options.Sequence = SequenceContinue (one session across regions)"
		}
		return "the counterparty refuses our sequence numbers: it may expect a reset at logon (SequenceResetOnLogon) or its session is out of step; ask the broker"
	case LogonCredentials:
		return "check the Logon's credentials (Username 553, Password 554) set in the application's ToAdmin"
	case LogonRejected:
		return "read the counterparty's Logout text"
	}
	return "check that the broker's FIX acceptor is up and that this session (SenderCompID/TargetCompID) is configured there"
}

// Event is one thing the Initiator reports through Options.OnEvent.
type Event struct {
	Kind     EventKind
	Time     time.Time
	Session  quickfix.SessionID
	Endpoint string
	// Cause and Attempt: for logon events.
	Cause   LogonCause
	Attempt int
	// Backoff is the wait before the next logon attempt (EventLogonFailed).
	Backoff time.Duration
	// Detail is the counterparty's text or what was decided; never credentials.
	// The counterparty's part is escaped (control characters as Go escapes)
	// and cut to 256 bytes with a note of its length; Detail to 2 KiB.
	Detail string
}

// String renders the event on one line.
func (e Event) String() string {
	s := fmt.Sprintf("fix %s session=%v endpoint=%s", e.Kind, e.Session, e.Endpoint)
	if e.Cause != 0 {
		s += fmt.Sprintf(" cause=%s attempt=%d", e.Cause, e.Attempt)
	}
	if e.Backoff > 0 {
		s += fmt.Sprintf(" backoff=%v", e.Backoff.Round(time.Millisecond))
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (in *Initiator) emit(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Detail = safetext.BoundN(e.Detail, safetext.FieldMax)
	in.log.Warn(e.String())
	if in.opts.OnEvent != nil {
		in.opts.OnEvent(e)
	}
}
