package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// A failback is optional: the backup it leaves carries flow. So whatever can
// fail in it is prepared before anything is held, while the gate stays open on
// the backup: with Config.SwitchIdentityCheck the primary's identity is
// re-proved, and then (never through an endpoint not proved to front the
// account) the dead-man timer is armed over the primary (Config.DeadMan; the
// venues' timers are the account's or a symbol's, not a session's, so arming
// them over the primary while the backup still trades is what every switch
// does, and the arm still comes before the fence). A failed
// Config.TradePathCheck already keeps the primary DEGRADED, so the engine does
// not offer the failback. Only once both succeeded is the backup held and
// fenced. A preparation that fails, or
// a failback fence that fails, abandons the failback at once: flow stays on
// the backup, EventFailbackAbandoned says why and when the next try is, and
// the next try waits Config.FailbackBackoff, growing with each failback
// abandoned in a row. Failover never waits for any of it: a hold or a halt
// cancels a preparation in progress.

// failbackPrep is one failback being prepared.
type failbackPrep struct {
	from, to string
	token    uint64
	needArm  bool         // the DeadMan hook must arm the timer on to
	arm      *bgRun       // the DeadMan hook, while it runs
	armed    bool         // the timer is armed on to (or none is needed)
	check    *switchCheck // the identity re-proof of to (nil without one)
}

// errIdentityNotReproved wraps the verdict of a failback's identity re-proof.
var errIdentityNotReproved = errors.New("pathdialer: failback: the identity of the primary was not re-proved")

// prepareFailback reports whether the failback d may begin now (hold, fence,
// switch). It starts the preparation the first time (and announces the
// decision): the identity re-proof, then, once it proved the endpoint, the
// dead-man arm. It says yes once every part succeeded; a part that failed
// abandons the failback (abandonFailback). With nothing to prepare it says yes
// at once.
func (c *controller) prepareFailback(ctx context.Context, d engine.Decision) bool {
	p := c.p
	if fp := c.fbPrep; fp != nil && (fp.from != d.From || fp.to != d.To || fp.token != d.Token) {
		c.cancelFailbackPrep()
	}
	fp := c.fbPrep
	if fp == nil {
		needArm := p.cfg.DeadMan != nil && d.Outcome == engine.FenceRequired && d.From != d.To
		needCheck := p.switchChecks() && p.eps[d.To] != nil
		if !needArm && !needCheck {
			return true
		}
		p.events.emit(Event{Kind: EventDecision, From: d.From, To: d.To, Token: d.Token, Decision: &d})
		fp = &failbackPrep{from: d.From, to: d.To, token: d.Token, needArm: needArm, armed: !needArm}
		c.fbPrep = fp
		if needCheck {
			fp.check = c.newSwitchCheck(ctx, d.To, 0) // kicks the controller when it ends
		}
	}
	if c.failbackPrepFailed() {
		return false
	}
	if fp.check != nil && !isDone(fp.check.done) {
		return false // the arm waits for the identity: never through another account's endpoint
	}
	if fp.needArm && !fp.armed && fp.arm == nil {
		c.armFailback(ctx, fp)
	}
	if !fp.armed {
		return false
	}
	c.fbPrep = nil
	c.fbPrepared = true
	return true
}

// failbackPrepFailed abandons the failback being prepared if its identity
// re-proof failed, and reports whether it did.
func (c *controller) failbackPrepFailed() bool {
	fp := c.fbPrep
	if fp == nil || fp.check == nil || !isDone(fp.check.done) || fp.check.verdict == nil {
		return false
	}
	err := fmt.Errorf("%w: %q: %w", errIdentityNotReproved, fp.to, fp.check.verdict)
	c.abandonFailback(fp.from, fp.to, fmt.Sprintf("the identity of %q was not re-proved", fp.to), err)
	return true
}

// armFailback runs the DeadMan hook on the failback's target, beside the
// controller; failbackArmed takes its result.
func (c *controller) armFailback(ctx context.Context, fp *failbackPrep) {
	p := c.p
	arm := DeadManArm{Endpoint: p.eps[fp.to].ep, From: fp.from, Token: p.active.Load().gen, Attempt: 1}
	arm.Timer, arm.TimerKnown = p.cfg.Venue.DeadManTimer()
	fp.arm = c.runHook(ctx, bgDeadMan, p.cfg.DeadManTimeout, func(ctx context.Context) error { return p.cfg.DeadMan(ctx, arm) })
	fp.arm.arm = &arm
}

// failbackArmed takes the result of a failback's DeadMan hook (onBackground),
// and reports whether it was that (rather than a switch's arm).
func (c *controller) failbackArmed(ctx context.Context, res bgResult) bool {
	fp := c.fbPrep
	if fp == nil || fp.arm == nil || fp.arm.id != res.id {
		return false
	}
	p := c.p
	fp.arm = nil
	st := &DeadManStatus{Endpoint: fp.to, Armed: res.err == nil, At: time.Now(), Attempt: 1}
	if res.err != nil {
		err := fmt.Errorf("%w: %q: %w", ErrDeadManNotArmed, fp.to, res.err)
		st.Error = boundErrText(err)
		p.rest.setDeadMan(st)
		p.events.emit(Event{Kind: EventDeadManFailure, Endpoint: fp.to, From: fp.from, To: fp.to, Token: p.active.Load().gen, Attempt: 1, Duration: time.Since(res.start), Err: err})
		c.abandonFailback(fp.from, fp.to, fmt.Sprintf("dead-man timer not armed on %q", fp.to), err)
		return true
	}
	p.rest.setDeadMan(st)
	fp.armed = true
	p.events.emit(Event{Kind: EventDeadManArmed, Endpoint: fp.to, From: fp.from, To: fp.to, Token: p.active.Load().gen, Attempt: 1, Duration: time.Since(res.start)})
	p.kick() // the next step begins the failback if it is still warranted
	return true
}

// cancelFailbackPrep drops the failback being prepared, if any: an arm still
// running is cancelled and reported superseded. An identity check still
// running finishes and counts like any identity check.
func (c *controller) cancelFailbackPrep() {
	fp := c.fbPrep
	if fp == nil {
		return
	}
	c.fbPrep = nil
	if run := fp.arm; run != nil {
		run.cancel()
		a := run.arm
		c.p.events.emit(Event{Kind: EventDeadManFailure, Endpoint: a.Endpoint.Name, From: a.From, To: a.Endpoint.Name, Token: a.Token, Attempt: a.Attempt, Duration: time.Since(run.start), Err: errDeadManSuperseded})
	}
}

// abandonFailback gives up the failback from → to before it held anything,
// and defers the next one.
func (c *controller) abandonFailback(from, to, why string, err error) {
	c.cancelFailbackPrep()
	c.deferFailback(from, to, why, err)
}

// deferFailback sets when the next failback may be tried (FailbackBackoff,
// growing with each failback abandoned in a row) and says so.
func (c *controller) deferFailback(from, to, why string, err error) {
	p := c.p
	c.fbAbandoned++
	wait := p.cfg.FailbackBackoff.delay(c.fbAbandoned)
	next := time.Now().Add(wait)
	c.noFailbackUntil = next
	cause := fmt.Sprintf("failback from %q to %q abandoned: %s; flow stays on %q; next try in %v (at %s; %d abandoned in a row)",
		from, to, why, from, wait, next.UTC().Format(time.RFC3339), c.fbAbandoned)
	p.events.emit(Event{Kind: EventFailbackAbandoned, From: from, To: to, Token: p.active.Load().gen, Attempt: c.fbAbandoned, Duration: wait, Err: err, Cause: cause})
}
