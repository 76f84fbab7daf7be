package engine_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

func mismatch(got, want string) error {
	return fmt.Errorf("%w: account %s, expected %s", engine.ErrIdentityMismatch, got, want)
}

// An endpoint that answers with another account's ID is never a target, even
// when it is the only healthy one: halt instead.
func TestIdentityMismatchIsNeverATarget(t *testing.T) {
	m, _, pt := fixture(t, nil, epEU, epUS)
	mustProbe(t, m, "us")
	if _, err := m.Admit("us", mismatch("ACC-2", "ACC-1")); err != nil {
		t.Fatal(err)
	}
	st := mustStatus(t, m, "us")
	if st.State != engine.Healthy || st.Eligible || !st.IdentityMismatch {
		t.Fatalf("status %+v", st)
	}
	pt.fail("eu", errors.New("reset"))
	driveDown(t, m, "eu")
	d := failover(t, m, true)
	wantOutcome(t, d, engine.NoTargetAvailable)
	wantNote(t, d, `"us"`, "identity mismatch", "ACC-2")
	wantActive(t, m, "eu")
	// A later verification makes it a target again.
	if _, err := m.Admit("us", nil); err != nil {
		t.Fatal(err)
	}
	mustProbe(t, m, "us")
	wantOutcome(t, failover(t, m, true), engine.Switched)
	wantActive(t, m, "us")
}

// A failed check (network) keeps the previous verdict: identity flapping between
// verified and unverifiable does not flap eligibility; a mismatch always wins.
func TestIdentityFlapping(t *testing.T) {
	m, _, _ := fixture(t, func(c *engine.Config) { c.RequireAdmission = true }, epEU, epUS)
	mustProbe(t, m, "us")
	if st := mustStatus(t, m, "us"); st.Eligible {
		t.Fatal("eligible before any verification with RequireAdmission")
	}
	if _, err := m.Admit("us", errors.New("timeout")); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, m, "us"); st.Eligible || st.IdentityError == nil {
		t.Fatalf("an inconclusive first check admitted it: %+v", st)
	}
	for i := range 6 {
		var res error
		if i%2 == 1 {
			res = errors.New("timeout")
		}
		if _, err := m.Admit("us", res); err != nil {
			t.Fatal(err)
		}
		if st := mustStatus(t, m, "us"); !st.Eligible || !st.Verified {
			t.Fatalf("round %d: verified endpoint lost eligibility on an inconclusive check: %+v", i, st)
		}
	}
	m.Admit("us", mismatch("ACC-9", "ACC-1"))
	if st := mustStatus(t, m, "us"); st.Eligible || st.Verified {
		t.Fatalf("mismatch did not exclude: %+v", st)
	}
	m.Admit("us", errors.New("timeout"))
	if st := mustStatus(t, m, "us"); st.Eligible {
		t.Fatal("an inconclusive check after a mismatch re-admitted it")
	}
}

// The active endpoint starting to front another account warrants failover (or a
// halt when there is nowhere to go), whatever its health.
func TestActiveIdentityMismatchWarrantsFailover(t *testing.T) {
	m, _, _ := fixture(t, nil, epEU, epUS)
	mustProbe(t, m, "eu")
	m.Admit("eu", mismatch("ACC-7", "ACC-1"))
	d := failover(t, m, true)
	wantOutcome(t, d, engine.NoTargetAvailable)
	wantNote(t, d, "fronts another account", "ACC-7")
	mustProbe(t, m, "us")
	d = failover(t, m, false)
	wantOutcome(t, d, engine.FenceRequired)
	wantOutcome(t, failover(t, m, true), engine.Switched)
}

// Jurisdiction pairs: EU may fail over to EU only. A healthy US backup is never
// chosen; the EU one is; with only the US healthy, the halt says so and names the
// read-only candidate for a degraded mode. The primary is always a failback target.
func TestJurisdictionPairs(t *testing.T) {
	epEU2 := engine.Endpoint{Name: "eu2", Address: "https://eu2.broker.example", Region: "eu-central-1", Priority: 20, Jurisdiction: "EU"}
	eu, us := epEU, epUS
	eu.Jurisdiction, us.Jurisdiction = "EU", "US"
	m, _, pt := fixture(t, func(c *engine.Config) { c.TargetJurisdictions = []string{"EU"} }, eu, us, epEU2)
	if st, _ := m.Status("us"); st.Jurisdiction != "US" {
		t.Fatalf("registered jurisdiction not kept: %q", st.Jurisdiction)
	}
	mustProbe(t, m, "us")
	mustProbe(t, m, "eu2")
	pt.fail("eu", errors.New("down"))
	driveDown(t, m, "eu")
	d := failover(t, m, true)
	wantOutcome(t, d, engine.Switched)
	if d.To != "eu2" {
		t.Fatalf("switched to %q although us (priority 10) is outside the allowed jurisdictions and eu2 (20) inside", d.To)
	}
	// eu2 dies too: only us is healthy, and it is outside: halt, naming the rule.
	pt.fail("eu2", errors.New("down"))
	driveDown(t, m, "eu2")
	mustProbe(t, m, "us")
	d = failover(t, m, true)
	wantOutcome(t, d, engine.NoTargetAvailable)
	wantNote(t, d, `"us"`, "jurisdiction US is outside the allowed [EU]")
	if d.ReadOnlyTarget != "us" {
		t.Fatalf("ReadOnlyTarget = %q", d.ReadOnlyTarget)
	}
	if _, err := m.Admit("nowhere", nil); !errors.Is(err, engine.ErrUnknownEndpoint) {
		t.Fatalf("Admit unknown: %v", err)
	}
	cfg := engine.DefaultConfig()
	cfg.Probe = pt.probe
	cfg.TargetJurisdictions = []string{"EU", " "}
	if _, err := engine.New(cfg); !errors.Is(err, engine.ErrInvalidConfig) {
		t.Fatalf("blank jurisdiction: %v", err)
	}
}

// Verdicts are ordered by when their check was asked, not by when they
// arrive: a slow check that began before another found a mismatch does not
// overwrite it (nor one asked at the same Clock reading), while a check asked
// later does.
func TestAdmitAsOfKeepsTheNewerFinding(t *testing.T) {
	m, clk, _ := fixture(t, nil, epEU, epUS)
	mustProbe(t, m, "us")
	asked := clk.Now() // a slow check of us starts
	clk.Advance(time.Second)
	if _, err := m.AdmitAsOf("us", mismatch("ACC-2", "ACC-1"), clk.Now()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if st, err := m.AdmitAsOf("us", nil, asked); err != nil || !st.IdentityMismatch || st.Verified {
		t.Fatalf("the older check's verification overwrote the newer mismatch: %+v, %v", st, err)
	}
	if st, err := m.AdmitAsOf("us", nil, clk.Now().Add(-time.Second)); err != nil || !st.IdentityMismatch {
		t.Fatalf("a verification asked at the mismatch's instant overwrote it: %+v, %v", st, err)
	}
	if st, err := m.AdmitAsOf("us", nil, clk.Now()); err != nil || st.IdentityMismatch || !st.Verified {
		t.Fatalf("a check asked later did not record its verification: %+v, %v", st, err)
	}
}
