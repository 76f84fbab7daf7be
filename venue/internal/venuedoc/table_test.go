package venuedoc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/venue"
	"github.com/brokerpath/brokerpath/venue/internal/venuedoc"
)

// What a switch does to resting orders, per shipped profile and fence mode.
func TestRestingOrdersPerShippedProfile(t *testing.T) {
	type want struct {
		preserve, flatten venue.SwitchEffect
		deadManFirst      bool
		contains          map[string][]string // field -> phrases
	}
	unknown := want{preserve: venue.EffectUnknown, flatten: venue.EffectUnknown,
		contains: map[string][]string{"check": {"compare every open order with the venue's open-order list"}}}
	wants := map[string]want{
		"alpaca":                  unknown,
		"binance-spot":            unknown,
		"coinbase-advanced-trade": unknown,
		"ibkr-client-portal":      unknown,
		"oanda-v20":               unknown,
		"coinbase-exchange-fix": {preserve: venue.EffectNone, flatten: venue.EffectAllOrders, contains: map[string][]string{
			"flatten":  {"every open order of the profile cancelled, the new path's included"},
			"preserve": {"only if the session chose so at logon", "without CancelOrdersOnDisconnect (8013)"},
			"check":    {"including those placed over the new path", "re-quote"},
		}},
		"deribit": {preserve: venue.EffectNone, flatten: venue.EffectOldPathOrders, contains: map[string][]string{
			"cod":      {"FIX Logout(5) without DontCancelOnDisconnect (9003)=Y"},
			"preserve": {"private/logout", "DontCancelOnDisconnect (9003)=Y"},
			"check":    {"terminates the session, which fires cancel-on-disconnect on the new path"},
		}},
		"kraken-spot": {preserve: venue.EffectNone, flatten: venue.EffectOldPathOrders, deadManFirst: true, contains: map[string][]string{
			"cod":      {"on by default"},
			"preserve": {"only if the session chose so at logon", "CancelOrdersOnDisconnect (8674)=1", "flatten is the default"},
			"deadman":  {"must move first", "CancelAllOrdersAfter", "60 s timeout refreshed every 15 s"},
			"check":    {"OrderCancelRequest", "the switch must not open that gap"},
		}},
	}
	for _, p := range venue.Shipped() {
		t.Run(p.Name, func(t *testing.T) {
			w, ok := wants[p.Name]
			if !ok {
				t.Fatalf("no expectation for shipped profile %q: add one", p.Name)
			}
			for mode, e := range map[venue.FenceMode]venue.SwitchEffect{venue.Preserve: w.preserve, venue.Flatten: w.flatten} {
				if got, why := p.FenceEffect(mode); got != e {
					t.Errorf("FenceEffect(%s) = %s (%s), want %s", mode, got, why, e)
				}
			}
			r := venuedoc.RestingOrders(p)
			if r.Venue != p.Name {
				t.Errorf("Venue = %q", r.Venue)
			}
			if got := strings.HasPrefix(r.DeadMan, "must move first"); got != w.deadManFirst {
				t.Errorf("DeadMan = %q, want must-move-first %v", r.DeadMan, w.deadManFirst)
			}
			fields := map[string]string{"cod": r.CancelOnDisconnect, "preserve": r.Preserve, "flatten": r.Flatten,
				"deadman": r.DeadMan, "check": strings.Join(r.Check, "; ")}
			for f, phrases := range w.contains {
				for _, ph := range phrases {
					if !strings.Contains(fields[f], ph) {
						t.Errorf("%s = %q, want it to contain %q", f, fields[f], ph)
					}
				}
			}
			for _, l := range r.Sources {
				if !strings.HasPrefix(l.URL, "https://") || l.Label == "" {
					t.Errorf("source %+v: want a label and an https URL", l)
				}
			}
			if p.CancelOnDisconnect.Known() && len(r.Sources) == 0 {
				t.Error("a known cancel-on-disconnect fact but no source in the row")
			}
		})
	}
}

// A profile of the user's own: a per-symbol account timer and a profile-wide
// cancel-on-disconnect with no documented exit, and a "|" in a fact that must
// not break the table.
func TestRestingOrdersTableOwnProfile(t *testing.T) {
	p := venue.Conservative()
	p.Name = "own"
	p.CancelOnDisconnect = venue.Documented(venue.CancelOnDisconnect{Scope: venue.CODAccount, OnByDefault: true, Control: "tag 1|2"},
		"https://example.com/cod", "cancels all")
	p.DeadMan = venue.Documented(venue.DeadMan{Available: true, API: "countdown", PerSymbol: true, Timeout: 1500 * time.Millisecond},
		"https://example.com/dms", "per symbol")
	r := venuedoc.RestingOrders(p)
	if e, _ := p.FenceEffect(venue.Preserve); e != venue.EffectUnknown || !strings.HasPrefix(r.Preserve, "unknown: no documented way") {
		t.Errorf("Preserve = %s / %q, want unknown with no documented exit", e, r.Preserve)
	}
	check := strings.Join(r.Check, "; ")
	for _, ph := range []string{"preserve cannot promise anything", "one timer per symbol", "every open order of the account", "on by default"} {
		if !strings.Contains(check, ph) {
			t.Errorf("Check = %q, want %q", check, ph)
		}
	}
	if !strings.Contains(r.DeadMan, "1.5s timeout") || !strings.Contains(r.DeadMan, "one timer per symbol") {
		t.Errorf("DeadMan = %q", r.DeadMan)
	}

	table := venuedoc.Table([]venue.Profile{p, venue.Deribit()})
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("table has %d lines, want header, rule and 2 rows:\n%s", len(lines), table)
	}
	cols := func(l string) int { return strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") }
	for i, l := range lines {
		if cols(l) != cols(lines[0]) {
			t.Errorf("line %d has %d cell borders, the header %d: %s", i+1, cols(l), cols(lines[0]), l)
		}
	}
	if !strings.Contains(lines[2], `tag 1\|2`) {
		t.Errorf("the | in a fact is not escaped: %s", lines[2])
	}
}
