package pathdialer_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// rqReconciler settles its tickets as NOT_RECEIVED (a fake book with nothing
// booked). failRequery makes its re-queries fail (a FIX reconciler that
// cannot ask); failSwitch makes that many switch reconciles fail.
type rqReconciler struct {
	mu          sync.Mutex
	failRequery bool
	failSwitch  int
	recs        []pathdialer.Reconciliation
}

func (s *rqReconciler) reconcile(_ context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, r)
	if r.Reason == pathdialer.ReasonRequery && s.failRequery {
		return nil, errReconcile
	}
	if r.Reason != pathdialer.ReasonRequery && s.failSwitch > 0 {
		s.failSwitch--
		return nil, errReconcile
	}
	var out []pathdialer.Settlement
	for _, t := range r.Tickets {
		out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: pathdialer.FateNotReceived})
	}
	return out, nil
}

func (s *rqReconciler) requeries() []pathdialer.Reconciliation {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []pathdialer.Reconciliation
	for _, r := range s.recs {
		if r.Reason == pathdialer.ReasonRequery {
			out = append(out, r)
		}
	}
	return out
}

// Re-queries run per service: a FIX re-query that keeps failing does not keep
// the REST verdicts provisional; REST's re-query succeeds on its own and only
// with REST's tickets, and the FIX verdict stays provisional (MayResend no).
func TestRequeryPerServiceFailingFIXDoesNotHoldREST(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rest := &rqReconciler{}
		fix := &rqReconciler{failRequery: true}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue = labVenue() // exact lookups: the quarantine covers MaxCopyHold (10 s) alone
			c.Quarantine = 10 * time.Second
			c.ReconcileByService = map[string]pathdialer.ReconcileFunc{pathdialer.ServiceREST: rest.reconcile, pathdialer.ServiceFIX: fix.reconcile}
		})
		defer h.close()
		h.start()
		mustAcquire(t, h.p, "o-rest")
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceFIX, "o-fix"); err != nil {
			t.Fatal(err)
		}
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == "" })
		if snap := h.p.Snapshot(); snap.ProvisionalCount != 2 {
			t.Fatalf("provisional after the switch = %+v, want both orders", snap.Provisional)
		}
		rq := h.await(pathdialer.EventReconcileSuccess, func(e pathdialer.Event) bool { return e.Cause == pathdialer.ReasonRequery })
		synctest.Wait() // the FIX re-query runs beside REST's, in its own goroutine
		if s := settlementOf(t, rq, "o-rest"); !s.Final || s.Provisional {
			t.Fatalf("REST re-query settlement = %+v, want final", s)
		}
		if r, err := h.p.MayResend("o-rest"); err != nil || !r.Allowed {
			t.Fatalf("MayResend(o-rest) = %+v, %v: the failing FIX re-query kept it provisional", r, err)
		}
		if r, err := h.p.MayResend("o-fix"); err != nil || r.Allowed || r.Verdict.Final {
			t.Fatalf("MayResend(o-fix) = %+v, %v: its re-query failed, it must stay provisional", r, err)
		}
		rqs := rest.requeries()
		if len(rqs) != 1 || rqs[0].Service != pathdialer.ServiceREST || !slices.Equal(orderIDs(rqs[0].Tickets), []string{"o-rest"}) {
			t.Fatalf("REST re-queries %+v, want one with o-rest only", rqs)
		}
		if len(fix.requeries()) == 0 {
			t.Fatal("FIX was never re-queried")
		}
		for _, r := range fix.requeries() {
			if r.Service != pathdialer.ServiceFIX || !slices.Equal(orderIDs(r.Tickets), []string{"o-fix"}) {
				t.Fatalf("FIX re-query %+v, want o-fix only", r)
			}
		}
		if snap := h.p.Snapshot(); snap.ProvisionalCount != 1 || snap.Provisional[0].OrderID != "o-fix" {
			t.Fatalf("provisional = %+v, want o-fix only", snap.Provisional)
		}
	})
}

// The re-query also runs while another service's reconcile is still being
// retried: REST, released, has its provisional verdicts re-queried and made
// final while the FIX reconcile of the same switch keeps failing.
func TestRequeryRunsWhileAServiceReconcileRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rest := &rqReconciler{}
		fix := &rqReconciler{failSwitch: 1 << 20}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue = labVenue() // exact lookups: the quarantine covers MaxCopyHold (10 s) alone
			c.Quarantine = 10 * time.Second
			c.ReconcileByService = map[string]pathdialer.ReconcileFunc{pathdialer.ServiceREST: rest.reconcile, pathdialer.ServiceFIX: fix.reconcile}
			c.ReconcileBackoff = pathdialer.Backoff{Initial: time.Second, Max: 2 * time.Second}
		})
		defer h.close()
		h.start()
		mustAcquire(t, h.p, "o-rest")
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceFIX, "o-fix"); err != nil {
			t.Fatal(err)
		}
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == pathdialer.ServiceREST })
		rq := h.await(pathdialer.EventReconcileSuccess, func(e pathdialer.Event) bool { return e.Cause == pathdialer.ReasonRequery })
		if s := settlementOf(t, rq, "o-rest"); !s.Final {
			t.Fatalf("REST re-query settlement = %+v, want final", s)
		}
		if rq.Service != pathdialer.ServiceREST {
			t.Errorf("re-query event service %q, want rest", rq.Service)
		}
		if st := gateState(h.p); st == pathdialer.GateOpen {
			t.Fatalf("gate open: the FIX reconcile was meant to be still failing")
		}
		if r, err := h.p.MayResend("o-rest"); err != nil || !r.Allowed {
			t.Fatalf("MayResend(o-rest) = %+v, %v", r, err)
		}
		if n := len(fix.requeries()); n != 0 {
			t.Errorf("FIX re-queried %d times while its own reconcile runs", n)
		}
	})
}
