package pathdialer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// endpointRT is the runtime side of one endpoint: its tracked connections and its
// fence.
type endpointRT struct {
	ep        Endpoint
	hostPorts map[string]string // service → host:port, resolved once by New

	mu     sync.Mutex
	fenced bool
	conns  map[*Conn]struct{}
	dials  uint64 // tracked connections so far: numbers them (Conn.seq)
	// codUntil: the latest time a connection closed so far declared its
	// venue's cancel-on-disconnect due by (Conn.SetCODWithin).
	codUntil time.Time

	fencedFlag atomic.Bool // mirrors fenced, for the lock-free passive-report path
	obsMu      sync.Mutex  // serialises observe for this endpoint (exact state-change events)
	// brokerFenced: the Fencer confirmed (with Config.BrokerFencesViaFencer) that the
	// broker fenced this endpoint; cleared when it is unfenced.
	brokerFenced atomic.Bool
	// brokerFencedAt: when brokerFenced was last set (ns since the Path's
	// epoch), for the venue's false-negative horizon after a fence.
	brokerFencedAt atomic.Int64
	state          atomic.Int32 // the engine's HealthState after the last observe
	// trafficDown: live traffic took this endpoint DOWN and it has not left
	// DOWN since; the gate does not open on it (downhold.go).
	trafficDown atomic.Bool
	lastOK      atomic.Int64 // when the last passive success was recorded (ns since the Path's epoch)

	probing *probeRun // the probe of this endpoint in progress, nil when none (monitor.go)
	suspect suspicion // probes started early because the endpoint is suspect (suspicion.go)
}

// Conn is a connection handed out by the Path: tracked under its endpoint so the
// fence can close it. It is a net.Conn.
type Conn struct {
	net.Conn
	rt       *endpointRT
	gen      uint64
	readOnly bool
	seq      uint64 // order of tracking under rt: the fence closes in this order
	once     sync.Once
	farewell farewellHolder // preserve mode's graceful leave (fencemode.go)
	// codWithin: the venue cancels this connection's orders at most this
	// long after it is cut (SetCODWithin, fencemode.go); 0 when undeclared.
	codWithin atomic.Int64
}

// Endpoint returns the name of the endpoint the connection goes to.
func (c *Conn) Endpoint() string { return c.rt.ep.Name }

// Token returns the fencing token under which the connection was dialed.
func (c *Conn) Token() uint64 { return c.gen }

// Close closes the connection and stops tracking it.
func (c *Conn) Close() error {
	c.once.Do(func() {
		c.rt.mu.Lock()
		delete(c.rt.conns, c)
		if cw := time.Duration(c.codWithin.Load()); cw > 0 {
			c.rt.codUntil = later(c.rt.codUntil, time.Now().Add(cw))
		}
		c.rt.mu.Unlock()
	})
	return c.Conn.Close()
}

// fence marks the endpoint fenced (new dials refused) and closes every tracked
// connection to it, oldest first. It returns how many connections it closed.
func (rt *endpointRT) fence() int {
	n, _, _ := rt.fenceWith(false, time.Time{}, nil, nil)
	return n
}

// fenceWith is fence, with the farewells of preserve mode when farewell is
// set: a connection with a farewell says it first, bounded by deadline, in
// its own goroutine (counted in track); done closes when every farewell
// returned and its connection was closed (nil when there was none).
// codUntil is when the venue's cancel-on-disconnect is due for every
// connection of the endpoint cut so far, these included, that declared it
// (Conn.SetCODWithin; zero when none did).
func (rt *endpointRT) fenceWith(farewell bool, deadline time.Time, log interface{ Warn(string, ...any) }, track *sync.WaitGroup) (n int, codUntil time.Time, done <-chan struct{}) {
	var codWithin time.Duration
	rt.mu.Lock()
	codUntil = rt.codUntil
	rt.fenced = true
	rt.fencedFlag.Store(true)
	conns := make([]*Conn, 0, len(rt.conns))
	for c := range rt.conns {
		if !c.readOnly {
			conns = append(conns, c)
			codWithin = max(codWithin, time.Duration(c.codWithin.Load()))
		}
	}
	rt.mu.Unlock()
	// In the order they were dialed, not the map's: which reader wakes first
	// is then the same in every run (a deterministic simulation relies on it).
	sortByDial(conns)
	rest := conns
	if farewell {
		rest, done = farewells(log, conns, deadline, track)
	}
	for _, c := range rest {
		// Abort rather than close: bytes of an order still in this host's send
		// buffer are discarded, not flushed to the broker after the fence.
		abort(c)
	}
	if codWithin > 0 {
		codUntil = later(codUntil, time.Now().Add(codWithin))
	}
	return len(conns), codUntil, done
}

func (rt *endpointRT) unfence() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	was := rt.fenced
	rt.fenced = false
	rt.fencedFlag.Store(false)
	return was
}

func (rt *endpointRT) isFenced() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.fenced
}

func (rt *endpointRT) closeAll() {
	rt.mu.Lock()
	conns := make([]*Conn, 0, len(rt.conns))
	for c := range rt.conns {
		conns = append(conns, c)
	}
	rt.mu.Unlock()
	sortByDial(conns)
	for _, c := range conns {
		_ = c.Close()
	}
}

func sortByDial(conns []*Conn) {
	slices.SortFunc(conns, func(a, b *Conn) int { return cmp.Compare(a.seq, b.seq) })
}

func (rt *endpointRT) connCount() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.conns)
}

// activeView is the endpoint that dials and reads go to, and its token. It
// changes at the switch, before reconciliation, so reconciliation reads the new path.
type activeView struct {
	rt      *endpointRT
	gen     uint64
	changed chan struct{} // closed when the next view replaces this one (or at Close)
}

// setActive publishes a new active view and wakes everyone watching the old one.
func (p *Path) setActive(rt *endpointRT, gen uint64) {
	p.activeMu.Lock()
	defer p.activeMu.Unlock()
	old := p.active.Load()
	p.active.Store(&activeView{rt: rt, gen: gen, changed: make(chan struct{})})
	if old != nil {
		close(old.changed)
	}
}

// ActiveChanged returns a channel that is closed when the active endpoint next
// changes (a switch), or when the Path is closed. Read Active again after it
// fires, and call ActiveChanged again for the following change. Streams use it to
// move make-before-break without polling.
func (p *Path) ActiveChanged() <-chan struct{} {
	return p.active.Load().changed
}

// DialReadOnly dials network/addr as a read-only connection of the named endpoint
// (market data, say): tracked, closed by Close, but left open by the fence and
// allowed while the endpoint is fenced, so a stream can move make-before-break.
// The caller promises that nothing is ever submitted over it.
func (p *Path) DialReadOnly(ctx context.Context, endpoint, network, addr string) (*Conn, error) {
	rt, ok := p.eps[endpoint]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownEndpoint, endpoint)
	}
	return p.dialRT(ctx, rt, p.active.Load().gen, network, addr, true)
}

// Dial connects to the active endpoint's address for service, tracked so the
// fence can close it. If the active endpoint changes while the dial is in progress,
// the new connection is closed (or refused, wrapping ErrFenced, when the old
// endpoint was fenced first) and ErrSwitched returned: dial again.
func (p *Path) Dial(ctx context.Context, service string) (*Conn, error) {
	a := p.active.Load()
	addr, ok := a.rt.hostPorts[service]
	if !ok {
		return nil, fmt.Errorf("%w: endpoint %q has no %q address", ErrUnknownService, a.rt.ep.Name, service)
	}
	c, err := p.dialRT(ctx, a.rt, a.gen, "tcp", addr, false)
	if err != nil {
		if errors.Is(err, ErrFenced) && p.active.Load() != a {
			// Fenced because it was switched away from: say so, so the caller
			// dials again (and reaches the new endpoint).
			return nil, fmt.Errorf("%w: dial of %s on %q: %w", ErrSwitched, service, a.rt.ep.Name, err)
		}
		return nil, err
	}
	if p.active.Load() != a {
		_ = c.Close()
		return nil, fmt.Errorf("%w: dial of %s on %q", ErrSwitched, service, a.rt.ep.Name)
	}
	return c, nil
}

// DialEndpoint dials network/addr as a connection of the named endpoint: tracked
// under it, refused with ErrFenced while the endpoint is fenced. Transports that keep
// one connection pool per endpoint use it (see EndpointDialer).
func (p *Path) DialEndpoint(ctx context.Context, endpoint, network, addr string) (*Conn, error) {
	rt, ok := p.eps[endpoint]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownEndpoint, endpoint)
	}
	gen := uint64(0)
	if a := p.active.Load(); a != nil {
		gen = a.gen
	}
	return p.dialRT(ctx, rt, gen, network, addr, false)
}

// EndpointDialer returns a dial function for one endpoint with the shape of
// net.Dialer.DialContext, for http.Transport.DialContext and similar.
func (p *Path) EndpointDialer(endpoint string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := p.DialEndpoint(ctx, endpoint, network, addr)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

func (p *Path) dialRT(ctx context.Context, rt *endpointRT, gen uint64, network, addr string, readOnly bool) (*Conn, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	if !readOnly && rt.isFenced() {
		return nil, fmt.Errorf("%w: %q", ErrFenced, rt.ep.Name)
	}
	raw, err := p.dial(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("pathdialer: dial %s on endpoint %q: %w", addr, rt.ep.Name, err)
	}
	c := &Conn{Conn: raw, rt: rt, gen: gen, readOnly: readOnly}
	rt.mu.Lock()
	if (rt.fenced && !readOnly) || p.closed.Load() {
		rt.mu.Unlock()
		_ = raw.Close()
		if p.closed.Load() {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("%w: %q (fenced while dialing)", ErrFenced, rt.ep.Name)
	}
	rt.dials++
	c.seq = rt.dials
	rt.conns[c] = struct{}{}
	rt.mu.Unlock()
	return c, nil
}
