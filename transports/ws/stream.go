package ws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// ErrStreamClosed is returned by Start after Close, or when called twice.
var ErrStreamClosed = errors.New("ws: stream closed or already started")

// ErrInvalidConfig is matched by every error of StreamConfig.Validate and
// NewStream: a *pathdialer.ConfigError with this Kind, whose Field (and
// Endpoint) name what is wrong; the text says what to put in it.
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

// Stream is a resilient subscription to sequenced streams over a Path: it hands
// the Handler every stream's messages in order and once per sequence number
// across reconnects and region switches, reconnects in jittered rounds
// (reconnectPolicy), follows the Path's switches make-before-break over
// read-only connections, repairs gaps within a deadline that escalates
// (GapTimeout), takes a flagged snapshot when the server restarts its
// numbering, and says how it is doing (Health, Stats, OnEvent). Create it
// with NewStream, then Start; Close stops every goroutine it started.
type Stream struct {
	path   *pathdialer.Path
	cfg    StreamConfig
	pol    reconnectPolicy
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
	// seenGen is the Path's fencing token the stream last acted on; stay keeps it
	// on its current endpoint until the next switch (it is a fallback, or
	// make-before-break dials kept failing).
	seenGen uint64
	stay    bool
	// Reconnect rounds failed in a row (a connection shorter than
	// HealthyAfter counts as one), the largest Retry-After of the last one,
	// and the token of the connection that was lost (lostOK false when
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
	// cur is the connection feeding the streams (nil while disconnected);
	// next is a make-before-break move's new connection, taking each stream
	// over as it answers; migrating is non-nil while the move's dial runs.
	cur, next *live
	migrating chan dialResult
	// migrateBy bounds a move (MigrateTimeout); retry waits to try a failed
	// move again, and retryC is its channel while it does (nil otherwise);
	// wake fires when a repair's next rung is due or the health would turn
	// SUSPENDED.
	migrateBy, retry, wake *time.Timer
	retryC                 <-chan time.Time
}

// NewStream validates cfg and returns a Stream that is not yet connected. It
// refuses (ErrInvalidConfig, naming the endpoint and the field) what would
// leave the stream connecting for ever: a Path whose endpoints have no "ws"
// address, and a wss:// address to a host no public CA certifies (a loopback
// or private address, localhost, a name without a dot, .local, .internal)
// without StreamConfig.Dialer.TLSClientConfig.RootCAs to verify its
// certificate with. Every refusal is a *pathdialer.ConfigError matching
// ErrInvalidConfig.
func NewStream(path *pathdialer.Path, cfg StreamConfig) (*Stream, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if path != nil {
		if err := checkStreamAddresses(path, cfg.Dialer); err != nil {
			return nil, err
		}
	}
	d, err := NewDialer(path, cfg.Dialer)
	if err != nil {
		return nil, err
	}
	s := &Stream{
		path: path, cfg: cfg, proto: cfg.Protocol, dialer: d, log: cfg.Logger,
		pol:      reconnectPolicy{Backoff: cfg.Backoff, FailuresBeforeFallback: cfg.FailuresBeforeFallback, MaxRetryAfter: cfg.MaxRetryAfter},
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

// pathClosed reports whether the Path was closed.
func (s *Stream) pathClosed() bool {
	st, _ := s.path.GateState()
	return st == pathdialer.GateClosed
}

// loop is the Stream's run goroutine. It connects whenever there is no
// connection (connect.go), then waits for the next thing to happen and hands
// it to the step that deals with it: a repair rung due (recovery.go), a
// switch of the Path or a make-before-break move (migrate.go), a message or
// a lost connection (delivery.go).
func (s *Stream) loop(ctx context.Context) {
	s.migrateBy, s.retry, s.wake = stoppedTimer(), stoppedTimer(), stoppedTimer()
	defer s.shutdown()
	first := true
	var changed <-chan struct{}
	for {
		if s.cur == nil {
			l, err := s.connect(ctx, first)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("ws: stream stopped", "err", err)
					s.stopped(err)
				}
				return
			}
			first = false
			s.cur = l
			s.dirty = true
			changed = s.path.ActiveChanged()
			s.follow(ctx) // a switch during the round
		}
		if s.dirty {
			s.dirty = false
			s.reassess(time.Now())
			s.arm()
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake.C:
			s.climb(ctx, time.Now())
			s.dirty = true
		case <-changed:
			if s.pathClosed() {
				s.stopped(fmt.Errorf("ws: stream stopped: %w", pathdialer.ErrClosed))
				return
			}
			changed = s.path.ActiveChanged()
			s.follow(ctx)
		case <-s.retryC:
			s.retryC = nil
			s.follow(ctx)
		case <-s.migrateBy.C:
			s.migrationDue(ctx)
		case r := <-s.migrating:
			s.migrating = nil
			s.migrated(r)
		case in := <-s.in:
			s.receive(ctx, in)
		}
	}
}

// stopped records why the stream stopped on its own (Err).
func (s *Stream) stopped(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

// shutdown releases what the run goroutine holds when it returns and reports
// HealthClosed.
func (s *Stream) shutdown() {
	s.migrateBy.Stop()
	s.retry.Stop()
	s.wake.Stop()
	for _, l := range []*live{s.cur, s.next} {
		if l != nil {
			l.close()
		}
	}
	if s.migrating != nil {
		if r := <-s.migrating; r.c != nil {
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
}

// stoppedTimer returns a timer that does not fire until Reset.
func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}
