package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// Live traffic reported hung ends its vouching for a failing probe: the
// probe's failures count (DOWN, failover). A success on it afterwards vouches
// again; an unknown endpoint is refused by name.
func TestTrafficHungEndsVouching(t *testing.T) {
	m, clk, pt := fixture(t, nil, epEU, epUS)
	mustProbe(t, m, "eu")
	mustProbe(t, m, "us")
	pt.fail("eu", errRefused)
	mustProbe(t, m, "eu") // the blip
	clk.Advance(100 * time.Millisecond)
	mustTraffic(t, m, "eu", nil) // vouches
	for range 3 {
		clk.Advance(100 * time.Millisecond)
		mustProbe(t, m, "eu")
	}
	if st := mustStatus(t, m, "eu"); !st.BrokenProbe || st.State != engine.Degraded {
		t.Fatalf("before the hung order: %+v", st)
	}
	st, err := m.TrafficHung("eu")
	if err != nil || st.State != engine.Down || st.BrokenProbe || st.TrafficFailures != 0 {
		t.Fatalf("TrafficHung: %+v, %v; want DOWN, no broken probe, no traffic failure counted", st, err)
	}
	mustTraffic(t, m, "eu", nil) // the order is answered after all
	if st := mustStatus(t, m, "eu"); !st.BrokenProbe || st.State != engine.Degraded {
		t.Fatalf("after a success following the hang: %+v", st)
	}
	if _, err := m.TrafficHung("nowhere"); !errors.Is(err, engine.ErrUnknownEndpoint) {
		t.Fatalf("TrafficHung of an unknown endpoint: %v", err)
	}
}
