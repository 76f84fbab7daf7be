package dst

import (
	"strconv"
	"testing"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// TestDrawLateRest: the move is drawn in flatten-mode resting seeds whose
// broker does not fence only, in
// about half of them, with a hold the network can keep a copy for.
func TestDrawLateRest(t *testing.T) {
	var flatten, on int
	var seeds []string
	for seed := uint64(1); seed <= 400; seed++ {
		s := NewScenario(seed)
		if s.Resting.On && !s.Resting.Preserve && s.Fence == simbroker.FenceNone && !s.Coordinated {
			flatten++
		}
		if !s.LateRest.On {
			continue
		}
		on++
		if len(seeds) < 12 {
			seeds = append(seeds, strconv.FormatUint(seed, 10))
		}
		if !s.Resting.On || s.Resting.Preserve || s.Fence != simbroker.FenceNone || s.Coordinated {
			t.Fatalf("seed %d: late resting landing outside a flatten-mode resting seed with no broker fence, deciding by itself", seed)
		}
		l := s.LateRest
		if l.Hold <= 0 || l.Hold > 5e9 || l.Down <= 0 || l.GiveUp <= l.At+l.Hold {
			t.Errorf("seed %d: %+v: hold must be within the network's 5 s, and the give-up after the heal", seed, l)
		}
	}
	if on < flatten/4 || on > flatten*3/4 {
		t.Errorf("late resting landing in %d of %d flatten-mode resting seeds with no broker fence: want about half", on, flatten)
	}
	t.Logf("%d of %d flatten-mode resting seeds: %v", on, flatten, seeds)
}
