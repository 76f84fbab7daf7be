package fix_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
	"github.com/brokerpath/brokerpath/venue"
)

// In preserve mode a switch leaves the old endpoint with a Logout carrying
// the venue's opt-out tag (Deribit's DontCancelOnDisconnect 9003=Y), sent in
// sequence by quickfix and received by the real acceptor before the
// connection closes; in flatten mode the connection is cut with no Logout, so
// cancel-on-disconnect fires. The session logs on again on the new endpoint.
func TestPreserveLogoutOnSwitch(t *testing.T) {
	for _, mode := range []pathdialer.FenceMode{pathdialer.FencePreserve, pathdialer.FenceFlatten} {
		t.Run(mode.String(), func(t *testing.T) {
			h := newHarness(t, harnessOpts{
				seq:  fix.SequenceResetOnSwitch,
				opts: fix.Options{PreserveLogout: map[quickfix.Tag]string{9003: "Y"}},
				cfg: func(c *pathdialer.Config) {
					c.Venue = venue.Deribit()
					c.FenceMode = mode
					c.FarewellTimeout = 2 * time.Second // generous: a loaded machine
				},
			})
			h.down["eu"].Store(true)
			sw := h.waitEvent(t, pathdialer.EventSwitch)
			if sw.To != "us" {
				t.Fatalf("switched to %q", sw.To)
			}
			h.waitLogon(t, "us", 5*time.Second)
			h.b.mu.Lock()
			logouts := slices.Clone(h.b.logouts)
			h.b.mu.Unlock()
			switch mode {
			case pathdialer.FencePreserve:
				if !slices.Contains(logouts, "eu 9003=Y") {
					t.Fatalf("Logouts received %v, want one on eu carrying 9003=Y", logouts)
				}
			case pathdialer.FenceFlatten:
				// (The broker's own probe sessions log out too: no region.)
				for _, l := range logouts {
					if strings.HasPrefix(l, "eu ") || strings.HasSuffix(l, "=Y") {
						t.Fatalf("Logouts received %q, want none from the trading session: flatten cuts the connection", logouts)
					}
				}
			}
		})
	}
}

// PreserveLogout refuses a field that cannot be sent.
func TestPreserveLogoutValidated(t *testing.T) {
	b := newBroker(t, map[string]string{"C": "FIX.4.4"})
	p := idlePathFor(t, b)
	st := quickfix.NewSettings()
	s := quickfix.NewSessionSettings()
	s.Set("BeginString", "FIX.4.4")
	s.Set("SenderCompID", "C")
	s.Set("TargetCompID", "BROKER")
	s.Set("HeartBtInt", "30")
	if _, err := st.AddSession(s); err != nil {
		t.Fatal(err)
	}
	_, err := fix.NewInitiator(nopApp{}, quickfix.NewMemoryStoreFactory(), st, logFactory(), p,
		fix.Options{Sequence: fix.SequenceResetOnSwitch, PreserveLogout: map[quickfix.Tag]string{9003: " "}})
	if err == nil || !errors.Is(err, fix.ErrInvalidOptions) {
		t.Fatalf("NewInitiator with a blank PreserveLogout value: %v, want ErrInvalidOptions", err)
	}
}
