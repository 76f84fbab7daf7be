package main

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "serve" { // the child this test binary starts
		serve()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// One short round of two cells, so the measurement does not rot: the child
// starts, both transports reach it, and the table is built.
func TestOneShortRound(t *testing.T) {
	if err := run(1, 50*time.Millisecond, "GET read, 1 "); err != nil {
		t.Fatal(err)
	}
}

func TestRunRefusesAnUnknownCell(t *testing.T) {
	err := run(1, time.Millisecond, "h3 PATCH")
	if err == nil || !strings.Contains(err.Error(), `no cell matches -cell "h3 PATCH"`) {
		t.Fatalf("run with an unknown cell = %v, want an error naming it", err)
	}
}

// Over any k consecutive rounds of k transports (three: A, P, B; five with
// the peers), each transport takes each of the 2k places once, and every
// round reads the same backwards (drift that is linear within a round falls
// on all transports alike).
func TestRoundOrderIsBalanced(t *testing.T) {
	for _, k := range []int{3, 5} {
		for start := range 2 * k {
			seen := make([][]int, k)
			for tr := range seen {
				seen[tr] = make([]int, 2*k)
			}
			for i := start; i < start+k; i++ {
				o := roundOrder(i, k)
				if len(o) != 2*k {
					t.Fatalf("round %d of %d transports has %d phases, want %d", i, k, len(o), 2*k)
				}
				for p := range 2 * k {
					if o[p] != o[2*k-1-p] {
						t.Fatalf("round %d = %v is not a palindrome", i, o)
					}
					seen[o[p]][p]++
				}
			}
			for tr, places := range seen {
				for p, n := range places {
					if n != 1 {
						t.Fatalf("k=%d, rounds %d–%d: transport %d is at place %d %d times, want once", k, start, start+k-1, tr, p, n)
					}
				}
			}
		}
	}
	if got := roundOrder(1, 3); !slices.Equal(got, []int{1, 2, 0, 0, 2, 1}) {
		t.Fatalf("roundOrder(1, 3) = %v, want the rounds of before the peers: [1 2 0 0 2 1]", got)
	}
}

func TestSummarize(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noisy := func(n int, centre, sd float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = centre * math.Exp(rng.NormFloat64()*sd)
		}
		return xs
	}
	t.Run("constant", func(t *testing.T) {
		s := summarize([]float64{1.02, 1.02, 1.02, 1.02, 1.02, 1.02})
		if math.Abs(s.tm-1.02) > 1e-9 || math.Abs(s.lo-1.02) > 1e-9 || math.Abs(s.hi-1.02) > 1e-9 || math.Abs(s.med-1.02) > 1e-9 {
			t.Fatalf("summary of a constant = %+v, want 1.02 everywhere", s)
		}
	})
	t.Run("load spikes are trimmed", func(t *testing.T) {
		xs := noisy(200, 0.99, 0.08)
		for i := range 20 { // 10 % of the rounds hit by spikes, on either side
			xs[i] = []float64{0.3, 3}[i%2]
		}
		s := summarize(xs)
		if s.lo > 0.99 || s.hi < 0.99 {
			t.Fatalf("interval [%.3f, %.3f] misses the centre 0.99 (%+v)", s.lo, s.hi, s)
		}
		if s.hi-s.lo > 0.04 {
			t.Fatalf("interval [%.3f, %.3f] is wider than 0.04 for 200 rounds of sd 0.08: the spikes were not trimmed", s.lo, s.hi)
		}
		if s.verdict(0.97) != "≥ 0.97" {
			t.Fatalf("verdict = %q, want the goal shown (interval [%.3f, %.3f])", s.verdict(0.97), s.lo, s.hi)
		}
	})
	t.Run("a gap below the goal is found", func(t *testing.T) {
		s := summarize(noisy(200, 0.94, 0.08))
		if got := s.verdict(0.97); got != "✗ < 0.97" {
			t.Fatalf("verdict = %q for rounds centred on 0.94 (interval [%.3f, %.3f]), want a miss", got, s.lo, s.hi)
		}
	})
	t.Run("too few rounds resolve nothing", func(t *testing.T) {
		s := summarize(noisy(8, 0.99, 0.08))
		if got := s.verdict(0.97); got != "not resolved" {
			t.Fatalf("verdict = %q for 8 noisy rounds (interval [%.3f, %.3f]), want not resolved", got, s.lo, s.hi)
		}
	})
	t.Run("the interval covers the centre about 95 % of the time", func(t *testing.T) {
		covered := 0
		const trials = 400
		for range trials {
			if s := summarize(noisy(60, 1, 0.1)); s.lo <= 1 && 1 <= s.hi {
				covered++
			}
		}
		if covered < trials*90/100 || covered > trials*99/100 {
			t.Fatalf("the 95 %% interval covered the centre in %d of %d trials", covered, trials)
		}
	})
}
