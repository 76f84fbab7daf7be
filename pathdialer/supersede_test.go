package pathdialer_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// A coordinator's newer decision is never refused because an older one is
// stuck: an Assign whose reconcile keeps failing on its target (the target
// died after the fence) holds the gate, and a newer Assign (a higher token)
// to an endpoint that works takes over the switch. The stuck target is
// fenced before anything is released, the orders the stuck reconcile held are
// reconciled on the new target, the superseded Assign returns ErrSuperseded,
// and the older token stays refused.
func TestNewerAssignSupersedesSwitchStuckOnDeadTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := coordinatedOnEU(t)
		defer h.close()
		ctx := context.Background()
		inflight := mustAcquire(t, h.p, "o-inflight")
		stuck := make(chan error, 1)
		go func() { stuck <- h.p.Assign(ctx, "us", 2) }()
		for range 3 {
			h.await(pathdialer.EventReconcileFailure, func(e pathdialer.Event) bool { return e.To == "us" })
		}
		if st := gateState(h.p); st == pathdialer.GateOpen {
			t.Fatalf("gate %v while the reconcile on us fails", st)
		}

		if err := h.p.Assign(ctx, "eu", 3); err != nil {
			t.Fatalf("newer Assign while the switch to us is stuck reconciling: %v", err)
		}
		if err := <-stuck; !errors.Is(err, pathdialer.ErrSuperseded) {
			t.Fatalf("the superseded Assign returned %v, want ErrSuperseded", err)
		}
		if a, gen := h.p.Active(); a.Name != "eu" || gen != 3 {
			t.Fatalf("active %s/%d, want eu under token 3", a.Name, gen)
		}
		if !h.p.Fenced("us") {
			t.Error("the stuck target us is not fenced")
		}
		f := h.hooks.fenceCalls()
		if len(f) != 2 || f[1].Endpoint.Name != "us" || f[1].To != "eu" || f[1].Token != 2 {
			t.Errorf("fence calls %+v, want eu->us then us->eu under token 2", f)
		}
		recs := h.hooks.reconciliations()
		last := recs[len(recs)-1]
		if last.To != "eu" || last.Token != 3 || !slices.Equal(orderIDs(last.Tickets), []string{"o-inflight"}) {
			t.Fatalf("last reconciliation %+v, want eu under token 3 with the stuck reconcile's order", last)
		}
		inflight.Done()
		tk := mustAcquire(t, h.p, "o-3")
		if tk.Endpoint != "eu" || tk.Token != 3 {
			t.Fatalf("ticket %s/%d, want eu under token 3", tk.Endpoint, tk.Token)
		}
		tk.Done()
		if err := h.p.Assign(ctx, "us", 2); !errors.Is(err, pathdialer.ErrStaleToken) {
			t.Fatalf("Assign under the superseded token: %v", err)
		}
	})
}

// A coordinated Path does not switch by itself, but its evidence is what the
// coordinator decides from: a switch's reconcile that keeps failing on its
// target with no order answered, while another endpoint is eligible, takes
// the target DOWN (its probes still pass), so the coordinator sees that the
// endpoint it chose cannot carry flow. The Path itself stays on the target,
// holding, until the coordinator's next word.
func TestStuckReconcileTakesTargetDownUnderExternalDecisions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := coordinatedOnEU(t)
		defer h.close()
		ctx := context.Background()
		stuck := make(chan error, 1)
		go func() { stuck <- h.p.Assign(ctx, "us", 2) }()
		thr := h.p.Engine().Config().FailureThreshold
		for range max(thr, 2) {
			h.await(pathdialer.EventReconcileFailure, func(e pathdialer.Event) bool { return e.To == "us" })
		}
		synctest.Wait()
		if st, _ := h.p.Engine().Status("us"); st.State != engine.Down {
			t.Fatalf("us is %v after %d failed reconciles with no order answered while eu is eligible, want DOWN", st.State, max(thr, 2))
		}
		if a, gen := h.p.Active(); a.Name != "us" || gen != 2 {
			t.Fatalf("active %s/%d: the coordinated Path moved by itself", a.Name, gen)
		}
		if st := gateState(h.p); st == pathdialer.GateOpen {
			t.Fatalf("gate %v on a target whose reconcile fails", st)
		}
		if err := h.p.Assign(ctx, "eu", 3); err != nil {
			t.Fatalf("the coordinator's next Assign: %v", err)
		}
		if err := <-stuck; !errors.Is(err, pathdialer.ErrSuperseded) {
			t.Fatalf("the stuck Assign returned %v", err)
		}
	})
}

// The same while the switch is still being fenced: a broker-side fence that
// travels over the target cannot succeed while the target is dead, and a
// coordinated Path does not move the fence elsewhere by itself. A newer
// Assign, between two fence attempts, takes the switch over: the endpoint
// being left is fenced toward the new target before anything is switched,
// and the dead target never becomes active.
func TestNewerAssignSupersedesSwitchStuckFencing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		epAP := pathdialer.Endpoint{Name: "ap", Region: "ap-northeast-1", Priority: 20,
			Services: map[string]string{"rest": "https://api-ap.broker.example", "fix": "fix-ap.broker.example:9878"}}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.ExternalDecisions = true
			c.Endpoints = append(c.Endpoints, epAP)
			fence := c.Fencer
			c.Fencer = func(ctx context.Context, f pathdialer.Fence) error {
				err := fence(ctx, f)
				if f.To == "us" {
					return errors.New("fence through us: connection refused")
				}
				return err
			}
		})
		defer h.close()
		h.start()
		ctx := context.Background()
		if err := h.p.Assign(ctx, "eu", 1); err != nil {
			t.Fatalf("first Assign: %v", err)
		}
		stuck := make(chan error, 1)
		go func() { stuck <- h.p.Assign(ctx, "us", 2) }()
		for range 2 {
			h.await(pathdialer.EventFenceFailure, func(e pathdialer.Event) bool { return e.To == "us" })
		}
		synctest.Wait()
		if err := h.p.Assign(ctx, "ap", 3); err != nil {
			t.Fatalf("newer Assign while the switch to us is stuck fencing: %v", err)
		}
		if err := <-stuck; !errors.Is(err, pathdialer.ErrSuperseded) {
			t.Fatalf("the superseded Assign returned %v, want ErrSuperseded", err)
		}
		if a, gen := h.p.Active(); a.Name != "ap" || gen != 3 {
			t.Fatalf("active %s/%d, want ap under token 3", a.Name, gen)
		}
		if !h.p.Fenced("eu") {
			t.Error("eu, the endpoint left, is not fenced")
		}
		f := h.hooks.fenceCalls()
		if last := f[len(f)-1]; last.Endpoint.Name != "eu" || last.To != "ap" {
			t.Errorf("last fence %s->%s, want eu->ap", last.Endpoint.Name, last.To)
		}
		for _, d := range h.p.Engine().History() {
			if d.To == "us" {
				t.Errorf("the dead target us became active: %+v", d)
			}
		}
		if err := h.p.Assign(ctx, "us", 2); !errors.Is(err, pathdialer.ErrStaleToken) {
			t.Fatalf("Assign under the superseded token: %v", err)
		}
	})
}

// coordinatedOnEU starts a Path under ExternalDecisions whose reconciles on
// us fail (its order lookups answer 503), assigned eu under token 1.
func coordinatedOnEU(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, func(c *pathdialer.Config) {
		c.ExternalDecisions = true
		ok := c.Reconcile
		c.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
			s, err := ok(ctx, r)
			if r.To == "us" {
				return nil, errors.New("us: order status lookup: 503")
			}
			return s, err
		}
	})
	h.start()
	if err := h.p.Assign(context.Background(), "eu", 1); err != nil {
		h.close()
		t.Fatalf("first Assign: %v", err)
	}
	return h
}
