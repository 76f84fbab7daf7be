package pathdialer

import (
	"context"
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
// A probe that fails at once (refused, reset, an error answer) is probed
// again at once only while orders on the endpoint fail too (the last one
// reported failed): orders and probe then agree that it is an outage, and a
// refused region is DOWN within a few round trips of the first failed order
// instead of a round or another order later. While orders on it succeed, they
// vouch for the endpoint (a broken probe) and a failed probe waits for the
// next round as before: probing again at once would take the endpoint DOWN
// before an order could vouch for it.

// probeOutcome is what runProbe recorded.
type probeOutcome int

const (
	probeDropped  probeOutcome = iota // nothing: the Path is closing, or Start's context ended
	probeAnswered                     // a success
	probeFailed                       // a failure within ProbeTimeout (refused, reset, an error answer)
	probeTimedOut                     // a timeout
)

// suspicious: after this outcome rt is probed again at once (if suspectable):
// it timed out, or it failed while the orders on rt fail too.
func (o probeOutcome) suspicious(p *Path, rt *endpointRT) bool {
	switch o {
	case probeTimedOut:
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
}

// suspectAfter is the effective SuspectAfter; 0 when suspicion is off.
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

// watchOrders checks every SuspectAfter/2, until ctx ends, for orders on the
// active endpoint that have been in flight since the previous check, and makes
// the endpoint suspect when it finds one, or when an order on it failed.
func (p *Path) watchOrders(ctx context.Context) {
	d := p.suspectAfter()
	if d <= 0 {
		return
	}
	var marks [2][ticketShards]uint64
	t := time.NewTicker(max(d/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rt := p.active.Load().rt
			if p.lateOrders(rt.ep.Name, &marks) && p.suspectable(rt) {
				p.suspect(ctx, rt)
			}
		case <-p.suspectWake:
			p.suspect(ctx, p.active.Load().rt) // an order on it failed
		}
	}
}
