//go:build dstfix

package dst

import (
	"flag"
	"fmt"
	"testing"
)

var (
	flagFIXSeeds = flag.Int("sim.fixseeds", 3, "TestSimFIXDeterministic: how many FIX seeds (the first ones from -sim.start) to run twice")
)

// fixSeeds are the first n FIX seeds.
func fixSeeds(n int) []uint64 {
	var out []uint64
	for seed := *flagStart; len(out) < n; seed++ {
		if scenarioOf(seed).FIX {
			out = append(out, seed)
		}
	}
	return out
}

// TestSimFIX runs FIX seeds: the FIX trader's orders are booked through the
// broker's quickfix acceptor, in the region of their ticket, and every
// invariant holds.
func TestSimFIX(t *testing.T) {
	var fixBooked, orders int
	for _, seed := range fixSeeds(4) {
		res := runSeed(t, seed, Options{})
		for _, v := range res.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		n := res.Stats.FIXBooked
		fixBooked += n
		orders += res.Stats.Orders
		t.Logf("seed %d: %d orders, %d acked, %d booked through FIX, %d unknown, %d switches", seed, res.Stats.Orders, res.Stats.Acked, n, res.Stats.Unknown, res.Stats.Switches)
	}
	if fixBooked == 0 {
		t.Errorf("no order booked through FIX in 4 FIX seeds")
	}
}

// About one seed in ten is a FIX seed.
func TestFIXSeedShare(t *testing.T) {
	n := 0
	for seed := uint64(1); seed <= 1000; seed++ {
		if NewScenario(seed).FIX {
			n++
		}
	}
	t.Logf("%d FIX seeds of 1000", n)
	if n < 50 || n > 250 {
		t.Errorf("%d FIX seeds of 1000, want about one in ten", n)
	}
}

// FIX seeds replay: each of the first -sim.fixseeds FIX seeds, run twice,
// gives byte-identical traces.
func TestSimFIXDeterministic(t *testing.T) {
	for _, seed := range fixSeeds(*flagFIXSeeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			if *flagFIXSeeds > 3 {
				t.Parallel()
			}
			a := runSeed(t, seed, Options{})
			b := runSeed(t, seed, Options{})
			if a.Stats.FIXBooked == 0 && a.Stats.Acked > 0 {
				t.Logf("seed %d: nothing booked through FIX", seed)
			}
			if d := traceDiff(a, b); d != "" {
				t.Errorf("seed %d: two runs gave different traces: %s\nreplay: %s", seed, d, replayCommand(seed)+" -sim.twice")
			}
		})
	}
}
