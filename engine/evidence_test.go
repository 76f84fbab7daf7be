package engine_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/engine/enginetest"
)

var errOrder = errors.New("HTTP 503 on order")

func mustTraffic(t testing.TB, m *engine.Manager, name string, err error) engine.Status {
	t.Helper()
	st, oerr := m.ObserveTraffic(name, err, time.Millisecond)
	if oerr != nil {
		t.Fatal(oerr)
	}
	return st
}

// Probe and live-traffic evidence are counted apart: a probe success between two
// failed orders does not reset the order failures (DOWN at the second failed
// order, FailureThreshold 2), and order successes do not cancel probe failures
// (they are counted; the probe is reported broken).
func TestEvidenceKeptApart(t *testing.T) {
	m, clk, pt := fixture(t, nil, epEU, epUS)
	mustProbe(t, m, "eu")
	mustTraffic(t, m, "eu", errOrder)
	mustProbe(t, m, "eu") // the probe still passes
	st := mustTraffic(t, m, "eu", errOrder)
	if st.State != engine.Down || st.TrafficFailures != 2 || st.ProbeFailures != 0 {
		t.Fatalf("after two failed orders around a probe success: %v, traffic %d, probe %d", st.State, st.TrafficFailures, st.ProbeFailures)
	}

	mustProbe(t, m, "us")
	clk.Advance(time.Second)
	pt.fail("us", errRefused)
	mustTraffic(t, m, "us", nil)
	mustProbe(t, m, "us")
	mustTraffic(t, m, "us", nil)
	st = mustProbe(t, m, "us")
	if st.State == engine.Healthy || st.ProbeFailures != 2 {
		t.Fatalf("order successes cancelled probe failures: %v, probe %d", st.State, st.ProbeFailures)
	}
	if st.State != engine.Degraded {
		t.Fatalf("a probe failing while orders succeed: %v, want DEGRADED (the probe is suspect)", st.State)
	}
	if !st.BrokenProbe || st.ProbeNeverSucceeded {
		t.Fatalf("a probe failing while live traffic succeeds: broken %v, never %v", st.BrokenProbe, st.ProbeNeverSucceeded)
	}
}

// Live-traffic failures below the threshold go stale: on an endpoint that carries
// no traffic any more, a probe success after MaxHealthAge clears them.
func TestStaleTrafficFailuresDecay(t *testing.T) {
	m, clk, _ := fixture(t, nil, epEU, epUS)
	mustProbe(t, m, "us")
	mustTraffic(t, m, "us", errOrder)
	if st := mustProbe(t, m, "us"); st.State != engine.Degraded {
		t.Fatalf("a fresh traffic failure was cleared by a probe: %v", st.State)
	}
	clk.Advance(5 * time.Second)
	if st := mustProbe(t, m, "us"); st.State != engine.Healthy || st.TrafficFailures != 0 {
		t.Fatalf("stale traffic failure kept: %v, %d", st.State, st.TrafficFailures)
	}
}

// A probe that has never succeeded is a broken probe, not flapping health.
func TestProbeNeverSucceeded(t *testing.T) {
	m, _, pt := fixture(t, nil, epEU, epUS)
	pt.fail("us", errRefused)
	st := mustProbe(t, m, "us")
	if st.BrokenProbe {
		t.Fatal("broken after one failure (threshold 2)")
	}
	st = mustProbe(t, m, "us")
	if !st.BrokenProbe || !st.ProbeNeverSucceeded {
		t.Fatalf("never-succeeded probe: %+v", st)
	}
	pt.heal("us")
	if st := mustProbe(t, m, "us"); st.BrokenProbe || st.ProbeNeverSucceeded {
		t.Fatalf("after a success: %+v", st)
	}
}

// A gray failure (DOWN on orders while the probe passed) needs trade-path
// evidence to come back; without it, a wait that grows with each gray failure.
func TestGrayFailureNeedsTradePathEvidence(t *testing.T) {
	m, clk, _ := fixture(t, func(c *engine.Config) {
		c.Cooldown = 0
		c.FailbackSuccessThreshold = 1
		c.GrayFailbackWait = time.Minute
		c.MaxGrayFailbackWait = 90 * time.Second
		c.BounceWindow = 0
		c.FlapBounces = 0
		c.FlapLimit = 100
	}, epEU, epUS)
	mustProbe(t, m, "eu")
	mustProbe(t, m, "us")
	mustTraffic(t, m, "eu", errOrder)
	mustTraffic(t, m, "eu", errOrder)
	st := mustProbe(t, m, "eu") // it passes after the orders failed
	if !st.GrayFailure || st.State != engine.Down || st.GrayFailures != 1 || !st.GrayWaitUntil.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("gray failure: %+v", st)
	}
	d := failover(t, m, true)
	wantOutcome(t, d, engine.Switched)
	wantNote(t, d, "gray failure #1", "trade-path evidence")

	// Probe successes alone do not bring it back.
	for range 5 {
		clk.Advance(10 * time.Second)
		mustProbe(t, m, "eu")
		mustProbe(t, m, "us")
	}
	d = failback(t, m, true)
	wantOutcome(t, d, engine.PrimaryNotStable)
	wantNote(t, d, "gray failure", "10s more")
	if d.Stale != nil {
		t.Fatalf("a gray failure is not stale evidence: %v", d.Stale)
	}
	// A trade-path check succeeds: back at once.
	if st, _ := m.ObserveTradePath("eu", nil); st.GrayFailure || st.State != engine.Healthy {
		t.Fatalf("after trade-path evidence: %+v", st)
	}
	wantOutcome(t, failback(t, m, true), engine.Switched)

	// Second gray failure: the wait is 2 × 1 min, bounded by 90 s.
	mustTraffic(t, m, "eu", errOrder)
	mustTraffic(t, m, "eu", errOrder)
	st = mustProbe(t, m, "eu")
	if st.GrayFailures != 2 || !st.GrayWaitUntil.Equal(clk.Now().Add(90*time.Second)) {
		t.Fatalf("second gray failure: %d, wait until +%v", st.GrayFailures, st.GrayWaitUntil.Sub(clk.Now()))
	}
	wantOutcome(t, failover(t, m, true), engine.Switched)
	clk.Advance(89 * time.Second)
	mustProbe(t, m, "eu")
	if st := mustStatus(t, m, "eu"); !st.GrayFailure {
		t.Fatal("gray failure cleared before its wait")
	}
	clk.Advance(time.Second)
	mustProbe(t, m, "us")
	if st := mustProbe(t, m, "eu"); st.GrayFailure || st.State != engine.Healthy {
		t.Fatalf("gray failure not cleared after its wait: %+v", st)
	}
}

// An endpoint DOWN on orders while its probe was also failing is an ordinary
// failure, not a gray one.
func TestNotGrayWhenProbeFailsToo(t *testing.T) {
	m, _, pt := fixture(t, nil, epEU, epUS)
	pt.fail("eu", errRefused)
	mustProbe(t, m, "eu")
	mustTraffic(t, m, "eu", errOrder)
	if st := mustTraffic(t, m, "eu", errOrder); st.GrayFailure || st.State != engine.Down {
		t.Fatalf("%+v", st)
	}
}

// Decision.Stale names the candidates excluded only by stale evidence, never the
// failed ones; identity verifications older than SwitchVerificationAge are stale
// evidence too.
func TestDecisionStale(t *testing.T) {
	m, clk, pt := fixture(t, func(c *engine.Config) {
		c.RequireAdmission = true
		c.SwitchVerificationAge = 5 * time.Second
		c.VerificationMaxAge = time.Minute
	}, epEU, epUS, epAP)
	for _, n := range []string{"eu", "us", "ap"} {
		mustProbe(t, m, n)
		if _, err := m.Admit(n, nil); err != nil {
			t.Fatal(err)
		}
	}
	pt.fail("ap", errRefused)
	mustProbe(t, m, "ap")
	mustProbe(t, m, "ap") // ap DOWN: failed, not stale
	clk.Advance(6 * time.Second)
	pt.fail("eu", errRefused)
	driveDown(t, m, "eu")
	d := failover(t, m, true)
	wantOutcome(t, d, engine.NoTargetAvailable)
	if len(d.Stale) != 1 || d.Stale[0] != "us" {
		t.Fatalf("Stale = %v, want [us]", d.Stale)
	}
	// Fresh health, but the verification is older than a switch accepts.
	mustProbe(t, m, "us")
	d = failover(t, m, true)
	wantOutcome(t, d, engine.NoTargetAvailable)
	wantNote(t, d, "a switch needs a verification younger than 5s")
	if len(d.Stale) != 1 || d.Stale[0] != "us" {
		t.Fatalf("Stale = %v, want [us] for its old verification", d.Stale)
	}
	if st := mustStatus(t, m, "us"); !st.Eligible || !st.Verified {
		t.Fatalf("us should still be verified and eligible (only a switch wants fresher): %+v", st)
	}
	if _, err := m.Admit("us", nil); err != nil {
		t.Fatal(err)
	}
	d = failover(t, m, true)
	wantOutcome(t, d, engine.Switched)
	if d.Stale != nil {
		t.Fatalf("Stale on a switch: %v", d.Stale)
	}
}

// A verification expires after VerificationMaxAge; with admission required the
// endpoint is no longer a target.
func TestVerificationMaxAge(t *testing.T) {
	m, clk, _ := fixture(t, func(c *engine.Config) {
		c.RequireAdmission = true
		c.VerificationMaxAge = time.Minute
	}, epEU, epUS)
	mustProbe(t, m, "us")
	if _, err := m.Admit("us", nil); err != nil {
		t.Fatal(err)
	}
	clk.Advance(59 * time.Second)
	mustProbe(t, m, "us")
	if st := mustStatus(t, m, "us"); !st.Eligible || st.VerificationExpired {
		t.Fatalf("%+v", st)
	}
	clk.Advance(time.Second)
	mustProbe(t, m, "us")
	if _, err := m.Admit("us", errors.New("401 from a new host")); err != nil {
		t.Fatal(err)
	}
	st := mustStatus(t, m, "us")
	if st.Eligible || st.Verified || !st.VerificationExpired {
		t.Fatalf("after expiry with only failed checks since: %+v", st)
	}
}

// Manager.Validate refuses jurisdiction rules that cannot work; Register
// refuses padded jurisdictions.
func TestJurisdictionValidation(t *testing.T) {
	with := func(ep engine.Endpoint, j string) engine.Endpoint { ep.Jurisdiction = j; return ep }
	for name, tc := range map[string]struct {
		rule []string
		eps  []engine.Endpoint
		want string
	}{
		"unknown name":     {[]string{"EU", "UE"}, []engine.Endpoint{with(epEU, "EU"), with(epUS, "EU")}, `names "UE"`},
		"no backup allows": {[]string{"EU"}, []engine.Endpoint{with(epEU, "EU"), with(epUS, "US")}, "no backup lies"},
		"blank backup":     {[]string{"EU"}, []engine.Endpoint{with(epEU, "EU"), epUS, with(epAP, "EU")}, `backup "us" has no jurisdiction`},
		"case differs":     {[]string{"eu"}, []engine.Endpoint{with(epEU, "EU"), with(epUS, "EU")}, `names "eu"`},
	} {
		cfg := engine.DefaultConfig()
		cfg.Probe = newProbeTable(enginetest.NewFakeClock(t0)).probe
		cfg.TargetJurisdictions = tc.rule
		m, err := engine.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range tc.eps {
			if err := m.Register(ep); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Validate(); !errors.Is(err, engine.ErrInvalidConfig) || !contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want %q", name, err, tc.want)
		}
	}
	m, _, _ := fixture(t, nil, epEU, epUS)
	if err := m.Register(with(epAP, "EU ")); !errors.Is(err, engine.ErrJurisdiction) {
		t.Errorf("padded Register: %v", err)
	}
	cfg := engine.DefaultConfig()
	cfg.Probe = newProbeTable(enginetest.NewFakeClock(t0)).probe
	cfg.TargetJurisdictions = []string{"EU "}
	if _, err := engine.New(cfg); !errors.Is(err, engine.ErrInvalidConfig) {
		t.Errorf("padded rule: %v", err)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// Assign refuses an endpoint found on another account or outside the rules.
func TestAssignRefusesInadmissible(t *testing.T) {
	us := epUS
	us.Jurisdiction = "US"
	ap := epAP
	ap.Jurisdiction = "EU"
	eu := epEU
	eu.Jurisdiction = "EU"
	m, _, _ := fixture(t, func(c *engine.Config) { c.TargetJurisdictions = []string{"EU"} }, eu, us, ap)
	if _, err := m.Assign("us", 1, ""); !errors.Is(err, engine.ErrJurisdiction) {
		t.Fatalf("outside the rule: %v", err)
	}
	if _, err := m.Admit("ap", fmt.Errorf("%w: account X", engine.ErrIdentityMismatch)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Assign("ap", 1, ""); !errors.Is(err, engine.ErrIdentityMismatch) {
		t.Fatalf("wrong account: %v", err)
	}
	if err := m.Admissible("ap"); !errors.Is(err, engine.ErrIdentityMismatch) {
		t.Fatalf("Admissible: %v", err)
	}
	if m.Token() != 0 {
		t.Fatal("a refused Assign moved the token")
	}
}

// With the default settings, the flap limiter trips by the second bounce, and
// every bounce doubles the failback cooldown.
func TestBouncesWithDefaults(t *testing.T) {
	m, clk, pt := fixture(t, func(c *engine.Config) { c.FlapLimit = 100 }, epEU, epUS)
	mustProbe(t, m, "us")
	cycle := func() engine.Decision {
		t.Helper()
		pt.fail("eu", errRefused)
		driveDown(t, m, "eu")
		mustProbe(t, m, "us")
		wantOutcome(t, failover(t, m, true), engine.Switched)
		pt.heal("eu")
		for range 5 {
			mustProbe(t, m, "eu")
		}
		mustProbe(t, m, "us")
		return failback(t, m, true)
	}
	clk.Advance(time.Minute)
	d := cycle() // first failover: no bounce yet
	wantOutcome(t, d, engine.CooldownActive)
	wantNote(t, d, "of 1m0s")
	clk.Advance(time.Minute)
	mustProbe(t, m, "eu")
	wantOutcome(t, failback(t, m, true), engine.Switched)
	clk.Advance(time.Minute)
	d = cycle() // failed over 1 min after the failback: bounce 1
	wantOutcome(t, d, engine.CooldownActive)
	wantNote(t, d, "of 2m0s")
	wantNote(t, d, "bounced 1 time")
	if st := mustStatus(t, m, "eu"); st.Bounces != 1 || st.FailbackCooldown != 2*time.Minute {
		t.Fatalf("after one bounce: %d, %v", st.Bounces, st.FailbackCooldown)
	}
	clk.Advance(2 * time.Minute)
	mustProbe(t, m, "eu")
	wantOutcome(t, failback(t, m, true), engine.Switched)
	clk.Advance(time.Minute)
	d = cycle() // bounce 2
	wantOutcome(t, d, engine.CooldownActive)
	wantNote(t, d, "of 4m0s")
	clk.Advance(4 * time.Minute)
	mustProbe(t, m, "eu")
	d = failback(t, m, true)
	wantOutcome(t, d, engine.FlapSuppressed)
	wantNote(t, d, "bounced 2 times", "human")
}

// Bounce rules as properties, on random failover/failback cycles at random
// intervals: the failback cooldown is Cooldown × BounceFactor^bounces bounded by
// MaxFailbackCooldown, where a bounce is a failover within BounceWindow of a
// failback, counted within FlapWindow; failback never happens inside it; the
// limiter trips exactly at FlapBounces bounces.
func TestBounceRulesProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cool := time.Duration(rapid.IntRange(1, 120).Draw(rt, "CooldownS")) * time.Second
		factor := rapid.IntRange(1, 4).Draw(rt, "BounceFactor")
		maxCool := cool * time.Duration(rapid.IntRange(0, 20).Draw(rt, "MaxMult")) / 2
		bound := max(maxCool, cool)
		bw := time.Duration(rapid.IntRange(1, 600).Draw(rt, "BounceWindowS")) * time.Second
		fw := time.Duration(rapid.IntRange(1, 3600).Draw(rt, "FlapWindowS")) * time.Second
		flapBounces := rapid.IntRange(0, 3).Draw(rt, "FlapBounces")
		clk := enginetest.NewFakeClock(t0)
		pt := newProbeTable(clk)
		cfg := engine.DefaultConfig()
		cfg.Probe, cfg.Clock = pt.probe, clk
		cfg.FailureThreshold, cfg.FailbackSuccessThreshold = 1, 1
		cfg.MaxHealthAge = time.Hour
		cfg.Cooldown, cfg.BounceFactor, cfg.MaxFailbackCooldown = cool, factor, maxCool
		cfg.BounceWindow, cfg.FlapWindow, cfg.FlapBounces, cfg.FlapLimit = bw, fw, flapBounces, 1<<30
		m, err := engine.New(cfg)
		if err != nil {
			rt.Fatal(err)
		}
		_ = m.Register(epEU)
		_ = m.Register(epUS)
		var lastFailback, lastSwitch time.Time
		var bounces []time.Time
		expected := func(now time.Time) (int, time.Duration) {
			n := 0
			for _, b := range bounces {
				if now.Sub(b) < fw {
					n++
				}
			}
			c := cool
			for range n {
				c *= time.Duration(factor)
				if c >= bound {
					c = bound
					break
				}
			}
			return n, c
		}
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for i := range steps {
			clk.Advance(time.Duration(rapid.IntRange(0, 900).Draw(rt, fmt.Sprintf("advanceS%d", i))) * time.Second)
			now := clk.Now()
			_, _ = m.Probe(t.Context(), "us")
			act, _ := m.Active()
			if act.Name == "eu" {
				pt.fail("eu", errRefused)
				_, _ = m.Probe(t.Context(), "eu")
				d, _ := m.EvaluateFailover(true)
				if d.Outcome != engine.Switched {
					rt.Fatalf("failover: %v %v", d.Outcome, d.Notes)
				}
				if !lastFailback.IsZero() && now.Sub(lastFailback) < bw {
					bounces = append(bounces, now)
				}
				lastFailback = time.Time{}
				lastSwitch = now
				continue
			}
			pt.heal("eu")
			_, _ = m.Probe(t.Context(), "eu")
			n, c := expected(now)
			st, _ := m.Status("eu")
			if st.Bounces != n || st.FailbackCooldown != c {
				rt.Fatalf("status: bounces %d cooldown %v, model %d %v", st.Bounces, st.FailbackCooldown, n, c)
			}
			if c > bound || c < cool || (n == 0 && c != cool) {
				rt.Fatalf("cooldown %v out of bounds", c)
			}
			d, _ := m.EvaluateFailback(true)
			switch {
			case now.Sub(lastSwitch) < c:
				if d.Outcome != engine.CooldownActive {
					rt.Fatalf("inside the cooldown %v (%v since the switch): %v", c, now.Sub(lastSwitch), d.Outcome)
				}
			case flapBounces > 0 && n >= flapBounces:
				if d.Outcome != engine.FlapSuppressed {
					rt.Fatalf("%d bounces (limit %d): %v", n, flapBounces, d.Outcome)
				}
			default:
				if d.Outcome != engine.Switched {
					rt.Fatalf("failback due: %v %v", d.Outcome, d.Notes)
				}
				lastFailback, lastSwitch = now, now
			}
		}
	})
}

// A late probe during a gray failure is not the probe seeing the outage: the
// gray failure stands, and probe successes after it do not bring the endpoint
// back. FailureThreshold failures in a row do not change that either
// (TestGrayFailureSurvivesProbeBlip).
func TestGrayFailureSurvivesOneLateProbe(t *testing.T) {
	m, _, pt := fixture(t, func(c *engine.Config) {
		c.GrayFailbackWait = time.Hour
		c.MaxGrayFailbackWait = time.Hour
	}, epEU, epUS)
	mustProbe(t, m, "eu")
	mustProbe(t, m, "us")
	mustTraffic(t, m, "eu", errOrder)
	mustTraffic(t, m, "eu", errOrder)
	if st := mustProbe(t, m, "eu"); !st.GrayFailure {
		t.Fatalf("not gray: %+v", st)
	}
	pt.fail("eu", errRefused)
	if st := mustProbe(t, m, "eu"); !st.GrayFailure || st.State != engine.Down {
		t.Fatalf("one failed probe cleared the gray failure: %+v", st)
	}
	pt.fail("eu", nil)
	for range 3 {
		if st := mustProbe(t, m, "eu"); !st.GrayFailure || st.State != engine.Down {
			t.Fatalf("probe successes brought a gray endpoint back without trade-path evidence: %+v", st)
		}
	}
	pt.fail("eu", errRefused)
	mustProbe(t, m, "eu")
	if st := mustProbe(t, m, "eu"); !st.GrayFailure || st.State != engine.Down {
		t.Fatalf("FailureThreshold probe failures ended the gray failure: %+v", st)
	}
}

// After the gray wait, a trade-path check that keeps failing keeps the
// endpoint out: probe successes alone do not clear it.
func TestFailingTradePathOutlastsTheGrayWait(t *testing.T) {
	m, clk, _ := fixture(t, func(c *engine.Config) {
		c.GrayFailbackWait = 10 * time.Second
		c.MaxGrayFailbackWait = time.Minute
	}, epEU, epUS)
	mustProbe(t, m, "eu")
	mustProbe(t, m, "us")
	mustTraffic(t, m, "eu", errOrder)
	mustTraffic(t, m, "eu", errOrder)
	for range 4 {
		clk.Advance(5 * time.Second)
		if _, err := m.ObserveTradePath("eu", errOrder); err != nil {
			t.Fatal(err)
		}
		if st := mustProbe(t, m, "eu"); !st.GrayFailure || st.State != engine.Down {
			t.Fatalf("+%v: back while its trade-path check fails: %+v", 5*time.Second, st)
		}
	}
	// The trade path stops failing (no result for MaxHealthAge) and the wait
	// is over: probe successes may bring it back.
	clk.Advance(6 * time.Second)
	if st := mustProbe(t, m, "eu"); st.GrayFailure || st.State != engine.Healthy {
		t.Fatalf("after the wait with no recent trade-path failure: %+v", st)
	}
}

// A probe that failed once just before the orders took the endpoint DOWN hid
// the gray failure; when the probe passes again the endpoint becomes a gray
// failure (trade-path evidence or the wait brings it back) instead of staying
// DOWN for good.
func TestDownOnTrafficAfterAProbeFailureIsNotStuck(t *testing.T) {
	m, clk, pt := fixture(t, func(c *engine.Config) {
		c.GrayFailbackWait = time.Hour
		c.MaxGrayFailbackWait = time.Hour
	}, epEU, epUS)
	mustProbe(t, m, "eu")
	mustProbe(t, m, "us")
	pt.fail("eu", errRefused)
	mustProbe(t, m, "eu")
	clk.Advance(100 * time.Millisecond)
	mustTraffic(t, m, "eu", errOrder)
	if st := mustTraffic(t, m, "eu", errOrder); st.GrayFailure || st.State != engine.Down {
		t.Fatalf("%+v", st)
	}
	clk.Advance(time.Second)
	pt.fail("eu", nil)
	st := mustProbe(t, m, "eu")
	if !st.GrayFailure || st.State != engine.Down {
		t.Fatalf("probe passes while orders failed: want a gray failure, got %+v", st)
	}
	if st, _ := m.ObserveTradePath("eu", nil); st.GrayFailure || st.State != engine.Healthy {
		t.Fatalf("trade-path success must bring it back: %+v", st)
	}
}
