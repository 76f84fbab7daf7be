package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/engine/enginetest"
)

// t0 is the fake clock's start in most tests: a fixed wall reading, so notes and
// outputs are deterministic.
var t0 = time.Date(2025, 3, 3, 8, 0, 0, 0, time.UTC)

// The endpoints most tests use: a primary and two backups with explicit priorities.
var (
	epEU = engine.Endpoint{Name: "eu", Address: "https://eu.broker.example", Region: "eu-west-1", Priority: 0, Primary: true}
	epUS = engine.Endpoint{Name: "us", Address: "https://us.broker.example", Region: "us-east-1", Priority: 10}
	epAP = engine.Endpoint{Name: "ap", Address: "https://ap.broker.example", Region: "ap-northeast-1", Priority: 20}
)

// probeTable is a ProbeFunc controlled per endpoint name: an error to return, a
// value to panic with, or a latency to spend (by advancing the fake clock). Absent
// entries succeed at once. Safe for concurrent use.
type probeTable struct {
	clk *enginetest.FakeClock

	mu     sync.Mutex
	errs   map[string]error
	panics map[string]any
	slow   map[string]time.Duration
	calls  map[string]int
}

func newProbeTable(clk *enginetest.FakeClock) *probeTable {
	return &probeTable{clk: clk, errs: map[string]error{}, panics: map[string]any{}, slow: map[string]time.Duration{}, calls: map[string]int{}}
}

func (p *probeTable) fail(name string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs[name] = err
	delete(p.panics, name)
}

func (p *probeTable) panicWith(name string, v any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.panics[name] = v
}

func (p *probeTable) heal(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.errs, name)
	delete(p.panics, name)
	delete(p.slow, name)
}

func (p *probeTable) setLatency(name string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.slow[name] = d
}

func (p *probeTable) count(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[name]
}

func (p *probeTable) probe(ctx context.Context, ep engine.Endpoint) error {
	p.mu.Lock()
	p.calls[ep.Name]++
	err, lat := p.errs[ep.Name], p.slow[ep.Name]
	pv, hasPanic := p.panics[ep.Name]
	p.mu.Unlock()
	if lat > 0 {
		p.clk.Advance(lat)
	}
	if hasPanic {
		panic(pv)
	}
	return err
}

// fixture builds a Manager on a fake clock with a probeTable, registers eps and
// validates the configuration. edit may change the config (DefaultConfig with a
// FailureThreshold of 2) before New.
func fixture(t testing.TB, edit func(*engine.Config), eps ...engine.Endpoint) (*engine.Manager, *enginetest.FakeClock, *probeTable) {
	t.Helper()
	clk := enginetest.NewFakeClock(t0)
	pt := newProbeTable(clk)
	cfg := engine.DefaultConfig()
	cfg.FailureThreshold = 2
	cfg.Probe = pt.probe
	cfg.Clock = clk
	if edit != nil {
		edit(&cfg)
	}
	m, err := engine.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, ep := range eps {
		if err := m.Register(ep); err != nil {
			t.Fatalf("Register(%q): %v", ep.Name, err)
		}
	}
	if len(eps) >= 2 {
		if err := m.Validate(); err != nil {
			t.Fatalf("Validate: %v", err)
		}
	}
	return m, clk, pt
}

func mustProbe(t testing.TB, m *engine.Manager, name string) engine.Status {
	t.Helper()
	st, err := m.Probe(context.Background(), name)
	if err != nil {
		t.Fatalf("Probe(%q): %v", name, err)
	}
	return st
}

func mustStatus(t testing.TB, m *engine.Manager, name string) engine.Status {
	t.Helper()
	st, ok := m.Status(name)
	if !ok {
		t.Fatalf("Status(%q): not registered", name)
	}
	return st
}

func failover(t testing.TB, m *engine.Manager, fence bool) engine.Decision {
	t.Helper()
	d, err := m.EvaluateFailover(fence)
	if err != nil {
		t.Fatalf("EvaluateFailover(%v): %v", fence, err)
	}
	checkDecision(t, d)
	return d
}

func failback(t testing.TB, m *engine.Manager, fence bool) engine.Decision {
	t.Helper()
	d, err := m.EvaluateFailback(fence)
	if err != nil {
		t.Fatalf("EvaluateFailback(%v): %v", fence, err)
	}
	checkDecision(t, d)
	return d
}

// checkDecision holds for every decision: halt exactly on NoTargetAvailable.
func checkDecision(t testing.TB, d engine.Decision) {
	t.Helper()
	if d.RequiresTradingHalt != (d.Outcome == engine.NoTargetAvailable) {
		t.Fatalf("%v with RequiresTradingHalt=%v", d.Outcome, d.RequiresTradingHalt)
	}
}

func wantOutcome(t testing.TB, d engine.Decision, want engine.Outcome) {
	t.Helper()
	if d.Outcome != want {
		t.Fatalf("outcome %v, want %v (notes: %q)", d.Outcome, want, d.Notes)
	}
}

func wantActive(t testing.TB, m *engine.Manager, want string) {
	t.Helper()
	a, ok := m.Active()
	if !ok || a.Name != want {
		t.Fatalf("Active() = %q, %v; want %q", a.Name, ok, want)
	}
}

func wantState(t testing.TB, m *engine.Manager, name string, want engine.HealthState) engine.Status {
	t.Helper()
	st := mustStatus(t, m, name)
	if st.State != want {
		t.Fatalf("%s is %v, want %v (%+v)", name, st.State, want, st)
	}
	return st
}

// notesContain reports whether some note contains every one of the substrings.
func notesContain(notes []string, subs ...string) bool {
	for _, n := range notes {
		all := true
		for _, s := range subs {
			if !strings.Contains(n, s) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func wantNote(t testing.TB, d engine.Decision, subs ...string) {
	t.Helper()
	if !notesContain(d.Notes, subs...) {
		t.Fatalf("%v: no note contains %q; notes: %q", d.Outcome, subs, d.Notes)
	}
}

// driveDown probes name until it is Down (the probe must be failing).
func driveDown(t testing.TB, m *engine.Manager, name string) {
	t.Helper()
	for range m.Config().FailureThreshold {
		mustProbe(t, m, name)
	}
	wantState(t, m, name, engine.Down)
}
