package pathdialer_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// The two endpoints most tests use: a primary "eu" and a backup "us", each with a
// REST URL and a FIX host:port. The addresses are never resolved: tests dial
// through pipeNet.
var (
	epEU = pathdialer.Endpoint{Name: "eu", Region: "eu-west-1", Priority: 0, Primary: true,
		Services: map[string]string{"rest": "https://api-eu.broker.example", "fix": "fix-eu.broker.example:9878"}}
	epUS = pathdialer.Endpoint{Name: "us", Region: "us-east-1", Priority: 10,
		Services: map[string]string{"rest": "https://api-us.broker.example", "fix": "fix-us.broker.example:9878"}}
)

// endpointOfAddr maps a dialed host:port back to its endpoint.
func endpointOfAddr(addr string) string {
	switch {
	case strings.Contains(addr, "-eu."):
		return "eu"
	case strings.Contains(addr, "-us."):
		return "us"
	}
	return "?"
}

// probeMode is how the fake probe answers for one endpoint.
type probeMode int

const (
	probeOK        probeMode = iota
	probeFail                // returns an error at once
	probeBlackhole           // blocks until its context ends (honours ctx)
	probeHang                // blocks until the test releases it (ignores ctx)
	probePanic               // panics
)

var errReset = errors.New("connection reset by peer")

// probes is a ProbeFunc driven per endpoint by the test. Safe for concurrent use.
type probes struct {
	mu      sync.Mutex
	mode    map[string]probeMode
	calls   map[string]int
	release chan struct{} // closed to release probeHang probes
}

func newProbes() *probes {
	return &probes{mode: map[string]probeMode{}, calls: map[string]int{}, release: make(chan struct{})}
}

func (pr *probes) set(name string, m probeMode) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.mode[name] = m
}

func (pr *probes) count(name string) int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.calls[name]
}

func (pr *probes) probe(ctx context.Context, ep pathdialer.Endpoint) error {
	pr.mu.Lock()
	pr.calls[ep.Name]++
	m := pr.mode[ep.Name]
	release := pr.release
	pr.mu.Unlock()
	switch m {
	case probeFail:
		return errReset
	case probeBlackhole:
		<-ctx.Done()
		return ctx.Err()
	case probeHang:
		<-release
		return nil
	case probePanic:
		panic("probe exploded")
	}
	return nil
}

// pipeNet is Config.Dial over net.Pipe: no sockets, so it runs inside synctest
// bubbles. The test keeps the peer ends.
type pipeNet struct {
	mu    sync.Mutex
	dials map[string]int // by endpoint
	peers []net.Conn
}

func newPipeNet() *pipeNet { return &pipeNet{dials: map[string]int{}} }

func (n *pipeNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a, b := net.Pipe()
	n.mu.Lock()
	n.dials[endpointOfAddr(addr)]++
	n.peers = append(n.peers, b)
	n.mu.Unlock()
	return a, nil
}

func (n *pipeNet) count(ep string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dials[ep]
}

func (n *pipeNet) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.peers {
		_ = c.Close()
	}
}

// hooks records Fencer, Unfence and Reconcile calls, and fails them on demand.
type hooks struct {
	mu         sync.Mutex
	fences     []pathdialer.Fence
	unfences   []pathdialer.Fence
	recs       []pathdialer.Reconciliation
	fenceFails int // failures still to return; < 0 fails for ever
	recFails   int
	// onFence and onReconcile, when set, run inside the hook (after recording).
	onFence     func(pathdialer.Fence)
	onReconcile func(pathdialer.Reconciliation)
}

var (
	errFence     = errors.New("fence: credential revocation refused")
	errReconcile = errors.New("reconcile: order query failed")
)

func (h *hooks) fence(ctx context.Context, f pathdialer.Fence) error {
	h.mu.Lock()
	h.fences = append(h.fences, f)
	fail := h.fenceFails != 0
	if h.fenceFails > 0 {
		h.fenceFails--
	}
	on := h.onFence
	h.mu.Unlock()
	if on != nil {
		on(f)
	}
	if fail {
		return errFence
	}
	return nil
}

func (h *hooks) unfence(ctx context.Context, f pathdialer.Fence) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unfences = append(h.unfences, f)
	return nil
}

func (h *hooks) reconcile(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	r.Tickets = slices.Clone(r.Tickets)
	h.mu.Lock()
	h.recs = append(h.recs, r)
	fail := h.recFails != 0
	if h.recFails > 0 {
		h.recFails--
	}
	on := h.onReconcile
	h.mu.Unlock()
	if on != nil {
		on(r)
	}
	if fail {
		return nil, errReconcile
	}
	var out []pathdialer.Settlement
	for _, t := range r.Tickets {
		out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: pathdialer.FateNotReceived})
	}
	return out, nil
}

func (h *hooks) setFenceFails(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fenceFails = n
}

func (h *hooks) setRecFails(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recFails = n
}

func (h *hooks) fenceCalls() []pathdialer.Fence {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.fences)
}

func (h *hooks) unfenceCalls() []pathdialer.Fence {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.unfences)
}

func (h *hooks) reconciliations() []pathdialer.Reconciliation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.recs)
}

// recorder keeps every event delivered to OnEvent and lets a test wait for one.
type recorder struct {
	mu     sync.Mutex
	events []pathdialer.Event
	notify chan struct{}
	also   func(pathdialer.Event) // optional, called first, from OnEvent
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1)} }

func (r *recorder) on(e pathdialer.Event) {
	if r.also != nil {
		r.also(e)
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

func (r *recorder) all() []pathdialer.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// harness is a Path over pipeNet with fake probes and recording hooks.
type harness struct {
	t      testing.TB
	p      *pathdialer.Path
	probes *probes
	net    *pipeNet
	hooks  *hooks
	rec    *recorder
	cursor int // index of the next event await looks at
}

// baseConfig probes every second with a 500 ms timeout and no jitter, Down after
// 3 failures, fresh for 5 s, failback after a 60 s cooldown and 5 successes.
func baseConfig() pathdialer.Config {
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{epEU, epUS}
	cfg.ProbeInterval = time.Second
	cfg.ProbeTimeout = 500 * time.Millisecond
	cfg.ProbeJitter = 0
	cfg.InflightGrace = time.Second
	// Scenario tests follow unknown orders into the next switch's reconcile;
	// TestSettleUnknownWithoutSwitch turns background settling on.
	cfg.SettleUnknown = 0
	// The re-query of provisional NOT_RECEIVED verdicts would add
	// reconciliations to every scenario; the late-landing tests set their own.
	cfg.Quarantine = time.Hour
	return cfg
}

func newHarness(t testing.TB, edit func(*pathdialer.Config)) *harness {
	t.Helper()
	h := &harness{t: t, probes: newProbes(), net: newPipeNet(), hooks: &hooks{}, rec: newRecorder()}
	cfg := baseConfig()
	cfg.Probe = h.probes.probe
	cfg.Fencer = h.hooks.fence
	cfg.Unfence = h.hooks.unfence
	cfg.Reconcile = h.hooks.reconcile
	cfg.Dial = h.net.dial
	cfg.OnEvent = h.rec.on
	if edit != nil {
		edit(&cfg)
	}
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.p = p
	return h
}

func (h *harness) start() {
	h.t.Helper()
	if err := h.p.Start(context.Background()); err != nil {
		h.t.Fatalf("Start: %v", err)
	}
}

func (h *harness) close() {
	_ = h.p.Close()
	h.net.close()
}

// awaitLimit bounds every wait. Inside a bubble it is fake time, so a missing
// event fails the test at once instead of hanging it.
const awaitLimit = 10 * time.Minute

// await returns the next event (from the cursor on) of the given kind that
// satisfies match (nil matches all), and moves the cursor past it.
func (h *harness) await(kind pathdialer.EventKind, match func(pathdialer.Event) bool) pathdialer.Event {
	h.t.Helper()
	limit := time.After(awaitLimit)
	for {
		evs := h.rec.all()
		for i := h.cursor; i < len(evs); i++ {
			if e := evs[i]; e.Kind == kind && (match == nil || match(e)) {
				h.cursor = i + 1
				return e
			}
		}
		select {
		case <-h.rec.notify:
		case <-limit:
			h.t.Fatalf("no %v event within %v; events since the cursor:\n%s", kind, awaitLimit, timeline(evs[min(h.cursor, len(evs)):]))
		}
	}
}

// kindsSince lists the kinds of the events from index i on, probe results and
// health-state changes excluded (they interleave with everything).
func kindsSince(evs []pathdialer.Event, i int) []pathdialer.EventKind {
	var out []pathdialer.EventKind
	for _, e := range evs[i:] {
		if e.Kind == pathdialer.EventProbe || e.Kind == pathdialer.EventStateChange {
			continue
		}
		out = append(out, e.Kind)
	}
	return out
}

func timeline(evs []pathdialer.Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Kind == pathdialer.EventProbe {
			continue
		}
		fmt.Fprintf(&b, "  %s %v\n", e.Time.Format("15:04:05.000"), e)
	}
	return b.String()
}

func countKind(evs []pathdialer.Event, kind pathdialer.EventKind) int {
	n := 0
	for _, e := range evs {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func orderIDs(ts []pathdialer.TicketInfo) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.OrderID)
	}
	slices.Sort(out)
	return out
}

// acquireAsync runs Acquire in a goroutine; the result arrives on the channel.
type acquireResult struct {
	t   *pathdialer.Ticket
	err error
}

func acquireAsync(ctx context.Context, p *pathdialer.Path, service, orderID string) <-chan acquireResult {
	ch := make(chan acquireResult, 1)
	go func() {
		t, err := p.Acquire(ctx, service, orderID)
		ch <- acquireResult{t, err}
	}()
	return ch
}

func mustAcquire(t testing.TB, p *pathdialer.Path, orderID string) *pathdialer.Ticket {
	t.Helper()
	tk, err := p.Acquire(context.Background(), pathdialer.ServiceREST, orderID)
	if err != nil {
		t.Fatalf("Acquire(%s): %v", orderID, err)
	}
	return tk
}

func gateState(p *pathdialer.Path) pathdialer.GateState {
	s, _ := p.GateState()
	return s
}
