package dst

import (
	"strings"
	"testing"
)

// A switch away from the endpoint flow was last released on, abandoned
// before a release (the target's identity could not be re-proved), and a
// switch back to it: flow must not return to it on the strength of its old
// release, because it may front another account by now. Seeds 505 and 821
// (composed) flip the identity of "us" while flow is on it, switch to "eu",
// halt there, and switch back; before the fix the gate opened on "us"
// without a check and granted an order there.
func TestSimReturnToLastReleasedReprovesIdentity(t *testing.T) {
	for _, seed := range []uint64{505, 821} {
		res := runSeed(t, seed, Options{})
		for _, v := range res.Violations {
			if strings.Contains(v, InvIdentityAtSwitch) {
				t.Errorf("seed %d: %s", seed, v)
			}
		}
		if res.Stats.Switches < 2 {
			t.Errorf("seed %d: %d switches: the scenario no longer switches away and back", seed, res.Stats.Switches)
		}
	}
}
