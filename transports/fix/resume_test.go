package fix_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/brokerpath/brokerpath/venue"

	"sync"

	"github.com/quickfixgo/quickfix"

	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
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

// A hot standby session is logged on to the backup before any switch, never
// carries an order until the path switches to it, and takes the orders after
// the switch without a new logon.
func TestHotStandbyFailsOverWithoutALogon(t *testing.T) {
	p := venue.BinanceSpot()
	h := newHarness(t, harnessOpts{standby: &p})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.in.WaitLoggedOn(ctx, h.sidUS, "us"); err != nil {
		t.Fatalf("standby session not logged on to us: %v", err)
	}
	// Any session of the group takes orders; they go to the active endpoint's.
	if err := h.in.SendOrder(ctx, order("hs-1", "FILL"), h.sidUS); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "hs-1 answered", func() bool { return h.in.Stats().Answered.Load() == 1 })
	if r := h.b.received("hs-1"); len(r) != 1 || r[0].Region != "eu" {
		t.Fatalf("hs-1 at the broker: %+v, want once in eu", r)
	}
	logons := len(h.b.logonsOf(h.sidUS.SenderCompID))
	if logons != 1 {
		t.Fatalf("standby logged on %d times before the switch, want 1", logons)
	}
	h.down["eu"].Store(true)
	if sw := h.waitEvent(t, pathdialer.EventSwitch); sw.To != "us" {
		t.Fatalf("switched to %q", sw.To)
	}
	if err := h.in.SendOrder(ctx, order("hs-2", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "hs-2 answered", func() bool { return h.in.Stats().Answered.Load() == 2 })
	if r := h.b.received("hs-2"); len(r) != 1 || r[0].Region != "us" {
		t.Errorf("hs-2 at the broker: %+v, want once in us", r)
	}
	if n := len(h.b.logonsOf(h.sidUS.SenderCompID)); n != logons {
		t.Errorf("standby logged on %d more times across the switch, want none", n-logons)
	}
	if ep, ok := h.in.LoggedOn(h.sidUS); !ok || ep != "us" {
		t.Errorf("standby session LoggedOn = %q, %v", ep, ok)
	}
}

// A hot standby is refused where the venue forbids a second live session, or
// does not say, and where the sessions are not one per endpoint with their
// own SenderCompID.
func TestHotStandbyRefusedWhereItCannotWork(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	settings := func(comps ...string) *quickfix.Settings {
		st := quickfix.NewSettings()
		for _, c := range comps {
			s := quickfix.NewSessionSettings()
			s.Set("BeginString", "FIX.4.4")
			s.Set("SenderCompID", c)
			s.Set("TargetCompID", "BROKER")
			s.Set("HeartBtInt", "30")
			if _, err := st.AddSession(s); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}
	sid := func(c string) quickfix.SessionID {
		return quickfix.SessionID{BeginString: "FIX.4.4", SenderCompID: c, TargetCompID: "BROKER"}
	}
	a, b := uniq("SBA"), uniq("SBB")
	both := map[string]quickfix.SessionID{"eu": sid(a), "us": sid(b)}
	for _, tc := range []struct {
		name     string
		prof     venue.Profile
		sessions map[string]quickfix.SessionID
		st       *quickfix.Settings
		want     string
	}{
		{"one session per API key", venue.CoinbaseExchangeFIX(), both, settings(a, b), "coinbase-exchange-fix does not allow"},
		{"one brokerage session", venue.IBKRClientPortal(), both, settings(a, b), "ibkr-client-portal does not allow"},
		{"not stated", venue.KrakenSpot(), both, settings(a, b), "kraken-spot does not allow"},
		{"endpoint without a session", venue.BinanceSpot(), map[string]quickfix.SessionID{"eu": sid(a)}, settings(a), `no session for endpoint "us"`},
		{"shared SenderCompID", venue.BinanceSpot(), map[string]quickfix.SessionID{"eu": sid(a), "us": {BeginString: "FIX.4.4", SenderCompID: a, TargetCompID: "OTHER"}}, settings(a), "share SenderCompID"},
		{"session not in settings", venue.BinanceSpot(), both, settings(a), "not defined in the settings"},
		{"unknown endpoint", venue.BinanceSpot(), map[string]quickfix.SessionID{"eu": sid(a), "us": sid(b), "ap": sid(uniq("SBC"))}, settings(a, b), `endpoint "ap"`},
	} {
		_, err := fix.NewInitiator(nopApp{}, quickfix.NewMemoryStoreFactory(), tc.st, logFactory(), h.path,
			fix.Options{Sequence: fix.SequenceResetOnSwitch, Standby: &fix.Standby{Venue: tc.prof, Sessions: tc.sessions}})
		if !errors.Is(err, fix.ErrInvalidOptions) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%s: err = %v, want ErrInvalidOptions naming %q", tc.name, err, tc.want)
		}
	}
}

// With a hot standby, an order granted on the old endpoint while its session
// is down is not left waiting for that session when the path switches: it
// returns ErrNotSent at the switch, and is sent again on the new endpoint.
func TestHotStandbyOrderWaitingOnTheOldSessionEndsAtTheSwitch(t *testing.T) {
	p := venue.BinanceSpot()
	h := newHarness(t, harnessOpts{standby: &p})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.in.WaitLoggedOn(ctx, h.sidUS, "us"); err != nil {
		t.Fatal(err)
	}
	// eu's session is cut while the path (whose probes still pass) stays on eu.
	_ = h.b.relays["eu"].SetFault(faultnet.Down())
	eventually(t, 5*time.Second, "eu session down", func() bool { _, ok := h.in.LoggedOn(h.sid); return !ok })
	sent := make(chan error, 1)
	go func() { sent <- h.in.SendOrder(ctx, order("hs-wait", "FILL"), h.sid) }()
	h.down["eu"].Store(true)
	sw := h.waitEvent(t, pathdialer.EventSwitch)
	select {
	case err := <-sent:
		if !errors.Is(err, fix.ErrNotSent) {
			t.Fatalf("SendOrder across the switch: %v, want ErrNotSent", err)
		}
		t.Logf("returned %v after the switch: %v", time.Since(sw.Time).Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		t.Fatal("SendOrder still waiting for the old endpoint's session 10s after the switch")
	}
	if err := h.in.SendOrder(ctx, order("hs-wait", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "hs-wait at the broker", func() bool { return len(h.b.received("hs-wait")) == 1 })
	if r := h.b.received("hs-wait"); r[0].Region != "us" {
		t.Errorf("hs-wait reached %q, want us", r[0].Region)
	}
}
