package engine_test

// Property tests: random sequences of registrations, probes, observations, clock
// steps and evaluations, checked after every step against an independent model of
// the rules. TestPropertyEngine drives them with pgregory.net/rapid; FuzzEngine
// decodes the same operations from bytes.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/engine/enginetest"
)

type opKind uint8

const (
	opProbe opKind = iota
	opObserve
	opAdvance
	opFailover
	opFailback
	opRegister
	opCancelledProbe
	numOpKinds
)

type probeKind uint8

const (
	probeSuccess probeKind = iota
	probeError
	probePanic
	probeSlow
	numProbeKinds
)

// op is one step of a scenario. Fields not used by kind are ignored.
type op struct {
	kind  opKind
	ep    int           // endpoint index, taken modulo the number registered
	probe probeKind     // opProbe
	lat   time.Duration // opProbe (probeSlow), opObserve
	fail  bool          // opObserve
	d     time.Duration // opAdvance
	fence bool          // opFailover, opFailback
	prio  int           // opRegister
}

func (o op) String() string {
	switch o.kind {
	case opProbe:
		return fmt.Sprintf("probe(%d, kind %d, %v)", o.ep, o.probe, o.lat)
	case opObserve:
		return fmt.Sprintf("observe(%d, fail=%v, %v)", o.ep, o.fail, o.lat)
	case opAdvance:
		return fmt.Sprintf("advance(%v)", o.d)
	case opFailover:
		return fmt.Sprintf("failover(fence=%v)", o.fence)
	case opFailback:
		return fmt.Sprintf("failback(fence=%v)", o.fence)
	case opRegister:
		return fmt.Sprintf("register(prio %d)", o.prio)
	}
	return fmt.Sprintf("cancelledProbe(%d)", o.ep)
}

// scenario is a valid configuration: cfg without Probe and Clock, 2-4 endpoints
// with exactly one primary.
type scenario struct {
	cfg engine.Config
	eps []engine.Endpoint
}

type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// epModel is the test's own account of one endpoint, from the results it fed.
type epModel struct {
	state                                  engine.HealthState
	cf, cs                                 int
	lastSuccess, lastResult, degradedSince time.Time
}

// harness runs a scenario against a Manager and against the model.
type harness struct {
	t   fataler
	m   *engine.Manager
	clk *enginetest.FakeClock
	cfg engine.Config
	eps []engine.Endpoint // registration order

	nextProbe probeKind // what the ProbeFunc does on its next call
	nextLat   time.Duration

	model    []epModel
	active   int
	primary  int
	switches []time.Time // when every switch happened
	step     int
	trace    []string
}

var errProp = errors.New("probe: connection refused")

func newHarness(t fataler, sc scenario) *harness {
	t.Helper()
	h := &harness{t: t, clk: enginetest.NewFakeClock(t0), cfg: sc.cfg, active: -1, primary: -1}
	cfg := sc.cfg
	cfg.Clock = h.clk
	cfg.Probe = h.probeFunc
	m, err := engine.New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", sc.cfg, err)
	}
	h.m = m
	for _, ep := range sc.eps {
		h.register(ep)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return h
}

func (h *harness) probeFunc(ctx context.Context, ep engine.Endpoint) error {
	switch h.nextProbe {
	case probeError:
		return fmt.Errorf("probing %s: %w", ep.Address, errProp)
	case probePanic:
		panic("probe bug")
	case probeSlow:
		h.clk.Advance(h.nextLat)
	}
	return nil
}

func (h *harness) fatalf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("step %d: %s\ntrace:\n%v", h.step, fmt.Sprintf(format, args...), h.trace)
}

func (h *harness) register(ep engine.Endpoint) {
	if err := h.m.Register(ep); err != nil {
		h.fatalf("Register(%+v): %v", ep, err)
	}
	h.eps = append(h.eps, ep)
	h.model = append(h.model, epModel{})
	if ep.Primary {
		h.primary = len(h.eps) - 1
		if h.active < 0 {
			h.active = h.primary
		}
	}
}

// record is the model of one result: the rules of state.go and probe.go, restated.
func (h *harness) record(i int, failed bool, latency time.Duration) {
	e := &h.model[i]
	now := h.clk.Now()
	prev := e.state
	e.lastResult = now
	if failed {
		e.cf++
		e.cs = 0
		e.state = engine.Degraded
		if e.cf >= h.cfg.FailureThreshold {
			e.state = engine.Down
		}
	} else {
		e.cf = 0
		e.lastSuccess = now
		if h.cfg.DegradedLatency > 0 && latency > h.cfg.DegradedLatency {
			e.cs = 0
			e.state = engine.Degraded
		} else {
			e.cs++
			e.state = engine.Healthy
		}
	}
	if e.state != engine.Degraded {
		e.degradedSince = time.Time{}
	} else if prev != engine.Degraded {
		e.degradedSince = now
	}
}

func (h *harness) eligible(i int, now time.Time) bool {
	e := h.model[i]
	return e.state == engine.Healthy && now.Sub(e.lastSuccess) < h.cfg.MaxHealthAge
}

// best is the eligible endpoint other than the active one with the lowest priority,
// ties by registration order; -1 when there is none.
func (h *harness) best(now time.Time) int {
	b := -1
	for i, ep := range h.eps {
		if i == h.active || !h.eligible(i, now) {
			continue
		}
		if b < 0 || ep.Priority < h.eps[b].Priority {
			b = i
		}
	}
	return b
}

func (h *harness) expectFailover(now time.Time, fence bool) (engine.Outcome, int) {
	a := h.model[h.active]
	warranted := a.state == engine.Down ||
		(a.state == engine.Degraded && h.cfg.MaxDegradedDuration > 0 &&
			now.Sub(a.lastResult) < h.cfg.MaxHealthAge && now.Sub(a.degradedSince) >= h.cfg.MaxDegradedDuration)
	if !warranted {
		return engine.NoAction, -1
	}
	b := h.best(now)
	switch {
	case b < 0 && a.state == engine.Down:
		return engine.NoTargetAvailable, -1
	case b < 0:
		return engine.NoAction, -1
	case !h.cfg.BrokerFencesAtLogon && !fence:
		return engine.FenceRequired, b
	}
	return engine.Switched, b
}

func (h *harness) cooldownActive(now time.Time) bool {
	return len(h.switches) > 0 && now.Sub(h.switches[len(h.switches)-1]) < h.cfg.Cooldown
}

func (h *harness) limiterTripped(now time.Time) bool {
	n := 0
	for _, s := range h.switches {
		if now.Sub(s) < h.cfg.FlapWindow {
			n++
		}
	}
	return n >= h.cfg.FlapLimit
}

func (h *harness) expectFailback(now time.Time, fence bool) (engine.Outcome, int) {
	switch {
	case h.active == h.primary:
		return engine.NoAction, -1
	case h.cooldownActive(now):
		return engine.CooldownActive, h.primary
	case h.limiterTripped(now):
		return engine.FlapSuppressed, h.primary
	case !h.eligible(h.primary, now) || h.model[h.primary].cs < h.cfg.FailbackSuccessThreshold:
		return engine.PrimaryNotStable, h.primary
	case !h.cfg.BrokerFencesAtLogon && !fence:
		return engine.FenceRequired, h.primary
	}
	return engine.Switched, h.primary
}

func (h *harness) indexOf(name string) int {
	for i, ep := range h.eps {
		if ep.Name == name {
			return i
		}
	}
	return -1
}

func (h *harness) do(o op) {
	h.t.Helper()
	h.step++
	h.trace = append(h.trace, o.String())
	i := o.ep % len(h.eps)
	name := h.eps[i].Name
	switch o.kind {
	case opProbe:
		h.nextProbe, h.nextLat = o.probe, o.lat
		st, err := h.m.Probe(context.Background(), name)
		if err != nil {
			h.fatalf("Probe(%q): %v", name, err)
		}
		lat := time.Duration(0)
		if o.probe == probeSlow {
			lat = o.lat
		}
		h.record(i, o.probe == probeError || o.probe == probePanic, lat)
		if st.LastLatency != lat {
			h.fatalf("LastLatency %v, want %v", st.LastLatency, lat)
		}
		switch o.probe {
		case probeError:
			if !errors.Is(st.LastProbeError, errProp) {
				h.fatalf("LastProbeError %v", st.LastProbeError)
			}
		case probePanic:
			if !errors.Is(st.LastProbeError, engine.ErrProbePanic) {
				h.fatalf("LastProbeError %v", st.LastProbeError)
			}
		default:
			if st.LastProbeError != nil {
				h.fatalf("LastProbeError %v after a success", st.LastProbeError)
			}
		}
	case opCancelledProbe:
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := h.m.Probe(ctx, name); !errors.Is(err, context.Canceled) {
			h.fatalf("Probe under a cancelled context: %v", err)
		}
	case opObserve:
		var res error
		if o.fail {
			res = errProp
		}
		if _, err := h.m.Observe(name, res, o.lat); err != nil {
			h.fatalf("Observe(%q): %v", name, err)
		}
		h.record(i, o.fail, o.lat)
	case opAdvance:
		h.clk.Advance(o.d)
	case opRegister:
		if len(h.eps) >= 6 {
			break
		}
		n := len(h.eps)
		h.register(engine.Endpoint{Name: fmt.Sprintf("late%d", n), Address: fmt.Sprintf("10.0.0.%d:443", n), Region: "late", Priority: o.prio})
	case opFailover, opFailback:
		h.evaluate(o.kind == opFailback, o.fence)
	}
	h.checkStatuses()
}

func (h *harness) evaluate(back, fence bool) {
	h.t.Helper()
	now := h.clk.Now()
	before := h.m.Statuses() // the engine's own view immediately before
	histBefore := len(h.m.History())
	activeBefore := h.active
	var (
		want   engine.Outcome
		target int
		d      engine.Decision
		err    error
	)
	if back {
		want, target = h.expectFailback(now, fence)
		d, err = h.m.EvaluateFailback(fence)
	} else {
		want, target = h.expectFailover(now, fence)
		d, err = h.m.EvaluateFailover(fence)
	}
	if err != nil {
		h.fatalf("evaluate: %v", err)
	}

	// Invariants that hold whatever the model says.
	if d.RequiresTradingHalt != (d.Outcome == engine.NoTargetAvailable) {
		h.fatalf("%v with RequiresTradingHalt=%v", d.Outcome, d.RequiresTradingHalt)
	}
	if back && d.Outcome == engine.NoTargetAvailable {
		h.fatalf("failback returned NoTargetAvailable")
	}
	if d.From != h.eps[activeBefore].Name || !d.At.Equal(now) || d.Failback != back {
		h.fatalf("decision %+v: From/At/Failback wrong (active %q, now %v)", d, h.eps[activeBefore].Name, now)
	}
	if d.Outcome == engine.Switched {
		to := h.indexOf(d.To)
		if to < 0 || to == activeBefore {
			h.fatalf("switched to %q", d.To)
		}
		st := before[to]
		if st.State != engine.Healthy || now.Sub(st.LastSuccess) >= h.cfg.MaxHealthAge {
			h.fatalf("switched to %q, which was not eligible just before: %+v", d.To, st)
		}
		if back && (h.cooldownActive(now) || h.limiterTripped(now)) {
			h.fatalf("failback switched while cooldown=%v limiter=%v", h.cooldownActive(now), h.limiterTripped(now))
		}
	}
	if !back && d.Outcome == engine.NoAction && d.Notes != nil {
		a := h.model[activeBefore]
		if a.state == engine.Healthy && now.Sub(a.lastResult) < h.cfg.MaxHealthAge {
			h.fatalf("notes %q in the steady healthy state", d.Notes)
		}
	}

	// The model's verdict.
	if d.Outcome != want {
		h.fatalf("%s: outcome %v, model says %v (decision %+v)", map[bool]string{false: "failover", true: "failback"}[back], d.Outcome, want, d)
	}
	if (want == engine.Switched || want == engine.FenceRequired) && d.To != h.eps[target].Name {
		h.fatalf("%v to %q, model says %q", want, d.To, h.eps[target].Name)
	}
	if want == engine.Switched {
		h.active = target
		h.switches = append(h.switches, now)
	}

	hist := h.m.History()
	grow := 0
	if d.Outcome == engine.Switched {
		grow = 1
	}
	if len(hist) != histBefore+grow || len(hist) != len(h.switches) {
		h.fatalf("History %d -> %d after %v (model %d)", histBefore, len(hist), d.Outcome, len(h.switches))
	}
	if gen := h.m.Token(); gen != uint64(len(hist)) || d.Token != gen {
		h.fatalf("Token %d, decision %d, History %d", gen, d.Token, len(hist))
	}
	if grow == 1 && (hist[len(hist)-1].To != d.To || hist[len(hist)-1].Token != d.Token) {
		h.fatalf("History's last %+v, decision %+v", hist[len(hist)-1], d)
	}
}

// checkStatuses compares the engine with the model and checks the active endpoint.
func (h *harness) checkStatuses() {
	h.t.Helper()
	sts := h.m.Statuses()
	if len(sts) != len(h.eps) {
		h.fatalf("%d statuses, %d registered", len(sts), len(h.eps))
	}
	for i, st := range sts {
		e := h.model[i]
		if st.Endpoint != h.eps[i] || st.State != e.state || st.ConsecutiveFailures != e.cf || st.ConsecutiveSuccesses != e.cs ||
			!st.LastSuccess.Equal(e.lastSuccess) || !st.LastResult.Equal(e.lastResult) || !st.DegradedSince.Equal(e.degradedSince) ||
			st.Active != (i == h.active) {
			h.fatalf("status of %q: engine %+v, model %+v (active %d)", h.eps[i].Name, st, e, h.active)
		}
	}
	a, ok := h.m.Active()
	if !ok || a != h.eps[h.active] {
		h.fatalf("Active() = %+v, %v; model %q", a, ok, h.eps[h.active].Name)
	}
	if _, ok := h.m.Status(a.Name); !ok {
		h.fatalf("active endpoint %q is not registered", a.Name)
	}
}

// ---- rapid ----

func drawScenario(t *rapid.T) scenario {
	cfg := engine.Config{
		FailureThreshold:         rapid.IntRange(1, 4).Draw(t, "FailureThreshold"),
		MaxHealthAge:             time.Duration(rapid.IntRange(1, 30).Draw(t, "MaxHealthAgeS")) * time.Second,
		Cooldown:                 time.Duration(rapid.IntRange(0, 120).Draw(t, "CooldownS")) * time.Second,
		FailbackSuccessThreshold: rapid.IntRange(1, 4).Draw(t, "FailbackSuccessThreshold"),
		FlapLimit:                rapid.IntRange(1, 4).Draw(t, "FlapLimit"),
		FlapWindow:               time.Duration(rapid.IntRange(1, 1800).Draw(t, "FlapWindowS")) * time.Second,
		BrokerFencesAtLogon:      rapid.Bool().Draw(t, "BrokerFencesAtLogon"),
	}
	if rapid.Bool().Draw(t, "latencyAware") {
		cfg.DegradedLatency = time.Duration(rapid.IntRange(50, 500).Draw(t, "DegradedLatencyMs")) * time.Millisecond
		cfg.MaxDegradedDuration = time.Duration(rapid.IntRange(0, 60).Draw(t, "MaxDegradedDurationS")) * time.Second
	}
	n := rapid.IntRange(2, 4).Draw(t, "endpoints")
	prim := rapid.IntRange(0, n-1).Draw(t, "primary")
	eps := make([]engine.Endpoint, n)
	for i := range eps {
		eps[i] = engine.Endpoint{
			Name:     fmt.Sprintf("ep%d", i),
			Address:  fmt.Sprintf("ep%d.broker.example:443", i),
			Region:   fmt.Sprintf("region-%d", i),
			Priority: rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("priority%d", i)),
			Primary:  i == prim,
		}
	}
	return scenario{cfg: cfg, eps: eps}
}

var opGen = rapid.Custom(func(t *rapid.T) op {
	o := op{kind: opKind(rapid.IntRange(0, int(numOpKinds)-1).Draw(t, "kind"))}
	switch o.kind {
	case opProbe:
		o.ep = rapid.IntRange(0, 5).Draw(t, "ep")
		o.probe = probeKind(rapid.IntRange(0, int(numProbeKinds)-1).Draw(t, "probe"))
		o.lat = time.Duration(rapid.IntRange(0, 2000).Draw(t, "latMs")) * time.Millisecond
	case opObserve:
		o.ep = rapid.IntRange(0, 5).Draw(t, "ep")
		o.fail = rapid.Bool().Draw(t, "fail")
		o.lat = time.Duration(rapid.IntRange(0, 2000).Draw(t, "latMs")) * time.Millisecond
	case opAdvance:
		switch rapid.IntRange(0, 2).Draw(t, "scale") {
		case 0:
			o.d = time.Duration(rapid.IntRange(0, 3000).Draw(t, "ms")) * time.Millisecond
		case 1:
			o.d = time.Duration(rapid.IntRange(0, 300).Draw(t, "s")) * time.Second
		default:
			o.d = time.Duration(rapid.IntRange(0, 72).Draw(t, "h")) * time.Hour
		}
	case opFailover, opFailback:
		o.fence = rapid.Bool().Draw(t, "fence")
	case opRegister:
		o.prio = rapid.IntRange(-1, 4).Draw(t, "prio")
	case opCancelledProbe:
		o.ep = rapid.IntRange(0, 5).Draw(t, "ep")
	}
	return o
})

func TestPropertyEngine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := newHarness(t, drawScenario(t))
		h.checkStatuses()
		steps := rapid.IntRange(1, 120).Draw(t, "steps")
		for range steps {
			h.do(opGen.Draw(t, "op"))
		}
	})
}

// ---- native fuzzing ----

// byteReader hands out bytes, then zeros once the input is exhausted.
type byteReader struct{ b []byte }

func (r *byteReader) next() int {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return int(v)
}

func decodeScenario(r *byteReader) scenario {
	cfg := engine.Config{
		FailureThreshold:         1 + r.next()%4,
		MaxHealthAge:             time.Duration(1+r.next()%30) * time.Second,
		Cooldown:                 time.Duration(r.next()%121) * time.Second,
		FailbackSuccessThreshold: 1 + r.next()%4,
		FlapLimit:                1 + r.next()%4,
		FlapWindow:               time.Duration(1+r.next()*8) * time.Second,
	}
	flags := r.next()
	cfg.BrokerFencesAtLogon = flags&1 != 0
	if flags&2 != 0 {
		cfg.DegradedLatency = time.Duration(50+r.next()*2) * time.Millisecond
		cfg.MaxDegradedDuration = time.Duration(r.next()%61) * time.Second
	}
	n := 2 + r.next()%3
	prim := r.next() % n
	eps := make([]engine.Endpoint, n)
	for i := range eps {
		eps[i] = engine.Endpoint{
			Name: fmt.Sprintf("ep%d", i), Address: fmt.Sprintf("ep%d.broker.example:443", i),
			Region: fmt.Sprintf("region-%d", i), Priority: r.next() % 4, Primary: i == prim,
		}
	}
	return scenario{cfg: cfg, eps: eps}
}

func decodeOp(r *byteReader) op {
	b := r.next()
	o := op{kind: opKind(b % int(numOpKinds)), ep: b / int(numOpKinds)}
	a := r.next()
	switch o.kind {
	case opProbe:
		o.probe = probeKind(a % int(numProbeKinds))
		o.lat = time.Duration(a/int(numProbeKinds)) * 40 * time.Millisecond
	case opObserve:
		o.fail = a&1 != 0
		o.lat = time.Duration(a>>1) * 15 * time.Millisecond
	case opAdvance:
		switch a % 3 {
		case 0:
			o.d = time.Duration(a) * 10 * time.Millisecond
		case 1:
			o.d = time.Duration(a) * time.Second
		default:
			o.d = time.Duration(a) * time.Hour
		}
	case opFailover, opFailback:
		o.fence = a&1 != 0
	case opRegister:
		o.prio = a%6 - 1
	}
	return o
}

func FuzzEngine(f *testing.F) {
	// Config bytes (9 + priorities), then op pairs: kind|ep, argument.
	f.Add([]byte{1, 4, 60, 2, 3, 100, 0, 0, 0, 0, 1,
		byte(opProbe), 0, byte(opProbe + numOpKinds), 0, // both healthy
		byte(opProbe), 1, byte(opProbe), 1, // primary down
		byte(opFailover), 0, byte(opFailover), 1, // fence, then switch
		byte(opAdvance), 1, byte(opFailback), 1})
	f.Add([]byte{0, 9, 0, 0, 0, 0, 3, 100, 10, 1, 0, 2, 3, 1,
		byte(opProbe), 3 * 4, byte(opAdvance), 40, byte(opFailover), 1,
		byte(opObserve), 1, byte(opRegister), 0, byte(opProbe + 4*numOpKinds), 0,
		byte(opCancelledProbe), 0, byte(opFailback), 0})
	f.Add([]byte("brokerpath: a primary that alternates up and down, failing back"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteReader{b: data}
		h := newHarness(t, decodeScenario(r))
		h.checkStatuses()
		for steps := 0; len(r.b) > 0 && steps < 400; steps++ {
			h.do(decodeOp(r))
		}
	})
}
