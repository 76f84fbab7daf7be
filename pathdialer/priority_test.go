package pathdialer_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// The coordinator's word is taken before any evaluation that is waiting with
// it: when an Assign and a probe round's evaluation are both pending while the
// controller is busy (here: a background settle of an unknown outcome, while a
// second unknown outcome becomes due), the Assign runs first. Before,
// the controller's select chose between them at random, so the switch could
// wait behind another settle attempt, and two runs of one schedule differed.
// Each of the 24 rounds has an even chance of the wrong order without the
// priority.
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
			<-entered // the controller is inside the settle
			// While it is busy: a second order's outcome becomes unknown and
			// old enough to settle, probe rounds end and ask for an
			// evaluation, and the coordinator assigns us.
			time.Sleep(50 * time.Millisecond)
			mustAcquire(t, h.p, "o-unknown-2").Unknown(errors.New("connection cut after the write"))
			time.Sleep(300 * time.Millisecond)
			assigned := make(chan error, 1)
			go func() { assigned <- h.p.Assign(ctx, "us", 2) }()
			synctest.Wait()
			mark := len(h.rec.all())
			close(release)
			if err := <-assigned; err != nil {
				t.Fatalf("Assign: %v", err)
			}
			synctest.Wait() // the events are delivered by the Path's dispatcher
			for _, e := range h.rec.all()[mark:] {
				if e.Kind == pathdialer.EventReconcileStart && e.Cause == "settle unknown outcomes" {
					t.Fatalf("round %d: another settle attempt started before the pending Assign:\n%s", round, timeline(h.rec.all()[mark:]))
				}
				if e.Kind == pathdialer.EventDecision {
					return
				}
			}
			t.Fatalf("round %d: no decision event after the Assign:\n%s", round, timeline(h.rec.all()[mark:]))
		})
	}
}
