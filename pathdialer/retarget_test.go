package pathdialer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// brokenLookups wraps a harness's Reconcile: while broken is set for the
// target of a reconcile, its reads fail (HTTP 503 at once) or hang until the
// reconcile's context ends (ReconcileTimeout).
// With p set, every broken attempt first reports a successful read of
// another kind (a quote) through the target to p: only the lookups fail.
func brokenLookups(inner pathdialer.ReconcileFunc, broken func(to string) bool, hang bool, p *atomic.Pointer[pathdialer.Path]) pathdialer.ReconcileFunc {
	return func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
		if broken(r.To) {
			if p != nil {
				p.Load().Report(r.To, r.Token, nil, time.Millisecond)
			}
			if hang {
				<-ctx.Done()
				return nil, fmt.Errorf("order lookup through %s: no answer: %w", r.To, ctx.Err())
			}
			return nil, fmt.Errorf("order lookup through %s: HTTP 503", r.To)
		}
		return inner(ctx, r)
	}
}

// retargetConfig is baseConfig with a short reconcile timeout and backoff,
// so that the stated bound is a few seconds.
func retargetConfig(c *pathdialer.Config) {
	c.ReconcileTimeout = 2 * time.Second
	c.ReconcileBackoff = pathdialer.Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	c.FenceTimeout = time.Second
}

// retargetBound is how long a switch whose reconcile cannot succeed on its
// target may keep the gate closed after another endpoint became eligible:
// max(FailureThreshold, 2) failed attempts on the target (each at most
// ReconcileTimeout, then ReconcileBackoff.Max), one more attempt in progress
// when it became eligible, the fence of the target (FenceTimeout), and the
// reconcile on the endpoint flow goes to (ReconcileTimeout).
func retargetBound(c pathdialer.Config) time.Duration {
	attempt := c.ReconcileTimeout + c.ReconcileBackoff.Max
	return time.Duration(max(c.Engine.FailureThreshold, 2)+1)*attempt + c.FenceTimeout + c.ReconcileTimeout
}

// A switch (or a resume) whose reconcile cannot succeed on its target — its
// lookups answer 503, or hang to ReconcileTimeout — does not keep trading
// closed while another endpoint is usable: while one is eligible, each
// attempt that answered for no order counts against the target, and
// FailureThreshold of them in a row move the switch to the eligible
// endpoint (the target fenced first). Flow is released there within
// retargetBound of it becoming eligible, only after the reconcile succeeded
// there, with the order of unknown fate settled by it; never on the target
// whose reconcile never succeeded.
func TestReconcileStuckOnTargetMovesToEligibleEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		hang     bool
		failback bool
		readsOK  bool // other reads through the target succeed
	}{
		{name: "failover-lookups-503"},
		{name: "failover-lookups-503-reads-ok", readsOK: true},
		{name: "failover-lookups-hang", hang: true},
		{name: "failback-lookups-hang", hang: true, failback: true},
		{name: "failback-lookups-503", failback: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var stuck atomic.Value // the endpoint whose lookups fail ("" none)
				stuck.Store("")
				var cfg pathdialer.Config
				var reads *atomic.Pointer[pathdialer.Path]
				if tc.readsOK {
					reads = new(atomic.Pointer[pathdialer.Path])
				}
				h := newHarness(t, func(c *pathdialer.Config) {
					retargetConfig(c)
					c.Engine.Cooldown = 5 * time.Second
					c.Engine.FailbackSuccessThreshold = 2
					c.Reconcile = brokenLookups(c.Reconcile, func(to string) bool { return stuck.Load().(string) == to }, tc.hang, reads)
					cfg = *c
				})
				if reads != nil {
					reads.Store(h.p)
				}
				defer h.close()
				h.start()

				// eu (primary) dies with an order of unknown fate on it.
				tk := mustAcquire(t, h.p, "o-1")
				tk.Unknown(errors.New("connection cut after the order was written"))
				if !tc.failback {
					stuck.Store("us") // the backup's lookups fail
				}
				h.probes.set("eu", probeFail)
				h.await(pathdialer.EventSwitch, func(e pathdialer.Event) bool { return e.To == "us" })

				target, other := "us", "eu"
				var eligible time.Time
				from := 0 // the index of the switch to the target
				if tc.failback {
					// Flow reaches us; eu heals, and the failback to it
					// meets lookups through eu that fail.
					h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
					tk2 := mustAcquire(t, h.p, "o-2")
					tk2.Unknown(errors.New("connection cut after the order was written"))
					stuck.Store("eu")
					h.probes.set("eu", probeOK)
					h.await(pathdialer.EventSwitch, func(e pathdialer.Event) bool { return e.To == "eu" })
					from = h.cursor
					target, other = "eu", "us"
					eligible = time.Now() // us is healthy all along
				} else {
					h.await(pathdialer.EventReconcileFailure, func(e pathdialer.Event) bool { return e.To == "us" })
					h.probes.set("eu", probeOK)
					h.await(pathdialer.EventStateChange, func(e pathdialer.Event) bool {
						return e.Endpoint == "eu" && e.State.String() == "HEALTHY"
					})
					eligible = time.Now()
				}

				rel := h.await(pathdialer.EventRelease, nil)
				took := time.Since(eligible)
				bound := retargetBound(cfg)
				evs := h.rec.all()
				if rel.Endpoint != other {
					t.Fatalf("flow released on %q, want %q (the reconcile on %q never succeeded):\n%s", rel.Endpoint, other, target, timeline(evs))
				}
				t.Logf("released on %q %v after it became eligible (bound %v)", other, took, bound)
				if took > bound {
					t.Fatalf("flow released on %q %v after it became eligible, beyond the bound %v:\n%s", other, took, bound, timeline(evs))
				}
				// Nothing was released on the target, and the target was
				// fenced before flow left it.
				var fencedTarget bool
				for _, e := range evs[from:] {
					if e.Kind == pathdialer.EventRelease && e.Endpoint == target {
						t.Fatalf("released on %q, whose reconcile never succeeded:\n%s", target, timeline(evs))
					}
					if e.Kind == pathdialer.EventFenceSuccess && e.Endpoint == target && e.To == other {
						fencedTarget = true
					}
					if e.Kind == pathdialer.EventSwitch && e.From == target && e.To == other && !fencedTarget {
						t.Fatalf("switched from %q to %q before %q was fenced:\n%s", target, other, target, timeline(evs))
					}
				}
				if !fencedTarget {
					t.Fatalf("no confirmed fence of %q before flow moved to %q:\n%s", target, other, timeline(evs))
				}
				// The orders of unknown fate were settled by the reconcile
				// that released flow, on the endpoint it released.
				var settled []string
				for _, e := range evs {
					if e.Kind == pathdialer.EventReconcileSuccess && e.To == other && e.Token == rel.Token {
						for _, s := range e.Settlements {
							settled = append(settled, s.OrderID)
						}
					}
				}
				want := "o-1"
				if tc.failback {
					want = "o-2"
				}
				if !slices.Contains(settled, want) {
					t.Fatalf("order %s of unknown fate not settled by the reconcile that released %q (settled %v):\n%s", want, other, settled, timeline(evs))
				}
				if n := len(h.p.Unknown()); n != 0 {
					t.Fatalf("%d orders still of unknown fate after the release", n)
				}
			})
		})
	}
}

// With no other endpoint eligible, a reconcile failing on its target is
// only retried there (halting after ReconcileAttempts, retrying behind the
// halt): its failures are not counted against the only path, and flow is
// released on it as soon as its lookups answer again.
func TestReconcileStuckOnOnlyPathRetriesThere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var stuck atomic.Bool
		h := newHarness(t, func(c *pathdialer.Config) {
			retargetConfig(c)
			c.Reconcile = brokenLookups(c.Reconcile, func(to string) bool { return to == "us" && stuck.Load() }, false, nil)
		})
		defer h.close()
		h.start()
		tk := mustAcquire(t, h.p, "o-1")
		tk.Unknown(errors.New("connection cut after the order was written"))
		stuck.Store(true)
		h.probes.set("eu", probeFail) // eu stays down
		h.await(pathdialer.EventSwitch, func(e pathdialer.Event) bool { return e.To == "us" })
		for range 8 {
			h.await(pathdialer.EventReconcileFailure, func(e pathdialer.Event) bool { return e.To == "us" })
		}
		for _, st := range h.p.Snapshot().Endpoints {
			if st.Name == "us" && st.State.String() == "DOWN" {
				t.Fatalf("us DOWN from its own reconcile failures with no other endpoint eligible: %+v", st)
			}
		}
		stuck.Store(false)
		rel := h.await(pathdialer.EventRelease, nil)
		if rel.Endpoint != "us" {
			t.Fatalf("released on %q, want us:\n%s", rel.Endpoint, timeline(h.rec.all()))
		}
		if n := len(h.p.Unknown()); n != 0 {
			t.Fatalf("%d orders still of unknown fate after the release", n)
		}
	})
}
