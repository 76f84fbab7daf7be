package pathdialer

import (
	"context"
	"errors"
	"fmt"

	"github.com/brokerpath/brokerpath/engine"
)

// A switch's (or a resume's) reconcile reads through its target, the
// endpoint flow will be released on: flow is released only after a
// reconcile succeeded there (guarantee 2), and the reads are the same
// authenticated order-status queries a trade-path check makes, so their
// failure says the target's trade path does not work. Reading through
// another region instead would prove nothing about the target, and a venue
// may answer lookups per region.
//
// So a target whose reconcile cannot succeed is not retried for ever while
// another endpoint could carry flow: while another endpoint is eligible,
// every attempt that failed without answering for a single order counts
// against the target as a failed trade-path check (engine:
// ObserveTradePath), and Engine.FailureThreshold of them in a row (with
// the target's other live-traffic failures) take it DOWN. The switch then
// goes to the eligible endpoint as any failover does: the reconcile in
// progress is abandoned, its orders carried to the next one, the target
// fenced, and flow released on the new endpoint only after its own
// reconcile succeeded there. With no other endpoint eligible the attempts
// are only retried (halting after ReconcileAttempts, retrying behind the
// halt): the failures of the only path are not held against it, and flow
// resumes there as soon as its reads answer.
//
// An attempt that settled some orders before it failed (a venue's lookup
// budget) is progress, never evidence; nor is one cut short by a hold, a
// halt or a switch.

// reconcileStuckOnTarget takes a failed attempt of the switch's reconcile
// (Config.Reconcile alone) on target, which answered for answered orders.
// While another endpoint is eligible it counts the failure against target;
// when that makes target warrant failover, the switch moves on at once
// (controller.step) and it returns true: the caller schedules no retry.
func (c *controller) reconcileStuckOnTarget(ctx context.Context, target string, answered int, err error) bool {
	p := c.p
	if p.cfg.ExternalDecisions || answered > 0 || ctx.Err() != nil || errors.Is(err, errSuperseded) || errors.Is(err, context.Canceled) {
		return false
	}
	if p.active.Load().rt.ep.Name != target || !c.otherEligible(target) {
		return false
	}
	p.observe(target, fmt.Errorf("reconcile through %q failed: %w", target, err), 0, true)
	if d, derr := p.eng.EvaluateFailover(false); derr != nil || (d.Outcome != engine.FenceRequired && d.Outcome != engine.Switched) {
		return false
	}
	rec := c.rec
	c.step(ctx, false) // phaseReconciling: the reconcile is abandoned, the switch goes to the eligible endpoint
	return c.rec != rec || c.phase != phaseReconciling
}

// otherEligible reports whether an endpoint other than name is eligible now.
func (c *controller) otherEligible(name string) bool {
	for _, ep := range c.p.eng.Targets() {
		if ep.Name != name {
			return true
		}
	}
	return false
}
