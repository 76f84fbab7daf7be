package dst

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// MoveReleaseRace (seeds of a Path deciding by itself, with the liveness
// moves; builds with -tags dstyield): a release that races with live traffic
// taking its endpoint DOWN. The first switch's reconcile that succeeds after
// At returns while the controller is descheduled for For (a loaded host: it
// is stopped at its loop's yield point before it takes the result); in that
// time the switch's target region goes down for Down (its REST, probe and
// WebSocket addresses refuse), FailureThreshold application reads through it
// fail at once (live traffic: DOWN on their evidence, the gate already held)
// and an order is placed (it waits at the held gate). The controller then
// takes the reconcile's result before the evaluation the reads asked for: its
// release must not open the gate on the DOWN endpoint
// (no-ticket-after-down). Then the controller yields once, as a preempted one
// would, so that the orders waiting at the gate run before its next step.
const MoveReleaseRace MoveKind = "release-race"

// addReleaseRace adds a MoveReleaseRace to one in two seeds of a Path
// deciding by itself whose other moves are outages, late probes, stalls and
// failing lookups or arms only (no gray failure, identity flip, hanging
// settle, halt with unknown orders or order burst, whose own checks a region
// dying at a switch would disturb), drawn from a source of its own (every
// other move and field is as it was drawn).
func addReleaseRace(s *Scenario, seed uint64) {
	if s.Coordinated {
		return
	}
	for _, m := range s.Moves {
		switch m.Kind {
		case MoveProbeLate, MoveStartCut, MoveStreamDial, MoveStall, MoveLookup5xx, MoveArmFail:
		default:
			return
		}
	}
	r := rand.New(rand.NewPCG(seed, seed^0x7e1ea5e07e1ea5e0))
	if r.IntN(2) != 0 {
		return
	}
	dur := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	s.Moves = append(s.Moves, Move{
		Kind:   MoveReleaseRace,
		Region: "target",
		At:     dur(500*time.Millisecond, s.Duration/2) + 31*time.Microsecond,
		For:    dur(5*time.Millisecond, 20*time.Millisecond),
		Down:   dur(200*time.Millisecond, 800*time.Millisecond),
	})
}

// releaseRace is a MoveReleaseRace: armed, waiting for a switch's
// reconcile, then played.
type releaseRace struct {
	m Move
	// played: the reads took endpoint DOWN at down (the last read's
	// failure); its region stays down until heal.
	played     bool
	endpoint   string
	down, heal time.Time
}

// runReleaseRace arms m (runMove has slept until m.At); the next switch's
// reconcile that succeeds plays it (raceRelease). It reports whether m was a
// MoveReleaseRace.
func (w *world) runReleaseRace(m Move) bool {
	if m.Kind != MoveReleaseRace {
		return false
	}
	if !YieldPoints {
		w.tracef(time.Now(), "move %s: no yield points in this build: not played", m)
		return true
	}
	w.tracef(time.Now(), "move %s: armed", m)
	w.mu.Lock()
	w.race = &releaseRace{m: m}
	w.mu.Unlock()
	return true
}

// raceRelease plays an armed MoveReleaseRace at the end of a switch's
// reconcile that succeeded (deferred by reconcile).
func (w *world) raceRelease(ctx context.Context, r pathdialer.Reconciliation, err *error) {
	if *err != nil || r.From == r.To {
		return
	}
	to, ok := w.path.Endpoint(r.To)
	if !ok {
		return
	}
	w.mu.Lock()
	rr := w.race
	if rr != nil && rr.played {
		rr = nil
	}
	w.mu.Unlock()
	if rr == nil {
		return
	}
	m := rr.m
	asleep, cancel := w.descheduleController(m.For)
	select {
	case <-asleep:
	case <-ctx.Done():
		cancel()
		return
	}
	w.tracef(time.Now(), "move %s: the controller is descheduled for %v; %s dies as the reconcile %s->%s returns", m.Kind, m.For, to.Region, r.From, r.To)
	un := w.arm(to.Region, spanNet)
	svcs := []simbroker.Service{simbroker.REST, simbroker.Probe, simbroker.WS}
	for _, svc := range svcs {
		f := faultnet.Down()
		if svc == simbroker.Probe {
			// The probe gets no answer (its failure comes at ProbeTimeout):
			// the reads' failures, at once, are the evidence.
			f = faultnet.Blackhole()
		}
		w.netFault(addr(to.Region, svc), f)
	}
	heal := time.Now().Add(m.Down)
	go func() {
		time.Sleep(m.Down)
		for _, svc := range svcs {
			w.netFault(addr(to.Region, svc), faultnet.None())
		}
		un()
		w.tracef(time.Now(), "move %s: heal %s", m.Kind, to.Region)
	}()
	// Application reads through the Path (never held): all at once, so that
	// their failures, not a probe's, take the endpoint DOWN.
	w.failReads("rr", m.At)
	if st, ok := w.path.Engine().Status(r.To); ok && st.State == engine.Down {
		w.mu.Lock()
		rr.played, rr.endpoint, rr.down, rr.heal = true, r.To, time.Now(), heal
		w.mu.Unlock()
		w.tracef(time.Now(), "move %s: %s DOWN on the reads' evidence, the reconcile's result not yet taken", m.Kind, r.To)
	} else {
		w.tracef(time.Now(), "move %s: %s not DOWN after the reads (%v)", m.Kind, r.To, st.State)
	}
	// An order arrives during the hold: it waits at the gate.
	go w.place(fmt.Sprintf("rr%d", m.At.Microseconds()), false)
}

// checkReleaseRace: no order is granted on the endpoint the reads of a
// played MoveReleaseRace took DOWN, from slack after they did (one
// ProbeInterval when a probe's failure took it DOWN first, as for
// no-ticket-after-down) until the controller next holds, halts or switches
// (what it does once it took the reconcile's result and the evaluation the
// reads asked for), or the endpoint leaves DOWN, or its region heals,
// whichever comes first. Called from checkComposed, under w.mu.
func (w *world) checkReleaseRace(viol func(inv, format string, a ...any)) {
	rr := w.race
	if rr == nil || !rr.played {
		return
	}
	var down *stateRec
	until := rr.heal
	for i := range w.cx.states {
		if s := &w.cx.states[i]; s.endpoint == rr.endpoint && !s.at.After(rr.down) && s.state == engine.Down && s.prev != engine.Down {
			down = s
		}
	}
	if down == nil {
		return
	}
	for _, s := range w.cx.states {
		if s.endpoint == rr.endpoint && s.seq > down.seq && s.state != engine.Down {
			if s.at.Before(until) {
				until = s.at
			}
			break
		}
	}
	// The release it races with, and what the controller does next (a
	// hold, halt or switch): judged until then.
	for _, g := range w.cx.gates {
		if g.seq > down.seq && g.kind != pathdialer.EventRelease {
			if g.at.Before(until) {
				until = g.at
			}
			break
		}
	}
	lim := down.at.Add(slack)
	if down.probe {
		lim = down.at.Add(w.s.ProbeInterval)
	}
	n, first := 0, time.Time{}
	for _, g := range w.cx.grants {
		if g.endpoint == rr.endpoint && g.at.After(lim) && !g.at.After(until) {
			if n == 0 {
				first = g.at
			}
			n++
		}
	}
	if n > 0 {
		viol(InvGrantAfterDown, "%d order(s) granted on %s after it went DOWN at %v (%s evidence) as a switch's reconcile to it returned (%s), the first at %v",
			n, rr.endpoint, w.off(down.at), evidence(down.probe), MoveReleaseRace, w.off(first))
	}
}

// failReads sends FailureThreshold application reads through the Path (never
// held) all at once, each named tag-read-<at µs>-<i>, and waits for them:
// when the active endpoint's REST address is silent, their failures, not a
// probe's, take it DOWN.
func (w *world) failReads(tag string, at time.Duration) {
	var wg sync.WaitGroup
	for i := range w.s.FailureThreshold {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(rctx, http.MethodGet, fmt.Sprintf("http://broker.invalid/v1/orders/%s-read-%d-%d", tag, at.Microseconds(), i), nil)
			req.Header.Set("X-API-Key", apiKey)
			req.Close = true
			if resp, err := w.hc.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}()
	}
	wg.Wait()
}
