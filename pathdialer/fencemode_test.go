package pathdialer_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// The fence mode in force is the one that loses no order silently: preserve
// where the venue documents a way to keep resting orders, flatten elsewhere;
// an explicit choice is kept, and preserve is refused where the venue
// documents no way to honour it.
func TestFenceModeDefaultFollowsTheVenue(t *testing.T) {
	cases := []struct {
		name    string
		profile venue.Profile
		mode    pathdialer.FenceMode
		want    venue.FenceMode
		chosen  string
		effect  venue.SwitchEffect
		wantErr string
	}{
		{name: "no profile", mode: pathdialer.FenceModeDefault, want: venue.Flatten, chosen: "venue default", effect: venue.EffectUnknown},
		{name: "deribit", profile: venue.Deribit(), mode: pathdialer.FenceModeDefault, want: venue.Preserve, chosen: "venue default", effect: venue.EffectNone},
		{name: "deribit flatten", profile: venue.Deribit(), mode: pathdialer.FenceFlatten, want: venue.Flatten, chosen: "configured", effect: venue.EffectOldPathOrders},
		{name: "coinbase flatten", profile: venue.CoinbaseExchangeFIX(), mode: pathdialer.FenceFlatten, want: venue.Flatten, chosen: "configured", effect: venue.EffectAllOrders},
		{name: "kraken flatten", profile: venue.KrakenSpot(), mode: pathdialer.FenceFlatten, want: venue.Flatten, chosen: "configured", effect: venue.EffectOldPathOrders},
		// Keeping orders needs a choice made at logon (8013 left out, 8674=1)
		// that the switch cannot see: the default is flatten, and preserve is
		// the user's explicit word that the sessions log on that way.
		{name: "coinbase default", profile: venue.CoinbaseExchangeFIX(), mode: pathdialer.FenceModeDefault, want: venue.Flatten, chosen: "venue default", effect: venue.EffectAllOrders},
		{name: "kraken default", profile: venue.KrakenSpot(), mode: pathdialer.FenceModeDefault, want: venue.Flatten, chosen: "venue default", effect: venue.EffectOldPathOrders},
		{name: "coinbase preserve", profile: venue.CoinbaseExchangeFIX(), mode: pathdialer.FencePreserve, want: venue.Preserve, chosen: "configured", effect: venue.EffectNone},
		{name: "preserve without a documented way", mode: pathdialer.FencePreserve, wantErr: "documents no way to leave a path without cancelling"},
		{name: "not a mode", mode: pathdialer.FenceMode(9), wantErr: "FenceMode 9 is not a FenceMode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Probe = newProbes().probe
			cfg.Fencer = pathdialer.LocalFenceOnly
			cfg.Reconcile = pathdialer.NoReconcile
			cfg.Venue = tc.profile
			cfg.FenceMode = tc.mode
			p, err := pathdialer.New(cfg)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, pathdialer.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New: %v, want ErrInvalidConfig saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			defer p.Close()
			got := p.Snapshot().Fence
			if got.Mode != tc.want || got.Chosen != tc.chosen || got.Effect != tc.effect || got.Why == "" {
				t.Fatalf("Snapshot().Fence = %+v, want mode %v chosen %q effect %v with a reason", got, tc.want, tc.chosen, tc.effect)
			}
		})
	}
}

// In preserve mode each tracked connection with a farewell says it (a FIX
// Logout with the venue's opt-out tag) before the local fence aborts it, and
// before the Fencer is called; in flatten mode the connection is aborted
// with no farewell, so the venue's cancel-on-disconnect fires.
func TestFenceModeFarewell(t *testing.T) {
	for _, mode := range []pathdialer.FenceMode{pathdialer.FencePreserve, pathdialer.FenceFlatten} {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var order []string
				note := func(s string) {
					mu.Lock()
					order = append(order, s)
					mu.Unlock()
				}
				h := newHarness(t, func(c *pathdialer.Config) {
					c.Venue = venue.Deribit()
					c.FenceMode = mode
				})
				defer h.close()
				var conn *pathdialer.Conn
				h.hooks.onFence = func(f pathdialer.Fence) {
					// Closed by now: a write fails at once instead of
					// reaching the venue.
					if _, err := conn.Write([]byte("35=D|")); err == nil {
						note("fencer: connection still open")
					}
					note("fencer:" + f.Mode.String())
				}
				h.start()
				var err error
				conn, err = h.p.Dial(context.Background(), pathdialer.ServiceFIX)
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				conn.SetFarewell(func(deadline time.Time) error {
					_, err := conn.Write([]byte("8=FIX.4.4|35=5|9003=Y|"))
					note("farewell written")
					return err
				})
				// The venue's side of the connection: what it reads before EOF.
				peer := h.net.peers[len(h.net.peers)-1]
				got := make(chan string, 1)
				go func() {
					b, _ := io.ReadAll(peer)
					got <- string(b)
				}()
				reportDown(h.p, "eu", 0)
				h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
				// The switch was made: the old connection is closed by now
				// in either mode, so the venue's read ends (EOF) within a
				// delivery. A connection the fence left open would keep the
				// read waiting forever: bounded, in virtual time.
				const closeLimit = 10 * time.Second
				var seen string
				select {
				case seen = <-got:
				case <-time.After(closeLimit):
					mu.Lock()
					defer mu.Unlock()
					t.Fatalf("the venue's side of the fenced connection was still open %v (virtual) after the switch was released (hooks saw %q): the fence must close it, after the farewell in preserve mode, at once in flatten mode", closeLimit, order)
				}
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				switch mode {
				case pathdialer.FencePreserve:
					if seen != "8=FIX.4.4|35=5|9003=Y|" {
						t.Fatalf("venue read %q before the close, want the farewell Logout", seen)
					}
					if !slices.Equal(order, []string{"farewell written", "fencer:preserve"}) {
						t.Fatalf("order %v: want the farewell, and the connection closed, before the Fencer (told preserve)", order)
					}
				case pathdialer.FenceFlatten:
					if seen != "" {
						t.Fatalf("venue read %q, want the connection aborted with no farewell in flatten mode", seen)
					}
					if !slices.Equal(order, []string{"fencer:flatten"}) {
						t.Fatalf("order %v: want no farewell, the connection closed, and the Fencer told flatten", order)
					}
				}
			})
		})
	}
}
