package fix

import (
	"errors"
	"fmt"
	"time"

	"github.com/quickfixgo/quickfix"
)

// errFarewellUnanswered: the counterparty did not answer the preserve-mode
// Logout before the farewell's deadline.
var errFarewellUnanswered = errors.New("fix: the counterparty did not answer the Logout before the farewell's deadline")

// sayFarewell is a session's preserve-mode farewell (Options.PreserveLogout):
// quickfix sends a Logout carrying the venue's fields to keep resting orders,
// in sequence, and the farewell waits for the counterparty's Logout until
// deadline. The Path aborts the connection when it returns.
func (in *Initiator) sayFarewell(sid quickfix.SessionID, deadline time.Time) error {
	s := in.sessions[sid]
	if s == nil || !s.live.Load() {
		return nil // not logged on: nothing to log out of
	}
	answered := make(chan struct{})
	s.mu.Lock()
	s.leaving = answered
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.leaving == answered {
			s.leaving = nil
		}
		s.mu.Unlock()
	}()
	msg := quickfix.NewMessage()
	msg.Header.SetField(tagMsgType, quickfix.FIXString(msgTypeLogout))
	for tag, v := range in.opts.PreserveLogout {
		msg.Body.SetField(tag, quickfix.FIXString(v))
	}
	if err := quickfix.SendToTarget(msg, sid); err != nil {
		return fmt.Errorf("fix: preserve-mode Logout of %v: %w", sid, err)
	}
	in.log.Info("fix: leaving with a Logout that keeps resting orders", "session", sid.String())
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-answered:
		return nil
	case <-t.C:
		return errFarewellUnanswered
	}
}

// codWithin is how long after a session's connection is cut a venue that
// detects the drop by missed heartbeats may still cancel its orders: it
// times the silent connection out after about 2.4 × HeartBtInt from the
// last message (quickfix acceptors; Binance locks the session for 2 ×),
// and the last message left no later than the cut. 2.5 × HeartBtInt, plus
// 500 ms for the venue to act, bounds it. 0 when HeartBtInt is unknown.
// Sources: quickfix sends a TestRequest after 1.2 × HeartBtInt of silence
// and drops the session after another 1.2 × (quickfixgo v0.9.10
// session_state.go and in_session.go, peerTimer; the same rule in
// https://github.com/quickfixgo/quickfix); Binance closes a silent session
// after 2 × HeartBtInt, as the package documentation cites
// (https://developers.binance.com/docs/binance-spot-api-docs/fix-api).
func codWithin(heartBt time.Duration) time.Duration {
	if heartBt <= 0 {
		return 0
	}
	return heartBt*5/2 + 500*time.Millisecond
}
