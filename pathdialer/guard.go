package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// ErrNoEligibleEndpoint: Start waited Config.StartWait and no endpoint became
// eligible. The Path runs on, halted, and resumes when one does.
var ErrNoEligibleEndpoint = errors.New("pathdialer: no endpoint is eligible")

// haltIdentity: the gate refused to open on an endpoint known to front another
// account.
const haltIdentity = "identity"

// openAtStart opens the gate on the active endpoint after Start's first round,
// unless the active endpoint is known to front another account (the gate is
// then halted, and the controller's first evaluation fails over or says why
// it cannot), or, with Config.StartWait, until an endpoint is eligible.
func (p *Path) openAtStart(ctx context.Context, a *activeView) error {
	if w := p.cfg.StartWait; w > 0 && len(p.eng.Targets()) == 0 {
		deadline := time.Now().Add(w)
		for len(p.eng.Targets()) == 0 {
			left := time.Until(deadline)
			if left <= 0 || ctx.Err() != nil {
				var why []string
				for _, st := range p.eng.Statuses() {
					why = append(why, fmt.Sprintf("%q %v", st.Endpoint.Name, describeStatus(st)))
				}
				cause := fmt.Errorf("%w after waiting %v at Start: %s", ErrNoEligibleEndpoint, w, strings.Join(why, "; "))
				if ctx.Err() != nil {
					cause = fmt.Errorf("%w: Start's context ended (%w) before an endpoint was eligible: %s", ErrNoEligibleEndpoint, ctx.Err(), strings.Join(why, "; "))
				}
				p.startHalt(a, haltNoTarget, cause)
				return cause
			}
			t := time.NewTimer(min(p.cfg.ProbeInterval, left))
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			if ctx.Err() == nil {
				p.probeRound(ctx)
			}
		}
	}
	if st, _ := p.eng.Status(a.rt.ep.Name); st.IdentityMismatch {
		p.startHalt(a, haltIdentity, fmt.Errorf("the active endpoint %q fronts another account (%v): the gate does not open on it; evaluating failover", a.rt.ep.Name, st.IdentityError))
		p.kick()
		return nil
	}
	p.setGate(GateOpen, a.rt.ep.Name, a.gen, nil)
	return nil
}

func describeStatus(st engine.Status) string {
	switch {
	case st.IdentityMismatch:
		return fmt.Sprintf("%v, identity mismatch: %v", st.State, st.IdentityError)
	case st.LastProbeError != nil:
		return fmt.Sprintf("%v: %v", st.State, st.LastProbeError)
	}
	return st.State.String()
}

// startHalt halts the gate before the controller runs; adoptStartGate tells
// the controller.
func (p *Path) startHalt(a *activeView, kind string, cause error) {
	p.adm.mu.Lock()
	p.adm.startHalt = kind
	p.adm.mu.Unlock()
	p.setGate(GateHalted, "", a.gen, cause)
	p.stats.halts.Add(1)
	p.events.emit(Event{Kind: EventHalt, Endpoint: a.rt.ep.Name, Generation: a.gen, Cause: cause.Error()})
}

// adoptStartGate makes the controller aware of a halt Start made.
func (c *controller) adoptStartGate() {
	c.p.adm.mu.Lock()
	kind := c.p.adm.startHalt
	c.p.adm.mu.Unlock()
	if kind != "" && c.p.gate.Load().state == GateHalted {
		c.halted, c.haltKind = true, kind
		c.heldSince = time.Now()
	}
}

// onNoTarget halts for want of a target, and keeps the degraded read-only mode
// (Config.DegradedReads) current while the halt lasts: it starts when an
// endpoint outside the allowed jurisdictions becomes usable for reads, moves
// or ends when that endpoint goes down or is found fronting another account.
func (c *controller) onNoTarget(d engine.Decision) {
	p := c.p
	ro := ""
	if p.cfg.DegradedReads {
		ro = d.ReadOnlyTarget
	}
	cur := ""
	if v := p.readView.Load(); v != nil {
		cur = v.rt.ep.Name
	}
	changed := ro != cur
	already := c.halted && c.haltKind == haltNoTarget
	// One decision event per halt (the notes carry counts and ages that change
	// every round), and one more whenever the degraded mode changes.
	if already && !changed {
		return
	}
	p.events.emit(Event{Kind: EventDecision, From: d.From, Generation: d.Generation, Decision: &d})
	cause := "no eligible target: " + strings.Join(d.Notes, "; ")
	switch {
	case ro != "":
		cause = fmt.Sprintf("degraded mode: no target inside the allowed jurisdictions %v; reads go to %q, submissions are halted (%s)",
			p.cfg.Engine.TargetJurisdictions, ro, strings.Join(d.Notes, "; "))
		if changed {
			p.setReadView(p.eps[ro])
			p.events.emit(Event{Kind: EventDegraded, Endpoint: ro, Generation: d.Generation, Cause: cause})
		}
	case changed:
		p.setReadView(nil)
		p.events.emit(Event{Kind: EventDegraded, Generation: d.Generation, Cause: fmt.Sprintf("degraded mode ended: %q is no longer usable for reads; reads follow the active endpoint %q again", cur, d.From)})
	}
	if already {
		a := p.active.Load()
		p.setGate(GateHalted, "", a.gen, errors.New(cause))
		p.events.emit(Event{Kind: EventHalt, Endpoint: a.rt.ep.Name, Generation: a.gen, Cause: cause})
		return
	}
	c.halt(haltNoTarget, errors.New(cause))
}

// noTargetAfterFence: the fence was confirmed, but fresh evidence leaves no
// target. Nothing switched, so the active endpoint is not "switched away
// from": its local fence is lifted (reads work, Fenced reports false), and
// submissions stay halted until it or another endpoint can carry them.
func (c *controller) noTargetAfterFence(ctx context.Context, d engine.Decision) {
	c.unfenceActive(ctx)
	d.Notes = append([]string{"no eligible target after the fence"}, d.Notes...)
	c.onNoTarget(d)
}

// refuseRelease keeps the gate shut on an active endpoint known to front
// another account: it halts (loudly) and asks for an evaluation, which fails
// over or says why it cannot. It reports whether it refused.
func (c *controller) refuseRelease() bool {
	p := c.p
	a := p.active.Load()
	st, ok := p.eng.Status(a.rt.ep.Name)
	if !ok || !st.IdentityMismatch {
		return false
	}
	c.rec = nil // its tickets were settled by the reconcile that just succeeded
	c.retryAt = time.Time{}
	c.phase = phaseNormal
	cause := fmt.Errorf("the gate does not open on %q: it fronts another account (%v); evaluating failover", a.rt.ep.Name, st.IdentityError)
	for _, w := range c.waiters {
		w <- fmt.Errorf("%w: %w", ErrTradingHalted, cause) // an Assign waiting for this release
	}
	c.waiters = nil
	c.halt(haltIdentity, cause)
	p.kick()
	return true
}
