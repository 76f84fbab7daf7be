package fix

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfixgo/quickfix"
)

// sessionState is what the package knows of one session's connection.
type sessionState struct {
	mu            sync.Mutex
	loggedOn      bool
	endpoint      string // endpoint of the current logon
	lastEndpoint  string // endpoint of the last successful logon
	resetNext     bool
	changed       chan struct{} // closed and replaced on every change
	lastLogonTime time.Time

	// Logon attempts: attempting is set when a Logon is sent and cleared by
	// the logon's success or when the relay concludes it failed.
	attempting  bool
	attemptOn   string // endpoint the pending Logon was sent to
	cause       LogonCause
	causeDetail string
	failures    int    // consecutive failed logons
	failOn      string // endpoint of those failures
	halted      error  // non-nil: logons halted (ErrLogonHalted)
	resume      chan struct{}

	// The counterparty's release of a session dropped without a Logout is
	// expected 2 × HeartBtInt after the last message heard on it (logon
	// backoffs are capped from then on).
	heartBt   time.Duration // HeartBtInt from the settings
	live      atomic.Bool   // logged on (read by the log hook without the lock)
	lastHeard atomic.Int64  // unix nanoseconds of the last message heard while logged on

	// leaving, while a preserve-mode farewell waits (farewell.go), is closed
	// when the counterparty's Logout arrives.
	leaving chan struct{}
}

func (s *sessionState) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// LoggedOn reports whether a session is logged on, and on which endpoint.
func (in *Initiator) LoggedOn(sessionID quickfix.SessionID) (endpoint string, ok bool) {
	if in == nil {
		return "", false
	}
	s := in.sessions[sessionID]
	if s == nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoint, s.loggedOn
}

// WaitLoggedOn waits until the session is logged on to endpoint (any endpoint
// when endpoint is "") or ctx ends.
func (in *Initiator) WaitLoggedOn(ctx context.Context, sessionID quickfix.SessionID, endpoint string) error {
	if in == nil {
		return ErrNoInitiator
	}
	return in.waitLoggedOn(ctx, sessionID, endpoint, nil)
}

// waitLoggedOn is WaitLoggedOn that also gives up when stale reports true
// (checked at every change of the session's state).
func (in *Initiator) waitLoggedOn(ctx context.Context, sessionID quickfix.SessionID, endpoint string, stale func() bool) error {
	s := in.sessions[sessionID]
	if s == nil {
		return fmt.Errorf("%w: %v", ErrUnknownSession, sessionID)
	}
	for {
		s.mu.Lock()
		ok := s.loggedOn && (endpoint == "" || s.endpoint == endpoint)
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		if in.closed.Load() {
			return ErrClosed
		}
		var moved <-chan struct{}
		if stale != nil {
			// With a hot standby the session waited on is not the one that
			// moves: the path switching must wake the wait by itself.
			moved = in.path.ActiveChanged()
			if stale() {
				return fmt.Errorf("fix: the path switched away from %q while waiting for the session's logon", endpoint)
			}
		}
		select {
		case <-ch:
		case <-moved:
			if in.path.ActiveChanged() == moved { // the path closed: it will not move again
				stale = nil
			}
		case <-ctx.Done():
			return fmt.Errorf("fix: session %v not logged on to %q: %w", sessionID, endpoint, ctx.Err())
		}
	}
}
