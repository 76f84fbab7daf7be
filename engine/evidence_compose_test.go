package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

var errTradePath = errors.New("order status query: HTTP 503")

// A gray failure whose trade path keeps failing survives a probe blip: the
// probe fails for several rounds (a loaded host, or the region briefly dark)
// and then passes again. That is not trade-path evidence, so the endpoint
// stays DOWN in its gray failure and flow does not fail back into it.
func TestGrayFailureSurvivesProbeBlip(t *testing.T) {
	m, clk, pt := fixture(t, func(c *engine.Config) {
		c.Cooldown = 0
		c.FailbackSuccessThreshold = 1
		c.GrayFailbackWait = time.Hour
		c.MaxGrayFailbackWait = time.Hour
	}, epEU, epUS)
	mustProbe(t, m, "eu")
	mustProbe(t, m, "us")
	mustTraffic(t, m, "eu", errOrder)
	mustTraffic(t, m, "eu", errOrder)
	if st := mustProbe(t, m, "eu"); !st.GrayFailure { // it passes after the orders failed
		t.Fatalf("not gray: %+v", st)
	}
	wantOutcome(t, failover(t, m, true), engine.Switched)
	round := func(probeErr error) engine.Status {
		t.Helper()
		clk.Advance(time.Second)
		pt.fail("eu", probeErr)
		mustProbe(t, m, "eu")
		mustProbe(t, m, "us")
		st, err := m.ObserveTradePath("eu", errTradePath) // the trade path still fails
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	for range 10 {
		round(nil)
	}
	for i := range 4 {
		if st := round(errRefused); !st.GrayFailure || st.State != engine.Down {
			t.Fatalf("probe failure %d ended the gray failure: %+v", i+1, st)
		}
	}
	for i := range 5 {
		st := round(nil)
		if !st.GrayFailure || st.State != engine.Down {
			t.Fatalf("probe success %d after the blip ended the gray failure while the trade path fails: %+v", i+1, st)
		}
		if d := failback(t, m, true); d.Outcome == engine.Switched {
			t.Fatalf("failed back into a gray endpoint whose trade path fails: %q", d.Notes)
		}
	}
	// Trade-path evidence ends it.
	if st, _ := m.ObserveTradePath("eu", nil); st.GrayFailure || st.State != engine.Healthy {
		t.Fatalf("after a trade-path success: %+v", st)
	}
	wantOutcome(t, failback(t, m, true), engine.Switched)
}

// A gray failure (the probe passed after the orders failed) stays one when
// the probe later fails too: that does not make it an outage that probe
// successes end; it still needs trade-path evidence (or the gray wait). (An
// outage whose probe fails before any probe passed is an ordinary one:
// TestOrdersFailProbeFailsThenPassesRecovers.)
func TestGrayFailureNeedsTradePathEvenWhenTheProbeFailsToo(t *testing.T) {
	m, clk, pt := fixture(t, func(c *engine.Config) {
		c.GrayFailbackWait = time.Minute
		c.MaxGrayFailbackWait = time.Hour
	}, epEU, epUS)
	mustProbe(t, m, "eu")
	mustTraffic(t, m, "eu", errOrder)
	mustTraffic(t, m, "eu", errOrder)
	if st := mustProbe(t, m, "eu"); !st.GrayFailure {
		t.Fatalf("not gray: %+v", st)
	}
	pt.fail("eu", errRefused)
	for range 5 {
		clk.Advance(time.Second)
		mustProbe(t, m, "eu")
	}
	pt.heal("eu")
	clk.Advance(time.Second)
	if st := mustProbe(t, m, "eu"); !st.GrayFailure || st.State != engine.Down || st.GrayFailures != 1 {
		t.Fatalf("a probe success ended the gray failure: %+v", st)
	}
	// The wait (1 min, no trade-path failure within MaxHealthAge) ends it.
	clk.Advance(time.Minute)
	st := mustProbe(t, m, "eu")
	if st.GrayFailure || st.State != engine.Healthy {
		t.Fatalf("after the gray wait: %+v", st)
	}
	if !st.WatchTradePath {
		t.Fatalf("ended by the wait, not by trade-path evidence: the trade path must still be checked: %+v", st)
	}
	// A trade-path failure while it is considered for failback keeps it out.
	st, _ = m.ObserveTradePath("eu", errTradePath)
	if st.Eligible || st.State == engine.Healthy {
		t.Fatalf("a failing trade-path check after the wait: %+v", st)
	}
	st, _ = m.ObserveTradePath("eu", nil)
	if !st.WatchTradePath || st.State != engine.Healthy {
		t.Fatalf("after trade-path evidence: healthy, and still watched until it carries orders: %+v", st)
	}
	if st := mustTraffic(t, m, "eu", nil); st.WatchTradePath {
		t.Fatalf("after live traffic succeeded: %+v", st)
	}
}

// Orders succeed, then the region dies: orders and probe both fail. That is
// an outage, not a broken probe, and flow fails over.
func TestRealOutageIsNotABrokenProbe(t *testing.T) {
	m, clk, pt := fixture(t, nil, epEU, epUS)
	mustProbe(t, m, "eu")
	mustProbe(t, m, "us")
	for range 5 {
		clk.Advance(100 * time.Millisecond)
		mustTraffic(t, m, "eu", nil)
	}
	clk.Advance(100 * time.Millisecond)
	pt.fail("eu", errRefused)
	mustTraffic(t, m, "eu", errOrder) // one failed order, below the threshold
	mustProbe(t, m, "eu")
	clk.Advance(time.Second)
	st := mustProbe(t, m, "eu")
	if st.BrokenProbe {
		t.Fatalf("orders and probe both fail, yet the probe is called suspect: %+v", st)
	}
	if st.State != engine.Down {
		t.Fatalf("state %v, want DOWN", st.State)
	}
	mustProbe(t, m, "us")
	wantOutcome(t, failover(t, m, true), engine.Switched)
}

// The rule for a probe that fails while orders succeed: while live traffic on
// the active endpoint keeps succeeding (a success younger than MaxHealthAge,
// since the probe began failing, and no traffic failure since), the probe is
// the suspect: BrokenProbe, DEGRADED rather than DOWN, no failover. One order
// failure makes it DOWN and fails over at once; traffic that goes quiet for
// MaxHealthAge lets the probe count again.
func TestProbeFailingWhileOrdersSucceed(t *testing.T) {
	setup := func(t *testing.T) (*engine.Manager, func(time.Duration)) {
		m, clk, pt := fixture(t, nil, epEU, epUS)
		mustProbe(t, m, "eu")
		mustProbe(t, m, "us")
		pt.fail("eu", errRefused)
		for range 5 {
			clk.Advance(time.Second)
			mustProbe(t, m, "us")
			for range 5 {
				clk.Advance(100 * time.Millisecond)
				mustTraffic(t, m, "eu", nil)
			}
			mustProbe(t, m, "eu")
			st := mustStatus(t, m, "eu")
			if st.ProbeFailures >= 2 && (!st.BrokenProbe || st.State != engine.Degraded) {
				t.Fatalf("probe failing while orders succeed: %+v", st)
			}
			d := failover(t, m, true)
			wantOutcome(t, d, engine.NoAction)
		}
		d := failover(t, m, true)
		wantNote(t, d, "probe", "suspect")
		return m, func(d time.Duration) { clk.Advance(d) }
	}
	t.Run("an order fails", func(t *testing.T) {
		m, _ := setup(t)
		if st := mustTraffic(t, m, "eu", errOrder); st.State != engine.Down || st.BrokenProbe {
			t.Fatalf("after an order failure: %+v", st)
		}
		wantOutcome(t, failover(t, m, true), engine.Switched)
	})
	t.Run("traffic goes quiet", func(t *testing.T) {
		m, advance := setup(t)
		advance(4 * time.Second)
		mustProbe(t, m, "us")
		mustProbe(t, m, "eu")
		wantOutcome(t, failover(t, m, true), engine.NoAction)
		advance(time.Second)
		mustProbe(t, m, "us")
		if st := mustProbe(t, m, "eu"); st.State != engine.Down || st.BrokenProbe {
			t.Fatalf("no traffic for MaxHealthAge: %+v", st)
		}
		wantOutcome(t, failover(t, m, true), engine.Switched)
	})
}
