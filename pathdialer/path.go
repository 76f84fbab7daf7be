package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/safetext"
)

// Path is one broker account reached over several endpoints. It probes them,
// decides with an engine.Manager, holds and releases submissions around fenced,
// reconciled switches, and hands out connections that go only to the active
// endpoint. Create it with New, then Start; Close stops everything. All methods
// are safe for concurrent use.
type Path struct {
	// What every request reads (Acquire, Done, Report, ReadEndpoint), in a few
	// cache lines at the start: a request that finds the caches cold after
	// waiting for the network pays per line.
	gate       atomic.Pointer[gateView]
	active     atomic.Pointer[activeView]
	readView   atomic.Pointer[activeView] // degraded read-only mode; nil otherwise
	eps        map[string]*endpointRT
	epoch      time.Time    // monotonic origin for per-endpoint timestamps
	validNanos atomic.Int64 // Extend's deadline, monotonic ns since epoch; 0: none
	closed     atomic.Bool
	draining   atomic.Bool // a switch waits for tickets in flight: Done wakes it
	// namedOnly: Config.Reconcile was nil, so only services named in
	// Config.ReconcileByService may acquire tickets.
	namedOnly bool

	cfg    Config
	eng    *engine.Manager
	order  []*endpointRT
	log    *slog.Logger
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	events *dispatcher

	gateMu   sync.Mutex
	activeMu sync.Mutex

	shards       [ticketShards]ticketShard
	unknownMu    sync.Mutex
	unknown      []*Ticket
	inflightWake chan struct{}
	verdicts     verdicts

	trigger   chan struct{}
	extCh     chan extReq
	running   atomic.Bool               // the controller goroutine was started
	lastRound atomic.Pointer[time.Time] // when the last probe round completed

	lifeMu   sync.Mutex // serialises Start and Close
	started  bool
	cancel   context.CancelFunc // stops the controller and the probes
	evCancel context.CancelFunc // stops the event dispatcher, after them
	ctlDone  chan struct{}
	evDone   chan struct{}
	probeWG  sync.WaitGroup

	suspectWake chan struct{} // an order on the active endpoint failed (suspicion.go)

	adm admission // identity checks and evidence announcements (admission.go)

	tradePathOffer atomic.Pointer[offeredCheck] // OfferTradePathCheck (gray.go)

	rest restingState // fence mode, dead-man timer, open-order reconciles (fencemode.go)

	stats struct {
		droppedReports atomic.Uint64
		switches       atomic.Uint64
		halts          atomic.Uint64
	}
}

// New validates cfg (every field, the endpoints, and the engine's own Validate)
// and returns a Path that is not yet probing. The primary is the active endpoint.
func New(cfg Config) (*Path, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// ReconcileByService alone: only the services named there may submit; the
	// catch-all reconcile then never has a ticket to settle.
	namedOnly := cfg.Reconcile == nil
	if namedOnly {
		cfg.Reconcile = NoReconcile
	}
	p := &Path{
		cfg:          cfg,
		namedOnly:    namedOnly,
		eps:          make(map[string]*endpointRT, len(cfg.Endpoints)),
		log:          safetext.Logger(cfg.Logger), // counterparty text escaped and cut
		dial:         cfg.Dial,
		inflightWake: make(chan struct{}, 1),
		epoch:        time.Now(),
		trigger:      make(chan struct{}, 1),
		suspectWake:  make(chan struct{}, 1),
		extCh:        make(chan extReq),
		ctlDone:      make(chan struct{}),
		evDone:       make(chan struct{}),
	}
	if err := p.resolveVenue(); err != nil { // venue.go
		return nil, err
	}
	fc, err := cfg.fenceChoice() // fencemode.go
	if err != nil {
		return nil, err
	}
	p.rest.fence = fc
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.dial == nil {
		p.dial = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 15 * time.Second}).DialContext
	}
	ecfg := admissionEngineConfig(cfg)
	ecfg.Probe = func(ctx context.Context, ep engine.Endpoint) error {
		rt, ok := p.eps[ep.Name]
		if !ok {
			return fmt.Errorf("%w: %q", ErrUnknownEndpoint, ep.Name)
		}
		return cfg.Probe(ctx, rt.ep)
	}
	eng, err := engine.New(ecfg)
	if err != nil {
		return nil, configError("Engine", "", "Engine: %w", err)
	}
	for i, ep := range cfg.Endpoints {
		if err := p.addEndpoint(eng, i, ep); err != nil {
			return nil, err
		}
	}
	if err := cfg.engineVerdict(eng.Validate()); err != nil { // admission.go
		return nil, err
	}
	p.eng = eng
	act, _ := eng.Active()
	p.setActive(p.eps[act.Name], 0)
	p.gate.Store(&gateView{state: GateNotStarted, changed: make(chan struct{})})
	p.events = newDispatcher(p.log, cfg.OnEvent)
	return p, nil
}

// addEndpoint registers cfg.Endpoints[i], ep, with the engine and gives it
// its runtime state (its own copy of Services, resolved to host:port).
func (p *Path) addEndpoint(eng *engine.Manager, i int, ep Endpoint) error {
	svc := make(map[string]string, len(ep.Services))
	for k, v := range ep.Services {
		svc[k] = v
	}
	ep.Services = svc
	if err := eng.Register(engine.Endpoint{Name: ep.Name, Address: engineAddress(svc), Region: ep.Region, Priority: ep.Priority, Primary: ep.Primary, Jurisdiction: ep.Jurisdiction}); err != nil {
		return configError(fmt.Sprintf("Endpoints[%d]", i), ep.Name, "Endpoints[%d]: %w", i, err)
	}
	rt := &endpointRT{ep: ep, conns: make(map[*Conn]struct{}), hostPorts: make(map[string]string, len(svc))}
	for name, a := range svc {
		hp, err := hostPort(a) // checked by Validate
		if err != nil {
			return configError(fmt.Sprintf("Endpoints[%d].Services[%q]", i, name), ep.Name, "Endpoints[%d] (%q) service %q: %w", i, ep.Name, name, err)
		}
		rt.hostPorts[name] = hp
	}
	p.eps[ep.Name] = rt
	p.order = append(p.order, rt)
	return nil
}

// engineAddress is the address an endpoint is known by in the engine: its
// REST, else FIX, else WebSocket service's, else any of its services'.
func engineAddress(svc map[string]string) string {
	addr := ""
	for _, name := range []string{ServiceREST, ServiceFIX, ServiceWS} {
		if a, ok := svc[name]; ok {
			addr = a
			break
		}
	}
	if addr == "" {
		for _, a := range svc {
			addr = a
			break
		}
	}
	return addr
}

// Engine returns the decision engine, for inspection (Statuses, History).
// Driving it directly (evaluations) bypasses the fence and reconcile: don't.
func (p *Path) Engine() *engine.Manager { return p.eng }

// Endpoints returns the configured endpoints in configuration order.
func (p *Path) Endpoints() []Endpoint {
	out := make([]Endpoint, len(p.order))
	for i, rt := range p.order {
		out[i] = rt.ep
	}
	return out
}

// Endpoint returns one configured endpoint.
func (p *Path) Endpoint(name string) (Endpoint, bool) {
	rt, ok := p.eps[name]
	if !ok {
		return Endpoint{}, false
	}
	return rt.ep, true
}

// Active returns the endpoint dials and reads go to, and its token (the
// number of switches so far). During a switch it is the new endpoint from the
// moment the engine switched, while submissions are still held for reconciliation.
func (p *Path) Active() (Endpoint, uint64) {
	a := p.active.Load()
	return a.rt.ep, a.gen
}

// Fenced reports whether an endpoint is fenced: switched away from and not active
// again, its connections closed and new dials refused.
func (p *Path) Fenced(endpoint string) bool {
	rt, ok := p.eps[endpoint]
	return ok && rt.isFenced()
}

// Start checks identities (Config.Identity), runs one probe round (bounded by ctx
// and Config.ProbeTimeout), opens the gate on the active endpoint, and starts the
// monitor, which runs until Close. With Config.StartWait it first waits for an
// eligible endpoint; when none is, the gate is halted and Start returns an error
// wrapping ErrNoEligibleEndpoint, though the Path runs on and resumes by itself
// (Close it if you give up). The gate never opens on an active endpoint found
// fronting another account: it halts and the monitor fails over. It returns an
// error if the Path was already started or closed.
//
// A configuration error fails fast: with StartWait, when the latest probe
// answer of every endpoint is a rejection (an error wrapping
// ErrProbeRejected: a refused credential, a malformed request, a path the
// server does not have), Start does not wait out StartWait but returns at the
// end of the probe round that brought the last of them, usually the first
// (within ProbeJitter + ProbeTimeout), halted as above. Its error wraps
// ErrProbeRejected, ErrNoEligibleEndpoint and each endpoint's probe error
// (errors.As finds them), and names each endpoint with its answer. While any
// endpoint's answer is pending (a timeout), transient (a refused connection,
// a 5xx, a rate limit) or good, Start waits as above. With StartWait 0 the
// gate opens after the first round whatever it found.
func (p *Path) Start(ctx context.Context) error {
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	if p.closed.Load() {
		return ErrClosed
	}
	if p.started {
		return errors.New("pathdialer: already started")
	}
	p.started = true
	runCtx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	evCtx, evCancel := context.WithCancel(context.Background())
	p.evCancel = evCancel
	go func() {
		defer close(p.evDone)
		p.events.run(evCtx)
	}()
	p.checkIdentities(ctx)
	p.probeRound(ctx)
	a := p.active.Load()
	var startErr error
	if p.cfg.ExternalDecisions {
		// No ticket before the coordinator's first word.
		p.setGate(GateHeld, "", a.gen, errors.New("waiting for the coordinator's first assignment"))
	} else {
		// Opens the gate, or halts it (see openAtStart); the Path runs either way.
		startErr = p.openAtStart(ctx, a)
	}
	p.running.Store(true)
	go p.control(runCtx)
	return startErr
}

// Close stops the monitor, fails waiting and future Acquires with ErrClosed,
// closes every tracked connection, and delivers every event emitted before it
// returns. It waits for probes in progress, which must honour their context,
// and for a Fencer, Unfence or Reconcile call in progress, which must honour
// theirs. Close is idempotent. Do not call it from OnEvent or from one of those
// hooks: it waits for them to return.
func (p *Path) Close() error {
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	if !p.closed.CompareAndSwap(false, true) {
		return nil
	}
	p.gateMu.Lock()
	old := p.gate.Load()
	p.gate.Store(&gateView{state: GateClosed, cause: ErrClosed, since: time.Now(), changed: make(chan struct{})})
	close(old.changed)
	p.gateMu.Unlock()
	if p.started {
		p.cancel()
		<-p.ctlDone
		p.probeWG.Wait()
		// Only now is no goroutine of the Path left to emit: deliver the rest.
		p.evCancel()
		<-p.evDone
	}
	// Wake ActiveChanged watchers; later calls get a closed channel too.
	p.activeMu.Lock()
	av := p.active.Load()
	done := make(chan struct{})
	close(done)
	p.active.Store(&activeView{rt: av.rt, gen: av.gen, changed: done})
	close(av.changed)
	p.activeMu.Unlock()
	for _, rt := range p.order {
		rt.closeAll()
	}
	return nil
}

// Report records the result of live traffic (a passive signal) on an endpoint:
// err nil for success. token is the one the traffic started under (from the
// Ticket or Conn); results from an older token, or from an endpoint that is
// fenced (its connections were closed by us), are dropped, and so are the caller's
// own cancellations. A failure that takes the active endpoint DOWN holds the
// gate before Report returns (no ticket is granted on it from then on) and
// triggers an evaluation at once. Successes on a HEALTHY endpoint within 2 ms of the last
// recorded one are coalesced (they add no evidence, and Report stays lock-free
// on the hot path).
func (p *Path) Report(endpoint string, token uint64, err error, latency time.Duration) {
	if err != nil && errors.Is(err, context.Canceled) {
		return
	}
	rt, ok := p.eps[endpoint]
	if !ok || p.closed.Load() {
		return
	}
	a := p.active.Load()
	if token != a.gen || rt.fencedFlag.Load() {
		p.stats.droppedReports.Add(1)
		return
	}
	if err == nil {
		// Under load a transport reports thousands of successes a second; on a
		// HEALTHY endpoint one within passiveCoalesce of the last recorded one
		// adds no evidence, so it is not recorded again (and takes no lock).
		now := int64(time.Since(p.epoch)) + 1 // never 0: 0 means "none recorded yet"
		if last := rt.lastOK.Load(); last != 0 && engine.HealthState(rt.state.Load()) == engine.Healthy && now-last < int64(passiveCoalesce) {
			return
		}
		rt.lastOK.Store(now)
	}
	p.observe(endpoint, err, latency, true)
	if err != nil {
		p.orderFailed(rt) // the probe is brought forward (suspicion.go)
	}
}

// observe records one result (observeOne); when it takes the active endpoint
// DOWN, the gate stops granting on it before observe returns, and the
// controller is asked to evaluate at once (downhold.go) — for a probe too,
// which must not wait for the rest of its round (a slow probe elsewhere, the
// trade-path checks).
func (p *Path) observe(endpoint string, err error, latency time.Duration, passive bool) (engine.HealthState, bool) {
	st, changed := p.observeOne(endpoint, err, latency, passive)
	if changed && st == engine.Down {
		rt := p.eps[endpoint]
		if passive {
			rt.trafficDown.Store(true)
		}
		if rt == p.active.Load().rt {
			p.holdOnDown(rt)
			p.kick()
		}
	}
	return st, changed
}

// observeOne records one result and emits the state-change event, and for a
// probe (not a passive report, which comes with every request) the probe event.
func (p *Path) observeOne(endpoint string, err error, latency time.Duration, passive bool) (engine.HealthState, bool) {
	rt := p.eps[endpoint]
	// The events are emitted under the endpoint's lock, so the state changes of
	// one endpoint are numbered in the order the engine made them, and chain.
	rt.obsMu.Lock()
	defer rt.obsMu.Unlock()
	prev := engine.HealthState(rt.state.Load())
	st, oerr := p.record(endpoint, err, latency, passive)
	if oerr != nil {
		p.log.Error("pathdialer: observe failed", "endpoint", endpoint, "err", oerr)
		return prev, false
	}
	rt.state.Store(int32(st.State))
	if st.State != engine.Down {
		rt.trafficDown.Store(false)
	}
	a := p.active.Load()
	if !passive {
		p.events.emit(Event{Kind: EventProbe, Endpoint: endpoint, Token: a.gen, State: st.State, Duration: latency, Err: err})
	}
	if st.State != prev {
		p.events.emit(Event{Kind: EventStateChange, Endpoint: endpoint, Token: a.gen, State: st.State, PrevState: prev, Err: err})
		if prev == engine.Down && st.State == engine.Healthy {
			// Copies its path held are delivered now: look for them soon
			// (verdict.go; the round's kick runs the look).
			p.endpointRecovered(endpoint, time.Now())
		}
		return st.State, true
	}
	return st.State, false
}

// passiveCoalesce: passive successes on a HEALTHY endpoint closer together than
// this are recorded once.
const passiveCoalesce = 2 * time.Millisecond

// kick asks the monitor to evaluate now.
func (p *Path) kick() {
	select {
	case p.trigger <- struct{}{}:
	default:
	}
}

// rejectedAtStart returns the error Start fails with when the latest probe
// result of every endpoint is a rejection (ErrProbeRejected, not a timeout
// that wraps one), else nil.
func (p *Path) rejectedAtStart() error {
	e := &probesRejectedError{}
	for _, rt := range p.order {
		st, ok := p.eng.Status(rt.ep.Name)
		err := st.LastProbeError
		if !ok || err == nil || !errors.Is(err, ErrProbeRejected) || errors.Is(err, ErrProbeTimeout) {
			return nil
		}
		e.names = append(e.names, rt.ep.Name)
		e.errs = append(e.errs, err)
	}
	return e
}

// probesRejectedError is Start's error when every endpoint rejected the probe.
type probesRejectedError struct {
	names []string // endpoints, in configuration order
	errs  []error  // their probe errors
}

func (e *probesRejectedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: every endpoint rejected the probe's request at Start (a configuration error, not an outage): check the probe's credentials, URL path and method:", ErrNoEligibleEndpoint)
	for i, name := range e.names {
		sep := " "
		if i > 0 {
			sep = "; "
		}
		fmt.Fprintf(&b, "%s%q: %v", sep, name, e.errs[i])
	}
	return b.String()
}

// Unwrap returns ErrNoEligibleEndpoint, ErrProbeRejected and each endpoint's
// probe error.
func (e *probesRejectedError) Unwrap() []error {
	return append([]error{ErrNoEligibleEndpoint, ErrProbeRejected}, e.errs...)
}
