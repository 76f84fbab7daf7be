package engine_test

// One test per item of the specification's Verification list, named after it.

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/engine/enginetest"
)

var errRefused = errors.New("dial tcp: connection refused")

// "Build a manager with failure_threshold=2, register a primary and an unprobed
// backup, and drive the primary DOWN: evaluate_failover() must return
// NO_TARGET_AVAILABLE with requires_trading_halt true, and active_endpoint must still
// be the primary. Probe the backup once, then re-evaluate: the outcome becomes
// SWITCHED."
func TestVerification_NoTargetThenSwitched(t *testing.T) {
	m, _, pt := fixture(t, nil, epEU, epUS)
	pt.fail("eu", errRefused)
	driveDown(t, m, "eu")

	d := failover(t, m, true)
	wantOutcome(t, d, engine.NoTargetAvailable)
	if !d.RequiresTradingHalt {
		t.Fatal("NoTargetAvailable without RequiresTradingHalt")
	}
	if d.From != "eu" || d.To != "" {
		t.Fatalf("From/To = %q/%q, want eu/\"\"", d.From, d.To)
	}
	wantNote(t, d, `"us"`, "UNKNOWN")
	wantActive(t, m, "eu")
	if h := m.History(); len(h) != 0 {
		t.Fatalf("History after NoTargetAvailable: %v", h)
	}

	mustProbe(t, m, "us")
	d = failover(t, m, true)
	wantOutcome(t, d, engine.Switched)
	if d.From != "eu" || d.To != "us" || d.RequiresTradingHalt {
		t.Fatalf("decision %+v", d)
	}
	wantActive(t, m, "us")
	if h := m.History(); len(h) != 1 || h[0].To != "us" || m.Token() != 1 || d.Token != 1 {
		t.Fatalf("History %v, Token %d, d.Token %d", h, m.Token(), d.Token)
	}
}

// "With require_fence=True, the same sequence must return FENCE_REQUIRED and leave
// failover_history empty until evaluate_failover(fence_confirmed=True) is called."
func TestVerification_FenceRequired(t *testing.T) {
	m, _, pt := fixture(t, nil, epEU, epUS)
	if m.Config().BrokerFencesAtLogon {
		t.Fatal("DefaultConfig must require a client-side fence")
	}
	pt.fail("eu", errRefused)
	driveDown(t, m, "eu")
	wantOutcome(t, failover(t, m, false), engine.NoTargetAvailable)
	mustProbe(t, m, "us")

	for range 3 { // asking again changes nothing either
		d := failover(t, m, false)
		wantOutcome(t, d, engine.FenceRequired)
		if d.From != "eu" || d.To != "us" || d.RequiresTradingHalt {
			t.Fatalf("decision %+v", d)
		}
		wantNote(t, d, "fence", `"eu"`)
		wantActive(t, m, "eu")
		if h := m.History(); len(h) != 0 || m.Token() != 0 || d.Token != 0 {
			t.Fatalf("FenceRequired changed History %v / Token %d", h, m.Token())
		}
	}

	d := failover(t, m, true)
	wantOutcome(t, d, engine.Switched)
	wantActive(t, m, "us")
	if h := m.History(); len(h) != 1 {
		t.Fatalf("History after the fenced switch: %v", h)
	}
}

// "Point the health probe at a function that raises ConnectionResetError: two
// probes must take the endpoint to DEGRADED then DOWN, and last_probe_error must
// name the exception. A KeyboardInterrupt must still propagate."
//
// Go's ConnectionResetError is syscall.ECONNRESET inside a *net.OpError; the
// KeyboardInterrupt analog is cancellation of the caller's own context, which must
// come back out of Probe and count nothing.
func TestVerification_ProbeErrorDegradedThenDown(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	m, _, pt := fixture(t, nil, epEU, epUS)
	pt.fail("eu", reset)

	for i, want := range []engine.HealthState{engine.Degraded, engine.Down} {
		st := mustProbe(t, m, "eu")
		if st.State != want || st.ConsecutiveFailures != i+1 {
			t.Fatalf("probe %d: %v with %d failures, want %v with %d", i+1, st.State, st.ConsecutiveFailures, want, i+1)
		}
		if !errors.Is(st.LastProbeError, syscall.ECONNRESET) {
			t.Fatalf("LastProbeError %v does not wrap ECONNRESET", st.LastProbeError)
		}
		var op *net.OpError
		if !errors.As(st.LastProbeError, &op) || op.Op != "read" {
			t.Fatalf("LastProbeError %v does not hold the *net.OpError", st.LastProbeError)
		}
		if msg := st.LastProbeError.Error(); !strings.Contains(msg, "connection reset by peer") {
			t.Fatalf("LastProbeError %q does not name the error", msg)
		}
	}

	// The interrupt propagates: cancel the caller's context while the probe runs.
	before := mustStatus(t, m, "eu")
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	blocking := func(ctx context.Context, ep engine.Endpoint) error {
		close(started)
		<-ctx.Done()
		return reset // what a real dial returns when it is torn down
	}
	m2, err := engine.New(withProbe(m.Config(), blocking))
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.Register(epEU); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := m2.Probe(ctx, "eu"); errc <- err }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Probe under a cancelled context returned %v, want context.Canceled", err)
	}
	if st := mustStatus(t, m2, "eu"); st.State != engine.Unknown || st.ConsecutiveFailures != 0 || st.LastProbeError != nil || !st.LastResult.IsZero() {
		t.Fatalf("a cancelled probe was counted: %+v", st)
	}
	// And on the first manager, a context cancelled up front counts nothing either.
	if _, err := m.Probe(ctx, "eu"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Probe with a cancelled context returned %v", err)
	}
	if after := mustStatus(t, m, "eu"); after.ConsecutiveFailures != before.ConsecutiveFailures || !after.LastResult.Equal(before.LastResult) {
		t.Fatalf("cancelled probe changed the status: %+v -> %+v", before, after)
	}
}

func withProbe(cfg engine.Config, p engine.ProbeFunc) engine.Config {
	cfg.Probe = p
	return cfg
}

// "With cooldown_seconds=600 and a recovered primary, patch time.time() forward by a
// day: the outcome must remain COOLDOWN_ACTIVE, proving the gate is on the monotonic
// clock."
//
// Go cannot step the OS wall clock from a test, so the Clock hands the engine what
// time.Now returns after such a step: readings whose monotonic part advanced by
// minutes while their wall part jumped a day (steppedReading, monotonic_test.go).
// Why this test fails for an engine that compares wall readings:
//   - forward: the cooldown is measured from the switch (at base) to a reading whose
//     wall part is a day later. By the wall that is 24h > 600s, the gate opens and
//     the outcome is FenceRequired, not CooldownActive. By the monotonic reading
//     only 2m+3s passed.
//   - backward: 601s elapsed on the monotonic clock but the wall went back a day.
//     By the wall the interval is negative, the gate stays shut (CooldownActive);
//     the engine must open it (FenceRequired, then Switched).
//
// The primary's successes are probed after the step, so freshness and stability
// compare readings of one frame and only the cooldown spans the step: the gate
// under test is the only thing the step can change.
func TestVerification_CooldownOnMonotonicClock(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mono, wall time.Duration // how far the readings move after the switch
		want       engine.Outcome
	}{
		{"wall forward a day", 2 * time.Minute, 2*time.Minute + 24*time.Hour, engine.CooldownActive},
		{"wall back a day", 601 * time.Second, 601*time.Second - 24*time.Hour, engine.FenceRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := time.Now() // carries a monotonic reading
			clk := enginetest.NewFakeClock(base)
			pt := newProbeTable(clk)
			cfg := engine.DefaultConfig()
			cfg.Probe, cfg.Clock = pt.probe, clk
			cfg.FailureThreshold = 2
			cfg.Cooldown = 600 * time.Second
			cfg.FailbackSuccessThreshold = 3
			cfg.MaxHealthAge = time.Minute
			m, err := engine.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, ep := range []engine.Endpoint{epEU, epUS} {
				if err := m.Register(ep); err != nil {
					t.Fatal(err)
				}
			}
			mustProbe(t, m, "us")
			pt.fail("eu", errRefused)
			driveDown(t, m, "eu")
			wantOutcome(t, failover(t, m, true), engine.Switched) // the switch, at base

			clk.Set(steppedReading(t, base, tc.mono, tc.wall))
			pt.heal("eu")
			for range cfg.FailbackSuccessThreshold { // the primary recovers
				clk.Advance(time.Second)
				mustProbe(t, m, "eu")
			}
			d := failback(t, m, false)
			wantOutcome(t, d, tc.want)
			if tc.want == engine.CooldownActive {
				wantNote(t, d, "cooldown")
				wantActive(t, m, "us")
				return
			}
			wantOutcome(t, failback(t, m, true), engine.Switched)
			wantActive(t, m, "eu")
		})
	}
}

// "With failback_success_threshold=3, alternate the primary
// success/success/failure repeatedly: no cycle may produce SWITCHED."
func TestVerification_AlternatingPrimaryNeverFailsBack(t *testing.T) {
	m, clk, pt := fixture(t, func(c *engine.Config) {
		c.FailbackSuccessThreshold = 3
		c.FailureThreshold = 3
		c.Cooldown = 10 * time.Second
		c.BrokerFencesAtLogon = true // nothing but stability may refuse
	}, epEU, epUS)
	mustProbe(t, m, "us")
	pt.fail("eu", errRefused)
	driveDown(t, m, "eu")
	wantOutcome(t, failover(t, m, false), engine.Switched)
	clk.Advance(time.Minute) // the cooldown is long over

	for cycle := range 20 {
		for i, ok := range []bool{true, true, false} {
			clk.Advance(time.Second)
			if ok {
				pt.heal("eu")
			} else {
				pt.fail("eu", errRefused)
			}
			mustProbe(t, m, "eu")
			mustProbe(t, m, "us")
			d := failback(t, m, true)
			if d.Outcome == engine.Switched {
				t.Fatalf("cycle %d probe %d: failed back to an alternating primary", cycle, i)
			}
			wantOutcome(t, d, engine.PrimaryNotStable)
		}
	}
	wantActive(t, m, "us")

	// Control: three in a row is enough, so the loop above was not vacuous.
	pt.heal("eu")
	for range 3 {
		clk.Advance(time.Second)
		mustProbe(t, m, "eu")
	}
	wantOutcome(t, failback(t, m, false), engine.Switched)
	wantActive(t, m, "eu")
}

// "Negative checks that must raise: a missing or non-callable health_check_fn,
// failure_threshold < 1, a negative cooldown, a blank endpoint field, a duplicate
// endpoint name, a second primary, validate_configuration() with no primary or a
// single endpoint, and any evaluation with no active endpoint registered." Plus the
// Go API's own: every other Config field, unknown endpoint names.
func TestVerification_NegativeChecks(t *testing.T) {
	noop := func(context.Context, engine.Endpoint) error { return nil }
	cfgWith := func(edit func(*engine.Config)) engine.Config {
		c := engine.DefaultConfig()
		c.Probe = noop
		edit(&c)
		return c
	}
	newWith := func(eps ...engine.Endpoint) func() (*engine.Manager, error) {
		return func() (*engine.Manager, error) {
			m, err := engine.New(cfgWith(func(*engine.Config) {}))
			if err != nil {
				return nil, err
			}
			for _, ep := range eps {
				if err := m.Register(ep); err != nil {
					return nil, err
				}
			}
			return m, nil
		}
	}
	register := func(first []engine.Endpoint, ep engine.Endpoint) func() error {
		return func() error {
			m, err := newWith(first...)()
			if err != nil {
				return err
			}
			return m.Register(ep)
		}
	}
	on := func(eps []engine.Endpoint, call func(*engine.Manager) error) func() error {
		return func() error {
			m, err := newWith(eps...)()
			if err != nil {
				return err
			}
			return call(m)
		}
	}
	config := func(edit func(*engine.Config)) func() error {
		return func() error { _, err := engine.New(cfgWith(edit)); return err }
	}
	with := func(ep engine.Endpoint, edit func(*engine.Endpoint)) engine.Endpoint { edit(&ep); return ep }
	blanks := []string{"", " ", "\t", " \n\t ", "\u00a0"}

	type tc struct {
		name string
		call func() error
		want []error
	}
	cases := []tc{
		{"nil Probe", config(func(c *engine.Config) { c.Probe = nil }), []error{engine.ErrMissingProbe, engine.ErrInvalidConfig}},
		{"zero Config", func() error { _, err := engine.New(engine.Config{}); return err }, []error{engine.ErrMissingProbe}},
		{"FailureThreshold 0", config(func(c *engine.Config) { c.FailureThreshold = 0 }), []error{engine.ErrInvalidConfig}},
		{"FailureThreshold -1", config(func(c *engine.Config) { c.FailureThreshold = -1 }), []error{engine.ErrInvalidConfig}},
		{"negative Cooldown", config(func(c *engine.Config) { c.Cooldown = -time.Nanosecond }), []error{engine.ErrInvalidConfig}},
		{"FailbackSuccessThreshold 0", config(func(c *engine.Config) { c.FailbackSuccessThreshold = 0 }), []error{engine.ErrInvalidConfig}},
		{"FailbackSuccessThreshold -1", config(func(c *engine.Config) { c.FailbackSuccessThreshold = -1 }), []error{engine.ErrInvalidConfig}},
		{"MaxHealthAge 0", config(func(c *engine.Config) { c.MaxHealthAge = 0 }), []error{engine.ErrInvalidConfig}},
		{"MaxHealthAge negative", config(func(c *engine.Config) { c.MaxHealthAge = -time.Second }), []error{engine.ErrInvalidConfig}},
		{"FlapLimit 0", config(func(c *engine.Config) { c.FlapLimit = 0 }), []error{engine.ErrInvalidConfig}},
		{"FlapWindow 0", config(func(c *engine.Config) { c.FlapWindow = 0 }), []error{engine.ErrInvalidConfig}},
		{"FlapWindow negative", config(func(c *engine.Config) { c.FlapWindow = -time.Minute }), []error{engine.ErrInvalidConfig}},
		{"negative DegradedLatency", config(func(c *engine.Config) { c.DegradedLatency = -time.Millisecond }), []error{engine.ErrInvalidConfig}},
		{"negative MaxDegradedDuration", config(func(c *engine.Config) { c.MaxDegradedDuration = -time.Second }), []error{engine.ErrInvalidConfig}},
		{"duplicate name", register([]engine.Endpoint{epEU}, with(epUS, func(e *engine.Endpoint) { e.Name = "eu" })), []error{engine.ErrDuplicateEndpoint}},
		{"second primary", register([]engine.Endpoint{epEU}, with(epUS, func(e *engine.Endpoint) { e.Primary = true })), []error{engine.ErrSecondPrimary}},
		{"Validate with nothing registered", on(nil, (*engine.Manager).Validate), []error{engine.ErrNoPrimary}},
		{"Validate with no primary", on([]engine.Endpoint{epUS, epAP}, (*engine.Manager).Validate), []error{engine.ErrNoPrimary}},
		{"Validate with a single endpoint", on([]engine.Endpoint{epEU}, (*engine.Manager).Validate), []error{engine.ErrNothingToFailOver}},
		{"EvaluateFailover with nothing registered", on(nil, func(m *engine.Manager) error { _, err := m.EvaluateFailover(true); return err }), []error{engine.ErrNoActiveEndpoint}},
		{"EvaluateFailover with no primary", on([]engine.Endpoint{epUS}, func(m *engine.Manager) error { _, err := m.EvaluateFailover(false); return err }), []error{engine.ErrNoActiveEndpoint}},
		{"EvaluateFailback with nothing registered", on(nil, func(m *engine.Manager) error { _, err := m.EvaluateFailback(true); return err }), []error{engine.ErrNoActiveEndpoint}},
		{"EvaluateFailback with no primary", on([]engine.Endpoint{epUS}, func(m *engine.Manager) error { _, err := m.EvaluateFailback(false); return err }), []error{engine.ErrNoActiveEndpoint}},
		{"Probe unknown name", on([]engine.Endpoint{epEU, epUS}, func(m *engine.Manager) error { _, err := m.Probe(context.Background(), "mars"); return err }), []error{engine.ErrUnknownEndpoint}},
		{"Observe unknown name", on([]engine.Endpoint{epEU, epUS}, func(m *engine.Manager) error { _, err := m.Observe("mars", nil, 0); return err }), []error{engine.ErrUnknownEndpoint}},
	}
	for _, b := range blanks {
		cases = append(cases,
			tc{"blank Name " + strconv.Quote(b), register(nil, with(epEU, func(e *engine.Endpoint) { e.Name = b })), []error{engine.ErrBlankField}},
			tc{"blank Address " + strconv.Quote(b), register(nil, with(epEU, func(e *engine.Endpoint) { e.Address = b })), []error{engine.ErrBlankField}},
			tc{"blank Region " + strconv.Quote(b), register(nil, with(epEU, func(e *engine.Endpoint) { e.Region = b })), []error{engine.ErrBlankField}},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range c.want {
				if !errors.Is(err, want) {
					t.Fatalf("error %q does not wrap %q", err, want)
				}
			}
		})
	}

	t.Run("Status unknown name", func(t *testing.T) {
		m, _ := newWith(epEU, epUS)()
		if st, ok := m.Status("mars"); ok || st != (engine.Status{}) {
			t.Fatalf("Status(mars) = %+v, %v", st, ok)
		}
	})
	t.Run("refused registrations change nothing", func(t *testing.T) {
		m, _ := newWith(epEU, epUS)()
		_ = m.Register(with(epAP, func(e *engine.Endpoint) { e.Name = "us" }))
		_ = m.Register(with(epAP, func(e *engine.Endpoint) { e.Primary = true }))
		_ = m.Register(with(epAP, func(e *engine.Endpoint) { e.Region = " " }))
		if sts := m.Statuses(); len(sts) != 2 || sts[1].Endpoint != epUS {
			t.Fatalf("Statuses after refused registrations: %+v", sts)
		}
		if _, ok := m.Status("ap"); ok {
			t.Fatal("a refused endpoint was registered")
		}
		wantActive(t, m, "eu")
	})
}
