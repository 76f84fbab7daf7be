package pathdialer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// Suspicion. A blackhole is found only by probe timeouts, and DOWN takes
// Engine.FailureThreshold of them in a row: waiting for the next round after
// each would cost a whole ProbeInterval per failure. So when a probe of the
// active endpoint is late (no answer after SuspectAfter) or times out while
// the endpoint is not DOWN, the endpoint is probed again at once, beside the
// late probe. Nothing else changes: each probe is one result, a late probe
// that answers is a success, and DOWN still takes FailureThreshold failures in
// a row — so one slow answer never takes the endpoint DOWN by itself; it only
// costs one more probe. Failures are at least SuspectAfter apart, so orders
// that succeed meanwhile still vouch for the endpoint (a broken probe).
//
// Orders are evidence too: an order on the active endpoint still unanswered
// after SuspectAfter (it was in flight at two checks SuspectAfter/2 apart)
// makes the endpoint suspect the same way, once per order, and so does an
// order that failed (Report). A late or failed order is never a probe
// failure by itself; it only brings the next probe forward.
//
// A late order is followed: one still unanswered ProbeTimeout after it was
// found late, with no order succeeded on the endpoint since, is hung
// (hungOrders). That is no failure either, but orders no longer vouch for the
// endpoint's failing probe (a broken probe) until one succeeds there again:
// after a probe blip that orders vouched for, a blackhole is DOWN within the
// probes' budget instead of at the application's order timeout or
// Engine.MaxHealthAge. One slow order answered before then, or one stuck
// among orders that are answered, changes nothing.
//
// A probe that fails at once (refused, reset, an error answer) is probed
// again at once only while orders on the endpoint fail too (the last one
// reported failed): orders and probe then agree that it is an outage, and a
// refused region is DOWN within a few round trips of the first failed order
// instead of a round or another order later. While orders on it succeed, they
// vouch for the endpoint (a broken probe) and a failed probe waits for the
// next round as before: probing again at once would take the endpoint DOWN
// before an order could vouch for it.

// A stalled process is not an outage. A probe's timeout is seen when this
// process runs again after the deadline; one seen more than ProbeTimeout/4
// after it means the process itself was not running then (a long GC pause,
// a starved CPU, a suspended VM) and the answer may have been waiting. Such a
// stall hits every probe in flight at once — the round's and the early one
// beside it — and would count as FailureThreshold failures of a healthy
// endpoint. So a timeout seen that late, when it would take the endpoint DOWN,
// is not recorded: the endpoint is probed again at once (or at the next round
// when it is not the active one), and that probe decides. At most one timeout
// in a row is left unrecorded per endpoint, so a blackhole on a host that is
// always late is DOWN at most one probe later.

// probeOutcome is what runProbe recorded.
type probeOutcome int

const (
	probeDropped  probeOutcome = iota // nothing: the Path is closing, or Start's context ended
	probeAnswered                     // a success
	probeFailed                       // a failure within ProbeTimeout (refused, reset, an error answer)
	probeTimedOut                     // a timeout
	probeStalled                      // nothing: a timeout seen long after its deadline (stalled)
)

// suspicious: after this outcome rt is probed again at once (if suspectable):
// it timed out, or it failed while the orders on rt fail too.
func (o probeOutcome) suspicious(p *Path, rt *endpointRT) bool {
	switch o {
	case probeTimedOut, probeStalled:
		return true
	case probeFailed:
		st, ok := p.eng.Status(rt.ep.Name)
		return ok && st.TrafficFailures > 0
	}
	return false
}

// orderFailed: a failed order on rt (Report) makes it suspect, when it is
// the active endpoint and not DOWN; the watcher of orders (it holds the
// monitor's context) starts the probe.
func (p *Path) orderFailed(rt *endpointRT) {
	if !p.suspectable(rt) {
		return
	}
	select {
	case p.suspectWake <- struct{}{}:
	default:
	}
}

// suspicion is an endpoint's early probes.
type suspicion struct {
	running atomic.Bool  // an early probe is in progress
	budget  atomic.Int32 // early probes left until the next round (FailureThreshold)

	mu  sync.Mutex
	lat [latencySamples]time.Duration // the latencies of its last successful probes (a ring)
	n   int                           // successful probes recorded, in all

	stalled atomic.Bool // the last probe's timeout was not recorded (stalled)
	// sinceDeadline, nil outside tests, replaces time.Since for the lateness
	// of a timeout.
	sinceDeadline func(deadline time.Time) time.Duration
}

// stalled reports whether the timeout of run, a probe of rt, is to be left
// unrecorded: seen more than ProbeTimeout/4 after its deadline, the previous
// probe of rt was recorded, and recording it would take rt DOWN.
func (p *Path) stalled(rt *endpointRT, run *probeRun) bool {
	deadline := run.started.Add(p.cfg.ProbeTimeout)
	since := time.Since
	if rt.suspect.sinceDeadline != nil {
		since = rt.suspect.sinceDeadline
	}
	if since(deadline) <= p.cfg.ProbeTimeout/4 || rt.suspect.stalled.Load() {
		return false
	}
	st, ok := p.eng.Status(rt.ep.Name)
	if !ok || st.State == engine.Down || st.ProbeFailures+1 < max(1, p.cfg.Engine.FailureThreshold) {
		return false
	}
	rt.suspect.stalled.Store(true)
	p.log.Warn("pathdialer: a probe timeout seen long after its deadline (this process stalled) is not counted; probing again",
		"endpoint", rt.ep.Name, "late", since(deadline).Round(time.Millisecond))
	return true
}

// latencySamples: the successful probes whose latencies set when the next
// probe of the endpoint is late.
const latencySamples = 8

// noteLatency records a successful probe's latency.
func (s *suspicion) noteLatency(d time.Duration) {
	s.mu.Lock()
	s.lat[s.n%latencySamples] = d
	s.n++
	s.mu.Unlock()
}

// median of the recorded latencies; false before latencySamples/2 of them.
func (s *suspicion) median() (time.Duration, bool) {
	s.mu.Lock()
	n := min(s.n, latencySamples)
	v := append([]time.Duration(nil), s.lat[:n]...)
	s.mu.Unlock()
	if n < latencySamples/2 {
		return 0, false
	}
	slices.Sort(v)
	return v[n/2], true
}

// suspectAfter is the effective SuspectAfter for orders, and the longest a
// probe may take before it is late; 0 when suspicion is off.
func (p *Path) suspectAfter() time.Duration {
	switch d := p.cfg.SuspectAfter; {
	case d < 0:
		return 0
	case d == 0:
		return p.cfg.ProbeTimeout / 2
	default:
		return d
	}
}

// probeLateAfter is when a probe of rt is late. With SuspectAfter left at
// zero, and no order succeeded on rt within the last ProbeInterval, it is
// measured: twice the median latency of rt's recent successful probes, at
// least ProbeTimeout/16 and at most ProbeTimeout/2 (which is also what it is
// until enough probes were measured, and while orders succeed on rt). On a
// blackhole with no orders, the early probe then starts a few round trips
// after the round's, and the endpoint is DOWN about ProbeTimeout after the
// round's probe began, instead of ProbeTimeout/2 later; an endpoint that is
// slow to answer every time is not taken for late. While orders flow, they
// find a blackhole themselves (late orders), and the two probe failures stay
// ProbeTimeout/2 apart so that an order succeeding between them still vouches
// for the endpoint (a broken probe).
func (p *Path) probeLateAfter(rt *endpointRT) time.Duration {
	d := p.suspectAfter()
	if d <= 0 || p.cfg.SuspectAfter != 0 {
		return d
	}
	if last := rt.lastOK.Load(); last != 0 && int64(time.Since(p.epoch))+1-last < int64(p.cfg.ProbeInterval) {
		return d // orders flow
	}
	m, ok := rt.suspect.median()
	if !ok {
		return d
	}
	return min(d, max(2*m, p.cfg.ProbeTimeout/16))
}

// newSuspicionRound gives every endpoint its early-probe budget for the round
// that starts.
func (p *Path) newSuspicionRound() {
	n := int32(max(1, p.cfg.Engine.FailureThreshold))
	for _, rt := range p.order {
		rt.suspect.budget.Store(n)
	}
}

// suspectable: rt is the active endpoint, not DOWN, and suspicion is on.
func (p *Path) suspectable(rt *endpointRT) bool {
	return p.suspectAfter() > 0 && p.active.Load().rt == rt && engine.HealthState(rt.state.Load()) != engine.Down
}

// suspect probes rt again at once, unless an early probe of it is running (or
// has not returned), its budget for this round is spent, or it is no longer
// suspectable. The early
// probe is recorded like any other; when it fails, rt stays suspect.
func (p *Path) suspect(ctx context.Context, rt *endpointRT) {
	if ctx.Err() != nil || !p.suspectable(rt) {
		return
	}
	if !rt.suspect.running.CompareAndSwap(false, true) {
		return
	}
	if rt.suspect.budget.Add(-1) < 0 {
		rt.suspect.running.Store(false)
		return
	}
	p.probeWG.Add(1)
	go func() {
		defer p.probeWG.Done()
		// Not in rt.probing: a round or an on-demand probe keeps its own slot.
		run := &probeRun{started: time.Now(), settled: make(chan struct{}), returned: make(chan struct{})}
		out := p.runProbe(ctx, rt, run)
		// The next early probe only once this call returned (at its deadline,
		// for a probe that honours its context): a probe that ignores it is
		// not called again while it still runs.
		select {
		case <-run.returned:
		case <-ctx.Done():
		}
		rt.suspect.running.Store(false)
		if out.suspicious(p, rt) {
			p.suspect(ctx, rt)
		}
	}()
}

// lateOrders reports whether a ticket on endpoint granted between the two
// previous calls is still in flight: each order counts once, at the first
// check that finds it late. marks holds, per shard, the grants so far at the
// previous call ([0]) and at the one before ([1]); it is updated.
func (p *Path) lateOrders(endpoint string, marks *[2][ticketShards]uint64) bool {
	late := false
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		if !late {
			for j := range s.infos {
				if e := &s.infos[j]; e.grant > marks[1][i] && e.grant <= marks[0][i] && e.view.endpoint == endpoint {
					late = true
					break
				}
			}
		}
		marks[1][i], marks[0][i] = marks[0][i], s.grants
		s.mu.Unlock()
	}
	return late
}

// lateBatch is the orders on endpoint found late at one check: those granted
// in each shard after lo and up to hi.
type lateBatch struct {
	endpoint string
	at       time.Time // when they were found late
	lo, hi   [ticketShards]uint64
}

// stillInFlight reports whether an order of b is still in flight.
func (p *Path) stillInFlight(b *lateBatch) bool {
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		for j := range s.infos {
			if e := &s.infos[j]; e.grant > b.lo[i] && e.grant <= b.hi[i] && e.view.endpoint == b.endpoint {
				s.mu.Unlock()
				return true
			}
		}
		s.mu.Unlock()
	}
	return false
}

// maxLateBatches bounds the late orders followed until they are hung or
// answered; beyond it the newest are not followed (the oldest decide first).
const maxLateBatches = 64

// hungOrders follows the late orders of batches: an order still in flight
// ProbeTimeout after it was found late, on the active endpoint, with no order
// succeeded on it since, is hung (trafficHung). It returns the batches still
// followed.
func (p *Path) hungOrders(batches []lateBatch) []lateBatch {
	rt := p.active.Load().rt
	keep := batches[:0]
	for i := range batches {
		b := &batches[i]
		switch {
		case b.endpoint != rt.ep.Name:
			continue // the flow moved: nothing to revoke
		case time.Since(b.at) < p.cfg.ProbeTimeout:
			keep = append(keep, *b)
			continue
		case rt.lastOK.Load() > int64(b.at.Sub(p.epoch))+1:
			continue // an order succeeded on it since: it answers
		case p.stillInFlight(b):
			p.trafficHung(rt)
		}
	}
	return keep
}

// trafficHung: an order on rt, the active endpoint, is hung. Live traffic no
// longer vouches for rt's failing probe (a broken probe): when its probe
// failures reach FailureThreshold, rt is DOWN now, the gate held and the
// switch decided; below it, its next probe failures count as on any outage
// (the order brought one probe forward already, when it was found late).
func (p *Path) trafficHung(rt *endpointRT) {
	rt.obsMu.Lock()
	prev := engine.HealthState(rt.state.Load())
	st, err := p.eng.TrafficHung(rt.ep.Name)
	if err != nil {
		rt.obsMu.Unlock()
		return
	}
	rt.state.Store(int32(st.State))
	changed := st.State != prev
	if changed {
		a := p.active.Load()
		p.events.emit(Event{Kind: EventStateChange, Endpoint: rt.ep.Name, Token: a.gen, State: st.State, PrevState: prev, Err: st.LastProbeError,
			Cause: fmt.Sprintf("an order on %q is unanswered %v after it was found late, and none succeeded since: live traffic no longer vouches for its failing probe (%d failures)", rt.ep.Name, p.cfg.ProbeTimeout, st.ProbeFailures)})
	}
	rt.obsMu.Unlock()
	if changed && st.State == engine.Down && p.active.Load().rt == rt {
		p.holdOnDown(rt)
		p.kick()
	}
}

// watchOrders checks every SuspectAfter/2, until ctx ends, for orders on the
// active endpoint that have been in flight since the previous check, and makes
// the endpoint suspect when it finds one, or when an order on it failed. It
// follows the late orders until they are answered or hung (hungOrders).
func (p *Path) watchOrders(ctx context.Context) {
	d := p.suspectAfter()
	if d <= 0 {
		return
	}
	var marks [2][ticketShards]uint64
	var batches []lateBatch
	t := time.NewTicker(max(d/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rt := p.active.Load().rt
			b := lateBatch{endpoint: rt.ep.Name, at: time.Now(), lo: marks[1], hi: marks[0]}
			if p.lateOrders(rt.ep.Name, &marks) {
				if len(batches) < maxLateBatches {
					batches = append(batches, b)
				}
				if p.suspectable(rt) {
					p.suspect(ctx, rt)
				}
			}
			batches = p.hungOrders(batches)
		case <-p.suspectWake:
			p.suspect(ctx, p.active.Load().rt) // an order on it failed
		}
	}
}
