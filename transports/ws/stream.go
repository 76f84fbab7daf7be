package ws

import (
	"cmp"
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

// ErrInvalidConfig is wrapped by every error of StreamConfig.Validate (and so
// of NewStream); the text names the field and what to put in it.
var ErrInvalidConfig = errors.New("ws: invalid stream config")

// ErrStall is wrapped by the error a Stream drops a connection with when a
// stream's repair (a gap, an unanswered subscription, a restart, a server
// behind the client) was not done within the escalation ladder.
var ErrStall = errors.New("ws: stream not repaired in time")

// Message is one sequenced message handed to the Handler.
type Message struct {
	// Stream and Seq identify the message; Seq is strictly greater than the
	// previous Seq the Handler saw for Stream, except on a Restart.
	Stream string
	Seq    uint64
	// Snapshot is true when the message is the stream's state as of Seq rather
	// than the tick Seq: the ticks before it were not (all) delivered.
	Snapshot bool
	// Restart is true (with Snapshot) when the server started its numbering
	// over (a new Epoch, see Protocol): Seq may be at or below the previous
	// one; discard state built from earlier messages and start from this
	// snapshot. Ticks after it continue from Seq+1 in the new numbering.
	Restart bool
	// Epoch is the message's epoch as the Protocol read it ("" when none).
	Epoch string
	// Data is the raw server message; the Handler may keep it.
	Data []byte
	// Endpoint is the endpoint the message arrived from.
	Endpoint string
}

// Handler receives messages from one goroutine, in order per stream, once per
// sequence number. It runs on the Stream's own loop: while it runs, nothing
// else is handled (a switch, a migration, a lost connection wait), up to
// StreamConfig.QueueLength frames queue, and then the connections stop being
// read, so the server may drop a client that falls too far behind. The time a connection waits for the
// Handler is not counted as silence by the ping timeout. Keep it short; hand
// slow work to your own goroutine.
type Handler func(Message)

// StreamConfig configures a Stream. Start from DefaultStreamConfig.
type StreamConfig struct {
	// Streams to subscribe to, e.g. []string{"px.EURUSD"}; required: at
	// least one, no duplicates.
	Streams []string
	// Handler receives every message; required.
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
	// ReadLimit is the largest server message accepted, in bytes. A larger one
	// is an error: counted (Stats.OversizedFrames), the connection replaced,
	// the stream resumed. > 0; default 1 MiB.
	ReadLimit int64
	// QueueLength is how many read messages may wait for the Handler before
	// the connections stop being read. 1..4096; default 16.
	QueueLength int
	// GapTimeout is how long a stream may stay broken before its repair
	// escalates: a gap is resumed at once and again after 1/8, 3/8 and 7/8 of
	// it; at GapTimeout the Stream asks for a snapshot (so does a stream whose
	// subscription is unanswered or whose server stays behind the client);
	// at twice GapTimeout (once, for a restart) it drops the connection, as a
	// failure, and reconnects with backoff, trying other endpoints first.
	// Each rung is a StreamEventEscalation. > 0; default 5 s.
	GapTimeout time.Duration
	// SuspendAfter: disconnected, connecting or repairing for this long makes
	// the Stream's Health SUSPENDED (Health is on time; the event may come
	// late by a Handler or a dial in progress). > 0; default 30 s.
	SuspendAfter time.Duration
	// ReplayWindow: a message without an epoch more than this many sequence
	// numbers below the last delivered one means the server restarted its
	// numbering (a late duplicate, a replay or a lagging replica's snapshot
	// is closer). Servers with epochs (Frame.Epoch) are judged by the epoch
	// only. >= 1; default 64.
	ReplayWindow uint64
	// HealthyAfter: a connection that dies within this time of its handshake
	// counts as a failed reconnect round, so a server that accepts and then
	// drops (or feeds bad data) meets the full-jitter backoff up to its Cap
	// instead of a reconnect loop. A connection that lived longer resets the
	// count. 0 counts none. >= 0; default 10 s.
	HealthyAfter time.Duration
	// Rand, optional, draws the full-jitter fraction of each reconnect wait:
	// uniform in [0, 1) (values outside are clamped). nil means math/rand/v2's
	// Float64. Set it to a seeded source to make a simulation's reconnect
	// timing reproducible. It is called from the Stream's own goroutine only.
	Rand func() float64
	// OnEvent, optional, receives the Stream's events (health changes, gaps,
	// escalations, repairs, restarts, lost connections) on the Stream's loop,
	// like the Handler, never under a lock. Keep it short.
	OnEvent func(StreamEvent)
	// Logger; nil discards. Nothing logged holds server-sent text or an
	// address's credentials.
	Logger *slog.Logger
}

// DefaultStreamConfig returns full jitter from 1 s up to 60 s, fallback after
// 3 failed rounds in a row, pings every 5 s with 5 s to answer, 10 s to
// connect, 5 s to migrate, Retry-After honoured up to 2 minutes, a 1 MiB read
// limit and 16 queued frames, gaps escalating after 5 s, SUSPENDED after
// 30 s, a replay window of 64, connections shorter than 10 s counted as
// failures. It is not valid alone: set Streams (the names to subscribe to)
// and Handler (the func that receives the messages).
func DefaultStreamConfig() StreamConfig {
	return StreamConfig{
		Backoff:                DefaultBackoff(),
		FailuresBeforeFallback: 3,
		DialTimeout:            10 * time.Second,
		PingInterval:           5 * time.Second,
		PongTimeout:            5 * time.Second,
		MigrateTimeout:         5 * time.Second,
		MaxRetryAfter:          2 * time.Minute,
		ReadLimit:              1 << 20,
		QueueLength:            16,
		GapTimeout:             5 * time.Second,
		SuspendAfter:           30 * time.Second,
		ReplayWindow:           64,
		HealthyAfter:           10 * time.Second,
	}
}

// Validate names the first field that cannot work and what to put in it;
// every error wraps ErrInvalidConfig.
func (c StreamConfig) Validate() error {
	bad := func(f, why string) error { return fmt.Errorf("%w: %s %s", ErrInvalidConfig, f, why) }
	switch {
	case len(c.Streams) == 0 && c.Handler == nil:
		return bad("Streams and Handler", `are not set: set Streams to the stream names to subscribe to (e.g. []string{"px.EURUSD"}) and Handler to a func(ws.Message) that receives them`)
	case len(c.Streams) == 0:
		return bad("Streams", `is empty: set it to the stream names to subscribe to (e.g. []string{"px.EURUSD"})`)
	case c.Handler == nil:
		return bad("Handler", "is nil: set it to a func(ws.Message) that receives the messages")
	case c.Backoff.Base <= 0:
		return bad("Backoff.Base", "must be > 0")
	case c.Backoff.Cap < c.Backoff.Base:
		return bad("Backoff.Cap", "must be >= Backoff.Base")
	case c.FailuresBeforeFallback < 1:
		return bad("FailuresBeforeFallback", "must be >= 1")
	case c.DialTimeout <= 0, c.PingInterval <= 0, c.PongTimeout <= 0, c.MigrateTimeout <= 0, c.MaxRetryAfter <= 0,
		c.GapTimeout <= 0, c.SuspendAfter <= 0:
		return bad("DialTimeout, PingInterval, PongTimeout, MigrateTimeout, MaxRetryAfter, GapTimeout and SuspendAfter",
			"must be > 0 (start from DefaultStreamConfig)")
	case c.ReadLimit <= 0:
		return bad("ReadLimit", "must be > 0 bytes (default 1 MiB)")
	case c.QueueLength < 1 || c.QueueLength > 4096:
		return bad("QueueLength", "must be 1..4096 (default 16)")
	case c.ReplayWindow < 1:
		return bad("ReplayWindow", "must be >= 1 (default 64)")
	case c.HealthyAfter < 0:
		return bad("HealthyAfter", "must be >= 0")
	case c.Dialer != nil && c.Dialer.TLSClientConfig != nil && c.Dialer.TLSClientConfig.InsecureSkipVerify:
		return bad("Dialer.TLSClientConfig.InsecureSkipVerify", "is refused: trust the server's CA with RootCAs instead")
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

// Stream is a resilient subscription to sequenced streams over a Path: it hands
// the Handler every stream's messages in order and once per sequence number
// across reconnects and region switches, reconnects in jittered rounds
// (ReconnectPolicy), follows the Path's switches make-before-break over
// read-only connections, repairs gaps within a deadline that escalates
// (GapTimeout), takes a flagged snapshot when the server restarts its
// numbering, and says how it is doing (Health, Stats, OnEvent). Create it
// with NewStream, then Start; Close stops every goroutine it started.
type Stream struct {
	path   *pathdialer.Path
	cfg    StreamConfig
	pol    ReconnectPolicy
	proto  Protocol
	dialer *Dialer
	log    *slog.Logger
	rand   func() float64

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
	// troubleSince is the earliest unresolved trouble of any stream, or the
	// disconnection, whichever is older; zero when there is none.
	troubleSince time.Time
	allKnown     bool // every stream delivered its first message
	started      bool
	closed       bool

	// Owned by the run goroutine.
	tracks   map[string]*track
	resuming map[string]*live // resume sent on this conn, first answer not seen
	dirty    bool             // a trouble began or ended: reassess health and timers
	reported Health           // the health last reported by an event
	// seenGen is the Path generation the stream last acted on; stay keeps it
	// on its current endpoint until the next switch (it is a fallback, or
	// make-before-break dials kept failing).
	seenGen uint64
	stay    bool
	// Reconnect rounds failed in a row (a connection shorter than
	// HealthyAfter counts as one), the largest Retry-After of the last one,
	// and the generation of the connection that was lost (lostOK false when
	// the last connection was closed by us or there was none).
	failed     int
	retryAfter time.Duration
	lostGen    uint64
	lostOK     bool
	// make-before-break dials that failed since the last switch.
	migFails int
	// avoid is the endpoint whose connection was just given up on for what
	// its server sent (a stall, bad or oversized frames): the next round
	// tries it last.
	avoid string
}

// NewStream validates cfg and returns a Stream that is not yet connected.
func NewStream(path *pathdialer.Path, cfg StreamConfig) (*Stream, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if path != nil {
		if err := checkAddresses(path); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	d, err := NewDialer(path, cfg.Dialer)
	if err != nil {
		return nil, err
	}
	s := &Stream{
		path: path, cfg: cfg, proto: cfg.Protocol, dialer: d, log: cfg.Logger,
		pol:      ReconnectPolicy{Backoff: cfg.Backoff, FailuresBeforeFallback: cfg.FailuresBeforeFallback, MaxRetryAfter: cfg.MaxRetryAfter},
		in:       make(chan inbound, cfg.QueueLength),
		done:     make(chan struct{}),
		tracks:   map[string]*track{},
		resuming: map[string]*live{},
	}
	s.cfg.Streams = slices.Clone(cfg.Streams)
	s.cfg.Header = cfg.Header.Clone()
	for _, name := range s.cfg.Streams {
		s.tracks[name] = &track{}
	}
	if s.proto == nil {
		s.proto = JSONProtocol{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.rand = cfg.Rand
	if s.rand == nil {
		s.rand = rand.Float64
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
	s.troubleSince = s.since
	s.started = true
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
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
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

// pathClosed reports whether the Path was closed.
func (s *Stream) pathClosed() bool {
	st, _ := s.path.GateState()
	return st == pathdialer.GateClosed
}

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

type inbound struct {
	l    *live
	f    Frame
	data []byte
	err  error
}

type dialResult struct {
	endpoint string
	c        *Conn
	err      error
}

func (s *Stream) loop(ctx context.Context) {
	var cur, next *live
	var migrating chan dialResult
	newStopped := func() *time.Timer {
		t := time.NewTimer(time.Hour)
		t.Stop()
		return t
	}
	migrateBy, retry, wake := newStopped(), newStopped(), newStopped()
	var retryC <-chan time.Time // non-nil while a failed migration waits to retry
	defer func() {
		migrateBy.Stop()
		retry.Stop()
		wake.Stop()
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
		s.closed = true
		s.mu.Unlock()
		s.reportHealth(time.Now(), HealthClosed)
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
			ch <- dialResult{name, c, err}
		}(migrating, ep.Name)
	}
	migFailed := func(endpoint string, err error) {
		s.count(func(st *Stats) { st.DialFailures++ })
		s.event(StreamEvent{Kind: StreamEventDialFailed, Endpoint: endpoint, Err: fmt.Errorf("make-before-break: %w", err)})
		s.migFails++
		if s.migFails >= s.cfg.FailuresBeforeFallback {
			s.stay = true // until the next switch
			return
		}
		retry.Reset(s.pol.Delay(s.migFails, 0, s.rand()))
		retryC = retry.C
	}
	// drop handles the end of connection l (cur or next): lost, bad data, or
	// given up on by the ladder (stall).
	drop := func(l *live, err error, stall bool) {
		// serverFault: what the server sent (or failed to repair) ended the
		// connection, not the network.
		serverFault := stall || errors.Is(err, ErrBadFrame) || errors.Is(err, ErrFrameTooLarge)
		s.lost(l, err)
		s.dirty = true
		switch {
		case l == next:
			next = nil
			migrateBy.Stop()
			migFailed(l.c.Endpoint(), err)
		case next != nil:
			cur, next = next, nil
			migrateBy.Stop()
			s.count(func(st *Stats) { st.Migrations++; st.Endpoint = cur.c.Endpoint() })
			follow()
		default:
			s.lostGen, s.lostOK = l.c.Generation(), true
			short := s.cfg.HealthyAfter > 0 && time.Since(l.born) < s.cfg.HealthyAfter
			if stall || short {
				s.failed++ // the next reconnect waits a wider window
			} else {
				s.failed = 0
			}
			if serverFault {
				s.avoid = l.c.Endpoint()
			}
			cur = nil
			s.mu.Lock()
			if short && !stall {
				s.stats.ShortLived++
			}
			s.since = time.Now()
			s.stats.Endpoint = ""
			s.mu.Unlock()
		}
	}
	// do sends what a stream's repair asks for on the connection feeding it.
	do := func(l *live, name string, r request) {
		if l == nil || r == reqNone {
			return // disconnected: the next connection's hello asks
		}
		var err error
		switch r {
		case reqResume:
			t := s.tracks[name]
			err = s.send(l, func() ([]byte, error) { return s.resume(map[string]Position{name: {t.last, t.epoch}}) })
		case reqSnapshot:
			s.count(func(st *Stats) { st.SnapshotRequests++ })
			err = s.send(l, func() ([]byte, error) { return s.proto.Subscribe([]string{name}) })
		case reqReconnect:
			t := s.tracks[name]
			s.count(func(st *Stats) { st.StallReconnects++ })
			drop(l, fmt.Errorf("%w: %s %s for %v", ErrStall, name, t.trouble, time.Since(t.since).Round(time.Millisecond)), true)
			return
		}
		if err != nil {
			drop(l, fmt.Errorf("ws: send %s for %s: %w", r, name, err), false)
		}
	}
	feeder := func(name string) *live {
		if next != nil && next.acked[name] {
			return next
		}
		return cur
	}
	// climb fires every rung that is due.
	climb := func(now time.Time) {
		for _, name := range s.cfg.Streams {
			t := s.tracks[name]
			for r := t.fire(now, s.cfg.GapTimeout); r != reqNone; r = t.fire(now, s.cfg.GapTimeout) {
				s.dirty = true
				s.count(func(st *Stats) { st.Escalations++ })
				s.event(StreamEvent{Time: now, Kind: StreamEventEscalation, Stream: name, Seq: t.last, Trouble: t.trouble.String(), Step: r.String()})
				do(feeder(name), name, r)
			}
		}
	}
	// arm sets the wake timer to the next rung due or the suspension.
	arm := func() {
		var at time.Time
		for _, t := range s.tracks {
			if d := t.due(s.cfg.GapTimeout); !d.IsZero() && (at.IsZero() || d.Before(at)) {
				at = d
			}
		}
		if d := s.suspendAt(); !d.IsZero() && (at.IsZero() || d.Before(at)) {
			at = d
		}
		wake.Stop()
		if !at.IsZero() {
			wake.Reset(time.Until(at))
		}
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
			s.dirty = true
			changed = s.path.ActiveChanged()
			follow() // a switch during the round
		}
		if s.dirty {
			s.dirty = false
			s.reassess(time.Now())
			arm()
		}
		select {
		case <-ctx.Done():
			return
		case <-wake.C:
			now := time.Now()
			climb(now)
			s.dirty = true
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
				migFailed(r.endpoint, r.err)
				continue
			}
			l := s.adopt(r.c)
			if err := s.hello(l); err != nil {
				l.close()
				migFailed(r.endpoint, err)
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
				switch {
				case errors.Is(in.err, ErrFrameTooLarge):
					s.count(func(st *Stats) { st.OversizedFrames++ })
				case errors.Is(in.err, ErrBadFrame):
					s.count(func(st *Stats) { st.BadFrames++ })
				}
				drop(in.l, in.err, false)
			case in.l == cur && next != nil && (in.f.Kind == FrameTick || in.f.Kind == FrameSnapshot) && next.acked[in.f.Stream]:
				// The new connection answered for this stream: from here its
				// frames are the stream, contiguous from the resume point, and
				// the old connection's are not needed (mixing the two could
				// look like a gap).
			default:
				if r := s.frame(in); r != reqNone {
					do(in.l, in.f.Stream, r)
				}
				if next != nil && in.l == next && len(next.acked) == len(s.cfg.Streams) {
					cutover()
					follow()
				}
			}
		}
	}
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

// connect runs reconnect rounds (ReconnectPolicy) until one connects and the
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
		if len(cands) > 1 && len(failedLast) > 0 {
			cands = slices.Clone(cands)
			slices.SortStableFunc(cands, func(a, b string) int {
				return cmp.Compare(b2i(slices.Contains(failedLast, a)), b2i(slices.Contains(failedLast, b)))
			})
		}
		failedLast = failedLast[:0]
		if i := slices.Index(cands, s.avoid); i >= 0 && len(cands) > 1 {
			// Its server just failed us: another endpoint first.
			cands = append(slices.Delete(slices.Clone(cands), i, i+1), s.avoid)
		}
		s.avoid = ""
		empty = len(cands) == 0
		for _, name := range cands {
			l, err := s.try(ctx, name)
			if err == nil {
				// s.failed is not reset here: a connection counts as a
				// success only once it has lived HealthyAfter (see drop).
				s.lostOK = false
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
// restarts repaired, everything else handed to the Handler in order. It
// returns what to send at once on the message's connection.
func (s *Stream) frame(in inbound) request {
	f := in.f
	switch f.Kind {
	case FrameError:
		s.count(func(st *Stats) { st.ServerErrors++ })
		s.log.Warn("ws: server error", "endpoint", in.l.c.Endpoint(), "message", Redact(f.Err))
		return reqNone
	case FrameOther:
		return reqNone
	}
	t := s.tracks[f.Stream]
	if t == nil {
		return reqNone
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
	now := time.Now()
	last, since, wasKnown, was := t.last, t.since, t.known, t.trouble
	o := t.frame(now, f, s.cfg.ReplayWindow)
	if o.began != troubleNone || o.ended != troubleNone || !wasKnown || o.restart {
		s.dirty = true
	}
	switch o.began {
	case troubleGap:
		s.count(func(st *Stats) { st.Gaps++ })
		s.event(StreamEvent{Time: now, Kind: StreamEventGap, Stream: f.Stream, Seq: last, Got: f.Seq})
	case troubleRestart:
		s.event(StreamEvent{Time: now, Kind: StreamEventRestart, Stream: f.Stream, Seq: last, Got: f.Seq, Epoch: f.Epoch})
	}
	switch o.v {
	case vDrop:
		s.count(func(st *Stats) { st.Duplicates++ })
	case vHold:
		s.count(func(st *Stats) { st.Held++ })
	}
	if o.ended == troubleGap {
		s.count(func(st *Stats) { st.GapsRepaired++ })
	}
	// A first snapshot in time, or a connection briefly behind (a replay
	// overlapping what was delivered), is no news.
	if o.ended == troubleGap || o.ended == troubleRestart || (o.ended != troubleNone && o.escalated) {
		s.event(StreamEvent{Time: now, Kind: StreamEventRepaired, Stream: f.Stream, Seq: t.last, Trouble: o.ended.String(), Took: now.Sub(since)})
	}
	if o.v != vDeliver {
		return o.req
	}
	if o.restart {
		s.count(func(st *Stats) { st.Restarts++ })
		if was != troubleRestart {
			s.event(StreamEvent{Time: now, Kind: StreamEventRestart, Stream: f.Stream, Seq: last, Got: f.Seq, Epoch: f.Epoch})
		}
	}
	s.count(func(st *Stats) { st.Messages++ })
	s.cfg.Handler(Message{Stream: f.Stream, Seq: f.Seq, Snapshot: f.Kind == FrameSnapshot, Restart: o.restart,
		Epoch: f.Epoch, Data: in.data, Endpoint: in.l.c.Endpoint()})
	return o.req
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
