package pathdialer_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// listingVenue is a venue whose lookup budget is Kraken's Starter call
// counter (one request per 3 s, no burst): LookupInterval 12 s, and one
// budget window (3 s) holds less than one lookup, so a re-query through a
// function that looks orders up one by one asks about one order at a time.
func listingVenue(t *testing.T) venue.Profile {
	t.Helper()
	v := noDedupVenue()
	v.LookupBudget = venue.Documented(venue.Budget{Requests: 1, Per: 3 * time.Second, LookupCost: 1, Scope: venue.PerAPIKey, Exceeded: venue.Throttled}, testBrokerDoc, "one request per 3 s, no burst")
	if got := v.LookupInterval(); got != 12*time.Second {
		t.Fatalf("LookupInterval = %v, want 12s", got)
	}
	return v
}

// At a venue reconciled through its order listings (one call answers for
// every order, Config.ReconcileListings), the copies of many orders held by
// the old path and booked when it recovers are all reported within
// MaxCopyHold plus one listing's lookup intervals of their booking: the
// re-query asks about every due order in one call, and the calls keep the
// listing's spacing. Looking them up one order per call, one budget's worth
// at a time, the last would be found a dozen lookup intervals later.
func TestListingRequeryReportsEveryLandingWithinTarget(t *testing.T) {
	for _, requests := range []int{1, 2} { // the simulated broker's one listing; Kraken's OpenOrders + ClosedOrders
		t.Run(fmt.Sprintf("%d requests a listing", requests), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const (
					hold       = 10 * time.Second
					quarantine = 10 * time.Minute
					orders     = 12
				)
				v := listingVenue(t)
				interval := v.LookupInterval()
				bk := &copyBook{}
				h := newHarness(t, func(c *pathdialer.Config) {
					c.Venue, c.MaxCopyHold, c.Quarantine = v, hold, quarantine
					c.Reconcile = bk.reconcile
					c.ReconcileListings = map[string]int{"": requests}
				})
				defer h.close()
				h.start()
				h.probes.set("eu", probeBlackhole)
				var ids []string
				for i := range orders {
					id := fmt.Sprintf("o-%02d", i)
					ids = append(ids, id)
					mustAcquire(t, h.p, id) // in flight when eu goes dark
				}
				rel := h.await(pathdialer.EventRelease, nil)
				for _, id := range ids {
					if v, ok := h.p.Verdict(id); !ok || v.Fate != pathdialer.FateNotReceived || v.Final {
						t.Fatalf("verdict of %s after the switch = %+v, %v; want a provisional NOT_RECEIVED", id, v, ok)
					}
				}
				// eu recovers 25 s later; every copy it held is booked then.
				<-time.After(25 * time.Second)
				h.probes.set("eu", probeOK)
				for _, id := range ids {
					bk.land(id)
				}
				booked := time.Now()
				h.await(pathdialer.EventStateChange, func(e pathdialer.Event) bool { return e.Endpoint == "eu" && e.State == engine.Healthy })
				target := hold + time.Duration(requests)*interval
				reported := map[string]time.Duration{}
				for range orders {
					late := h.await(pathdialer.EventLateLanding, nil)
					reported[late.OrderID] = late.Time.Sub(booked)
				}
				for _, id := range ids {
					d, ok := reported[id]
					switch {
					case !ok:
						t.Errorf("%s: landing not reported", id)
					case d > target:
						t.Errorf("%s booked at +%v, reported %v later: beyond MaxCopyHold + %d lookup interval(s) (%v)", id, booked.Sub(rel.Time), d, requests, target)
					}
				}
				// The listing's spacing: each re-query at least its requests'
				// lookup intervals after the previous one.
				starts := requeryStarts(h.rec.all())
				for i := 1; i < len(starts); i++ {
					if gap := starts[i].Time.Sub(starts[i-1].Time); gap < time.Duration(requests)*interval {
						t.Errorf("re-query %d came %v after the previous: faster than one listing's budget (%v)", i, gap, time.Duration(requests)*interval)
					}
				}
				t.Logf("%d copies booked at +%v, reported within %v (target %v) by %d re-queries", orders, booked.Sub(rel.Time), maxDur(reported), target, len(starts))
			})
		})
	}
}

// Without Config.ReconcileListings a re-query still asks about at most one
// budget window's orders and waits one lookup interval per order: a
// function that looks orders up one by one stays within the budget.
func TestLookupRequeryKeepsPerOrderPacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := listingVenue(t)
		interval := v.LookupInterval()
		bk := &copyBook{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue, c.MaxCopyHold, c.Quarantine = v, 10*time.Second, 10*time.Minute
			c.Reconcile = bk.reconcile
		})
		defer h.close()
		h.start()
		h.probes.set("eu", probeBlackhole)
		for i := range 3 {
			mustAcquire(t, h.p, fmt.Sprintf("o-%d", i))
		}
		h.await(pathdialer.EventRelease, nil)
		<-time.After(2 * time.Minute)
		starts := requeryStarts(h.rec.all())
		if len(starts) < 3 {
			t.Fatalf("%d re-queries in 2 min, want several", len(starts))
		}
		for i, s := range starts {
			if len(s.Tickets) != 1 {
				t.Errorf("re-query %d asked about %d orders; one budget window holds one lookup", i, len(s.Tickets))
			}
			if i > 0 && s.Time.Sub(starts[i-1].Time) < interval {
				t.Errorf("re-query %d came %v after the previous, faster than the budget (%v)", i, s.Time.Sub(starts[i-1].Time), interval)
			}
		}
	})
}

// ReconcileListings is checked at New: a key that names no reconcile
// function, or a listing of no request, is refused naming the field.
func TestReconcileListingsRefusedWhenMalformed(t *testing.T) {
	for _, row := range []struct {
		name string
		edit func(*pathdialer.Config)
		want string
	}{
		{"unknown key", func(c *pathdialer.Config) { c.ReconcileListings = map[string]int{"fix": 1} }, `"fix"`},
		{"zero requests", func(c *pathdialer.Config) { c.ReconcileListings = map[string]int{"": 0} }, "must be >= 1"},
		{"key without Reconcile", func(c *pathdialer.Config) {
			c.ReconcileByService = map[string]pathdialer.ReconcileFunc{"rest": pathdialer.NoReconcile}
			c.Reconcile = nil
			c.ReconcileListings = map[string]int{"": 2}
		}, "Reconcile is nil"},
	} {
		t.Run(row.name, func(t *testing.T) {
			cfg := validConfig()
			row.edit(&cfg)
			_, err := pathdialer.New(cfg)
			wantConfigError(t, err, "ReconcileListings", "", row.want)
		})
	}
	cfg := validConfig()
	cfg.ReconcileByService = map[string]pathdialer.ReconcileFunc{"rest": pathdialer.NoReconcile}
	cfg.ReconcileListings = map[string]int{"rest": 2, "": 1}
	if _, err := pathdialer.New(cfg); err != nil {
		t.Fatalf("New with listings for rest and Reconcile = %v", err)
	}
}

func maxDur(m map[string]time.Duration) (d time.Duration) {
	for _, v := range m {
		d = max(d, v)
	}
	return d
}

// A provisional NOT_RECEIVED that falls due while another re-query's pause
// for the venue's budget runs is asked about in that re-query, early,
// instead of waiting for the pause to end: at a venue looked up one order
// at a time (budget unknown: one lookup a second), seven orders found
// missing first keep the reconciler paused 7 s after each re-query, and an
// order found missing 4 s later, whose copy lands at once, must still be
// reported within MaxCopyHold plus one lookup interval of its booking.
func TestRequeryAsksEarlyAboutOrdersDueDuringItsPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const hold = 10 * time.Second
		v := noDedupVenue()
		interval := v.LookupInterval()
		bk := &copyBook{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue, c.MaxCopyHold, c.Quarantine = v, hold, 10*time.Minute
			c.Reconcile = bk.reconcile
			c.SettleUnknown = 100 * time.Millisecond
		})
		defer h.close()
		h.start()
		for i := range 7 {
			mustAcquire(t, h.p, fmt.Sprintf("o-b%d", i)).Unknown(errReset)
		}
		<-time.After(4 * time.Second)
		mustAcquire(t, h.p, "o-a").Unknown(errReset)
		settled := h.await(pathdialer.EventReconcileSuccess, func(e pathdialer.Event) bool {
			return len(e.Settlements) == 1 && e.Settlements[0].OrderID == "o-a"
		})
		<-time.After(20 * time.Millisecond)
		bk.land("o-a")
		booked := time.Now()
		late := h.await(pathdialer.EventLateLanding, nil)
		if late.OrderID != "o-a" {
			t.Fatalf("late landing = %v", late)
		}
		if d := late.Time.Sub(booked); d > hold+interval {
			t.Errorf("o-a, found missing at %s and booked 20ms later, reported %v after its booking: beyond MaxCopyHold + one lookup interval (%v)", settled.Time.Format("15:04:05.000"), d, hold+interval)
		}
		starts := requeryStarts(h.rec.all())
		for i := 1; i < len(starts); i++ {
			if gap, need := starts[i].Time.Sub(starts[i-1].Time), time.Duration(len(starts[i-1].Tickets))*interval; gap < need {
				t.Errorf("re-query %d came %v after one that asked about %d orders: faster than the budget (%v)", i, gap, len(starts[i-1].Tickets), need)
			}
		}
		t.Logf("reported %v after its booking by %d re-queries", late.Time.Sub(booked), len(starts))
	})
}
