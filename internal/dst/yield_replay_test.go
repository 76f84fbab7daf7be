//go:build dstyield && !race

package dst

import (
	"runtime"
	"testing"
)

// With the yield points on, a seed's trace does not depend on what the
// process ran before it. Each runtime.Gosched here moves the processor's
// count of scheduling rounds on by one, as any earlier seed does; a yield
// that went through the global run queue was taken from it on every 61st
// round, so where a yielded goroutine ran again followed that count. Each
// seed runs after shifts spread over the 61 phases and must give one trace.
func TestSimYieldDeterministic(t *testing.T) {
	for _, seed := range []uint64{5, 8, 19} {
		var first *Result
		for shift := 0; shift < 61; shift += 5 {
			for range shift {
				runtime.Gosched()
			}
			res := runSeed(t, seed, Options{})
			if res.Stats.Yields == 0 {
				t.Fatalf("seed %d took no yield: %+v", seed, res.Stats)
			}
			if first == nil {
				first = res
				continue
			}
			if d := traceDiff(first, res); d != "" {
				t.Errorf("seed %d, run after %d more scheduling rounds: a different trace: %s\nreplay: %s -sim.twice", seed, shift, d, replayCommand(seed))
				break
			}
		}
	}
}
