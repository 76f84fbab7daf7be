package integration_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/orderflow"
)

// The three runs that showed verdicts tuned to an imagined broker: a broker
// that does not deduplicate client order IDs, orders every 50 ms, eu
// blackholed for 7 s or 14 s while the client re-sends whatever MayResend
// allows, with a quarantine of 3 s (shorter than the blackhole) or 10 s.
// Copies the blackhole held land after the verdict; none may be booked
// twice, and every late landing must be reported (one after a final
// NOT_RECEIVED as an alarm, by the late-landing watch).
func TestNoDedupRowsNoDoubleBookingEveryLateLandingReported(t *testing.T) {
	var late atomic.Int64
	t.Run("rows", func(t *testing.T) {
		for _, row := range []struct{ quarantine, blackhole time.Duration }{
			{3 * time.Second, 7 * time.Second},
			{10 * time.Second, 7 * time.Second},
			{10 * time.Second, 14 * time.Second},
		} {
			t.Run(fmt.Sprintf("quarantine %v blackhole %v", row.quarantine, row.blackhole), func(t *testing.T) {
				late.Add(int64(noDedupRow(t, row.quarantine, row.blackhole)))
			})
		}
	})
	if t.Failed() {
		return
	}
	// The rows exist to make copies land late: a run without any proves
	// nothing about how they are reported.
	if late.Load() == 0 {
		t.Fatalf("%s: no late landing in the three rows: the blackhole held no copy", invScenario)
	}
}

// noDedupRow runs one row and returns its late landings.
func noDedupRow(t *testing.T, quarantine, blackhole time.Duration) int {
	sc := scenario(t, "blackhole")
	e := start(t, envOptions{broker: orderflow.BrokerPolicy{Dedup: "none", Fence: "none", Tokens: "off"},
		tune: func(tm *orderflow.Timing, _ budget) { tm.Quarantine = quarantine }})
	began := time.Now()
	e.tradingOn(e.primary, began, 10*time.Second)
	if err := sc.Inject(e.b); err != nil {
		t.Fatal(err)
	}
	e.c.Recorder().Note(orderflow.Info, "scenario", "FAULT eu blackholed for %v (quarantine %v)", blackhole, quarantine)
	// The fault's length is the row's: it is the schedule, not a wait for
	// something to happen.
	<-time.After(blackhole)
	if err := sc.Recover(e.b, e.primary); err != nil {
		t.Fatal(err)
	}
	healAt := time.Now()
	e.c.Recorder().Note(orderflow.Info, "scenario", "RECOVER eu: the copies its relay held are delivered now")
	// The late-landing watch looks again at growing intervals (1 s, 2 s,
	// 4 s, ... after a final verdict), and a provisional verdict's re-query
	// every quarantine: every copy delivered at the heal is found within a
	// few of them, about 10 s on a quiet host. On a starved one the lookups
	// of a re-query time out and it is retried (measured: 60 s of a 68 s
	// wait lost waiting for a CPU at load 12 on two cores), hence the budget.
	e.waitFor(60*time.Second, "every late landing reported (the watch's re-queries after the heal)", func() bool {
		if time.Since(healAt) < 2*time.Second {
			return false
		}
		sum := e.c.Check(orderflow.CheckOptions{Audit: e.b.Audit()})
		for _, l := range sum.LateLandings {
			if !l.Reported {
				return false
			}
		}
		return true
	})
	e.stopTrading()
	ctx, cancel := context.WithTimeout(context.Background(), e.bud.scaled(20*time.Second)+quarantine)
	pending := e.c.Drain(ctx)
	cancel()
	audit := e.b.Audit()
	sum := e.c.Check(orderflow.CheckOptions{Audit: audit})
	resent := 0
	for _, tr := range sum.Transports {
		resent += tr.Resent
	}
	afterFinal, reported := 0, 0
	for _, l := range sum.LateLandings {
		if l.AfterFinal {
			afterFinal++
		}
		if l.Reported {
			reported++
		} else {
			t.Errorf("INVARIANT every-late-landing-reported: order %s booked through %s at %v was never reported", l.Order, l.Region, l.BookedAt)
		}
	}
	if d := audit.Duplicates(); len(d) > 0 {
		t.Errorf("%s: the broker booked %d client order ID(s) twice (re-sent on MayResend: %d): %v", invNoDuplicate, len(d), resent, d)
	}
	for _, f := range sum.Findings {
		// A landing after a final NOT_RECEIVED is an alarm the watch
		// reported (checked above); anything else about duplicates or late
		// landings is a failure.
		if f.Invariant == orderflow.InvNoDuplicate || (f.Invariant == orderflow.InvLateLandings && !strings.Contains(f.Text, "AFTER A FINAL VERDICT")) {
			t.Errorf("orderflow.Check: %s", f)
		}
	}
	if len(pending) > 0 {
		t.Logf("%d order(s) still pending after the drain: %v", len(pending), pending)
	}
	t.Logf("quarantine %v, blackhole %v: %d orders, re-sent on MayResend %d, booked twice %d, late landings %d (reported %d, after a final verdict %d)",
		quarantine, blackhole, len(e.c.Orders()), resent, sum.Duplicates, len(sum.LateLandings), reported, afterFinal)
	if t.Failed() {
		t.Log(e.timeline())
	}
	return len(sum.LateLandings)
}
