package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

func TestAssignRecordsAnExternalSwitchUnderItsGeneration(t *testing.T) {
	m, clk, _ := fixture(t, func(c *engine.Config) { c.Cooldown = time.Minute }, epEU, epUS)
	// No health is needed: the coordinator decided on its quorum's view.
	d, err := m.Assign("us", 41, "assigned by decider d-1")
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != engine.Switched || d.From != "eu" || d.To != "us" || d.Token != 41 {
		t.Fatalf("decision %+v", d)
	}
	wantActive(t, m, "us")
	if g := m.Token(); g != 41 {
		t.Fatalf("generation %d", g)
	}
	h := m.History()
	if len(h) != 1 || h[0].Token != 41 || !notesContain(h[0].Notes, "decider d-1") {
		t.Fatalf("history %+v", h)
	}
	// A stale or replayed token is refused and changes nothing.
	for _, g := range []uint64{41, 7} {
		if _, err := m.Assign("eu", g, ""); !errors.Is(err, engine.ErrStaleToken) {
			t.Fatalf("Assign gen %d: %v", g, err)
		}
	}
	wantActive(t, m, "us")
	// The same endpoint under a newer token only advances the token.
	d, err = m.Assign("us", 50, "")
	if err != nil || d.Outcome != engine.NoAction || d.Token != 50 || len(m.History()) != 1 {
		t.Fatalf("same-endpoint assign: %+v, %v, history %d", d, err, len(m.History()))
	}
	// An assigned switch counts for the failback cooldown like any other.
	mustProbe(t, m, "eu")
	fb := failback(t, m, true)
	if fb.Outcome != engine.CooldownActive {
		t.Fatalf("failback right after an assigned switch: %v", fb.Outcome)
	}
	clk.Advance(2 * time.Minute)
	if _, err := m.Assign("nowhere", 60, ""); !errors.Is(err, engine.ErrUnknownEndpoint) {
		t.Fatalf("unknown endpoint: %v", err)
	}
}
