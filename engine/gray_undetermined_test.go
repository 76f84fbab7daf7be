package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/engine/enginetest"
)

// defaultsFixture is fixture with DefaultConfig's FailureThreshold (3), as
// the measured scenarios ran.
func defaultsFixture(t *testing.T) (*engine.Manager, func(time.Duration), *probeTable) {
	t.Helper()
	m, clk, pt := fixture(t, func(c *engine.Config) {
		c.FailureThreshold = engine.DefaultConfig().FailureThreshold
	}, epEU, epUS)
	return m, func(d time.Duration) { clk.Advance(d) }, pt
}

// ordersFailBurst records FailureThreshold failed orders on name within
// 10 ms, with no probe between them.
func ordersFailBurst(t *testing.T, m *engine.Manager, advance func(time.Duration), name string) engine.Status {
	t.Helper()
	var st engine.Status
	for range m.Config().FailureThreshold {
		advance(3 * time.Millisecond)
		st = mustTraffic(t, m, name, errOrder)
	}
	return st
}

// An outage the orders notice before the probe does (the usual order of
// events while orders flow: three orders fail within 10 ms, the next probe
// round is up to a probe interval away) is not a gray failure: the endpoint
// is DOWN at once (failover is not delayed), the cause is undetermined until
// a probe runs, and the probe failing too makes it an ordinary outage, which
// the probe's first success after the region heals ends. Flow can then go
// back to it when the backup dies, instead of halting for the gray wait.
func TestOutageOrdersNoticeFirstIsNotGray(t *testing.T) {
	m, advance, pt := defaultsFixture(t)
	for range 5 {
		advance(time.Second)
		mustProbe(t, m, "eu")
		mustProbe(t, m, "us")
	}
	advance(500 * time.Millisecond)
	st := ordersFailBurst(t, m, advance, "eu")
	if st.State != engine.Down || st.GrayFailure || !st.GrayUndetermined {
		t.Fatalf("after the failed orders: want DOWN, cause undetermined, not gray; got %+v", st)
	}
	d := failover(t, m, true)
	wantOutcome(t, d, engine.Switched)
	wantNote(t, d, `"eu" is DOWN`, "the next one decides")
	wantActive(t, m, "us")

	pt.fail("eu", errRefused)
	for i := range 3 {
		advance(time.Second)
		mustProbe(t, m, "us")
		st = mustProbe(t, m, "eu")
		if st.State != engine.Down || st.GrayFailure || st.GrayUndetermined {
			t.Fatalf("failed probe %d: want DOWN, an ordinary outage; got %+v", i+1, st)
		}
	}
	pt.heal("eu")
	for i := range 10 {
		advance(time.Second)
		mustProbe(t, m, "us")
		st = mustProbe(t, m, "eu")
		if st.State != engine.Healthy || !st.Eligible || st.GrayFailure || st.GrayFailures != 0 {
			t.Fatalf("probe success %d after the region healed: want HEALTHY and eligible, got %+v", i+1, st)
		}
	}
	if st.ConsecutiveSuccesses < m.Config().FailbackSuccessThreshold {
		t.Fatalf("%d consecutive successes, want at least FailbackSuccessThreshold %d", st.ConsecutiveSuccesses, m.Config().FailbackSuccessThreshold)
	}
	// The backup dies: flow goes back to the healed primary, no halt.
	pt.fail("us", errRefused)
	driveDown(t, m, "us")
	d = failover(t, m, true)
	wantOutcome(t, d, engine.Switched)
	if d.To != "eu" {
		t.Fatalf("failover to %q, want eu", d.To)
	}
}

// Orders fail, then the next probe passes: the probe cannot see what breaks
// the orders, a gray failure (as before), with its wait counted from that
// probe.
func TestOrdersFailThenProbePassesIsGray(t *testing.T) {
	m, clk, _ := fixture(t, func(c *engine.Config) {
		c.FailureThreshold = engine.DefaultConfig().FailureThreshold
	}, epEU, epUS)
	advance := func(d time.Duration) { clk.Advance(d) }
	mustProbe(t, m, "eu")
	mustProbe(t, m, "us")
	advance(500 * time.Millisecond)
	if st := ordersFailBurst(t, m, advance, "eu"); !st.GrayUndetermined || st.GrayFailure || st.State != engine.Down {
		t.Fatalf("after the failed orders: %+v", st)
	}
	advance(500 * time.Millisecond)
	st := mustProbe(t, m, "eu")
	wait := m.Config().GrayFailbackWait
	if !st.GrayFailure || st.GrayUndetermined || st.State != engine.Down || st.GrayFailures != 1 || !st.GrayWaitUntil.Equal(clk.Now().Add(wait)) {
		t.Fatalf("probe passed after the orders failed: want a gray failure with a wait of %v, got %+v", wait, st)
	}
	// Probe successes do not end it.
	for range 5 {
		advance(time.Second)
		if st := mustProbe(t, m, "eu"); !st.GrayFailure || st.State != engine.Down {
			t.Fatalf("probe success ended the gray failure: %+v", st)
		}
	}
}

// One order fails, a probe passes, then more orders fail: the probe passed
// after the live traffic began to fail, so the endpoint is gray the moment
// the orders take it DOWN. If the probe fails in between, it is an outage
// the probe sees, and the probe's next success ends it.
func TestProbeBetweenFailedOrders(t *testing.T) {
	t.Run("probe passes between", func(t *testing.T) {
		m, advance, _ := defaultsFixture(t)
		mustProbe(t, m, "eu")
		advance(time.Second)
		mustTraffic(t, m, "eu", errOrder)
		advance(100 * time.Millisecond)
		mustProbe(t, m, "eu")
		advance(100 * time.Millisecond)
		mustTraffic(t, m, "eu", errOrder)
		if st := mustTraffic(t, m, "eu", errOrder); !st.GrayFailure || st.State != engine.Down {
			t.Fatalf("want gray at once: %+v", st)
		}
	})
	t.Run("probe passes then fails between", func(t *testing.T) {
		m, advance, pt := defaultsFixture(t)
		mustProbe(t, m, "eu")
		advance(time.Second)
		mustTraffic(t, m, "eu", errOrder)
		advance(100 * time.Millisecond)
		mustProbe(t, m, "eu")
		pt.fail("eu", errRefused)
		advance(100 * time.Millisecond)
		mustProbe(t, m, "eu")
		mustTraffic(t, m, "eu", errOrder)
		if st := mustTraffic(t, m, "eu", errOrder); st.GrayFailure || st.GrayUndetermined || st.State != engine.Down {
			t.Fatalf("want an ordinary outage: %+v", st)
		}
		pt.heal("eu")
		advance(time.Second)
		if st := mustProbe(t, m, "eu"); st.GrayFailure || st.State != engine.Healthy {
			t.Fatalf("the probe's success after the outage: %+v", st)
		}
	})
}

// Orders fail, the probe fails too, then passes: an ordinary outage, ended by
// the probe's success.
func TestOrdersFailProbeFailsThenPassesRecovers(t *testing.T) {
	m, advance, pt := defaultsFixture(t)
	mustProbe(t, m, "eu")
	mustProbe(t, m, "us")
	ordersFailBurst(t, m, advance, "eu")
	pt.fail("eu", errRefused)
	advance(time.Second)
	if st := mustProbe(t, m, "eu"); st.GrayFailure || st.GrayUndetermined || st.State != engine.Down {
		t.Fatalf("probe failed after the orders: want an ordinary outage, got %+v", st)
	}
	pt.heal("eu")
	advance(time.Second)
	st := mustProbe(t, m, "eu")
	if st.GrayFailure || st.State != engine.Healthy || !st.Eligible || st.TrafficFailures != 0 || st.GrayFailures != 0 {
		t.Fatalf("probe passed after the outage: want HEALTHY, eligible, not gray; got %+v", st)
	}
}

// An established gray failure is not ended by probe failures then successes:
// the rule that the probe cannot see this failure holds once a probe passed
// after the orders failed.
func TestEstablishedGrayOutlastsProbeFailuresThenSuccesses(t *testing.T) {
	m, advance, pt := defaultsFixture(t)
	mustProbe(t, m, "eu")
	ordersFailBurst(t, m, advance, "eu")
	advance(time.Second)
	if st := mustProbe(t, m, "eu"); !st.GrayFailure {
		t.Fatalf("not gray: %+v", st)
	}
	pt.fail("eu", errRefused)
	for range 5 {
		advance(time.Second)
		mustProbe(t, m, "eu")
	}
	pt.heal("eu")
	for i := range 10 {
		advance(time.Second)
		if st := mustProbe(t, m, "eu"); !st.GrayFailure || st.State != engine.Down || st.GrayFailures != 1 {
			t.Fatalf("probe success %d after probe failures ended an established gray failure: %+v", i+1, st)
		}
	}
}

// A probe sent before the first failed order and answering after it is no
// probe "run since the orders failed": it may have passed before the outage
// began. It decides nothing, passing or failing; the next probe does. The
// engine takes a probe as sent at its recording time minus its latency
// (Probe measures it; Observe is given it).
func TestProbeInFlightWhenOrdersFailDecidesNothing(t *testing.T) {
	t.Run("Observe, passes", func(t *testing.T) {
		m, advance, _ := defaultsFixture(t)
		mustProbe(t, m, "eu")
		advance(time.Second)
		ordersFailBurst(t, m, advance, "eu") // the first at +3 ms
		advance(100 * time.Millisecond)
		// Sent 200 ms ago: before the first failed order.
		st, err := m.Observe("eu", nil, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if st.GrayFailure || !st.GrayUndetermined || st.State != engine.Down {
			t.Fatalf("a probe in flight when the orders failed passed: want still undetermined, got %+v", st)
		}
		// Sent 50 ms ago, after the orders failed: it decides.
		if st, _ = m.Observe("eu", nil, 50*time.Millisecond); !st.GrayFailure || st.GrayUndetermined {
			t.Fatalf("a probe sent after the orders failed passed: want gray, got %+v", st)
		}
	})
	t.Run("Observe, fails", func(t *testing.T) {
		m, advance, _ := defaultsFixture(t)
		mustProbe(t, m, "eu")
		advance(time.Second)
		ordersFailBurst(t, m, advance, "eu")
		advance(100 * time.Millisecond)
		st, err := m.Observe("eu", errRefused, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if st.GrayFailure || !st.GrayUndetermined || st.State != engine.Down {
			t.Fatalf("a probe in flight when the orders failed failed: want still undetermined, got %+v", st)
		}
		if st, _ = m.Observe("eu", nil, 0); !st.GrayFailure {
			t.Fatalf("the next probe passed: want gray, got %+v", st)
		}
	})
	t.Run("Probe, orders fail while it runs", func(t *testing.T) {
		var m *engine.Manager
		clk := enginetest.NewFakeClock(t0)
		failOrders := false
		m, _, _ = fixture(t, func(c *engine.Config) {
			c.FailureThreshold = 3
			c.Clock = clk
			c.Probe = func(ctx context.Context, ep engine.Endpoint) error {
				if failOrders {
					failOrders = false
					clk.Advance(10 * time.Millisecond) // sent, then the orders fail
					for range 3 {
						if _, err := m.ObserveTraffic(ep.Name, errOrder, time.Millisecond); err != nil {
							return err
						}
					}
				}
				return nil
			}
		}, epEU, epUS)
		mustProbe(t, m, "eu")
		clk.Advance(time.Second)
		failOrders = true
		if st := mustProbe(t, m, "eu"); st.GrayFailure || !st.GrayUndetermined || st.State != engine.Down {
			t.Fatalf("the probe started before the orders failed: want undetermined, got %+v", st)
		}
		if st := mustProbe(t, m, "eu"); !st.GrayFailure {
			t.Fatalf("the next probe passed: want gray, got %+v", st)
		}
	})
}

// An outage the orders noticed and the probe saw, that the probe's success
// ends, might have been a gray failure the probe's failures hid (a partition
// while the trade path was broken): the probe cannot tell the two apart. So
// the endpoint comes back HEALTHY and eligible, but its trade path is watched
// (WatchTradePath) until live traffic succeeds on it: a failed trade-path
// check keeps it out, FailureThreshold of them (its probe passing) make it a
// gray failure.
func TestOutageEndedByTheProbeIsWatched(t *testing.T) {
	m, advance, pt := defaultsFixture(t)
	mustProbe(t, m, "eu")
	ordersFailBurst(t, m, advance, "eu")
	pt.fail("eu", errRefused)
	advance(time.Second)
	mustProbe(t, m, "eu")
	pt.heal("eu")
	advance(time.Second)
	st := mustProbe(t, m, "eu")
	if st.State != engine.Healthy || !st.Eligible || !st.WatchTradePath {
		t.Fatalf("back on the probe's success: want HEALTHY, eligible, its trade path watched; got %+v", st)
	}
	if st, _ = m.ObserveTradePath("eu", errTradePath); st.Eligible || st.State == engine.Healthy {
		t.Fatalf("a failed trade-path check: want it out, got %+v", st)
	}
	for range m.Config().FailureThreshold - 1 {
		advance(time.Second)
		mustProbe(t, m, "eu")
		st, _ = m.ObserveTradePath("eu", errTradePath)
	}
	if !st.GrayFailure || st.State != engine.Down {
		t.Fatalf("FailureThreshold failed trade-path checks while the probe passes: want a gray failure, got %+v", st)
	}
	if st, _ = m.ObserveTradePath("eu", nil); st.GrayFailure || st.State != engine.Healthy || !st.WatchTradePath {
		t.Fatalf("a trade-path success: want HEALTHY, still watched; got %+v", st)
	}
	if st = mustTraffic(t, m, "eu", nil); st.WatchTradePath {
		t.Fatalf("live traffic succeeded: want the watch over, got %+v", st)
	}
	// An outage the probe alone saw (no order failed) is not watched.
	pt.fail("us", errRefused)
	driveDown(t, m, "us")
	pt.heal("us")
	if st := mustProbe(t, m, "us"); st.State != engine.Healthy || st.WatchTradePath {
		t.Fatalf("an outage only the probe saw: %+v", st)
	}
}
