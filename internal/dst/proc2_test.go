package dst

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// The takeover's invariants catch each planted violation in a hand-built
// broker record, and pass the record they were planted in.
func TestTakeoverCheckFindsViolations(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	truth := takeoverTruth{at: at(100), token: 7, pending: []string{"t0-5", "t1-5"},
		first:  func(id string) bool { return strings.HasPrefix(id, "t") },
		second: func(id string) bool { return strings.HasPrefix(id, proc2ID) }}
	lookup := func(ms int, id string) simbroker.Record {
		return simbroker.Record{Time: at(ms), Kind: simbroker.KindLookup, Region: "eu", ClientOrderID: id, Outcome: simbroker.OutcomeFailed}
	}
	order := func(ms int, id string, tok uint64, out simbroker.Outcome) simbroker.Record {
		return simbroker.Record{Time: at(ms), Kind: simbroker.KindOrder, Region: "eu", ClientOrderID: id, Token: tok, Outcome: out}
	}
	good := []simbroker.Record{
		order(50, "t0-4", 6, simbroker.OutcomeNew),           // before the takeover
		lookup(90, "t0-5"),                                   // before the takeover: does not count
		lookup(101, "t0-5"),                                  // the takeover's lookups
		lookup(102, "t1-5"),                                  //
		order(103, "t1-5", 6, simbroker.OutcomeNew),          // process 1's paused write lands before process 2's first order
		order(130, "p2-t0-1", 7, simbroker.OutcomeNew),       // process 2's first order
		order(131, "t0-5", 6, simbroker.OutcomeStaleToken),   // process 1's write after it: rejected
		order(140, "p2-t1-1", 7, simbroker.OutcomeNew),       //
		order(150, "t0-6", 6, simbroker.OutcomeMissingToken), // rejected
	}
	cases := []struct {
		name    string
		edit    func(l []simbroker.Record) []simbroker.Record
		checked bool
		want    string // the invariant broken ("" none)
		notes   int    // late landings after the takeover's lookups, and bookings on a lapsed lease
		lapsed  int    // bookings on a lapsed lease
	}{
		{"as recorded (t1-5, not found by its lookup, lands after it: a note)", nil, true, "", 1, 0},
		{"as recorded, tokens unchecked", nil, false, "", 1, 0},
		{"a lookup missing", func(l []simbroker.Record) []simbroker.Record { return del(l, 3) }, true, InvTakeoverReconciles, 0, 0},
		{"a lookup only before the takeover", func(l []simbroker.Record) []simbroker.Record { return del(l, 2) }, true, InvTakeoverReconciles, 1, 0},
		{"a lookup after process 2's first order", func(l []simbroker.Record) []simbroker.Record {
			return append(del(l, 3), lookup(135, "t1-5"))
		}, true, InvTakeoverReconciles, 0, 0},
		{"a listing of every order stands for the lookups", func(l []simbroker.Record) []simbroker.Record {
			l[2], l[3] = lookup(101, ""), order(102, "t9-9", 6, simbroker.OutcomeRejected)
			return l
		}, true, "", 0, 0},
		{"process 1 booked after process 2's first order, tokens checked", func(l []simbroker.Record) []simbroker.Record {
			l[6].Outcome = simbroker.OutcomeNew
			return l
		}, true, InvOneProcess, 2, 0},
		{"process 1's cut order after process 2's first order, tokens checked", func(l []simbroker.Record) []simbroker.Record {
			l[6].Outcome = simbroker.OutcomeCut
			return l
		}, true, InvOneProcess, 2, 0},
		{"process 1 booked after process 2's first order, tokens unchecked: a note", func(l []simbroker.Record) []simbroker.Record {
			l[6].Outcome = simbroker.OutcomeNew
			return l
		}, false, "", 3, 1},
		{"no order of process 2: nothing to judge", func(l []simbroker.Record) []simbroker.Record {
			l[6].Outcome = simbroker.OutcomeNew
			return []simbroker.Record{l[0], l[4], l[6]} // neither lookups nor process 2's orders
		}, true, "", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := append([]simbroker.Record(nil), good...)
			if tc.edit != nil {
				l = tc.edit(l)
			}
			for i := range l {
				l[i].Seq = uint64(i + 1)
			}
			var viols, notes []string
			lapsed := judgeTakeover(truth, simbroker.AuditLog(l), tc.checked, func(x time.Time) time.Duration { return x.Sub(t0) },
				func(inv, format string, a ...any) { viols = append(viols, inv+": "+fmt.Sprintf(format, a...)) },
				func(n string) { notes = append(notes, n) })
			switch {
			case tc.want == "" && len(viols) > 0:
				t.Errorf("violations on a record that keeps the invariants: %v", viols)
			case tc.want != "" && (len(viols) != 1 || !strings.HasPrefix(viols[0], tc.want+": ")):
				t.Errorf("violations %v, want one of %s", viols, tc.want)
			}
			if len(notes) != tc.notes || lapsed != tc.lapsed {
				t.Errorf("%d notes (%d lapsed bookings) %v, want %d (%d)", len(notes), lapsed, notes, tc.notes, tc.lapsed)
			}
		})
	}
}

func del(l []simbroker.Record, i int) []simbroker.Record {
	return append(append([]simbroker.Record(nil), l[:i]...), l[i+1:]...)
}

// The second process is exercised: it takes over, looks up the first
// process's open orders before its own flow is released, trades, and every
// invariant holds; a write of the first process paused across the lapse is
// rejected by a broker that checks tokens (seed 37) and booked, as a note,
// by one that does not (seed 91); the seed replays.
func TestSimProc2(t *testing.T) {
	for _, tc := range []struct {
		seed           uint64
		stale, lapsed  bool
		twice          bool
		tokensExpected simbroker.TokenPolicy
	}{
		{seed: 37, stale: true, tokensExpected: simbroker.TokensChecked},
		{seed: 91, lapsed: true, twice: true, tokensExpected: simbroker.TokensOff},
	} {
		res := runSeed(t, tc.seed, Options{})
		if !res.Scenario.Proc2 || res.Scenario.Tokens != tc.tokensExpected {
			t.Fatalf("seed %d: Proc2 %v, tokens %s: the scenario changed", tc.seed, res.Scenario.Proc2, res.Scenario.Tokens)
		}
		for _, v := range res.Violations {
			t.Errorf("seed %d: %s\nreplay: %s", tc.seed, v, replayCommand(tc.seed))
		}
		text := res.TraceText()
		for _, want := range []string{"coord: process 2 takes over", "p2 takeover: looked up", "p2 path release", "coord session 1 lost: halted, process 2 holds the lease"} {
			if !strings.Contains(text, want) {
				t.Errorf("seed %d: no %q in the trace", tc.seed, want)
			}
		}
		if !regexp.MustCompile(`p2 order p2-\S+ acked 201`).MatchString(text) {
			t.Errorf("seed %d: the second process had no order acknowledged", tc.seed)
		}
		if tc.stale && res.Stats.StaleRejected == 0 {
			t.Errorf("seed %d: no stale token rejected: %+v", tc.seed, res.Stats)
		}
		if tc.lapsed && (res.Stats.LapsedBookings == 0 || !strings.Contains(strings.Join(res.Notes, "\n"), "booked on a lapsed lease: process 1's")) {
			t.Errorf("seed %d: no booking on a lapsed lease noted: %+v %v", tc.seed, res.Stats, res.Notes)
		}
		if tc.twice {
			if again := runSeed(t, tc.seed, Options{}); again.TraceHash() != res.TraceHash() {
				t.Errorf("seed %d: two runs gave different traces (%x, %x)", tc.seed, res.TraceHash(), again.TraceHash())
			}
		}
	}
}

// one-process-at-a-time has teeth in the simulation: against a broker that
// claims to check fencing tokens and does not, the first process's write
// paused across the lapse is booked after the second process's first order
// (seed 37, which passes against the real broker in TestSimProc2).
func TestSimProc2BrokerIgnoringTokens(t *testing.T) {
	res := runSeed(t, 37, Options{BrokerIgnoresTokens: true})
	if v := hasViolation(res, InvOneProcess); v == "" {
		t.Fatalf("seed 37 against a broker ignoring tokens: %s not broken; violations %v", InvOneProcess, res.Violations)
	} else {
		t.Log(v)
	}
}
