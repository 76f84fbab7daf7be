package fix_test

import (
	"sync"

	"github.com/quickfixgo/quickfix"

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

// Once the counterparty should have released a session dropped without a
// Logout (2 × HeartBtInt after the last message heard on it), a refused logon
// is retried within ReconnectInterval, however long LogonBackoff would wait:
// the session resumes within ReconnectInterval of the release.
func TestLogonBackoffIsCappedAfterTheSessionRelease(t *testing.T) {
	const (
		hb       = time.Second
		interval = 100 * time.Millisecond
	)
	var mu sync.Mutex
	var failed []fix.Event
	h := newHarness(t, harnessOpts{
		settings: func(s *quickfix.SessionSettings) { s.Set("HeartBtInt", "1") },
		opts: fix.Options{ReconnectInterval: interval, LogonFailureLimit: -1,
			LogonBackoff: pathdialer.Backoff{Initial: 2 * time.Second, Max: 5 * time.Second},
			OnEvent: func(e fix.Event) {
				if e.Kind == fix.EventLogonFailed {
					mu.Lock()
					failed = append(failed, e)
					mu.Unlock()
				}
			}},
	})
	h.b.rejectLogon.Store("session is held by another connection")
	cut := time.Now()
	h.b.relays["eu"].ResetAll()
	horizon := cut.Add(2*hb + 200*time.Millisecond) // the release is at most 2 × HeartBtInt after the cut
	var late []fix.Event
	eventually(t, 2*horizon.Sub(cut), "three refused logons after the release", func() bool {
		mu.Lock()
		defer mu.Unlock()
		late = late[:0]
		for _, e := range failed {
			if e.Time.After(horizon) {
				late = append(late, e)
			}
		}
		return len(late) >= 3
	})
	for _, e := range late {
		if e.Backoff > interval {
			t.Errorf("logon refused %v after the cut backs off %v, more than ReconnectInterval %v", e.Time.Sub(cut).Round(time.Millisecond), e.Backoff, interval)
		}
	}
	mu.Lock()
	for _, e := range failed {
		t.Logf("refused %v after the cut: backoff %v", e.Time.Sub(cut).Round(time.Millisecond), e.Backoff.Round(time.Millisecond))
	}
	mu.Unlock()
}
