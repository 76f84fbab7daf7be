package fix

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/internal/safetext"
	"github.com/brokerpath/brokerpath/pathdialer"
)

var logoutMark = []byte("\x0135=5\x01")

// sawIncoming reads the text of a Logout answering our Logon (quickfix does
// not hand such a Logout to the application).
func (in *Initiator) sawIncoming(sid quickfix.SessionID, b []byte) {
	s := in.sessions[sid]
	if s == nil {
		return
	}
	if s.live.Load() {
		s.lastHeard.Store(time.Now().UnixNano())
	}
	if !bytes.Contains(b, logoutMark) {
		return
	}
	s.mu.Lock()
	if s.leaving != nil { // a preserve-mode farewell is answered (farewell.go)
		close(s.leaving)
		s.leaving = nil
	}
	s.mu.Unlock()
	m := quickfix.NewMessage()
	if err := quickfix.ParseMessage(m, bytes.NewBuffer(append([]byte(nil), b...))); err != nil {
		return
	}
	text, _ := m.Body.GetString(tagText)
	s.mu.Lock()
	if s.attempting && s.cause == 0 {
		// The counterparty's text is escaped and cut: it reaches events,
		// errors and logs.
		s.cause, s.causeDetail = diagnoseLogout(text), "counterparty logged out: "+safetext.Bound(text)
	}
	s.mu.Unlock()
}

// haltErr returns the session's logon halt, if any.
func (s *sessionState) haltErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.halted
}

// beforeDial runs in the session's relay before every connection to the
// broker. It concludes the previous logon attempt (failed if quickfix sent a
// Logon that was never accepted), reports the diagnosis, waits the backoff
// (full jitter) and, while logons are halted, waits for Resume. It returns an
// error only when ctx ends.
func (in *Initiator) beforeDial(ctx context.Context, sid quickfix.SessionID) error {
	s := in.sessions[sid]
	if s == nil {
		return nil
	}
	active := in.target(sid)
	wait, events := in.concludeLogon(sid, s, active)
	for _, e := range events {
		in.emit(e)
	}
	if wait > 0 {
		// A switch ends the wait: the backoff was earned on the old endpoint.
		moved := in.path.ActiveChanged()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-moved:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	return in.waitUnhalted(ctx, sid, s, active)
}

// concludeLogon concludes session s's previous logon attempt before a
// connection to endpoint active: a Logon sent there and never accepted is a
// failure, which earns a backoff (returned) and, after
// Options.LogonFailureLimit refusals the counterparty explained, halts
// logons. A move to another endpoint forgets the failures and lifts a halt.
// It returns the events to report.
func (in *Initiator) concludeLogon(sid quickfix.SessionID, s *sessionState, active string) (wait time.Duration, events []Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failOn != active {
		// Another endpoint: earlier failures say nothing about this one, and a
		// halt decided there is lifted (it is decided again here if need be).
		s.failures, s.failOn = 0, active
		if s.halted != nil {
			s.halted = nil
			close(s.resume)
			s.resume = make(chan struct{})
			s.notify()
			events = append(events, Event{Kind: EventLogonResumed, Session: sid, Endpoint: active,
				Detail: "the path moved to another endpoint: trying its logon"})
		}
	}
	if s.attempting && s.attemptOn != active {
		// The pending Logon went to an endpoint the path has left (a switch
		// cut it): it says nothing about this one, and costs no backoff.
		s.attempting = false
	}
	if !s.attempting {
		return 0, events
	}
	s.attempting = false
	s.failures++
	cause, detail := s.cause, s.causeDetail
	if cause == 0 {
		cause, detail = LogonNoAnswer, "the connection ended before the counterparty accepted the Logon"
	}
	b := in.opts.LogonBackoff
	ceil := b.Initial
	for i := 1; i < s.failures && ceil < b.Max; i++ {
		ceil *= 2
	}
	ceil = min(ceil, b.Max)
	wait = s.capBackoff(in.jitter(ceil+1), in.opts.ReconnectInterval) // full jitter: uniform in [0, ceil]
	events = append(events, Event{Kind: EventLogonFailed, Session: sid, Endpoint: active, Cause: cause,
		Attempt: s.failures, Backoff: wait, Detail: detail + "; " + cause.advice(in.opts.Sequence)})
	// Halt only on a refusal the counterparty explained (sequence numbers,
	// credentials, a Logout): that is configuration, and retrying cannot
	// fix it. Silence keeps backing off: the Path's probes judge health.
	if in.opts.LogonFailureLimit > 0 && s.failures >= in.opts.LogonFailureLimit && s.halted == nil && cause != LogonNoAnswer {
		s.halted = fmt.Errorf("%w (%w): session %v on endpoint %q: %d consecutive logons failed, the last with %s (%s); %s; fix it, then call Initiator.Resume",
			ErrLogonHalted, pathdialer.ErrTradingHalted, sid, active, s.failures, cause, detail, cause.advice(in.opts.Sequence))
		s.notify() // SendOrder waiting for a logon gives up
		events = append(events, Event{Kind: EventLogonHalted, Session: sid, Endpoint: active, Cause: cause,
			Attempt: s.failures, Detail: s.halted.Error()})
	}
	return wait, events
}

// waitUnhalted returns at once unless session s's logons are halted; then it
// waits (no connection to the broker at all) for Resume, or for the path to
// move away from endpoint active, which concludes afresh (beforeDial) for
// the new endpoint.
func (in *Initiator) waitUnhalted(ctx context.Context, sid quickfix.SessionID, s *sessionState, active string) error {
	pathClosed := false
	for {
		var moved <-chan struct{}
		if !pathClosed {
			moved = in.path.ActiveChanged() // before reading Active: no lost wake-up
		}
		if in.target(sid) != active {
			return in.beforeDial(ctx, sid) // lifts a halt decided on the old endpoint
		}
		s.mu.Lock()
		halted, resume := s.halted, s.resume
		s.mu.Unlock()
		if halted == nil {
			return nil
		}
		select { // no connection to the broker at all while halted
		case <-resume:
		case <-moved:
			if in.path.ActiveChanged() == moved {
				pathClosed = true // closed, not switched: it will not move again
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// capBackoff bounds a logon backoff by the counterparty's expected release of
// the session: no wait runs past 2 × HeartBtInt after the last message heard
// on the session (when a broker that keeps one session per identity times a
// silent connection out: Binance locks the SenderCompID for 2 × HeartBtInt,
// quickfix acceptors drop it after about 2.4 × HeartBtInt), and from then on
// no wait is longer than ReconnectInterval, the interval of quickfix's own
// flat reconnect.
func (s *sessionState) capBackoff(wait, interval time.Duration) time.Duration {
	if s.heartBt <= 0 {
		return min(wait, interval)
	}
	until := time.Until(time.Unix(0, s.lastHeard.Load()).Add(2 * s.heartBt))
	if until > 0 {
		return min(wait, until)
	}
	return min(wait, interval)
}

// Resume clears a logon halt (ErrLogonHalted) on every session: they
// reconnect at once and SendOrder accepts orders again. It does nothing when
// no session is halted.
func (in *Initiator) Resume() error {
	if in == nil {
		return ErrNoInitiator
	}
	for sid, s := range in.sessions {
		s.mu.Lock()
		was := s.halted != nil
		if was {
			s.halted, s.failures, s.attempting = nil, 0, false
			close(s.resume)
			s.resume = make(chan struct{})
			s.notify()
		}
		s.mu.Unlock()
		if was {
			in.emit(Event{Kind: EventLogonResumed, Session: sid})
		}
	}
	return nil
}
