package engine_test

import (
	"testing"

	"github.com/brokerpath/brokerpath/engine"
)

// EvaluateFailoverAvoiding passes over the endpoints the caller avoids while
// another eligible endpoint exists, says so in Notes, and picks among them
// only when every eligible endpoint is avoided; it keeps nothing of avoid.
func TestEvaluateFailoverAvoiding(t *testing.T) {
	m, _, pt := fixture(t, nil, epEU, epUS, epAP)
	mustProbe(t, m, "us")
	mustProbe(t, m, "ap")
	pt.fail("eu", errRefused)
	driveDown(t, m, "eu")

	d, err := m.EvaluateFailoverAvoiding(false, []string{"us"})
	if err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, d, engine.FenceRequired)
	if d.To != "ap" {
		t.Fatalf("target %q, want ap (us avoided)", d.To)
	}
	wantNote(t, d, `"us" passed over`)

	// Every eligible endpoint avoided: the best of them, as without avoid.
	d, err = m.EvaluateFailoverAvoiding(false, []string{"us", "ap"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != engine.FenceRequired || d.To != "us" {
		t.Fatalf("decision %v to %q, want FENCE_REQUIRED to us", d.Outcome, d.To)
	}

	// Nothing kept: EvaluateFailover picks us again, and the confirmed
	// switch with us avoided goes to ap.
	if d := failover(t, m, false); d.To != "us" {
		t.Fatalf("EvaluateFailover after an avoiding call: target %q, want us", d.To)
	}
	d, err = m.EvaluateFailoverAvoiding(true, []string{"us"})
	if err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, d, engine.Switched)
	if a, _ := m.Active(); d.To != "ap" || a.Name != "ap" {
		t.Fatalf("switched to %q (active %q), want ap", d.To, a.Name)
	}
}
