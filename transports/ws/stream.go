package ws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// ErrStreamClosed is returned by Start after Close, or when called twice.
var ErrStreamClosed = errors.New("ws: stream closed or already started")

// Message is one sequenced message handed to the Handler.
type Message struct {
	// Stream and Seq identify the message; Seq is strictly greater than the
	// previous Seq the Handler saw for Stream.
	Stream string
	Seq    uint64
	// Snapshot is true when the message is the stream's state as of Seq rather
	// than the tick Seq: the ticks before it were not (all) delivered.
	Snapshot bool
	// Data is the raw server message; the Handler may keep it.
	Data []byte
	// Endpoint is the endpoint the message arrived from.
	Endpoint string
}

// Handler receives messages from one goroutine, in order per stream, once per
// sequence number. It runs on the Stream's own loop: while it runs, nothing
// else is handled (a switch, a migration, a lost connection wait), up to 64
// frames queue, and then the connections stop being read, so the server may
// drop a client that falls too far behind. The time a connection waits for the
// Handler is not counted as silence by the ping timeout. Keep it short; hand
// slow work to your own goroutine.
type Handler func(Message)

// StreamConfig configures a Stream. Start from DefaultStreamConfig.
type StreamConfig struct {
	// Streams to subscribe to; at least one, no duplicates.
	Streams []string
	// Handler is required.
	Handler Handler
	// Protocol is the wire protocol; nil means JSONProtocol.
	Protocol Protocol
	// Dialer is the base WebSocket dialer (TLS config, subprotocols, buffers);
	// nil means websocket.DefaultDialer's settings. See Dialer.
	Dialer *websocket.Dialer
	// Header is sent with every handshake (credentials go here, not in the URL).
	Header http.Header
	// Backoff between reconnect attempts, with full jitter.
	Backoff Backoff
	// FailuresBeforeFallback whole reconnect rounds failed in a row widen the
	// candidates from the active endpoint to every fresh-healthy endpoint (see
	// ReconnectPolicy); as many failed make-before-break dials in a row keep
	// the stream where it is until the next switch. >= 1.
	FailuresBeforeFallback int
	// DialTimeout bounds one connect (TCP, TLS and handshake). > 0.
	DialTimeout time.Duration
	// PingInterval between client pings. > 0.
	PingInterval time.Duration
	// PongTimeout: a connection silent (no message, ping or pong) for
	// PingInterval+PongTimeout is dead. > 0.
	PongTimeout time.Duration
	// SwitchCheck is ignored.
	//
	// Deprecated: the Stream watches Path.ActiveChanged and follows a switch at
	// once, without polling.
	SwitchCheck time.Duration
	// MigrateTimeout bounds how long a make-before-break move keeps the old
	// connection while waiting for the new one to answer every stream. > 0.
	MigrateTimeout time.Duration
	// MaxRetryAfter caps how long a server's Retry-After is honoured. > 0.
	MaxRetryAfter time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultStreamConfig returns seed 002's settings: full jitter from 1 s up to
// 60 s, fallback after 3 failed rounds in a row, pings every 5 s with 5 s to
// answer, 10 s to connect, 5 s to migrate, Retry-After honoured up to 2
// minutes. Streams and Handler must be set.
func DefaultStreamConfig() StreamConfig {
	return StreamConfig{
		Backoff:                DefaultBackoff(),
		FailuresBeforeFallback: 3,
		DialTimeout:            10 * time.Second,
		PingInterval:           5 * time.Second,
		PongTimeout:            5 * time.Second,
		MigrateTimeout:         5 * time.Second,
		MaxRetryAfter:          2 * time.Minute,
	}
}

// Validate names the first field that cannot work.
func (c StreamConfig) Validate() error {
	bad := func(f, why string) error { return fmt.Errorf("%w: %s %s", pathdialer.ErrInvalidConfig, f, why) }
	switch {
	case len(c.Streams) == 0:
		return bad("Streams", "is empty")
	case c.Handler == nil:
		return bad("Handler", "is nil")
	case c.Backoff.Base <= 0:
		return bad("Backoff.Base", "must be > 0")
	case c.Backoff.Cap < c.Backoff.Base:
		return bad("Backoff.Cap", "must be >= Backoff.Base")
	case c.FailuresBeforeFallback < 1:
		return bad("FailuresBeforeFallback", "must be >= 1")
	case c.DialTimeout <= 0, c.PingInterval <= 0, c.PongTimeout <= 0, c.MigrateTimeout <= 0, c.MaxRetryAfter <= 0:
		return bad("DialTimeout, PingInterval, PongTimeout, MigrateTimeout and MaxRetryAfter", "must be > 0")
	}
	seen := map[string]bool{}
	for _, s := range c.Streams {
		if s == "" || seen[s] {
			return bad("Streams", fmt.Sprintf("has an empty or duplicate name %q", s))
		}
		seen[s] = true
	}
	return nil
}

// Stats are the counters seed 002's drill asks for.
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
}

// Stream is a resilient subscription to sequenced streams over a Path: it hands
// the Handler every stream's messages in order and once per sequence number
// across reconnects and region switches, reconnects in jittered rounds
// (ReconnectPolicy), and follows the Path's switches make-before-break over
// read-only connections. Create it with NewStream, then Start; Close stops
// every goroutine it started.
type Stream struct {
	path   *pathdialer.Path
	cfg    StreamConfig
	pol    ReconnectPolicy
	proto  Protocol
	dialer *Dialer
	log    *slog.Logger

	in   chan inbound
	wg   sync.WaitGroup
	life sync.Mutex
	run  bool
	stop context.CancelFunc
	done chan struct{}

	mu    sync.Mutex
	stats Stats
	since time.Time // disconnected since (zero while connected)
	err   error     // why the stream stopped on its own

	// Owned by the run goroutine.
	last      map[string]uint64
	known     map[string]bool
	resuming  map[string]*live     // resume sent on this conn, first answer not seen
	repairing map[string]time.Time // gap repair resume sent at
	// seenGen is the Path generation the stream last acted on; stay keeps it
	// on its current endpoint until the next switch (it is a fallback, or
	// make-before-break dials kept failing).
	seenGen uint64
	stay    bool
	// Reconnect rounds failed in a row, the largest Retry-After of the last
	// one, and the generation of the connection that was lost (lostOK false
	// when the last connection was closed by us or there was none).
	failed     int
	retryAfter time.Duration
	lostGen    uint64
	lostOK     bool
	// make-before-break dials that failed since the last switch.
	migFails int
}

// NewStream validates cfg and returns a Stream that is not yet connected.
func NewStream(path *pathdialer.Path, cfg StreamConfig) (*Stream, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d, err := NewDialer(path, cfg.Dialer)
	if err != nil {
		return nil, err
	}
	s := &Stream{
		path: path, cfg: cfg, proto: cfg.Protocol, dialer: d, log: cfg.Logger,
		pol:       ReconnectPolicy{Backoff: cfg.Backoff, FailuresBeforeFallback: cfg.FailuresBeforeFallback, MaxRetryAfter: cfg.MaxRetryAfter},
		in:        make(chan inbound, 64),
		done:      make(chan struct{}),
		last:      map[string]uint64{},
		known:     map[string]bool{},
		resuming:  map[string]*live{},
		repairing: map[string]time.Time{},
	}
	s.cfg.Streams = slices.Clone(cfg.Streams)
	s.cfg.Header = cfg.Header.Clone()
	if s.proto == nil {
		s.proto = JSONProtocol{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Start connects in the background and keeps the stream running until ctx ends,
// Close is called, or the Path is closed (then Err says so). It returns at
// once; ErrStreamClosed if already started or closed.
func (s *Stream) Start(ctx context.Context) error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.run || s.stop != nil {
		return ErrStreamClosed
	}
	s.run = true
	ctx, s.stop = context.WithCancel(ctx)
	_, s.seenGen = s.path.Active()
	s.mu.Lock()
	s.since = time.Now()
	s.mu.Unlock()
	go func() {
		defer close(s.done)
		s.loop(ctx)
		s.wg.Wait()
	}()
	return nil
}

// Close stops the stream: it closes its connections and returns when every
// goroutine it started has returned. Idempotent.
func (s *Stream) Close() error {
	s.life.Lock()
	if s.stop == nil {
		s.stop = func() {}
		s.life.Unlock()
		return nil
	}
	s.stop()
	started := s.run
	s.life.Unlock()
	if started {
		<-s.done
	}
	return nil
}

// Err returns why the stream stopped on its own, nil while it runs (and after
// Close or the end of Start's context). When the Path is closed the stream
// stops retrying and Err wraps pathdialer.ErrClosed; its goroutines are gone,
// Close still releases nothing more but is safe.
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Stats returns a copy of the counters.
func (s *Stream) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	if !s.since.IsZero() {
		st.Disconnected += time.Since(s.since)
	}
	return st
}

func (s *Stream) count(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

// pathClosed reports whether the Path was closed.
func (s *Stream) pathClosed() bool {
	st, _ := s.path.GateState()
	return st == pathdialer.GateClosed
}

// live is one connection and its reader and pinger.
type live struct {
	c       *Conn
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

type inbound struct {
	l    *live
	f    Frame
	data []byte
	err  error
}

type dialResult struct {
	c   *Conn
	err error
}

func (s *Stream) loop(ctx context.Context) {
	var cur, next *live
	var migrating chan dialResult
	migrateBy := time.NewTimer(time.Hour)
	migrateBy.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	var retryC <-chan time.Time // non-nil while a failed migration waits to retry
	defer func() {
		migrateBy.Stop()
		retry.Stop()
		for _, l := range []*live{cur, next} {
			if l != nil {
				l.close()
			}
		}
		if migrating != nil {
			if r := <-migrating; r.c != nil {
				_ = r.c.Close()
			}
		}
		s.mu.Lock()
		if s.since.IsZero() {
			s.since = time.Now()
		}
		s.stats.Endpoint = ""
		s.mu.Unlock()
	}()
	cutover := func() {
		cur.close()
		cur, next = next, nil
		migrateBy.Stop()
		s.count(func(st *Stats) { st.Migrations++; st.Endpoint = cur.c.Endpoint() })
	}
	// follow starts a make-before-break move to the active endpoint when the
	// stream is elsewhere and not told to stay.
	follow := func() {
		if _, gen := s.path.Active(); gen != s.seenGen {
			s.seenGen, s.stay, s.migFails = gen, false, 0
			retry.Stop()
			retryC = nil
		}
		ep, _ := s.path.Active()
		if cur == nil || next != nil || migrating != nil || retryC != nil || s.stay ||
			cur.c.Endpoint() == ep.Name || s.path.Fenced(ep.Name) {
			return
		}
		migrating = make(chan dialResult, 1)
		s.wg.Add(1)
		go func(ch chan dialResult, name string) {
			defer s.wg.Done()
			dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
			defer cancel()
			c, _, err := s.dialer.DialReadOnly(dctx, name, s.cfg.Header)
			ch <- dialResult{c, err}
		}(migrating, ep.Name)
	}
	migFailed := func(err error) {
		s.log.Info("ws: make-before-break dial failed", "err", err)
		s.count(func(st *Stats) { st.DialFailures++ })
		s.migFails++
		if s.migFails >= s.cfg.FailuresBeforeFallback {
			s.stay = true // until the next switch
			return
		}
		retry.Reset(s.pol.Delay(s.migFails, 0, rand.Float64()))
		retryC = retry.C
	}
	first := true
	var changed <-chan struct{}
	for {
		if cur == nil {
			l, err := s.connect(ctx, first)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("ws: stream stopped", "err", err)
					s.mu.Lock()
					s.err = err
					s.mu.Unlock()
				}
				return
			}
			first = false
			cur = l
			changed = s.path.ActiveChanged()
			follow() // a switch during the round
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
			if s.pathClosed() {
				s.mu.Lock()
				s.err = fmt.Errorf("ws: stream stopped: %w", pathdialer.ErrClosed)
				s.mu.Unlock()
				return
			}
			changed = s.path.ActiveChanged()
			follow()
		case <-retryC:
			retryC = nil
			follow()
		case <-migrateBy.C:
			if next != nil {
				cutover()
				follow()
			}
		case r := <-migrating:
			migrating = nil
			if r.err != nil {
				migFailed(r.err)
				continue
			}
			l := s.adopt(r.c)
			if err := s.hello(l); err != nil {
				l.close()
				migFailed(err)
				continue
			}
			next = l
			migrateBy.Reset(s.cfg.MigrateTimeout)
		case in := <-s.in:
			switch {
			case in.l != cur && in.l != next:
				// A connection already replaced: its frames are covered by the
				// resume on its successor.
			case in.err != nil:
				s.lost(in.l, in.err)
				switch {
				case in.l == next:
					next = nil
					migrateBy.Stop()
					migFailed(in.err)
				case next != nil:
					cur, next = next, nil
					migrateBy.Stop()
					s.count(func(st *Stats) { st.Migrations++; st.Endpoint = cur.c.Endpoint() })
					follow()
				default:
					s.lostGen, s.lostOK = in.l.c.Generation(), true
					cur = nil
					s.mu.Lock()
					s.since = time.Now()
					s.stats.Endpoint = ""
					s.mu.Unlock()
				}
			case in.l == cur && next != nil && (in.f.Kind == FrameTick || in.f.Kind == FrameSnapshot) && next.acked[in.f.Stream]:
				// The new connection answered for this stream: from here its
				// frames are the stream, contiguous from the resume point, and
				// the old connection's are not needed (mixing the two could
				// look like a gap).
			default:
				s.frame(in)
				if in.l == next && len(next.acked) == len(s.cfg.Streams) {
					cutover()
					follow()
				}
			}
		}
	}
}

// lost handles the death of a connection: a passive failure unless we closed
// it ourselves.
func (s *Stream) lost(l *live, err error) {
	closing := l.closing.Load()
	l.close()
	if closing {
		return
	}
	s.log.Info("ws: connection lost", "endpoint", l.c.Endpoint(), "err", err)
	s.path.Report(l.c.Endpoint(), l.c.Generation(), fmt.Errorf("ws: connection lost: %w", err), 0)
}

// wait waits d, or until ctx ends or the Path is closed. A switch does not cut
// the wait short: every client's Path switches at about the same moment, and
// waking them all then would undo the jitter.
func (s *Stream) wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.path.ActiveChanged():
			if s.pathClosed() {
				return fmt.Errorf("ws: stream stopped: %w", pathdialer.ErrClosed)
			}
		case <-t.C:
			return nil
		}
	}
}

// connect runs reconnect rounds (ReconnectPolicy) until one connects and the
// subscription is sent: a jittered wait (none for the very first connect),
// then the round's candidates back to back. It returns an error only when ctx
// ends or the Path is closed.
func (s *Stream) connect(ctx context.Context, first bool) (*live, error) {
	for {
		if !first {
			if err := s.wait(ctx, s.pol.Delay(s.failed, s.retryAfter, rand.Float64())); err != nil {
				return nil, err
			}
		}
		first = false
		s.retryAfter = 0
		act, gen := s.path.Active()
		var targets []string
		if re, _ := s.path.ReadEndpoint(); re.Name != act.Name {
			// The Path's degraded read-only mode names where reads may go.
			targets = append(targets, re.Name)
		}
		for _, t := range s.path.Engine().Targets() {
			targets = append(targets, t.Name)
		}
		cands := s.pol.Candidates(RoundView{
			Active: act.Name, Targets: targets, Fenced: s.path.Fenced,
			LostUnswitched: s.lostOK && s.lostGen == gen, Failed: s.failed,
		})
		for _, name := range cands {
			l, err := s.try(ctx, name, gen)
			if err == nil {
				s.failed, s.lostOK = 0, false
				s.seenGen, s.stay, s.migFails = gen, name != act.Name, 0
				s.mu.Lock()
				if s.stats.Connects > 0 {
					s.stats.Reconnects++
				}
				s.stats.Connects++
				if name != act.Name {
					s.stats.Fallbacks++
				}
				s.stats.Endpoint = name
				if !s.since.IsZero() {
					s.stats.Disconnected += time.Since(s.since)
					s.since = time.Time{}
				}
				s.mu.Unlock()
				return l, nil
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, pathdialer.ErrClosed) {
				return nil, fmt.Errorf("ws: stream stopped: %w", err)
			}
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

// try makes one read-only connection to name and sends the subscription; a
// failure is counted and, unless the server answered, reported to the Path.
func (s *Stream) try(ctx context.Context, name string, gen uint64) (*live, error) {
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	c, _, err := s.dialer.DialReadOnly(dctx, name, s.cfg.Header)
	cancel()
	if err == nil {
		l := s.adopt(c)
		if err = s.hello(l); err == nil {
			s.path.Report(name, c.Generation(), nil, time.Since(start))
			return l, nil
		}
		l.close()
	}
	if ctx.Err() != nil {
		return nil, err
	}
	s.count(func(st *Stats) { st.DialFailures++ })
	var he *HandshakeError
	switch {
	case errors.As(err, &he):
		// The server answered: not a path failure.
	case errors.Is(err, pathdialer.ErrFenced), errors.Is(err, pathdialer.ErrClosed):
	default:
		s.path.Report(name, gen, err, time.Since(start))
	}
	s.log.Info("ws: connect failed", "endpoint", name, "round", s.failed, "err", err)
	return nil, err
}

// adopt starts the reader and pinger of a new connection.
func (s *Stream) adopt(c *Conn) *live {
	l := &live{c: c, done: make(chan struct{}), acked: map[string]bool{}}
	wait := s.cfg.PingInterval + s.cfg.PongTimeout
	extend := func() { _ = c.SetReadDeadline(time.Now().Add(wait)) }
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
			if err == nil {
				f, err = s.proto.Parse(data)
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

// hello resumes the streams we have a sequence for and subscribes the others.
func (s *Stream) hello(l *live) error {
	after := map[string]uint64{}
	var fresh []string
	for _, name := range s.cfg.Streams {
		if s.known[name] {
			after[name] = s.last[name]
			s.resuming[name] = l
		} else {
			fresh = append(fresh, name)
		}
	}
	if len(after) > 0 {
		if err := s.send(l, func() ([]byte, error) { return s.proto.Resume(after) }); err != nil {
			return err
		}
	}
	if len(fresh) > 0 {
		if err := s.send(l, func() ([]byte, error) { return s.proto.Subscribe(fresh) }); err != nil {
			return err
		}
		s.count(func(st *Stats) { st.Subscribes += uint64(len(fresh)) })
	}
	return nil
}

func (s *Stream) send(l *live, build func() ([]byte, error)) error {
	msg, err := build()
	if err != nil {
		return err
	}
	_ = l.c.SetWriteDeadline(time.Now().Add(s.cfg.PongTimeout))
	return l.c.WriteMessage(websocket.TextMessage, msg)
}

// frame applies one parsed server message: duplicates dropped, gaps repaired,
// everything else handed to the Handler in order.
func (s *Stream) frame(in inbound) {
	f := in.f
	switch f.Kind {
	case FrameError:
		s.count(func(st *Stats) { st.ServerErrors++ })
		s.log.Warn("ws: server error", "endpoint", in.l.c.Endpoint(), "message", f.Err)
		return
	case FrameOther:
		return
	}
	if !slices.Contains(s.cfg.Streams, f.Stream) {
		return
	}
	in.l.acked[f.Stream] = true
	if r := s.resuming[f.Stream]; r == in.l {
		delete(s.resuming, f.Stream)
		if f.Kind == FrameSnapshot {
			s.count(func(st *Stats) { st.Snapshots++ })
		} else {
			s.count(func(st *Stats) { st.Resumes++ })
		}
	}
	last, known := s.last[f.Stream], s.known[f.Stream]
	if known && f.Seq <= last {
		s.count(func(st *Stats) { st.Duplicates++ })
		return
	}
	if known && f.Kind == FrameTick && f.Seq > last+1 {
		at, pending := s.repairing[f.Stream]
		if !pending {
			s.count(func(st *Stats) { st.Gaps++ })
		}
		if !pending || time.Since(at) > s.cfg.PingInterval+s.cfg.PongTimeout {
			s.repairing[f.Stream] = time.Now()
			if err := s.send(in.l, func() ([]byte, error) { return s.proto.Resume(map[string]uint64{f.Stream: last}) }); err != nil {
				in.l.close() // its reader reports the loss; the reconnect resumes
			}
		}
		return
	}
	if _, pending := s.repairing[f.Stream]; pending {
		delete(s.repairing, f.Stream)
		s.count(func(st *Stats) { st.GapsRepaired++ })
	}
	s.last[f.Stream], s.known[f.Stream] = f.Seq, true
	s.count(func(st *Stats) { st.Messages++ })
	s.cfg.Handler(Message{Stream: f.Stream, Seq: f.Seq, Snapshot: f.Kind == FrameSnapshot, Data: in.data, Endpoint: in.l.c.Endpoint()})
}
