package compare_test

import (
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/bench/compare"
)

// One run of every detection scenario and a short soak, so the detection
// bench does not rot: every fault reaches the backup, and a healthy broker
// sees no failover. A few seconds; not part of the root `make test`.
func TestDetectOneRun(t *testing.T) {
	s := compare.DefaultSettings()
	s.ProbeInterval, s.ProbeTimeout, s.FailureThreshold = 100*time.Millisecond, 80*time.Millisecond, 2
	o := compare.DetectOptions{Runs: 1, Settings: s, Progress: t.Logf}
	rows, err := compare.Detect(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + compare.DetectTable(rows))
	if len(rows) != 3 {
		t.Fatalf("%d scenarios, want 3", len(rows))
	}
	for _, r := range rows {
		if r.Never != 0 || len(r.Values) != 1 {
			t.Errorf("%s: no order on the backup within the bound", r.Scenario)
		}
	}
	res, err := compare.Soak(o, 2*time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Orders == 0 || res.Failed != 0 || res.Switches != 0 {
		t.Errorf("soak with no fault: %+v; want orders, none failed, no failover", res)
	}
}
