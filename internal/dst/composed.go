package dst

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// The composed moves (Scenario.Moves) and the invariants judged from what
// the simulation itself did to the world: the spans during which it had a
// fault armed on a region, when its own probes answered, when each order was
// granted a ticket (its connection's dial, which follows the grant at the
// same virtual instant), and when the coordinator asked for a halt. The
// Path's events say when an endpoint went DOWN and when the gate was held,
// halted or released.

// Invariants of the composed moves.
const (
	InvGrantAfterDown   = "no-ticket-after-down"                 // no order granted on an endpoint after a report took it DOWN
	InvActWithinEval    = "hold-within-one-evaluation"           // DOWN of the active endpoint, or a coordinator's Halt, is acted on at once
	InvGrayFailback     = "no-failback-while-trade-path-fails"   // no failback to an endpoint whose gray trade-path fault is still armed
	InvHaltWhileAnswer  = "no-halt-while-target-answered"        // no halt for want of a target while a clean backup's probe answered
	InvStreamAlone      = "stream-evidence-alone-moves-no-order" // a stream's failures alone take no endpoint DOWN for orders
	InvIdentityAtSwitch = "identity-proved-at-switch"            // no order granted on an endpoint that fronted another account before the switch to it began
)

// Span kinds: what the simulation had armed on a region.
const (
	spanNet       = "net"       // rest, probe and ws (down, blackhole, latency, reset)
	spanProbe     = "probe"     // the probe address only (partition, late probes)
	spanStarve    = "starve"    // every region's probes late (a starved host, not the endpoint)
	spanWS        = "ws"        // the ws address only (stream dials time out)
	spanUnknown   = "unknown"   // orders booked, answer cut
	spanGray      = "gray"      // orders 503, trade-path check fails, probe passes
	spanHang      = "hang"      // reconcile reads through the region hang
	spanIdentity  = "identity"  // the region fronts another account
	spanDialHang  = "dialhang"  // order dials to the region hang until the order's deadline
	spanFenceHang = "fencehang" // the broker's kill switch for the region hangs
)

// slack is how long after the report that took the active endpoint DOWN
// (or a coordinator's Halt) a ticket may still be granted: one evaluation,
// which takes no virtual time.
const slack = time.Millisecond

type span struct {
	region, kind string
	from, to     time.Time // to zero: armed until the end
	// cuts: an unknown-outcome fault stays armed until the broker cut this
	// many orders (checkComposed moves to there, from the broker's audit).
	cuts int
	// n: the broker's unknown-outcome fault of a move cuts this many orders,
	// and stays armed until it did or every fault was healed, whatever the
	// span's end (judged by gate-open-while-usable only).
	n int
	// cleared: the move's end disarmed what was left of its unknown-outcome
	// fault (endMoveUnknown); a span counting cuts ends there at the latest.
	cleared time.Time
}

type probeRec struct {
	endpoint   string
	start, end time.Time
	ok         bool
}

type grantRec struct {
	id, endpoint string
	at           time.Time
	acq          time.Time // the dial's start, before a paused process waits there
}

type stateRec struct {
	endpoint    string
	at          time.Time
	prev, state engine.HealthState
	probe       bool // the event before it was this endpoint's probe
	seq         uint64
}

type gateRec struct {
	at       time.Time
	kind     pathdialer.EventKind
	from, to string // switch
	service  string // release: the service released ("" the gate)
	cause    string
	seq      uint64
}

type haltCall struct {
	at, returned time.Time
}

// composed is the run's record for the composed invariants (under w.mu).
type composed struct {
	spans    []span
	probes   []probeRec
	grants   []grantRec
	states   []stateRec
	gates    []gateRec
	halts    []haltCall
	fences   []fenceCall // the sim's Fencer: every call and its return
	checks   []probeRec  // the trade-path checks' answers
	conns    []*connRec  // the order connections and when the client closed them
	lastKind pathdialer.EventKind
	lastEP   string
	haltArm  []chan struct{} // MoveHaltSettle: armed, fired at the next settle
	// MoveHaltSwitch: armed, fired at the next event of the kind.
	haltOn map[pathdialer.EventKind][]chan struct{}
	coord  []coordEvent // the coordinator's own record (avail.go)
	// Every fault the sim set on the network and on the broker, in order
	// (avail.go): what was really in force, where faults overlap.
	netSets    []netSet
	brokerSets []brokerSet
	// The liveness moves' unknown-outcome faults (movecuts.go).
	moveCuts []moveCut
}

// arm records that kind is armed on region from now; the returned func
// disarms it.
func (w *world) arm(region, kind string) func() {
	w.mu.Lock()
	w.cx.spans = append(w.cx.spans, span{region: region, kind: kind, from: time.Now()})
	i := len(w.cx.spans) - 1
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		w.cx.spans[i].to = time.Now()
		w.mu.Unlock()
	}
}

// armedNow reports whether kind is armed on region at this instant.
func (w *world) armedNow(region, kind string) bool {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.cx.spans {
		if s.region == region && s.kind == kind && !now.Before(s.from) && (s.to.IsZero() || now.Before(s.to)) {
			return true
		}
	}
	return false
}

// spansOn returns the kinds armed on region at any time in [a, b] (w.mu held).
func (w *world) spansOn(region string, a, b time.Time) map[string]bool {
	out := map[string]bool{}
	for _, s := range w.cx.spans {
		if (s.region == region || s.region == "*") && !s.from.After(b) && (s.to.IsZero() || !s.to.Before(a)) {
			out[s.kind] = true
		}
	}
	return out
}

func spanOfFault(k FaultKind) string {
	switch k {
	case FaultPartition:
		return spanProbe
	case FaultUnknown:
		return spanUnknown
	}
	return spanNet
}

func (w *world) runMove(m Move) {
	time.Sleep(m.At)
	if w.runLiveMove(m) { // avail.go
		return
	}
	if w.runReleaseRace(m) { // releaserace.go
		return
	}
	if w.runFIXHanded(m) { // fixhanded.go
		return
	}
	switch m.Kind {
	case MoveStartCut:
		// Start's context was cut in Run (the first round's probes answer
		// at their deadline, see probe); the primary goes down after Lead.
		time.Sleep(m.Lead)
		done := make(chan struct{})
		go func() {
			defer close(done)
			// Orders through the primary as it fails, one after another,
			// while the cut round's probes still run.
			for k := 1; k <= m.N; k++ {
				time.Sleep(113 * time.Microsecond)
				w.place(fmt.Sprintf("sc%d-%d", m.Lead.Microseconds(), k), false) // its own IDs per move
			}
		}()
		w.netFor(m, m.Region, spanNet, []simbroker.Service{simbroker.REST, simbroker.Probe, simbroker.WS}, faultnet.Down(), m.Down)
		<-done
	case MoveProbeLate:
		regions := []string{m.Region}
		if m.Region == "*" {
			regions = w.s.Regions
		}
		w.tracef(time.Now(), "move %s", m)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if m.Down > 0 {
				time.Sleep(m.Lead)
				ep, _ := w.path.Active() // the active endpoint fails
				w.netFor(m, ep.Region, spanNet, []simbroker.Service{simbroker.REST, simbroker.Probe, simbroker.WS}, faultnet.Down(), m.Down)
			}
		}()
		w.lateProbes(regions, m.For)
		if m.Region == "*" {
			// Then one round slow but in time (not a fault: no span), as
			// the primary fails: the backup's last recorded result is the
			// late one, and its probe is running when the failure is
			// evaluated.
			for _, r := range regions {
				w.netFault(addr(r, simbroker.Probe), faultnet.Latency(w.s.ProbeTimeout/8, 0))
			}
			time.Sleep(w.s.ProbeInterval)
			for _, r := range regions {
				w.netFault(addr(r, simbroker.Probe), faultnet.None())
			}
		}
		<-done
	case MoveSettleHang:
		w.tracef(time.Now(), "move %s", m)
		w.brokerFault(m.Region, simbroker.REST, simbroker.UnknownOutcome{N: m.N})
		unUnknown := w.arm(m.Region, spanUnknown)
		cuts := w.moveCutSet(m.Region, m.N)
		unHang := w.arm(m.Region, spanHang)
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(m.Lead)
			w.netFor(m, m.Region, spanNet, []simbroker.Service{simbroker.REST, simbroker.Probe, simbroker.WS}, faultnet.Down(), m.Down)
		}()
		time.Sleep(m.For)
		unHang()
		unUnknown()
		w.tracef(time.Now(), "move %s on %s: reads no longer hang", m.Kind, m.Region)
		<-done
		// Its outage over too: what is left of its cuts is disarmed.
		w.endMoveUnknown(cuts)
	case MoveStreamDial:
		w.netFor(m, m.Region, spanWS, []simbroker.Service{simbroker.WS}, faultnet.Blackhole(), m.For)
	case MoveGray:
		w.tracef(time.Now(), "move %s", m)
		w.brokerFault(m.Region, simbroker.REST, simbroker.Partial{})
		un := w.arm(m.Region, spanGray)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if m.Rounds == 0 {
				return // no blip (NewLiveScenario's unchecked gray failure)
			}
			time.Sleep(m.Lead)
			w.lateProbes([]string{m.Region}, time.Duration(m.Rounds)*w.s.ProbeInterval)
		}()
		time.Sleep(m.For)
		w.brokerFault(m.Region, simbroker.REST, simbroker.None{})
		un()
		w.tracef(time.Now(), "heal %s on %s", m.Kind, m.Region)
		<-done
	case MoveIdentity:
		w.tracef(time.Now(), "move %s", m)
		un := w.arm(m.Region, spanIdentity)
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(m.Lead)
			w.netFor(m, w.s.Regions[0], spanNet, []simbroker.Service{simbroker.REST, simbroker.Probe, simbroker.WS}, faultnet.Down(), m.Down)
		}()
		time.Sleep(m.For)
		un()
		w.tracef(time.Now(), "heal %s on %s", m.Kind, m.Region)
		<-done
	case MoveHaltSettle:
		w.tracef(time.Now(), "move %s", m)
		w.co.haltAtNextSettle(m)
	case MoveHaltSwitch:
		ep, _ := w.path.Active()
		region := ep.Region
		w.tracef(time.Now(), "move %s (active %s)", m, region)
		halted := make(chan struct{})
		go func() {
			defer close(halted)
			at := pathdialer.EventFenceStart
			if m.Rounds == 1 {
				at = pathdialer.EventSwitch
			}
			w.co.haltAtNext(at, m)
		}()
		unDial := w.arm(region, spanDialHang)
		unFence := w.arm(region, spanFenceHang)
		w.netFor(m, region, spanNet, []simbroker.Service{simbroker.REST, simbroker.Probe, simbroker.WS}, faultnet.Down(), m.Down)
		unFence()
		unDial()
		<-halted
	}
}

// netFor sets nf on the services of region for d, recorded as a span.
func (w *world) netFor(m Move, region, kind string, svcs []simbroker.Service, nf faultnet.Fault, d time.Duration) {
	w.tracef(time.Now(), "move %s: %s on %s for %v", m.Kind, nf, region, d)
	un := w.arm(region, kind)
	for _, svc := range svcs {
		w.netFault(addr(region, svc), nf)
	}
	time.Sleep(d)
	for _, svc := range svcs {
		w.netFault(addr(region, svc), faultnet.None())
	}
	un()
	w.tracef(time.Now(), "move %s: heal %s on %s", m.Kind, nf, region)
}

// lateProbes delays the probe answers of regions past ProbeTimeout for d.
func (w *world) lateProbes(regions []string, d time.Duration) {
	nf := faultnet.Latency(w.s.ProbeTimeout/2+time.Millisecond, 0)
	kind := spanProbe
	if len(regions) > 1 {
		kind = spanStarve
	}
	var uns []func()
	for _, r := range regions {
		uns = append(uns, w.arm(r, kind))
		w.netFault(addr(r, simbroker.Probe), nf)
	}
	time.Sleep(d)
	for i, r := range regions {
		w.netFault(addr(r, simbroker.Probe), faultnet.None())
		uns[i]()
	}
	w.tracef(time.Now(), "late probes end on %v", regions)
}

// identity is the Path's IdentityFunc: the account the region's probe
// address says it fronts, or another while a MoveIdentity is armed there.
func (w *world) identity(ctx context.Context, ep pathdialer.Endpoint) (pathdialer.Identity, error) {
	w.co.wait(resumeProbe, ep.Name+"/identity")
	w.stallWait(resumeProbe, ep.Name+"/identity")
	ctx, cancel := ownDeadline(ctx, ep, 2)
	defer cancel()
	u, _ := ep.Address("probe")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/v1/account", nil)
	if err != nil {
		return pathdialer.Identity{}, err
	}
	req.Header.Set("X-API-Key", apiKey)
	resp, err := w.dc.Do(req)
	if err != nil {
		return pathdialer.Identity{}, fmt.Errorf("identity %s: %w", ep.Name, err)
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	var a struct {
		Account string `json:"account_id"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &a) != nil {
		return pathdialer.Identity{}, fmt.Errorf("identity %s: HTTP %d", ep.Name, resp.StatusCode)
	}
	if w.armedNow(ep.Region, spanIdentity) {
		a.Account = "ACC-OTHER"
	}
	return pathdialer.Identity{Account: a.Account}, nil
}

// recordEvent keeps what the composed invariants need from one event.
func (w *world) recordEvent(ev pathdialer.Event) {
	w.h2.noteEvent(ev) // h2sim.go
	w.mu.Lock()
	defer w.mu.Unlock()
	switch ev.Kind {
	case pathdialer.EventStateChange:
		probe := w.cx.lastKind == pathdialer.EventProbe && w.cx.lastEP == ev.Endpoint
		w.cx.states = append(w.cx.states, stateRec{endpoint: ev.Endpoint, at: ev.Time, prev: ev.PrevState, state: ev.State, probe: probe, seq: ev.Seq})
	case pathdialer.EventHold, pathdialer.EventHalt, pathdialer.EventFenceStart, pathdialer.EventSwitch,
		pathdialer.EventRelease, pathdialer.EventResume:
		w.cx.gates = append(w.cx.gates, gateRec{at: ev.Time, kind: ev.Kind, from: ev.From, to: ev.To, service: ev.Service, cause: ev.Cause, seq: ev.Seq})
	}
	if chs := w.cx.haltOn[ev.Kind]; len(chs) > 0 {
		for _, ch := range chs {
			close(ch)
		}
		delete(w.cx.haltOn, ev.Kind)
	}
	switch ev.Kind {
	case pathdialer.EventReconcileStart:
		if ev.From == ev.To && len(w.cx.haltArm) > 0 {
			for _, ch := range w.cx.haltArm {
				close(ch)
			}
			w.cx.haltArm = nil
		}
	}
	w.cx.lastKind, w.cx.lastEP = ev.Kind, ev.Endpoint
}

// haltAtNextSettle (coordinated seeds) halts the Path at the first settle
// that begins after now (at most a few seconds later), records how long
// Halt took, and assigns the active endpoint again m.For later.
func (c *coordinator) haltAtNextSettle(m Move) {
	if c == nil {
		return
	}
	ch := make(chan struct{})
	c.w.mu.Lock()
	c.w.cx.haltArm = append(c.w.cx.haltArm, ch)
	c.w.mu.Unlock()
	tm := time.NewTimer(5 * time.Second)
	defer tm.Stop()
	select {
	case <-ch:
	case <-tm.C:
		return
	case <-c.stop:
		return
	}
	time.Sleep(31 * time.Microsecond)
	c.haltThenAssign(m, "during a settle")
}

// haltThenAssign halts the Path, records how long Halt took, and assigns
// the active endpoint again m.For later.
func (c *coordinator) haltThenAssign(m Move, when string) {
	at := time.Now()
	c.w.noteCoord("halt")
	err := c.w.path.Halt(errCoordHalt)
	ret := time.Now()
	c.w.mu.Lock()
	c.w.cx.halts = append(c.w.cx.halts, haltCall{at: at, returned: ret})
	c.w.mu.Unlock()
	c.w.tracef(ret, "coord halt %s (called at +%v): %s", when, at.Sub(c.w.start), errText(err))
	if !c.sleepUntil(time.Now().Add(m.For)) {
		return
	}
	c.mu.Lock()
	if c.sess.lost {
		// The follower re-assigns on its own.
		c.mu.Unlock()
		return
	}
	// During a pause the assignment waits for its end (assign waits for
	// the follower), and is dropped if the lease was lost meanwhile: a
	// pause too short to lose the lease must not leave the Path halted.
	c.token++
	tok := c.token
	c.tokSess[tok] = c.sess
	c.mu.Unlock()
	ep, _ := c.w.path.Active()
	c.assign(ep.Name, tok, "after the halt")
}

// haltAtNext (coordinated seeds) halts the Path just after the next event
// of kind (at most ten seconds later), records how long Halt took, and
// assigns the active endpoint again m.For later.
func (c *coordinator) haltAtNext(kind pathdialer.EventKind, m Move) {
	if c == nil {
		return
	}
	ch := make(chan struct{})
	c.w.mu.Lock()
	if c.w.cx.haltOn == nil {
		c.w.cx.haltOn = map[pathdialer.EventKind][]chan struct{}{}
	}
	c.w.cx.haltOn[kind] = append(c.w.cx.haltOn[kind], ch)
	c.w.mu.Unlock()
	tm := time.NewTimer(10 * time.Second)
	defer tm.Stop()
	select {
	case <-ch:
	case <-tm.C:
		return
	case <-c.stop:
		return
	}
	time.Sleep(31 * time.Microsecond)
	c.haltThenAssign(m, "during a switch")
}

var errCoordHalt = errors.New("dst: the coordinator halts trading")

// armedUntilCut ends each unknown-outcome span that counts cuts where the
// broker's audit shows its last cut: such a fault is armed until the broker
// cut its N orders (flow may have left the region before that, and the
// cuts may come long after), not for a fixed while; one that never cut all
// of them stays armed to the end, or to the moment its move's end disarmed
// what was left (span.cleared).
func armedUntilCut(spans []span, audit []simbroker.Record) {
	for i := range spans {
		sp := &spans[i]
		if sp.kind != spanUnknown || sp.cuts == 0 {
			continue
		}
		n := 0
		sp.to = sp.cleared // zero: armed to the end
		for _, r := range audit {
			if !sp.cleared.IsZero() && !r.Time.Before(sp.cleared) {
				break
			}
			if r.Kind == simbroker.KindOrder && r.Outcome == simbroker.OutcomeCut && r.Region == sp.region && !r.Time.Before(sp.from) {
				if n++; n == sp.cuts {
					sp.to = r.Time.Add(time.Millisecond)
					break
				}
			}
		}
	}
}

// checkComposed judges the composed invariants (w.mu held).
func (w *world) checkComposed(res *Result, viol func(inv, format string, a ...any)) {
	cx := &w.cx
	sort.SliceStable(cx.states, func(i, j int) bool { return cx.states[i].seq < cx.states[j].seq })
	sort.SliceStable(cx.gates, func(i, j int) bool { return cx.gates[i].seq < cx.gates[j].seq })
	sort.SliceStable(cx.grants, func(i, j int) bool { return cx.grants[i].at.Before(cx.grants[j].at) })
	armedUntilCut(cx.spans, w.b.Audit())
	primary := w.s.Regions[0]
	// activeAt is the active endpoint just after time t (the switches).
	activeAt := func(t time.Time) string {
		a := primary
		for _, g := range cx.gates {
			if g.at.After(t) {
				break
			}
			if g.kind == pathdialer.EventSwitch {
				a = g.to
			}
		}
		return a
	}
	// openAt: the last gate event at or before t left the gate open
	// (a release; none yet: Start opened it).
	openAt := func(t time.Time) bool {
		open := true
		for _, g := range cx.gates {
			if g.at.After(t) {
				break
			}
			open = g.kind == pathdialer.EventRelease
		}
		return open
	}
	// The DOWNs that count: an endpoint going DOWN while active, with the
	// gate open, in a Path that decides by itself.
	type down struct {
		stateRec
		until time.Time // left DOWN (zero: never)
	}
	var downs []down
	for i, s := range cx.states {
		if s.state != engine.Down || s.prev == engine.Down {
			continue
		}
		d := down{stateRec: s}
		for _, t := range cx.states[i+1:] {
			if t.endpoint == s.endpoint && t.state != engine.Down {
				d.until = t.at
				break
			}
		}
		downs = append(downs, d)
	}
	bound := func(d down) time.Duration {
		if d.probe {
			return w.s.ProbeInterval
		}
		return slack
	}
	if !w.s.Coordinated {
		for _, d := range downs {
			if activeAt(d.at) != d.endpoint || !openAt(d.at) {
				continue
			}
			lim := d.at.Add(bound(d))
			acted := false
			for _, g := range cx.gates {
				if g.seq > d.seq && !g.at.After(lim) && g.kind != pathdialer.EventRelease {
					acted = true
					break
				}
			}
			if !acted && (d.until.IsZero() || d.until.After(lim)) {
				next := "never"
				for _, g := range cx.gates {
					if g.seq > d.seq && g.kind != pathdialer.EventRelease {
						next = fmt.Sprintf("%s at %v", g.kind, w.off(g.at))
						break
					}
				}
				viol(InvActWithinEval, "the active endpoint %s went DOWN at %v (%s evidence); the gate was still open %v later (next hold, halt or switch: %s)",
					d.endpoint, w.off(d.at), evidence(d.probe), bound(d), next)
			}
			// Orders granted on it after the bound, while it stayed DOWN.
			n, first := 0, time.Time{}
			for _, g := range cx.grants {
				if g.endpoint == d.endpoint && g.at.After(lim) && (d.until.IsZero() || g.at.Before(d.until)) {
					if n == 0 {
						first = g.at
					}
					n++
				}
			}
			if n > 0 {
				viol(InvGrantAfterDown, "%d order(s) granted on %s after it went DOWN at %v (%s evidence), the first at %v", n, d.endpoint, w.off(d.at), evidence(d.probe), w.off(first))
			}
		}
	}
	w.checkReleaseRace(viol) // MoveReleaseRace (releaserace.go)
	// A coordinator's Halt is acted on at once, whatever runs.
	for _, h := range cx.halts {
		if took := h.returned.Sub(h.at); took > slack {
			viol(InvActWithinEval, "the coordinator's Halt called at %v returned %v later", w.off(h.at), took)
		}
		n := 0
		for _, g := range cx.grants {
			if g.at.After(h.at.Add(slack)) && !w.releasedBetween(h.at, g.at) {
				n++
			}
		}
		if n > 0 {
			viol(InvGrantAfterDown, "%d order(s) granted after the coordinator's Halt at %v and before any release", n, w.off(h.at))
		}
	}
	// No failback to an endpoint while its gray trade-path fault, armed when
	// it was left, is still armed. In seeds with rest.Reconciler's offered
	// check (a lookup) and no Config.TradePathCheck, a failover onto it (the
	// active endpoint DOWN, no other target: the Path's last resort, tried
	// at most once a failback cooldown) is a note: the lookup passes
	// whether or not the broker takes orders there again (the broker's
	// Partial fault answers reads), so only an order can tell, and a Path
	// that never tried would halt for Engine.GrayFailbackWait after the
	// fault healed (gate-open-while-usable). A failback (the active
	// endpoint carrying flow) stays a violation there too.
	lastResortNote := w.s.NoTradePathCheck && !w.s.NoCheckAtAll
	for i, g := range cx.gates {
		if g.kind != pathdialer.EventSwitch {
			continue
		}
		for _, s := range cx.spans {
			if s.kind != spanGray || s.region != g.to || g.at.Before(s.from) || (!s.to.IsZero() && !g.at.Before(s.to)) {
				continue
			}
			for _, h := range cx.gates[:i] {
				// Left while the gray fault was its only fault: the Path's
				// evidence was live traffic failing while the probe passed.
				if h.kind == pathdialer.EventSwitch && h.to != g.to && !h.at.Before(s.from) && activeBefore(cx.gates, h, primary) == g.to &&
					len(w.spansOn(g.to, s.from, h.at)) == 1 {
					// A coordinator's assignment ("assigned") is a failover
					// too: the simulated decider moves only away from an
					// active endpoint that is DOWN, never back by itself.
					if lastResortNote && (g.cause == "failover" || g.cause == "assigned") {
						res.Notes = append(res.Notes, fmt.Sprintf("with the offered trade-path check (a lookup), failover to %s at %v as the last resort while its trade path still failed (gray fault armed at %v, %s left at %v)", g.to, w.off(g.at), w.off(s.from), g.to, w.off(h.at)))
						break
					}
					viol(InvGrayFailback, "failback to %s at %v while its trade path still failed (gray fault armed at %v, %s left at %v)", g.to, w.off(g.at), w.off(s.from), g.to, w.off(h.at))
					break
				}
			}
		}
	}
	// Identity: no order granted on an endpoint that fronted another account
	// from before the switch to it began (its hold). The switch itself may
	// happen (the identity is re-proved beside the fence and the reconcile);
	// the gate must not open on it.
	for i, g := range cx.gates {
		if g.kind != pathdialer.EventSwitch {
			continue
		}
		began := g.at
		for k := i - 1; k >= 0; k-- {
			h := cx.gates[k]
			if h.kind == pathdialer.EventRelease {
				break
			}
			began = h.at
		}
		// The switch's tenure ends at the next switch.
		var until time.Time
		for _, h := range cx.gates[i+1:] {
			if h.kind == pathdialer.EventSwitch {
				until = h.at
				break
			}
		}
		for _, s := range cx.spans {
			if s.kind != spanIdentity || s.region != g.to || s.from.After(began) || !s.to.IsZero() && !s.to.After(g.at) {
				continue
			}
			for _, gr := range cx.grants {
				if gr.endpoint == g.to && gr.at.After(g.at) && (until.IsZero() || gr.at.Before(until)) && (s.to.IsZero() || gr.at.Before(s.to)) {
					viol(InvIdentityAtSwitch, "order %s granted on %s at %v after the switch at %v; it had fronted another account since %v, before the switch began at %v", gr.id, g.to, w.off(gr.at), w.off(g.at), w.off(s.from), w.off(began))
					break
				}
			}
		}
	}
	// No halt for want of a target while a backup with nothing armed on it
	// for a long while had just answered its probe.
	win := w.s.MaxHealthAge + time.Duration(w.s.FailbackSuccess+w.s.FailureThreshold+2)*w.s.ProbeInterval + w.s.Cooldown
	if !w.s.Coordinated {
		for _, g := range cx.gates {
			if g.kind != pathdialer.EventHalt || !strings.HasPrefix(g.cause, "no eligible target") {
				continue
			}
			act := activeAt(g.at)
			for _, e := range w.s.Regions {
				k := w.spansOn(e, g.at.Add(-win), g.at)
				starved := k[spanStarve]
				delete(k, spanStarve)
				if e == act || len(k) > 0 || w.wasGray(e) {
					continue
				}
				if starved && w.stateAt(e, g.at) == engine.Down {
					continue // a starved host's late probes took it DOWN: a verdict, not stale evidence
				}
				if p, ok := w.lastProbe(e, g.at); ok && p.ok && !p.start.Before(g.at.Add(-w.s.ProbeInterval-w.s.ProbeTimeout)) {
					viol(InvHaltWhileAnswer, "halted at %v (%s) while %s, with no fault for %v, had answered its probe at %v", w.off(g.at), clip(g.cause), e, win, w.off(p.end))
				} else if p, ok := w.cutRoundProbe(e, g.at); ok {
					viol(InvHaltWhileAnswer, "halted at %v (%s) during the first probe round, cut by Start's context, while %s (no fault armed on it) was answering that round's probe (at %v): a fresh probe would have answered too", w.off(g.at), clip(g.cause), e, w.off(p.end))
				}
			}
		}
	}
	// A stream's failures alone take no endpoint DOWN for orders.
	for _, d := range downs {
		if d.probe {
			continue
		}
		k := w.spansOn(d.endpoint, d.at.Add(-2*w.s.ProbeInterval-2*time.Second), d.at)
		if k[spanWS] && len(k) == 1 {
			viol(InvStreamAlone, "%s went DOWN at %v with only its WebSocket address failing", d.endpoint, w.off(d.at))
		}
	}
}

func evidence(probe bool) string {
	if probe {
		return "probe"
	}
	return "live-traffic"
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// activeBefore is the endpoint active just before switch h.
func activeBefore(gates []gateRec, h gateRec, primary string) string {
	a := primary
	for _, g := range gates {
		if g.seq >= h.seq {
			break
		}
		if g.kind == pathdialer.EventSwitch {
			a = g.to
		}
	}
	return a
}

// releasedBetween: a release event in (a, b] (w.mu held).
func (w *world) releasedBetween(a, b time.Time) bool {
	for _, g := range w.cx.gates {
		if g.kind == pathdialer.EventRelease && g.at.After(a) && !g.at.After(b) {
			return true
		}
	}
	return false
}

// wasGray: the sim armed a gray fault on e at some point (w.mu held).
func (w *world) wasGray(e string) bool {
	for _, s := range w.cx.spans {
		if s.region == e && s.kind == spanGray {
			return true
		}
	}
	return false
}

// lastProbe is the last probe of e that ended at or before t (w.mu held).
func (w *world) lastProbe(e string, t time.Time) (probeRec, bool) {
	var best probeRec
	ok := false
	for _, p := range w.cx.probes {
		if p.endpoint == e && !p.end.After(t) && (!ok || p.end.After(best.end)) {
			best, ok = p, true
		}
	}
	return best, ok
}

// cutRoundProbe (MoveStartCut) is e's probe of the first round, whose
// context Start's cut ended, when it was running at t, during that round,
// and answered (w.mu held): a halt at t had a backup that answered.
func (w *world) cutRoundProbe(e string, t time.Time) (probeRec, bool) {
	if !w.s.Has(MoveStartCut) || !t.Before(w.start.Add(w.s.ProbeTimeout)) {
		return probeRec{}, false
	}
	for _, p := range w.cx.probes {
		if p.endpoint == e && p.ok && p.start.Sub(w.start) < w.s.ProbeTimeout && !p.start.After(t) && !p.end.Before(t) {
			return p, true
		}
	}
	return probeRec{}, false
}

// stateAt is e's last recorded state at or before t (w.mu held).
func (w *world) stateAt(e string, t time.Time) engine.HealthState {
	st := engine.Unknown
	for _, s := range w.cx.states {
		if s.endpoint == e && !s.at.After(t) {
			st = s.state
		}
	}
	return st
}
