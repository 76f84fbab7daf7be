package dst

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// The ground-truth invariants: judged from what the simulation itself did
// (the faults it injected and healed, the probe answers it gave, every call
// of its Fencer and when it returned, every order's dial), against the
// Path's switches, holds and releases. A defect that also moves the Path's
// own events (a fence reported confirmed that was not, a failback that calls
// itself something else) does not hide from them.
const (
	InvFailbackCooldown = "no-failback-within-cooldown"  // no failback within Cooldown of the failure that moved flow away, nor before FailbackSuccessThreshold probe answers after the heal
	InvSwitchAfterFence = "switch-after-fence-confirmed" // no switch away from an endpoint before the Fencer returned nil for it
	InvNoGrantWhileHeld = "no-ticket-while-held"         // no order granted while the gate is held or halted
)

// fenceCall is one call of the sim's Fencer.
type fenceCall struct {
	endpoint   string
	to         string    // the endpoint the switch goes to (gate-open-while-usable)
	start, end time.Time // end zero: never returned
	ok         bool
}

// recordFences wraps the Fencer so that every call, and its return, is in
// the run's record.
func (w *world) recordFences(inner pathdialer.FenceFunc) pathdialer.FenceFunc {
	return func(ctx context.Context, f pathdialer.Fence) error {
		w.mu.Lock()
		w.cx.fences = append(w.cx.fences, fenceCall{endpoint: f.Endpoint.Name, to: f.To, start: time.Now()})
		i := len(w.cx.fences) - 1
		w.mu.Unlock()
		err := inner(ctx, f)
		w.mu.Lock()
		w.cx.fences[i].end, w.cx.fences[i].ok = time.Now(), err == nil
		w.mu.Unlock()
		return err
	}
}

// ground is what the ground-truth invariants are judged from.
type ground struct {
	start            time.Time
	gates            []gateRec // by seq
	grants           []grantRec
	fences           []fenceCall
	spans            []span
	probes           []probeRec
	cooldown         time.Duration
	successThreshold int
	decidesItself    bool // not coordinated: the Path fails back by itself
}

// judge reports every violation of the three invariants.
func (g ground) judge(viol func(inv, format string, a ...any)) {
	off := func(t time.Time) time.Duration { return t.Sub(g.start) }
	// A switch away from an endpoint only after the Fencer returned nil for
	// it, in a call that began after the previous switch.
	var prev time.Time
	for _, s := range g.gates {
		if s.kind != pathdialer.EventSwitch {
			continue
		}
		if s.from != "" && s.from != s.to {
			ok := false
			for _, f := range g.fences {
				if f.endpoint == s.from && f.ok && !f.start.Before(prev) && !f.end.After(s.at) {
					ok = true
					break
				}
			}
			if !ok {
				viol(InvSwitchAfterFence, "switch from %s to %s at %v before the Fencer had returned nil for %s (%s)", s.from, s.to, off(s.at), s.from, g.fenceSummary(s.from, prev, off))
			}
		}
		prev = s.at
	}
	// No order granted while the gate was held or halted: from a hold, halt,
	// fence or switch to the next release of the gate (or of REST).
	var heldFrom time.Time
	held := false
	type iv struct{ from, to time.Time } // to zero: to the end
	var helds []iv
	for _, e := range g.gates {
		switch e.kind {
		case pathdialer.EventHold, pathdialer.EventHalt, pathdialer.EventFenceStart, pathdialer.EventSwitch:
			if !held {
				held, heldFrom = true, e.at
			}
		case pathdialer.EventRelease:
			if held && (e.service == "" || e.service == pathdialer.ServiceREST) {
				helds = append(helds, iv{heldFrom, e.at})
				held = false
			}
		}
	}
	if held {
		helds = append(helds, iv{from: heldFrom})
	}
	for _, h := range helds {
		n, first, id := 0, time.Time{}, ""
		for _, gr := range g.grants {
			t := gr.acq
			if t.IsZero() {
				t = gr.at
			}
			if t.After(h.from.Add(slack)) && (h.to.IsZero() || t.Before(h.to)) {
				if n == 0 {
					first, id = t, gr.id
				}
				n++
			}
		}
		if n > 0 {
			until := "never released"
			if !h.to.IsZero() {
				until = fmt.Sprintf("released at %v", off(h.to))
			}
			viol(InvNoGrantWhileHeld, "%d order(s) granted while the gate was held from %v (%s), the first %s at %v", n, off(h.from), until, id, off(first))
		}
	}
	// Failback (a Path deciding by itself): not within Cooldown of the
	// injected failure that moved flow away from the endpoint, and not
	// before FailbackSuccessThreshold of its probes answered after that
	// failure healed.
	if !g.decidesItself {
		return
	}
	for i, s := range g.gates {
		if s.kind != pathdialer.EventSwitch || s.cause != "failback" {
			continue
		}
		e := s.to
		var left time.Time // the last switch away from e
		for _, h := range g.gates[:i] {
			if h.kind == pathdialer.EventSwitch && h.from == e && h.to != e {
				left = h.at
			}
		}
		if left.IsZero() {
			continue
		}
		// The injected failure armed on e when flow left it (its latest).
		var failed time.Time
		for _, sp := range g.spans {
			if (sp.region == e || sp.region == "*") && !sp.from.After(left) && (sp.to.IsZero() || !sp.to.Before(left.Add(-time.Second))) && sp.from.After(failed) {
				failed = sp.from
			}
		}
		if !failed.IsZero() && s.at.Sub(failed) < g.cooldown {
			viol(InvFailbackCooldown, "failback to %s at %v, %v after the failure injected at %v that moved flow away (at %v); Cooldown is %v",
				e, off(s.at), s.at.Sub(failed), off(failed), off(left), g.cooldown)
		}
		// The answers the sim gave e's probes and trade-path checks since
		// the last one that failed (the engine counts successes in a row).
		var failedAns time.Time
		for _, p := range g.probes {
			if p.endpoint == e && !p.ok && !p.end.After(s.at) && p.end.After(failedAns) {
				failedAns = p.end
			}
		}
		if failedAns.Before(left) {
			continue // no probe of e failed while flow was away
		}
		n := 0
		for _, p := range g.probes {
			if p.endpoint == e && p.ok && p.end.After(failedAns) && !p.end.After(s.at) {
				n++
			}
		}
		if n < g.successThreshold {
			viol(InvFailbackCooldown, "failback to %s at %v after %d successful probe answer(s) since one failed at %v; FailbackSuccessThreshold is %d",
				e, off(s.at), n, off(failedAns), g.successThreshold)
		}
	}
}

func (g ground) fenceSummary(ep string, since time.Time, off func(time.Time) time.Duration) string {
	for i := len(g.fences) - 1; i >= 0; i-- {
		f := g.fences[i]
		if f.endpoint != ep || f.start.Before(since) {
			continue
		}
		if f.end.IsZero() {
			return fmt.Sprintf("its last call began at %v and had not returned", off(f.start))
		}
		return fmt.Sprintf("its last call began at %v, returned at %v, ok=%v", off(f.start), off(f.end), f.ok)
	}
	return "no call since the previous switch"
}

// checkGround judges the ground-truth invariants of a run (w.mu held, the
// records sorted by checkComposed).
func (w *world) checkGround(viol func(inv, format string, a ...any)) {
	ground{
		start: w.start, gates: w.cx.gates, grants: w.cx.grants, fences: w.cx.fences, spans: w.cx.spans, probes: append(slices.Clone(w.cx.probes), w.cx.checks...),
		cooldown: w.s.Cooldown, successThreshold: w.s.FailbackSuccess, decidesItself: !w.s.Coordinated,
	}.judge(viol)
	judgeFenceCloses(w.start, w.cx.fences, w.cx.conns, viol)
}

// InvFenceCloses: the local fence closes every order connection to the
// endpoint being left (judged from the connections the sim handed out and
// when the client closed them, against the sim's Fencer calls).
const InvFenceCloses = "fence-closes-order-connections"

// connRec is one order connection the sim's network handed the client.
type connRec struct {
	id, endpoint   string
	opened, closed time.Time // closed zero: never closed by the client
}

type trackedConn struct {
	net.Conn
	w    *world
	rec  *connRec
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.w.mu.Lock()
		c.rec.closed = time.Now()
		c.w.mu.Unlock()
	})
	return c.Conn.Close()
}

// trackConn records an order connection to endpoint.
func (w *world) trackConn(c net.Conn, id, endpoint string) net.Conn {
	r := &connRec{id: id, endpoint: endpoint, opened: time.Now()}
	w.mu.Lock()
	w.cx.conns = append(w.cx.conns, r)
	w.mu.Unlock()
	return &trackedConn{Conn: c, w: w, rec: r}
}

// judgeFenceCloses: at every call of the Fencer for an endpoint (the local
// fence comes just before it), every order connection to that endpoint the
// client still had open is closed within slack.
func judgeFenceCloses(start time.Time, fences []fenceCall, conns []*connRec, viol func(inv, format string, a ...any)) {
	for _, f := range fences {
		for _, c := range conns {
			if c.endpoint != f.endpoint || !c.opened.Before(f.start) || (!c.closed.IsZero() && !c.closed.After(f.start.Add(slack))) {
				continue
			}
			if !c.closed.IsZero() && c.closed.Before(f.start) {
				continue
			}
			closed := "never closed"
			if !c.closed.IsZero() {
				closed = fmt.Sprintf("closed at %v", c.closed.Sub(start))
			}
			viol(InvFenceCloses, "order %s's connection to %s (opened at %v) outlived the fence of %s at %v (%s)", c.id, c.endpoint, c.opened.Sub(start), f.endpoint, f.start.Sub(start), closed)
			break
		}
	}
}
