package venue_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/venue"
)

const src = "https://example.com/venue-docs"

func doc[T any](v T) venue.Fact[T] { return venue.Documented(v, src, "the venue says so") }

// strong is a venue that guarantees everything: every rule gives its most
// permissive answer. Each row of TestUnknownTakesSafeSide makes one fact
// unknown and checks that the rule reading it moves to the safe side.
func strong() venue.Profile {
	return venue.Profile{
		Name:                "strong",
		DedupScope:          doc(venue.DedupAllStates),
		DedupWindow:         doc(venue.Forever),
		LookupFalseNegative: doc(time.Duration(0)),
		LookupRetention:     doc(venue.Forever),
		LookupBudget:        doc(venue.Budget{Requests: 1000, Per: time.Second, LookupCost: 1, Scope: venue.PerAccount, Exceeded: venue.Throttled}),
		BrokerFence:         doc(venue.FenceKillSwitch),
		FencingTokens:       doc(venue.Supported),
		CancelOnDisconnect:  doc(venue.CancelOnDisconnect{Scope: venue.CODAccount, KeepOrders: "log out"}),
		DeadMan:             doc(venue.DeadMan{Available: true, API: "cancelAllAfter", Timeout: time.Minute, Refresh: 15 * time.Second}),
		SessionsPerIdentity: doc(4),
		Lockout:             doc(venue.Lockout{}),
		HotStandby:          doc(venue.Supported),
	}
}

func TestStrongProfileIsValid(t *testing.T) {
	if err := strong().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownTakesSafeSide(t *testing.T) {
	const hold = 5 * time.Second
	noFence := venue.Evidence{LookupAfterSend: hold + time.Second, MaxCopyHold: hold, SinceFirstSend: time.Minute}
	fenced := venue.Evidence{BrokerFenced: true, LookupAfterCutoff: time.Second, MaxCopyHold: hold, SinceFirstSend: time.Minute}
	tokens := venue.Evidence{TokenChecked: true, LookupAfterCutoff: time.Second, MaxCopyHold: hold, SinceFirstSend: time.Minute}
	resend := func(e venue.Evidence) func(venue.Profile) any {
		return func(p venue.Profile) any { ok, _ := p.ResendSafe(e); return ok }
	}
	final := func(e venue.Evidence) func(venue.Profile) any {
		return func(p venue.Profile) any { ok, _ := p.FinalNotReceived(e); return ok }
	}
	// Each row: both (optional) sets up strong() so that only the fact under
	// test can answer the rule; weaken then makes that fact unknown.
	openOnly := func(p *venue.Profile) {
		p.DedupScope = doc(venue.DedupOpenOrders)
		p.DedupWindow = venue.Unknown[time.Duration]("x")
	}
	cases := []struct {
		name     string
		both     func(*venue.Profile)
		weaken   func(*venue.Profile)
		rule     func(venue.Profile) any
		strongIs any
		safeIs   any
	}{
		{"DedupScope", nil, func(p *venue.Profile) { p.DedupScope = venue.Unknown[venue.DedupScope]("x") },
			resend(noFence), true, false},
		{"DedupWindow", nil, func(p *venue.Profile) { p.DedupWindow = venue.Unknown[time.Duration]("x") },
			resend(noFence), true, false},
		{"LookupFalseNegative/quarantine", nil, func(p *venue.Profile) { p.LookupFalseNegative = venue.Unknown[time.Duration]("x") },
			func(p venue.Profile) any { return p.MinQuarantine(hold) }, hold, venue.UnknownFalseNegative + hold},
		{"LookupFalseNegative/final", nil, func(p *venue.Profile) { p.LookupFalseNegative = venue.Unknown[time.Duration]("x") },
			final(noFence), true, false},
		{"LookupFalseNegative/horizon", nil, func(p *venue.Profile) {
			p.LookupFalseNegative = venue.Unknown[time.Duration]("x")
		}, func(p venue.Profile) any {
			return p.LateLandingHorizon(10*time.Minute) >= venue.UnknownFalseNegative+10*time.Minute
		},
			false, true},
		{"LookupRetention", nil, func(p *venue.Profile) { p.LookupRetention = venue.Unknown[time.Duration]("x") },
			func(p venue.Profile) any {
				s, err := p.RequerySchedule(time.Second, time.Hour)
				if err != nil {
					return err
				}
				return maxGap(s) <= venue.UnknownRetentionGap
			}, false, true},
		{"LookupBudget", nil, func(p *venue.Profile) { p.LookupBudget = venue.Unknown[venue.Budget]("x") },
			func(p venue.Profile) any { return p.LookupInterval() }, 4 * time.Millisecond, venue.UnknownLookupInterval},
		{"BrokerFence/final", nil, func(p *venue.Profile) {
			p.BrokerFence = venue.Unknown[venue.FenceKind]("x")
			p.LookupFalseNegative = doc(time.Duration(0))
		}, final(venue.Evidence{BrokerFenced: true, LookupAfterCutoff: time.Second, MaxCopyHold: time.Hour}), true, false},
		{"BrokerFence/resend", openOnly, func(p *venue.Profile) { p.BrokerFence = venue.Unknown[venue.FenceKind]("x") },
			resend(fenced), true, false},
		{"FencingTokens/resend", openOnly, func(p *venue.Profile) { p.FencingTokens = venue.Unknown[venue.Support]("x") },
			resend(tokens), true, false},
		{"CancelOnDisconnect/preserve", nil, func(p *venue.Profile) { p.CancelOnDisconnect = venue.Unknown[venue.CancelOnDisconnect]("x") },
			func(p venue.Profile) any { e, _ := p.FenceEffect(venue.Preserve); return e }, venue.EffectNone, venue.EffectUnknown},
		{"CancelOnDisconnect/flatten", nil, func(p *venue.Profile) { p.CancelOnDisconnect = venue.Unknown[venue.CancelOnDisconnect]("x") },
			func(p venue.Profile) any { e, _ := p.FenceEffect(venue.Flatten); return e }, venue.EffectAllOrders, venue.EffectUnknown},
		{"DeadMan", nil, func(p *venue.Profile) { p.DeadMan = venue.Unknown[venue.DeadMan]("x") },
			func(p venue.Profile) any { _, ok := p.DeadManTimer(); return ok }, true, false},
		{"SessionsPerIdentity", nil, func(p *venue.Profile) { p.SessionsPerIdentity = venue.Unknown[int]("x") },
			func(p venue.Profile) any { return p.AllowsSessions(2) }, true, false},
		{"Lockout", nil, func(p *venue.Profile) { p.Lockout = venue.Unknown[venue.Lockout]("x") },
			func(p venue.Profile) any { return p.LockoutAfterDrop(30 * time.Second) }, time.Duration(0), time.Minute + venue.UnknownLockout},
		{"HotStandby", nil, func(p *venue.Profile) { p.HotStandby = venue.Unknown[venue.Support]("x") },
			func(p venue.Profile) any { return p.StandbyAllowed() }, true, false},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			covered[strings.Split(c.name, "/")[0]] = true
			s := strong()
			if c.both != nil {
				c.both(&s)
			}
			if got := c.rule(s); got != c.strongIs {
				t.Fatalf("strong profile: got %v, want %v (the row cannot fail)", got, c.strongIs)
			}
			w := s
			c.weaken(&w)
			if err := w.Validate(); err != nil {
				t.Fatalf("weakened profile invalid: %v", err)
			}
			if got := c.rule(w); got != c.safeIs {
				t.Fatalf("with %s unknown: got %v, want the safe side %v", c.name, got, c.safeIs)
			}
		})
	}
	// Every fact of a Profile has a row.
	for _, f := range []string{"DedupScope", "DedupWindow", "LookupFalseNegative", "LookupRetention", "LookupBudget",
		"BrokerFence", "FencingTokens", "CancelOnDisconnect", "DeadMan", "SessionsPerIdentity", "Lockout", "HotStandby"} {
		if !covered[f] {
			t.Errorf("no unknown-takes-the-safe-side row for %s", f)
		}
	}
}

func maxGap(s []time.Duration) time.Duration {
	var m, prev time.Duration
	for _, at := range s {
		m = max(m, at-prev)
		prev = at
	}
	return m
}

// The zero Profile and Conservative are all-unknown: every rule on the safe
// side.
func TestConservativeIsSafeEverywhere(t *testing.T) {
	for _, p := range []venue.Profile{venue.Conservative(), {Name: "zero"}} {
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		e := venue.Evidence{BrokerFenced: true, TokenChecked: true, LookupAfterCutoff: time.Hour, LookupAfterSend: time.Minute, MaxCopyHold: 5 * time.Second, SinceFirstSend: time.Second}
		if ok, why := p.ResendSafe(e); ok {
			t.Errorf("%s: ResendSafe = true (%s)", p.Name, why)
		}
		if ok, why := p.FinalNotReceived(e); ok {
			t.Errorf("%s: FinalNotReceived = true (%s)", p.Name, why)
		}
		if got, want := p.MinQuarantine(5*time.Second), venue.UnknownFalseNegative+5*time.Second; got != want {
			t.Errorf("%s: MinQuarantine = %v, want %v", p.Name, got, want)
		}
		if got := p.LateLandingHorizon(0); got < venue.DefaultLateLandingHorizon {
			t.Errorf("%s: LateLandingHorizon = %v, below the default", p.Name, got)
		}
		for _, m := range []venue.FenceMode{venue.Preserve, venue.Flatten} {
			if eff, _ := p.FenceEffect(m); eff != venue.EffectUnknown {
				t.Errorf("%s: FenceEffect(%v) = %v, want unknown", p.Name, m, eff)
			}
		}
	}
}

func TestResendSafe(t *testing.T) {
	mustName := func(n string) venue.Profile {
		p, err := venue.ByName(n)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	day := strong()
	day.Name = "day-dedup"
	day.DedupWindow = doc(24 * time.Hour)
	day.BrokerFence = doc(venue.FenceNone)
	day.FencingTokens = doc(venue.Unsupported)
	reqOnly := day
	reqOnly.Name = "requirement-only"
	reqOnly.DedupScope.Basis = venue.BasisRequirement
	reqWindow := day
	reqWindow.Name = "window-is-a-requirement"
	reqWindow.DedupWindow.Basis = venue.BasisRequirement

	const hold = 10 * time.Second
	quarantined := venue.Evidence{LookupAfterSend: time.Hour, MaxCopyHold: hold, SinceFirstSend: time.Hour}
	cases := []struct {
		name    string
		p       venue.Profile
		e       venue.Evidence
		want    bool
		because []string
	}{
		{"binance open-orders dedup, quarantine only", mustName("binance-spot"), quarantined, false,
			[]string{"binance-spot", "only among open orders", "developers.binance.com", "not backed by a broker fence"}},
		{"binance claims a fence it does not have", mustName("binance-spot"),
			venue.Evidence{BrokerFenced: true, LookupAfterCutoff: time.Hour, MaxCopyHold: hold, SinceFirstSend: time.Hour}, false,
			[]string{"fence is none"}},
		{"kraken open-orders dedup", mustName("kraken-spot"), quarantined, false, []string{"only among open orders", "docs.kraken.com"}},
		{"oanda pending-orders dedup", mustName("oanda-v20"), quarantined, false, []string{"only among open orders"}},
		{"deribit no dedup", mustName("deribit"), quarantined, false, []string{"does not check client order IDs"}},
		{"coinbase advanced trade: window undocumented", mustName("coinbase-advanced-trade"), quarantined, false,
			[]string{"every state", "for how long is not documented"}},
		{"alpaca: window undocumented", mustName("alpaca"), quarantined, false, []string{"for how long is not documented"}},
		{"ibkr: 24 h is a rule for clients, not a refusal", mustName("ibkr-client-portal"), quarantined, false,
			[]string{"only asks clients"}},
		{"ibkr: one brokerage session fenced, lookup past the horizon", mustName("ibkr-client-portal"),
			venue.Evidence{BrokerFenced: true, LookupAfterCutoff: venue.UnknownFalseNegative, MaxCopyHold: hold, SinceFirstSend: time.Hour}, true,
			[]string{"fenced the old path", "one session per identity"}},
		{"ibkr: fenced, but looked up within the false-negative horizon", mustName("ibkr-client-portal"),
			venue.Evidence{BrokerFenced: true, LookupAfterCutoff: venue.UnknownFalseNegative - time.Nanosecond, MaxCopyHold: hold, SinceFirstSend: time.Hour}, false,
			[]string{"within the ibkr-client-portal false-negative horizon"}},
		{"coinbase exchange: one session per key is only a rule", mustName("coinbase-exchange-fix"),
			venue.Evidence{BrokerFenced: true, LookupAfterCutoff: time.Hour, MaxCopyHold: hold, SinceFirstSend: time.Hour}, false,
			[]string{"requirement"}},
		{"24 h dedup covers the resend", day, venue.Evidence{SinceFirstSend: 24*time.Hour - hold, MaxCopyHold: hold}, true,
			[]string{"every state for 24h0m0s"}},
		{"24 h dedup: one nanosecond too late", day, venue.Evidence{SinceFirstSend: 24*time.Hour - hold + 1, MaxCopyHold: hold}, false,
			[]string{"shorter than"}},
		{"a window that is only a requirement is not relied on", reqWindow, venue.Evidence{SinceFirstSend: time.Second}, false,
			[]string{"for how long is not documented"}},
		{"a requirement is never relied on", reqOnly, venue.Evidence{SinceFirstSend: time.Second}, false,
			[]string{"only asks clients"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, why := c.p.ResendSafe(c.e)
			if got != c.want {
				t.Fatalf("ResendSafe = %v (%s), want %v", got, why, c.want)
			}
			for _, s := range c.because {
				if !strings.Contains(why, s) {
					t.Errorf("reason %q does not say %q", why, s)
				}
			}
		})
	}
}

func TestFinalNotReceivedQuarantineBoundary(t *testing.T) {
	p := venue.BinanceSpot()
	const hold = 5 * time.Second
	q := p.MinQuarantine(hold)
	if q != 10*time.Minute+hold {
		t.Fatalf("MinQuarantine = %v, want 10m5s (Binance's 10 min false-negative horizon + hold)", q)
	}
	if ok, why := p.FinalNotReceived(venue.Evidence{LookupAfterSend: q, MaxCopyHold: hold}); !ok {
		t.Errorf("at the quarantine: provisional (%s)", why)
	}
	ok, why := p.FinalNotReceived(venue.Evidence{LookupAfterSend: q - time.Nanosecond, MaxCopyHold: hold})
	if ok || !strings.Contains(why, "provisional") {
		t.Errorf("before the quarantine: final=%v (%s)", ok, why)
	}
	// Final by quarantine still does not make a resend safe at Binance.
	if ok, _ := p.ResendSafe(venue.Evidence{LookupAfterSend: q, MaxCopyHold: hold, SinceFirstSend: q}); ok {
		t.Error("ResendSafe on a quarantine-only verdict at an open-orders-dedup venue")
	}
}

func TestLateLandingHorizon(t *testing.T) {
	for _, c := range []struct {
		p    venue.Profile
		hold time.Duration
		want time.Duration
	}{
		{venue.BinanceSpot(), 5 * time.Second, venue.DefaultLateLandingHorizon},
		{venue.BinanceSpot(), 6 * time.Minute, 16 * time.Minute},
		{venue.Conservative(), time.Minute, venue.UnknownFalseNegative + time.Minute},
	} {
		if got := c.p.LateLandingHorizon(c.hold); got != c.want {
			t.Errorf("%s.LateLandingHorizon(%v) = %v, want %v", c.p.Name, c.hold, got, c.want)
		}
	}
	if venue.DefaultLateLandingHorizon < 15*time.Minute {
		t.Fatalf("DefaultLateLandingHorizon %v < 15 min", venue.DefaultLateLandingHorizon)
	}
}

func TestLookupInterval(t *testing.T) {
	for _, c := range []struct {
		p    venue.Profile
		want time.Duration
	}{
		{venue.Alpaca(), 1200 * time.Millisecond},     // 200/min, a quarter of it
		{venue.BinanceSpot(), 320 * time.Millisecond}, // 6000 weight/min, lookup weighs 4; an eighth (IP bans)
		{venue.Deribit(), 400 * time.Millisecond},     // 10,000 credits/s, lookup costs 500; an eighth (session terminated)
		{venue.KrakenSpot(), 12 * time.Second},        // counter decays 1 per 3 s
		{venue.Conservative(), venue.UnknownLookupInterval},
	} {
		if got := c.p.LookupInterval(); got != c.want {
			t.Errorf("%s.LookupInterval() = %v, want %v", c.p.Name, got, c.want)
		}
	}
}

func TestRequerySchedule(t *testing.T) {
	p := strong()
	p.LookupRetention = doc(2 * time.Minute)
	s, err := p.RequerySchedule(time.Second, 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if s[0] != time.Second || s[len(s)-1] != 15*time.Minute {
		t.Fatalf("schedule %v: want first 1s, last 15m", s)
	}
	for i := 1; i < len(s); i++ {
		if s[i] <= s[i-1] {
			t.Fatalf("schedule %v not increasing at %d", s, i)
		}
	}
	if g := maxGap(s); g > 2*time.Minute {
		t.Fatalf("largest gap %v exceeds the 2 min retention", g)
	}
	if s[2]-s[1] <= s[1]-s[0] {
		t.Fatalf("gaps do not grow: %v", s)
	}
	// The first lookup is never sooner than the budget allows.
	k, err := venue.KrakenSpot().RequerySchedule(time.Second, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if k[0] != venue.KrakenSpot().LookupInterval() {
		t.Fatalf("kraken first re-query at %v, want its lookup interval %v", k[0], venue.KrakenSpot().LookupInterval())
	}
	for _, bad := range [][2]time.Duration{{0, time.Minute}, {-time.Second, time.Minute}, {time.Minute, time.Second}} {
		if _, err := p.RequerySchedule(bad[0], bad[1]); err == nil {
			t.Errorf("RequerySchedule(%v, %v) accepted", bad[0], bad[1])
		}
	}
}

func TestFenceEffect(t *testing.T) {
	for _, c := range []struct {
		p                 venue.Profile
		preserve, flatten venue.SwitchEffect
		say               string
	}{
		{venue.CoinbaseExchangeFIX(), venue.EffectNone, venue.EffectAllOrders, "including the new path's"},
		{venue.Deribit(), venue.EffectNone, venue.EffectOldPathOrders, "connection"},
		{venue.KrakenSpot(), venue.EffectNone, venue.EffectOldPathOrders, "session"},
		{venue.Alpaca(), venue.EffectUnknown, venue.EffectUnknown, "not documented"},
		{venue.BinanceSpot(), venue.EffectUnknown, venue.EffectUnknown, "not documented"},
	} {
		if got, why := c.p.FenceEffect(venue.Preserve); got != c.preserve {
			t.Errorf("%s preserve: %v (%s), want %v", c.p.Name, got, why, c.preserve)
		}
		got, why := c.p.FenceEffect(venue.Flatten)
		if got != c.flatten || !strings.Contains(why, c.say) {
			t.Errorf("%s flatten: %v (%s), want %v saying %q", c.p.Name, got, why, c.flatten, c.say)
		}
	}
	// Preserve is unknown where the venue documents no way to leave without
	// cancelling.
	p := strong()
	p.CancelOnDisconnect = doc(venue.CancelOnDisconnect{Scope: venue.CODSession})
	if got, _ := p.FenceEffect(venue.Preserve); got != venue.EffectUnknown {
		t.Errorf("preserve with no documented way: %v", got)
	}
	p.CancelOnDisconnect = doc(venue.CancelOnDisconnect{Scope: venue.CODNone})
	if got, _ := p.FenceEffect(venue.Flatten); got != venue.EffectNone {
		t.Errorf("flatten without cancel-on-disconnect: %v", got)
	}
}

// The default fence mode is preserve only where the old path can keep its
// orders at the moment it leaves; where keeping needs a choice made at logon
// (which a switch cannot see) or nothing is documented, it is flatten.
func TestDefaultFenceMode(t *testing.T) {
	for _, c := range []struct {
		p    venue.Profile
		want venue.FenceMode
		say  string
	}{
		{venue.Deribit(), venue.Preserve, "DontCancelOnDisconnect (9003)=Y"},
		{venue.KrakenSpot(), venue.Flatten, "8674"},
		{venue.CoinbaseExchangeFIX(), venue.Flatten, "8013"},
		{venue.Alpaca(), venue.Flatten, "not documented"},
	} {
		if got, why := c.p.DefaultFenceMode(); got != c.want || !strings.Contains(why, c.say) {
			t.Errorf("%s: DefaultFenceMode = %v (%s), want %v saying %q", c.p.Name, got, why, c.want, c.say)
		}
	}
	p := strong()
	p.CancelOnDisconnect = doc(venue.CancelOnDisconnect{Scope: venue.CODNone})
	if got, _ := p.DefaultFenceMode(); got != venue.Preserve {
		t.Errorf("no cancel-on-disconnect: %v, want preserve", got)
	}
	p.CancelOnDisconnect = doc(venue.CancelOnDisconnect{Scope: venue.CODSession, KeepAtLogon: "tag 1=1"})
	if got, _ := p.DefaultFenceMode(); got != venue.Flatten {
		t.Errorf("kept only by a logon choice: %v, want flatten", got)
	}
	if got, why := p.FenceEffect(venue.Preserve); got != venue.EffectNone || !strings.Contains(why, "cannot see") {
		t.Errorf("preserve kept by a logon choice: %v (%s), want none saying the switch cannot see it", got, why)
	}
}

func TestLockout(t *testing.T) {
	if got := venue.BinanceSpot().LockoutAfterDrop(30 * time.Second); got != time.Minute {
		t.Errorf("binance lockout at HeartBtInt 30s = %v, want 2x = 1m", got)
	}
}

func TestValidateRefuses(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*venue.Profile)
		say    string
	}{
		{"empty name", func(p *venue.Profile) { p.Name = " " }, "Name is empty"},
		{"known fact without URL", func(p *venue.Profile) { p.DedupScope.URL = "" }, "DedupScope is documented but has no source URL"},
		{"known fact without quote", func(p *venue.Profile) { p.LookupBudget.Quote = "" }, "LookupBudget is documented but quotes nothing"},
		{"unknown fact with a value", func(p *venue.Profile) { p.SessionsPerIdentity = venue.Fact[int]{Value: 3} }, "SessionsPerIdentity has a value (3) but its Basis is unknown"},
		{"window without all-states scope", func(p *venue.Profile) { p.DedupScope = doc(venue.DedupOpenOrders) }, "DedupWindow is known but DedupScope is open orders only"},
		{"zero window", func(p *venue.Profile) { p.DedupWindow = doc(time.Duration(0)) }, "DedupWindow is 0s, must be > 0"},
		{"negative false negative", func(p *venue.Profile) { p.LookupFalseNegative = doc(-time.Second) }, "LookupFalseNegative is -1s"},
		{"zero retention", func(p *venue.Profile) { p.LookupRetention = doc(time.Duration(0)) }, "LookupRetention is 0s"},
		{"empty budget", func(p *venue.Profile) { p.LookupBudget = doc(venue.Budget{Requests: 10}) }, "LookupBudget is 10 per 0s at lookup cost 0"},
		{"zero sessions", func(p *venue.Profile) { p.SessionsPerIdentity = doc(0) }, "SessionsPerIdentity is 0"},
		{"bad basis", func(p *venue.Profile) { p.HotStandby.Basis = 9 }, "HotStandby: Basis 9 is not a Basis"},
		{"bad enum", func(p *venue.Profile) { p.BrokerFence = doc(venue.FenceKind(7)) }, "BrokerFence 7 is not a FenceKind"},
		{"negative lockout", func(p *venue.Profile) { p.Lockout = doc(venue.Lockout{HeartbeatMultiple: -1}) }, "Lockout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := strong()
			c.mutate(&p)
			err := p.Validate()
			if !errors.Is(err, venue.ErrInvalidProfile) {
				t.Fatalf("Validate = %v, want ErrInvalidProfile", err)
			}
			if !strings.Contains(err.Error(), c.say) {
				t.Fatalf("error %q does not say %q", err, c.say)
			}
		})
	}
}
