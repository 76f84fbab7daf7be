package dst

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// MoveFIXHanded (FIX seeds of a Path deciding by itself with the liveness
// moves, FailureThreshold at least 2): a FIX order granted while its session
// is down waits for the logon through a halt and a resume on the same
// endpoint. At At the active region's FIX address goes down (the session's
// connection is reset), then silent (a blackhole: the session's logons get
// no answer, and its dials are not failures); an order is placed over FIX
// just after, with a deadline that outlasts the rest of the move (For), and
// is granted its ticket while the gate is open. Lead later (after a probe
// round that passed) every region's probe is blackholed for Down: the Path
// halts for want of a target. Then the active region's probe heals (the
// others' only Rounds probe intervals and a second later), so the Path
// resumes on the endpoint it halted on, under the same token, and the
// resume's reconcile is handed the order in flight. The session's FIX
// address heals as that reconcile is called (its held logon then goes
// through): the order must not be written after it was handed over
// (no-order-sent-after-handed; Ticket.Valid refuses such a ticket).
const MoveFIXHanded MoveKind = "fix-handed"

// InvSentAfterHanded: no FIX order handed to a reconcile while in flight
// reaches the broker by a write the client made after that hand-over.
const InvSentAfterHanded = "no-order-sent-after-handed"

// addFIXHanded adds a MoveFIXHanded to the FIX seeds of a Path deciding by
// itself whose FailureThreshold is at least 2 (with 1, the session's reset
// alone takes the endpoint DOWN and flow fails over) and that have no
// halt-with-unknown or release-race move, drawn from a source of its own
// (every other move and field is as it was drawn).
func addFIXHanded(s *Scenario, seed uint64) {
	if !s.FIX || s.Coordinated || s.FailureThreshold < 2 {
		return
	}
	for _, m := range s.Moves {
		if m.Kind == MoveHaltUnknown || m.Kind == MoveReleaseRace {
			return // halts and releases of their own, judged by their own checks
		}
	}
	r := rand.New(rand.NewPCG(seed, seed^0xf1c5a4d3f1c5a4d3))
	dur := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	m := Move{
		Kind:   MoveFIXHanded,
		Region: "active",
		At:     dur(500*time.Millisecond, s.Duration/2) + 53*time.Microsecond,
		Lead:   s.ProbeInterval + s.ProbeTimeout + 20*time.Millisecond,
		Down:   time.Duration(s.FailureThreshold+1)*s.ProbeInterval + s.ProbeTimeout + dur(0, time.Second),
		Rounds: s.FailbackSuccess + 3,
	}
	m.For = m.Lead + m.Down + time.Duration(m.Rounds)*s.ProbeInterval + s.ReconcileTimeout + 3*time.Second
	s.Moves = append(s.Moves, m)
}

// fixHanded is an armed MoveFIXHanded: the order it placed, the region
// whose FIX address it holds silent, and whether that address has healed.
type fixHanded struct {
	id, region string
	healed     bool
}

// runFIXHanded plays m (runMove has slept until m.At). It reports whether m
// was a MoveFIXHanded.
func (w *world) runFIXHanded(m Move) bool {
	if m.Kind != MoveFIXHanded {
		return false
	}
	f := w.fx
	if f == nil {
		return true
	}
	ep, _ := w.path.Active()
	region := ep.Region
	fixAddr := addr(region, simbroker.FIX)
	w.tracef(time.Now(), "move %s (active %s)", m, region)
	// The session's connection is reset; before the relay dials again the
	// address goes silent (its logons get no answer).
	w.netFault(fixAddr, faultnet.Down())
	time.Sleep(3 * time.Millisecond)
	w.netFault(fixAddr, faultnet.Blackhole())
	id := fmt.Sprintf("fh%d", m.At.Microseconds())
	f.mu.Lock()
	f.move = &fixHanded{id: id, region: region}
	f.mu.Unlock()
	time.Sleep(17 * time.Millisecond)
	placed := make(chan struct{})
	go func() {
		defer close(placed)
		f.placeWithin(id, false, m.For)
	}()
	time.Sleep(m.Lead)
	var uns []func()
	for _, r := range w.s.Regions {
		uns = append(uns, w.arm(r, spanProbe))
		w.netFault(addr(r, simbroker.Probe), faultnet.Blackhole())
	}
	w.tracef(time.Now(), "move %s: every probe blackholed", m.Kind)
	time.Sleep(m.Down)
	for i, r := range w.s.Regions {
		if r == region {
			w.netFault(addr(r, simbroker.Probe), faultnet.None())
			uns[i]()
		}
	}
	w.tracef(time.Now(), "move %s: the probe of %s heals", m.Kind, region)
	time.Sleep(time.Duration(m.Rounds)*w.s.ProbeInterval + time.Second)
	for i, r := range w.s.Regions {
		if r != region {
			w.netFault(addr(r, simbroker.Probe), faultnet.None())
			uns[i]()
		}
	}
	w.tracef(time.Now(), "move %s: every probe heals", m.Kind)
	<-placed
	f.healHanded("the order's call ended")
	return true
}

// healHanded heals the armed move's FIX address, once.
func (f *fixSim) healHanded(why string) {
	f.mu.Lock()
	mv := f.move
	if mv == nil || mv.healed {
		f.mu.Unlock()
		return
	}
	mv.healed = true
	f.mu.Unlock()
	f.w.netFault(addr(mv.region, simbroker.FIX), faultnet.None())
	f.w.tracef(time.Now(), "move %s: FIX of %s heals (%s)", MoveFIXHanded, mv.region, why)
}

// handedRec: a FIX order written by the client after a reconcile was handed
// it in flight.
type handedRec struct {
	handed, wrote time.Time
}

// noteHanded records, as the Reconcile hook is called, the FIX orders it
// was handed in flight (the Path handed them over before the call); when
// the armed move's order is among them, its session's address heals.
func (f *fixSim) noteHanded(r pathdialer.Reconciliation) {
	if f == nil {
		return
	}
	now := time.Now()
	heal := false
	f.mu.Lock()
	for _, t := range r.Tickets {
		if t.State != pathdialer.TicketInFlight || t.Service != pathdialer.ServiceFIX {
			continue
		}
		if h, ok := f.handed[t.OrderID]; !ok || h.Before(f.started[t.OrderID]) {
			f.handed[t.OrderID] = now
		}
		if f.move != nil && f.move.id == t.OrderID {
			heal = true
		}
	}
	f.mu.Unlock()
	if heal {
		f.healHanded(fmt.Sprintf("the reconcile %s->%s was handed its order in flight", r.From, r.To))
	}
}

// wrote records that the client's application handed order id to quickfix
// to be written (ToApp, the last step before quickfix writes it).
func (f *fixSim) wrote(id string) {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.handed[id]
	if ok && !h.Before(f.started[id]) && now.After(h) {
		if _, seen := f.lateWrites[id]; !seen {
			f.lateWrites[id] = handedRec{handed: h, wrote: now}
		}
	}
}

// checkHanded judges no-order-sent-after-handed (f.mu held): a FIX order
// the client wrote after a reconcile was handed it in flight must not be in
// the broker's record at or after that write.
func (f *fixSim) checkHanded(audit simbroker.AuditLog, viol func(inv, format string, a ...any)) {
	ids := make([]string, 0, len(f.lateWrites))
	for id := range f.lateWrites {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		lw := f.lateWrites[id]
		for _, r := range audit.Orders() {
			if r.ClientOrderID != id || r.Service != string(simbroker.FIX) || r.Time.Before(lw.wrote) {
				continue
			}
			viol(InvSentAfterHanded, "%s was handed to a reconcile in flight by %v (the Reconcile hook's call), written by the client at %v, and reached the broker through %s at %v (%s)",
				id, f.w.off(lw.handed), f.w.off(lw.wrote), r.Region, f.w.off(r.Time), r.Outcome)
			break
		}
	}
}
