package pathdialer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/venue"
)

// The controller is one goroutine that owns every switch: it runs the probe
// rounds, evaluates, and drives the fence → switch → reconcile → release sequence.
// Only it moves the gate (besides Close), so the sequence is never interleaved.

type phase int

const (
	phaseNormal      phase = iota
	phaseFencing           // holding; fence of fenceFrom pending
	phaseReconciling       // switched (or resuming); reconcile pending
)

type controller struct {
	p     *Path
	phase phase
	// halted: the gate is halted (by no target, or by repeated fence/reconcile
	// failures); haltKind says which ("no-target", "fence", "reconcile"), so a
	// halt is announced once per reason and a new reason replaces the old cause.
	halted   bool
	haltKind string
	// fencing
	fenceFrom, fenceTo string
	failback           bool
	fenceAttempt       int
	// dead-man timer (deadman.go): armed on fenceTo for this switch, and the
	// attempts so far
	armOK      bool
	armAttempt int
	armRun     *bgRun
	// avoid: the targets of this failover passed over because their
	// dead-man arm failed FenceAttempts times in a row (deadman.go); cleared
	// when the switch ends (beginReconcile)
	avoid []string
	// open-order reconcile (openorders.go): owed after a fence, by the next
	// release; the runs in progress by service
	ooDue  *ooSwitch
	ooRuns map[string]*bgRun
	// reconciling
	rec       *Reconciliation
	carry     []TicketInfo // tickets taken by an abandoned reconcile
	retryAt   time.Time
	heldSince time.Time
	lastNote  string // last staleness note, to emit EventMonitorStale on change only
	lastFbOut engine.Outcome
	// noFailbackUntil: after a failback abandoned (its preparation or its
	// fence failed), failback is not tried again before this
	// (Config.FailbackBackoff, failback.go); fbAbandoned counts the failbacks
	// abandoned since the last switch.
	noFailbackUntil time.Time
	fbAbandoned     int
	// fbPrep: the failback being prepared before anything is held (dead-man
	// arm, identity re-proof); fbPrepared: the failback starting now was
	// prepared (its decision announced, its arm and re-proof done).
	fbPrep     *failbackPrep
	fbPrepared bool
	// settle: unknown-outcome tickets taken by a settle reconcile that failed,
	// retried at settleRetryAt (or carried into the next switch's reconcile).
	settle        []TicketInfo
	settleAttempt int
	settleRetryAt time.Time
	// external decisions: the Assign being fenced, and the callers waiting for
	// the next release.
	assign  *extReq
	waiters []chan error
	// re-query of provisional NOT_RECEIVED verdicts, by reconciler key
	requery map[string]*requeryState
	// requeryWake: when maybeRequery is next due (a look's time, or the end
	// of a reconciler's pause for the venue's budget); zero when nothing is.
	requeryWake time.Time
	// Config.ReconcileByService: the switch's reconcile split by service, its
	// results, and the goroutines running the reconcilers.
	multi    *multiRec
	multiSeq uint64
	results  chan svcResult
	hooks    sync.WaitGroup
	// Background reconciles (background.go): the settle, the re-queries by
	// reconciler key, and the switch's own reconcile (with Reconcile alone).
	bg          chan bgResult
	bgSeq       uint64
	settleRun   *bgRun
	requeryRuns map[string]*bgRun
	recRun      *bgRun
	fenceRun    *bgRun
	drainRun    *bgRun

	// stuckRec, stuckFails: the switch's reconcile whose attempts failed in
	// a row on its target with no order answered, and how many (retarget.go)
	stuckRec   *Reconciliation
	stuckFails int
}

func (p *Path) control(ctx context.Context) {
	defer close(p.ctlDone)
	c := &controller{p: p, lastFbOut: engine.NoAction, results: make(chan svcResult), bg: make(chan bgResult)}
	defer c.hooks.Wait()
	defer c.endMulti()
	c.adoptStartGate() // a halt Start made (guard.go)
	// Probe rounds and identity checks run in their own goroutine (monitor), so
	// a fence or reconcile in progress here never pauses the health evidence,
	// and each completed round asks for an evaluation through the trigger.
	monDone := make(chan struct{})
	go func() {
		defer close(monDone)
		p.monitor(ctx)
	}()
	defer func() { <-monDone }()
	var retry, requery *time.Timer
	for {
		var retryC, requeryC <-chan time.Time
		if !c.retryAt.IsZero() {
			if retry == nil {
				retry = time.NewTimer(time.Until(c.retryAt))
			} else {
				retry.Reset(time.Until(c.retryAt))
			}
			retryC = retry.C
		}
		if !c.requeryWake.IsZero() {
			if requery == nil {
				requery = time.NewTimer(time.Until(c.requeryWake))
			} else {
				requery.Reset(time.Until(c.requeryWake))
			}
			requeryC = requery.C
		}
		yieldPoint(p, "controller: loop")
		// What is already waiting is taken in a fixed order: the
		// coordinator's word first (it decides; an evaluation pending with it
		// would only delay it, e.g. by another settle), then the reconcilers'
		// results. A select among several ready cases picks at random, which
		// would make the order, and what follows it, differ between runs.
		select {
		case r := <-p.extCh:
			c.onExternal(ctx, r)
			continue
		default:
		}
		select {
		case res := <-c.results:
			c.onMultiResult(ctx, res)
			continue
		default:
		}
		select {
		case res := <-c.bg:
			c.onBackground(ctx, res)
			continue
		default:
		}
		select {
		case <-ctx.Done():
			if retry != nil {
				retry.Stop()
			}
			if requery != nil {
				requery.Stop()
			}
			return
		case <-p.trigger:
			c.step(ctx, false)
		case <-retryC:
			c.step(ctx, true)
		case <-requeryC:
			// A look of the late-landing re-query is due (verdict.go): only
			// the re-query runs, not an evaluation.
			c.requeryWake = time.Time{}
			c.maybeRequery(ctx)
		case r := <-p.extCh:
			c.onExternal(ctx, r)
		case res := <-c.results:
			c.onMultiResult(ctx, res)
		case res := <-c.bg:
			c.onBackground(ctx, res)
		}
	}
}

// monitor runs a probe round every ProbeInterval (a round never overlaps the
// next: a slow one delays it) and the identity checks every IdentityInterval,
// until ctx ends. After each round it asks the controller to evaluate.
func (p *Path) monitor(ctx context.Context) {
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		p.watchOrders(ctx) // late orders make the active endpoint suspect (suspicion.go)
	}()
	defer func() { <-watchDone }()
	ticker := time.NewTicker(p.cfg.ProbeInterval)
	defer ticker.Stop()
	var idTick <-chan time.Time
	if p.cfg.Identity != nil {
		t := time.NewTicker(p.cfg.IdentityInterval)
		defer t.Stop()
		idTick = t.C
	}
	var idDone chan struct{}
	defer func() {
		if idDone != nil {
			<-idDone
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			p.probeRound(ctx)
			yieldPoint(p, "monitor: round -> kick")
			if ctx.Err() == nil {
				p.kick()
			}
		case <-idTick:
			if idDone == nil {
				done := make(chan struct{})
				idDone = done
				go func() {
					defer close(done)
					p.checkIdentities(ctx)
				}()
			}
		case <-idDone:
			idDone = nil
		}
	}
}

// step advances the state machine once. retryDue is true when the retry timer
// fired.
func (c *controller) step(ctx context.Context, retryDue bool) {
	if ctx.Err() != nil {
		return
	}
	if c.awaitSwitchProof(ctx) { // a release waiting for the switch's identity re-check (guard.go)
		return
	}
	switch c.phase {
	case phaseFencing:
		if !c.failback && !c.p.cfg.ExternalDecisions {
			// While the fence is retried, the old endpoint may answer again:
			// then the switch is no longer warranted.
			d, err := c.p.eng.EvaluateFailoverAvoiding(false, c.avoid)
			if err == nil && d.Outcome == engine.NoAction {
				c.abandonFence(ctx, "the active endpoint answers again")
				return
			}
			if err == nil && c.retargetArm(ctx, d) { // deadman.go
				return
			}
			if err == nil && c.retargetFence(ctx, d) { // retarget.go
				return
			}
		}
		if c.fenceRun == nil && c.armRun == nil && (retryDue || c.retryAt.IsZero() || !time.Now().Before(c.retryAt)) {
			c.attemptFence(ctx)
		}
		return
	case phaseReconciling:
		// A reconcile in progress is abandoned if the new active path itself
		// warrants failover; its tickets carry over to the next reconcile.
		if c.p.cfg.ExternalDecisions {
			// The coordinator decides; keep reconciling.
		} else if d, err := c.p.eng.EvaluateFailover(false); err == nil && d.Outcome != engine.NoAction {
			if c.multi != nil {
				c.carry = append(c.carry, c.multiUnsettled()...)
				c.endMulti()
			} else if c.rec != nil {
				c.carry = append(c.carry, c.rec.Tickets...)
			}
			c.stopSwitchWork() // also a wait for orders in flight: they are taken by the next reconcile
			c.rec = nil
			c.retryAt = time.Time{}
			c.phase = phaseNormal
			c.onFailover(ctx, d)
			return
		}
		if c.drainRun != nil {
			return // waiting for orders in flight (InflightGrace)
		}
		if c.multi != nil {
			c.attemptMulti()
			c.maybeRequery(ctx) // the services already reconciled
			return
		}
		if c.recRun == nil && (retryDue || c.retryAt.IsZero() || !time.Now().Before(c.retryAt)) {
			c.attemptReconcile(ctx)
		}
		return
	}
	if c.p.cfg.ExternalDecisions {
		c.maybeSettle(ctx)
		c.maybeRequery(ctx)
		return
	}
	d, err := c.evaluate(ctx, false, false) // probes stale candidates at once (ondemand.go)
	if err != nil {
		c.p.log.Error("pathdialer: evaluate failover", "err", err)
		return
	}
	c.onFailover(ctx, d)
	c.maybeSettle(ctx)
	c.maybeRequery(ctx)
}

func (c *controller) onFailover(ctx context.Context, d engine.Decision) {
	p := c.p
	switch d.Outcome {
	case engine.NoAction:
		c.noteStaleness(d)
		c.reopenAfterDownHold()
		if c.halted {
			// The active endpoint answers again: leave the halt through
			// reconciliation on the same endpoint.
			p.events.emit(Event{Kind: EventResume, Endpoint: d.From, Token: d.Token, Cause: "active endpoint answers again"})
			c.hold(fmt.Errorf("resuming on %q after a halt: reconciling", d.From))
			c.beginReconcile(ctx, d.From, d.From, d.Token, "resume after halt")
			return
		}
		c.evaluateFailback(ctx)
	case engine.NoTargetAvailable:
		c.onNoTarget(d) // halt; degraded reads kept current during it (guard.go)
	case engine.FenceRequired, engine.Switched:
		c.startSwitch(ctx, d, false)
	}
}

// startSwitch begins a warranted switch: hold submissions, then fence the old
// endpoint (FenceRequired) or, when the engine already switched (only with
// BrokerFencesAtLogon: the broker fences the old session when the new one logs on),
// apply the local fence and go straight to reconciliation.
func (c *controller) startSwitch(ctx context.Context, d engine.Decision, failback bool) {
	kind := "failover"
	if failback {
		kind = "failback"
	}
	c.fbPrepared = failback && c.fbPrepared // announced, armed and re-proved before the hold (failback.go)
	if !c.fbPrepared {
		c.p.events.emit(Event{Kind: EventDecision, From: d.From, To: d.To, Token: d.Token, Decision: &d})
		c.startSwitchVerification(ctx, d.To) // identity re-proved alongside fence and reconcile (guard.go)
	}
	if d.Outcome == engine.FenceRequired {
		c.hold(fmt.Errorf("%s from %q to %q: fencing", kind, d.From, d.To))
		c.beginFence(ctx, d.From, d.To, failback)
		return
	}
	c.fbPrepared = false
	c.hold(fmt.Errorf("%s from %q to %q: reconciling", kind, d.From, d.To))
	c.localFence(d.From)
	c.switched(ctx, d, kind)
}

func (c *controller) evaluateFailback(ctx context.Context) {
	p := c.p
	if time.Now().Before(c.noFailbackUntil) {
		return
	}
	d, err := c.evaluate(ctx, true, false)
	if err != nil {
		p.log.Error("pathdialer: evaluate failback", "err", err)
		return
	}
	prev := c.lastFbOut
	c.lastFbOut = d.Outcome
	switch d.Outcome {
	case engine.NoAction:
	case engine.CooldownActive, engine.PrimaryNotStable:
		if prev != d.Outcome {
			p.events.emit(Event{Kind: EventDecision, From: d.From, To: d.To, Token: d.Token, Decision: &d})
		}
	case engine.FlapSuppressed:
		if prev != d.Outcome {
			p.events.emit(Event{Kind: EventDecision, From: d.From, To: d.To, Token: d.Token, Decision: &d})
			p.events.emit(Event{Kind: EventFlapSuppressed, From: d.From, To: d.To, Token: d.Token, Cause: strings.Join(d.Notes, "; ")})
		}
	case engine.FenceRequired, engine.Switched:
		if !c.prepareFailback(ctx, d) { // before anything is held (failback.go)
			return
		}
		c.startSwitch(ctx, d, true)
		return
	}
	if c.fbPrep != nil && !c.failbackPrepFailed() {
		c.cancelFailbackPrep() // no longer warranted: the engine's own gates apply
	}
}

func (c *controller) noteStaleness(d engine.Decision) {
	note := ""
	for _, n := range d.Notes {
		if strings.Contains(n, "stale") {
			note = n
			break
		}
	}
	if note != "" && c.lastNote == "" {
		c.p.events.emit(Event{Kind: EventMonitorStale, Endpoint: d.From, Token: d.Token, Cause: note})
	}
	c.lastNote = note
}

// hold moves the gate to held unless it is already held; a halted gate becomes
// held too, because a switch or resume is now under way.
func (c *controller) hold(cause error) {
	p := c.p
	v := p.gate.Load()
	if v.state == GateHeld && v.cause != nil && v.cause.Error() == cause.Error() {
		return
	}
	c.stopBackground() // a settle or re-query in progress yields to the switch
	c.cancelFailbackPrep()
	a := p.active.Load()
	p.setGate(GateHeld, "", a.gen, cause)
	c.halted = false
	if c.heldSince.IsZero() {
		c.heldSince = time.Now()
	}
	p.events.emit(Event{Kind: EventHold, Endpoint: a.rt.ep.Name, Token: a.gen, Cause: cause.Error()})
}

const (
	haltNoTarget  = "no-target"
	haltFence     = "fence"
	haltReconcile = "reconcile"
	haltExternal  = "coordinator"
	haltDeadMan   = "dead-man"
)

// halt moves the gate to halted, or, when it is already halted for another
// reason, replaces the cause. A halt for the same reason is announced once.
func (c *controller) halt(kind string, cause error) {
	p := c.p
	v := p.gate.Load()
	if v.state == GateHalted && c.halted && c.haltKind == kind {
		return
	}
	c.haltKind = kind
	c.stopBackground()
	c.cancelFailbackPrep()
	a := p.active.Load()
	p.setGate(GateHalted, "", a.gen, cause)
	c.halted = true
	if c.heldSince.IsZero() {
		c.heldSince = time.Now()
	}
	p.stats.halts.Add(1)
	p.events.emit(Event{Kind: EventHalt, Endpoint: a.rt.ep.Name, Token: a.gen, Cause: cause.Error()})
}

func (c *controller) localFence(name string) <-chan struct{} {
	p := c.p
	rt := p.eps[name]
	preserve := p.rest.fence.Mode == venue.Preserve
	n, codUntil, farewells := rt.fenceWith(preserve, time.Now().Add(p.cfg.FarewellTimeout), p.log, &c.hooks)
	p.log.Info("pathdialer: local fence", "endpoint", name, "closed_conns", n, "mode", p.rest.fence.Mode)
	c.oweOpenOrders(name, codUntil) // an open-order reconcile follows the next release (openorders.go)
	return farewells
}

func (c *controller) beginFence(ctx context.Context, from, to string, failback bool) {
	c.phase = phaseFencing
	c.fenceFrom, c.fenceTo, c.failback = from, to, failback
	c.fenceAttempt = 0
	c.armOK, c.armAttempt = c.fbPrepared && failback, 0 // a prepared failback armed the timer before the hold
	c.fbPrepared = false
	c.retryAt = time.Time{}
	c.attemptFence(ctx)
}

func (c *controller) attemptFence(ctx context.Context) {
	p := c.p
	if ctx.Err() != nil {
		return
	}
	if c.needArm() { // the dead-man timer moves first (deadman.go)
		c.attemptArm(ctx)
		return
	}
	rt := p.eps[c.fenceFrom]
	a := p.active.Load()
	c.fenceAttempt++
	p.events.emit(Event{Kind: EventFenceStart, Endpoint: c.fenceFrom, To: c.fenceTo, Token: a.gen, Attempt: c.fenceAttempt})
	farewells := c.localFence(c.fenceFrom)
	c.retryAt = time.Time{} // the result, not the timer, moves on from here
	if p.cfg.Fencer == nil {
		c.fenced(ctx, bgResult{kind: bgFence, start: time.Now()})
		return
	}
	f := Fence{Endpoint: rt.ep, To: c.fenceTo, Token: a.gen, Attempt: c.fenceAttempt, Failback: c.failback, Mode: p.rest.fence.Mode, Effect: p.rest.fence.Effect}
	c.fenceRun = c.runHook(ctx, bgFence, p.cfg.FenceTimeout, func(ctx context.Context) error {
		if farewells != nil { // preserve: the connections' farewells first (bounded by FarewellTimeout)
			select {
			case <-farewells:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return p.cfg.Fencer(ctx, f)
	})
	c.fenceRun.fence = &f
}

// fenced takes the Fencer's result (fence.go's attempt, run beside the
// controller): a failure is retried with backoff (halting after FenceAttempts
// in a row, or giving up a failback); a success lets the engine switch.
func (c *controller) fenced(ctx context.Context, res bgResult) {
	p := c.p
	rt := p.eps[c.fenceFrom]
	a := p.active.Load()
	start, err := res.start, res.err
	if err != nil {
		p.events.emit(Event{Kind: EventFenceFailure, Endpoint: c.fenceFrom, To: c.fenceTo, Token: a.gen, Attempt: c.fenceAttempt, Duration: time.Since(start), Err: err})
		if c.failback {
			// A failback is voluntary: the backup carries flow fine. Give it up
			// at its first failed fence rather than hold (or halt) a healthy
			// path, and try again after FailbackBackoff (failback.go).
			c.deferFailback(c.fenceFrom, c.fenceTo, fmt.Sprintf("the fence of %q failed", c.fenceFrom), err)
			c.abandonFence(ctx, fmt.Sprintf("failback fence of %q failed: %v", c.fenceFrom, err))
			return
		}
		if c.fenceAttempt >= p.cfg.FenceAttempts {
			c.halt(haltFence, fmt.Errorf("fence of %q failed %d times in a row (retrying): %w", c.fenceFrom, c.fenceAttempt, err))
		}
		c.retryAt = time.Now().Add(p.cfg.FenceBackoff.delay(c.fenceAttempt))
		return
	}
	if p.cfg.BrokerFencesViaFencer && p.cfg.Fencer != nil {
		rt.brokerFencedAt.Store(int64(time.Since(p.epoch)))
		rt.brokerFenced.Store(true)
	}
	p.events.emit(Event{Kind: EventFenceSuccess, Endpoint: c.fenceFrom, To: c.fenceTo, Token: a.gen, Attempt: c.fenceAttempt, Duration: time.Since(start)})
	c.retryAt = time.Time{}
	c.phase = phaseNormal
	if c.assign != nil {
		c.assigned(ctx)
		return
	}
	var d engine.Decision
	d, err = c.evaluate(ctx, c.failback, true)
	if err != nil {
		p.log.Error("pathdialer: evaluate with fence confirmed", "err", err)
		return
	}
	switch d.Outcome {
	case engine.Switched:
		p.events.emit(Event{Kind: EventDecision, From: d.From, To: d.To, Token: d.Token, Decision: &d})
		reason := "failover"
		if c.failback {
			reason = "failback"
		}
		c.switched(ctx, d, reason)
	case engine.NoTargetAvailable:
		c.noTargetAfterFence(ctx, d)
	default:
		// The switch is no longer warranted (the active endpoint recovered, or a
		// failback gate closed). Its connections were cut by the fence, so flow
		// resumes on it only through reconciliation.
		if d.Outcome != engine.NoAction {
			p.events.emit(Event{Kind: EventDecision, From: d.From, To: d.To, Token: d.Token, Decision: &d})
		}
		c.beginReconcile(ctx, d.From, d.From, d.Token, "switch abandoned after the fence")
	}
}

// switched publishes the engine's switch: the new endpoint becomes active for
// dials and reads, then reconciliation runs before submissions are released.
func (c *controller) switched(ctx context.Context, d engine.Decision, reason string) {
	p := c.p
	p.setActive(p.eps[d.To], d.Token)
	c.fbAbandoned = 0 // the next failback's backoff starts again
	if d.From != d.To {
		p.adm.movedSinceRelease = true
	}
	yieldPoint(p, "controller: active -> gate")
	p.stats.switches.Add(1)
	p.events.emit(Event{Kind: EventSwitch, From: d.From, To: d.To, Token: d.Token, Cause: reason})
	c.beginReconcile(ctx, d.From, d.To, d.Token, reason)
}

func (c *controller) beginReconcile(ctx context.Context, from, to string, gen uint64, reason string) {
	c.avoid = nil // the switch ended (made, abandoned or resumed)
	p := c.p
	c.phase = phaseReconciling
	c.retryAt = time.Time{}
	if c.halted {
		// The halt was the fence's (it finally succeeded): reconciliation now
		// holds, with its own ReconcileAttempts before it halts, with its cause.
		c.hold(fmt.Errorf("%s from %q to %q: reconciling", reason, from, to))
	}
	// Reconciliation reads through the endpoint flow will resume on; if that
	// endpoint was fenced (failback to it, or a switch abandoned after the fence),
	// lift the fence now. Submissions stay held by the gate until release.
	c.stopBackground()
	c.stopSwitchWork()
	unfenced := c.unfenceActive(ctx)
	if unfenced == nil && (p.cfg.InflightGrace <= 0 || p.inflightCount() == 0) {
		c.takeAndReconcile(ctx, from, to, gen, reason)
		return
	}
	// The Unfence hook, and orders still in flight (InflightGrace to
	// finish): the wait runs beside the controller (background.go), which
	// takes the rest after it.
	c.drainRun = c.runDrain(ctx, unfenced, func(ctx context.Context) { c.takeAndReconcile(ctx, from, to, gen, reason) })
}

// takeAndReconcile takes every ticket in flight or of unknown outcome and
// starts the switch's reconcile (beginReconcile, after the in-flight grace).
func (c *controller) takeAndReconcile(ctx context.Context, from, to string, gen uint64, reason string) {
	p := c.p
	if ctx.Err() != nil {
		return // closing: the tickets stay where they are
	}
	// Orders a failed settle reconcile still holds join this reconcile.
	tickets := p.takeTicketsInto(append(c.carry, c.settle...))
	c.settle, c.settleAttempt = nil, 0
	c.carry = nil
	c.rec = &Reconciliation{From: from, To: to, Token: gen, Reason: reason, Tickets: tickets}
	if len(p.cfg.ReconcileByService) > 0 {
		c.endMulti()
		p.setPending(tickets[:len(tickets):len(tickets)])
		c.beginMulti(ctx)
		c.multiProgress(ctx)
		return
	}
	c.attemptReconcile(ctx)
}

func (c *controller) attemptReconcile(ctx context.Context) {
	p := c.p
	r := c.rec
	if ctx.Err() != nil {
		return
	}
	// Orders that finished unknown since the last attempt join this one.
	r.Tickets = p.takeTicketsInto(r.Tickets)
	p.setPending(r.Tickets[:len(r.Tickets):len(r.Tickets)])
	r.Attempt++
	// The event shares r.Tickets, which is only ever appended to, never written
	// in place (the capacity is cut so an append cannot reach the event's
	// elements); the reconciler gets its own copy, which it may reorder.
	p.events.emit(Event{Kind: EventReconcileStart, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Tickets: r.Tickets[:len(r.Tickets):len(r.Tickets)], Cause: r.Reason})
	c.retryAt = time.Time{} // the result, not the timer, moves on from here
	c.recRun = c.runBackground(ctx, bgSwitch, "", *r, p.cfg.Reconcile)
}

// reconciled takes the switch's reconcile result (Reconcile alone): it
// releases flow on success, and retries (halting after ReconcileAttempts
// failures in a row) on failure.
func (c *controller) reconciled(ctx context.Context, res bgResult) {
	p := c.p
	r := c.rec
	if r == nil || r.Attempt != res.r.Attempt {
		return
	}
	if err := res.err; err != nil {
		kept, open := p.keepAnswers(*r, res.settled, time.Now()) // progress.go
		c.oweSettledResting(*r, kept)                            // openorders.go
		r.Tickets = open
		p.setPending(open[:len(open):len(open)])
		p.events.emit(Event{Kind: EventReconcileFailure, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Duration: time.Since(res.start), Err: err, Settlements: kept})
		if c.reconcileStuckOnTarget(ctx, r.To, len(kept), err) { // another endpoint can carry flow (retarget.go)
			return
		}
		if r.Attempt >= p.cfg.ReconcileAttempts {
			c.halt(haltReconcile, fmt.Errorf("reconcile on %q failed %d times in a row (retrying): %w", r.To, r.Attempt, err))
		}
		c.retryAt = time.Now().Add(p.cfg.ReconcileBackoff.delay(r.Attempt))
		return
	}
	settled := p.judge(res.r, res.settled, time.Now())
	c.oweSettledResting(res.r, settled) // read with the open orders (openorders.go)
	p.setPending(nil)
	p.events.emit(Event{Kind: EventReconcileSuccess, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Duration: time.Since(res.start), Settlements: settled, Cause: r.Reason})
	c.release(ctx)
}

// release opens the gate on the active endpoint.
func (c *controller) release(ctx context.Context) {
	p := c.p
	if c.refuseRelease(ctx) { // never on an endpoint known to front another account (guard.go)
		return
	}
	a := p.active.Load()
	c.unfenceActive(ctx)
	if p.readView.Load() != nil {
		p.setReadView(nil)
		p.events.emit(Event{Kind: EventDegraded, Token: a.gen, Cause: "degraded mode ended: reads follow the active endpoint again"})
	}
	p.setGate(GateOpen, a.rt.ep.Name, a.gen, nil)
	held := time.Since(c.heldSince)
	c.heldSince = time.Time{}
	c.halted = false
	c.phase = phaseNormal
	c.rec = nil
	c.endMulti()
	c.retryAt = time.Time{}
	c.lastFbOut = engine.NoAction
	p.events.emit(Event{Kind: EventRelease, Endpoint: a.rt.ep.Name, Token: a.gen, Duration: held})
	c.startOpenOrders(ctx) // after a fence: resting orders reconciled beside the flow (openorders.go)
	for _, w := range c.waiters {
		w <- nil
	}
	c.waiters = nil
}

// unfenceActive lifts the fence of the active endpoint, if it has one, and calls
// the Unfence hook.
//
// The Unfence hook (a call to the broker) runs beside the controller, bounded
// by FenceTimeout; the returned channel is closed when it returned (nil when
// there is nothing to wait for). A switch's reconcile waits for it, since its
// reads may need the broker to have lifted its fence.
func (c *controller) unfenceActive(ctx context.Context) <-chan struct{} {
	p := c.p
	a := p.active.Load()
	if !a.rt.unfence() {
		return nil
	}
	a.rt.brokerFenced.Store(false)
	p.events.emit(Event{Kind: EventUnfence, Endpoint: a.rt.ep.Name, Token: a.gen})
	if p.cfg.Unfence == nil {
		return nil
	}
	done := make(chan struct{})
	f := Fence{Endpoint: a.rt.ep, To: a.rt.ep.Name, Token: a.gen}
	c.hooks.Add(1)
	go func() {
		defer c.hooks.Done()
		defer close(done)
		uctx, cancel := context.WithTimeout(ctx, p.cfg.FenceTimeout)
		defer cancel()
		if err := callHook(uctx, func(ctx context.Context) error { return p.cfg.Unfence(ctx, f) }); err != nil && ctx.Err() == nil {
			p.log.Warn("pathdialer: unfence hook failed", "endpoint", f.Endpoint.Name, "err", err)
		}
	}()
	return done
}

// abandonFence gives up a switch whose fence has not been confirmed: the local
// fence already cut the endpoint's connections, so flow resumes on it only through
// reconciliation (which lifts its fence first).
func (c *controller) abandonFence(ctx context.Context, why string) {
	p := c.p
	a := p.active.Load()
	p.log.Warn("pathdialer: switch abandoned before the fence was confirmed", "endpoint", c.fenceFrom, "why", why)
	c.phase = phaseNormal
	c.retryAt = time.Time{}
	c.beginReconcile(ctx, a.rt.ep.Name, a.rt.ep.Name, a.gen, "switch abandoned: "+why)
}

// callHook runs a user hook, turning a panic into an error.
func callHook(ctx context.Context, fn func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pathdialer: hook panicked: %v", r)
		}
	}()
	return fn(ctx)
}
