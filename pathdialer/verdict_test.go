package pathdialer_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// book is a Reconcile over a fake broker book: an order is NOT_RECEIVED until
// the test books it.
type book struct {
	mu     sync.Mutex
	booked map[string]pathdialer.Fate
	recs   []pathdialer.Reconciliation
}

func (b *book) reconcile(_ context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recs = append(b.recs, r)
	var out []pathdialer.Settlement
	for _, t := range r.Tickets {
		f, ok := b.booked[t.OrderID]
		if !ok {
			f = pathdialer.FateNotReceived
		}
		out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: f})
	}
	return out, nil
}

func (b *book) book(id string, f pathdialer.Fate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.booked == nil {
		b.booked = map[string]pathdialer.Fate{}
	}
	b.booked[id] = f
}

func settlementOf(t *testing.T, e pathdialer.Event, id string) pathdialer.Settlement {
	t.Helper()
	for _, s := range e.Settlements {
		if s.OrderID == id {
			return s
		}
	}
	t.Fatalf("no settlement for %s in %v", id, e)
	return pathdialer.Settlement{}
}

// A NOT_RECEIVED found while the old path could still deliver is provisional
// (settlement, event, Snapshot, MayResend says no); after the quarantine the
// Path re-queries by itself, and a NOT_RECEIVED then is final and MayResend
// says yes, under the same ID.
func TestProvisionalNotReceivedBecomesFinalAfterQuarantine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &book{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue = labVenue() // exact lookups: the quarantine covers MaxCopyHold (10 s) alone
			c.Quarantine = 10 * time.Second
			c.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
				return b.reconcile(ctx, r)
			}
		})
		defer h.close()
		h.start()
		tk := mustAcquire(t, h.p, "o-1")
		_ = tk
		h.probes.set("eu", probeBlackhole)
		ok := h.await(pathdialer.EventReconcileSuccess, nil)
		s := settlementOf(t, ok, "o-1")
		if s.Fate != pathdialer.FateNotReceived || !s.Provisional || s.Final || !strings.Contains(s.Detail, "provisional") {
			t.Fatalf("settlement = %+v, want a provisional NOT_RECEIVED", s)
		}
		r, err := h.p.MayResend("o-1")
		if err != nil || r.Allowed || r.Verdict.Final || r.Verdict.Endpoint != "eu" || r.Verdict.Region != "eu-west-1" {
			t.Fatalf("MayResend while provisional = %+v, %v", r, err)
		}
		if snap := h.p.Snapshot(); len(snap.Provisional) != 1 || snap.ProvisionalCount != 1 || snap.Provisional[0].OrderID != "o-1" || snap.Provisional[0].RequeryAt.IsZero() {
			t.Fatalf("Snapshot.Provisional = %+v", snap.Provisional)
		}
		h.await(pathdialer.EventRelease, nil)
		rq := h.await(pathdialer.EventReconcileSuccess, func(e pathdialer.Event) bool { return e.Cause == pathdialer.ReasonRequery })
		if s := settlementOf(t, rq, "o-1"); !s.Final || s.Provisional {
			t.Fatalf("re-query settlement = %+v, want final", s)
		}
		if since := rq.Time.Sub(ok.Time); since < 10*time.Second {
			t.Errorf("re-query %v after the verdict, before the quarantine ended", since)
		}
		r, err = h.p.MayResend("o-1")
		if err != nil || !r.Allowed || r.OrderID != "o-1" || !r.Verdict.Final {
			t.Fatalf("MayResend after the quarantine = %+v, %v", r, err)
		}
		if r, err := h.p.MayResend("o-1"); err != nil || r.Allowed || !strings.Contains(r.Reason, "already granted") {
			t.Fatalf("second MayResend = %+v, %v: a resend is granted once", r, err)
		}
		if snap := h.p.Snapshot(); len(snap.Provisional) != 0 {
			t.Fatalf("Snapshot.Provisional after final = %+v", snap.Provisional)
		}
		if n := countKind(h.rec.all(), pathdialer.EventLateLanding); n != 0 {
			t.Errorf("%d late landings, want 0", n)
		}
	})
}

// A provisional NOT_RECEIVED that the re-query finds booked is a late landing:
// its own event with the order, endpoint and region; MayResend says no.
func TestLateLandingIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &book{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue = labVenue() // exact lookups: the quarantine covers MaxCopyHold (10 s) alone
			c.Quarantine = 10 * time.Second
			c.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
				return b.reconcile(ctx, r)
			}
		})
		defer h.close()
		h.start()
		mustAcquire(t, h.p, "o-late")
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, nil)
		b.book("o-late", pathdialer.FateFilled) // the copy stuck in eu's gateway lands
		late := h.await(pathdialer.EventLateLanding, nil)
		if late.OrderID != "o-late" || late.Endpoint != "eu" || late.Region != "eu-west-1" || len(late.Settlements) != 1 || late.Settlements[0].Fate != pathdialer.FateFilled {
			t.Fatalf("late landing = %+v", late)
		}
		r, err := h.p.MayResend("o-late")
		if err != nil || r.Allowed || !r.Verdict.LateLanding || r.Verdict.Fate != pathdialer.FateFilled {
			t.Fatalf("MayResend after a late landing = %+v, %v", r, err)
		}
	})
}

// With BrokerFencesViaFencer, the Fencer's success means the broker itself fenced the
// old endpoint: NOT_RECEIVED for orders sent through it is final at once. An
// order settled on the active (unfenced) endpoint stays provisional.
func TestFenceAtBrokerMakesNotReceivedFinal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &book{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue = labVenue() // the venue has a kill switch and exact lookups
			c.BrokerFencesViaFencer = true
			c.SettleUnknown = time.Second
			c.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
				return b.reconcile(ctx, r)
			}
		})
		defer h.close()
		h.start()
		mustAcquire(t, h.p, "o-eu")
		h.probes.set("eu", probeBlackhole)
		ok := h.await(pathdialer.EventReconcileSuccess, nil)
		if s := settlementOf(t, ok, "o-eu"); !s.Final || s.Provisional {
			t.Fatalf("settlement = %+v, want final", s)
		}
		if r, err := h.p.MayResend("o-eu"); err != nil || !r.Allowed || r.OrderID != "o-eu" {
			t.Fatalf("MayResend = %+v, %v", r, err)
		}
		h.await(pathdialer.EventRelease, nil)
		// In flight, then unknown on the active endpoint: no, and no again.
		tk := mustAcquire(t, h.p, "o-us")
		if r, err := h.p.MayResend("o-us"); err != nil || r.Allowed || !strings.Contains(r.Reason, "in flight") {
			t.Fatalf("MayResend in flight = %+v, %v", r, err)
		}
		tk.Unknown(errors.New("HTTP 503"))
		if r, err := h.p.MayResend("o-us"); err != nil || r.Allowed || !strings.Contains(r.Reason, "unknown") {
			t.Fatalf("MayResend unknown = %+v, %v", r, err)
		}
		st := h.await(pathdialer.EventReconcileSuccess, func(e pathdialer.Event) bool { return e.Cause == "settle unknown outcomes" })
		if s := settlementOf(t, st, "o-us"); s.Final || !s.Provisional {
			t.Fatalf("settled on the active endpoint = %+v, want provisional", s)
		}
		if r, err := h.p.MayResend("o-us"); err != nil || r.Allowed || !strings.Contains(r.Reason, "provisional") {
			t.Fatalf("MayResend provisional = %+v, %v", r, err)
		}
		if r, err := h.p.MayResend("never-sent"); !errors.Is(err, pathdialer.ErrOrderNotTracked) || r.Allowed {
			t.Fatalf("MayResend of an unknown order = %+v, %v", r, err)
		}
	})
}
