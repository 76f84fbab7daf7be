package pathdialer_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// A fence's open-order reconcile has read the venue once and waits for the
// cancel-on-disconnect its connection declared (Conn.SetCODWithin) to read
// again. Meanwhile a re-query finds an order first judged not received
// booked after all (through the old path), and the venue's late
// cancel-on-disconnect then cancels it: the run's second read includes that
// order, so its cancel is reported as that switch's.
func TestOpenOrdersLateRestingJoinsARunWaitingToReadAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, led := newRestingBook(), &ledger{}
		booked := func(id string) bool {
			bk.mu.Lock()
			defer bk.mu.Unlock()
			_, ok := bk.orders[id]
			return ok
		}
		h := flattenHarness(t, venue.Deribit(), 500*time.Millisecond, pathdialer.ServiceREST, bk, led, true, func(c *pathdialer.Config) {
			c.SettleUnknown = 200 * time.Millisecond
			c.MaxCopyHold = 10 * time.Second
			c.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
				var out []pathdialer.Settlement
				for _, tk := range r.Tickets {
					s := pathdialer.Settlement{OrderID: tk.OrderID, Service: tk.Service, Fate: pathdialer.FateNotReceived, Detail: "the venue has no record of it"}
					if r.Reason == pathdialer.ReasonRequery && booked(tk.OrderID) {
						s.Fate, s.Detail = pathdialer.FateResting, "the venue lists it open"
					}
					out = append(out, s)
				}
				return out, nil
			}
		})
		defer h.close()
		h.start()
		conn, err := h.p.Dial(context.Background(), pathdialer.ServiceREST)
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		conn.SetCODWithin(20 * time.Second) // the venue may cancel the old session's orders up to 20 s after the fence
		tk := mustAcquire(t, h.p, "x")
		tk.Unknown(errors.New("connection cut after the write"))
		st := h.await(pathdialer.EventReconcileSuccess, func(e pathdialer.Event) bool { return e.Cause != pathdialer.ReasonRequery })
		if len(st.Settlements) != 1 || st.Settlements[0].Fate != pathdialer.FateNotReceived || !st.Settlements[0].Provisional {
			t.Fatalf("settle %q %v: want x provisionally NOT_RECEIVED", st.Cause, st.Settlements)
		}
		h.probes.set("eu", probeFail) // eu stays down: no failback before the run's second read
		reportDown(h.p, "eu", 0)
		first := h.await(pathdialer.EventOpenOrderDiff, nil)
		if first.Err != nil || len(first.Diffs) != 0 {
			t.Fatalf("first open-order read %+v: want no difference yet", first)
		}
		bk.place("x", "eu") // the held copy lands through the old path
		late := h.await(pathdialer.EventLateLanding, nil)
		if late.OrderID != "x" {
			t.Fatalf("late landing %+v: want x", late)
		}
		if gone := bk.drop("eu", false); len(gone) != 1 || gone[0] != "x" { // the venue notices the lost session late
			t.Fatalf("venue cancelled %v: want x", gone)
		}
		second := h.await(pathdialer.EventOpenOrderDiff, nil)
		if second.From != "eu" || second.To != "us" {
			t.Fatalf("second open-order read %+v: want the switch eu→us read again", second)
		}
		synctest.Wait()
		rc, ok := cancelledEvents(h.rec.all())["x"]
		if !ok || rc.From != "eu" || rc.To != "us" {
			t.Fatalf("second read %q %v; resting-cancelled %+v (found %v): want x, booked late through eu, reported cancelled by the switch eu→us", second.Cause, second.Diffs, rc, ok)
		}
		if n := len(bk.reads); n != 2 {
			t.Fatalf("venue read %d times at %v: want twice, at CODSettle and when the declared cancel was due", n, bk.reads)
		}
		// Reported once: the next switch's open-order read (the failback to
		// eu) does not report x's cancel again as its own.
		h.probes.set("eu", probeOK)
		back := h.await(pathdialer.EventOpenOrderDiff, func(e pathdialer.Event) bool { return e.From == "us" && e.To == "eu" })
		synctest.Wait()
		n := 0
		for _, e := range h.rec.all() {
			if e.Kind == pathdialer.EventRestingCancelled && e.OrderID == "x" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("x reported cancelled %d times (failback's read: %v): want once, by the switch eu→us", n, back.Diffs)
		}
	})
}
