package fix_test

import (
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// The logon on the new endpoint starts when the path switches, not one
// ReconnectInterval after the old connection was cut: with the longest
// ReconnectInterval allowed (5 s), the session still logs on to the new
// region well within it.
func TestSwitchStartsTheLogonWithoutWaitingReconnectInterval(t *testing.T) {
	const interval = 5 * time.Second
	h := newHarness(t, harnessOpts{opts: fix.Options{ReconnectInterval: interval}})
	h.down["eu"].Store(true)
	sw := h.waitEvent(t, pathdialer.EventSwitch)
	if sw.To != "us" {
		t.Fatalf("switched to %q", sw.To)
	}
	h.waitLogon(t, "us", 2*interval)
	took := time.Since(sw.Time)
	t.Logf("switch → logon on us: %v (ReconnectInterval %v)", took, interval)
	// Half the interval: the logon did not wait for it (on a loaded host it
	// takes a few milliseconds to tens of them).
	if took >= interval/2 {
		t.Errorf("logon on us %v after the switch: it waited ReconnectInterval (%v)", took, interval)
	}
}
