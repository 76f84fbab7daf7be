package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/venue"
)

// DeadManArm is what a DeadManFunc must arm: the venue's cancel-all-after
// timer (Kraken cancelAllOrdersAfter, BitMEX cancelAllAfter, Binance futures
// countdownCancelAll per symbol), refreshed over the endpoint a switch goes
// to, before the old path is fenced.
type DeadManArm struct {
	// Endpoint is the endpoint the switch goes to: arm the timer through it.
	Endpoint Endpoint
	// From is the endpoint being left (its timer refreshes stop with it).
	From string
	// Token is the fencing token of the path being left.
	Token uint64
	// Attempt counts from 1.
	Attempt int
	// Timer is the venue's timer as its profile states it; TimerKnown is
	// false when the profile does not document one.
	Timer      venue.DeadMan
	TimerKnown bool
}

// DeadManFunc arms (or refreshes) the venue's dead-man timer over
// a.Endpoint and keeps refreshing it there from then on. A nil error means the
// timer is armed on the new path; the old path is fenced only after that. It
// must honour ctx (bounded by Config.DeadManTimeout).
type DeadManFunc func(ctx context.Context, a DeadManArm) error

// DeadManStatus is the dead-man timer as the last switch left it (Snapshot).
type DeadManStatus struct {
	// Endpoint the timer was last armed on, or was being armed on.
	Endpoint string `json:"endpoint"`
	// Armed is true when the last arm succeeded.
	Armed bool `json:"armed"`
	// At is when the last attempt ended.
	At time.Time `json:"at"`
	// Attempt is the last attempt of the switch (1 for the first).
	Attempt int `json:"attempt"`
	// Error is the last failure ("" when armed).
	Error string `json:"error,omitempty"`
}

// errDeadManSuperseded ends an arm whose result will not be used.
var errDeadManSuperseded = fmt.Errorf("pathdialer: dead-man arm superseded: the switch was abandoned or halted before the hook returned: %w", errSuperseded)

// ErrDeadManNotArmed: the dead-man hook failed or did not return within
// Config.DeadManTimeout; the switch holds (then halts) rather than fence the
// old path with no armed timer protecting the account.
var ErrDeadManNotArmed = errors.New("pathdialer: dead-man timer not armed on the new path")

// attemptArm runs the DeadMan hook for the switch being fenced, beside the
// controller.
func (c *controller) attemptArm(ctx context.Context) {
	p := c.p
	a := p.active.Load()
	c.armAttempt++
	arm := DeadManArm{Endpoint: p.eps[c.fenceTo].ep, From: c.fenceFrom, Token: a.gen, Attempt: c.armAttempt}
	arm.Timer, arm.TimerKnown = p.cfg.Venue.DeadManTimer()
	c.retryAt = time.Time{}
	c.armRun = c.runHook(ctx, bgDeadMan, p.cfg.DeadManTimeout, func(ctx context.Context) error { return p.cfg.DeadMan(ctx, arm) })
	c.armRun.arm = &arm
}

// armed takes the DeadMan hook's result: success lets the fence go on; a
// failure is a loud hold (event, gate cause, Snapshot), retried with
// FenceBackoff, and after FenceAttempts failures in a row a halt (a failback
// is given up instead).
func (c *controller) armed(ctx context.Context, res bgResult) {
	p := c.p
	a := p.active.Load()
	st := &DeadManStatus{Endpoint: c.fenceTo, Armed: res.err == nil, At: time.Now(), Attempt: c.armAttempt}
	if res.err != nil {
		err := fmt.Errorf("%w: %q: %w", ErrDeadManNotArmed, c.fenceTo, res.err)
		st.Error = boundErrText(err)
		p.rest.setDeadMan(st)
		p.events.emit(Event{Kind: EventDeadManFailure, Endpoint: c.fenceTo, From: c.fenceFrom, To: c.fenceTo, Token: a.gen, Attempt: c.armAttempt, Duration: time.Since(res.start), Err: err})
		if c.failback && c.armAttempt >= p.cfg.FenceAttempts {
			c.deferFailback(c.fenceFrom, c.fenceTo, fmt.Sprintf("dead-man timer not armed on %q", c.fenceTo), err)
			c.abandonFence(ctx, fmt.Sprintf("failback: dead-man timer not armed on %q after %d attempts: %v", c.fenceTo, c.armAttempt, res.err))
			return
		}
		if c.armAttempt >= p.cfg.FenceAttempts && !p.cfg.ExternalDecisions && !slices.Contains(c.avoid, c.fenceTo) {
			// Passed over while another endpoint is eligible: the switch
			// moves there now, or when one becomes eligible (step).
			c.avoid = append(c.avoid, c.fenceTo)
			if d, err := p.eng.EvaluateFailoverAvoiding(false, c.avoid); err == nil && c.retargetArm(ctx, d) {
				return
			}
		}
		if c.armAttempt >= p.cfg.FenceAttempts {
			c.halt(haltDeadMan, fmt.Errorf("dead-man timer not armed on %q, %d attempts in a row (retrying; the old path is not fenced before it is): %w", c.fenceTo, c.armAttempt, err))
		} else {
			c.hold(fmt.Errorf("switch from %q to %q: dead-man timer not armed on %q (attempt %d, retrying): %w", c.fenceFrom, c.fenceTo, c.fenceTo, c.armAttempt, res.err))
		}
		c.retryAt = time.Now().Add(p.cfg.FenceBackoff.delay(c.armAttempt))
		return
	}
	p.rest.setDeadMan(st)
	c.armOK = true
	p.events.emit(Event{Kind: EventDeadManArmed, Endpoint: c.fenceTo, From: c.fenceFrom, To: c.fenceTo, Token: a.gen, Attempt: c.armAttempt, Duration: time.Since(res.start)})
	if c.halted {
		c.hold(fmt.Errorf("switch from %q to %q: fencing", c.fenceFrom, c.fenceTo))
	}
	c.attemptFence(ctx)
}

// retargetArm moves a failover whose dead-man arm has failed on its target
// to the target the engine names now (d, from EvaluateFailoverAvoiding
// without a confirmed fence), when that is another endpoint: the old path is
// not fenced before an arm succeeds, so nothing is undone, and an arm
// retried on a target that died, or that refuses arms, would hold (then
// halt) flow while another endpoint is eligible. A target whose arm failed
// FenceAttempts times in a row is passed over for the rest of the switch
// (controller.avoid) while another is eligible; with none, the arm is
// retried on it as before. It reports whether it moved the switch. A failback is never moved (it is given
// up instead, armed), nor a switch whose arm is running or has succeeded.
func (c *controller) retargetArm(ctx context.Context, d engine.Decision) bool {
	if c.failback || c.p.cfg.ExternalDecisions || d.Outcome != engine.FenceRequired || d.To == "" || d.To == c.fenceTo ||
		!c.needArm() || c.armRun != nil || c.armAttempt == 0 {
		return false
	}
	was, attempts := c.fenceTo, c.armAttempt
	c.p.events.emit(Event{Kind: EventDecision, From: d.From, To: d.To, Token: d.Token, Decision: &d})
	c.startSwitchVerification(ctx, d.To) // identity re-proved for the new target (guard.go)
	c.hold(fmt.Errorf("failover from %q to %q: fencing (dead-man timer not armed on %q after %d attempt(s), no longer the target)", d.From, d.To, was, attempts))
	c.beginFence(ctx, d.From, d.To, false)
	return true
}

// needArm reports whether the switch being fenced must first arm the
// dead-man timer on the endpoint it goes to.
func (c *controller) needArm() bool {
	return c.p.cfg.DeadMan != nil && !c.armOK && c.fenceTo != c.fenceFrom
}

func (s *restingState) setDeadMan(st *DeadManStatus) {
	s.mu.Lock()
	s.deadman = st
	s.mu.Unlock()
}

func boundErrText(err error) string {
	if err == nil {
		return ""
	}
	return boundText(err.Error())
}
