package pathdialer_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// copyBook is a broker book that deduplicates nothing (cmd/simbroker -dedup
// none): every copy that reaches it is booked, so a resend of an order whose
// first copy lands too is an order booked twice.
type copyBook struct {
	mu       sync.Mutex
	copies   map[string]int
	landedAt map[string]time.Time
	recs     []pathdialer.Reconciliation
}

func (b *copyBook) land(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.copies == nil {
		b.copies, b.landedAt = map[string]int{}, map[string]time.Time{}
	}
	b.copies[id]++
	if _, ok := b.landedAt[id]; !ok {
		b.landedAt[id] = time.Now()
	}
}

func (b *copyBook) reconcile(_ context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recs = append(b.recs, r)
	var out []pathdialer.Settlement
	for _, t := range r.Tickets {
		f := pathdialer.FateNotReceived
		if b.copies[t.OrderID] > 0 {
			f = pathdialer.FateFilled
		}
		out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: f})
	}
	return out, nil
}

func (b *copyBook) bookedTwice() (n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.copies {
		if c > 1 {
			n++
		}
	}
	return n
}

// The three runs of a user following the documented rule (resend only when
// MayResend says Allowed, under the same client order ID) against a broker
// that books every copy, orders every 50 ms, the active region blackholed and
// each order's copy held by it for the blackhole's length: no order is booked
// twice, and every copy that lands is reported (EventLateLanding, Snapshot),
// as an alarm when it landed after the verdict was final.
func TestNoOrderBookedTwiceFollowingMayResend(t *testing.T) {
	rows := []struct {
		quarantine, blackhole time.Duration
		// wantAfterFinal: how many of the 13 landings come after a final
		// verdict (-1: any number; the copies land while the re-query runs,
		// so which side of it each lands on is the scheduler's order at
		// one instant; each must be flagged as it happened, checked below;
		// TestLateLandingWatchKeepsLookingWithinBudget has a landing well
		// after the final verdict).
		wantAfterFinal int
	}{
		{3 * time.Second, 7 * time.Second, -1},
		{10 * time.Second, 7 * time.Second, 0},
		{10 * time.Second, 14 * time.Second, -1},
	}
	const orders = 13
	for _, row := range rows {
		t.Run(fmt.Sprintf("quarantine=%v/blackhole=%v", row.quarantine, row.blackhole), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bk := &copyBook{}
				h := newHarness(t, func(c *pathdialer.Config) {
					// The user claims copies are held no longer than the
					// quarantine: the blackhole holds them longer.
					c.Venue, c.MaxCopyHold, c.Quarantine = noDedupVenue(), row.quarantine, row.quarantine
					c.Reconcile = bk.reconcile
				})
				defer h.close()
				h.start()
				h.probes.set("eu", probeBlackhole)
				var wg sync.WaitGroup
				ids := make([]string, orders)
				for i := range ids {
					ids[i] = fmt.Sprintf("o-%02d", i)
					mustAcquire(t, h.p, ids[i]) // sent into the blackhole: in flight
					wg.Go(func() {
						time.Sleep(row.blackhole) // the blackhole delivers what it held
						bk.land(ids[i])
					})
					time.Sleep(50 * time.Millisecond)
				}
				resent := 0
				for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
					for _, id := range ids {
						if r, err := h.p.MayResend(id); err == nil && r.Allowed {
							bk.land(r.OrderID) // the resend: a second copy at this broker
							resent++
						}
					}
				}
				wg.Wait()
				synctest.Wait()
				if n := bk.bookedTwice(); n != 0 || resent != 0 {
					t.Errorf("%d orders booked twice after %d resends allowed by MayResend", n, resent)
				}
				// Every landing reported, each once, flagged as it happened.
				reported := map[string]pathdialer.Event{}
				for _, e := range h.rec.all() {
					if e.Kind == pathdialer.EventLateLanding {
						if _, dup := reported[e.OrderID]; dup {
							t.Errorf("late landing of %s reported twice", e.OrderID)
						}
						reported[e.OrderID] = e
					}
				}
				afterFinal := 0
				for _, id := range ids {
					e, ok := reported[id]
					if !ok {
						t.Errorf("the copy of %s landed but was never reported", id)
						continue
					}
					r, err := h.p.MayResend(id)
					v := r.Verdict
					if err != nil || r.Allowed || !v.LateLanding || v.Fate != pathdialer.FateFilled {
						t.Errorf("MayResend(%s) after its landing = %+v, %v", id, r, err)
					}
					alarm := strings.HasPrefix(e.Cause, "ALARM: booked after a final verdict")
					if v.AfterFinal != !v.FinalAt.IsZero() || alarm != v.AfterFinal || len(e.Settlements) != 1 || e.Settlements[0].Fate != pathdialer.FateFilled {
						t.Errorf("%s: verdict %+v, event %v: the alarm must say whether the verdict was final", id, v, e)
					}
					if v.AfterFinal {
						afterFinal++
						if bk.landedAt[id].Before(v.FinalAt) { // at the same instant: booked after the lookup that found nothing
							t.Errorf("%s flagged after final, but landed at %v, final at %v", id, bk.landedAt[id], v.FinalAt)
						}
						if !strings.Contains(e.Settlements[0].Detail, "AFTER A FINAL VERDICT") {
							t.Errorf("%s: settlement detail %q does not say so", id, e.Settlements[0].Detail)
						}
					}
				}
				if row.wantAfterFinal >= 0 && afterFinal != row.wantAfterFinal {
					t.Errorf("%d landings after a final verdict, want %d", afterFinal, row.wantAfterFinal)
				}
				snap := h.p.Snapshot()
				if snap.LateLandings != orders || snap.LateAfterFinal != uint64(afterFinal) || snap.Watched != 0 {
					t.Errorf("Snapshot late landings %d, after final %d, watched %d; want %d, %d, 0", snap.LateLandings, snap.LateAfterFinal, snap.Watched, orders, afterFinal)
				}
				t.Logf("resends allowed %d, booked twice 0, late landings %d (%d after a final verdict)", resent, len(reported), afterFinal)
			})
		})
	}
}

// After a final NOT_RECEIVED the order stays watched: looked up again at
// growing intervals until the venue's horizon (15 min), never faster than the
// venue's lookup budget allows, and a copy that lands minutes after the final
// verdict is reported as an alarm. MayResend names the venue fact that keeps
// it from allowing a resend.
func TestLateLandingWatchKeepsLookingWithinBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk := &copyBook{}
		v := noDedupVenue()
		// 60 lookups a minute: lookups may use a quarter, one every 4 s.
		v.LookupBudget = venue.Documented(venue.Budget{Requests: 60, Per: time.Minute, LookupCost: 1, Scope: venue.PerAccount, Exceeded: venue.Throttled}, testBrokerDoc, "60 requests per minute per account")
		const interval = 4 * time.Second
		if got := v.LookupInterval(); got != interval {
			t.Fatalf("LookupInterval = %v, want %v", got, interval)
		}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue, c.MaxCopyHold, c.Quarantine = v, 2*time.Second, 2*time.Second
			c.Reconcile = bk.reconcile
		})
		defer h.close()
		h.start()
		h.probes.set("eu", probeBlackhole)
		ids := []string{"o-1", "o-2", "o-late"}
		for _, id := range ids {
			mustAcquire(t, h.p, id)
		}
		sent := time.Now()
		h.await(pathdialer.EventRelease, nil)
		go func() {
			time.Sleep(5 * time.Minute) // held far longer than MaxCopyHold claims
			bk.land("o-late")
		}()
		time.Sleep(10 * time.Second)
		r, err := h.p.MayResend("o-1")
		if err != nil || r.Allowed || !r.Verdict.Final || r.Verdict.WatchUntil.Sub(r.Verdict.FinalAt) != 15*time.Minute ||
			!strings.Contains(r.Reason, "does not check client order IDs") || !strings.Contains(r.Reason, testBrokerDoc) || !strings.Contains(r.Reason, "watched for a late landing") {
			t.Fatalf("MayResend of a final NOT_RECEIVED at a venue without dedup or fence = %+v, %v", r, err)
		}
		if snap := h.p.Snapshot(); snap.Watched != 3 {
			t.Fatalf("Snapshot.Watched = %d after the final verdicts, want 3", snap.Watched)
		}
		finalAt := r.Verdict.FinalAt
		time.Sleep(17*time.Minute - time.Since(sent))
		synctest.Wait()

		late := h.await(pathdialer.EventLateLanding, nil)
		if late.OrderID != "o-late" || !strings.HasPrefix(late.Cause, "ALARM: booked after a final verdict") {
			t.Fatalf("late landing = %v", late)
		}
		if d := late.Time.Sub(bk.landedAt["o-late"]); d < 0 || d > 5*time.Minute+interval*3 {
			t.Errorf("the landing was reported %v after it happened: more than the watch's longest gap", d)
		}
		snap := h.p.Snapshot()
		if snap.Watched != 0 || snap.LateLandings != 1 || snap.LateAfterFinal != 1 {
			t.Errorf("Snapshot watched %d, late %d, after final %d; want 0, 1, 1", snap.Watched, snap.LateLandings, snap.LateAfterFinal)
		}
		// The re-queries: spaced within the budget, growing, to the horizon.
		bk.mu.Lock()
		var rq []pathdialer.Reconciliation
		for _, r := range bk.recs {
			if r.Reason == pathdialer.ReasonRequery {
				rq = append(rq, r)
			}
		}
		bk.mu.Unlock()
		starts := requeryStarts(h.rec.all())
		if len(starts) != len(rq) || len(rq) < 5 {
			t.Fatalf("%d re-query starts, %d re-queries: want the same, at least 5", len(starts), len(rq))
		}
		var last time.Time
		for i := 1; i < len(starts); i++ {
			if gap, need := starts[i].Time.Sub(starts[i-1].Time), interval*time.Duration(len(starts[i-1].Tickets)); gap < need {
				t.Errorf("re-query %d came %v after one that asked about %d orders: faster than the budget (%v)", i, gap, len(starts[i-1].Tickets), need)
			}
		}
		var looks []time.Duration
		for _, s := range starts {
			for _, tk := range s.Tickets {
				if tk.OrderID == "o-1" {
					looks = append(looks, s.Time.Sub(finalAt))
				}
			}
		}
		for i := 2; i < len(looks); i++ {
			if looks[i]-looks[i-1] < looks[i-1]-looks[i-2] && looks[i]-looks[i-1] < 5*time.Minute && i != len(looks)-1 {
				t.Errorf("watch looks at %v: the gaps shrink", looks)
			}
		}
		if n := len(looks); n == 0 || looks[n-1] < 15*time.Minute || looks[n-1] > 15*time.Minute+time.Minute {
			t.Errorf("watch looks of o-1 at %v after the final verdict: the last must be at the 15 min horizon", looks)
		}
		last = starts[len(starts)-1].Time
		if last.Sub(finalAt) > 16*time.Minute {
			t.Errorf("re-queries went on until %v after the verdict, past the horizon", last.Sub(finalAt))
		}
		if r, _ := h.p.MayResend("o-1"); r.Allowed || !strings.Contains(r.Reason, "watch ended") {
			t.Errorf("MayResend after the watch = %+v", r)
		}
		t.Logf("o-1 looked up at %v after its final verdict", looks)
	})
}

// requeryStarts returns the re-queries' start events in order.
func requeryStarts(evs []pathdialer.Event) []pathdialer.Event {
	var out []pathdialer.Event
	for _, e := range evs {
		if e.Kind == pathdialer.EventReconcileStart && e.Cause == pathdialer.ReasonRequery {
			out = append(out, e)
		}
	}
	return out
}

// A provisional NOT_RECEIVED is looked up again early, not only at the
// quarantine's end: a positive lookup is proof at any time. A copy the
// broker books after the switch's lookup said "not found" (its server was
// still booking when the connection reset) is reported within MaxCopyHold
// plus one budgeted lookup interval of its booking; a copy held by the old
// path until it recovers is reported about one lookup interval after the
// recovery is seen. The verdict stays provisional until the quarantine ends,
// and the looks keep within the venue's budget.
func TestLateLandingReportedWithinCopyHold(t *testing.T) {
	const (
		hold       = 3 * time.Second
		quarantine = 2 * time.Minute
		interval   = venue.UnknownLookupInterval // the profile's budget is unknown
	)
	rows := []struct {
		name string
		// land books the copy; it returns when the landing must be reported
		// by.
		land func(h *harness, bk *copyBook, found time.Time) (deadline time.Time)
	}{
		{"booked 20ms after the lookup", func(h *harness, bk *copyBook, found time.Time) time.Time {
			time.Sleep(20 * time.Millisecond)
			bk.land("o-1")
			return time.Now().Add(hold + interval)
		}},
		{"booked 40s later", func(h *harness, bk *copyBook, found time.Time) time.Time {
			time.Sleep(40 * time.Second)
			bk.land("o-1")
			return time.Now().Add(hold + interval)
		}},
		{"held until the old path recovers", func(h *harness, bk *copyBook, found time.Time) time.Time {
			// A longer MaxCopyHold than the path honours: the copy is
			// released when eu comes back, and found a lookup interval
			// after its probe says so.
			time.Sleep(25 * time.Second)
			h.probes.set("eu", probeOK)
			bk.land("o-1")
			back := h.await(pathdialer.EventStateChange, func(e pathdialer.Event) bool {
				return e.Endpoint == "eu" && e.State == engine.Healthy
			})
			return back.Time.Add(interval + 100*time.Millisecond)
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bk := &copyBook{}
				h := newHarness(t, func(c *pathdialer.Config) {
					c.Venue, c.MaxCopyHold, c.Quarantine = noDedupVenue(), hold, quarantine
					if row.name == "held until the old path recovers" {
						c.MaxCopyHold = 30 * time.Second
					}
					c.Reconcile = bk.reconcile
				})
				defer h.close()
				h.start()
				h.probes.set("eu", probeBlackhole)
				mustAcquire(t, h.p, "o-1") // in flight when eu goes dark
				rel := h.await(pathdialer.EventRelease, nil)
				r, err := h.p.MayResend("o-1")
				if err != nil || r.Verdict.Fate != pathdialer.FateNotReceived || r.Verdict.Final {
					t.Fatalf("verdict after the switch = %+v, %v; want a provisional NOT_RECEIVED", r.Verdict, err)
				}
				deadline := row.land(h, bk, rel.Time)
				late := h.await(pathdialer.EventLateLanding, nil)
				if late.OrderID != "o-1" || strings.HasPrefix(late.Cause, "ALARM") {
					t.Fatalf("late landing = %v", late)
				}
				if late.Time.After(deadline) {
					t.Errorf("copy booked at +%v reported at +%v: later than the bound (+%v)", bk.landedAt["o-1"].Sub(rel.Time), late.Time.Sub(rel.Time), deadline.Sub(rel.Time))
				}
				// Every look kept to the venue's budget (one order each).
				starts := requeryStarts(h.rec.all())
				if len(starts) == 0 {
					t.Fatal("no re-query")
				}
				for i := 1; i < len(starts); i++ {
					if gap := starts[i].Time.Sub(starts[i-1].Time); gap < interval {
						t.Errorf("re-query %d came %v after the previous: faster than the budget (%v)", i, gap, interval)
					}
				}
				t.Logf("booked at +%v, reported at +%v after %d re-queries", bk.landedAt["o-1"].Sub(rel.Time), late.Time.Sub(rel.Time), len(starts))
			})
		})
	}
}

// An order that never lands is looked up every MaxCopyHold while its verdict
// is provisional, and becomes final only at the quarantine's end, not at an
// early look.
func TestProvisionalLookedUpEveryCopyHoldUntilQuarantine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const hold, quarantine = 3 * time.Second, 30 * time.Second
		bk := &copyBook{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue, c.MaxCopyHold, c.Quarantine = noDedupVenue(), hold, quarantine
			c.Reconcile = bk.reconcile
		})
		defer h.close()
		h.start()
		h.probes.set("eu", probeBlackhole)
		mustAcquire(t, h.p, "o-1")
		rel := h.await(pathdialer.EventRelease, nil)
		v0, _ := h.p.Verdict("o-1")
		time.Sleep(quarantine - 2*time.Second)
		if v, _ := h.p.Verdict("o-1"); v.Final {
			t.Fatalf("final before the quarantine ended: %+v", v)
		}
		time.Sleep(5 * time.Second)
		v, _ := h.p.Verdict("o-1")
		if !v.Final || v.FinalAt.Sub(v0.FoundAt) < quarantine {
			t.Fatalf("verdict %+v: want final at the quarantine's end (%v after %v)", v, quarantine, v0.FoundAt)
		}
		var looks []time.Duration
		for _, s := range requeryStarts(h.rec.all()) {
			if s.Time.Before(v.FinalAt) || s.Time.Equal(v.FinalAt) {
				looks = append(looks, s.Time.Sub(v0.FoundAt))
			}
		}
		prev := time.Duration(0)
		for _, l := range looks {
			if l-prev > hold+time.Second/2 {
				t.Errorf("looks at %v after the verdict: a gap longer than MaxCopyHold (%v)", looks, hold)
				break
			}
			prev = l
		}
		if n := len(looks); n < int(quarantine/hold)-1 {
			t.Errorf("%d looks before the final one (%v), want about one every %v", n, looks, hold)
		}
		_ = rel
	})
}

// A re-query that keeps failing backs off (ReconcileBackoff, growing with
// each failure in a row) instead of asking again every Initial: the early
// looks must not hammer a venue whose lookups fail (nor trip the transport's
// read breaker that the next switch's reconcile needs).
func TestFailingRequeryBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		requeries := 0
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue, c.MaxCopyHold, c.Quarantine = noDedupVenue(), 2*time.Second, time.Hour
			c.ReconcileBackoff = pathdialer.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second}
			c.Reconcile = func(_ context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
				if r.Reason == pathdialer.ReasonRequery {
					mu.Lock()
					requeries++
					mu.Unlock()
					return nil, fmt.Errorf("lookups answer 503")
				}
				var out []pathdialer.Settlement
				for _, t := range r.Tickets {
					out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: pathdialer.FateNotReceived})
				}
				return out, nil
			}
		})
		defer h.close()
		h.start()
		h.probes.set("eu", probeBlackhole)
		mustAcquire(t, h.p, "o-1")
		h.await(pathdialer.EventRelease, nil)
		time.Sleep(30 * time.Second)
		mu.Lock()
		n := requeries
		mu.Unlock()
		// 100 ms doubling to 5 s: about 10 in 30 s; every 100 ms would be 280.
		if n == 0 || n > 15 {
			t.Errorf("%d failing re-queries in 30 s, want a growing backoff (at most 15)", n)
		}
		t.Logf("%d failing re-queries in 30 s", n)
	})
}
