package pathdialer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// haltRec is a reconcile function that hangs (until its context ends: the
// ReconcileTimeout) while told to, and otherwise answers FILLED for every
// order, as a broker's book would for an order that landed.
type haltRec struct {
	mu    sync.Mutex
	hang  bool
	calls []pathdialer.Reconciliation
}

func (h *haltRec) setHang(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hang = on
}

func (h *haltRec) reconcile(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	h.mu.Lock()
	r.Tickets = slices.Clone(r.Tickets)
	h.calls = append(h.calls, r)
	hang := h.hang
	h.mu.Unlock()
	if hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var out []pathdialer.Settlement
	for _, t := range r.Tickets {
		out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: pathdialer.FateFilled, Detail: "booked"})
	}
	return out, nil
}

// settledAfter returns when the first successful reconcile at or after from
// settled order id (zero when none did).
func settledAfter(evs []pathdialer.Event, id string, from time.Time) time.Time {
	for _, e := range evs {
		if e.Kind != pathdialer.EventReconcileSuccess && e.Kind != pathdialer.EventReconcileFailure || e.Time.Before(from) {
			continue
		}
		for _, s := range e.Settlements {
			if s.OrderID == id && s.Fate != pathdialer.FateUndetermined {
				return e.Time
			}
		}
	}
	return time.Time{}
}

// A Path that halts several times in a row with orders of unknown outcome —
// reconcile attempts timing out during the resume, halting it again; orders
// in flight when a halt began finishing unknown while halted; orders still in
// flight when the resume's reconcile took them and finishing unknown only
// after it settled them — settles every one of them once flow is released:
// each order that finished unknown is settled by a reconcile that began after
// it finished, within SettleUnknown + ProbeInterval + ReconcileTimeout of the
// later of its finish and the release; none is left pending, none dropped.
func TestEveryUnknownOrderSettledAfterHalts(t *testing.T) {
	for _, byService := range []bool{false, true} {
		t.Run(fmt.Sprintf("byService=%v", byService), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { haltsWithUnknownOrders(t, byService) })
		})
	}
}

func haltsWithUnknownOrders(t *testing.T, byService bool) {
	rec := &haltRec{}
	const (
		settleUnknown = 3 * time.Second
		reconcileTO   = 2 * time.Second
	)
	h := newHarness(t, func(c *pathdialer.Config) {
		c.SettleUnknown = settleUnknown
		c.ReconcileTimeout = reconcileTO
		c.ReconcileAttempts = 2
		c.ReconcileBackoff = pathdialer.Backoff{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond}
		c.InflightGrace = 200 * time.Millisecond
		c.Reconcile = rec.reconcile
		if byService {
			c.ReconcileByService = map[string]pathdialer.ReconcileFunc{pathdialer.ServiceREST: rec.reconcile}
		}
	})
	defer h.close()
	h.start()
	bound := settleUnknown + time.Second /* ProbeInterval */ + reconcileTO
	unknownAt := map[string]time.Time{}
	finishUnknown := func(tk *pathdialer.Ticket) {
		tk.Unknown(errors.New("order timed out after it was written"))
		unknownAt[tk.OrderID] = time.Now()
	}
	halt := func() {
		h.probes.set("us", probeFail)
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventHalt, nil)
	}

	// Halt 1: an order in flight when the halt began finishes unknown while
	// halted; the resume's reconcile attempts time out, which halts again.
	o1 := mustAcquire(t, h.p, "o-1")
	halt()
	finishUnknown(o1)
	rec.setHang(true)
	h.probes.set("eu", probeOK)
	h.await(pathdialer.EventResume, nil)
	h.await(pathdialer.EventHalt, nil) // ReconcileAttempts timed out
	// Halt 2, for want of a target, while the reconcile is failing.
	h.probes.set("eu", probeBlackhole)
	<-time.After(5 * time.Second)
	rec.setHang(false)
	h.probes.set("eu", probeOK)
	h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == "" })

	// Halt 3: orders still in flight when the resume's reconcile takes them
	// (a starved host: they outlast InflightGrace), one of them finishing
	// unknown only after that reconcile settled it, one answered.
	o2 := mustAcquire(t, h.p, "o-2")
	o3 := mustAcquire(t, h.p, "o-3")
	halt()
	h.probes.set("eu", probeOK)
	h.await(pathdialer.EventResume, nil)
	h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == "" })
	<-time.After(300 * time.Millisecond)
	finishUnknown(o2)
	o3.Done()
	// An order on the released flow finishes unknown, and the Path halts
	// before it is settled (halt 4); it resumes.
	o4 := mustAcquire(t, h.p, "o-4")
	finishUnknown(o4)
	halt()
	h.probes.set("eu", probeOK)
	h.await(pathdialer.EventResume, nil)
	release := h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == "" })

	<-time.After(2 * bound)
	synctest.Wait()
	evs := h.rec.all()
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range unknownAt {
			if !yield(id) {
				return
			}
		}
	}) {
		at := unknownAt[id]
		from := at
		if release.Time.After(from) && id != "o-2" {
			from = release.Time
		}
		got := settledAfter(evs, id, at)
		switch {
		case got.IsZero():
			t.Errorf("%s finished unknown at %v and no reconcile settled it after that\n%s", id, at.Format("15:04:05.000"), timeline(evs))
		case got.Sub(from) > bound:
			t.Errorf("%s settled %v after %v, bound %v", id, got.Sub(from), from.Format("15:04:05.000"), bound)
		}
	}
	if u := h.p.Unknown(); len(u) != 0 {
		t.Errorf("still waiting for reconciliation: %+v", u)
	}
	if n := h.p.Snapshot().Unknown; n != 0 {
		t.Errorf("Snapshot counts %d unknown orders", n)
	}
	if st := gateState(h.p); st != pathdialer.GateOpen {
		t.Errorf("gate %v at the end, want OPEN", st)
	}
}

// slowRec answers one order every perOrder, honouring its context: cut
// short, it returns the answers it has with the context's error.
type slowRec struct {
	perOrder time.Duration
}

func (s slowRec) reconcile(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	var out []pathdialer.Settlement
	for _, t := range r.Tickets {
		select {
		case <-time.After(s.perOrder):
		case <-ctx.Done():
			return out, ctx.Err()
		}
		out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: pathdialer.FateFilled, Detail: "booked"})
	}
	return out, nil
}

// Halts that come faster than one whole reconcile (a starved host: the
// active endpoint's probes time out every few seconds while it answers) do
// not keep the unknown orders unsettled for ever: each resume's reconcile is
// cut short by the next halt, and what it found before is kept (judged,
// reported, not asked again), so the orders are all settled after as many
// resumes as their lookups need in all, here three at most.
func TestHaltsFasterThanAReconcileStillSettleEveryOrder(t *testing.T) {
	for _, byService := range []bool{false, true} {
		t.Run(fmt.Sprintf("byService=%v", byService), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const orders, perOrder = 10, 300 * time.Millisecond // 3 s of lookups in all
				rec := slowRec{perOrder: perOrder}
				h := newHarness(t, func(c *pathdialer.Config) {
					c.SettleUnknown = time.Second
					c.ReconcileTimeout = 10 * time.Second
					c.InflightGrace = 0
					c.Reconcile = rec.reconcile
					if byService {
						c.ReconcileByService = map[string]pathdialer.ReconcileFunc{pathdialer.ServiceREST: rec.reconcile}
					}
				})
				defer h.close()
				h.start()
				var ids []string
				for i := range orders {
					tk := mustAcquire(t, h.p, fmt.Sprintf("o-%d", i))
					ids = append(ids, tk.OrderID)
					tk.Unknown(errors.New("order timed out"))
				}
				h.probes.set("us", probeFail)
				h.probes.set("eu", probeBlackhole)
				h.await(pathdialer.EventHalt, nil)
				resumes := 0
				settled := func() int {
					n := 0
					for _, id := range ids {
						if !settledAfter(h.rec.all(), id, time.Time{}).IsZero() {
							n++
						}
					}
					return n
				}
				for resumes < 3 && settled() < orders {
					// The endpoint answers its probes again, then times them
					// out again as soon as the reconcile has begun.
					h.probes.set("eu", probeOK)
					h.await(pathdialer.EventResume, nil)
					resumes++
					h.probes.set("eu", probeBlackhole)
					h.await(pathdialer.EventHalt, nil)
				}
				if n := settled(); n != orders {
					t.Fatalf("after %d resumes, each cut short by a halt, %d of %d orders settled\n%s", resumes, n, orders, timeline(h.rec.all()))
				}
				h.probes.set("eu", probeOK)
				h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == "" })
				if u := h.p.Unknown(); len(u) != 0 {
					t.Errorf("still unknown: %+v", u)
				}
			})
		})
	}
}
