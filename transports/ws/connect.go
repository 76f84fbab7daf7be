package ws

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// Connection and handshake: connect runs the reconnect rounds (which
// endpoints, in which order, after which jittered wait), try dials one
// endpoint, adopt starts the connection's reader and pinger, and hello
// resumes or subscribes every stream on it; drop ends a connection.

// live is one connection and its reader and pinger.
type live struct {
	c       *Conn
	born    time.Time // handshake done
	closing atomic.Bool
	done    chan struct{}
	once    sync.Once
	acked   map[string]bool
}

func (l *live) close() {
	l.once.Do(func() {
		l.closing.Store(true)
		close(l.done)
		_ = l.c.Close()
	})
}

// lost handles the end of a connection: logged and reported as an event,
// unless we closed it ourselves. It is the Stream's own evidence and is not
// reported to the Path (see the package doc, "Evidence"). err holds no
// server-sent text (see sanitize).
func (s *Stream) lost(l *live, err error) {
	closing := l.closing.Load()
	l.close()
	if closing {
		return
	}
	s.event(StreamEvent{Kind: StreamEventConnectionLost, Endpoint: l.c.Endpoint(), Err: err})
}

// wait waits d, or until ctx ends or the Path is closed. A switch does not cut
// the wait short: every client's Path switches at about the same moment, and
// waking them all then would undo the jitter. The health turns SUSPENDED on
// time meanwhile.
func (s *Stream) wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	sus := time.NewTimer(time.Hour)
	sus.Stop()
	defer sus.Stop()
	if at := s.suspendAt(); !at.IsZero() {
		sus.Reset(time.Until(at))
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.path.ActiveChanged():
			if s.pathClosed() {
				return fmt.Errorf("ws: stream stopped: %w", pathdialer.ErrClosed)
			}
		case <-sus.C:
			s.reassess(time.Now())
		case <-t.C:
			return nil
		}
	}
}

// connect runs reconnect rounds (reconnectPolicy) until one connects and the
// subscription is sent: a jittered wait (none for the very first connect),
// then the round's candidates back to back. It returns an error only when ctx
// ends or the Path is closed.
func (s *Stream) connect(ctx context.Context, first bool) (*live, error) {
	s.reassess(time.Now())
	empty := false // the last round had no candidate
	// failedLast: the endpoints whose connect failed in the last round. The
	// Stream's own evidence: the next round tries them after the others.
	var failedLast []string
	for {
		if !first {
			if err := s.wait(ctx, s.pol.Wait(s.failed, s.retryAfter, s.rand(), empty)); err != nil {
				return nil, err
			}
		}
		first = false
		s.retryAfter = 0
		act, gen := s.path.Active()
		cands := s.round(act.Name, gen, failedLast)
		failedLast = failedLast[:0]
		empty = len(cands) == 0
		for _, name := range cands {
			l, err := s.try(ctx, name)
			if err == nil {
				s.connected(name, act.Name, gen)
				return l, nil
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			s.reassess(time.Now()) // SUSPENDED on time, even between dials
			if errors.Is(err, pathdialer.ErrClosed) {
				return nil, fmt.Errorf("ws: stream stopped: %w", err)
			}
			failedLast = append(failedLast, name)
			var he *HandshakeError
			if errors.As(err, &he) {
				s.retryAfter = max(s.retryAfter, he.RetryAfter)
			}
		}
		if s.pathClosed() {
			return nil, fmt.Errorf("ws: stream stopped: %w", pathdialer.ErrClosed)
		}
		s.failed++
	}
}

// round returns the endpoints a reconnect round tries, in order: the
// reconnectPolicy's candidates, with those that failed in the last round
// (failedLast) after the others, and the endpoint whose server just failed
// us (avoid) last of all.
func (s *Stream) round(active string, gen uint64, failedLast []string) []string {
	var targets []string
	if re, _ := s.path.ReadEndpoint(); re.Name != active {
		// The Path's degraded read-only mode names where reads may go.
		targets = append(targets, re.Name)
	}
	for _, t := range s.path.Engine().Targets() {
		targets = append(targets, t.Name)
	}
	cands := s.pol.Candidates(roundView{
		Active: active, Targets: targets, Fenced: s.path.Fenced,
		LostUnswitched: s.lostOK && s.lostGen == gen, Failed: s.failed,
	})
	if len(cands) > 1 && len(failedLast) > 0 {
		cands = slices.Clone(cands)
		slices.SortStableFunc(cands, func(a, b string) int {
			return cmp.Compare(b2i(slices.Contains(failedLast, a)), b2i(slices.Contains(failedLast, b)))
		})
	}
	if i := slices.Index(cands, s.avoid); i >= 0 && len(cands) > 1 {
		// Its server just failed us: another endpoint first.
		cands = append(slices.Delete(slices.Clone(cands), i, i+1), s.avoid)
	}
	s.avoid = ""
	return cands
}

// connected records a connection to name, made in a round that began with
// active as the Path's active endpoint, at token gen.
func (s *Stream) connected(name, active string, gen uint64) {
	// s.failed is not reset here: a connection counts as a success only once
	// it has lived HealthyAfter (see drop).
	s.lostOK = false
	s.seenGen, s.stay, s.migFails = gen, name != active, 0
	s.mu.Lock()
	if s.stats.Connects > 0 {
		s.stats.Reconnects++
	}
	s.stats.Connects++
	if name != active {
		s.stats.Fallbacks++
	}
	s.stats.Endpoint = name
	if !s.since.IsZero() {
		s.stats.Disconnected += time.Since(s.since)
		s.since = time.Time{}
	}
	s.mu.Unlock()
}

// try makes one read-only connection to name and sends the subscription; a
// failure is counted and reported as an event. Neither is reported to the
// Path: a connect proves that the market data server answers, not that
// orders go through, and a failed one may be this host's or the market data
// server's trouble alone (see the package doc, "Evidence").
func (s *Stream) try(ctx context.Context, name string) (*live, error) {
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	c, _, err := s.dialer.DialReadOnly(dctx, name, s.cfg.Header)
	cancel()
	if err == nil {
		l := s.adopt(c)
		if err = s.hello(l); err == nil {
			return l, nil
		}
		l.close()
	}
	if ctx.Err() != nil {
		return nil, err
	}
	s.count(func(st *Stats) { st.DialFailures++ })
	s.event(StreamEvent{Kind: StreamEventDialFailed, Endpoint: name, Err: err})
	return nil, err
}

// adopt starts the reader and pinger of a new connection.
func (s *Stream) adopt(c *Conn) *live {
	l := &live{c: c, born: time.Now(), done: make(chan struct{}), acked: map[string]bool{}}
	wait := s.cfg.PingInterval + s.cfg.PongTimeout
	extend := func() { _ = c.SetReadDeadline(time.Now().Add(wait)) }
	c.SetReadLimit(s.cfg.ReadLimit)
	c.SetPongHandler(func(string) error { extend(); return nil })
	c.SetPingHandler(func(data string) error {
		extend()
		err := c.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(s.cfg.PongTimeout))
		if errors.Is(err, websocket.ErrCloseSent) {
			return nil
		}
		return err
	})
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		for {
			// The deadline starts when we start reading: time spent waiting
			// for the loop (a slow Handler) is not silence of the peer.
			extend()
			_, data, err := c.ReadMessage()
			var f Frame
			if err != nil {
				err = sanitize(err, s.cfg.ReadLimit)
			} else if f, err = s.proto.Parse(data); err != nil {
				err = badFrame(err, len(data))
			}
			select {
			case s.in <- inbound{l: l, f: f, data: data, err: err}:
			case <-l.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(s.cfg.PingInterval)
		defer t.Stop()
		for {
			select {
			case <-l.done:
				return
			case <-t.C:
				_ = c.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.cfg.PongTimeout))
			}
		}
	}()
	return l
}

// hello resumes the streams we have a position for and subscribes the others
// (and those whose server restarted its numbering).
func (s *Stream) hello(l *live) error {
	after := map[string]Position{}
	var fresh []string
	for _, name := range s.cfg.Streams {
		if t := s.tracks[name]; t.subscribeOnHello() {
			fresh = append(fresh, name)
		} else {
			after[name] = Position{t.last, t.epoch}
			s.resuming[name] = l
		}
	}
	if len(after) > 0 {
		if err := s.send(l, func() ([]byte, error) { return s.resume(after) }); err != nil {
			return err
		}
	}
	if len(fresh) > 0 {
		if err := s.send(l, func() ([]byte, error) { return s.proto.Subscribe(fresh) }); err != nil {
			return err
		}
		s.count(func(st *Stats) { st.Subscribes += uint64(len(fresh)) })
	}
	now := time.Now()
	for _, name := range s.cfg.Streams {
		t := s.tracks[name]
		t.hello(now, slices.Contains(fresh, name))
	}
	s.dirty = true
	return nil
}

// resume builds a resume with the Protocol's EpochResumer when it has one.
func (s *Stream) resume(after map[string]Position) ([]byte, error) {
	if er, ok := s.proto.(EpochResumer); ok {
		return er.ResumeEpochs(after)
	}
	seqs := make(map[string]uint64, len(after))
	for name, p := range after {
		seqs[name] = p.Seq
	}
	return s.proto.Resume(seqs)
}

func (s *Stream) send(l *live, build func() ([]byte, error)) error {
	msg, err := build()
	if err != nil {
		return err
	}
	_ = l.c.SetWriteDeadline(time.Now().Add(s.cfg.PongTimeout))
	return l.c.WriteMessage(websocket.TextMessage, msg)
}

// frame applies one parsed server message: duplicates dropped, gaps and

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// drop handles the end of connection l (cur or next): lost, bad data, or
// given up on by the ladder (stall). The end of a move's new connection
// counts as a failed move; the end of the old one during a move hands the
// streams to the new one at once; otherwise the loop reconnects, after a
// wider backoff when the connection was short-lived or stalled.
func (s *Stream) drop(ctx context.Context, l *live, err error, stall bool) {
	// serverFault: what the server sent (or failed to repair) ended the
	// connection, not the network.
	serverFault := stall || errors.Is(err, ErrBadFrame) || errors.Is(err, ErrFrameTooLarge)
	s.lost(l, err)
	s.dirty = true
	switch {
	case l == s.next:
		s.next = nil
		s.migrateBy.Stop()
		s.migFailed(l.c.Endpoint(), err)
	case s.next != nil:
		s.cur, s.next = s.next, nil
		s.migrateBy.Stop()
		s.count(func(st *Stats) { st.Migrations++; st.Endpoint = s.cur.c.Endpoint() })
		s.follow(ctx)
	default:
		s.lostGen, s.lostOK = l.c.Token(), true
		short := s.cfg.HealthyAfter > 0 && time.Since(l.born) < s.cfg.HealthyAfter
		if stall || short {
			s.failed++ // the next reconnect waits a wider window
		} else {
			s.failed = 0
		}
		if serverFault {
			s.avoid = l.c.Endpoint()
		}
		s.cur = nil
		s.mu.Lock()
		if short && !stall {
			s.stats.ShortLived++
		}
		s.since = time.Now()
		s.stats.Endpoint = ""
		s.mu.Unlock()
	}
}
