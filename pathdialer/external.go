package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// External decisions. With Config.ExternalDecisions a Path still probes every
// endpoint (its engine keeps counting, Snapshot and EventProbe show the results, so
// an observer can publish them) and still settles unknown outcomes, but it never
// switches, halts or fails back on its own: a coordinator that decides for many
// processes (see coord/etcd) drives it with Assign, Hold, Halt and Resume. The
// guarantees do not change: every Assign to another endpoint fences the old one,
// switches, reconciles, and only then releases flow; tickets carry the
// coordinator's token as their Token.

var (
	// ErrNotExternal: Assign, Hold, Halt or Resume on a Path that decides by itself.
	ErrNotExternal = errors.New("pathdialer: the Path decides by itself (Config.ExternalDecisions is false)")
	// ErrStaleToken: Assign's token is not after the Path's current token.
	ErrStaleToken = errors.New("pathdialer: stale fencing token")
	// ErrSwitchInProgress: Assign arrived while another switch's fence
	// attempt was running (or, to the endpoint being reconciled, while it
	// reconciles); assign again shortly.
	ErrSwitchInProgress = errors.New("pathdialer: a switch is in progress")
	// ErrSuperseded: the switch an Assign started was taken over by a newer
	// Assign (a higher token) before flow was released; the newer Assign
	// reports the outcome.
	ErrSuperseded = errors.New("pathdialer: the assignment was superseded by a newer one")
)

type extKind int

const (
	extAssign extKind = iota
	extHold
	extHalt
	extResume
)

type extReq struct {
	kind     extKind
	endpoint string
	token    uint64
	cause    error
	done     chan error // buffered 1: the controller never blocks on it
}

func (p *Path) external(ctx context.Context, r extReq) error {
	if !p.cfg.ExternalDecisions {
		return ErrNotExternal
	}
	if p.closed.Load() {
		return ErrClosed
	}
	if !p.running.Load() {
		return ErrNotStarted
	}
	r.done = make(chan error, 1)
	select {
	case p.extCh <- r:
	case <-p.ctlDone:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-p.ctlDone:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("pathdialer: still in progress: %w", ctx.Err())
	}
}

// Assign makes endpoint the active one under the fencing token (a token
// that must be after the current one). To another endpoint, it holds
// submissions, fences the old endpoint (locally and with the Fencer, retried as
// usual), switches, reconciles and releases; Assign returns when flow is released
// on endpoint under token, or when ctx ends (the switch goes on). To the active
// endpoint, it moves the token forward (tickets granted from then on carry
// the new token) and, when submissions are held or halted (a Path with
// ExternalDecisions starts held until its first Assign), releases them through
// reconciliation. A Halt while a switch is in progress makes its Assign return
// ErrTradingHalted. An Assign to another endpoint while a switch is
// reconciling (its target may never answer) takes the switch over: the
// earlier Assign returns ErrSuperseded, the endpoint it made active is fenced
// before the new one is switched to, and the orders its reconcile held are
// reconciled on the new endpoint before flow is released there. So does one
// while an assigned switch's fence failed and waits for its retry (the
// endpoint being left is then fenced toward the new one); while a fence
// attempt is running, Assign returns ErrSwitchInProgress. It refuses, before anything changes, an endpoint this
// process found fronting another account (engine.ErrIdentityMismatch) or lying
// outside Engine.TargetJurisdictions (engine.ErrJurisdiction): the coordinator
// should choose another target. Errors: ErrNotExternal, ErrUnknownEndpoint, ErrStaleToken,
// ErrSwitchInProgress, ErrSuperseded, ErrClosed, or ctx's.
func (p *Path) Assign(ctx context.Context, endpoint string, token uint64) error {
	if _, ok := p.eps[endpoint]; !ok {
		return fmt.Errorf("%w: %q", ErrUnknownEndpoint, endpoint)
	}
	if err := p.admissible(endpoint); err != nil {
		return err
	}
	return p.external(ctx, extReq{kind: extAssign, endpoint: endpoint, token: token})
}

// Hold holds submissions (Acquire waits) with cause, for example while the
// coordinator's session is being re-established. Resume releases them.
func (p *Path) Hold(cause error) error {
	if cause == nil {
		cause = errors.New("held by the coordinator")
	}
	return p.external(context.Background(), extReq{kind: extHold, cause: cause})
}

// Halt refuses submissions at once with ErrTradingHalted wrapping cause, for
// example when the coordinator's session (and so the fencing token) is lost, or
// the coordinator found no eligible target. Resume leaves the halt.
func (p *Path) Halt(cause error) error {
	if cause == nil {
		cause = errors.New("halted by the coordinator")
	}
	return p.external(context.Background(), extReq{kind: extHalt, cause: cause})
}

// Resume leaves a Hold or Halt on the active endpoint through reconciliation and
// returns when flow is released (at once when it is already open).
func (p *Path) Resume(ctx context.Context) error {
	return p.external(ctx, extReq{kind: extResume})
}

// onExternal runs on the controller goroutine.
func (c *controller) onExternal(ctx context.Context, r extReq) {
	p := c.p
	a := p.active.Load()
	switch r.kind {
	case extHold:
		if c.phase != phaseNormal {
			r.done <- ErrSwitchInProgress
			return
		}
		c.hold(fmt.Errorf("held by the coordinator: %w", r.cause))
		r.done <- nil
	case extHalt:
		cause := fmt.Errorf("halted by the coordinator: %w", r.cause)
		if c.phase != phaseNormal {
			// The halt takes over the gate of a switch in progress; whoever
			// waits for that switch is told it will not be released.
			c.carryAbandon()
		}
		for _, w := range c.waiters {
			w <- fmt.Errorf("%w: %w", ErrTradingHalted, cause)
		}
		c.waiters = nil
		c.halt(haltExternal, cause)
		r.done <- nil
	case extResume:
		if c.phase != phaseNormal {
			c.waiters = append(c.waiters, r.done)
			return
		}
		if v := p.gate.Load(); v.state == GateOpen {
			r.done <- nil
			return
		}
		c.waiters = append(c.waiters, r.done)
		c.hold(fmt.Errorf("resuming on %q: reconciling", a.rt.ep.Name))
		c.beginReconcile(ctx, a.rt.ep.Name, a.rt.ep.Name, a.gen, "resume after the coordinator's hold")
	case extAssign:
		if r.token <= a.gen {
			r.done <- fmt.Errorf("%w: token %d is not after the current token %d", ErrStaleToken, r.token, a.gen)
			return
		}
		if r.endpoint != a.rt.ep.Name && (c.phase == phaseReconciling ||
			c.phase == phaseFencing && c.assign != nil && c.fenceRun == nil && c.armRun == nil && c.fenceAttempt > 0) {
			// A newer decision takes over a switch (or resume) still
			// reconciling on the active endpoint, which may never succeed
			// there (its target died after the fence), or an assigned
			// switch whose fence failed and waits to be retried (a fence
			// through a dead target): its callers are told, its orders are
			// carried to the next reconcile, and the active endpoint is
			// fenced below before anything is switched.
			c.supersedeForAssign(r)
		}
		if c.phase != phaseNormal {
			r.done <- ErrSwitchInProgress
			return
		}
		if r.endpoint == a.rt.ep.Name {
			if _, err := p.eng.Assign(r.endpoint, r.token, "token advanced by the coordinator"); err != nil {
				r.done <- err
				return
			}
			p.setActive(a.rt, r.token)
			if v := p.gate.Load(); v.state == GateOpen {
				p.setGate(GateOpen, a.rt.ep.Name, r.token, nil)
				r.done <- nil
				return
			}
			// Held or halted (at Start, or by the coordinator): the assignment
			// is the word to trade again, through reconciliation.
			c.waiters = append(c.waiters, r.done)
			c.hold(fmt.Errorf("assigned %q under token %d: reconciling", r.endpoint, r.token))
			c.beginReconcile(ctx, r.endpoint, r.endpoint, r.token, "assigned by the coordinator")
			return
		}
		c.assign = &r
		c.waiters = append(c.waiters, r.done)
		c.hold(fmt.Errorf("assigned %q under token %d: fencing %q", r.endpoint, r.token, a.rt.ep.Name))
		c.beginFence(ctx, a.rt.ep.Name, r.endpoint, false)
	}
}

// supersedeForAssign ends the reconcile in progress for r, a newer Assign
// to another endpoint: whoever waits for its release gets ErrSuperseded, and
// its tickets are kept for the next reconcile (carryAbandon).
func (c *controller) supersedeForAssign(r extReq) {
	a := c.p.active.Load()
	cause := fmt.Errorf("%w: token %d assigns %q while the reconcile on %q under token %d had not succeeded", ErrSuperseded, r.token, r.endpoint, a.rt.ep.Name, a.gen)
	c.p.log.Warn("pathdialer: a newer assignment takes over a switch still reconciling", "endpoint", a.rt.ep.Name, "token", a.gen, "to", r.endpoint, "new_token", r.token)
	for _, w := range c.waiters {
		w <- cause
	}
	c.waiters = nil
	c.carryAbandon()
}

// carryAbandon drops a switch in progress, keeping its tickets for the next
// reconcile.
func (c *controller) carryAbandon() {
	if c.multi != nil {
		c.carry = append(c.carry, c.multiUnsettled()...)
		c.endMulti()
	} else if c.rec != nil {
		c.carry = append(c.carry, c.rec.Tickets...)
	}
	c.stopSwitchWork()
	c.rec, c.assign = nil, nil
	c.retryAt = time.Time{}
	c.phase = phaseNormal
}

// assigned finishes a fenced Assign: the engine records the coordinator's switch
// under its token, then reconciliation and release follow as for any switch.
func (c *controller) assigned(ctx context.Context) {
	p := c.p
	r := c.assign
	c.assign = nil
	d, err := p.eng.Assign(r.endpoint, r.token, fmt.Sprintf("assigned by the coordinator under token %d", r.token))
	if err != nil {
		// Cannot happen unless the token went stale meanwhile: resume where we are.
		p.log.Error("pathdialer: assign after the fence", "err", err)
		a := p.active.Load()
		c.beginReconcile(ctx, a.rt.ep.Name, a.rt.ep.Name, a.gen, "assignment refused after the fence: "+err.Error())
		return
	}
	if d.Outcome != engine.Switched {
		a := p.active.Load()
		c.beginReconcile(ctx, a.rt.ep.Name, a.rt.ep.Name, d.Token, "assignment to the active endpoint")
		return
	}
	p.events.emit(Event{Kind: EventDecision, From: d.From, To: d.To, Token: d.Token, Decision: &d})
	c.switched(ctx, d, "assigned")
}

// Extend sets the instant until which the coordinator's current decision is
// known to be valid (for coord/etcd: the follower's lease expiry as measured by
// this process, minus a safety margin). From then on Acquire compares the
// monotonic clock with it and refuses with ErrTicketExpired once it has passed,
// without waiting for any goroutine to halt the gate, and every Ticket carries
// it as ValidUntil for the transports' check right before an order is written.
// The latest call wins (an earlier instant than before shortens the validity; a
// past one lapses it at once). Until the first Extend a coordinated Path's
// decisions do not expire. until is converted to this process's monotonic
// clock when Extend is called, so a wall-clock step afterwards does not move
// it. Errors: ErrNotExternal, ErrClosed.
func (p *Path) Extend(until time.Time) error {
	if !p.cfg.ExternalDecisions {
		return ErrNotExternal
	}
	if p.closed.Load() {
		return ErrClosed
	}
	now := time.Now()
	ns := int64(now.Sub(p.epoch) + until.Sub(now))
	if ns <= 0 {
		ns = 1 // 0 means "no deadline"
	}
	p.validNanos.Store(ns)
	return nil
}
