package integration_test

import (
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// grayFault is how long the gray-failure tests keep eu broken: long enough
// for several cooldowns and probe-success streaks, so a failback gated only
// by the probe would come back into the broken primary.
const grayFault = 30 * time.Second

// grayFailure keeps a scenario's fault on eu for grayFault while trading,
// and asserts that after the first failover no order reaches eu while it is
// still broken: not one submission in the broker's audit through eu between
// the first switch away from eu and the fault's recovery.
func grayFailure(t *testing.T, kind string, why string) {
	sc := scenario(t, kind)
	sc.Halt = orderflow.May // finish() checks each halt against eligibility
	// The demo's failback rules (orderflow.DefaultTiming): a streak of 10
	// probe successes, which a flapping primary never builds, bounces that
	// double the cooldown and trip the flap limiter, and the gray-failure
	// wait that only the trade-path check cuts short.
	def := orderflow.DefaultTiming()
	e := start(t, envOptions{tune: func(tm *orderflow.Timing, _ budget) {
		tm.FailbackSuccessThreshold = def.FailbackSuccessThreshold
		tm.GrayFailbackWait, tm.BounceWindow, tm.FlapBounces = def.GrayFailbackWait, def.BounceWindow, def.FlapBounces
	}})
	began := time.Now()
	e.tradingOn(e.primary, began, 10*time.Second)
	scaleFlaps(&sc, e.bud.stretch)

	faultAt := time.Now()
	e.c.Recorder().Note(orderflow.Info, "scenario", "FAULT %s for %s", sc.Describe(), grayFault)
	if err := sc.Inject(e.b); err != nil {
		t.Fatal(err)
	}
	e.waitFor(15*time.Second, "failover to us", func() bool { return e.flowsOn(e.backup) })
	var firstSwitch time.Time
	for _, ev := range e.c.Recorder().Events(pathdialer.EventSwitch) {
		if ev.From == e.primary && !ev.Time.Before(faultAt) {
			firstSwitch = ev.Time
			break
		}
	}
	if firstSwitch.IsZero() {
		t.Fatalf("%s: flow is on us but no switch away from eu was recorded", invScenario)
	}
	if rest := grayFault - time.Since(faultAt); rest > 0 {
		time.Sleep(rest) // end-to-end: the fault's length is the point of the test
	}
	recoverAt := time.Now()
	if err := e.recover(&sc, e.primary); err != nil {
		t.Fatal(err)
	}
	e.c.Recorder().Note(orderflow.Info, "scenario", "RECOVER eu")

	// The claim: zero orders sent to eu while it was still broken, after the
	// first failover. A copy sent before the switch that reaches eu after it
	// (held on the way: a late landing, which finish() checks) was not sent
	// after the failover: a booking attempt on eu counts when its order had
	// an attempt sent after the switch and before the booking (or is not the
	// client's at all).
	attempts := map[string][]orderflow.Attempt{}
	for _, o := range e.c.Orders() {
		attempts[o.ClOrdID] = o.Attempts
	}
	sentAfterSwitch := func(r simbroker.Record) bool {
		as, ok := attempts[r.ClientOrderID]
		if !ok {
			return true
		}
		for _, a := range as {
			if a.Sent && a.At.After(firstSwitch) && !a.At.After(r.Time) {
				return true
			}
		}
		return false
	}
	var onEU simbroker.AuditLog
	for _, r := range e.b.Audit().Orders() {
		if r.Region == e.primary && r.Time.After(firstSwitch) && r.Time.Before(recoverAt) && sentAfterSwitch(r) {
			onEU = append(onEU, r)
		}
	}
	if len(onEU) > 0 {
		t.Errorf("%s: %d order(s) reached eu while it was still broken, after the first failover at %s (first: %s %s at %s, %s)",
			invScenario, len(onEU), e.c.Recorder().Rel(firstSwitch), onEU[0].ClientOrderID, onEU[0].Service,
			e.c.Recorder().Rel(onEU[0].Time), onEU[0].Outcome)
	}
	switches := 0
	for _, ev := range e.c.Recorder().Events(pathdialer.EventSwitch) {
		if ev.Time.After(firstSwitch) && ev.Time.Before(recoverAt) {
			switches++
		}
	}
	if switches > 0 {
		t.Errorf("%s: %d switch(es) while eu was still broken after the first failover (a failback into a broken primary)", invScenario, switches)
	}
	// The timeline says why failback waited.
	var tl strings.Builder
	e.c.Recorder().WriteTimeline(&tl, false)
	if !strings.Contains(tl.String(), "failback refused") || !strings.Contains(tl.String(), why) {
		t.Errorf("%s: the timeline does not say why failback waited (want \"failback refused\" and %q)", invScenario, why)
	}
	e.waitFor(10*time.Second, "orders acknowledged after recovery", func() bool {
		return e.ackedSince(orderflow.REST, e.active(), recoverAt) >= 3
	})
	sum := e.finish(&sc, faultAt, false)
	t.Logf("%s over %s: %d orders, %d switch(es), %d halt(s)", kind, grayFault, len(e.c.Orders()), len(sum.Switches), sum.Halts)
}

// scaleFlaps stretches the period of every flapping fault of sc as the
// test's budget stretches the probe interval: what the scenario means is a
// fault faster than the probes (500 ms apart, a 700 ms flap, on a quiet
// host), which a probe's streak of successes cannot span. With probes
// 1.3 s apart and the flap left at 700 ms, successive probes drift through
// the flap's phases a little at a time and see it up for several rounds in
// a row: the probe can no longer see the flapping at all (seen at budgets
// ×2.7 and ×2.9: failback into eu, then bounces).
func scaleFlaps(sc *orderflow.Scenario, stretch float64) {
	for _, faults := range sc.Faults {
		for svc, f := range faults {
			if fl, ok := f.(simbroker.Flap); ok {
				fl.Period = scale(fl.Period, stretch)
				faults[svc] = fl
			}
		}
	}
}

// Partial for 30 s: eu's probe passes while its orders fail. After the
// failover on live-traffic evidence, failback must wait for evidence from
// the trade path, not for the probe that could not see the failure.
func TestPartialFor30s(t *testing.T) { grayFailure(t, "partial", "gray failure") }

// Flapping for 30 s: eu down and up every 700 ms. Each bounce lengthens the
// failback wait and the flap limiter trips: no failback into eu while it
// flaps.
func TestFlappingFor30s(t *testing.T) { grayFailure(t, "flapping", "not yet stable") }
