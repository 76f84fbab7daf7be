package main

// defects are the defects plant knows, by name. Each re-plants a defect the
// runtime once had (or a variant of it), as the exact inverse of its fix in
// today's code; make sim-plant DEFECT=name sweeps the simulation against it
// and succeeds when a seed breaks its Invariant.
//
// To add one: name the file and the function (Func: the whole declaration as
// it was, in Body) or a region between marker comments (Marker), or an exact
// text (Old); more changes the defect needs go in More; give the invariant
// the sweep must break and whether it needs the composed moves; go run
// ./internal/dst/plant -check verifies that every defect still applies to
// the tree.
var defects = map[string]Defect{
	// The gate's in-flight→unknown hand-over in two steps (as splitgate
	// plants it): Ticket.Unknown takes the ticket out of its shard and
	// releases the shard's lock before it appends the ticket to the unknown
	// list, so a switch that takes the tickets in between finds it in
	// neither.
	"split-gate": {
		File:      "pathdialer/gate.go",
		Doc:       "Ticket.Unknown hands a ticket from in flight to unknown in two steps ({{gap}} between them)",
		Invariant: "unknown-settled-before-release",
		Old: `		s.unlink(t)
		t.p.addUnknown(t)
		s.mu.Unlock()
		t.p.inflightFinished()
		return`,
		Body: `		s.unlink(t)
		s.mu.Unlock() // DEFECT (plant split-gate): out of the shard, not yet among the unknown
		{{gap}}
		t.p.addUnknown(t)
		t.p.inflightFinished()
		return`,
	},

	// Section 1: the controller blocked by a reconcile.

	// A settle of unknown outcomes and a re-query of provisional verdicts
	// run on the controller, as maybeSettle and maybeRequery once did: a
	// Report that takes the active endpoint DOWN, an Assign, Hold or Halt
	// waits up to ReconcileTimeout.
	"settle-inline": {
		File:      "pathdialer/background.go",
		Doc:       "a settle or re-query runs on the controller (blocking it up to ReconcileTimeout)",
		Invariant: "hold-within-one-evaluation",
		Composed:  true,
		Func:      "controller.runBackground",
		Body:      inlineBackground("settle-inline", "kind == bgSettle || kind == bgRequery"),
	},
	// The switch's own reconcile runs on the controller.
	"switch-reconcile-inline": {
		File:      "pathdialer/background.go",
		Doc:       "the switch's reconcile runs on the controller (blocking it up to ReconcileTimeout)",
		Invariant: "hold-within-one-evaluation",
		Composed:  true,
		Func:      "controller.runBackground",
		Body:      inlineBackground("switch-reconcile-inline", "kind == bgSwitch"),
	},
	// The Fencer runs on the controller.
	"fence-inline": {
		File:      "pathdialer/background.go",
		Doc:       "the Fencer runs on the controller (blocking it up to FenceTimeout)",
		Invariant: "hold-within-one-evaluation",
		Composed:  true,
		Func:      "controller.runHook",
		Body: `func (c *controller) runHook(ctx context.Context, kind bgKind, timeout time.Duration, fn func(context.Context) error) *bgRun {
	c.bgSeq++
	run := &bgRun{id: c.bgSeq, start: time.Now()}
	rctx, cancel := context.WithCancel(ctx)
	run.cancel = cancel
	res := bgResult{kind: kind, id: run.id, start: run.start}
	tctx, tcancel := context.WithTimeout(rctx, timeout)
	res.err = callHook(tctx, fn) // DEFECT (plant fence-inline): on the controller
	tcancel()
	c.hooks.Add(1)
	go func() {
		defer c.hooks.Done()
		defer cancel()
		select {
		case c.bg <- res:
		case <-rctx.Done():
		}
	}()
	return run
}`,
	},
	// The switch's wait for orders in flight (InflightGrace) runs on the
	// controller.
	"drain-inline": {
		File:      "pathdialer/background.go",
		Doc:       "the switch's in-flight grace wait runs on the controller (blocking it up to InflightGrace)",
		Invariant: "hold-within-one-evaluation",
		Composed:  true,
		Func:      "controller.runDrain",
		Body: `func (c *controller) runDrain(ctx context.Context, unfenced <-chan struct{}, then func(context.Context)) *bgRun {
	c.bgSeq++
	run := &bgRun{id: c.bgSeq, start: time.Now(), then: then, done: make(chan struct{})}
	rctx, cancel := context.WithCancel(ctx)
	run.cancel = cancel
	p := c.p
	if unfenced != nil { // DEFECT (plant drain-inline): the waits run on the controller
		select {
		case <-unfenced:
		case <-rctx.Done():
		}
	}
	p.waitInflight(rctx, p.cfg.InflightGrace) // DEFECT (plant drain-inline): on the controller
	c.hooks.Add(1)
	go func() {
		defer c.hooks.Done()
		defer close(run.done)
		select {
		case c.bg <- bgResult{kind: bgDrain, id: run.id, start: run.start}:
		case <-rctx.Done():
		}
	}()
	return run
}`,
	},
	// A Report that takes the active endpoint DOWN does not hold the gate on
	// the reporting goroutine: tickets are granted on the dead endpoint until
	// the controller runs. The simulation's controller runs at the Report's
	// virtual instant; {{gap}} (before the Report kicks it) stands in for one
	// that runs later on a loaded host (-gap=2ms).
	"no-hold-on-down": {
		File:      "pathdialer/downhold.go",
		Doc:       "a Report that takes the active endpoint DOWN does not hold the gate (the controller does, later)",
		Invariant: "no-ticket-after-down",
		Composed:  true,
		Func:      "Path.holdOnDown",
		Body: `func (p *Path) holdOnDown(rt *endpointRT) {
	// DEFECT (plant no-hold-on-down): the gate stays open until the controller acts
	{{gap}}
}`,
	},
	// The gate opens on an endpoint live traffic took DOWN after the
	// controller decided to open it (a release racing with the Report).
	"open-on-down": {
		File:      "pathdialer/gate.go",
		Doc:       "a release opens the gate on an endpoint live traffic took DOWN meanwhile",
		Invariant: "no-ticket-after-down",
		Composed:  true,
		Old:       `if (state == GateOpen || len(released) > 0) && p.downByTraffic(endpoint) {`,
		Body:      `if (state == GateOpen || len(released) > 0) && p.downByTraffic(endpoint) && false { // DEFECT (plant open-on-down)`,
	},

	// Section 2: gray failures and on-demand probes.

	// FailureThreshold probe failures in a row turn a gray failure into an
	// ordinary outage, which probe successes then end: a probe blip during a
	// gray failure brings flow back while the trade path still fails; and
	// the trade-path check stops with the gray failure.
	"gray-probe-blip": {
		File:      "engine/evidence.go",
		Doc:       "probe failures during a gray failure make it an ordinary outage that probe successes end",
		Invariant: "no-failback-while-trade-path-fails",
		Composed:  true,
		Old: `		// A gray failure stands whatever the probe says: the probe could
		// not see it when it began, so its failures (a late probe on a
		// loaded host, the region briefly dark) are no evidence about the
		// trade path, and its successes after them none either.`,
		Body: `		if es.gray && es.consecFail >= m.cfg.FailureThreshold { // DEFECT (plant gray-probe-blip)
			es.gray = false
			es.grayCount--
		}`,
		// The trade-path check no longer runs once the gray failure ended
		// (it caught the failback the rule above allows).
		More: []Defect{{
			File: "pathdialer/gray.go",
			Old:  `if !st.GrayFailure && !st.WatchTradePath {`,
			Body: `if !st.GrayFailure { // DEFECT (plant gray-probe-blip): no trade-path check once the gray failure ended`,
		}},
	},
	// An outage the orders notice before the probe does is taken for a gray
	// failure: FailureThreshold failed orders while the last probe passed
	// start one at once, with no probe sent since the first of them; a probe
	// failing afterwards does not make it an ordinary outage, so probe
	// successes after the region heals do not bring the endpoint back (it
	// waits GrayFailbackWait): a halt, or flow held on a backup, while the
	// healed primary is usable. (Its fix's second half goes too: the trade
	// path of an endpoint that such an outage's probe success brought back
	// is no longer watched.)
	"gray-before-probe": {
		File:      "engine/evidence.go",
		Doc:       "failed orders start a gray failure while the last probe passed, before any probe ran since the first of them (an outage the orders notice first waits GrayFailbackWait)",
		Invariant: "gate-open-while-usable",
		Composed:  true,
		Old:       `es.trafficFail >= thr && es.consecFail == 0 && es.runProbePassed && !es.runProbeFailed && now.Sub(es.lastProbeSuccess) < m.cfg.MaxHealthAge {`,
		Body:      `es.trafficFail >= thr && es.consecFail == 0 && es.probeOK && now.Sub(es.lastProbeSuccess) < m.cfg.MaxHealthAge { // DEFECT (plant gray-before-probe): gray with no probe since the first failure`,
		More: []Defect{{
			Old: `	case es.trafficFail > 0 && !es.gray && es.runProbeFailed:
		// A probe sent since the orders began to fail failed too: it
		// sees this failure (an ordinary outage), so its success is
		// evidence of recovery.
		if es.trafficFail >= thr {
			// Live traffic took it DOWN: a gray failure that the
			// probe's failures hid (a partition while the trade path
			// was broken) would look the same, so its trade path is
			// watched until live traffic succeeds on it.
			es.tradePathDue = true
		}`,
			Body: `	case es.trafficFail > 0 && !es.gray && !es.lastProbeFailure.Before(es.lastTrafficFailure): // DEFECT (plant gray-before-probe): a probe failure after the last failed order, sent whenever; no watch of the trade path after it`,
		}, {
			Old:  `if es.trafficFail >= thr && !es.gray && es.runProbePassed {`,
			Body: `if es.trafficFail >= thr && !es.gray { // DEFECT (plant gray-before-probe): whenever this probe was sent`,
		}},
	},
	// An on-demand probe that waits for a round's running probe returns when
	// that probe's slot is released, before its result is recorded, and
	// re-evaluates without it ({{gap}} between the two steps).
	"probe-result-after-slot": {
		File:      "pathdialer/monitor.go",
		Doc:       "a wait for a running probe ends when its slot is released, then ({{gap}}) the result is recorded",
		Invariant: "no-halt-while-target-answered",
		Composed:  true,
		Old: `		select {
		case <-run.settled:
		case <-ctx.Done():
			return
		}
		if run.recorded {
			return
		}`,
		Body: `		select {
		case <-run.returned: // DEFECT (plant probe-result-after-slot): the slot is free, not its recording
			return
		case <-run.settled:
		case <-ctx.Done():
			return
		}
		if run.recorded {
			return
		}`,
		More: []Defect{{
			Old: `		close(run.returned) // after the slot is free: a round waiting for it probes afresh
		done <- probeResult{err: err, latency: lat}`,
			Body: `		close(run.returned) // DEFECT (plant probe-result-after-slot): the waiter re-evaluates first
		{{gap}}
		done <- probeResult{err: err, latency: lat}`,
		}},
	},
	// A wait for a running probe whose result will not be recorded (its
	// owner's context ended: Start's) returns without probing afresh; and,
	// as before the same fix, a probe whose result its owner dropped holds
	// the endpoint's slot until its call returns (without that half no wait
	// could ever meet a dropped probe: Start returns, and the controller
	// starts, only after its round's owners dropped theirs).
	"no-fresh-probe": {
		File:      "pathdialer/monitor.go",
		Doc:       "an on-demand probe that waited for a probe whose result was dropped does not probe afresh",
		Invariant: "no-halt-while-target-answered",
		Composed:  true,
		Old: `		if run.recorded {
			return
		}
		// It will not be recorded: probe afresh (its owner freed the slot).`,
		Body: `		return // DEFECT (plant no-fresh-probe): recorded or not`,
		More: []Defect{{
			Old: `		if !recorded && rt.probing == run {
			rt.probing = nil
		}`,
			Body: `		// DEFECT (plant no-fresh-probe): a dropped probe holds the slot until its call returns`,
		}},
	},
	// A probe failing while orders also fail is taken for a broken probe
	// when an order succeeded after the probe began failing: order failures
	// after that success are ignored, and the endpoint stays DEGRADED (flow
	// stays on it) through a real outage.
	"outage-as-broken-probe": {
		File:      "engine/evidence.go",
		Doc:       "live traffic vouches for an endpoint whose orders failed since their last success (a real outage looks like a broken probe)",
		Invariant: "no-ticket-after-down",
		Composed:  true,
		Func:      "Manager.trafficVouchesLocked",
		Body: `func (m *Manager) trafficVouchesLocked(es *endpointState, now time.Time) bool {
	// DEFECT (plant outage-as-broken-probe): order failures since the last order success are ignored
	return es.consecFail > 0 && !es.gray &&
		es.trafficOKSeq > es.probeFailSeq &&
		now.Sub(es.lastTrafficSuccess) < m.cfg.MaxHealthAge
}`,
	},

	// Without Config.TradePathCheck there is no trade-path check at all:
	// the one a transport offers (a rest.Reconciler's lookup of an order ID
	// never sent) is not run. A gray failure started by a burst of failed
	// reads (a switch's reconcile lookups answered 503) then ends only
	// after Engine.GrayFailbackWait: trading stays halted minutes after the
	// lookups healed, while the endpoint would accept orders.
	"halt-waits-gray": {
		File:      "pathdialer/gray.go",
		Doc:       "no trade-path check without Config.TradePathCheck (a transport's offer is ignored): a gray candidate waits GrayFailbackWait",
		Invariant: "gate-open-while-usable",
		Composed:  true,
		Func:      "Path.tradePathCheck",
		Body: `func (p *Path) tradePathCheck() (check ProbeFunc, name string) {
	// DEFECT (plant halt-waits-gray): Config.TradePathCheck or nothing
	if c := p.cfg.TradePathCheck; c != nil {
		return c, "TradePathCheck"
	}
	return nil, ""
}`,
	},
	// A failover whose dead-man arm fails on its target is retried on that
	// target for as long as it fails (held, then halted), even when the
	// target is DOWN or refuses arms and another endpoint is eligible.
	"deadman-arm-pinned": {
		File:      "pathdialer/deadman.go",
		Doc:       "a failover whose dead-man arm fails stays on its target: retried there while the target is DOWN or refuses arms and another endpoint is eligible",
		Invariant: "gate-open-while-usable",
		Composed:  true,
		Func:      "controller.retargetArm",
		Body: `func (c *controller) retargetArm(ctx context.Context, d engine.Decision) bool {
	return false // DEFECT (plant deadman-arm-pinned): the arm is retried on its target whatever the engine names now
}`,
	},

	// Section 3: a stream's failures reported as the orders' evidence.
	"stream-reports": {
		File:      "transports/ws/connect.go",
		Doc:       "the stream reports its failed dials and lost connections to the Path (Path.Report)",
		Invariant: "stream-evidence-alone-moves-no-order",
		Composed:  true,
		Old:       `func (s *Stream) try(ctx context.Context, name string) (*live, error) {`,
		Body:      `func (s *Stream) try(ctx context.Context, name string, gen uint64) (*live, error) {`,
		More: []Defect{{
			Old:  `l, err := s.try(ctx, name)`,
			Body: `l, err := s.try(ctx, name, gen)`,
		}, {
			Old: `	s.count(func(st *Stats) { st.DialFailures++ })
	s.event(StreamEvent{Kind: StreamEventDialFailed, Endpoint: name, Err: err})`,
			Body: `	s.count(func(st *Stats) { st.DialFailures++ })
	var he *HandshakeError // DEFECT (plant stream-reports): the failed dial is the orders' evidence
	if !errors.As(err, &he) && !errors.Is(err, pathdialer.ErrFenced) && !errors.Is(err, pathdialer.ErrClosed) {
		s.path.Report(name, gen, err, 0)
	}
	s.event(StreamEvent{Kind: StreamEventDialFailed, Endpoint: name, Err: err})`,
		}, {
			Old: `	s.lost(l, err)`,
			Body: `	closedByUs := l.closing.Load()
	s.lost(l, err)
	if !serverFault && !closedByUs { // DEFECT (plant stream-reports): the lost connection is the orders' evidence
		s.path.Report(l.c.Endpoint(), l.c.Token(), fmt.Errorf("ws: connection lost: %w", err), 0)
	}`,
		}},
	},

	// Section 5: the identity is not re-proved at the switch.
	"no-identity-at-switch": {
		File:      "pathdialer/guard.go",
		Doc:       "no identity re-check at a switch: the gate opens on the target without it",
		Invariant: "identity-proved-at-switch",
		Composed:  true,
		Func:      "Path.switchChecks",
		Body:      `func (p *Path) switchChecks() bool { return false } // DEFECT (plant no-identity-at-switch)`,
	},

	// Flow returns to the endpoint it was last released on, after a switch
	// away that never released, on the strength of that old release: its
	// identity is not re-proved though it may front another account by now.
	"return-without-reproof": {
		File:      "pathdialer/guard.go",
		Doc:       "flow returning to the last-released endpoint after an abandoned switch away skips the identity re-check",
		Invariant: "identity-proved-at-switch",
		Composed:  true,
		Old:       `		if name == last && !p.adm.movedSinceRelease {`,
		Body:      `		if name == last { // DEFECT (plant return-without-reproof)`,
	},

	// Section 6: the mutants of make mutants (each the smallest overlay of
	// today's code that breaks one guarantee; found by the simulation and by
	// a chaos cell).

	// The fence marks the endpoint fenced (its dials are refused) and closes
	// none of its connections: an order already on one still reaches the
	// broker through the region being left.
	"fence-closes-nothing": {
		File:      "pathdialer/dial.go",
		Doc:       "the local fence refuses new dials and closes none of the endpoint's connections",
		Invariant: "fence-closes-order-connections",
		Composed:  true,
		Old: `	for _, c := range rest {
		// Abort rather than close: bytes of an order still in this host's send
		// buffer are discarded, not flushed to the broker after the fence.
		abort(c)
	}
	if codWithin > 0 {`,
		Body: `	_ = rest // DEFECT (plant fence-closes-nothing): no connection closed
	if codWithin > 0 {`,
	},
	// The gate opens when the switch's reconcile starts, not when it
	// succeeded; the release event is still emitted when the reconcile
	// returns. Both ways of reconciling: one Reconciler, and a reconcile per
	// service (Config.ReconcileByService, as the chaos client has).
	"gate-before-reconcile": {
		File:      "pathdialer/controller.go",
		Doc:       "the gate opens as the switch's reconcile starts (the release event still comes after it returns)",
		Invariant: "no-ticket-while-held",
		Composed:  true,
		Old: `	c.recRun = c.runBackground(ctx, bgSwitch, "", *r, p.cfg.Reconcile)
}`,
		Body: `	c.recRun = c.runBackground(ctx, bgSwitch, "", *r, p.cfg.Reconcile)
	if a := p.active.Load(); a != nil { // DEFECT (plant gate-before-reconcile): open before the result
		p.setGate(GateOpen, a.rt.ep.Name, a.gen, nil)
	}
}`,
		More: []Defect{{
			Old: `		c.beginMulti(ctx)
		c.multiProgress(ctx)
		return`,
			Body: `		c.beginMulti(ctx)
		c.multiProgress(ctx)
		if a := p.active.Load(); a != nil && c.multi != nil { // DEFECT (plant gate-before-reconcile): open before the results
			p.setGate(GateOpen, a.rt.ep.Name, a.gen, nil)
		}
		return`,
		}},
	},
	// The switch does not wait for the Fencer: it runs beside, its result
	// ignored, and the controller takes the fence as confirmed at once.
	"fence-not-waited": {
		File:      "pathdialer/controller.go",
		Doc:       "the switch proceeds without the Fencer's result (the Fencer runs, unwaited)",
		Invariant: "switch-after-fence-confirmed",
		Composed:  true,
		Old: `	if p.cfg.Fencer == nil {
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
	c.fenceRun.fence = &f`,
		Body: `	_ = farewells
	if p.cfg.Fencer != nil { // DEFECT (plant fence-not-waited): its result is not waited for
		f := Fence{Endpoint: rt.ep, To: c.fenceTo, Token: a.gen, Attempt: c.fenceAttempt, Failback: c.failback, Mode: p.rest.fence.Mode, Effect: p.rest.fence.Effect}
		fctx, fcancel := context.WithTimeout(ctx, p.cfg.FenceTimeout)
		c.hooks.Add(1)
		go func() {
			defer c.hooks.Done()
			defer fcancel()
			_ = p.cfg.Fencer(fctx, f)
		}()
	}
	c.fenced(ctx, bgResult{kind: bgFence, start: time.Now()})`,
	},
	// Acquire grants a ticket on a held gate, on the active endpoint (a held
	// gate names none).
	"acquire-while-held": {
		File:      "pathdialer/gate.go",
		Doc:       "Acquire grants a ticket while the gate is held",
		Invariant: "no-ticket-while-held",
		Composed:  true,
		Old:       `if state == GateHeld && v.released[service] {`,
		Body:      `if state == GateHeld { // DEFECT (plant acquire-while-held)`,
		More: []Defect{{
			Old: `t.OrderID, t.Service, t.Endpoint, t.Token, t.ValidUntil = orderID, service, v.endpoint, v.gen, until`,
			Body: `t.OrderID, t.Service, t.Endpoint, t.Token, t.ValidUntil = orderID, service, v.endpoint, v.gen, until
				if a := p.active.Load(); t.Endpoint == "" && a != nil { // DEFECT (plant acquire-while-held): a held gate names no endpoint: the active one
					t.Endpoint = a.rt.ep.Name
				}`,
		}},
	},
	// The engine fails back with no cooldown and on the first success.
	"failback-no-cooldown": {
		File:      "engine/evaluate.go",
		Doc:       "failback without Cooldown or FailbackSuccessThreshold",
		Invariant: "no-failback-within-cooldown",
		Composed:  true,
		Old: `	if m.switched {
		cool := m.failbackCooldownLocked(prim, now)`,
		Body: `	if m.switched && false { // DEFECT (plant failback-no-cooldown)
		cool := m.failbackCooldownLocked(prim, now)`,
		More: []Defect{{
			Old:  `prim.consecSucc < m.cfg.FailbackSuccessThreshold {`,
			Body: `prim.consecSucc < 1 { // DEFECT (plant failback-no-cooldown)`,
		}},
	},
	// An order that finishes unknown after the reconcile that took it in
	// flight (a switch's, or a resume's after a halt) already reported its
	// verdict is only reported late: nothing settles it after its unknown
	// outcome, and Path.Unknown never lists it (a client that reads the late
	// unknown as superseding the verdict keeps it unsettled for ever).
	"unknown-dropped-at-halt": {
		File:      "pathdialer/gate.go",
		Doc:       "Ticket.Unknown after the in-flight ticket's verdict was reported emits EventLateTicket only: never handed to reconciliation again",
		Invariant: "every-unknown-order-settled",
		Composed:  true,
		Old:       `	if inFlight && t.p.judgedSince(t.OrderID, t.viewSince) {`,
		Body:      `	if inFlight && false { // DEFECT (plant unknown-dropped-at-halt): a late unknown is never settled again`,
	},
	// A settle or switch reconcile cut short by a hold, halt or switch
	// loses what it found: halts that come faster than one whole reconcile
	// (the resume's reconcile superseded by the next halt each time) ask
	// about the same orders for ever and settle none.
	"superseded-answers-dropped": {
		File:      "pathdialer/progress.go",
		Doc:       "the answers of a superseded settle or switch reconcile are dropped (not salvaged): repeated halts keep a long reconcile from ever completing",
		Invariant: "kept-answers-not-asked-again",
		Composed:  true,
		Old: `func (c *controller) salvage(r Reconciliation, settled []Settlement) {
	p := c.p`,
		Body: `func (c *controller) salvage(r Reconciliation, settled []Settlement) {
	settled = nil // DEFECT (plant superseded-answers-dropped): a cut-short reconcile's answers are dropped
	p := c.p`,
	},
	// One unknown outcome in seven (by its client order ID) is dropped: the
	// ticket leaves "in flight" and never reaches the unknown ones.
	"drop-unknown": {
		File:      "pathdialer/gate.go",
		Doc:       "Ticket.Unknown drops one unknown outcome in seven (by order ID): no reconcile ever sees it",
		Invariant: "every-unknown-order-settled",
		Composed:  true,
		Old: `		t.unknownAt = time.Now()
		s.unlink(t)
		t.p.addUnknown(t)`,
		Body: `		t.unknownAt = time.Now()
		s.unlink(t)
		if h := func() (h uint32) { // DEFECT (plant drop-unknown): one in seven dropped
			for _, c := range t.OrderID {
				h = h*31 + uint32(c)
			}
			return h
		}(); h%7 != 0 {
			t.p.addUnknown(t)
		}`,
	},

	// Resting orders across a switch (the simulation's resting-order seeds).

	// No open-order reconcile is owed after a fence: the orders the switch's
	// cancel-on-disconnect cancelled are never reported.
	"open-orders-skipped": {
		File:      "pathdialer/openorders.go",
		Doc:       "no open-order reconcile follows a fence: orders its cancel-on-disconnect cancelled go unreported",
		Invariant: "resting-cancel-reported",
		Old: `func (c *controller) oweOpenOrders(from string, codUntil time.Time) {
	if len(c.p.cfg.OpenOrders) == 0 {
		return
	}`,
		Body: `func (c *controller) oweOpenOrders(from string, codUntil time.Time) {
	if len(c.p.cfg.OpenOrders) >= 0 { // DEFECT (plant open-orders-skipped): nothing owed
		return
	}`,
	},
	// The fence does not wait for the DeadMan hook (nor call it): the old
	// path is fenced with no timer armed on the new one.
	"dead-man-not-awaited": {
		File:      "pathdialer/deadman.go",
		Doc:       "the fence goes on without waiting for the dead-man arm on the new path (the hook is never called)",
		Invariant: "no-dead-man-gap",
		Func:      "controller.needArm",
		Body: `func (c *controller) needArm() bool {
	return false // DEFECT (plant dead-man-not-awaited): the fence does not wait for the arm
}`,
		// Nor does a failback's fence: its arm, made before the hold, is
		// not made either.
		More: []Defect{{
			File: "pathdialer/failback.go",
			Old:  `needArm := p.cfg.DeadMan != nil && d.Outcome == engine.FenceRequired && d.From != d.To`,
			Body: `needArm := false && p.cfg.DeadMan != nil && d.Outcome == engine.FenceRequired && d.From != d.To // DEFECT (plant dead-man-not-awaited): no arm before a failback's fence`,
		}},
	},
	// A failback is not prepared before the hold: the healthy backup is held
	// while the dead-man timer is armed on the primary (and its identity
	// re-proved), each arm retried FenceAttempts times under the hold, and
	// its fence too; a failback given up is tried again after one Cooldown,
	// however often it failed before. An arm that keeps failing on the
	// primary holds the backup that works for most of every try.
	"failback-holds-to-prepare": {
		File:      "pathdialer/failback.go",
		Doc:       "a failback arms the dead-man timer (and re-proves identity) under the hold, retried there; given up, it is tried again after a Cooldown",
		Invariant: "gate-open-while-usable",
		Composed:  true,
		Func:      "controller.prepareFailback",
		Body: `func (c *controller) prepareFailback(ctx context.Context, d engine.Decision) bool {
	return true // DEFECT (plant failback-holds-to-prepare): nothing prepared before the hold
}`,
		More: []Defect{{
			Old:  `	wait := p.cfg.FailbackBackoff.delay(c.fbAbandoned)`,
			Body: `	wait := max(p.cfg.Engine.Cooldown, p.cfg.ProbeInterval) // DEFECT (plant failback-holds-to-prepare): no growing backoff`,
		}, {
			File: "pathdialer/controller.go",
			Old: `		if c.failback {
			// A failback is voluntary`,
			Body: `		if c.failback && c.fenceAttempt >= p.cfg.FenceAttempts { // DEFECT (plant failback-holds-to-prepare): retried under the hold
			// A failback is voluntary`,
		}},
	},
	// A switch's or a resume's reconcile that fails on its target (its
	// lookups answer 503, or hang to ReconcileTimeout) is retried there for
	// as long as it fails, halting after ReconcileAttempts and retrying
	// behind the halt, while another endpoint is eligible: the gate stays
	// closed although flow could move (found by the liveness moves: seeds
	// 39, 269, 719, 879 resume through a region whose lookups answer 503;
	// 316, 545 wait on a region whose reads hang).
	"reconcile-stuck-on-target": {
		File:      "pathdialer/controller.go",
		Doc:       "a reconcile failing on its target is retried there for ever, never moved to another eligible endpoint",
		Invariant: "gate-open-while-usable",
		Composed:  true,
		Old: `		if c.reconcileStuckOnTarget(ctx, r.To, len(kept), err) { // another endpoint can carry flow (retarget.go)
			return
		}
`,
		Body: "\t\t// DEFECT (plant reconcile-stuck-on-target): retried on the target for as long as it fails\n",
	},

	// A failover whose fence fails toward its target (a Fencer that acts
	// through the endpoint the switch goes to) is retried toward it, held and
	// then halted, for as long as it fails, although the target died and
	// another endpoint is eligible (found by the liveness moves: seed 542
	// fences eu through ap, which went DOWN while us healed).
	"fence-stuck-on-target": {
		File:      "pathdialer/controller.go",
		Doc:       "a failover whose fence fails toward a target no longer eligible is retried toward it, never moved to another eligible endpoint",
		Invariant: "gate-open-while-usable",
		Composed:  true,
		Old: `			if err == nil && c.retargetFence(ctx, d) { // retarget.go
				return
			}
`,
		Body: "\t\t\t// DEFECT (plant fence-stuck-on-target): the fence is retried toward its target whatever the engine names now\n",
	},

	// Section 4: the REST transport over a pooled HTTP/2 connection.

	// The REST transport keeps the caller's Request.GetBody: net/http's
	// HTTP/2 client then rewinds an order's body and sends it again on a
	// new connection when the server's GOAWAY says the stream was not
	// processed, although the broker had booked it (found by the H2 seeds'
	// front ends, which drain a connection after the broker's answer).
	"h2-replay": {
		File:      "transports/rest/transport.go",
		Doc:       "a submission keeps Request.GetBody: the HTTP/2 client replays an order on a new connection after a GOAWAY",
		Invariant: "no-order-replayed-by-pool",
		Old:       "\tr3.GetBody = nil // an OrderIDFunc may have set it\n",
		Body:      "\tr3.GetBody = req.GetBody // DEFECT (plant h2-replay): the body can be rewound and sent again\n",
	},

	// The REST transport passes an order failed by a graceful GOAWAY to the
	// Path as a failure: a load balancer retiring a connection with orders
	// on it then counts against an endpoint that new connections reach, and
	// can take it DOWN (found by the H2 seeds' drains).
	"drain-as-evidence": {
		File:      "transports/rest/transport.go",
		Doc:       "an order failed by a graceful GOAWAY counts as a failure of its endpoint",
		Invariant: "no-drain-as-evidence",
		Old:       "\tif req.Context().Err() != nil || goneAway(err) {\n",
		Body:      "\tif req.Context().Err() != nil { // DEFECT (plant drain-as-evidence): a drained connection counts against the endpoint\n",
	},

	// Section 7: a second process that takes over (Scenario.Proc2).

	// A reconcile with no ticket of this process's own releases at once,
	// without calling the Reconcile hook (as ReconcileByService once did for
	// a service with none): a process that takes over an account starts with
	// no tickets, so its first order can reach the broker before its hook
	// looked up the orders its predecessor left in flight.
	"empty-reconcile-skipped": {
		File:      "pathdialer/controller.go",
		Doc:       "a switch's reconcile with no tickets releases without calling the Reconcile hook",
		Invariant: "takeover-reconciles-first",
		Composed:  true,
		Old: `	c.retryAt = time.Time{} // the result, not the timer, moves on from here
	c.recRun = c.runBackground(ctx, bgSwitch, "", *r, p.cfg.Reconcile)
`,
		Body: `	c.retryAt = time.Time{} // the result, not the timer, moves on from here
	if len(r.Tickets) == 0 { // DEFECT (plant empty-reconcile-skipped): nothing of this process's to settle
		c.reconciled(ctx, bgResult{kind: bgSwitch, r: *r, start: time.Now()})
		return
	}
	c.recRun = c.runBackground(ctx, bgSwitch, "", *r, p.cfg.Reconcile)
`,
	},

	// The FIX Initiator answering a ResendRequest as quickfix does by
	// default: an order the broker never received on the old region's
	// connection is resent (PossDupFlag=Y) on the session's connection of
	// the moment, through the new region, outside its ticket. Needs the FIX
	// seeds' build (make sim-plant builds it).
	"fix-resend-order": {
		File:      "transports/fix/app.go",
		Doc:       "the Initiator lets quickfix resend an order (PossDupFlag=Y) on a ResendRequest, on whatever connection the session has",
		Invariant: "fix-booked-where-granted",
		Old: `		if isPossDup(msg) {
			// quickfix is answering a ResendRequest: never replay an order,
			// possibly into another region. Gap-fill it and reconcile.
			in.refuseResend(sid, clOrdID, mt)
			return quickfix.ErrDoNotSend
		}`,
		Body: `		if isPossDup(msg) {
			// DEFECT (plant fix-resend-order): the order is resent as asked,
			// on the session's current connection.
			return in.user.ToApp(msg, sid)
		}`,
	},

	// Issue 41, fencing tokens: the release reopens the gate under the
	// generation it was held under, so the tickets granted after a switch
	// carry the old path's token (the switch does not advance the token the
	// orders carry; the Path's events still name the new one).
	"release-keeps-token": {
		File:      "pathdialer/controller.go",
		Doc:       "the release reopens the gate under the token it was held under: orders after a switch carry the old path's token",
		Invariant: "token-names-one-path",
		Composed:  true,
		Old: `	p.setGate(GateOpen, a.rt.ep.Name, a.gen, nil)
	held := time.Since(c.heldSince)`,
		Body: `	p.setGate(GateOpen, a.rt.ep.Name, p.gate.Load().gen, nil) // DEFECT (plant release-keeps-token)
	held := time.Since(c.heldSince)`,
	},
	// Issue 41, fencing tokens, as planted from outside: the engine's switch
	// does not advance the token. Every part of the library agrees on the
	// unchanged token (decisions, events, tickets), so nothing but the
	// token the orders carry, against the path they came through, shows it.
	"switch-keeps-token": {
		File:      "engine/evaluate.go",
		Doc:       "the engine's switch does not advance the fencing token: the new path's orders carry the old path's token",
		Invariant: "token-names-one-path",
		Composed:  true,
		Old: `	m.active = target
	m.gen++
	m.lastSwitch = now`,
		Body: `	m.active = target // DEFECT (plant switch-keeps-token): the token stays
	m.lastSwitch = now`,
	},
	// Issue 41, an unknown outcome recorded as "not sent": any network
	// error, not only a failed dial, proves nothing was sent, so a
	// connection reset after the order was written (and booked) is "not
	// sent" and never reaches reconciliation.
	"reset-as-not-sent": {
		File:      "transports/rest/transport.go",
		Doc:       "neverSent takes any network error (a reset after the order was written) for a failed dial: an order the broker booked is called not sent",
		Invariant: "not-sent-never-received",
		Composed:  true,
		Old:       `	if errors.As(err, &op) && op.Op == "dial" {`,
		Body:      `	if errors.As(err, &op) { // DEFECT (plant reset-as-not-sent)`,
	},
	// The follower's lease deadline without its safety margin (coord/etcd,
	// its own module): the Target is told its decision holds until the very
	// instant etcd may expire the lease, at the grant and after every
	// keep-alive, so a paused process resumed just before that instant
	// trades on a lease another process may be granted over. The simulation
	// does not build the coord/etcd module: no invariant; its measure is the
	// module's tests (make mutants, unit layer).
	"lease-margin": {
		File: "coord/etcd/follower.go",
		Doc:  "the follower's lease deadline is the send time plus the TTL, without FollowerConfig.Margin",
		Old:  `deadline := sent.Add(time.Duration(g.TTL)*time.Second - f.cfg.Margin)`,
		Body: `deadline := sent.Add(time.Duration(g.TTL) * time.Second) // DEFECT (plant lease-margin): no margin`,
		More: []Defect{{
			Old:  `deadline = sent.Add(time.Duration(ka.TTL)*time.Second - f.cfg.Margin)`,
			Body: `deadline = sent.Add(time.Duration(ka.TTL) * time.Second) // DEFECT (plant lease-margin): no margin`,
		}},
	},
	// A preserve-mode fence that trusts the venue to close the session after
	// its farewell (a logout the venue answers by closing): the connection
	// is aborted only when the farewell failed. A farewell that never reaches
	// the venue (a blackholed region) or reaches it late leaves the old
	// session's connection open after the switch.
	"farewell-leaves-open": {
		File:      "pathdialer/fencemode.go",
		Doc:       "preserve mode: a connection whose farewell succeeded is left for the venue to close (aborted only when the farewell failed)",
		Invariant: "fence-leaves-no-connection-open",
		Old: `			if err := callFarewell(*fp, deadline); err != nil {
				log.Warn("pathdialer: farewell failed; the connection is aborted (cancel-on-disconnect may fire)", "endpoint", c.rt.ep.Name, "err", err)
			}
			abort(c)`,
		Body: `			if err := callFarewell(*fp, deadline); err != nil {
				log.Warn("pathdialer: farewell failed; the connection is aborted (cancel-on-disconnect may fire)", "endpoint", c.rt.ep.Name, "err", err)
				abort(c)
			} // DEFECT (plant farewell-leaves-open): after a farewell the venue is left to close the connection`,
	},
	// The failback decision reads the primary's recovery from its probe
	// alone (no probe failure in a row, a fresh probe success, the
	// successes in a row): a gray failure (DOWN on live-traffic evidence
	// while the probe passes) is ignored, and flow returns to an endpoint
	// whose orders still fail. Where a trade-path check runs, its failure
	// every round resets the successes in a row before the controller
	// evaluates; the unchecked gray failures of NewLiveScenario (no check
	// at all) find it.
	"failback-ignores-gray": {
		File:      "engine/evaluate.go",
		Doc:       "EvaluateFailback judges the primary stable from its probe alone, ignoring a gray failure",
		Invariant: "no-failback-onto-failing-orders",
		Composed:  true,
		Old:       `if !m.eligibleLocked(prim, now) || !m.switchVerifiedLocked(prim, now) || prim.consecSucc < m.cfg.FailbackSuccessThreshold {`,
		Body:      `if prim.consecFail > 0 || now.Sub(prim.lastProbeSuccess) >= m.cfg.MaxHealthAge || !m.admittedLocked(prim) || !m.jurisdictionOKLocked(prim) || !m.switchVerifiedLocked(prim, now) || prim.consecSucc < m.cfg.FailbackSuccessThreshold { // DEFECT (plant failback-ignores-gray): the primary's stability read from its probe alone`,
	},
	// Section 8: late landings and resends.

	// A provisional NOT_RECEIVED looked up again only at the quarantine's
	// end, as before the early looks: a copy the broker books after the
	// switch's lookup (a server still booking when the connection reset, a
	// copy held by the old path) is reported only then, long after its
	// booking.
	"late-watch-quarantine-only": {
		File:      "pathdialer/verdict.go",
		Doc:       "a provisional NOT_RECEIVED is looked up again only at the quarantine's end (no early look every MaxCopyHold)",
		Invariant: "late-landing-reported-in-time",
		Composed:  true,
		Marker:    "late-watch-quarantine-only",
		Body:      "\t// DEFECT (plant late-watch-quarantine-only): looked up again only when the verdict may become final\n",
	},

	// The venue's resend permission ignored: a NOT_RECEIVED made final by
	// the quarantine is taken as a safe resend, whatever the venue's
	// deduplication (a one-word slip in venue.Profile.ResendSafe). A resend
	// rarely books twice in a short run, so no-duplicate-order seldom sees
	// it; resend-allowed-by-venue judges every resend.
	"resend-ignores-venue": {
		File:      "venue/rules.go",
		Doc:       "ResendSafe takes any final NOT_RECEIVED (a quarantine too) as a safe resend, ignoring the venue's deduplication",
		Invariant: "resend-allowed-by-venue",
		Composed:  true,
		Old: `	if ok, why := p.cutoffFinal(e); ok {
		return true, why
	}
	var b strings.Builder`,
		Body: `	if ok, why := p.FinalNotReceived(e); ok { // DEFECT (plant resend-ignores-venue): final is taken as safe
		return true, why
	}
	var b strings.Builder`,
	},
	// The open-order reconcile reads the venue once, CODSettle after the
	// fence: a cancel-on-disconnect the venue applies later (a drop detected
	// by missed heartbeats, ~2.4 × HeartBtInt) is never reported, or is
	// reported by the next switch as its own.
	"cod-read-once": {
		File:      "pathdialer/openorders.go",
		Doc:       "the venue's open orders are read once, CODSettle after the fence, not again when a connection's declared late cancel is due",
		Invariant: "resting-cancel-reported",
		Old:       `			again := codDue.After(began)`,
		Body:      `			again := codDue.After(began) && false // DEFECT (plant cod-read-once): one read only`,
	},
	// Two fences within CODSettle: the reconcile owed keeps only the first
	// endpoint left (a later fence moves its time), so the orders the second
	// fence cancelled are named with the first switch, or not at all.
	"oo-first-fence-only": {
		File:      "pathdialer/openorders.go",
		Doc:       "the open-order reconcile owed keeps only the first fence (a later one moves its time): the second fence's cancels go misnamed or unreported",
		Invariant: "resting-cancel-reported",
		Old:       `	c.ooDue.fences = append(c.ooDue.fences, ooFence{from: from, fencedAt: now, due: due})`,
		Body: `	if n := len(c.ooDue.fences); n > 0 { // DEFECT (plant oo-first-fence-only): the first fence kept
		f := &c.ooDue.fences[0]
		f.fencedAt, f.due = now, later(f.due, due)
		return
	}
	c.ooDue.fences = append(c.ooDue.fences, ooFence{from: from, fencedAt: now, due: due})`,
	},
	// The orders the switch's own reconcile settled RESTING are not read with
	// the application's: one the application has not recorded yet, cancelled
	// by the fence after the report it was settled from, is never reported.
	"oo-settled-resting-skipped": {
		File:      "pathdialer/openorders.go",
		Doc:       "the open-order read holds only the application's record, not the orders the switch's reconcile settled RESTING",
		Invariant: "resting-cancel-reported",
		Old:       `			ours = withSettled(ours, due.resting[svc])`,
		Body:      `			_ = withSettled // DEFECT (plant oo-settled-resting-skipped): the switch's RESTING verdicts not read`,
	},
	// The open-order read runs too early: at the release, without waiting
	// CODSettle after the fence or the declared late cancel, and once.
	"oo-read-too-early": {
		File:      "pathdialer/openorders.go",
		Doc:       "the open-order read runs at the release, before the fence's cancel-on-disconnect is due, and once",
		Invariant: "resting-cancel-reported",
		Func:      "ooReadTimes",
		Body: `func ooReadTimes(fences []ooFence, settle time.Duration) (first, due time.Time) {
	return time.Now(), time.Time{} // DEFECT (plant oo-read-too-early): read at once, once
}`,
	},
	// The quarantine of a NOT_RECEIVED counts only the venue's false-negative
	// horizon, not the longest a copy can be held on the way (a one-word
	// slip in venue.Profile.FinalNotReceived): at a venue whose lookups see
	// a booking at once, the first "not found" is final, and a copy the old
	// path delivers later contradicts it.
	"final-nr-no-copy-hold": {
		File:      "venue/rules.go",
		Doc:       "FinalNotReceived's quarantine leaves out MaxCopyHold: a NOT_RECEIVED is final while a held copy can still be booked",
		Invariant: "final-verdict-matches-book",
		Composed:  true,
		Old:       `	q := p.MinQuarantine(e.MaxCopyHold)`,
		Body:      `	q := p.MinQuarantine(0) // DEFECT (plant final-nr-no-copy-hold): the copy hold left out`,
	},
	// Orders settled RESTING while no fence is owed (settling unknown
	// outcomes on the active endpoint, a switch abandoned) are dropped, not
	// kept for the next fence's open-order read.
	"oo-resting-needs-fence": {
		File:      "pathdialer/openorders.go",
		Doc:       "orders settled RESTING while no fence is owed are dropped: a later fence's cancel of them, before the application records them, goes unreported",
		Invariant: "resting-cancel-reported",
		Old:       "\t\t\treturn\n\t\t}\n\t\tc.ooDue = &ooSwitch{}",
		Body:      "\t\t\treturn\n\t\t}\n\t\treturn // DEFECT (plant oo-resting-needs-fence): kept only when a fence is owed",
	},
	// A follower holds on a fence only once it has proven the record's
	// writer (coord/etcd, its own module: no invariant; its measure is the
	// module's tests): one more round trip to etcd, under load the longest
	// part of fence -> holding.
	"fence-held-after-proof": {
		File: "coord/etcd/follower.go",
		Doc:  "a follower does not hold on a fence its watch delivered until the writer is proven (one more round trip)",
		Old:  "\t\t\t\tf.holdEarly(ev.Kv)\n",
		Body: "\t\t\t\t// DEFECT (plant fence-held-after-proof): no hold before the writer is proven\n",
	},
	// A follower's first keep-alive comes a quarter of the TTL after its
	// setup (registration, read, proof), not after the grant (coord/etcd: no
	// invariant; its measure is the module's tests): a setup slowed by a
	// starved host loses the first session before it is renewed.
	"keepalive-from-setup": {
		File: "coord/etcd/follower.go",
		Doc:  "the follower's keep-alives start a quarter of the TTL after its setup instead of after the grant: a slow setup loses the session",
		Old:  "\twatchdog := time.NewTimer(time.Until(deadline))\n\tdefer watchdog.Stop()\n",
		Body: "\twatchdog := time.NewTimer(time.Until(deadline))\n\tdefer watchdog.Stop()\n\t// DEFECT (plant keepalive-from-setup): keep-alives counted from the end of the setup\n\tselect {\n\tcase <-tick.C:\n\tdefault:\n\t}\n\ttick.Reset(f.cfg.TTL / 4)\n",
	},
	// A late landing a re-query of a provisional NOT_RECEIVED finds RESTING
	// is not owed to the next fence's open-order read: the application,
	// told the order did not reach the venue, does not hold it open, so a
	// fence's cancel of it goes unreported.
	"requery-resting-not-owed": {
		File:      "pathdialer/background.go",
		Doc:       "a re-query's RESTING (a late landing) is not read with the next fence's open orders: a cancel of it goes unreported",
		Invariant: "resting-cancel-reported",
		Old:       "\tc.oweSettledResting(r, lateSettlements(late))\n\tst.attempt = 0",
		Body:      "\t_ = lateSettlements // DEFECT (plant requery-resting-not-owed): the re-query's RESTING not owed\n\tst.attempt = 0",
		More: []Defect{{
			Old:  "\t\tc.oweSettledResting(r, lateSettlements(late)) // openorders.go",
			Body: "\t\t// DEFECT (plant requery-resting-not-owed): the re-query's RESTING not owed",
		}},
	},
	// Ticket.Valid does not refuse a ticket handed to reconciliation while
	// in flight (a resume after a halt on the same endpoint keeps the token):
	// a FIX order granted before the halt, waiting for its session's logon,
	// is written when the session logs on again, during or after the
	// reconcile that was handed it (and may have settled it NOT_RECEIVED).
	// Found by the move fix-handed (composed seeds with the liveness moves).
	"handed-ticket-valid": {
		File:      "pathdialer/gate.go",
		Doc:       "Ticket.Valid accepts a ticket handed to reconciliation in flight: an order waiting for its FIX logon is written after a same-endpoint resume's reconcile took it",
		Invariant: "no-order-sent-after-handed",
		Composed:  true,
		Old:       "\tif t.handedInFlight() {\n",
		Body:      "\tif false && t.handedInFlight() { // DEFECT (plant handed-ticket-valid): a ticket handed to reconciliation stays valid\n",
	},
	// A decider that takes office over a record it must refuse writes a
	// repair fence, then replaces that pending fence with an interrupted
	// switch's (the record in force is now a fence): the repair's wait for
	// every follower is lost, and the next step abandons the fence before
	// a follower acknowledged it (coord/etcd: no invariant; its measure is
	// the module's tests).
	"repair-fence-replaced": {
		File: "coord/etcd/decider.go",
		Doc:  "a repair fence written as a decider takes office is replaced by an interrupted switch's pending fence, released before every follower acknowledged",
		Old:  "\tif l.rec.Phase == PhaseFencing && l.pending == nil {\n",
		Body: "\tif l.rec.Phase == PhaseFencing { // DEFECT (plant repair-fence-replaced): a repair's pending fence is replaced\n",
	},
	// The follower and the decider read the assignment through the client's
	// own KV, without a receive limit: a record above the record limit on a
	// slow link is fetched whole at every attempt, and no attempt ends in
	// time (coord/etcd: no invariant; its measure is the module's tests).
	"reads-uncapped": {
		File: "coord/etcd/follower.go",
		Doc:  "the assignment is read without a receive limit: an oversized record is fetched whole at every attempt",
		Old:  "\t// clientv3's own KV: the same calls on the same connection.\n\treturn clientv3.NewKVFromKVClient(",
		Body: "\treturn cli.KV // DEFECT (plant reads-uncapped): no receive limit\n\treturn clientv3.NewKVFromKVClient(",
	},
}

// inlineBackground is runBackground as it was for the kinds in cond: fn runs
// on the controller, which takes no Report, Assign, Hold or Halt until it
// returns (up to ReconcileTimeout); its result then reaches the controller as
// before.
func inlineBackground(defect, cond string) string {
	return `func (c *controller) runBackground(ctx context.Context, kind bgKind, key string, r Reconciliation, fn ReconcileFunc) *bgRun {
	c.bgSeq++
	run := &bgRun{id: c.bgSeq, r: r, start: time.Now()}
	rctx, cancel := context.WithCancel(ctx)
	run.cancel = cancel
	timeout := c.p.cfg.ReconcileTimeout
	if ` + cond + ` { // DEFECT (plant ` + defect + `): the reconcile runs on the controller
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
		c.hooks.Add(1)
		go func() {
			defer c.hooks.Done()
			defer cancel()
			select {
			case c.bg <- res:
			case <-rctx.Done():
			}
		}()
		return run
	}
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
		case <-rctx.Done():
		}
	}()
	return run
}`
}
