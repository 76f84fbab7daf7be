//go:build dstfix

package dst

import (
	"testing"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// fixSeeds are the first n FIX seeds.
func fixSeeds(n int) []uint64 {
	var out []uint64
	for seed := uint64(1); len(out) < n; seed++ {
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
	_ = simbroker.FIX
}
