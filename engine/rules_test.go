package engine_test

// The rules of the engine beyond the specification's Verification list.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/engine/enginetest"
)

func TestStrings(t *testing.T) {
	for s, want := range map[engine.HealthState]string{
		engine.Unknown: "UNKNOWN", engine.Healthy: "HEALTHY", engine.Degraded: "DEGRADED", engine.Down: "DOWN", 9: "HealthState(9)",
	} {
		if got := s.String(); got != want {
			t.Errorf("HealthState(%d).String() = %q, want %q", int(s), got, want)
		}
		if b, _ := s.MarshalText(); string(b) != want {
			t.Errorf("HealthState(%d).MarshalText() = %q", int(s), b)
		}
	}
	for o, want := range map[engine.Outcome]string{
		engine.NoAction: "NO_ACTION", engine.Switched: "SWITCHED", engine.FenceRequired: "FENCE_REQUIRED",
		engine.NoTargetAvailable: "NO_TARGET_AVAILABLE", engine.CooldownActive: "COOLDOWN_ACTIVE",
		engine.FlapSuppressed: "FLAP_SUPPRESSED", engine.PrimaryNotStable: "PRIMARY_NOT_STABLE",
		-1: "Outcome(-1)", 42: "Outcome(42)",
	} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", int(o), got, want)
		}
		if b, _ := o.MarshalText(); string(b) != want {
			t.Errorf("Outcome(%d).MarshalText() = %q", int(o), b)
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	cfg := engine.DefaultConfig()
	if err := cfg.Validate(); !errors.Is(err, engine.ErrMissingProbe) {
		t.Fatalf("DefaultConfig without a Probe validated: %v", err)
	}
	cfg.Probe = func(context.Context, engine.Endpoint) error { return nil }
	if err := cfg.Validate(); err != nil {
		t.Fatalf("DefaultConfig with a Probe: %v", err)
	}
	if cfg.BrokerFencesAtLogon || cfg.DegradedLatency != 0 || cfg.MaxDegradedDuration != 0 || cfg.Clock != nil {
		t.Fatalf("DefaultConfig must require a fence and leave latency awareness off: %+v", cfg)
	}
	m, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Config(); got.FailureThreshold != cfg.FailureThreshold || got.MaxHealthAge != cfg.MaxHealthAge {
		t.Fatalf("Config() = %+v", got)
	}
}

// With a nil Config.Clock the engine reads time.Now, whose readings carry the
// monotonic clock: the readings it records show it.
func TestNilClockReadingsAreMonotonic(t *testing.T) {
	cfg := engine.DefaultConfig()
	cfg.Probe = func(context.Context, engine.Endpoint) error { return nil }
	m, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Register(epEU); err != nil {
		t.Fatal(err)
	}
	st := mustProbe(t, m, "eu")
	if r := st.LastResult; r.IsZero() || r.Round(0) == r {
		t.Fatalf("LastResult %v carries no monotonic reading", r)
	}
	d := failover(t, m, false)
	if d.At.Round(0) == d.At {
		t.Fatalf("Decision.At %v carries no monotonic reading", d.At)
	}
}

func TestNewEndpointsStartUnknown(t *testing.T) {
	m, _, _ := fixture(t, nil, epEU, epUS, epAP)
	for _, st := range m.Statuses() {
		if st.State != engine.Unknown || st.ConsecutiveFailures != 0 || st.ConsecutiveSuccesses != 0 ||
			st.LastProbeError != nil || !st.LastSuccess.IsZero() || !st.LastResult.IsZero() {
			t.Fatalf("fresh endpoint %+v", st)
		}
	}
	if p, ok := m.Primary(); !ok || p.Name != "eu" {
		t.Fatalf("Primary() = %v, %v", p, ok)
	}
	wantActive(t, m, "eu")
	if tg := m.Targets(); len(tg) != 0 {
		t.Fatalf("Targets() with nothing probed: %v", tg)
	}
}

func TestPrimaryRegisteredLastBecomesActive(t *testing.T) {
	m, _, _ := fixture(t, nil)
	for _, ep := range []engine.Endpoint{epUS, epAP} {
		if err := m.Register(ep); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := m.Active(); ok {
		t.Fatal("an active endpoint before any primary")
	}
	if err := m.Register(epEU); err != nil {
		t.Fatal(err)
	}
	wantActive(t, m, "eu")
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownIsNeverATarget(t *testing.T) {
	m, _, pt := fixture(t, nil, epEU, epUS, epAP)
	pt.fail("eu", errRefused)
	driveDown(t, m, "eu")
	for range 3 {
		d := failover(t, m, true)
		wantOutcome(t, d, engine.NoTargetAvailable)
		wantNote(t, d, `"us"`, "UNKNOWN")
		wantNote(t, d, `"ap"`, "UNKNOWN")
		wantNote(t, d, `"eu"`, "DOWN")
		wantActive(t, m, "eu")
	}
	// Observe is evidence as well: a failed observation does not make it a target.
	if _, err := m.Observe("us", errRefused, 0); err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, failover(t, m, true), engine.NoTargetAvailable)
}

func TestStaleHealthyIsNotATarget(t *testing.T) {
	m, clk, pt := fixture(t, func(c *engine.Config) { c.MaxHealthAge = 5 * time.Second }, epEU, epUS)
	mustProbe(t, m, "us")
	clk.Advance(5 * time.Second) // exactly MaxHealthAge: no longer younger than it
	pt.fail("eu", errRefused)
	driveDown(t, m, "eu")
	wantState(t, m, "us", engine.Healthy)

	d := failover(t, m, true)
	wantOutcome(t, d, engine.NoTargetAvailable)
	wantNote(t, d, `"us" not eligible`, "HEALTHY but last success 5s ago")
	wantActive(t, m, "eu")

	mustProbe(t, m, "us")
	clk.Advance(5*time.Second - time.Nanosecond) // still fresh
	d = failover(t, m, true)
	wantOutcome(t, d, engine.Switched)
	if d.To != "us" {
		t.Fatalf("switched to %q", d.To)
	}
}

func TestTargetIsLowestPriorityThenRegistrationOrder(t *testing.T) {
	ep := func(name string, prio int) engine.Endpoint {
		return engine.Endpoint{Name: name, Address: name + ".example:443", Region: "r-" + name, Priority: prio}
	}
	for _, tc := range []struct {
		name    string
		backups []engine.Endpoint
		healthy []string // probed healthy, the rest never probed
		want    string
	}{
		{"lowest priority registered last", []engine.Endpoint{ep("c", 30), ep("b", 20), ep("a", 10)}, []string{"a", "b", "c"}, "a"},
		{"tie goes to the first registered", []engine.Endpoint{ep("x", 5), ep("y", 5), ep("z", 5)}, []string{"z", "y", "x"}, "x"},
		{"tie among the eligible", []engine.Endpoint{ep("x", 5), ep("y", 5), ep("z", 5)}, []string{"z", "y"}, "y"},
		{"negative priority", []engine.Endpoint{ep("a", 0), ep("b", -1)}, []string{"a", "b"}, "b"},
		{"a better one not probed", []engine.Endpoint{ep("a", 1), ep("b", 2), ep("c", 3)}, []string{"c", "b"}, "b"},
		{"primary's priority does not matter", []engine.Endpoint{ep("a", 100), ep("b", 100)}, []string{"b", "a"}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, pt := fixture(t, nil, append([]engine.Endpoint{epEU}, tc.backups...)...)
			for _, n := range tc.healthy {
				mustProbe(t, m, n)
			}
			pt.fail("eu", errRefused)
			driveDown(t, m, "eu")
			d := failover(t, m, true)
			wantOutcome(t, d, engine.Switched)
			if d.To != tc.want {
				t.Fatalf("switched to %q, want %q", d.To, tc.want)
			}
		})
	}
}

func TestDegradedBelowThresholdIsNoAction(t *testing.T) {
	m, _, pt := fixture(t, func(c *engine.Config) { c.FailureThreshold = 3 }, epEU, epUS)
	mustProbe(t, m, "us")
	mustProbe(t, m, "eu")
	pt.fail("eu", errRefused)
	for i := 1; i <= 2; i++ {
		st := mustProbe(t, m, "eu")
		if st.State != engine.Degraded || st.ConsecutiveFailures != i {
			t.Fatalf("after %d failures: %+v", i, st)
		}
		d := failover(t, m, false)
		wantOutcome(t, d, engine.NoAction)
		wantNote(t, d, "DEGRADED", fmt.Sprintf("%d of 3 failures", i))
		if d.To != "" || d.RequiresTradingHalt {
			t.Fatalf("decision %+v", d)
		}
		wantActive(t, m, "eu")
	}
	// One success clears the failures.
	pt.heal("eu")
	if st := mustProbe(t, m, "eu"); st.State != engine.Healthy || st.ConsecutiveFailures != 0 || st.LastProbeError != nil {
		t.Fatalf("after a success: %+v", st)
	}
	if d := failover(t, m, false); d.Outcome != engine.NoAction || d.Notes != nil {
		t.Fatalf("steady healthy: %+v", d)
	}
}

type probePanicError struct{ msg string }

func (e *probePanicError) Error() string { return e.msg }

func TestProbePanicIsACountedFailure(t *testing.T) {
	cause := &probePanicError{"tls: handshake state corrupted"}
	for _, tc := range []struct {
		name  string
		value any
		is    error  // also found by errors.Is, besides ErrProbePanic
		text  string // in the message
	}{
		{"string", "index out of range in probe", nil, "index out of range in probe"},
		{"error", cause, cause, "tls: handshake state corrupted"},
		{"wrapped sentinel", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), io.ErrUnexpectedEOF, "unexpected EOF"},
		{"nil", nil, nil, "panic called with nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, pt := fixture(t, nil, epEU, epUS)
			pt.panicWith("eu", tc.value)
			for i, want := range []engine.HealthState{engine.Degraded, engine.Down} {
				st, err := m.Probe(context.Background(), "eu")
				if err != nil {
					t.Fatalf("a panicking probe is a counted failure, not an error from Probe: %v", err)
				}
				if st.State != want || st.ConsecutiveFailures != i+1 {
					t.Fatalf("probe %d: %+v", i+1, st)
				}
				if !errors.Is(st.LastProbeError, engine.ErrProbePanic) {
					t.Fatalf("LastProbeError %v does not wrap ErrProbePanic", st.LastProbeError)
				}
				if tc.is != nil && !errors.Is(st.LastProbeError, tc.is) {
					t.Fatalf("LastProbeError %v does not wrap the panic value", st.LastProbeError)
				}
				if tc.name == "nil" {
					var pn *runtime.PanicNilError
					if !errors.As(st.LastProbeError, &pn) {
						t.Fatalf("LastProbeError %v does not hold the *runtime.PanicNilError", st.LastProbeError)
					}
				}
				msg := st.LastProbeError.Error()
				if !strings.Contains(msg, tc.text) || !strings.Contains(msg, `"eu"`) {
					t.Fatalf("LastProbeError %q does not name the panic and the endpoint", msg)
				}
			}
		})
	}
}

func TestProbeContext(t *testing.T) {
	reset := syscall.ECONNRESET
	// blockUntilDone is a probe that waits for its context and then returns ret.
	blockUntilDone := func(started chan<- struct{}, ret func(ctx context.Context) error) engine.ProbeFunc {
		return func(ctx context.Context, ep engine.Endpoint) error {
			close(started)
			<-ctx.Done()
			return ret(ctx)
		}
	}
	newM := func(t *testing.T, p engine.ProbeFunc) *engine.Manager {
		t.Helper()
		cfg := engine.DefaultConfig()
		cfg.Probe = p
		cfg.Clock = enginetest.NewFakeClock(t0)
		m, err := engine.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Register(epEU); err != nil {
			t.Fatal(err)
		}
		return m
	}
	uncounted := func(t *testing.T, m *engine.Manager) {
		t.Helper()
		if st := mustStatus(t, m, "eu"); st.State != engine.Unknown || st.ConsecutiveFailures != 0 || st.ConsecutiveSuccesses != 0 || !st.LastResult.IsZero() {
			t.Fatalf("cancellation was counted: %+v", st)
		}
	}

	t.Run("cancelled before: probe not run, nothing counted", func(t *testing.T) {
		called := false
		m := newM(t, func(context.Context, engine.Endpoint) error { called = true; return nil })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := m.Probe(ctx, "eu")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Probe = %v, want context.Canceled", err)
		}
		if called {
			t.Fatal("the probe ran under a cancelled context")
		}
		uncounted(t, m)
	})
	for _, tc := range []struct {
		name string
		ret  func(ctx context.Context) error
	}{
		{"returns ctx.Err()", func(ctx context.Context) error { return ctx.Err() }},
		{"returns its own error", func(context.Context) error { return reset }},
		{"returns success anyway", func(context.Context) error { return nil }},
		{"panics", func(context.Context) error { panic("torn down") }},
	} {
		t.Run("cancelled while probing, probe "+tc.name, func(t *testing.T) {
			started := make(chan struct{})
			m := newM(t, blockUntilDone(started, tc.ret))
			ctx, cancel := context.WithCancelCause(context.Background())
			errc := make(chan error, 1)
			go func() { _, err := m.Probe(ctx, "eu"); errc <- err }()
			<-started
			cancel(errors.New("shutting down"))
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("Probe = %v, want context.Canceled", err)
			}
			uncounted(t, m)
		})
		t.Run("deadline passes while probing, probe "+tc.name, func(t *testing.T) {
			started := make(chan struct{})
			m := newM(t, blockUntilDone(started, tc.ret))
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			st, err := m.Probe(ctx, "eu")
			if err != nil {
				t.Fatalf("a probe that outlived its deadline is a counted failure, Probe returned %v", err)
			}
			if st.State != engine.Degraded || st.ConsecutiveFailures != 1 {
				t.Fatalf("status %+v", st)
			}
			if !errors.Is(st.LastProbeError, context.DeadlineExceeded) {
				t.Fatalf("LastProbeError %v does not wrap context.DeadlineExceeded", st.LastProbeError)
			}
			if tc.name == "returns its own error" && !errors.Is(st.LastProbeError, reset) {
				t.Fatalf("LastProbeError %v lost the probe's own error", st.LastProbeError)
			}
			if tc.name == "panics" && !errors.Is(st.LastProbeError, engine.ErrProbePanic) {
				t.Fatalf("LastProbeError %v lost the panic", st.LastProbeError)
			}
		})
	}
	t.Run("deadline already passed: counted", func(t *testing.T) {
		m := newM(t, func(ctx context.Context, _ engine.Endpoint) error { return ctx.Err() })
		ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
		defer cancel()
		st, err := m.Probe(ctx, "eu")
		if err != nil || st.ConsecutiveFailures != 1 || !errors.Is(st.LastProbeError, context.DeadlineExceeded) {
			t.Fatalf("Probe = %+v, %v", st, err)
		}
	})
	t.Run("probe's own timeout is an ordinary failure", func(t *testing.T) {
		// The probe's internal deadline or cancellation, with the caller's context
		// alive, is evidence about the endpoint.
		for _, perr := range []error{context.DeadlineExceeded, context.Canceled} {
			m := newM(t, func(context.Context, engine.Endpoint) error { return fmt.Errorf("GET /health: %w", perr) })
			st, err := m.Probe(context.Background(), "eu")
			if err != nil || st.ConsecutiveFailures != 1 || !errors.Is(st.LastProbeError, perr) {
				t.Fatalf("Probe = %+v, %v", st, err)
			}
		}
	})
}

// Observe feeds the same counters as Probe: the same results in the same order
// give the same status.
func TestObserveFeedsTheSameCounters(t *testing.T) {
	type result struct {
		err     error
		latency time.Duration
	}
	seq := []result{
		{nil, 10 * time.Millisecond}, {nil, 20 * time.Millisecond}, {errRefused, time.Second},
		{syscall.ECONNRESET, 0}, {errRefused, 0}, {nil, 900 * time.Millisecond}, {nil, time.Millisecond},
		{nil, time.Millisecond}, {errRefused, 0},
	}
	cfg := func(c *engine.Config) {
		c.FailureThreshold = 3
		c.DegradedLatency = 500 * time.Millisecond
	}
	mp, clkP, pt := fixture(t, cfg, epEU, epUS)
	mo, clkO, _ := fixture(t, cfg, epEU, epUS)
	for i, r := range seq {
		if r.err != nil {
			pt.fail("us", r.err)
		} else {
			pt.heal("us")
		}
		pt.setLatency("us", r.latency) // the probe spends it on the fake clock
		sp := mustProbe(t, mp, "us")
		clkO.Advance(r.latency) // the observer measured it elsewhere
		so, err := mo.Observe("us", r.err, r.latency)
		if err != nil {
			t.Fatal(err)
		}
		if sp.State != so.State || sp.ConsecutiveFailures != so.ConsecutiveFailures ||
			sp.ConsecutiveSuccesses != so.ConsecutiveSuccesses || sp.LastLatency != so.LastLatency ||
			!errors.Is(so.LastProbeError, r.err) || !errors.Is(sp.LastProbeError, r.err) ||
			!sp.LastResult.Equal(so.LastResult) || !sp.LastSuccess.Equal(so.LastSuccess) || !sp.DegradedSince.Equal(so.DegradedSince) {
			t.Fatalf("step %d: Probe gave %+v, Observe gave %+v", i, sp, so)
		}
		if !clkP.Now().Equal(clkO.Now()) {
			t.Fatal("clocks diverged")
		}
	}
	if st := mustStatus(t, mo, "us"); st.State != engine.Degraded || st.ConsecutiveFailures != 1 {
		t.Fatalf("final %+v", st)
	}
	// Down at the threshold through Observe alone.
	for range 2 {
		if _, err := mo.Observe("us", errRefused, 0); err != nil {
			t.Fatal(err)
		}
	}
	wantState(t, mo, "us", engine.Down)
}

func TestStaleActiveHealthIsNotedNotActedOn(t *testing.T) {
	m, clk, _ := fixture(t, func(c *engine.Config) { c.MaxHealthAge = 5 * time.Second }, epEU, epUS)
	mustProbe(t, m, "eu")
	mustProbe(t, m, "us")
	if d := failover(t, m, false); d.Outcome != engine.NoAction || d.Notes != nil {
		t.Fatalf("fresh and healthy: %+v", d)
	}
	// The monitor stops probing eu; us stays fresh. Time passes.
	for range 10 {
		clk.Advance(3 * time.Second)
		mustProbe(t, m, "us")
	}
	d := failover(t, m, false)
	wantOutcome(t, d, engine.NoAction)
	wantNote(t, d, "stale", `"eu"`, "30s ago", "not acting")
	wantActive(t, m, "eu")
	d = failover(t, m, true)
	wantOutcome(t, d, engine.NoAction)
	if len(m.History()) != 0 {
		t.Fatal("switched on staleness")
	}

	// An active endpoint nobody has probed yet: a note, no action.
	m2, _, _ := fixture(t, nil, epEU, epUS)
	mustProbe(t, m2, "us")
	d = failover(t, m2, true)
	wantOutcome(t, d, engine.NoAction)
	wantNote(t, d, `"eu"`, "no health evidence", "UNKNOWN")
	wantActive(t, m2, "eu")
}

func TestLatencyDegradation(t *testing.T) {
	const (
		slow   = 300 * time.Millisecond
		limit  = 200 * time.Millisecond
		maxDeg = 30 * time.Second
	)
	setup := func(t *testing.T) (*engine.Manager, *enginetest.FakeClock, *probeTable) {
		m, clk, pt := fixture(t, func(c *engine.Config) {
			c.DegradedLatency = limit
			c.MaxDegradedDuration = maxDeg
			c.MaxHealthAge = 10 * time.Second
		}, epEU, epUS)
		mustProbe(t, m, "eu")
		mustProbe(t, m, "us")
		return m, clk, pt
	}
	// tick: 5 s pass, both endpoints are probed (eu is slow), then a failover
	// evaluation.
	tick := func(t *testing.T, m *engine.Manager, clk *enginetest.FakeClock) engine.Decision {
		clk.Advance(5*time.Second - slow)
		mustProbe(t, m, "eu")
		mustProbe(t, m, "us")
		return failover(t, m, false)
	}

	t.Run("slow success is DEGRADED evidence, then failover after MaxDegradedDuration", func(t *testing.T) {
		m, clk, pt := setup(t)
		pt.setLatency("eu", slow)
		st := mustProbe(t, m, "eu")
		if st.State != engine.Degraded || st.LastLatency != slow || st.LastProbeError != nil ||
			st.ConsecutiveFailures != 0 || st.ConsecutiveSuccesses != 0 || !st.LastSuccess.Equal(clk.Now()) {
			t.Fatalf("slow success: %+v", st)
		}
		since := st.DegradedSince
		if !since.Equal(clk.Now()) {
			t.Fatalf("DegradedSince %v, want %v", since, clk.Now())
		}
		d := failover(t, m, false)
		wantOutcome(t, d, engine.NoAction)
		wantNote(t, d, "DEGRADED", "last latency 300ms")
		wantNote(t, d, "DEGRADED for 0s of the 30s")

		for clk.Now().Sub(since) < maxDeg-5*time.Second { // below the limit: keep trading
			d = tick(t, m, clk)
			wantOutcome(t, d, engine.NoAction)
			wantActive(t, m, "eu")
			if got := mustStatus(t, m, "eu").DegradedSince; !got.Equal(since) {
				t.Fatalf("DegradedSince moved to %v while still degraded", got)
			}
		}
		d = tick(t, m, clk) // now at the limit
		wantOutcome(t, d, engine.FenceRequired)
		wantNote(t, d, `"eu" DEGRADED for 30s (limit 30s)`)
		if d.To != "us" {
			t.Fatalf("target %q", d.To)
		}
		d = failover(t, m, true)
		wantOutcome(t, d, engine.Switched)
		wantNote(t, d, "DEGRADED for 30s")
		wantActive(t, m, "us")
	})

	t.Run("a fast success ends the degraded period", func(t *testing.T) {
		m, clk, pt := setup(t)
		pt.setLatency("eu", slow)
		for range 4 {
			tick(t, m, clk)
		}
		pt.setLatency("eu", 0)
		st := mustProbe(t, m, "eu")
		if st.State != engine.Healthy || !st.DegradedSince.IsZero() || st.ConsecutiveSuccesses != 1 {
			t.Fatalf("fast success: %+v", st)
		}
		pt.setLatency("eu", slow)
		for range 4 { // 20 s degraded again, counted from scratch
			wantOutcome(t, tick(t, m, clk), engine.NoAction)
		}
	})

	t.Run("exactly DegradedLatency is not slow", func(t *testing.T) {
		m, _, pt := setup(t)
		pt.setLatency("eu", limit)
		wantState(t, m, "eu", engine.Healthy)
		if st := mustProbe(t, m, "eu"); st.State != engine.Healthy {
			t.Fatalf("%+v", st)
		}
	})

	t.Run("no eligible target: the slow path is kept, no halt", func(t *testing.T) {
		m, clk, pt := setup(t)
		pt.setLatency("eu", slow)
		pt.fail("us", errRefused)
		var d engine.Decision
		for range 7 {
			d = tick(t, m, clk)
		}
		wantOutcome(t, d, engine.NoAction)
		if d.RequiresTradingHalt {
			t.Fatal("halted on a path that still answers")
		}
		wantNote(t, d, "DEGRADED for 30s")
		wantNote(t, d, "no eligible target", "staying")
		wantNote(t, d, `"us" not eligible`, "DOWN")
		wantActive(t, m, "eu")
	})

	t.Run("frozen DEGRADED state is staleness, not evidence", func(t *testing.T) {
		m, clk, pt := setup(t)
		pt.setLatency("eu", slow)
		mustProbe(t, m, "eu")
		for range 12 { // the monitor stops probing eu for a minute; us stays fresh
			clk.Advance(5 * time.Second)
			mustProbe(t, m, "us")
		}
		d := failover(t, m, true)
		wantOutcome(t, d, engine.NoAction)
		wantNote(t, d, "stale", `"eu"`)
		wantActive(t, m, "eu")
		// Fresh evidence that it is still slow: now it is acted on.
		mustProbe(t, m, "eu")
		wantOutcome(t, failover(t, m, true), engine.Switched)
	})

	t.Run("MaxDegradedDuration 0: never on latency alone", func(t *testing.T) {
		m, clk, pt := fixture(t, func(c *engine.Config) { c.DegradedLatency = limit; c.MaxHealthAge = 10 * time.Second }, epEU, epUS)
		pt.setLatency("eu", slow)
		for range 100 {
			wantOutcome(t, tick(t, m, clk), engine.NoAction)
		}
	})

	t.Run("DegradedLatency 0: latency ignored", func(t *testing.T) {
		m, _, pt := fixture(t, nil, epEU, epUS)
		pt.setLatency("eu", time.Hour)
		if st := mustProbe(t, m, "eu"); st.State != engine.Healthy || st.LastLatency != time.Hour {
			t.Fatalf("%+v", st)
		}
	})
}

func TestBrokerFencesSkipsFenceRequired(t *testing.T) {
	m, clk, pt := fixture(t, func(c *engine.Config) {
		c.BrokerFencesAtLogon = true
		c.FailbackSuccessThreshold = 1
		c.Cooldown = 0
	}, epEU, epUS)
	mustProbe(t, m, "us")
	pt.fail("eu", errRefused)
	driveDown(t, m, "eu")
	d := failover(t, m, false)
	wantOutcome(t, d, engine.Switched)
	wantActive(t, m, "us")

	pt.heal("eu")
	clk.Advance(time.Second)
	mustProbe(t, m, "eu")
	d = failback(t, m, false)
	wantOutcome(t, d, engine.Switched)
	if !d.Failback || d.From != "us" || d.To != "eu" {
		t.Fatalf("failback decision %+v", d)
	}
	wantActive(t, m, "eu")
}

// The failback gates refuse in a fixed order: cooldown, flap limiter, primary
// stability, fence; then Switched.
func TestFailbackGatesInOrder(t *testing.T) {
	m, clk, pt := fixture(t, func(c *engine.Config) {
		c.Cooldown = time.Minute
		c.FailbackSuccessThreshold = 3
		c.FlapLimit = 3
		c.FlapWindow = 10 * time.Minute
		c.MaxHealthAge = 5 * time.Second
		c.BounceWindow = 0 // the bounce rules have their own tests
		c.FlapBounces = 0
	}, epEU, epUS)

	// Primary active: failback has nothing to do.
	d := failback(t, m, true)
	wantOutcome(t, d, engine.NoAction)
	if !d.Failback || d.Notes != nil {
		t.Fatalf("%+v", d)
	}

	// Switches 1 (failover), 2 (failback), 3 (failover) within the window.
	mustProbe(t, m, "us")
	pt.fail("eu", errRefused)
	driveDown(t, m, "eu")
	first := clk.Now()
	wantOutcome(t, failover(t, m, true), engine.Switched)
	clk.Advance(time.Minute)
	pt.heal("eu")
	for range 3 {
		mustProbe(t, m, "eu")
	}
	wantOutcome(t, failback(t, m, true), engine.Switched)
	mustProbe(t, m, "us")
	pt.fail("eu", errRefused)
	driveDown(t, m, "eu")
	wantOutcome(t, failover(t, m, true), engine.Switched)
	if m.Token() != 3 {
		t.Fatalf("generation %d", m.Token())
	}

	// 1. Cooldown first, although the limiter is tripped and the primary is DOWN.
	d = failback(t, m, true)
	wantOutcome(t, d, engine.CooldownActive)
	wantNote(t, d, "cooldown: 0s of 1m0s")
	if d.To != "eu" || d.From != "us" || !d.Failback {
		t.Fatalf("%+v", d)
	}
	clk.Advance(time.Minute - time.Nanosecond)
	wantOutcome(t, failback(t, m, true), engine.CooldownActive)

	// 2. Cooldown over: the flap limiter (3 switches in 10 minutes), although the
	// primary is DOWN.
	clk.Advance(time.Nanosecond)
	d = failback(t, m, true)
	wantOutcome(t, d, engine.FlapSuppressed)
	wantNote(t, d, "3 switches within 10m0s", "human")

	// 3. The first switch leaves the window: the primary must be stable.
	clk.Set(first.Add(10 * time.Minute))
	d = failback(t, m, true)
	wantOutcome(t, d, engine.PrimaryNotStable)
	wantNote(t, d, `"eu"`, "DOWN", "0 of 3")
	pt.heal("eu")
	for i := 1; i <= 2; i++ {
		mustProbe(t, m, "eu")
		d = failback(t, m, true)
		wantOutcome(t, d, engine.PrimaryNotStable)
		wantNote(t, d, fmt.Sprintf("%d of 3 consecutive successes", i))
	}
	mustProbe(t, m, "eu")
	// Stable but stale is not stable.
	clk.Advance(5 * time.Second)
	d = failback(t, m, true)
	wantOutcome(t, d, engine.PrimaryNotStable)
	wantNote(t, d, "HEALTHY but last success 5s ago")
	mustProbe(t, m, "eu")

	// 4. Fence.
	d = failback(t, m, false)
	wantOutcome(t, d, engine.FenceRequired)
	wantNote(t, d, `fence "us" before failing back to "eu"`)
	wantActive(t, m, "us")

	// 5. Switched.
	d = failback(t, m, true)
	wantOutcome(t, d, engine.Switched)
	wantActive(t, m, "eu")
	if d.Token != 4 || m.Token() != 4 || len(m.History()) != 4 {
		t.Fatalf("generation %d/%d, history %d", d.Token, m.Token(), len(m.History()))
	}
}

// Failover is never gated by the cooldown or the flap limiter.
func TestFailoverIsNeverGated(t *testing.T) {
	m, _, pt := fixture(t, func(c *engine.Config) {
		c.Cooldown = time.Hour
		c.MaxFailbackCooldown = 2 * time.Hour
		c.FlapLimit = 1
		c.FlapWindow = 24 * time.Hour
	}, epEU, epUS, epAP)
	mustProbe(t, m, "us")
	mustProbe(t, m, "ap")
	pt.fail("eu", errRefused)
	driveDown(t, m, "eu")
	wantOutcome(t, failover(t, m, true), engine.Switched)
	wantActive(t, m, "us")

	// Both gates are shut for failback...
	wantOutcome(t, failback(t, m, true), engine.CooldownActive)
	// ...and the new active dies at once: failover still happens.
	pt.fail("us", errRefused)
	driveDown(t, m, "us")
	d := failover(t, m, false)
	wantOutcome(t, d, engine.FenceRequired)
	d = failover(t, m, true)
	wantOutcome(t, d, engine.Switched)
	if d.From != "us" || d.To != "ap" {
		t.Fatalf("%+v", d)
	}
	// Failover may go to the primary when it is the best eligible endpoint, ungated.
	pt.heal("eu")
	mustProbe(t, m, "eu")
	pt.fail("ap", errRefused)
	driveDown(t, m, "ap")
	d = failover(t, m, true)
	wantOutcome(t, d, engine.Switched)
	if d.To != "eu" || d.Failback {
		t.Fatalf("%+v", d)
	}
	if m.Token() != 3 {
		t.Fatalf("generation %d", m.Token())
	}
}

func TestHistoryGrowsOnlyOnSwitched(t *testing.T) {
	m, clk, pt := fixture(t, func(c *engine.Config) {
		c.Cooldown = 0
		c.FailbackSuccessThreshold = 1
		c.FlapLimit = 100
		c.FlapBounces = 0
	}, epEU, epUS)
	var want []engine.Decision
	check := func(d engine.Decision) {
		t.Helper()
		if d.Outcome == engine.Switched {
			want = append(want, d)
		}
		h := m.History()
		if len(h) != len(want) || m.Token() != uint64(len(want)) || d.Token != m.Token() {
			t.Fatalf("after %v: history %d, token %d, decision token %d, want %d",
				d.Outcome, len(h), m.Token(), d.Token, len(want))
		}
		for i := range h {
			if h[i].Outcome != engine.Switched || h[i].Token != uint64(i+1) || h[i].To != want[i].To || !h[i].At.Equal(want[i].At) {
				t.Fatalf("history[%d] = %+v, want %+v", i, h[i], want[i])
			}
		}
	}
	check(failover(t, m, true)) // NoAction (eu unknown)
	check(failback(t, m, true)) // NoAction (primary active)
	pt.fail("eu", errRefused)
	driveDown(t, m, "eu")
	check(failover(t, m, true)) // NoTargetAvailable
	mustProbe(t, m, "us")
	check(failover(t, m, false)) // FenceRequired
	check(failover(t, m, true))  // Switched
	check(failback(t, m, true))  // PrimaryNotStable
	pt.heal("eu")
	for range 5 {
		clk.Advance(time.Second)
		mustProbe(t, m, "eu")
		mustProbe(t, m, "us")
		check(failback(t, m, false)) // FenceRequired
		check(failback(t, m, true))  // Switched
		pt.fail("eu", errRefused)
		driveDown(t, m, "eu")
		check(failover(t, m, true)) // Switched
		pt.heal("eu")
	}
	if len(want) != 11 {
		t.Fatalf("%d switches", len(want))
	}
}

func TestAccessorsReturnCopies(t *testing.T) {
	m, _, pt := fixture(t, nil, epEU, epUS)
	mustProbe(t, m, "us")
	pt.fail("eu", errRefused)
	driveDown(t, m, "eu")
	d := failover(t, m, true)
	wantOutcome(t, d, engine.Switched)

	sts := m.Statuses()
	sts[0].State, sts[0].Endpoint.Name, sts[1].Active = engine.Healthy, "mutated", false
	st := mustStatus(t, m, "eu")
	if st.State != engine.Down || st.Endpoint.Name != "eu" || !mustStatus(t, m, "us").Active {
		t.Fatalf("Statuses() aliases the manager's state: %+v", m.Statuses())
	}
	st.ConsecutiveFailures = 0
	if mustStatus(t, m, "eu").ConsecutiveFailures != 2 {
		t.Fatal("Status() aliases the manager's state")
	}
	a, _ := m.Active()
	a.Name = "mutated"
	wantActive(t, m, "us")

	h := m.History()
	h[0].To = "mutated"
	h[0].Notes[0] = "mutated"
	d.Notes[0] = "mutated too" // the caller owns the returned decision
	h2 := m.History()
	if h2[0].To != "us" || strings.Contains(h2[0].Notes[0], "mutated") {
		t.Fatalf("History() aliases the manager's state: %+v", h2[0])
	}
	tg := m.Targets()
	if len(tg) != 1 || tg[0].Name != "us" {
		t.Fatalf("Targets() = %v", tg)
	}
	tg[0].Name = "mutated"
	if m.Targets()[0].Name != "us" {
		t.Fatal("Targets() aliases the manager's state")
	}
}

// A probe that blocks must not block evaluations or readers: the probe runs outside
// the lock. Proven with channels: the probe is held until everything else returned.
func TestSlowProbeDoesNotBlockEvaluate(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	clk := enginetest.NewFakeClock(t0)
	cfg := engine.DefaultConfig()
	cfg.Clock = clk
	cfg.Probe = func(ctx context.Context, ep engine.Endpoint) error {
		if ep.Name == "eu" {
			close(started)
			<-release
			return errRefused
		}
		return nil
	}
	m, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range []engine.Endpoint{epEU, epUS} {
		if err := m.Register(ep); err != nil {
			t.Fatal(err)
		}
	}
	probeDone := make(chan error, 1)
	go func() { _, err := m.Probe(context.Background(), "eu"); probeDone <- err }()
	<-started

	others := make(chan error, 1)
	go func() {
		others <- func() error {
			if _, err := m.EvaluateFailover(true); err != nil {
				return err
			}
			if _, err := m.EvaluateFailback(true); err != nil {
				return err
			}
			_ = m.Statuses()
			_, _ = m.Status("eu")
			_, _ = m.Active()
			_ = m.History()
			_ = m.Targets()
			if _, err := m.Probe(context.Background(), "us"); err != nil { // another probe, concurrently
				return err
			}
			_, err := m.Observe("us", nil, time.Millisecond)
			return err
		}()
	}()
	select {
	case err := <-others:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-probeDone:
		t.Fatalf("the blocked probe returned first (%v)", err)
	}
	select {
	case <-probeDone:
		t.Fatal("the probe finished before it was released")
	default:
	}
	close(release)
	if err := <-probeDone; err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, m, "eu"); st.ConsecutiveFailures != 1 {
		t.Fatalf("the released probe was not recorded: %+v", st)
	}
}

// Many goroutines probing, observing, evaluating and reading at once; run with -race.
func TestConcurrentHammer(t *testing.T) {
	m, clk, pt := fixture(t, func(c *engine.Config) {
		c.Cooldown = 0
		c.FailbackSuccessThreshold = 2
		c.FlapLimit = 1000
		c.DegradedLatency = 50 * time.Millisecond
		c.MaxDegradedDuration = time.Second
	}, epEU, epUS, epAP)
	names := []string{"eu", "us", "ap"}
	const workers, rounds = 8, 300
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				name := names[(w+i)%len(names)]
				var err error
				switch (w*7 + i) % 9 {
				case 0:
					pt.fail(name, errRefused)
				case 1:
					pt.heal(name)
				case 2:
					pt.panicWith(name, "boom")
				case 3:
					clk.Advance(time.Duration(i%4) * 100 * time.Millisecond)
				case 4:
					_, err = m.Observe(name, nil, time.Duration(i%3)*40*time.Millisecond)
				case 5:
					var d engine.Decision
					d, err = m.EvaluateFailover(i%2 == 0)
					if err == nil && d.RequiresTradingHalt != (d.Outcome == engine.NoTargetAvailable) {
						err = fmt.Errorf("decision %+v", d)
					}
				case 6:
					_, err = m.EvaluateFailback(i%3 != 0)
				case 7:
					if len(m.Statuses()) != 3 || len(m.History()) < 0 {
						err = errors.New("statuses")
					}
				default:
					_, err = m.Probe(context.Background(), name)
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	h := m.History()
	if m.Token() != uint64(len(h)) {
		t.Fatalf("generation %d, history %d", m.Token(), len(h))
	}
	active, ok := m.Active()
	if !ok {
		t.Fatal("no active endpoint")
	}
	if len(h) > 0 && h[len(h)-1].To != active.Name {
		t.Fatalf("last switch to %q, active %q", h[len(h)-1].To, active.Name)
	}
	for i, d := range h {
		if d.Token != uint64(i+1) || (i > 0 && d.From != h[i-1].To) {
			t.Fatalf("history[%d] = %+v", i, d)
		}
	}
}
