package pathdialer_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
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
		// verdict (-1: some, the copies land while the re-query runs).
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
					c.Reconciler = bk.reconcile
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
						if !bk.landedAt[id].After(v.FinalAt) {
							t.Errorf("%s flagged after final, but landed at %v, final at %v", id, bk.landedAt[id], v.FinalAt)
						}
						if !strings.Contains(e.Settlements[0].Detail, "AFTER A FINAL VERDICT") {
							t.Errorf("%s: settlement detail %q does not say so", id, e.Settlements[0].Detail)
						}
					}
				}
				if row.wantAfterFinal >= 0 && afterFinal != row.wantAfterFinal || row.wantAfterFinal < 0 && afterFinal == 0 {
					t.Errorf("%d landings after a final verdict, want %d (-1: some)", afterFinal, row.wantAfterFinal)
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
