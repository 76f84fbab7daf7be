package integration_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/integration/chaos/plan"
)

var chaosOpts = plan.Options{Regions: []string{"eu", "us", "ap"}, Faults: 50, Span: 140 * time.Second, Warmup: 3 * time.Second}

// The chaos schedule is a pure function of the seed: two generations from
// one seed are identical (and print the same digest); different seeds differ.
func TestChaosScheduleDeterministic(t *testing.T) {
	a, b := plan.Generate(42, chaosOpts), plan.Generate(42, chaosOpts)
	if !reflect.DeepEqual(a, b) || a.Digest() != b.Digest() {
		t.Fatalf("same seed, different schedules:\n%s\n%s", a, b)
	}
	if len(a.Faults) != chaosOpts.Faults {
		t.Fatalf("%d faults, want %d", len(a.Faults), chaosOpts.Faults)
	}
	seen := map[string]uint64{a.Digest(): 42}
	for seed := uint64(1); seed <= 20; seed++ {
		d := plan.Generate(seed, chaosOpts).Digest()
		if prev, ok := seen[d]; ok && prev != seed {
			t.Fatalf("seeds %d and %d give the same schedule %s", prev, seed, d)
		}
		seen[d] = seed
	}
}

// Every schedule keeps a region clean outside its all-down windows, has a few
// all-down windows, and starts faults in order.
func TestChaosScheduleShape(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		s := plan.Generate(seed, chaosOpts)
		all := 0
		for i, f := range s.Faults {
			if i > 0 && f.At < s.Faults[i-1].At {
				t.Fatalf("seed %d: fault %d starts before %d", seed, f.Index, s.Faults[i-1].Index)
			}
			if f.Kind == plan.AllDown {
				all++
			}
			// Regions faulted at f.At (including f).
			faulted := map[string]bool{}
			for _, g := range s.Faults {
				if g.At <= f.At && f.At < g.At+g.For {
					for _, r := range g.Regions {
						faulted[r] = true
					}
					if g.Kind == plan.AllDown && g.Index != f.Index {
						t.Fatalf("seed %d: fault %d overlaps all-down window %d", seed, f.Index, g.Index)
					}
				}
			}
			if f.Kind != plan.AllDown && len(faulted) >= len(chaosOpts.Regions) {
				t.Fatalf("seed %d: at fault %d every region is faulted outside an all-down window", seed, f.Index)
			}
		}
		if all < 2 {
			t.Fatalf("seed %d: %d all-down windows, want at least 2", seed, all)
		}
	}
}
