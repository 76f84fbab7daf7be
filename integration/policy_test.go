package integration_test

import (
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// policyRun is one brief run against a broker with policy p: trade on eu,
// blackhole eu while orders are on the wire (the relay holds them), fail
// over, heal eu once reconcile has judged the held orders, so the held
// copies reach eu late, and check the book. The invariants (finish) are the
// same in every cell; what differs is what the library can know: with the
// broker's fence or tokens the late copies are refused, with its
// deduplication they are one order, with none of them each late landing must
// be reported and no order re-sent before its NOT_RECEIVED is final.
func policyRun(t *testing.T, p orderflow.BrokerPolicy) orderflow.Summary {
	sc := scenario(t, "blackhole")
	sc.Failback = orderflow.May // the point here is the book, not the failback
	sc.Halt = orderflow.May     // finish() checks each halt against eligibility
	// The quarantine must outlast the longest a copy can be held on the way:
	// here from before the fault until the heal below, which waits for every
	// service's reconcile (the FIX session's logon through us can take the
	// broker's heartbeat timeout, ~3 s). With the 3 s default the heal came
	// after the REST quarantine had ended, while its re-query was looking
	// orders up one by one: a copy landed between its lookup (404) and the
	// re-query's return, the verdict was made final, the client re-sent, and a
	// broker without deduplication booked the order twice.
	// On a loaded host everything before the heal takes longer (detection,
	// reconcile, logon): the quarantine scales with the test's budget.
	var quarantine time.Duration
	e := start(t, envOptions{broker: p, tune: func(tm *orderflow.Timing, b budget) {
		quarantine = b.scaled(8 * time.Second)
		tm.Quarantine = quarantine
		// No failback: what these runs judge is the book after the late
		// copies, and a failback on a loaded host (the backup's probes late
		// while eu's pass) is a second switch with a reconcile of its own,
		// whose held FIX orders once outlasted the test's drain.
		tm.Cooldown = time.Hour
	}})
	began := time.Now()
	e.tradingOn(e.primary, began, 10*time.Second)

	faultAt := time.Now()
	e.c.Recorder().Note(orderflow.Info, "scenario", "FAULT %s (policy %s)", sc.Describe(), p)
	if err := sc.Inject(e.b); err != nil {
		t.Fatal(err)
	}
	failedOver(e, faultAt)
	e.waitFor(10*time.Second, "the reconcile of the orders held on eu", func() bool {
		for _, ev := range e.c.Recorder().Events(pathdialer.EventReconcileSuccess) {
			if ev.Time.After(faultAt) {
				return true
			}
		}
		return false
	})
	healAt := time.Now()
	if err := e.recover(&sc, e.primary); err != nil {
		t.Fatal(err)
	}
	e.c.Recorder().Note(orderflow.Info, "scenario", "RECOVER eu: the copies its relay held are delivered now, after the fence")
	// Let the quarantine pass (the re-query judges the provisional verdicts)
	// while trading goes on, wherever it is.
	// The wait's quiet-host budget, 20 s, scaled, is at least q plus a
	// scaled 10 s for the orders.
	q := quarantine + 2*time.Second
	e.waitFor(20*time.Second, "the quarantine to pass and orders answered after it", func() bool {
		return time.Since(healAt) > q && e.ackedSince(orderflow.REST, e.active(), healAt.Add(q)) >= 3
	})
	sum := e.finish(&sc, faultAt, false)

	late := e.b.Audit().Orders().Filter(func(r simbroker.Record) bool {
		return r.Region == e.primary && r.Time.After(healAt) && r.Time.Before(healAt.Add(2*time.Second)) && r.Service != string(simbroker.Probe)
	})
	rep, unrep := sum.LateReported()
	fixLookups := e.b.Audit().Lookups().Filter(func(r simbroker.Record) bool { return r.Service == string(simbroker.FIX) })
	t.Logf("policy %s: %d orders; %d copies reached eu within 2 s of the heal; late landings %d reported / %d unreported; duplicates %d (%d after an allowed re-send); two live paths %d; FIX status requests answered by the broker %d",
		p, len(e.c.Orders()), len(late), rep, unrep, sum.Duplicates, sum.DuplicatesAllowed, sum.TwoLivePaths, len(fixLookups))
	return sum
}

func TestPolicyNoDedupNoFence(t *testing.T) {
	policyRun(t, orderflow.BrokerPolicy{Dedup: "none", Fence: "none", Tokens: "off"})
}

func TestPolicyNoDedupFenceEnforced(t *testing.T) {
	policyRun(t, orderflow.BrokerPolicy{Dedup: "none", Fence: "enforced", Tokens: "off"})
}

func TestPolicyNoDedupTokensChecked(t *testing.T) {
	policyRun(t, orderflow.BrokerPolicy{Dedup: "none", Fence: "none", Tokens: "checked"})
}

func TestPolicyDedupAcross(t *testing.T) {
	policyRun(t, orderflow.BrokerPolicy{Dedup: "across", Fence: "none", Tokens: "off"})
}
