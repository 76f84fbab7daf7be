package dst

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// leftoverCutScenario: a plain two-region run in which a lookup-5xx move
// arms the broker to cut the next 3 orders through the primary, and the
// primary's region dies 203 ms later, after one order reached it: two cuts
// are left when the move ends with the region's heal, and flow fails back
// to the primary seconds later.
func leftoverCutScenario(seed uint64) Scenario {
	s := NewScenario(seed)
	s.Coordinated, s.Pauses, s.FollowerLast, s.Proc2 = false, nil, false, false
	s.H2, s.FIX, s.Identity, s.LibToken = false, false, false, false
	s.Resting, s.LongRecon, s.LateRest, s.LimitEvery = RestingSim{}, LongRecon{}, LateRest{}, 1<<30
	s.Faults = nil
	s.Traders, s.OrderEvery = 1, 200*time.Millisecond
	s.ProbeInterval, s.ProbeTimeout = 400*time.Millisecond, 200*time.Millisecond
	s.FailureThreshold, s.FailbackSuccess = 2, 2
	s.MaxHealthAge = 4 * s.ProbeInterval
	s.Cooldown = time.Second
	s.OrderTimeout = time.Second
	s.Duration, s.Quiet = 12*time.Second, 3*time.Second
	s.Moves = []Move{{Kind: MoveLookup5xx, Region: "active", At: 2*time.Second + 41*time.Microsecond, Lead: 0, N: 3, For: 2 * time.Second, Down: 3 * time.Second}}
	return s
}

// A lookup-5xx move's unknown-outcome fault ends with the move: orders
// through the primary after it healed and flow failed back are booked and
// answered, none is cut by the cuts the move left unused.
func TestMoveUnknownFaultEndsWithTheMove(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		s := leftoverCutScenario(seed)
		p := s.Regions[0]
		heal := time.Duration(-1)
		checkNoCutAfter(t, seed, s, func(at time.Duration, text string) bool {
			if heal < 0 && strings.HasPrefix(text, "move lookup-5xx: heal "+p) {
				heal = at
			}
			return heal >= 0
		})
	}
}

// A settle-hang move's unknown-outcome fault ends with the move too: its
// region goes down 203 ms after the fault is set, before three orders
// reached it, and flow fails back once it healed; no order through it after
// the move (its hang and its outage both over) is cut.
func TestSettleHangFaultEndsWithTheMove(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		s := leftoverCutScenario(seed)
		m := Move{Kind: MoveSettleHang, Region: s.Regions[0], At: 2*time.Second + 41*time.Microsecond, Lead: 203 * time.Millisecond, N: 3, For: 2 * time.Second, Down: 3 * time.Second}
		s.Moves = []Move{m}
		end := m.At + max(m.For, m.Lead+m.Down)
		checkNoCutAfter(t, seed, s, func(at time.Duration, _ string) bool { return at >= end })
	}
}

// checkNoCutAfter runs s (one move of 3 cuts on its primary) and fails t
// when an order through the primary is cut once ended says the move is
// over (ended sees every trace line in order), when the run did not leave
// cuts at the move's end and book orders through the primary after it (it
// exercised nothing), or when Stats.LateMoveCuts disagrees with the trace.
func checkNoCutAfter(t *testing.T, seed uint64, s Scenario, ended func(at time.Duration, text string) bool) {
	t.Helper()
	p := s.Regions[0]
	var res *Result
	synctest.Test(t, func(t *testing.T) {
		var err error
		if res, err = Run(s, Options{}); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	})
	for _, v := range res.Violations {
		t.Errorf("seed %d: %s", seed, v)
	}
	var cutBefore, cutAfter, bookedAfter int
	var endAt time.Duration
	over := false
	traceFrom(res, 0, func(at time.Duration, text string) bool {
		if !over && ended(at, text) {
			over, endAt = true, at
		}
		if !strings.HasPrefix(text, "broker ") || !strings.Contains(text, " via "+p) {
			return true
		}
		cut := strings.Contains(text, " cut via ")
		switch {
		case !over && cut:
			cutBefore++
		case cut:
			cutAfter++
			t.Errorf("seed %d: %s at %v: cut after the move ended (at %v)", seed, text, at, endAt)
		case over && strings.Contains(text, " new via "):
			bookedAfter++
		}
		return true
	})
	if !over || cutBefore == 0 || cutBefore >= 3 || bookedAfter == 0 {
		t.Errorf("seed %d: the move ended (%v) at %v after %d of its 3 cuts, %d orders booked through %s after: want an end with cuts left and orders after it",
			seed, over, endAt, cutBefore, bookedAfter, p)
	}
	if res.Stats.LateMoveCuts != cutAfter {
		t.Errorf("seed %d: Stats.LateMoveCuts %d, the trace shows %d", seed, res.Stats.LateMoveCuts, cutAfter)
	}
	t.Logf("seed %d: %d cut before the move ended at %v, %d after, %d booked through %s after; stats %d late, %d disarmed",
		seed, cutBefore, endAt, cutAfter, bookedAfter, p, res.Stats.LateMoveCuts, res.Stats.DisarmedCuts)
}

// A move's unknown-outcome span that its end disarmed (span.cleared) is
// armed to its N-th cut or to that end, whichever comes first, and a cut
// after that end does not extend it.
func TestMoveUnknownSpanEndsWhereItsMoveDisarmedIt(t *testing.T) {
	w := &world{}
	w.armN("eu", spanUnknown, 3)
	w.armN("us", spanUnknown, 1)
	from := w.cx.spans[0].from
	end := from.Add(4 * time.Second)
	w.cx.spans[0].cleared = end
	w.cx.spans[1].cleared = end
	rec := func(at time.Time, region string) simbroker.Record {
		return simbroker.Record{Time: at, Kind: simbroker.KindOrder, Region: region, Service: string(simbroker.REST), Outcome: simbroker.OutcomeCut}
	}
	audit := []simbroker.Record{
		rec(from.Add(time.Second), "eu"),
		rec(from.Add(2*time.Second), "us"),
		rec(from.Add(5*time.Second), "eu"), // after the move's end: not its cut
		rec(from.Add(6*time.Second), "eu"),
	}
	armedUntilCut(w.cx.spans, audit)
	if got := w.cx.spans[0].to; !got.Equal(end) {
		t.Errorf("eu's span (1 of 3 cuts before its move ended at +4s) ends at +%v; want +4s", got.Sub(from))
	}
	if got, want := w.cx.spans[1].to, from.Add(2*time.Second+time.Millisecond); !got.Equal(want) {
		t.Errorf("us's span (its one cut at +2s) ends at +%v; want +%v", got.Sub(from), want.Sub(from))
	}
}
