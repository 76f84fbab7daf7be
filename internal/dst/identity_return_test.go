package dst

import (
	"strings"
	"testing"
)

// A switch away from the endpoint flow was last released on, abandoned
// before a release (the target's identity could not be re-proved), and a
// switch back to it: flow must not return to it on the strength of its old
// release, because it may front another account by now. Seed 505
// (composed) flips the identity of "us" while flow is on it, switches to
// "eu", halts there, and switches back; before the fix the gate opened on
// "us" without a check and granted an order there. (Seed 821 did too until
// this round's evidence and failback changes; it now makes one switch. With
// those changes no composed seed of 1–1500 of this build re-finds the
// planted return without re-proof, plant return-without-reproof: see
// internal/dst/doc.go.)
func TestSimReturnToLastReleasedReprovesIdentity(t *testing.T) {
	for _, seed := range []uint64{505} {
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
