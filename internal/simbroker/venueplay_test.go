package simbroker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/tag"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/venue"
)

// FromVenue maps every shipped profile's facts to the broker's behaviour,
// venue time scaled by 60.
func TestFromVenueMapsEveryShippedProfile(t *testing.T) {
	type want struct {
		dedup   DedupPolicy
		window  time.Duration
		lag     time.Duration
		rate    float64
		region  bool
		overrun venue.Overrun
		session SessionPolicy
		fence   FencePolicy
		lockout time.Duration
	}
	unknownLag := venue.UnknownFalseNegative / 60
	unknownRate := 4.0 * 60 // 1 lookup/s within a quarter of the budget, scaled
	unknownLockout := 2*time.Second + time.Second
	wants := map[string]want{
		"alpaca":                  {DedupAcrossRegions, time.Second, unknownLag, 200, false, venue.Throttled, SessionsConcurrent, FenceNone, unknownLockout},
		"binance-spot":            {DedupOpenOnly, 0, 10 * time.Second, 1500, true, venue.Banned, SessionsConcurrent, FenceNone, 2 * time.Second},
		"coinbase-advanced-trade": {DedupAcrossRegions, time.Second, unknownLag, 30 * 60, false, venue.Throttled, SessionsConcurrent, FenceNone, unknownLockout},
		"coinbase-exchange-fix":   {DedupNone, 0, unknownLag, unknownRate, false, venue.Throttled, SessionsConcurrent, FenceNone, unknownLockout},
		"deribit":                 {DedupNone, 0, unknownLag, 1200, false, venue.SessionTerminated, SessionsConcurrent, FenceNone, unknownLockout},
		"ibkr-client-portal":      {DedupNone, 0, unknownLag, unknownRate, false, venue.Throttled, SessionOnePerCredential, FenceEnforced, unknownLockout},
		"kraken-spot":             {DedupOpenOnly, 0, unknownLag, 20, false, venue.Throttled, SessionsConcurrent, FenceNone, unknownLockout},
		"oanda-v20":               {DedupOpenOnly, 0, unknownLag, 120 * 60, false, venue.Throttled, SessionsConcurrent, FenceNone, unknownLockout},
	}
	shipped := venue.Shipped()
	if len(shipped) != len(wants) {
		t.Fatalf("%d shipped profiles, %d expected here: add the new one", len(shipped), len(wants))
	}
	for _, p := range shipped {
		t.Run(p.Name, func(t *testing.T) {
			w, ok := wants[p.Name]
			if !ok {
				t.Fatalf("no expectation for %s", p.Name)
			}
			cfg, err := FromVenue(p, VenueOptions{TimeScale: 60})
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			pl := cfg.Venue
			got := want{cfg.Dedup, pl.DedupWindow, pl.LookupLag, pl.LookupRate, pl.PerRegion, pl.Overrun, cfg.SessionPolicy, cfg.Fence, pl.Lockout}
			// Rates are float: compare rounded to a thousandth.
			got.rate = float64(int(got.rate*1000+0.5)) / 1000
			if got != w {
				t.Fatalf("played\n got  %+v\n want %+v\nmapping: %s", got, w, strings.Join(pl.Mapping, "; "))
			}
			if cfg.Tokens != TokensOff {
				t.Fatalf("tokens %s: no shipped venue checks fencing tokens", cfg.Tokens)
			}
			// The profile a client judges by is the played one: its minimum
			// quarantine covers the played lag.
			if fn := pl.Profile.FalseNegative(); fn != pl.LookupLag {
				t.Fatalf("client profile false negative %v, played lag %v", fn, pl.LookupLag)
			}
			if err := pl.Profile.Validate(); err != nil {
				t.Fatal(err)
			}
			if q := pl.Profile.MinQuarantine(10 * time.Second); pl.CopyHold != 2*q {
				t.Fatalf("CopyHold %v, want twice the client's minimum quarantine %v", pl.CopyHold, q)
			}
		})
	}
}

func TestFromVenueRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    venue.Profile
		o    VenueOptions
		want string
	}{
		{"scale below one", venue.Conservative(), VenueOptions{TimeScale: 0.5}, "TimeScale 0.5"},
		{"negative hold", venue.Conservative(), VenueOptions{CopyHold: -time.Second}, "CopyHold -1s"},
		{"invalid profile", venue.Profile{}, VenueOptions{}, "Name is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromVenue(tc.p, tc.o)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("FromVenue = %v, want ErrInvalidConfig naming %q", err, tc.want)
			}
		})
	}
}

// memBroker starts a broker playing pl on an in-memory network (inside a
// synctest bubble) and returns it with a client and eu's REST URL.
func memBroker(t *testing.T, mutate func(*Config)) (*Broker, *http.Client, string) {
	t.Helper()
	n := faultnet.NewMemNetwork(1, 100*time.Microsecond)
	cfg := testConfig()
	cfg.PlainHTTP = true
	cfg.Listen = func(region string, svc Service) (net.Listener, error) {
		return n.Listen(fmt.Sprintf("%s.%s.sim:80", region, svc))
	}
	mutate(&cfg)
	b, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DialContext: n.Dial}
	t.Cleanup(func() { tr.CloseIdleConnections(); _ = b.Close() })
	return b, &http.Client{Transport: tr}, b.Region("eu").RESTURL()
}

// A booked order answers "not found" for the lookup lag, by ID and in
// listings, then is found.
func TestVenueLookupLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, c, eu := memBroker(t, func(c *Config) { c.Venue = &VenuePlay{LookupLag: 2 * time.Second} })
		if r := mustDo(t, c, http.MethodPost, eu+"/v1/orders", b.APIKey(), marketOrder("lag-1")); r.code != http.StatusCreated {
			t.Fatalf("place: %d %s", r.code, r.body)
		}
		if r := mustDo(t, c, http.MethodGet, eu+"/v1/orders/lag-1", b.APIKey(), nil); r.code != http.StatusNotFound {
			t.Fatalf("lookup within the lag: %d %s", r.code, r.body)
		}
		if r := mustDo(t, c, http.MethodGet, eu+"/v1/orders", b.APIKey(), nil); strings.Contains(string(r.body), "lag-1") {
			t.Fatalf("listing within the lag shows the order: %s", r.body)
		}
		time.Sleep(2 * time.Second)
		if r := mustDo(t, c, http.MethodGet, eu+"/v1/orders/lag-1", b.APIKey(), nil); r.code != http.StatusOK {
			t.Fatalf("lookup after the lag: %d %s", r.code, r.body)
		}
		if r := mustDo(t, c, http.MethodGet, eu+"/v1/orders", b.APIKey(), nil); !strings.Contains(string(r.body), "lag-1") {
			t.Fatalf("listing after the lag lacks the order: %s", r.body)
		}
		lookups := b.Audit().Lookups().Filter(func(r Record) bool { return r.ClientOrderID != "" }) // by ID, not the listings
		if len(lookups) != 2 || lookups[0].Outcome != OutcomeFailed || lookups[1].Outcome != OutcomeOK {
			t.Fatalf("audited lookups %+v", lookups)
		}
	})
}

// A finished order is forgotten by lookups after the venue's retention.
func TestVenueLookupRetention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, c, eu := memBroker(t, func(c *Config) { c.Venue = &VenuePlay{Retention: 5 * time.Second} })
		mustDo(t, c, http.MethodPost, eu+"/v1/orders", b.APIKey(), marketOrder("ret-1")) // fills at once
		mustDo(t, c, http.MethodPost, eu+"/v1/orders", b.APIKey(), limitOrder("ret-open"))
		time.Sleep(4 * time.Second)
		if r := mustDo(t, c, http.MethodGet, eu+"/v1/orders/ret-1", b.APIKey(), nil); r.code != http.StatusOK {
			t.Fatalf("within the retention: %d", r.code)
		}
		time.Sleep(time.Second)
		if r := mustDo(t, c, http.MethodGet, eu+"/v1/orders/ret-1", b.APIKey(), nil); r.code != http.StatusNotFound {
			t.Fatalf("a filled order past the retention: %d", r.code)
		}
		if r := mustDo(t, c, http.MethodGet, eu+"/v1/orders/ret-open", b.APIKey(), nil); r.code != http.StatusOK {
			t.Fatalf("an open order is never forgotten: %d", r.code)
		}
		if _, ok := b.Order("ret-1"); !ok {
			t.Fatal("the book itself forgot the order")
		}
	})
}

// Lookups over the budget get 429 with Retry-After; a venue that bans
// answers 418 to a client that does not back off.
func TestVenueLookupBudget(t *testing.T) {
	for _, tc := range []struct {
		overrun venue.Overrun
		fourth  int
	}{{venue.Throttled, http.StatusTooManyRequests}, {venue.Banned, http.StatusTeapot}} {
		t.Run(tc.overrun.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, c, eu := memBroker(t, func(c *Config) {
					c.Venue = &VenuePlay{LookupRate: 1, LookupBurst: 2, Overrun: tc.overrun, BanFor: 30 * time.Second}
				})
				for i := range 2 {
					if r := mustDo(t, c, http.MethodGet, eu+"/v1/orders/x", b.APIKey(), nil); r.code != http.StatusNotFound {
						t.Fatalf("lookup %d within the burst: %d", i, r.code)
					}
				}
				r := mustDo(t, c, http.MethodGet, eu+"/v1/orders/x", b.APIKey(), nil)
				if r.code != http.StatusTooManyRequests || r.header.Get("Retry-After") != "1" {
					t.Fatalf("third lookup: %d Retry-After %q %s", r.code, r.header.Get("Retry-After"), r.body)
				}
				r = mustDo(t, c, http.MethodGet, eu+"/v1/orders", b.APIKey(), nil)
				if r.code != tc.fourth {
					t.Fatalf("listing while throttled: %d, want %d", r.code, tc.fourth)
				}
				if tc.overrun == venue.Banned {
					if ra, _ := strconv.Atoi(r.header.Get("Retry-After")); ra != 30 {
						t.Fatalf("ban Retry-After %q, want 30", r.header.Get("Retry-After"))
					}
					time.Sleep(10 * time.Second)
					if r := mustDo(t, c, http.MethodGet, eu+"/v1/orders/x", b.APIKey(), nil); r.code != http.StatusTeapot {
						t.Fatalf("lookup during the ban: %d", r.code)
					}
					time.Sleep(21 * time.Second)
				} else {
					time.Sleep(time.Second)
				}
				if r := mustDo(t, c, http.MethodGet, eu+"/v1/orders/x", b.APIKey(), nil); r.code != http.StatusNotFound {
					t.Fatalf("lookup after backing off: %d", r.code)
				}
				if s := b.VenueStats(); s.Throttled < 2 {
					t.Fatalf("VenueStats %+v", s)
				}
			})
		})
	}
}

// With a dedup window a repeat of a client order ID maps to the order only
// within the window; after it, the repeat is a second order. Orders are
// not lookups: the budget does not refuse them.
func TestVenueDedupWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, c, eu := memBroker(t, func(c *Config) {
			c.Dedup = DedupAcrossRegions
			c.Venue = &VenuePlay{DedupWindow: 5 * time.Second, LookupRate: 1, LookupBurst: 1}
		})
		us := b.Region("us").RESTURL()
		for i, want := range []int{http.StatusCreated, http.StatusOK} {
			if r := mustDo(t, c, http.MethodPost, []string{eu, us}[i]+"/v1/orders", b.APIKey(), marketOrder("w-1")); r.code != want {
				t.Fatalf("submission %d: %d, want %d", i, r.code, want)
			}
		}
		time.Sleep(4 * time.Second)
		if r := mustDo(t, c, http.MethodPost, us+"/v1/orders", b.APIKey(), marketOrder("w-1")); r.code != http.StatusOK {
			t.Fatalf("within the window: %d", r.code)
		}
		time.Sleep(time.Second)
		if r := mustDo(t, c, http.MethodPost, us+"/v1/orders", b.APIKey(), marketOrder("w-1")); r.code != http.StatusCreated {
			t.Fatalf("after the window: %d %s", r.code, r.body)
		}
		if n := len(b.Bookings("w-1")); n != 2 {
			t.Fatalf("%d bookings, want 2", n)
		}
	})
}

// A FIX session dropped without a logout locks the identity out: the next
// logon, through any region, is refused. A session that logged out leaves
// nothing behind.
func TestVenueLockoutAfterDrop(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.Venue = &VenuePlay{Lockout: time.Minute} })
	seq := 1
	eu := dialFIX(t, b, "eu", &seq)
	eu.logon(false)
	eu.logout()
	us := dialFIX(t, b, "us", &seq)
	us.logon(false) // a clean logout: no lockout
	_ = us.conn.Close()
	waitFor(t, "the dropped session's end", func() bool { return len(b.Audit().Filter(func(r Record) bool { return r.Kind == KindLogout })) == 2 })
	again := dialFIX(t, b, "eu", &seq)
	again.sendRaw("A", func(bd *quickfix.Body) { bd.SetInt(tag.EncryptMethod, 0); bd.SetInt(tag.HeartBtInt, 5) }, false)
	again.expectClosed()
	refused := b.Audit().Filter(func(r Record) bool { return r.Kind == KindRefused })
	if len(refused) != 1 || !strings.Contains(refused[0].Detail, "locked out") {
		t.Fatalf("refused = %+v", refused)
	}
	if s := b.VenueStats(); s.Lockouts != 1 {
		t.Fatalf("VenueStats %+v", s)
	}
}

// HoldCopies delivers what it held once the hold ends: an order written
// during the hold is booked after it.
func TestHoldCopiesDeliversLate(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.Dedup = DedupNone })
	c := client(t, b, false, 10*time.Second)
	eu := b.Region("eu").RESTURL()
	if r := mustDo(t, c, http.MethodGet, eu+"/v1/orders/warm", b.APIKey(), nil); r.code != http.StatusNotFound {
		t.Fatalf("warm-up: %d", r.code)
	}
	hold := 300 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- b.HoldCopies(context.Background(), "eu", hold, REST) }()
	waitFor(t, "the hold", func() bool { return len(b.Faults()["eu"][REST]) > 0 })
	sent := time.Now()
	r, err := do(c, http.MethodPost, eu+"/v1/orders", b.APIKey(), marketOrder("held-1"))
	if err != nil || r.code != http.StatusCreated {
		t.Fatalf("held order: %v %d", err, r.code)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	o, ok := b.Order("held-1")
	if !ok || o.CreatedAt.Sub(sent) < hold/2 {
		t.Fatalf("booked %v after the send (ok %v), want after the hold", o.CreatedAt.Sub(sent), ok)
	}
	if err := b.HoldCopies(context.Background(), "eu", 0); !errors.Is(err, ErrInvalidFault) {
		t.Fatalf("HoldCopies without a hold: %v", err)
	}
}
