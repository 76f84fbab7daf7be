package integration_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// covered maps every orderflow fault kind to its test here: a kind added to
// orderflow without an end-to-end test fails TestEveryFaultKindCovered.
var covered = map[string]string{
	"blackhole":       "TestBlackhole",
	"down":            "TestDown",
	"503":             "Test503",
	"latency":         "TestLatency",
	"partial":         "TestPartial",
	"unknown-outcome": "TestUnknownOutcome",
	"flapping":        "TestFlapping",
	"both":            "TestBoth",
}

func TestEveryFaultKindCovered(t *testing.T) {
	for _, k := range orderflow.FaultKinds() {
		if covered[k] == "" {
			t.Errorf("orderflow fault kind %q has no end-to-end test in integration/", k)
		}
	}
}

// Blackhole on every service of eu: silence, no error. Must fail over, fence
// eu, reconcile, release on us, then fail back once eu is healthy.
func TestBlackhole(t *testing.T) {
	runScenario(t, scenario(t, "blackhole"), envOptions{}, failedOver)
}

// Down: dials refused, live connections reset.
func TestDown(t *testing.T) {
	runScenario(t, scenario(t, "down"), envOptions{}, failedOver)
}

// 503 on every /v1 request (the probe included) and on WebSocket handshakes;
// FIX untouched. The probe sees it: must fail over.
func Test503(t *testing.T) {
	_, sum := runScenario(t, scenario(t, "503"), envOptions{}, failedOver)
	if len(sum.Switches) == 0 {
		t.Errorf("%s: 503 on eu's probe did not fail over", invScenario)
	}
}

// Latency: +40 ms each way on every chunk of eu. With the latency-aware
// machine on (DegradedLatency below a fresh-TLS probe's latency), eu is
// DEGRADED evidence and, held DEGRADED past MaxDegradedDuration (or past the
// probe timeout), flow moves to us. Nothing may be lost or duplicated while
// orders are slow.
func TestLatency(t *testing.T) {
	sc := scenario(t, "latency")
	// Both bounds scale with the test's budget: on a loaded host a healthy
	// probe is as late as the budget says, and us must not look DEGRADED.
	_, sum := runScenario(t, sc, envOptions{tune: func(tm *orderflow.Timing, b budget) {
		tm.DegradedLatency = b.scaled(120 * time.Millisecond)
		tm.MaxDegradedDuration = b.scaled(time.Second)
	}}, func(e *env, faultAt time.Time) {
		e.waitFor(10*time.Second, "failover to us, or 20 orders acknowledged by slow eu", func() bool {
			return e.flowsOn(e.backup) && e.ackedSince("", e.backup, faultAt) >= 5 || e.ackedSince("", e.primary, faultAt) >= 20
		})
	})
	t.Logf("latency: %d switch(es)", len(sum.Switches))
}

// Partial: eu's probe stays green while order entry answers 503 and FIX
// orders are rejected. Only passive signals can take eu DOWN. Either way:
// every 503'd order is reconciled (NOT_RECEIVED, then re-sent with the same
// ID), and nothing is booked twice.
func TestPartial(t *testing.T) {
	sc := scenario(t, "partial")
	e, sum := runScenario(t, sc, envOptions{}, func(e *env, faultAt time.Time) {
		e.waitFor(10*time.Second, "failover to us, or eu refusing orders (503) and rejecting FIX orders", func() bool {
			if e.flowsOn(e.backup) && e.ackedSince("", e.backup, faultAt) >= 5 {
				return true
			}
			return len(e.auditOrders("eu", simbroker.OutcomeUnavailable, faultAt)) >= 5 &&
				len(e.auditOrders("eu", simbroker.OutcomeRejected, faultAt)) >= 1
		})
	})
	unavailable := e.auditOrders("eu", simbroker.OutcomeUnavailable, time.Time{})
	if len(unavailable) == 0 {
		t.Errorf("%s: partial fault refused no order on eu", invScenario)
	}
	// Every refused REST order was settled NOT_RECEIVED (then re-sent) or
	// answered later: none lost.
	byID := map[string]orderflow.OrderRecord{}
	for _, o := range e.c.Orders() {
		byID[o.ClOrdID] = o
	}
	for _, r := range unavailable {
		if o := byID[r.ClientOrderID]; !o.Answered() {
			t.Errorf("%s: %s refused with 503 on eu and never settled", invNoLost, r.ClientOrderID)
		}
	}
	for _, n := range sum.Notes {
		t.Log(n)
	}
}

// Unknown outcome: eu books the next 3 REST and 2 FIX orders and cuts the
// connection before answering. Each must end settled by reconcile (booked:
// FILLED or RESTING), submitted exactly once, never re-sent under any ID.
func TestUnknownOutcome(t *testing.T) {
	sc := scenario(t, "unknown-outcome")
	e, _ := runScenario(t, sc, envOptions{}, func(e *env, faultAt time.Time) {
		// Two unknown outcomes in a row take eu DOWN (passive signals) and
		// the switch reconciles them; the fault is cleared once flow is on
		// us. A FIX order cut with no switch after it (the session logs on
		// again on the same endpoint) keeps its ticket in flight and is never
		// reconciled: a transports/fix problem the chaos run exposes.
		e.waitFor(10*time.Second, "failover to us, or 3 REST and 2 FIX orders booked and cut on eu", func() bool {
			return e.flowsOn(e.backup) && e.ackedSince("", e.backup, faultAt) >= 3 ||
				len(e.auditOrders("eu", simbroker.OutcomeCut, faultAt)) >= 5
		})
	})
	cut := e.auditOrders("eu", simbroker.OutcomeCut, time.Time{})
	if len(cut) == 0 {
		t.Errorf("%s: no order was booked and cut on eu", invScenario)
	}
	subs := e.b.Audit().Submissions()
	byID := map[string]orderflow.OrderRecord{}
	for _, o := range e.c.Orders() {
		byID[o.ClOrdID] = o
	}
	for _, r := range cut {
		o := byID[r.ClientOrderID]
		if !o.Acked && !(o.Settled && (o.Fate == pathdialer.FateFilled || o.Fate == pathdialer.FateResting)) {
			t.Errorf("%s: %s (%s) was booked then cut; client: acked=%v settled=%v fate=%s", invNoLost, r.ClientOrderID, r.Service, o.Acked, o.Settled, o.Fate)
		}
		if o.Resent != 0 {
			t.Errorf("%s: %s was booked but re-sent %d time(s) after reconcile", invNoDuplicate, r.ClientOrderID, o.Resent)
		}
		if r.Service == string(simbroker.REST) && subs[r.ClientOrderID] != 1 {
			t.Errorf("%s: REST order %s of unknown outcome was submitted %d times (must never be retried)", invNoDuplicate, r.ClientOrderID, subs[r.ClientOrderID])
		}
	}
}

// Flapping: eu down and up every 700 ms. Failover is never gated; failback
// is gated by cooldown, consecutive successes and the flap limiter.
func TestFlapping(t *testing.T) {
	runScenario(t, scenario(t, "flapping"), envOptions{}, failedOver)
}

// Both regions blackholed: nowhere to go. Trading must halt loudly
// (ErrTradingHalted at once, nothing sent), and resume through reconcile
// when us comes back.
func TestBoth(t *testing.T) {
	sc := scenario(t, "both")
	runScenario(t, sc, envOptions{}, func(e *env, faultAt time.Time) {
		e.waitFor(10*time.Second, "HALT (no eligible target)", func() bool { return e.gate() == pathdialer.GateHalted })
		// Halt is loud: an order is refused at once, not held.
		took, err := e.placeOnce("halt-probe-1")
		if !errors.Is(err, orderflow.ErrNotSent) || !errors.Is(err, pathdialer.ErrTradingHalted) || order(e, "halt-probe-1").NotSent != "trading halted" {
			t.Errorf("%s: an order placed while halted returned %v (record %+v), want ErrNotSent because trading halted", invHalt, err, order(e, "halt-probe-1"))
		}
		if took > e.bud.scaled(500*time.Millisecond) {
			t.Errorf("%s: an order placed while halted took %s to be refused (must be at once)", invHalt, took)
		}
		if _, ok := e.b.Order("halt-probe-1"); ok {
			t.Errorf("%s: an order refused by the halt was booked", invHalt)
		}
		// Still halted while both are blackholed: the halt must not end on
		// its own while no target is eligible.
		n := len(e.c.Orders())
		e.waitFor(5*time.Second, "orders refused during the halt", func() bool { return len(e.c.Orders()) >= n+10 })
		if g := e.gate(); g != pathdialer.GateHalted {
			t.Errorf("%s: gate %v while every region is blackholed", invHalt, g)
		}
		recoverUS := time.Now()
		e.c.Recorder().Note(orderflow.Info, "scenario", "RECOVER us (eu still blackholed)")
		if err := e.recover(&sc, "us"); err != nil {
			t.Fatal(err)
		}
		e.waitFor(10*time.Second, "the halt to end on us", func() bool { return e.flowsOn(e.backup) })
		e.tradingOn(e.backup, recoverUS, 10*time.Second)
	})
}

// monitorPartition is the specification's split case: the monitor's probe relay to eu
// is blackholed (PartitionMonitor) while eu's trading paths (rest, ws, fix)
// work.
//
// What should happen, and what this asserts:
//   - While orders flow on eu, every successful order is live evidence that
//     eu's trade path works: the Path hears it (passive reports) and eu never
//     reaches FailureThreshold consecutive failures, so probes alone flip it
//     HEALTHY→DEGRADED→HEALTHY and nothing switches. Orders keep being
//     acknowledged by eu. (Logged, not required: a slow order under -race
//     could legitimately tip it over.)
//   - Once trading is quiet, only the probe speaks: with one local monitor
//     the engine cannot tell the partition from an outage and WILL fail over.
//     The fence is what makes that safe: after it nothing is booked through
//     eu, nothing is booked twice, no order is lost.
//   - When the monitor reaches eu again, flow fails back (gated).
func monitorPartition(t *testing.T, policy simbroker.SessionPolicy) (*env, orderflow.Summary) {
	e := start(t, envOptions{policy: policy})
	began := time.Now()
	e.tradingOn(e.primary, began, 10*time.Second)
	sc := orderflow.Scenario{Kind: "monitor-partition", Primary: "eu", Backup: "us",
		Faults:   map[string]map[simbroker.Service]simbroker.Fault{"eu": {simbroker.Probe: simbroker.Blackhole{}}},
		Failover: orderflow.Must, Failback: orderflow.Must, Halt: orderflow.May,
		Explain: "eu's probe relay blackholed (monitor-only partition); trading paths to eu work"}

	faultAt := time.Now()
	e.c.Recorder().Note(orderflow.Info, "scenario", "FAULT %s (PartitionMonitor)", sc.Describe())
	if err := e.b.PartitionMonitor("eu"); err != nil {
		t.Fatal(err)
	}
	// Phase 1: trading on eu while its monitor is cut off.
	e.waitFor(10*time.Second, "6 failed probes of eu while orders flow there", func() bool {
		return e.probeFailures("eu", faultAt) >= 6
	})
	if n := e.ackedSince("", "eu", faultAt); n < 10 {
		t.Errorf("%s: eu's trading path works during a monitor-only partition, but only %d orders were acknowledged there", invScenario, n)
	}
	if e.active() == "eu" {
		t.Logf("monitor-only partition with live traffic: %d failed probes of eu, %d orders acknowledged by eu, no switch (live traffic kept eu HEALTHY)",
			e.probeFailures("eu", faultAt), e.ackedSince("", "eu", faultAt))
	} else {
		t.Logf("monitor-only partition with live traffic: switched to %s anyway", e.active())
	}
	e.splitIsReal()

	// Phase 2: trading quiet; the probe alone takes eu DOWN: fence, switch.
	e.stopTrading()
	quietAt := time.Now()
	e.waitFor(10*time.Second, "failover to us once only the probe speaks", func() bool { return e.flowsOn(e.backup) })
	e.trade("j")
	e.tradingOn(e.backup, quietAt, 10*time.Second)
	e.judgedBefore(time.Now(), 15*time.Second)

	// Heal: failback.
	e.c.Recorder().Note(orderflow.Info, "scenario", "RECOVER eu probe relay")
	if err := e.b.SetFault("eu", simbroker.Probe, simbroker.None{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor(15*time.Second, "failback to eu", func() bool { return e.flowsOn(e.primary) })
	e.tradingOn(e.primary, time.Now(), 10*time.Second)
	sum := e.finish(&sc, faultAt, false)
	if len(sum.Switches) == 0 || sum.Switches[0].From != "eu" || sum.Switches[0].To != "us" {
		t.Errorf("%s: with one local monitor a quiet client must fail over eu→us under a monitor-only partition, switches %+v", invScenario, sum.Switches)
	}
	t.Logf("monitor-partition (%s): %d orders, %d switch(es), took %s", policy, len(e.c.Orders()), len(sum.Switches), time.Since(began).Round(10*time.Millisecond))
	return e, sum
}

// probeFailures counts failed probes of endpoint since t.
func (e *env) probeFailures(endpoint string, t time.Time) int {
	n := 0
	for _, ev := range e.c.Recorder().Events(pathdialer.EventProbe) {
		if ev.Endpoint == endpoint && ev.Err != nil && !ev.Time.Before(t) {
			n++
		}
	}
	return n
}

// splitIsReal: eu's trading relay answers while its probe relay is cut.
func (e *env) splitIsReal() {
	t := e.t
	hc := e.b.HTTPClient()
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.b.Region("eu").RESTURL()+"/v1/account", nil)
	req.Header.Set("X-API-Key", e.b.APIKey())
	resp, err := hc.Do(req)
	if err != nil {
		t.Errorf("%s: eu's trading path should still work during a monitor-only partition: %v", invScenario, err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%s: eu's trading path answered %d during a monitor-only partition", invScenario, resp.StatusCode)
	}
}

// TestMonitorPartition: concurrent sessions (the broker does not fence; the
// client's own fence is all there is).
func TestMonitorPartition(t *testing.T) {
	monitorPartition(t, simbroker.SessionsConcurrent)
}

// TestMonitorPartitionBrokerFences: one session per credential (engine
// BrokerFencesAtLogon): the FIX logon through us makes the broker drop the session
// still held through eu, and the audit records that fence.
func TestMonitorPartitionBrokerFences(t *testing.T) {
	e, _ := monitorPartition(t, simbroker.SessionOnePerCredential)
	audit := e.b.Audit()
	logonsUS := audit.Filter(func(r simbroker.Record) bool { return r.Kind == simbroker.KindLogon && r.Region == "us" })
	if len(logonsUS) == 0 {
		t.Errorf("%s: the FIX session never logged on through us", invFIX)
	}
	fences := audit.Filter(func(r simbroker.Record) bool { return r.Kind == simbroker.KindFence })
	refused := audit.Filter(func(r simbroker.Record) bool { return r.Kind == simbroker.KindRefused })
	t.Logf("broker audit: %d FIX logon(s) through us, %d broker fence(s), %d refused logon(s)", len(logonsUS), len(fences), len(refused))
	for _, f := range fences {
		t.Logf("broker fence: %s %s %s", f.Region, f.ConnID, f.Detail)
	}
}

func order(e *env, id string) orderflow.OrderRecord {
	for _, o := range e.c.Orders() {
		if o.ClOrdID == id {
			return o
		}
	}
	return orderflow.OrderRecord{}
}
