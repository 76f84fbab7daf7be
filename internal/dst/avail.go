package dst

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// InvAvailable is the liveness invariant judged from ground truth: the gate
// is open on a usable path within a bound of one becoming usable (see
// availRec and availBound).
const InvAvailable = "gate-open-while-usable"

// Span kinds of the liveness moves (see MoveKind).
const (
	spanLookup  = "lookup5xx" // the region's order lookups (the reconcile's reads) answer 503; orders are fine
	spanStall   = "stall"     // the client process stalls (its hook points wait): not the endpoint
	spanArmFail = "armfail"   // the broker refuses dead-man arms through the region
)

// unusableKinds are the span kinds during which an order through the region
// is not both booked and answered: the network refuses, holds or slows it,
// the broker answers 503 or books it and cuts the answer, the region's dial
// hangs, or it fronts another account. A probe-only partition, late probes,
// a starved or stalled host, a WebSocket-only fault, reconcile reads that
// fail or hang and a hanging kill switch leave an order's path working
// (see availRec.usable for those that leave the region unsure).
var unusableKinds = map[string]bool{
	spanNet: true, spanGray: true, spanUnknown: true, spanDialHang: true, spanIdentity: true,
}

// ival is a stretch of virtual time [from, to) (to zero: to the end).
type ival struct {
	from, to time.Time
	why      string
}

// ivalTo is an exempt stretch that holds only while region to is not
// unusable ("" any).
type ivalTo struct {
	ival
	to string
}

func (v ival) covers(t time.Time) bool {
	return !t.Before(v.from) && (v.to.IsZero() || t.Before(v.to))
}

// AvailFigure is one run's availability: how long the gate was judged, how
// long it was not open on a usable path while some path was usable (within
// the bound or not), the part of that beyond the bound, and the longest
// such stretch.
type AvailFigure struct {
	Judged  time.Duration // from the end of Start to the end of the run, less the exempt time
	Closed  time.Duration // not open on a usable path while some path was usable (exempt time left out)
	Beyond  time.Duration // the part of Closed beyond the bound
	Worst   time.Duration // the longest any path had been usable, with the gate not open on one, at one instant
	WorstAt time.Duration // when (from the start of the run)
	Bound   time.Duration
}

// availRec is what gate-open-while-usable is judged from: the world's own
// record (the faults armed per region, the calls of the Fencer and when
// they returned, the conditions the ground truth confirms) and the Path's
// gate events (hold, halt, fence, switch, release).
type availRec struct {
	start, from, end time.Time
	// tradeEnd: the traders stop (zero: never). After it no order meets a
	// dead active path, and a dead path whose probe passes shows nothing
	// to the Path: an open gate is not judged by its active path.
	tradeEnd   time.Time
	regions    []string
	primary    string
	gates      []gateRec // by seq
	spans      []span    // to zero: to the end
	fences     []fenceCall
	fenceRetry time.Duration // a failed Fencer call followed by another within this is one fence not yet confirmed
	exempt     []ival        // conditions the ground truth confirms (the coordinator's halts, process pauses)
	assigns    []coordEvent  // coordinated seeds: the coordinator's assignments (kind: the region)
	bound      time.Duration
	boundText  string
	// gap: an opening of the gate shorter than gap, after a closure that
	// moved no flow (no switch), does not end that closure: a failback
	// that cannot complete and closes the gate at every attempt keeps it
	// closed.
	gap time.Duration
}

// judge reports every stretch in which the gate was not open on a usable
// path for longer than the bound after some path had become usable (and
// after the gate closed), outside the confirmed conditions, and returns the
// run's figure.
//
// A path (region) is usable at t when no span of unusableKinds is armed on
// it, and, when it is not the active one, no dead-man arm through it is
// refused (a switch to it cannot be made). The gate is served at t when its
// last event at or before t was a release (of the gate or of REST; none:
// Start opened it) and the active region is not unusable (after the traders
// stopped, an open gate is served: no order meets the dead path, and a
// dead order path whose probe passes shows the Path nothing). At an unserved instant
// t outside the exemptions, with s0 the start of the unserved stretch, e
// the end of the last exemption and u(r) the start of region r's current
// usable stretch, it is a violation when t - max(s0, u(r), e) > bound for
// some usable r.
func (a availRec) judge(viol func(inv, format string, args ...any)) AvailFigure {
	fig := AvailFigure{Bound: a.bound}
	if !a.end.After(a.from) {
		return fig
	}
	off := func(t time.Time) time.Duration { return t.Sub(a.start) }
	// Breakpoints.
	pts := []time.Time{a.from, a.end}
	add := func(t time.Time) {
		if t.After(a.from) && t.Before(a.end) {
			pts = append(pts, t)
		}
	}
	for _, s := range a.spans {
		add(s.from)
		if !s.to.IsZero() {
			add(s.to)
		}
	}
	for _, g := range a.gates {
		add(g.at)
	}
	fenceIv := a.fenceIntervals()
	for _, v := range fenceIv {
		add(v.from)
		if !v.ival.to.IsZero() {
			add(v.ival.to)
		}
	}
	for _, v := range a.exempt {
		add(v.from)
		if !v.to.IsZero() {
			add(v.to)
		}
	}
	for _, c := range a.assigns {
		add(c.at)
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].Before(pts[j]) })
	pts = compactTimes(pts)

	type stretch struct {
		s0, servedSince time.Time
		active0         string
		beyond, closed  time.Duration
		firstBeyond     time.Time
		region          string
		usableSince     time.Time
		state           string
	}
	var cur *stretch
	usableFrom := map[string]time.Time{}
	var exEnd time.Time
	flush := func(end time.Time) {
		if cur == nil {
			return
		}
		if cur.beyond > 0 {
			viol(InvAvailable, "the gate was not open on a usable path from %v to %v (%s at %v); %s had been usable since %v; %v of it beyond the bound, from %v; bound %v = %s",
				off(cur.s0), off(end), cur.state, off(cur.firstBeyond), cur.region, off(cur.usableSince), cur.beyond, off(cur.firstBeyond), a.bound, a.boundText)
		}
		cur = nil
	}
	for i := 0; i+1 < len(pts); i++ {
		t0, t1 := pts[i], pts[i+1]
		active, open := a.gateAt(t0)
		usable := map[string]bool{}
		activeBad := false
		for _, r := range a.regions {
			st := a.usable(r, active, t0)
			usable[r] = st == pathOK
			activeBad = activeBad || (r == active && st == pathBad)
			if !usable[r] {
				delete(usableFrom, r)
			} else if _, ok := usableFrom[r]; !ok {
				usableFrom[r] = t0
			}
		}
		exempt := false
		for _, v := range fenceIv {
			// A fence not yet confirmed holds a switch to a path that
			// could take the flow; a switch to a dead one is no reason.
			if v.covers(t0) && (v.to == "" || a.usable(v.to, active, t0) != pathBad) {
				exempt = true
				break
			}
		}
		for _, v := range a.exempt {
			exempt = exempt || v.covers(t0)
		}
		// Coordinated seeds: the Path follows the coordinator's latest
		// assignment; while it names a region a switch cannot reach, the
		// closure is the coordinator's. So it is while the switch into the
		// assigned region, already made active, cannot complete because its
		// reconcile cannot read there (its lookups fail or hang): the Path
		// may not leave an assigned region on its own, and the closure is
		// owed from the lookups' heal.
		if to := a.assignedAt(t0); to != "" {
			if to != active && a.usable(to, active, t0) != pathOK {
				exempt = true
			}
			if to == active && !open && a.readsFail(to, t0) {
				exempt = true
			}
		}
		if exempt {
			exEnd = t1
			if cur != nil && open && (!activeBad || (!a.tradeEnd.IsZero() && !t0.Before(a.tradeEnd))) {
				flush(t0)
			}
			continue
		}
		fig.Judged += t1.Sub(t0)
		served := open && (!activeBad || (!a.tradeEnd.IsZero() && !t0.Before(a.tradeEnd)))
		if served {
			if cur == nil {
				continue
			}
			if cur.servedSince.IsZero() {
				cur.servedSince = t0
			}
			if active != cur.active0 || t1.Sub(cur.servedSince) >= a.gap {
				flush(cur.servedSince)
			}
			continue
		}
		if cur == nil {
			cur = &stretch{s0: t0, active0: active}
		}
		cur.servedSince = time.Time{}
		// The region usable for longest, counted from the later of the
		// closure, its usable stretch and the last exemption.
		best, bestFrom := "", time.Time{}
		for _, r := range a.regions {
			if !usable[r] {
				continue
			}
			f := latest(cur.s0, usableFrom[r], exEnd)
			if best == "" || f.Before(bestFrom) {
				best, bestFrom = r, f
			}
		}
		if best == "" {
			continue
		}
		fig.Closed += t1.Sub(t0)
		cur.closed += t1.Sub(t0)
		if w := t1.Sub(bestFrom); w > fig.Worst {
			fig.Worst, fig.WorstAt = w, off(t1)
		}
		lim := bestFrom.Add(a.bound)
		if t1.After(lim) {
			b := t1.Sub(latest(t0, lim))
			fig.Beyond += b
			if cur.beyond == 0 {
				cur.firstBeyond = latest(t0, lim)
				cur.region, cur.usableSince = best, usableFrom[best]
				switch {
				case !open:
					cur.state = "gate " + a.closedKind(t0)
				default:
					cur.state = "gate open on " + active + ", which was not usable"
				}
			}
			cur.beyond += b
		}
	}
	flush(a.end)
	return fig
}

func latest(ts ...time.Time) time.Time {
	var m time.Time
	for _, t := range ts {
		if t.After(m) {
			m = t
		}
	}
	return m
}

func compactTimes(ts []time.Time) []time.Time {
	out := ts[:0]
	for i, t := range ts {
		if i == 0 || !t.Equal(out[len(out)-1]) {
			out = append(out, t)
		}
	}
	return out
}

// assignedAt is the region of the coordinator's latest assignment at or
// before t ("" none).
func (a availRec) assignedAt(t time.Time) string {
	to := ""
	for _, c := range a.assigns {
		if !c.at.After(t) {
			to = c.kind
		}
	}
	return to
}

// gateAt is the active region and whether the gate was open just after t
// (its events at t applied).
func (a availRec) gateAt(t time.Time) (active string, open bool) {
	active, open = a.primary, true
	for _, g := range a.gates {
		if g.at.After(t) {
			continue
		}
		switch g.kind {
		case pathdialer.EventSwitch:
			active, open = g.to, false
		case pathdialer.EventHold, pathdialer.EventHalt, pathdialer.EventFenceStart, pathdialer.EventResume:
			open = false
		case pathdialer.EventRelease:
			if g.service == "" || g.service == pathdialer.ServiceREST {
				open = true
			}
		}
	}
	return active, open
}

// closedKind names the last closing event at or before t.
func (a availRec) closedKind(t time.Time) string {
	k := "closed"
	for _, g := range a.gates {
		if g.at.After(t) {
			continue
		}
		switch g.kind {
		case pathdialer.EventHold:
			k = "held"
		case pathdialer.EventHalt:
			k = "halted"
		case pathdialer.EventFenceStart, pathdialer.EventSwitch, pathdialer.EventResume:
			k = "held for a switch (" + g.kind.String() + ")"
		}
	}
	return k
}

// Usability of a region at an instant.
const (
	pathOK     = iota // an order would be booked and answered (and a switch to it could be made)
	pathUnsure        // may or may not (latency, the moment of a reset or a drain)
	pathBad           // would not
)

// usable is region r's usability at t: bad while a span of unusableKinds is
// armed on it, or, unless it is the active region, while a dead-man arm
// through it is refused (a switch to it cannot be made); unsure while a
// spanUnsure is, while its probes are cut or late (a probe-only partition,
// a starved host: its orders would pass, but the Path cannot see it, so the
// bound counts from the end), or while its order lookups fail or hang (a
// release must follow a reconcile, which cannot read through it: an open
// gate on it is served, a closed one is not yet owed); ok else.
func (a availRec) usable(r, active string, t time.Time) int {
	st := pathOK
	for _, s := range a.spans {
		if s.region != r && s.region != "*" {
			continue
		}
		if !(ival{from: s.from, to: s.to}).covers(t) {
			continue
		}
		if unusableKinds[s.kind] && s.region == r {
			return pathBad
		}
		if s.kind == spanArmFail && r != active {
			return pathBad
		}
		if s.kind == spanUnsure && s.region == r || s.kind == spanProbe || s.kind == spanStarve {
			st = pathUnsure
		}
		if (s.kind == spanLookup || s.kind == spanHang) && s.region == r {
			st = pathUnsure
		}
	}
	return st
}

// readsFail reports whether region r's order lookups (the reconcile's
// reads) fail or hang at t.
func (a availRec) readsFail(r string, t time.Time) bool {
	for _, s := range a.spans {
		if s.region == r && (s.kind == spanLookup || s.kind == spanHang) && (ival{from: s.from, to: s.to}).covers(t) {
			return true
		}
	}
	return false
}

// fenceIntervals: while a Fencer call for an endpoint has not returned nil
// (a call in progress, or a failed call followed by the next within
// fenceRetry), the fence is not confirmed.
func (a availRec) fenceIntervals() []ivalTo {
	var out []ivalTo
	for i, f := range a.fences {
		v := ivalTo{ival: ival{from: f.start, to: f.end, why: "fence of " + f.endpoint + " not confirmed"}, to: f.to}
		if !f.ok && !f.end.IsZero() {
			for _, g := range a.fences[i+1:] {
				if g.endpoint == f.endpoint && !g.start.Before(f.end) && g.start.Sub(f.end) <= a.fenceRetry {
					v.ival.to = g.start
					break
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// availBound is the bound of gate-open-while-usable for a scenario, from
// its configuration, and how it was made up:
//
//	detection   FailureThreshold × (ProbeInterval + max(OrderEvery, OrderTimeout)) + ProbeTimeout
//	            (the active path's failure noticed by its probes or by its orders)
//	recovery    max(Cooldown, (FailbackSuccessThreshold+1) × ProbeInterval) + MaxHealthAge
//	            (a path that became usable is eligible again: successes in a row, fresh, past the cooldown)
//	switch      InflightGrace + FenceTimeout + FenceBackoff.Max + ReconcileTimeout + ReconcileBackoff.Max + SettleUnknown
//	            (+ CODSettle with resting orders, + DeadManTimeout with a dead-man timer,
//	            + IdentityInterval + IdentityTimeout with identities checked,
//	            + ProbeInterval + KeepAlive for a coordinator's decision,
//	            + the client's own stalls and starved rounds)
func availBound(s Scenario) (time.Duration, string) {
	var parts []string
	var b time.Duration
	addp := func(name string, d time.Duration) {
		b += d
		parts = append(parts, fmt.Sprintf("%s %v", name, d))
	}
	addp("detection", time.Duration(s.FailureThreshold)*(s.ProbeInterval+max(s.OrderEvery, s.OrderTimeout))+s.ProbeTimeout)
	addp("recovery", max(s.Cooldown, time.Duration(s.FailbackSuccess+1)*s.ProbeInterval)+s.MaxHealthAge)
	rt := s.ReconcileTimeout
	if rt == 0 {
		rt = 2 * time.Second
	}
	// FenceTimeout 1 s, FenceBackoff.Max and ReconcileBackoff.Max 500 ms
	// (buildClient).
	addp("switch", s.InflightGrace+time.Second+500*time.Millisecond+rt+500*time.Millisecond+s.SettleUnknown)
	if s.Resting.On {
		addp("open-order read", s.Resting.CODSettle)
		if s.Resting.DeadMan {
			addp("dead-man arm", time.Second) // Config.DeadManTimeout (buildResting)
		}
	}
	if s.Identity {
		addp("identity", s.IdentityInterval+s.ProbeTimeout)
	}
	if s.Coordinated {
		addp("coordinator", s.ProbeInterval+s.KeepAlive)
	}
	var own time.Duration
	for _, m := range s.Moves {
		switch {
		case m.Kind == MoveStall:
			own += m.For
		case m.Kind == MoveProbeLate && m.Region == "*":
			own += m.For
		}
	}
	if own > 0 {
		addp("client stalls", own)
	}
	return b, strings.Join(parts, " + ")
}

// checkAvail judges gate-open-while-usable (w.mu held, the records sorted
// by checkComposed) and keeps the run's figure.
func (w *world) checkAvail(res *Result, audit simbroker.AuditLog, viol func(inv, format string, a ...any)) {
	end := time.Now()
	from := w.started
	if from.IsZero() {
		from = w.start
	}
	bound, text := availBound(w.s)
	// The order path of each region from the faults really in force (the
	// network's and the broker's), and the sim's own hooks from its spans.
	cuts := map[string][]time.Time{}
	for _, r := range audit {
		if r.Kind == simbroker.KindOrder && r.Outcome == simbroker.OutcomeCut {
			cuts[r.Region] = append(cuts[r.Region], r.Time)
		}
	}
	spans := orderPathSpans(w.s.Regions, w.cx.netSets, w.cx.brokerSets, cuts)
	for _, s := range w.cx.spans {
		switch s.kind {
		case spanNet, spanGray:
			continue // the faults' record above is the truth
		case spanUnknown:
			if s.n > 0 || s.cuts > 0 {
				continue // a broker fault: in the record above
			}
			s.kind = spanUnsure // a drain's or a scheduled fault's moment
		}
		spans = append(spans, s)
	}
	exempt := w.coordExempt()
	var assigns []coordEvent
	for _, c := range w.cx.coord {
		if r, ok := strings.CutPrefix(c.kind, "assign:"); ok {
			if ep, ok := w.path.Endpoint(r); ok {
				r = ep.Region
			}
			assigns = append(assigns, coordEvent{at: c.at, kind: r})
		}
	}
	sort.SliceStable(assigns, func(i, j int) bool { return assigns[i].at.Before(assigns[j].at) })
	if f := w.s.Resting; f.On && f.DeadMan && f.ArmFailFor > 0 {
		// The seed's window in which every dead-man arm fails.
		spans = append(spans, span{region: "*", kind: spanArmFail, from: w.start.Add(f.ArmFailAt), to: w.start.Add(f.ArmFailAt + f.ArmFailFor)})
	}
	spans = append(spans, w.grayShown()...)
	a := availRec{
		start: w.start, from: from, end: end, tradeEnd: w.start.Add(w.s.Duration), regions: w.s.Regions, primary: w.s.Regions[0],
		gates: w.cx.gates, spans: spans, fences: w.cx.fences, fenceRetry: 500*time.Millisecond + slack,
		exempt: exempt, assigns: assigns, bound: bound, boundText: text,
		gap: max(w.s.Cooldown, w.s.ProbeInterval) + w.s.ProbeInterval + 500*time.Millisecond,
	}
	res.Avail = a.judge(viol)
}

// grayShown (seeds with no trade-path check at all, Scenario.NoCheckAtAll):
// a region whose order address went down while its probe address stayed up,
// and whose probe, sent after the order address went down, passed before
// the probe address went down too (an order burst's lead): for those
// milliseconds the region was in a gray failure, orders refused while the
// probe passed, and the Path was shown it. Its probe failing afterwards and
// passing again is, to the Path, a probe blip during a gray failure (the
// gray move's late probe rounds), after which the orders may still fail; so
// with no trade-path check at all nothing it sees can bring the region back
// before Engine.GrayFailbackWait, as its documented rule says. The region
// is not judged usable from the order address's fault for that wait (a
// spanGray: unusable). Nothing is added when no probe passed in the lead
// (the Path was shown an ordinary outage). w.mu held.
func (w *world) grayShown() []span {
	if !w.s.NoCheckAtAll {
		return nil
	}
	wait := w.path.Engine().Config().GrayFailbackWait
	down := func(f faultnet.Fault) bool { return f.Kind == faultnet.KindDown || f.Kind == faultnet.KindBlackhole }
	var out []span
	for _, r := range w.s.Regions {
		rest, probe := addr(r, simbroker.REST), addr(r, simbroker.Probe)
		for _, n := range w.cx.netSets {
			if n.addr != rest || !down(n.f) {
				continue
			}
			a := n.at
			var b time.Time // the probe address down at or after a (zero: never)
			for _, m := range w.cx.netSets {
				if m.addr == probe && down(m.f) && !m.at.Before(a) && (b.IsZero() || m.at.Before(b)) {
					b = m.at
				}
			}
			for _, p := range w.cx.probes {
				ep, ok := w.path.Endpoint(p.endpoint)
				if !ok || ep.Region != r || !p.ok || p.start.Before(a) || !b.IsZero() && !p.end.Before(b) {
					continue
				}
				out = append(out, span{region: r, kind: spanGray, from: a, to: a.Add(wait)})
				break
			}
		}
	}
	return out
}

// coordEvent is one entry of the coordinator's own record (coordinated
// seeds): a pause of the process begun or ended, a halt it asked for, a lease
// that lapsed, the lease lost for good to another process, or an
// assignment the Path accepted.
type coordEvent struct {
	at   time.Time
	kind string // pause, resume, halt, lapse, retire, assigned
}

// noteCoord records a coordinator event (takes w.mu).
func (w *world) noteCoord(kind string) {
	w.mu.Lock()
	w.cx.coord = append(w.cx.coord, coordEvent{at: time.Now(), kind: kind})
	w.mu.Unlock()
}

// coordExempt (coordinated seeds): the stretches in which the coordinator's
// own record says the process may not trade: paused, or from the start, a
// halt, a lapse or the loss of the lease until the next assignment the Path
// accepted (w.mu held).
func (w *world) coordExempt() []ival {
	if !w.s.Coordinated {
		return nil
	}
	ev := append([]coordEvent(nil), w.cx.coord...)
	sort.SliceStable(ev, func(i, j int) bool { return ev[i].at.Before(ev[j].at) })
	var out []ival
	var pauseFrom time.Time
	unassigned, since := true, w.start
	for _, e := range ev {
		switch e.kind {
		case "pause":
			if pauseFrom.IsZero() {
				pauseFrom = e.at
			}
		case "resume":
			if !pauseFrom.IsZero() {
				out = append(out, ival{from: pauseFrom, to: e.at, why: "the process was paused"})
				pauseFrom = time.Time{}
			}
		case "halt", "lapse", "retire":
			if !unassigned {
				unassigned, since = true, e.at
			}
			if e.kind == "retire" {
				out = append(out, ival{from: since, why: "another process holds the lease"})
				return out
			}
		case "assigned":
			if unassigned {
				out = append(out, ival{from: since, to: e.at, why: "the coordinator had not assigned a path"})
				unassigned = false
			}
		}
	}
	if !pauseFrom.IsZero() {
		out = append(out, ival{from: pauseFrom, why: "the process was paused"})
	}
	if unassigned {
		out = append(out, ival{from: since, why: "the coordinator had not assigned a path"})
	}
	return out
}

// lookupKey marks a reconcile's order lookup in its request's context (the
// value is the client order ID), so that the dial can tell it from an order.
type lookupKey struct{}

// answer503 is a connection whose far end reads one HTTP request and
// answers 503 (MoveLookup5xx: the region's order lookups fail while its
// orders are booked and answered).
func answer503() net.Conn {
	c, s := net.Pipe()
	go func() {
		defer s.Close()
		req, err := http.ReadRequest(bufio.NewReader(s))
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_, _ = io.WriteString(s, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	}()
	return c
}

// stallWait is a hook point of MoveStall: while the client process is
// stalled, the calling goroutine waits for the stall's end, then resumes
// in its slot (as after a coordinated seed's pause).
func (w *world) stallWait(class time.Duration, name string) {
	w.stallMu.Lock()
	end := w.stallEnd
	w.stallMu.Unlock()
	if now := time.Now(); now.Before(end) {
		time.Sleep(end.Sub(now) + slot(class, name))
	}
}

// setNet sets nf on the services of region (the TLS front end of H2 seeds
// with REST).
func (w *world) setNet(region string, svcs []simbroker.Service, nf faultnet.Fault) {
	for _, svc := range svcs {
		w.netFault(addr(region, svc), nf)
		if svc == simbroker.REST && w.h2 != nil {
			w.netFault(h2Addr(region), nf)
		}
	}
}

// runLiveMove runs a liveness move (NewLiveScenario); false: not one.
func (w *world) runLiveMove(m Move) bool {
	all := []simbroker.Service{simbroker.REST, simbroker.Probe, simbroker.WS}
	switch m.Kind {
	case MoveOrderBurst:
		ep, _ := w.path.Active()
		region := ep.Region
		w.tracef(time.Now(), "move %s (active %s)", m, region)
		un := w.arm(region, spanNet)
		w.setNet(region, []simbroker.Service{simbroker.REST}, faultnet.Down())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for k := 1; k <= m.N; k++ {
				time.Sleep(113 * time.Microsecond)
				w.place(fmt.Sprintf("ob%d-%d", m.At.Microseconds(), k), false)
			}
		}()
		time.Sleep(m.Lead)
		w.setNet(region, []simbroker.Service{simbroker.Probe, simbroker.WS}, faultnet.Down())
		w.tracef(time.Now(), "move %s: probe and ws of %s down too", m.Kind, region)
		time.Sleep(m.Down - m.Lead)
		w.setNet(region, all, faultnet.None())
		un()
		w.tracef(time.Now(), "move %s: heal %s", m.Kind, region)
		<-done
		time.Sleep(time.Duration(m.Rounds) * w.s.ProbeInterval)
		var others []string
		for _, r := range w.s.Regions {
			if r != region {
				others = append(others, r)
			}
		}
		w.tracef(time.Now(), "move %s: %v down for %v", m.Kind, others, m.For)
		var uns []func()
		for _, r := range others {
			uns = append(uns, w.arm(r, spanNet))
			w.setNet(r, all, faultnet.Down())
		}
		time.Sleep(m.For)
		for i, r := range others {
			w.setNet(r, all, faultnet.None())
			uns[i]()
		}
		w.tracef(time.Now(), "move %s: heal %v", m.Kind, others)
	case MoveLookup5xx:
		ep, _ := w.path.Active()
		region := ep.Region
		w.tracef(time.Now(), "move %s (active %s)", m, region)
		var uns []func()
		for _, r := range w.s.Regions {
			if r != region {
				uns = append(uns, w.arm(r, spanLookup))
			}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(m.Lead)
			mc := w.armMoveUnknown(region, m.N) // movecuts.go
			// The next orders through it are cut; the region dies just
			// after the first of them could be booked.
			time.Sleep(w.s.OrderEvery + 3*time.Millisecond)
			un := w.arm(region, spanNet)
			w.setNet(region, all, faultnet.Down())
			w.tracef(time.Now(), "move %s: %s down for %v", m.Kind, region, m.Down)
			time.Sleep(m.Down)
			// The cuts no order used while the region was down end
			// with the move: it heals with none armed.
			w.endMoveUnknown(mc)
			w.setNet(region, all, faultnet.None())
			un()
			w.tracef(time.Now(), "move %s: heal %s", m.Kind, region)
		}()
		time.Sleep(m.For)
		for _, un := range uns {
			un()
		}
		w.tracef(time.Now(), "move %s: lookups answer again", m.Kind)
		<-done
	case MoveArmFail:
		w.tracef(time.Now(), "move %s", m)
		w.netFor(m, m.Region, spanNet, all, faultnet.Down(), m.Down)
		un := w.arm(m.Region, spanArmFail)
		time.Sleep(m.For)
		un()
		w.tracef(time.Now(), "move %s: arms through %s pass again", m.Kind, m.Region)
	case MoveStall:
		w.tracef(time.Now(), "move %s", m)
		un := w.arm("*", spanStall)
		w.stallMu.Lock()
		w.stallEnd = time.Now().Add(m.For)
		w.stallMu.Unlock()
		time.Sleep(m.For)
		un()
	case MoveHaltUnknown:
		ep, _ := w.path.Active()
		region := ep.Region
		w.tracef(time.Now(), "move %s (active %s)", m, region)
		var uns []func()
		for _, r := range w.s.Regions {
			uns = append(uns, w.arm(r, spanProbe))
			w.netFault(addr(r, simbroker.Probe), faultnet.Blackhole())
		}
		var mc int // its unknown-outcome fault (set in the goroutine, read after done)
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(m.Lead)
			mc = w.armMoveUnknown(region, m.N) // movecuts.go
			// The orders reach the broker a probe interval and a probe
			// timeout later: still in flight when the Path halts, they end
			// unknown after it.
			slow := []simbroker.Service{simbroker.REST}
			w.setNet(region, slow, faultnet.Latency(w.s.ProbeInterval+w.s.ProbeTimeout, 0))
			var placed sync.WaitGroup
			var ids []string
			for k := 1; k <= m.N; k++ {
				ids = append(ids, fmt.Sprintf("hu%d-%d", m.At.Microseconds(), k))
			}
			// Their answers (cut) reach the client only after the first
			// release after the halt, within a deadline that outlasts the
			// halt, a probe round and a reconcile (halthold.go).
			w.holdAnswers(ids)
			within := w.s.OrderTimeout + m.Down + 2*w.s.ProbeInterval + w.s.ProbeTimeout + 2*time.Second + w.s.ReconcileTimeout
			for _, id := range ids {
				time.Sleep(113 * time.Microsecond)
				placed.Add(1)
				go func() {
					defer placed.Done()
					w.placeWithin(id, false, within)
				}()
			}
			placed.Wait()
			w.setNet(region, slow, faultnet.None())
		}()
		time.Sleep(m.Down)
		for i, r := range w.s.Regions {
			w.netFault(addr(r, simbroker.Probe), faultnet.None())
			uns[i]()
		}
		w.tracef(time.Now(), "move %s: probes heal", m.Kind)
		// Halts faster than a reconcile: the resume's reconcile through the
		// region, once it has answered an order that had finished unknown,
		// reads slowly, and every probe fails again for as long, so the
		// next halt cuts it short (halthold.go).
		rt := w.s.ReconcileTimeout
		if rt == 0 {
			rt = 2 * time.Second // buildClient's default
		}
		answered := w.armSlowReads(region, rt+2*time.Second)
		t := time.NewTimer(2*w.s.ProbeInterval + w.s.ProbeTimeout + rt)
		select {
		case <-answered:
			t.Stop()
			w.tracef(time.Now(), "move %s: the resume's reconcile answered; probes fail again", m.Kind)
			for i, r := range w.s.Regions {
				uns[i] = w.arm(r, spanProbe)
				w.netFault(addr(r, simbroker.Probe), faultnet.Blackhole())
			}
			time.Sleep(m.Down)
			w.disarmSlowReads()
			for i, r := range w.s.Regions {
				w.netFault(addr(r, simbroker.Probe), faultnet.None())
				uns[i]()
			}
			w.tracef(time.Now(), "move %s: probes heal again", m.Kind)
		case <-t.C:
			w.disarmSlowReads()
		}
		<-done
		// Its own orders have all reached the broker or failed: the cuts
		// none of them used (orders the halt refused) end with the move.
		w.endMoveUnknown(mc)
	default:
		return false
	}
	return true
}

// armN records a broker unknown-outcome fault of n orders on region from
// now: armed until the broker cut them or every fault was healed. For the
// composed invariants too it is armed until its n-th cut (checkComposed,
// armedUntilCut), as a scheduled unknown-outcome fault is, or until its
// move's end disarmed what was left (endMoveUnknown, movecuts.go): no order
// after the move is cut by it.
func (w *world) armN(region, kind string, n int) {
	w.mu.Lock()
	w.cx.spans = append(w.cx.spans, span{region: region, kind: kind, from: time.Now(), to: time.Now().Add(2 * time.Second), n: n, cuts: n})
	w.mu.Unlock()
}

// netSet is one fault the sim set on an address of the network.
type netSet struct {
	at   time.Time
	addr string
	f    faultnet.Fault
}

// brokerSet is one application fault the sim set on the broker.
type brokerSet struct {
	at     time.Time
	region string
	svc    simbroker.Service
	f      simbroker.Fault
}

// netFault sets f on address a and records it.
func (w *world) netFault(a string, f faultnet.Fault) {
	w.mu.Lock()
	w.cx.netSets = append(w.cx.netSets, netSet{at: time.Now(), addr: a, f: f})
	w.mu.Unlock()
	_ = w.net.SetFault(a, f)
}

// brokerFault sets f on the broker's svc of region and records it.
func (w *world) brokerFault(region string, svc simbroker.Service, f simbroker.Fault) {
	w.mu.Lock()
	w.cx.brokerSets = append(w.cx.brokerSets, brokerSet{at: time.Now(), region: region, svc: svc, f: f})
	w.mu.Unlock()
	_ = w.b.SetFault(region, svc, f)
}

// spanUnsure: an order through the region may or may not be booked and
// answered (a latency fault, the moment of a reset or of a drain): such a
// region counts neither as usable nor as unusable.
const spanUnsure = "unsure"

// orderPathSpans is what really stood in the way of an order through each
// region, from the faults the sim set (the last one set on an address is in
// force, whatever span the move that set it recorded): the REST address
// down or blackholed, or the broker answering 503 (Partial) or cutting
// answers (an unknown-outcome fault, until it cut its N orders or for two
// seconds, then at each further cut); a latency fault or a reset's moment
// is unsure. cuts are the times the broker cut an order's answer, per region.
func orderPathSpans(regions []string, nets []netSet, brokers []brokerSet, cuts map[string][]time.Time) []span {
	var out []span
	for _, r := range regions {
		a := addr(r, simbroker.REST)
		var sets []netSet
		for _, n := range nets {
			if n.addr == a {
				sets = append(sets, n)
			}
		}
		for i, n := range sets {
			var to time.Time
			if i+1 < len(sets) {
				to = sets[i+1].at
			}
			switch n.f.Kind {
			case faultnet.KindDown, faultnet.KindBlackhole:
				out = append(out, span{region: r, kind: spanNet, from: n.at, to: to})
			case faultnet.KindLatency:
				out = append(out, span{region: r, kind: spanUnsure, from: n.at, to: to})
			case faultnet.KindReset:
				end := n.at.Add(2 * time.Second)
				if !to.IsZero() && to.Before(end) {
					end = to
				}
				out = append(out, span{region: r, kind: spanUnsure, from: n.at, to: end})
			}
		}
		var bs []brokerSet
		for _, b := range brokers {
			if b.region == r && b.svc == simbroker.REST {
				bs = append(bs, b)
			}
		}
		for i, b := range bs {
			var to time.Time
			if i+1 < len(bs) {
				to = bs[i+1].at
			}
			switch f := b.f.(type) {
			case simbroker.Partial, simbroker.Fault503:
				out = append(out, span{region: r, kind: spanGray, from: b.at, to: to})
			case simbroker.UnknownOutcome:
				// Bad until it cut its N orders, for at most two seconds
				// (as a scheduled unknown-outcome fault is counted); then
				// each further cut is a moment of its own: a fault that
				// cuts the next N orders is no dead path while no order
				// comes.
				bad := b.at.Add(2 * time.Second)
				if !to.IsZero() && to.Before(bad) {
					bad = to
				}
				n := 0
				for _, c := range cuts[r] {
					if c.Before(b.at) || (!to.IsZero() && !c.Before(to)) || n >= f.N {
						continue
					}
					n++
					if c.Before(bad) {
						if n == f.N {
							bad = c.Add(time.Millisecond)
						}
						continue
					}
					out = append(out, span{region: r, kind: spanUnknown, from: c, to: c.Add(time.Millisecond)})
				}
				out = append(out, span{region: r, kind: spanUnknown, from: b.at, to: bad})
			}
		}
	}
	return out
}
