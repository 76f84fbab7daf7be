package pathdialer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// svcReconciler settles its service's tickets as NOT_RECEIVED; while gated it
// blocks until the test lets it go (a FIX reconciler waiting for a logon).
type svcReconciler struct {
	mu    sync.Mutex
	gate  chan struct{}
	fails int
	recs  []pathdialer.Reconciliation
}

func (s *svcReconciler) reconcile(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	s.mu.Lock()
	s.recs = append(s.recs, r)
	gate := s.gate
	fail := s.fails > 0
	if fail {
		s.fails--
	}
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail {
		return nil, errReconcile
	}
	var out []pathdialer.Settlement
	for _, t := range r.Tickets {
		out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: pathdialer.FateNotReceived})
	}
	return out, nil
}

func (s *svcReconciler) all() []pathdialer.Reconciliation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs)
}

// With ReconcileByService, REST is released on the new endpoint as soon as the REST
// reconcile succeeded while FIX still waits for its own; each reconciler gets
// only its service's tickets; FIX is not granted before its reconcile; the
// REST orders granted meanwhile are ordinary flow, not reconciled.
func TestServicesReleasedIndependently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rest := &svcReconciler{}
		fix := &svcReconciler{gate: make(chan struct{})}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.ReconcileByService = map[string]pathdialer.ReconcileFunc{pathdialer.ServiceREST: rest.reconcile, pathdialer.ServiceFIX: fix.reconcile}
			c.InflightGrace = 0
		})
		defer h.close()
		h.start()
		ctx := context.Background()
		mustAcquire(t, h.p, "o-rest-old") // in flight on eu
		if _, err := h.p.Acquire(ctx, pathdialer.ServiceFIX, "o-fix-old"); err != nil {
			t.Fatal(err)
		}
		h.probes.set("eu", probeBlackhole)
		rel := h.await(pathdialer.EventRelease, nil)
		if rel.Service != pathdialer.ServiceREST || rel.Endpoint != "us" {
			t.Fatalf("first release = %v, want REST on us", rel)
		}
		if s := h.p.Snapshot(); s.Gate != pathdialer.GateHeld || !slices.Equal(s.Released, []string{"rest"}) {
			t.Fatalf("snapshot gate %v released %v", s.Gate, s.Released)
		}
		tk, err := h.p.Acquire(ctx, pathdialer.ServiceREST, "o-rest-new")
		if err != nil || tk.Endpoint != "us" || tk.Token != 1 {
			t.Fatalf("REST after its release: %+v, %v", tk, err)
		}
		fixWait := acquireAsync(ctx, h.p, pathdialer.ServiceFIX, "o-fix-new")
		synctest.Wait()
		select {
		case r := <-fixWait:
			t.Fatalf("FIX granted before its reconcile: %+v", r)
		default:
		}
		// The other services (none named) wait for the whole gate too.
		otherWait := acquireAsync(ctx, h.p, "custom", "o-custom")
		synctest.Wait()
		select {
		case r := <-otherWait:
			t.Fatalf("a service without its own reconciler granted before every reconcile: %+v", r)
		default:
		}
		if r, err := h.p.MayResend("o-fix-old"); err != nil || r.Allowed || r.Reason != "awaiting reconciliation" {
			t.Fatalf("MayResend of a FIX order still being reconciled = %+v, %v", r, err)
		}
		close(fix.gate)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == "" })
		if r := <-fixWait; r.err != nil || r.t.Endpoint != "us" {
			t.Fatalf("FIX after its release: %+v", r)
		}
		if r := <-otherWait; r.err != nil {
			t.Fatalf("custom after the release: %v", r.err)
		}
		if recs := rest.all(); len(recs) != 1 || recs[0].Service != "rest" || !slices.Equal(orderIDs(recs[0].Tickets), []string{"o-rest-old"}) {
			t.Fatalf("REST reconciliations %+v", recs)
		}
		if recs := fix.all(); len(recs) != 1 || recs[0].Service != "fix" || !slices.Equal(orderIDs(recs[0].Tickets), []string{"o-fix-old"}) {
			t.Fatalf("FIX reconciliations %+v", recs)
		}
		if recs := h.hooks.reconciliations(); len(recs) != 1 || len(recs[0].Tickets) != 0 {
			t.Errorf("Config.Reconcile with nothing of its own: %+v, want one call with no tickets", recs)
		}
		if got := h.p.Snapshot().InFlight; got != 3 {
			t.Errorf("in flight %d, want the 3 new orders", got)
		}
		tk.Done()
	})
}

// A service's reconcile that keeps failing halts the whole gate (the service
// released before it too); when it succeeds, everything is released.
func TestServiceReconcileFailuresHaltThenRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rest := &svcReconciler{}
		fix := &svcReconciler{fails: 3}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.ReconcileByService = map[string]pathdialer.ReconcileFunc{pathdialer.ServiceREST: rest.reconcile, pathdialer.ServiceFIX: fix.reconcile}
			c.ReconcileAttempts = 2
			c.ReconcileBackoff = pathdialer.Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
		})
		defer h.close()
		h.start()
		mustAcquire(t, h.p, "o-rest")
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceFIX, "o-fix"); err != nil {
			t.Fatal(err)
		}
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == pathdialer.ServiceREST })
		halt := h.await(pathdialer.EventHalt, nil)
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-r"); !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Fatalf("REST during the FIX reconcile halt: %v (halt %v)", err, halt)
		}
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == "" })
		if st := gateState(h.p); st != pathdialer.GateOpen {
			t.Fatalf("gate %v after every reconcile succeeded", st)
		}
		if n := len(rest.all()); n != 1 {
			t.Errorf("REST reconciled %d times, want 1", n)
		}
		if n := len(fix.all()); n != 4 {
			t.Errorf("FIX reconciled %d times, want 4 (3 failures)", n)
		}
	})
}

// A switch abandoned while REST is released and FIX still reconciling: REST
// is held again, the REST order granted on the new endpoint meanwhile and the
// FIX orders not yet settled both go to the next switch's reconcile.
func TestAbandonedSwitchWithAServiceReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rest := &svcReconciler{}
		fix := &svcReconciler{gate: make(chan struct{})}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.ReconcileByService = map[string]pathdialer.ReconcileFunc{pathdialer.ServiceREST: rest.reconcile, pathdialer.ServiceFIX: fix.reconcile}
			c.InflightGrace = 0
		})
		defer h.close()
		h.start()
		ctx := context.Background()
		if _, err := h.p.Acquire(ctx, pathdialer.ServiceFIX, "o-fix-old"); err != nil {
			t.Fatal(err)
		}
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == pathdialer.ServiceREST })
		onUS := mustAcquire(t, h.p, "o-rest-us")
		if onUS.Endpoint != "us" {
			t.Fatalf("REST ticket on %s", onUS.Endpoint)
		}
		h.probes.set("eu", probeOK)
		h.probes.set("us", probeBlackhole)
		h.await(pathdialer.EventSwitch, func(e pathdialer.Event) bool { return e.To == "eu" })
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == pathdialer.ServiceREST && e.Endpoint == "eu" })
		if tk := mustAcquire(t, h.p, "o-rest-eu"); tk.Endpoint != "eu" {
			t.Fatalf("REST granted on %s after the switch to eu", tk.Endpoint)
		}
		recs := rest.all()
		if last := recs[len(recs)-1]; last.To != "eu" || !slices.Equal(orderIDs(last.Tickets), []string{"o-rest-us"}) {
			t.Fatalf("REST reconcile of the switch to eu: %+v", last)
		}
		close(fix.gate)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == "" && e.Endpoint == "eu" })
		frecs := fix.all()
		if last := frecs[len(frecs)-1]; last.To != "eu" || !slices.Equal(orderIDs(last.Tickets), []string{"o-fix-old"}) {
			t.Fatalf("FIX reconcile of the switch to eu: %+v (the abandoned one's tickets must carry over)", last)
		}
	})
}

// With ReconcileByService and no catch-all Reconcile, New accepts the config and
// only the named services may submit: an order of any other service is
// refused with a clear error (it could never be reconciled after a switch).
func TestReconcilersAloneRefuseUnnamedServices(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rest := &svcReconciler{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Reconcile = nil
			c.ReconcileByService = map[string]pathdialer.ReconcileFunc{pathdialer.ServiceREST: rest.reconcile}
		})
		defer h.close()
		h.start()
		ctx := context.Background()
		tk, err := h.p.Acquire(ctx, pathdialer.ServiceREST, "o-rest")
		if err != nil {
			t.Fatalf("REST order refused: %v", err)
		}
		tk.Done()
		_, err = h.p.Acquire(ctx, pathdialer.ServiceFIX, "o-fix")
		if !errors.Is(err, pathdialer.ErrInvalidConfig) {
			t.Fatalf("FIX order with no reconciler: err = %v, want ErrInvalidConfig", err)
		}
		if want := `service "fix" has no reconciler`; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	})
	cfg := baseConfig()
	cfg.Probe = newProbes().probe
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = nil
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Reconcile is required unless ReconcileByService") {
		t.Fatalf("no Reconcile and no ReconcileByService: Validate = %v", err)
	}
}

// Every reconcile function is called at a switch, with no tickets too: it is
// where the application settles what the Path cannot know (the orders of a
// process it takes over from, under Config.ExternalDecisions), as
// Config.Reconcile alone is.
func TestEveryServiceReconcileCalledWithNoTickets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rest := &svcReconciler{}
		fix := &svcReconciler{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.ReconcileByService = map[string]pathdialer.ReconcileFunc{pathdialer.ServiceREST: rest.reconcile, pathdialer.ServiceFIX: fix.reconcile}
			c.InflightGrace = 0
		})
		defer h.close()
		h.start()
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Service == "" })
		for name, recs := range map[string][]pathdialer.Reconciliation{"rest": rest.all(), "fix": fix.all(), "Config.Reconcile": h.hooks.reconciliations()} {
			if len(recs) != 1 || len(recs[0].Tickets) != 0 || recs[0].To != "us" {
				t.Errorf("%s reconciliations at a switch with nothing in flight: %+v, want one with no tickets", name, recs)
			}
		}
	})
}
