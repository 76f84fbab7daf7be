package dst

import (
	"strings"
	"testing"
	"testing/synctest"
)

// TestSimLongReconSettlesFromTheOldReport runs a plain seed with the long
// FIX-like reconcile in which a switch's reconcile waits for the logon
// longer than CODSettle and settles an in-flight limit order RESTING from
// the old connection's report, sent before the fence whose
// cancel-on-disconnect then took it: the order is reported cancelled
// (resting-cancel-reported, final-verdict-matches-book hold).
func TestSimLongReconSettlesFromTheOldReport(t *testing.T) {
	const seed = 26
	s := NewScenario(seed)
	if !s.LongRecon.On || s.LongRecon.Wait <= s.Resting.CODSettle {
		t.Fatalf("seed %d: long reconcile %v, CODSettle %v: want a wait longer than CODSettle", seed, s.LongRecon, s.Resting.CODSettle)
	}
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
	if res.Stats.OldReports == 0 {
		t.Errorf("seed %d: no order settled from the old connection's report; notes %v", seed, res.Notes)
	}
	reported := false
	for _, l := range res.Trace {
		reported = reported || strings.Contains(l, "resting-cancelled")
	}
	if !reported {
		t.Errorf("seed %d: no resting order reported cancelled", seed)
	}
}

// TestDrawLongRecon: the move is drawn in resting seeds only, in about
// half of them, with a wait of 1.5–4 × CODSettle.
func TestDrawLongRecon(t *testing.T) {
	var resting, on int
	for seed := uint64(1); seed <= 400; seed++ {
		s := NewScenario(seed)
		if s.Resting.On {
			resting++
		}
		if !s.LongRecon.On {
			continue
		}
		on++
		if !s.Resting.On {
			t.Fatalf("seed %d: long reconcile without resting orders", seed)
		}
		if lo, hi := s.Resting.CODSettle*3/2, s.Resting.CODSettle*4; s.LongRecon.Wait < lo || s.LongRecon.Wait > hi {
			t.Errorf("seed %d: wait %v outside [%v, %v]", seed, s.LongRecon.Wait, lo, hi)
		}
	}
	if on < resting/4 || on > resting*3/4 {
		t.Errorf("long reconcile in %d of %d resting seeds: want about half", on, resting)
	}
}
