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
// another endpoint could carry flow: when Engine.FailureThreshold attempts
// (at least two: one failure may be the tail of an outage just ended, a
// read breaker still open) in a row of the switch's reconcile failed on the
// target without answering for a single order, and another endpoint is
// eligible, the target is taken DOWN on that evidence, recorded as
// FailureThreshold failures of live traffic (as failed trade-path checks
// would be; with its probe passing, a gray failure, which ends on
// trade-path evidence). The switch then goes to the eligible endpoint as
// any failover does: the reconcile in progress is abandoned, its orders
// carried to the next one, the target fenced, and flow released on the new
// endpoint only after its own reconcile succeeded there. The attempts are
// counted by the controller, not by the engine's run of live-traffic
// failures, which a successful read of another kind (a quote, an account
// read) through the target would end. With no other endpoint eligible the
// attempts are only retried (halting after ReconcileAttempts, retrying
// behind the halt): the failures of the only path are not held against it,
// and flow resumes there as soon as its reads answer.
//
// With Config.ExternalDecisions the target is taken DOWN on the same
// evidence, and nothing else changes: the Path keeps retrying the reconcile
// there, holding, until the coordinator, which sees the target DOWN, assigns
// another endpoint (an Assign that takes the switch over, external.go).
//
// An attempt that settled some orders before it failed (a venue's lookup
// budget) is progress and starts the count again; one cut short by a hold,
// a halt or a switch is not counted.

// reconcileStuckOnTarget takes a failed attempt of the switch's reconcile
// (Config.Reconcile alone) on target, which answered for answered orders.
// When FailureThreshold attempts (at least two) in a row failed there with
// no answer and another endpoint is eligible, it takes target DOWN and, when that makes
// target warrant failover (never with ExternalDecisions), moves the switch on at once (controller.step)
// and returns true: the caller schedules no retry.
func (c *controller) reconcileStuckOnTarget(ctx context.Context, target string, answered int, err error) bool {
	p := c.p
	if ctx.Err() != nil || errors.Is(err, errSuperseded) || errors.Is(err, context.Canceled) {
		return false
	}
	if c.stuckRec != c.rec || answered > 0 {
		c.stuckRec, c.stuckFails = c.rec, 0
	}
	if answered > 0 {
		return false
	}
	c.stuckFails++
	thr := p.eng.Config().FailureThreshold
	if c.stuckFails < max(thr, 2) || p.active.Load().rt.ep.Name != target || !c.otherEligible(target) {
		return false
	}
	cause := fmt.Errorf("reconcile through %q failed %d times in a row with no order answered, while another endpoint is eligible: %w", target, c.stuckFails, err)
	p.log.Warn("pathdialer: reconcile cannot succeed on its target; another endpoint is eligible", "endpoint", target, "attempts", c.stuckFails, "err", err)
	for range 2 * thr { // a success reported meanwhile (another kind of read) ends a run: record a full one
		if st, _ := p.observe(target, cause, 0, true); st == engine.Down {
			break
		}
	}
	if p.cfg.ExternalDecisions {
		// The coordinator decides from this evidence (its next Assign takes
		// the switch over, external.go); the attempts go on until then.
		return false
	}
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

// A failover's fence may fail because its target died: a Fencer acts for
// the endpoint being left, but a broker-side fence is a call that travels
// over a path, often the one the switch goes to (Fence.To). Retried toward a
// dead target it cannot succeed, and the switch would hold (then halt) for
// as long as the target is dead while another endpoint is eligible.
//
// retargetFence moves a failover being fenced to the target the engine
// names now (d, from EvaluateFailoverAvoiding without a confirmed fence)
// when a fence attempt toward the current target has failed, no attempt is
// running, and the current target is no longer eligible (DOWN, or its
// health stale). The endpoint being left is the same: nothing is switched
// before a fence of it toward the new target is confirmed, and with a
// dead-man hook the timer is armed on the new target first. A fence that
// fails while its target stays eligible is the endpoint being left refusing
// it, and is retried (then halted) as before; a failback is never moved (it
// is given up at its first failed fence). It reports whether it moved the
// switch.
func (c *controller) retargetFence(ctx context.Context, d engine.Decision) bool {
	if c.failback || c.p.cfg.ExternalDecisions || d.Outcome != engine.FenceRequired || d.To == "" || d.To == c.fenceTo ||
		d.From != c.fenceFrom || c.fenceRun != nil || c.armRun != nil || c.fenceAttempt == 0 || c.targetEligible(c.fenceTo) {
		return false
	}
	was, attempts := c.fenceTo, c.fenceAttempt
	c.p.log.Warn("pathdialer: fence failed toward a target no longer eligible; the switch moves to another", "from", d.From, "was", was, "to", d.To, "attempts", attempts)
	c.p.events.emit(Event{Kind: EventDecision, From: d.From, To: d.To, Token: d.Token, Decision: &d})
	c.startSwitchVerification(ctx, d.To) // identity re-proved for the new target (guard.go)
	c.hold(fmt.Errorf("failover from %q to %q: fencing (the fence toward %q failed %d time(s) and it is no longer eligible)", d.From, d.To, was, attempts))
	c.beginFence(ctx, d.From, d.To, false)
	return true
}

// targetEligible reports whether name is an eligible target now.
func (c *controller) targetEligible(name string) bool {
	for _, ep := range c.p.eng.Targets() {
		if ep.Name == name {
			return true
		}
	}
	return false
}
