package pathdialer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// testBrokerDoc stands for the contract of the brokers these tests imagine
// (the fake books below): the facts are the test's own, not a real venue's.
const testBrokerDoc = "https://brokerpath.invalid/test-broker"

// labVenue is the broker the verdict tests imagine: its lookups are exact at
// once (false-negative horizon 0), it refuses a duplicate client order ID in
// every state for ever, and it has a kill switch. With it the minimum
// quarantine is MaxCopyHold alone, and a final NOT_RECEIVED may be resent.
func labVenue() venue.Profile {
	p := venue.Conservative()
	p.Name, p.Scope = "test-broker", "the fake books of pathdialer's tests"
	p.LookupFalseNegative = venue.Documented(time.Duration(0), testBrokerDoc, "an order is visible to lookups as soon as it is booked")
	p.DedupScope = venue.Documented(venue.DedupAllStates, testBrokerDoc, "a client order ID is refused once used, in every state")
	p.DedupWindow = venue.Documented(venue.Forever, testBrokerDoc, "used client order IDs are never forgotten")
	p.BrokerFence = venue.Documented(venue.FenceKillSwitch, testBrokerDoc, "the kill switch disables the old path's sessions")
	return p
}

// noDedupVenue is a broker like cmd/simbroker -dedup none: exact lookups, but
// no check of client order IDs (a copy is a second order) and no fence.
func noDedupVenue() venue.Profile {
	p := venue.Conservative()
	p.Name, p.Scope = "test-broker-no-dedup", "a fake book that books every copy"
	p.LookupFalseNegative = venue.Documented(time.Duration(0), testBrokerDoc, "an order is visible to lookups as soon as it is booked")
	p.DedupScope = venue.Documented(venue.DedupNone, testBrokerDoc, "client order IDs are not checked for duplicates")
	p.BrokerFence = venue.Documented(venue.FenceNone, testBrokerDoc, "several sessions may submit at once")
	return p
}

func venueConfig(edit func(*pathdialer.Config)) pathdialer.Config {
	cfg := baseConfig()
	cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	edit(&cfg)
	return cfg
}

// A quarantine shorter than the venue's false-negative horizon plus
// MaxCopyHold is refused at New, naming the venue fact; 0 takes that minimum.
func TestVenueQuarantineRefusedBelowTheVenuesMinimum(t *testing.T) {
	binance, err := venue.ByName("binance-spot")
	if err != nil {
		t.Fatal(err)
	}
	bad := venue.Conservative()
	bad.Name = "half-described"
	bad.LookupFalseNegative = venue.Fact[time.Duration]{Value: time.Second, Source: venue.Source{Basis: venue.BasisDocumented}}
	for _, tc := range []struct {
		name string
		edit func(*pathdialer.Config)
		want []string // in the error; nil: accepted
	}{
		{"conservative default, 10 s", func(c *pathdialer.Config) { c.Quarantine = 10 * time.Second },
			[]string{"Quarantine is 10s, shorter than the venue's minimum 15m10s", "conservative does not document how long a lookup may wrongly answer \"not found\"", "MaxCopyHold (10s)"}},
		{"conservative default, 0", func(c *pathdialer.Config) { c.Quarantine = 0 }, nil},
		{"conservative, exactly the minimum", func(c *pathdialer.Config) { c.Quarantine = 15*time.Minute + 10*time.Second }, nil},
		{"binance spot, 5 min", func(c *pathdialer.Config) { c.Venue, c.Quarantine = binance, 5*time.Minute },
			[]string{"binance-spot's lookups may answer \"not found\" for " + binance.FalseNegative().String(), binance.LookupFalseNegative.URL}},
		{"test venue, copies held 2 s", func(c *pathdialer.Config) {
			c.Venue, c.MaxCopyHold, c.Quarantine = labVenue(), 2*time.Second, 2*time.Second
		}, nil},
		{"test venue, default hold", func(c *pathdialer.Config) { c.Venue, c.Quarantine = labVenue(), 2*time.Second }, []string{"minimum 10s"}},
		{"negative hold", func(c *pathdialer.Config) { c.MaxCopyHold = -time.Second }, []string{"MaxCopyHold is -1s"}},
		{"negative quarantine", func(c *pathdialer.Config) { c.Quarantine = -time.Second }, []string{"Quarantine is -1s"}},
		{"invalid profile", func(c *pathdialer.Config) { c.Venue = bad }, []string{"Venue:", "LookupFalseNegative is documented but has no source URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pathdialer.New(venueConfig(tc.edit))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if !errors.Is(err, pathdialer.ErrInvalidConfig) {
				t.Fatalf("New = %v, want ErrInvalidConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// With the conservative default a NOT_RECEIVED waits the venue's minimum
// (15 min + MaxCopyHold), and a BrokerFencesViaFencer the venue is not known to make
// does not make it final: the detail says why.
func TestConservativeVenueKeepsNotReceivedProvisional(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &book{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Quarantine = 0
			c.BrokerFencesViaFencer = true
			c.Reconcile = b.reconcile
		})
		defer h.close()
		h.start()
		mustAcquire(t, h.p, "o-1")
		h.probes.set("eu", probeBlackhole)
		ok := h.await(pathdialer.EventReconcileSuccess, nil)
		s := settlementOf(t, ok, "o-1")
		if s.Final || !s.Provisional || !strings.Contains(s.Detail, "a broker fence is claimed but conservative's fence is unknown") {
			t.Fatalf("settlement = %+v, want provisional, saying the venue's fence is unknown", s)
		}
		r, err := h.p.MayResend("o-1")
		if err != nil || r.Allowed || r.Verdict.RequeryAt.Sub(r.Verdict.FoundAt) != pathdialer.DefaultMaxCopyHold {
			t.Fatalf("MayResend = %+v, %v; want an early look MaxCopyHold (10s) after the verdict", r, err)
		}
		// Early looks that find nothing leave it provisional until the
		// quarantine's end (15 min + MaxCopyHold).
		time.Sleep(15 * time.Minute)
		if v, _ := h.p.Verdict("o-1"); v.Final {
			t.Fatalf("final before the quarantine ended: %+v", v)
		}
		time.Sleep(20 * time.Second)
		if v, _ := h.p.Verdict("o-1"); !v.Final || v.FinalAt.Sub(v.FoundAt) < 15*time.Minute+10*time.Second {
			t.Fatalf("verdict %+v: want final 15m10s after it was found", v)
		}
	})
}
