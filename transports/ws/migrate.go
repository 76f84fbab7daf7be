package ws

import (
	"context"
	"fmt"
)

// A Stream follows the Path's switches make-before-break: when the active
// endpoint is not the one feeding the streams, it dials the active one
// (follow), says hello on the new connection (migrated), and moves each
// stream over as the new connection answers for it; when every stream has
// answered, or MigrateTimeout is over, the old connection is closed
// (cutover). A move that keeps failing leaves the stream where it is until
// the next switch (migFailed).

// dialResult is the result of a move's dial.
type dialResult struct {
	endpoint string
	c        *Conn
	err      error
}

// follow starts a make-before-break move to the active endpoint when the
// stream is elsewhere and not told to stay.
func (s *Stream) follow(ctx context.Context) {
	if _, gen := s.path.Active(); gen != s.seenGen {
		s.seenGen, s.stay, s.migFails = gen, false, 0
		s.retry.Stop()
		s.retryC = nil
	}
	ep, _ := s.path.Active()
	if s.cur == nil || s.next != nil || s.migrating != nil || s.retryC != nil || s.stay ||
		s.cur.c.Endpoint() == ep.Name || s.path.Fenced(ep.Name) {
		return
	}
	s.migrating = make(chan dialResult, 1)
	s.wg.Add(1)
	go func(ch chan dialResult, name string) {
		defer s.wg.Done()
		dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
		defer cancel()
		c, _, err := s.dialer.DialReadOnly(dctx, name, s.cfg.Header)
		ch <- dialResult{name, c, err}
	}(s.migrating, ep.Name)
}

// migrated takes the result of a move's dial: the new connection resumes or
// subscribes every stream and has MigrateTimeout to answer for all of them.
func (s *Stream) migrated(r dialResult) {
	if r.err != nil {
		s.migFailed(r.endpoint, r.err)
		return
	}
	l := s.adopt(r.c)
	if err := s.hello(l); err != nil {
		l.close()
		s.migFailed(r.endpoint, err)
		return
	}
	s.next = l
	s.migrateBy.Reset(s.cfg.MigrateTimeout)
}

// migrationDue ends a move whose MigrateTimeout is over: the new connection
// feeds every stream from now on.
func (s *Stream) migrationDue(ctx context.Context) {
	if s.next != nil {
		s.cutover()
		s.follow(ctx)
	}
}

// cutover closes the old connection and makes the new one feed the streams.
func (s *Stream) cutover() {
	s.cur.close()
	s.cur, s.next = s.next, nil
	s.migrateBy.Stop()
	s.count(func(st *Stats) { st.Migrations++; st.Endpoint = s.cur.c.Endpoint() })
}

// migFailed counts a failed move: it is tried again after a backoff delay,
// or, after FailuresBeforeFallback failures in a row, not until the next
// switch.
func (s *Stream) migFailed(endpoint string, err error) {
	s.count(func(st *Stats) { st.DialFailures++ })
	s.event(StreamEvent{Kind: StreamEventDialFailed, Endpoint: endpoint, Err: fmt.Errorf("make-before-break: %w", err)})
	s.migFails++
	if s.migFails >= s.cfg.FailuresBeforeFallback {
		s.stay = true // until the next switch
		return
	}
	s.retry.Reset(s.pol.Delay(s.migFails, 0, s.rand()))
	s.retryC = s.retry.C
}
