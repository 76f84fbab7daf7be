package pathdialer_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// The coordinator's word is taken at once, whatever reconcile is running: an
// Assign that arrives while a background settle of an unknown outcome hangs
// (and while a second unknown outcome becomes due and probe rounds ask for
// evaluations) fences, switches and is released before the settle returns,
// and no other settle attempt starts before it. Before, the settle ran on the
// controller, which took the Assign only after it (and, as its select chose
// at random among what was waiting, sometimes after another settle too).
func TestExternalDecisionTakesPriorityOverPendingEvaluation(t *testing.T) {
	for round := range 24 {
		synctest.Test(t, func(t *testing.T) {
			entered, release := make(chan struct{}, 1), make(chan struct{})
			h := newHarness(t, func(c *pathdialer.Config) {
				c.ExternalDecisions = true
				c.ProbeInterval = 100 * time.Millisecond
				c.ProbeTimeout = 50 * time.Millisecond
				c.SettleUnknown = 200 * time.Millisecond
			})
			defer h.close()
			defer close(release)
			h.start()
			ctx := context.Background()
			if err := h.p.Assign(ctx, "eu", 1); err != nil {
				t.Fatalf("first Assign: %v", err)
			}
			tk := mustAcquire(t, h.p, "o-unknown")
			tk.Unknown(errors.New("connection cut after the write"))
			h.hooks.mu.Lock()
			h.hooks.onReconcile = func(r pathdialer.Reconciliation) {
				if r.Reason != "settle unknown outcomes" {
					return
				}
				select {
				case entered <- struct{}{}:
					<-release
				default:
				}
			}
			h.hooks.mu.Unlock()
			<-entered // a settle is under way and does not return
			time.Sleep(50 * time.Millisecond)
			mustAcquire(t, h.p, "o-unknown-2").Unknown(errors.New("connection cut after the write"))
			time.Sleep(300 * time.Millisecond)
			synctest.Wait()
			mark := len(h.rec.all())
			if err := h.p.Assign(ctx, "us", 2); err != nil {
				t.Fatalf("Assign: %v", err)
			}
			synctest.Wait() // the events are delivered by the Path's dispatcher
			for _, e := range h.rec.all()[mark:] {
				if e.Kind == pathdialer.EventReconcileStart && e.Cause == "settle unknown outcomes" {
					t.Fatalf("round %d: another settle attempt started before the pending Assign:\n%s", round, timeline(h.rec.all()[mark:]))
				}
				if e.Kind == pathdialer.EventDecision {
					if a, _ := h.p.Active(); a.Name != "us" {
						t.Fatalf("round %d: active %q after the Assign", round, a.Name)
					}
					return
				}
			}
			t.Fatalf("round %d: no decision event after the Assign:\n%s", round, timeline(h.rec.all()[mark:]))
		})
	}
}
