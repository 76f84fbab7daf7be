package pathdialer_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// errBudget is what a reconciler returns when the venue's lookup budget ran
// out before it could ask about every order.
var errBudget = errors.New("lookup budget spent: HTTP 429")

// budgetReconciler answers one order per call (the first by order ID, as
// FILLED) and then fails, as a reconciler paced by a venue that allows one
// lookup per reconcile timeout would.
type budgetReconciler struct {
	mu   sync.Mutex
	seen [][]string // the order IDs each call was asked about
}

func (b *budgetReconciler) reconcile(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	ids := orderIDs(r.Tickets)
	slices.Sort(ids)
	b.mu.Lock()
	b.seen = append(b.seen, ids)
	b.mu.Unlock()
	if len(ids) == 0 {
		return nil, nil
	}
	one := []pathdialer.Settlement{{OrderID: ids[0], Service: pathdialer.ServiceREST, Fate: pathdialer.FateFilled, Detail: "booked"}}
	if len(ids) == 1 {
		return one, nil
	}
	return one, errBudget
}

func (b *budgetReconciler) calls() [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.seen)
}

// A reconcile attempt that fails after settling some orders keeps what it
// found: the next attempt asks only about the orders still open, so a
// reconciler that can answer one order per attempt (a venue's lookup
// budget) still settles every order and flow is released. Both the single
// Reconcile and per-service ReconcileByService.
func TestFailedReconcileKeepsItsAnswers(t *testing.T) {
	for _, perService := range []bool{false, true} {
		name := "Reconcile"
		if perService {
			name = "ReconcileByService"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := &budgetReconciler{}
				h := newHarness(t, func(c *pathdialer.Config) {
					if perService {
						c.ReconcileByService = map[string]pathdialer.ReconcileFunc{pathdialer.ServiceREST: b.reconcile}
						c.Reconcile = pathdialer.NoReconcile
					} else {
						c.Reconcile = b.reconcile
					}
					c.InflightGrace = 0
					c.ReconcileAttempts = 100
					c.ReconcileBackoff = pathdialer.Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
				})
				defer h.close()
				h.start()
				for _, id := range []string{"o-1", "o-2", "o-3"} {
					mustAcquire(t, h.p, id) // in flight on eu, never finished
				}
				h.probes.set("eu", probeBlackhole)
				fail := h.await(pathdialer.EventReconcileFailure, nil)
				if len(fail.Settlements) != 1 || fail.Settlements[0].OrderID != "o-1" || !fail.Settlements[0].Final {
					t.Errorf("failed attempt's settlements %v, want o-1 FILLED, final", fail.Settlements)
				}
				h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == "" })
				want := [][]string{{"o-1", "o-2", "o-3"}, {"o-2", "o-3"}, {"o-3"}}
				if got := b.calls(); !slices.EqualFunc(got, want, slices.Equal) {
					t.Fatalf("attempts asked about %v, want %v (each attempt only about what is still open)", got, want)
				}
				for _, id := range []string{"o-1", "o-2", "o-3"} {
					v, ok := h.p.Verdict(id)
					if !ok || v.Fate != pathdialer.FateFilled || !v.Final {
						t.Errorf("verdict on %s = %+v (found %v), want FILLED, final", id, v, ok)
					}
				}
				if st := gateState(h.p); st != pathdialer.GateOpen {
					t.Fatalf("gate %v after every order was settled", st)
				}
			})
		})
	}
}

// rqBudgetReconciler settles a switch's orders as NOT_RECEIVED at once, and
// answers a re-query about one order (the first by order ID) before failing.
type rqBudgetReconciler struct {
	mu   sync.Mutex
	seen [][]string // the order IDs each re-query was asked about
}

func (b *rqBudgetReconciler) reconcile(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	ids := orderIDs(r.Tickets)
	slices.Sort(ids)
	var out []pathdialer.Settlement
	if r.Reason != pathdialer.ReasonRequery {
		for _, id := range ids {
			out = append(out, pathdialer.Settlement{OrderID: id, Service: pathdialer.ServiceREST, Fate: pathdialer.FateNotReceived})
		}
		return out, nil
	}
	b.mu.Lock()
	b.seen = append(b.seen, ids)
	b.mu.Unlock()
	if len(ids) == 0 {
		return nil, nil
	}
	out = append(out, pathdialer.Settlement{OrderID: ids[0], Service: pathdialer.ServiceREST, Fate: pathdialer.FateNotReceived})
	if len(ids) == 1 {
		return out, nil
	}
	return out, errBudget
}

// The re-query of provisional verdicts keeps a failed attempt's answers too:
// each order it did look up again is judged (here made final), so the
// verdicts become final one re-query after another; before, every re-query
// asked about the same first order and none was ever final.
func TestFailedRequeryKeepsItsAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &rqBudgetReconciler{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue = labVenue() // exact lookups: the quarantine covers MaxCopyHold (10 s) alone
			c.Quarantine = 10 * time.Second
			c.Reconcile = b.reconcile
			c.InflightGrace = 0
		})
		defer h.close()
		h.start()
		for _, id := range []string{"o-1", "o-2", "o-3"} {
			mustAcquire(t, h.p, id)
		}
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, nil)
		fail := h.await(pathdialer.EventReconcileFailure, func(e pathdialer.Event) bool { return e.Cause == pathdialer.ReasonRequery })
		if len(fail.Settlements) != 1 || fail.Settlements[0].OrderID != "o-1" || !fail.Settlements[0].Final {
			t.Errorf("failed re-query's settlements %v, want o-1 NOT_RECEIVED, final", fail.Settlements)
		}
		h.await(pathdialer.EventReconcileSuccess, func(e pathdialer.Event) bool { return e.Cause == pathdialer.ReasonRequery })
		// An order made final is looked at again by the late-landing watch,
		// on its own schedule; the provisional ones each took one re-query.
		if got := b.calls(); len(got) > 8 {
			t.Fatalf("%d re-queries (%v) before every verdict was final, want a few", len(got), got)
		}
		for _, id := range []string{"o-1", "o-2", "o-3"} {
			if v, ok := h.p.Verdict(id); !ok || v.Fate != pathdialer.FateNotReceived || !v.Final {
				t.Errorf("verdict on %s = %+v (found %v), want NOT_RECEIVED, final", id, v, ok)
			}
		}
	})
}

func (b *rqBudgetReconciler) calls() [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.seen)
}
