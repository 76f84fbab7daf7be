package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

var errLookup = errors.New("order status: HTTP 503")

// submissionGray takes eu out by orders the broker answered with a server
// error while its probe passes: a gray failure of submission.
func submissionGray(t *testing.T) (*engine.Manager, func(time.Duration), *probeTable) {
	t.Helper()
	m, clk, pt := fixture(t, func(c *engine.Config) { c.Cooldown = 5 * time.Second }, epEU, epUS)
	advance := func(d time.Duration) { clk.Advance(d) }
	advance(time.Second)
	mustProbe(t, m, "eu")
	mustProbe(t, m, "us")
	for range m.Config().FailureThreshold {
		advance(time.Millisecond)
		mustTraffic(t, m, "eu", errOrder)
		if _, err := m.ObserveSubmissionFailed("eu"); err != nil {
			t.Fatal(err)
		}
	}
	wantOutcome(t, failover(t, m, true), engine.Switched)
	advance(100 * time.Millisecond)
	if st := mustProbe(t, m, "eu"); !st.GrayFailure || !st.SubmissionFailed {
		t.Fatalf("eu after its probe passed: want a gray failure of submission, got %+v", st)
	}
	return m, advance, pt
}

// A lookup passing does not end a gray failure of submission while another
// endpoint carries flow; a check of submission (ObserveTradePath) does.
func TestLookupDoesNotEndSubmissionGray(t *testing.T) {
	m, advance, _ := submissionGray(t)
	for range 20 {
		advance(time.Second)
		mustProbe(t, m, "us")
		mustProbe(t, m, "eu")
		if st, _ := m.ObserveLookup("eu", nil); !st.GrayFailure || st.State != engine.Down || st.Eligible {
			t.Fatalf("lookup passing ended eu's gray failure of submission: %+v", st)
		}
	}
	if d := failback(t, m, true); d.Outcome == engine.Switched || d.Outcome == engine.FenceRequired {
		t.Fatalf("failback onto eu on lookup evidence: %v", d)
	}
	if st, _ := m.ObserveTradePath("eu", nil); st.GrayFailure || st.SubmissionFailed || st.State != engine.Healthy {
		t.Fatalf("a check of submission passing: want eu back, got %+v", st)
	}
}

// A lookup failing counts as before; lookups alone (no submission answered
// with a server error) are ended by a lookup's success.
func TestLookupGrayEndsOnLookup(t *testing.T) {
	m, clk, _ := fixture(t, nil, epEU, epUS)
	clk.Advance(time.Second)
	mustProbe(t, m, "eu")
	mustProbe(t, m, "us")
	for range m.Config().FailureThreshold {
		clk.Advance(time.Millisecond)
		mustTraffic(t, m, "eu", errLookup) // reconcile reads answered 503
	}
	clk.Advance(100 * time.Millisecond)
	if st := mustProbe(t, m, "eu"); !st.GrayFailure || st.SubmissionFailed {
		t.Fatalf("want a gray failure of reads, got %+v", st)
	}
	if st, _ := m.ObserveLookup("eu", errLookup); !st.GrayFailure {
		t.Fatalf("failed lookup: %+v", st)
	}
	if st, _ := m.ObserveLookup("eu", nil); st.GrayFailure || st.State != engine.Healthy {
		t.Fatalf("lookup passing after read failures: want eu back, got %+v", st)
	}
}

// With no other endpoint eligible and the active one DOWN (a halt), a
// lookup passing counts after the endpoint's failback cooldown without a
// failure: the last resort, since only an order can tell.
func TestLookupLastResortAfterCooldown(t *testing.T) {
	m, advance, pt := submissionGray(t)
	advance(10 * time.Second)
	pt.fail("us", errRefused)
	driveDown(t, m, "us")
	if d := failover(t, m, true); d.Outcome != engine.NoTargetAvailable {
		t.Fatalf("us down, eu gray: want a halt, got %v", d)
	}
	// A failure on eu just now: not before the cooldown.
	mustTraffic(t, m, "eu", errOrder)
	if _, err := m.ObserveSubmissionFailed("eu"); err != nil {
		t.Fatal(err)
	}
	cd := mustStatus(t, m, "eu").FailbackCooldown
	advance(cd - time.Millisecond)
	if st, _ := m.ObserveLookup("eu", nil); !st.GrayFailure || st.Eligible {
		t.Fatalf("last resort taken %v after a failure, before the cooldown %v: %+v", cd-time.Millisecond, cd, st)
	}
	advance(2 * time.Millisecond)
	st, _ := m.ObserveLookup("eu", nil)
	if st.GrayFailure || st.State != engine.Healthy {
		t.Fatalf("lookup passing after the cooldown with nothing else eligible: want eu tried, got %+v", st)
	}
}
