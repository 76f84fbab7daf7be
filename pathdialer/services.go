package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// Services released independently. With Config.ReconcileByService, a switch (or a
// resume) reconciles each service with its own ReconcileFunc, concurrently,
// and releases each service's submissions as soon as its own reconcile
// succeeded: a REST order waits for the REST reconcile, not for a FIX logon
// on the new endpoint. The exact rules:
//
//   - Every ticket in flight or of unknown outcome is taken once, when the
//     switch's reconcile begins, and grouped by Ticket.Service. A service
//     named in ReconcileByService is settled by its own function (called with
//     Reconciliation.Service set and only that service's tickets, possibly
//     none); the tickets of every other service go together to
//     Config.Reconcile (Reconciliation.Service "").
//   - A service of ReconcileByService is released (Acquire grants its tickets on the
//     new endpoint; EventRelease with Service set) when its own reconcile
//     succeeded. A service not in ReconcileByService is released only when every
//     reconcile succeeded (the gate opens: EventRelease with Service "").
//   - A failing reconcile is retried with ReconcileBackoff on its own; after
//     ReconcileAttempts failures in a row of any one of them the whole gate
//     halts (released services too) until they all succeed.
//   - A switch abandoned while some services are released holds them again;
//     their orders on the new endpoint are in flight and go to the next
//     reconcile like any other.
//
// What a released service may not know: the fate of the other services'
// orders still being reconciled (a FIX order of unknown fate may be filled
// while REST orders already flow). A client that derives a REST order from
// the account's position must allow for the FIX orders Snapshot still lists
// as pending. The promise that no order is released on the new path before
// reconciliation holds per service: no order of a service is granted there
// before that service's own reconcile succeeded.

// multiRec is a switch's reconcile split by service.
type multiRec struct {
	id     uint64
	cancel context.CancelFunc
	ctx    context.Context
	parent context.Context    // the controller's: an abandoned reconcile's result still reaches it
	groups map[string]*svcRec // "" = every service not in Config.ReconcileByService
	// released services, published with the held gate
	released map[string]bool
}

type svcRec struct {
	key      string
	fn       ReconcileFunc
	tickets  []TicketInfo
	attempt  int
	running  bool
	done     bool
	retryAt  time.Time
	failures int
}

// svcResult is one service's reconcile attempt, sent back to the controller.
type svcResult struct {
	id      uint64
	key     string
	r       Reconciliation
	settled []Settlement
	err     error
	start   time.Time
}

// beginMulti splits the reconcile c.rec by service; the caller then calls
// attemptMulti.
func (c *controller) beginMulti(ctx context.Context) {
	p := c.p
	c.multiSeq++
	mctx, cancel := context.WithCancel(ctx)
	m := &multiRec{id: c.multiSeq, ctx: mctx, parent: ctx, cancel: cancel, groups: map[string]*svcRec{}, released: map[string]bool{}}
	for svc, fn := range p.cfg.ReconcileByService {
		m.groups[svc] = &svcRec{key: svc, fn: fn}
	}
	m.groups[""] = &svcRec{key: "", fn: p.cfg.Reconcile}
	for _, t := range c.rec.Tickets {
		g, ok := m.groups[t.Service]
		if !ok {
			g = m.groups[""]
		}
		g.tickets = append(g.tickets, t)
	}
	// Every function is called, with no tickets too (as Config.Reconcile alone
	// is): it is where the application settles what the Path cannot know, the
	// orders of a process it takes over from. Only a missing Config.Reconcile
	// with nothing to settle is done already.
	for _, g := range m.groups {
		g.done = g.fn == nil && len(g.tickets) == 0
	}
	c.multi = m
}

// multiProgress releases the services whose reconcile is done, opens the gate
// when every one is, and otherwise starts the due attempts.
func (c *controller) multiProgress(ctx context.Context) {
	m := c.multi
	all := true
	for _, key := range slices.Sorted(maps.Keys(m.groups)) {
		g := m.groups[key]
		if !g.done {
			all = false
		}
	}
	if all {
		c.endMulti()
		c.p.setPending(nil)
		c.release(ctx)
		return
	}
	for _, key := range slices.Sorted(maps.Keys(m.groups)) {
		if g := m.groups[key]; g.done && key != "" && !m.released[key] {
			c.releaseService(key)
		}
	}
	c.attemptMulti()
}

// attemptMulti starts every due, idle, unfinished service reconcile.
func (c *controller) attemptMulti() {
	p := c.p
	m := c.multi
	now := time.Now()
	c.retryAt = time.Time{}
	for _, key := range slices.Sorted(maps.Keys(m.groups)) {
		g := m.groups[key]
		if g.done || g.running {
			continue
		}
		if now.Before(g.retryAt) {
			if c.retryAt.IsZero() || g.retryAt.Before(c.retryAt) {
				c.retryAt = g.retryAt
			}
			continue
		}
		g.attempt++
		g.running = true
		r := *c.rec
		r.Service, r.Attempt = key, g.attempt
		r.Tickets = g.tickets[:len(g.tickets):len(g.tickets)]
		p.events.emit(Event{Kind: EventReconcileStart, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Tickets: r.Tickets, Cause: r.Reason, Service: key})
		id, fn, ctx, parent := m.id, g.fn, m.ctx, m.parent
		c.hooks.Add(1)
		go func() {
			defer c.hooks.Done()
			start := time.Now()
			rctx, cancel := context.WithTimeout(ctx, p.cfg.ReconcileTimeout)
			var settled []Settlement
			rr := r
			rr.Tickets = slices.Clone(r.Tickets)
			err := callHook(rctx, func(ctx context.Context) error {
				var err error
				settled, err = fn(ctx, rr)
				return err
			})
			cancel()
			select {
			case c.results <- svcResult{id: id, key: key, r: r, settled: settled, err: err, start: start}:
			case <-parent.Done():
			}
		}()
	}
}

// onMultiResult handles one service's reconcile result on the controller.
func (c *controller) onMultiResult(ctx context.Context, res svcResult) {
	p := c.p
	m := c.multi
	if ctx.Err() != nil {
		return
	}
	if m == nil || res.id != m.id {
		c.salvage(res.r, res.settled) // from an abandoned reconcile: its answers are kept
		return
	}
	g := m.groups[res.key]
	g.running = false
	r := res.r
	if res.err != nil {
		g.failures++
		kept, open := p.keepAnswers(r, res.settled, time.Now()) // progress.go
		c.oweSettledResting(r, kept)                            // openorders.go
		g.tickets = open
		p.events.emit(Event{Kind: EventReconcileFailure, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Duration: time.Since(res.start), Err: res.err, Settlements: kept, Cause: r.Reason, Service: res.key})
		if g.failures >= p.cfg.ReconcileAttempts {
			c.halt(haltReconcile, fmt.Errorf("reconcile of %s on %q failed %d times in a row (retrying): %w", serviceName(res.key), r.To, g.failures, res.err))
		}
		g.retryAt = time.Now().Add(p.cfg.ReconcileBackoff.delay(g.failures))
		c.attemptMulti()
		return
	}
	g.done = true
	settled := p.judge(r, res.settled, time.Now())
	c.oweSettledResting(r, settled) // read with the open orders (openorders.go)
	p.events.emit(Event{Kind: EventReconcileSuccess, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Duration: time.Since(res.start), Settlements: settled, Cause: r.Reason, Service: res.key})
	c.multiProgress(ctx)
}

// releaseService opens one service's submissions on the active endpoint while
// the others are still held.
func (c *controller) releaseService(service string) {
	if c.holdServiceRelease() { // not before the switch's identity re-check proved the endpoint (guard.go)
		return
	}
	p := c.p
	m := c.multi
	m.released[service] = true
	a := p.active.Load()
	held := slices.Sorted(maps.Keys(m.groups))
	var waiting []string
	for _, k := range held {
		if !m.groups[k].done {
			waiting = append(waiting, serviceName(k))
		}
	}
	cause := fmt.Errorf("%s from %q to %q: reconciling %s (released: %s)", c.rec.Reason, c.rec.From, c.rec.To, strings.Join(waiting, ", "), strings.Join(sortedKeys(m.released), ", "))
	p.setGateReleased(GateHeld, a.rt.ep.Name, a.gen, cause, maps.Clone(m.released))
	c.halted = false
	c.unfenceActive(m.ctx)
	p.events.emit(Event{Kind: EventRelease, Endpoint: a.rt.ep.Name, Token: a.gen, Duration: time.Since(c.heldSince), Service: service, Cause: cause.Error()})
}

// endMulti drops the split reconcile: its goroutines are told to stop (their
// results are ignored).
func (c *controller) endMulti() {
	if c.multi != nil {
		c.multi.cancel()
		c.multi = nil
	}
}

// multiUnsettled returns the tickets of the services not yet reconciled (to
// carry into the next reconcile when this one is abandoned).
func (c *controller) multiUnsettled() []TicketInfo {
	var out []TicketInfo
	for _, k := range slices.Sorted(maps.Keys(c.multi.groups)) {
		if g := c.multi.groups[k]; !g.done {
			out = append(out, g.tickets...)
		}
	}
	return out
}

func serviceName(key string) string {
	if key == "" {
		return "the other services"
	}
	return key
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// reconcileAny runs the configured reconcilers on r outside a switch (settle
// and re-query): with ReconcileByService, each service's tickets go to its own
// function and the rest to Reconcile, one after the other; the settlements
// are merged, and the first error is returned after all ran.
func (p *Path) reconcileAny(ctx context.Context, r Reconciliation) ([]Settlement, error) {
	if len(p.cfg.ReconcileByService) == 0 {
		return p.cfg.Reconcile(ctx, r)
	}
	groups := map[string][]TicketInfo{}
	for _, t := range r.Tickets {
		key := t.Service
		if _, ok := p.cfg.ReconcileByService[key]; !ok {
			key = ""
		}
		groups[key] = append(groups[key], t)
	}
	var all []Settlement
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		fn := p.cfg.Reconcile
		if key != "" {
			fn = p.cfg.ReconcileByService[key]
		}
		rr := r
		rr.Service, rr.Tickets = key, groups[key]
		s, err := fn(ctx, rr)
		all = append(all, s...)
		if err != nil {
			errs = append(errs, fmt.Errorf("pathdialer: reconcile of %s: %w", serviceName(key), err))
		}
	}
	return all, errors.Join(errs...)
}
