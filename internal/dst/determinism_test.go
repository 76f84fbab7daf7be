//go:build !race

package dst

import (
	"testing"
	"testing/synctest"
)

// The determinism tests run without the race detector only. Under -race the
// Go scheduler deliberately randomizes which of the goroutines made ready at
// one instant runs first, and the runtime hands work between goroutines at
// one virtual instant (a background reconcile's or fence's result and the
// traders' orders), so two runs of a seed can interleave differently there.
// The sweeps still run under -race in make test (for data races); make test
// also runs these tests without it (the "determinism" step of the Makefile),
// and make sim's sweeps (built without -race) replay every seed.

// TestSimDeterministic runs twenty seeds twice each and requires
// byte-identical traces for every one (the package documentation says what
// keeps them identical, and under which conditions).
func TestSimDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		a := runSeed(t, seed, Options{})
		b := runSeed(t, seed, Options{})
		if a.Stats.Orders == 0 || a.Stats.Probes == 0 || a.Stats.Ticks == 0 {
			t.Fatalf("seed %d ran nothing: %+v", seed, a.Stats)
		}
		if d := traceDiff(a, b); d != "" {
			cmd := replayCommand(seed)
			if !*flagTwice {
				cmd += " -sim.twice"
			}
			t.Errorf("seed %d: two runs gave different traces: %s\nreplay: %s", seed, d, cmd)
		}
	}
}

// The composed moves replay too: ten composed seeds, run twice each, give
// byte-identical traces, and every kind of move is drawn among the first
// hundred seeds. (Whether their invariants hold is TestSimSeeds's business
// under -sim.composed.)
func TestSimComposedDeterministic(t *testing.T) {
	kinds := map[MoveKind]bool{}
	for seed := uint64(1); seed <= 100; seed++ {
		for _, m := range NewComposedScenario(seed).Moves {
			kinds[m.Kind] = true
		}
	}
	for _, k := range moveKinds {
		if !kinds[k] {
			t.Errorf("no seed of the first 100 draws a %s move", k)
		}
	}
	for seed := uint64(1); seed <= 10; seed++ {
		s := NewComposedScenario(seed)
		run := func() *Result {
			var res *Result
			synctest.Test(t, func(t *testing.T) {
				var err error
				if res, err = Run(s, Options{}); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			})
			return res
		}
		a, b := run(), run()
		if a.Stats.Orders == 0 || a.Stats.Probes == 0 {
			t.Fatalf("seed %d ran nothing: %+v", seed, a.Stats)
		}
		if d := traceDiff(a, b); d != "" {
			t.Errorf("composed seed %d: two runs gave different traces: %s\nreplay: go test ./internal/dst -run 'TestSimSeeds$' -count=1 -v -args -sim.seed=%d -sim.composed -sim.twice", seed, d, seed)
		}
	}
}

// Coordinated seeds with pauses replay: run twice, the traces are the same
// for every one of them (the coordinator's timers and the resumed goroutines
// are kept apart in virtual time; see the package documentation's
// "Determinism"). Every difference is logged.
func TestSimPauseDeterministic(t *testing.T) {
	var seeds []uint64
	for seed := uint64(1); len(seeds) < 10; seed++ {
		if s := NewScenario(seed); s.Coordinated && len(s.Pauses) > 0 {
			seeds = append(seeds, seed)
		}
	}
	same := 0
	for _, seed := range seeds {
		a := runSeed(t, seed, Options{})
		b := runSeed(t, seed, Options{})
		if a.Stats.Pauses == 0 {
			t.Fatalf("seed %d: no pause ran: %+v", seed, a.Stats)
		}
		if a.TraceText() == b.TraceText() {
			same++
			continue
		}
		for i := 0; i < len(a.Trace) || i < len(b.Trace); i++ {
			if i >= len(a.Trace) || i >= len(b.Trace) || a.Trace[i] != b.Trace[i] {
				var x, y string
				if i < len(a.Trace) {
					x = a.Trace[i]
				}
				if i < len(b.Trace) {
					y = b.Trace[i]
				}
				t.Logf("seed %d: traces differ first at line %d:\n  %s\n  %s", seed, i, x, y)
				break
			}
		}
	}
	t.Logf("byte-identical traces for %d of %d coordinated seeds with pauses (%v)", same, len(seeds), seeds)
	if same < len(seeds) {
		t.Fatalf("only %d of %d coordinated seeds gave byte-identical traces twice", same, len(seeds))
	}
}

// TLS and pooled HTTP/2 replay too: the first five H2 seeds, run twice each,
// give byte-identical traces (TLS bytes are random; their chunks draw their
// delays by connection).
func TestSimH2Deterministic(t *testing.T) {
	for _, seed := range h2Seeds(5) {
		a := runSeed(t, seed, Options{})
		b := runSeed(t, seed, Options{})
		if a.Stats.H2Conns == 0 {
			t.Fatalf("seed %d: no TLS connection: %+v", seed, a.Stats)
		}
		if d := traceDiff(a, b); d != "" {
			t.Errorf("seed %d: two runs gave different traces: %s\nreplay: %s -sim.twice", seed, d, replayCommand(seed))
		}
	}
}
