package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Reconciles (and fences) never run on the controller. The controller is the one goroutine
// that takes a Report that took the active endpoint DOWN, a coordinator's
// Assign, Hold or Halt, and the probe rounds' evaluations; a Reconcile may
// take up to ReconcileTimeout (its reads may go through the region that is
// dying). So every reconcile — a switch's, a settle of unknown outcomes, a
// re-query of provisional verdicts — runs in its own goroutine, and its
// result comes back to the controller as a message, like the per-service
// reconciles of Config.ReconcileByService. A settle or re-query in progress is
// superseded by anything that holds or halts the gate: it is cancelled, a
// settle's orders go to the next reconcile, and a re-query is simply asked
// again later. What a superseded settle or switch reconcile found before it
// was cut short is kept (progress.go: salvage); the rest of its result is
// dropped.
// The Fencer runs the same way: a coordinator's Halt during a fence that hangs
// is taken at once.

type bgKind int

const (
	bgSettle bgKind = iota
	bgRequery
	bgSwitch
	bgFence
	bgDrain
	bgDeadMan    // the DeadMan hook (deadman.go)
	bgOpenOrders // one service's open-order reconcile (openorders.go)
)

// bgRun is one reconcile in progress outside the controller.
type bgRun struct {
	id      uint64
	cancel  context.CancelFunc
	r       Reconciliation
	start   time.Time
	tickets []TicketInfo // a settle's orders, returned to c.settle when superseded
	fence   *Fence       // a fence's call, for the event when superseded
	arm     *DeadManArm  // a dead-man arm, for the event when superseded
	oo      *ooSwitch    // an open-order reconcile's switch
	then    func(context.Context)
	done    chan struct{} // a drain's goroutine has returned
}

// errSuperseded ends a reconcile whose result will not be used: a hold, a
// halt or a switch came first. Its orders go to the next reconcile (so a
// Reconcile may see an order again, as after a failed attempt).
var errSuperseded = errors.New("pathdialer: reconcile superseded by a hold, halt or switch; its orders go to the next reconcile")

// bgResult is a background reconcile's outcome, sent to the controller.
type bgResult struct {
	kind    bgKind
	id      uint64
	key     string // a re-query's reconciler key
	r       Reconciliation
	settled []Settlement
	err     error
	start   time.Time
	report  *OpenOrderReport // an open-order reconcile's result
	more    bool             // an open-order reconcile reads again (openorders.go)
}

// runBackground calls fn(r) with ReconcileTimeout in a goroutine the
// controller tracks, and sends the result to c.bg, a cancelled run's too
// (its answers are kept), unless the controller has stopped.
func (c *controller) runBackground(ctx context.Context, kind bgKind, key string, r Reconciliation, fn ReconcileFunc) *bgRun {
	c.bgSeq++
	run := &bgRun{id: c.bgSeq, r: r, start: time.Now()}
	rctx, cancel := context.WithCancel(ctx)
	run.cancel = cancel
	timeout := c.p.cfg.ReconcileTimeout
	c.hooks.Add(1)
	go func() {
		defer c.hooks.Done()
		defer cancel()
		res := bgResult{kind: kind, id: run.id, key: key, r: r, start: time.Now()}
		tctx, tcancel := context.WithTimeout(rctx, timeout)
		rr := r
		rr.Tickets = slices.Clone(r.Tickets)
		res.err = callHook(tctx, func(ctx context.Context) error {
			var err error
			res.settled, err = fn(ctx, rr)
			return err
		})
		tcancel()
		select {
		case c.bg <- res:
		case <-ctx.Done():
		}
	}()
	return run
}

// runHook calls a hook that returns only an error (the Fencer) with timeout,
// in a goroutine the controller tracks, and sends the result to c.bg unless
// the run was cancelled.
func (c *controller) runHook(ctx context.Context, kind bgKind, timeout time.Duration, fn func(context.Context) error) *bgRun {
	c.bgSeq++
	run := &bgRun{id: c.bgSeq, start: time.Now()}
	rctx, cancel := context.WithCancel(ctx)
	run.cancel = cancel
	c.hooks.Add(1)
	go func() {
		defer c.hooks.Done()
		defer cancel()
		res := bgResult{kind: kind, id: run.id, start: run.start}
		tctx, tcancel := context.WithTimeout(rctx, timeout)
		res.err = callHook(tctx, fn)
		tcancel()
		select {
		case c.bg <- res:
		case <-rctx.Done():
		}
	}()
	return run
}

// runDrain waits, beside the controller, for the Unfence hook (unfenced,
// when not nil) and then until no ticket is in flight or InflightGrace
// passed, then has the controller call then.
func (c *controller) runDrain(ctx context.Context, unfenced <-chan struct{}, then func(context.Context)) *bgRun {
	c.bgSeq++
	run := &bgRun{id: c.bgSeq, start: time.Now(), then: then, done: make(chan struct{})}
	rctx, cancel := context.WithCancel(ctx)
	run.cancel = cancel
	p := c.p
	c.hooks.Add(1)
	go func() {
		defer c.hooks.Done()
		defer close(run.done)
		if unfenced != nil {
			select {
			case <-unfenced:
			case <-rctx.Done():
				return
			}
		}
		p.waitInflight(rctx, p.cfg.InflightGrace)
		select {
		case c.bg <- bgResult{kind: bgDrain, id: run.id, start: run.start}:
		case <-rctx.Done():
		}
	}()
	return run
}

// stopBackground supersedes the settle and re-queries in progress: they are
// cancelled, and the settle's orders go back to c.settle, for the next
// reconcile.
func (c *controller) stopBackground() {
	if run := c.settleRun; run != nil {
		c.supersede(run)
		c.settle = append(c.settle, run.tickets...)
		c.settleRun = nil
	}
	for _, key := range slices.Sorted(maps.Keys(c.requeryRuns)) {
		c.supersede(c.requeryRuns[key])
		delete(c.requeryRuns, key)
	}
	c.stopOpenOrders() // owed still: the next release runs them again (openorders.go)
}

// stopSwitchWork cancels the switch's fence, wait for orders in flight or
// reconcile in progress, if any.
func (c *controller) stopSwitchWork() {
	if c.recRun != nil {
		c.supersede(c.recRun)
		c.recRun = nil
	}
	if run := c.drainRun; run != nil {
		// The waiter shares the Path's in-flight wake-up: let it go first.
		run.cancel()
		<-run.done
		c.drainRun = nil
	}
	if run := c.fenceRun; run != nil {
		run.cancel()
		f := run.fence
		c.p.events.emit(Event{Kind: EventFenceFailure, Endpoint: f.Endpoint.Name, To: f.To, Token: f.Token, Attempt: f.Attempt, Duration: time.Since(run.start), Err: errFenceSuperseded})
		c.fenceRun = nil
	}
	if run := c.armRun; run != nil {
		run.cancel()
		a := run.arm
		c.p.events.emit(Event{Kind: EventDeadManFailure, Endpoint: a.Endpoint.Name, From: a.From, To: a.Endpoint.Name, Token: a.Token, Attempt: a.Attempt, Duration: time.Since(run.start), Err: errDeadManSuperseded})
		c.armRun = nil
	}
}

// errFenceSuperseded ends a fence whose result will not be used (the switch
// was abandoned or the coordinator halted first).
var errFenceSuperseded = errors.New("pathdialer: fence superseded: the switch was abandoned or halted before the Fencer returned")

// supersede cancels a background reconcile and says so.
func (c *controller) supersede(run *bgRun) {
	run.cancel()
	r := run.r
	c.p.events.emit(Event{Kind: EventReconcileFailure, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Duration: time.Since(run.start), Err: errSuperseded, Cause: r.Reason, Service: r.Service})
}

// onBackground takes a background reconcile's result on the controller.
func (c *controller) onBackground(ctx context.Context, res bgResult) {
	if ctx.Err() != nil {
		return
	}
	switch res.kind {
	case bgSettle:
		if c.settleRun == nil || c.settleRun.id != res.id {
			c.salvage(res.r, res.settled) // superseded: its orders went to another reconcile
			return
		}
		c.settleRun = nil
		c.settled(res)
	case bgRequery:
		run := c.requeryRuns[res.key]
		if run == nil || run.id != res.id {
			return
		}
		delete(c.requeryRuns, res.key)
		c.requeried(res)
	case bgSwitch:
		if c.recRun == nil || c.recRun.id != res.id {
			c.salvage(res.r, res.settled) // the switch's reconcile was abandoned
			return
		}
		c.recRun = nil
		c.reconciled(ctx, res)
	case bgDrain:
		if c.drainRun == nil || c.drainRun.id != res.id {
			return
		}
		run := c.drainRun
		c.drainRun = nil
		run.then(ctx)
	case bgFence:
		if c.fenceRun == nil || c.fenceRun.id != res.id || c.phase != phaseFencing {
			return // the switch was abandoned
		}
		c.fenceRun = nil
		c.fenced(ctx, res)
	case bgDeadMan:
		if c.failbackArmed(ctx, res) { // a failback's preparation (failback.go)
			return
		}
		if c.armRun == nil || c.armRun.id != res.id || c.phase != phaseFencing {
			return // the switch was abandoned
		}
		c.armRun = nil
		c.armed(ctx, res)
	case bgOpenOrders:
		run := c.ooRuns[res.key]
		if run == nil || run.id != res.id {
			return // superseded
		}
		if !res.more {
			delete(c.ooRuns, res.key)
		}
		c.openOrdersDone(res)
	}
}

// maybeSettle hands unknown-outcome orders to the reconcile function while flow is
// open on the active endpoint (Config.SettleUnknown), without holding
// submissions. At most one settle runs at a time.
func (c *controller) maybeSettle(ctx context.Context) {
	p := c.p
	if p.cfg.SettleUnknown <= 0 || c.phase != phaseNormal || ctx.Err() != nil || c.settleRun != nil {
		return
	}
	if v := p.gate.Load(); v.state != GateOpen {
		return
	}
	now := time.Now()
	if len(c.settle) == 0 {
		oldest := p.oldestUnknown()
		if oldest.IsZero() || now.Sub(oldest) < p.cfg.SettleUnknown {
			return
		}
	} else if now.Before(c.settleRetryAt) {
		return
	}
	a := p.active.Load()
	tickets := append(slices.Clone(c.settle), p.takeUnknown()...)
	c.settle = nil
	c.settleAttempt++
	r := Reconciliation{From: a.rt.ep.Name, To: a.rt.ep.Name, Token: a.gen, Reason: reasonSettle, Tickets: tickets, Attempt: c.settleAttempt}
	p.events.emit(Event{Kind: EventReconcileStart, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Tickets: slices.Clone(tickets), Cause: r.Reason})
	c.settleRun = c.runBackground(ctx, bgSettle, "", r, p.reconcileAny)
	c.settleRun.tickets = tickets
}

const reasonSettle = "settle unknown outcomes"

// settled takes a settle's result.
func (c *controller) settled(res bgResult) {
	p := c.p
	r := res.r
	if res.err != nil {
		kept, open := p.keepAnswers(r, res.settled, time.Now()) // progress.go
		c.oweSettledResting(r, kept)                            // openorders.go
		p.events.emit(Event{Kind: EventReconcileFailure, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Duration: time.Since(res.start), Err: res.err, Settlements: kept, Cause: r.Reason})
		c.settle = append(c.settle, open...)
		c.settleRetryAt = time.Now().Add(p.cfg.ReconcileBackoff.delay(c.settleAttempt))
		return
	}
	c.settleAttempt = 0
	settled := p.judge(r, res.settled, time.Now())
	c.oweSettledResting(r, settled) // read with the next fence's open orders (openorders.go)
	p.events.emit(Event{Kind: EventReconcileSuccess, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Duration: time.Since(res.start), Settlements: settled, Cause: r.Reason})
}

// requeryGroup starts the re-query of one reconciler's due verdicts.
func (c *controller) requeryGroup(ctx context.Context, key string, tickets []TicketInfo, st *requeryState) {
	p := c.p
	fn := p.cfg.Reconcile
	if key != "" {
		fn = p.cfg.ReconcileByService[key]
	}
	a := p.active.Load()
	st.attempt++
	r := Reconciliation{From: a.rt.ep.Name, To: a.rt.ep.Name, Token: a.gen, Reason: ReasonRequery, Tickets: tickets, Attempt: st.attempt, Service: key}
	p.events.emit(Event{Kind: EventReconcileStart, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Tickets: slices.Clone(tickets), Cause: r.Reason, Service: key})
	if c.requeryRuns == nil {
		c.requeryRuns = map[string]*bgRun{}
	}
	c.requeryRuns[key] = c.runBackground(ctx, bgRequery, key, r, fn)
}

// requeried takes a re-query's result.
func (c *controller) requeried(res bgResult) {
	p := c.p
	r, key := res.r, res.key
	if c.requery == nil {
		c.requery = map[string]*requeryState{}
	}
	st := c.requery[key]
	if st == nil {
		st = &requeryState{attempt: r.Attempt}
		c.requery[key] = st
	}
	if err := res.err; err != nil {
		if key != "" {
			err = fmt.Errorf("pathdialer: re-query of %s: %w", key, err)
		}
		// The orders it did look up again are judged all the same (progress.go).
		kept, late := p.requeried(answersTo(r, res.settled), time.Now())
		c.oweSettledResting(r, lateSettlements(late)) // openorders.go
		p.events.emit(Event{Kind: EventReconcileFailure, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Duration: time.Since(res.start), Err: err, Settlements: kept, Cause: r.Reason, Service: key})
		st.retryAt = time.Now().Add(p.cfg.ReconcileBackoff.delay(st.attempt))
		c.wakeRequeryAt(st.retryAt) // verdict.go
		p.emitLate(late)
		return
	}
	out, late := p.requeried(res.settled, time.Now())
	// A late landing booked RESTING is not in the application's record (it
	// was told the order did not reach the venue): read it with the next
	// fence's open orders, like a switch's RESTING (openorders.go).
	c.oweSettledResting(r, lateSettlements(late))
	st.attempt = 0
	st.retryAt = time.Now().Add(max(p.cfg.ReconcileBackoff.delay(1), p.requeryPause(key, len(r.Tickets)))) // venue.go
	c.wakeRequeryAt(st.retryAt)                                                                            // verdict.go
	p.events.emit(Event{Kind: EventReconcileSuccess, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Duration: time.Since(res.start), Settlements: out, Cause: r.Reason, Service: key})
	p.emitLate(late)
}

// lateSettlements returns the settlements of the late landings a re-query
// found (only these: a re-query's answer about an order settled before is
// not a verdict).
func lateSettlements(late []Verdict) []Settlement {
	out := make([]Settlement, 0, len(late))
	for _, v := range late {
		out = append(out, Settlement{OrderID: v.OrderID, Service: v.Service, Fate: v.Fate, Detail: v.Detail, Final: true})
	}
	return out
}

// emitLate reports the late landings a re-query found.
func (p *Path) emitLate(late []Verdict) {
	for _, v := range late {
		p.events.emit(Event{Kind: EventLateLanding, Endpoint: v.Endpoint, Region: v.Region, Token: v.Token, OrderID: v.OrderID,
			Settlements: []Settlement{{OrderID: v.OrderID, Service: v.Service, Fate: v.Fate, Detail: v.Detail, Final: true}},
			Cause:       lateCause(v)}) // verdict.go
	}
}
