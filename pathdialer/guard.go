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
			if cause := p.rejectedAtStart(); cause != nil { // path.go
				p.startHalt(a, haltNoTarget, cause)
				return cause
			}
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
	p.events.emit(Event{Kind: EventHalt, Endpoint: a.rt.ep.Name, Token: a.gen, Cause: cause.Error()})
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
	p.events.emit(Event{Kind: EventDecision, From: d.From, Token: d.Token, Decision: &d})
	cause := "no eligible target: " + strings.Join(d.Notes, "; ")
	var degraded *Event
	switch {
	case ro != "":
		cause = fmt.Sprintf("degraded mode: no target inside the allowed jurisdictions %v; reads go to %q, submissions are halted (%s)",
			p.cfg.Engine.TargetJurisdictions, ro, strings.Join(d.Notes, "; "))
		if changed {
			p.setReadView(p.eps[ro])
			degraded = &Event{Kind: EventDegraded, Endpoint: ro, Token: d.Token, Cause: cause}
		}
	case changed:
		p.setReadView(nil)
		degraded = &Event{Kind: EventDegraded, Token: d.Token, Cause: fmt.Sprintf("degraded mode ended: %q is no longer usable for reads; reads follow the active endpoint %q again", cur, d.From)}
	}
	// The gate's cause is current before the degraded event is announced: a
	// caller reacting to the event is refused with the reason it announces.
	if already {
		a := p.active.Load()
		p.setGate(GateHalted, "", a.gen, errors.New(cause))
		if degraded != nil {
			p.events.emit(*degraded)
		}
		p.events.emit(Event{Kind: EventHalt, Endpoint: a.rt.ep.Name, Token: a.gen, Cause: cause})
		return
	}
	c.halt(haltNoTarget, errors.New(cause))
	if degraded != nil {
		p.events.emit(*degraded)
	}
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
// over or says why it cannot. With Config.SwitchIdentityCheck it also keeps
// the gate shut on an endpoint switched to until the switch's identity
// re-check proved it: held while the check runs (awaitSwitchProof releases
// when it ends), halted when the check could not be made (re-checked every
// ProbeInterval). It reports whether it refused.
func (c *controller) refuseRelease(ctx context.Context) bool {
	p := c.p
	a := p.active.Load()
	name := a.rt.ep.Name
	st, ok := p.eng.Status(name)
	if ok && st.IdentityMismatch {
		if sw := p.adm.sw; sw != nil {
			sw.waiting = false
		}
		c.rec = nil // its tickets were settled by the reconcile that just succeeded
		c.retryAt = time.Time{}
		c.phase = phaseNormal
		cause := fmt.Errorf("the gate does not open on %q: it fronts another account (%v); evaluating failover", name, st.IdentityError)
		c.tellWaiters(cause)
		c.halt(haltIdentity, cause)
		p.kick()
		return true
	}
	sw, proven := c.switchProof(ctx)
	if proven {
		p.adm.sw = nil
		p.adm.lastReleased = name
		p.adm.movedSinceRelease = false
		return false
	}
	// The reconcile is done (its tickets are settled); what remains is the
	// proof that the endpoint fronts the account.
	c.rec = nil
	c.retryAt = time.Time{}
	c.phase = phaseNormal
	if isDone(sw.done) {
		cause := fmt.Errorf("the gate does not open on %q: its identity could not be re-proved at the switch (%v); submissions stay halted until a check proves it (re-checking every %v)", name, sw.verdict, p.cfg.ProbeInterval)
		c.tellWaiters(cause)
		c.halt(haltUnproven, cause)
		sw = c.newSwitchCheck(ctx, name, p.cfg.ProbeInterval)
	} else {
		c.hold(fmt.Errorf("switch to %q: reconciled; waiting for its identity re-check (at most IdentityTimeout %v)", name, p.cfg.IdentityTimeout))
	}
	sw.waiting = true
	sw.gateCause = p.gate.Load().cause
	return true
}

// haltUnproven: the gate refused to open on an endpoint switched to whose
// identity could not be re-proved.
const haltUnproven = "identity-unproven"

// tellWaiters answers the callers waiting for a release (Assign, Resume)
// that the gate halts instead.
func (c *controller) tellWaiters(cause error) {
	for _, w := range c.waiters {
		w <- fmt.Errorf("%w: %w", ErrTradingHalted, cause)
	}
	c.waiters = nil
}

// Identity re-proved at every switch (Config.SwitchIdentityCheck). When a
// switch begins (the hold), the identity of the endpoint it goes to is
// checked at once, in its own goroutine bounded by IdentityTimeout, alongside
// the fence and the reconcile; the release onto that endpoint waits for the
// verdict. A check quicker than fence + reconcile adds nothing to the hold.
// A mismatch never releases (the gate halts naming it and the controller
// fails over elsewhere or halts); a check that could not be made halts too,
// and is repeated every ProbeInterval until one proves the endpoint. A
// release onto an endpoint switched to without such a check (an Assign)
// starts one and waits for it.

// switchCheck is one identity re-check of the endpoint a switch goes to. The
// goroutine that runs it writes verdict and then closes done; the other
// fields belong to the controller goroutine.
type switchCheck struct {
	target  string
	done    chan struct{}
	verdict error // nil: verified; wraps engine.ErrIdentityMismatch; or inconclusive
	// waiting: the release onto target waits for this check, with gateCause
	// on the gate (another cause there means something else took the gate
	// over: a new switch, a halt, the coordinator).
	waiting   bool
	gateCause error
	// services: a service's release (Config.ReconcileByService) waits for it.
	services bool
}

func isDone(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (p *Path) switchChecks() bool { return p.cfg.Identity != nil && p.cfg.SwitchIdentityCheck }

// startSwitchVerification starts the identity re-check of to when a switch to
// it begins (startSwitch), unless one of it is already running.
func (c *controller) startSwitchVerification(ctx context.Context, to string) {
	p := c.p
	if !p.switchChecks() || p.eps[to] == nil {
		return
	}
	if sw := p.adm.sw; sw != nil && sw.target == to && !isDone(sw.done) {
		return
	}
	c.newSwitchCheck(ctx, to, 0)
}

// newSwitchCheck starts a re-check of name after delay and makes it the
// switch's check. It is tracked by probeWG (Close waits for it) and asks the
// controller to evaluate when it ends.
func (c *controller) newSwitchCheck(ctx context.Context, name string, delay time.Duration) *switchCheck {
	p := c.p
	rt := p.eps[name]
	sc := &switchCheck{target: name, done: make(chan struct{})}
	p.adm.sw = sc
	p.probeWG.Add(1)
	go func() {
		defer p.probeWG.Done()
		sc.verdict = p.reproveIdentity(ctx, rt, delay)
		close(sc.done)
		p.kick()
	}()
	return sc
}

// reproveIdentity asks rt who it fronts, bounded by IdentityTimeout whatever
// the IdentityFunc does, records the verdict like any identity check, and
// returns it.
func (p *Path) reproveIdentity(ctx context.Context, rt *endpointRT, delay time.Duration) error {
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	asked := time.Now()
	cctx, cancel := context.WithTimeout(ctx, p.cfg.IdentityTimeout)
	defer cancel()
	res := make(chan identityResult, 1)
	p.probeWG.Add(1)
	go func() {
		defer p.probeWG.Done()
		var got Identity
		err := callHook(cctx, func(ctx context.Context) error {
			var err error
			got, err = p.cfg.Identity(ctx, rt.ep)
			return err
		})
		res <- identityResult{got, err}
	}()
	t := time.NewTimer(p.cfg.IdentityTimeout)
	defer t.Stop()
	var r identityResult
	select {
	case r = <-res:
	case <-t.C:
		r.err = fmt.Errorf("no answer within IdentityTimeout %v: %w", p.cfg.IdentityTimeout, context.DeadlineExceeded)
	case <-ctx.Done():
		return ctx.Err() // closing: not evidence
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	verdict := p.cfg.ExpectedIdentity.Match(r.id)
	if r.err != nil {
		verdict = fmt.Errorf("identity check of %q could not be made: %w", rt.ep.Name, r.err)
	}
	p.admit(rt, verdict, asked)
	return verdict
}

// switchProof says whether flow may be released onto the active endpoint as
// far as the switch's identity re-check goes: yes when no switch moved flow
// to another endpoint since the gate last opened (a resume, a switch
// abandoned before it moved flow; a switch away and back again before a
// release does not count: the endpoint may have changed meanwhile), or when the re-check of this endpoint verified it. Otherwise it
// returns the check to wait for, starting one (with ctx non-nil) when the
// endpoint was switched to without one.
func (c *controller) switchProof(ctx context.Context) (*switchCheck, bool) {
	p := c.p
	if !p.switchChecks() {
		return nil, true
	}
	name := p.active.Load().rt.ep.Name
	sw := p.adm.sw
	if sw == nil || sw.target != name {
		last := p.adm.lastReleased
		if last == "" {
			last = p.primary()
		}
		if name == last && !p.adm.movedSinceRelease {
			return nil, true
		}
		if ctx == nil {
			return nil, false
		}
		sw = c.newSwitchCheck(ctx, name, 0)
	}
	return sw, isDone(sw.done) && sw.verdict == nil
}

// primary names the endpoint the Path starts on (Start opens the gate there).
func (p *Path) primary() string {
	for _, rt := range p.order {
		if rt.ep.Primary {
			return rt.ep.Name
		}
	}
	return ""
}

// awaitSwitchProof runs first in every step of the controller. While a
// release waits for the switch's identity re-check, a failover the new
// endpoint warrants is acted on at once; when the check ended, the release is
// tried again (it opens the gate, or refuses it naming why). A service
// release (Config.ReconcileByService) that waited is tried again too. It reports
// whether the step is done.
func (c *controller) awaitSwitchProof(ctx context.Context) bool {
	p := c.p
	sw := p.adm.sw
	if sw == nil {
		return false
	}
	if sw.services {
		if isDone(sw.done) {
			sw.services = false
			if c.multi != nil && c.phase == phaseReconciling {
				c.multiProgress(ctx)
			}
		}
		return false
	}
	if !sw.waiting {
		return false
	}
	if c.phase != phaseNormal || p.gate.Load().cause != sw.gateCause {
		sw.waiting = false // something else took the gate over
		return false
	}
	done := isDone(sw.done)
	if st, _ := p.eng.Status(sw.target); st.IdentityMismatch || done && sw.verdict != nil {
		// (The check records its verdict just before it is done.)
		sw.waiting = false
		c.release(ctx) // refused, naming why (a mismatch: then failover is evaluated)
		return true
	}
	if !p.cfg.ExternalDecisions {
		if d, err := p.eng.EvaluateFailover(false); err == nil && d.Outcome != engine.NoAction {
			sw.waiting = false
			c.onFailover(ctx, d)
			return true
		}
	}
	if done {
		sw.waiting = false
		c.release(ctx)
	}
	return true
}

// holdServiceRelease keeps a service's submissions (Config.ReconcileByService) held
// on an endpoint switched to until the switch's identity re-check proved it.
func (c *controller) holdServiceRelease() bool {
	sw, proven := c.switchProof(nil)
	if proven {
		return false
	}
	if sw != nil && !isDone(sw.done) {
		sw.services = true
	}
	return true
}
