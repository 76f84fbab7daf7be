package pathdialer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// When the open-order reconcile reads the venue and when a verdict is
// final: a cancel-on-disconnect the venue applies late, an order the
// switch's own reconcile settled resting, two fences in a row.

// cancelledEvents returns the EventRestingCancelled events, by order ID.
func cancelledEvents(evs []pathdialer.Event) map[string]pathdialer.Event {
	out := map[string]pathdialer.Event{}
	for _, e := range evs {
		if e.Kind == pathdialer.EventRestingCancelled {
			out[e.OrderID] = e
		}
	}
	return out
}

// A venue that detects the drop by a missed heartbeat cancels the old
// connection's orders about 2.4 × HeartBtInt after its last message: with
// HeartBtInt 2 s, at +4.8 s, after the read CODSettle (2 s) after the
// fence. The connection declared it (Conn.SetCODWithin: 5.5 s), so the
// venue is read again then and the cancel is reported as that switch's.
func TestOpenOrdersReadAgainWhenALateCancelIsDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, led := newRestingBook(), &ledger{}
		h := flattenHarness(t, venue.Deribit(), 2*time.Second, pathdialer.ServiceFIX, bk, led, true, nil)
		defer h.close()
		var fencedAt time.Time
		h.hooks.onFence = func(f pathdialer.Fence) {
			fencedAt = time.Now()
			time.AfterFunc(4800*time.Millisecond, func() { bk.drop(f.Endpoint.Name, false) })
		}
		led.add("a", "eu")
		bk.place("a", "eu")
		h.start()
		conn, err := h.p.Dial(context.Background(), pathdialer.ServiceFIX)
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		conn.SetCODWithin(5500 * time.Millisecond) // 2.5 × HeartBtInt 2 s + 500 ms
		reportDown(h.p, "eu", 0)
		rc := h.await(pathdialer.EventRestingCancelled, nil)
		if rc.OrderID != "a" || rc.From != "eu" || rc.To != "us" || rc.Token != 1 {
			t.Fatalf("resting-cancelled %v: want order a, cancelled by the switch eu→us (token 1)", rc)
		}
		if !strings.Contains(rc.Cause, "cancel-on-disconnect") || strings.Contains(rc.Cause, "should have kept") {
			t.Fatalf("cause %q: want the switch's cancel-on-disconnect", rc.Cause)
		}
		if n := len(bk.reads); n != 2 || bk.reads[0].Sub(fencedAt) < 2*time.Second || bk.reads[1].Sub(fencedAt) < 5500*time.Millisecond {
			t.Fatalf("venue read at %v (fence at %v): want twice, CODSettle and the declared 5.5 s after the fence", bk.reads, fencedAt)
		}
		if s := h.p.Snapshot(); s.RestingCancelled != 1 {
			t.Fatalf("Snapshot().RestingCancelled = %d, want 1", s.RestingCancelled)
		}
	})
}

// At a profile-wide venue the late cancel also takes the order placed
// through the new path after the release: both are reported, each as
// cancelled by the switch that left eu (its From and token), not by a later
// one and not as an unexplained cancel.
func TestOpenOrdersLateProfileWideCancelNamesTheSwitchThatCausedIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, led := newRestingBook(), &ledger{}
		h := flattenHarness(t, venue.CoinbaseExchangeFIX(), time.Second, pathdialer.ServiceFIX, bk, led, false, nil)
		defer h.close()
		h.hooks.onFence = func(f pathdialer.Fence) {
			time.AfterFunc(2400*time.Millisecond, func() { bk.drop(f.Endpoint.Name, true) })
		}
		led.add("a", "eu")
		bk.place("a", "eu")
		h.start()
		conn, err := h.p.Dial(context.Background(), pathdialer.ServiceFIX)
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		conn.SetCODWithin(3 * time.Second) // HeartBtInt 1 s
		reportDown(h.p, "eu", 0)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		// The re-quote through the new path, before the venue's late cancel.
		led.add("b", "us")
		bk.place("b", "us")
		h.await(pathdialer.EventRestingCancelled, nil)
		h.await(pathdialer.EventRestingCancelled, nil)
		synctest.Wait()
		got := cancelledEvents(h.rec.all())
		for _, id := range []string{"a", "b"} {
			e, ok := got[id]
			if !ok || e.From != "eu" || e.To != "us" || e.Token != 1 || strings.Contains(e.Cause, "should have kept") {
				t.Fatalf("order %s: resting-cancelled %+v (found %v); want it, from the switch eu→us (token 1), by its cancel-on-disconnect", id, e, ok)
			}
		}
	})
}

// A switch whose reconcile outlasts CODSettle settles the order in flight
// RESTING from what the old connection said before the fence, and the
// open-order read starts at the release, before the application has
// recorded that order: the read includes it, so its cancel by the fence's
// cancel-on-disconnect is reported.
func TestOpenOrdersIncludeWhatTheSwitchSettledResting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, led := newRestingBook(), &ledger{}
		h := flattenHarness(t, venue.Deribit(), 500*time.Millisecond, pathdialer.ServiceREST, bk, led, true, func(c *pathdialer.Config) {
			c.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
				time.Sleep(1040 * time.Millisecond) // a FIX reconcile waiting for the logon
				var out []pathdialer.Settlement
				for _, tk := range r.Tickets {
					out = append(out, pathdialer.Settlement{OrderID: tk.OrderID, Service: tk.Service, Fate: pathdialer.FateResting, Detail: "the old connection's last execution report"})
				}
				return out, nil
			}
		})
		defer h.close()
		h.hooks.onFence = func(f pathdialer.Fence) { bk.drop(f.Endpoint.Name, false) }
		h.start()
		tk := mustAcquire(t, h.p, "x") // in flight on eu; the venue books it there
		bk.place("x", "eu")
		reportDown(h.p, "eu", 0)
		rec := h.await(pathdialer.EventReconcileSuccess, nil)
		if !slices.ContainsFunc(rec.Settlements, func(s pathdialer.Settlement) bool { return s.OrderID == "x" && s.Fate == pathdialer.FateResting }) {
			t.Fatalf("reconcile %v: want x settled RESTING", rec.Settlements)
		}
		e := h.await(pathdialer.EventOpenOrderDiff, nil)
		rc, ok := cancelledEvents(h.rec.all())["x"]
		if !ok || rc.From != "eu" || rc.To != "us" {
			t.Fatalf("open orders %v, resting-cancelled %+v (found %v): want x reported cancelled by the switch eu→us", e, rc, ok)
		}
		tk.Done()
	})
}

// Two fences within CODSettle (eu left for us, then us for ap): each is
// judged. The order placed through us, cancelled by leaving us, is
// cancelled by that switch (From us), not "unknown to the venue", and
// counted.
func TestOpenOrdersTwoFencesEachJudged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, led := newRestingBook(), &ledger{}
		epAP := pathdialer.Endpoint{Name: "ap", Region: "ap-northeast-1", Priority: 20,
			Services: map[string]string{"rest": "https://api-ap.broker.example", "fix": "fix-ap.broker.example:9878"}}
		h := flattenHarness(t, venue.Deribit(), 5*time.Second, pathdialer.ServiceREST, bk, led, false, func(c *pathdialer.Config) {
			c.Endpoints = append(c.Endpoints, epAP)
		})
		defer h.close()
		h.hooks.onFence = func(f pathdialer.Fence) { bk.drop(f.Endpoint.Name, false) }
		led.add("a", "eu")
		bk.place("a", "eu")
		led.add("b", "us")
		bk.place("b", "us")
		h.start()
		h.probes.set("eu", probeFail)
		reportDown(h.p, "eu", 0)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		reportDown(h.p, "us", 1)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "ap" })
		e := h.await(pathdialer.EventOpenOrderDiff, func(e pathdialer.Event) bool { return e.Err == nil })
		want := map[string]string{"a": "cancelled-by-switch(presumed)", "b": "cancelled-by-switch(presumed)"}
		if got := diffCauses(e.Diffs); !mapsEqual(got, want) {
			t.Fatalf("diffs %v, want %v", got, want)
		}
		synctest.Wait()
		got := cancelledEvents(h.rec.all())
		if a, b := got["a"], got["b"]; a.From != "eu" || a.To != "us" || b.From != "us" || b.To != "ap" {
			t.Fatalf("resting-cancelled a %+v, b %+v: want a from the switch eu→us, b from us→ap", a, b)
		}
		if s := h.p.Snapshot(); s.RestingCancelled != 2 {
			t.Fatalf("Snapshot().RestingCancelled = %d, want 2", s.RestingCancelled)
		}
	})
}

// A connection the outage cut before the fence (its session already gone)
// still has its venue's late cancel due: the venue is read again when it is.
func TestOpenOrdersReadAgainForAConnectionCutBeforeTheFence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, led := newRestingBook(), &ledger{}
		h := flattenHarness(t, venue.Deribit(), time.Second, pathdialer.ServiceFIX, bk, led, true, nil)
		defer h.close()
		led.add("a", "eu")
		bk.place("a", "eu")
		h.start()
		conn, err := h.p.Dial(context.Background(), pathdialer.ServiceFIX)
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		conn.SetCODWithin(5500 * time.Millisecond)
		_ = conn.Close() // the outage cuts it; the venue cancels 4.8 s later
		time.AfterFunc(4800*time.Millisecond, func() { bk.drop("eu", false) })
		time.Sleep(500 * time.Millisecond)
		reportDown(h.p, "eu", 0)
		rc := h.await(pathdialer.EventRestingCancelled, nil)
		if rc.OrderID != "a" || rc.From != "eu" || rc.To != "us" {
			t.Fatalf("resting-cancelled %v: want order a, cancelled by the switch eu→us", rc)
		}
	})
}

// An order the first read found open but not yet in the application's
// record (placed just before it) and the late cancel took since is
// reported by the second read: only what the first read said is left out.
func TestOpenOrdersRecheckReportsAnOrderFirstSeenNotOurs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, led := newRestingBook(), &ledger{}
		h := flattenHarness(t, venue.CoinbaseExchangeFIX(), time.Second, pathdialer.ServiceFIX, bk, led, true, nil)
		defer h.close()
		h.hooks.onFence = func(f pathdialer.Fence) {
			time.AfterFunc(2400*time.Millisecond, func() { bk.drop(f.Endpoint.Name, true) })
		}
		h.start()
		conn, err := h.p.Dial(context.Background(), pathdialer.ServiceFIX)
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		conn.SetCODWithin(3 * time.Second)
		reportDown(h.p, "eu", 0)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		bk.place("n", "us") // booked; the application records it after the first read
		first := h.await(pathdialer.EventOpenOrderDiff, nil)
		if got := diffCauses(first.Diffs); got["n"] != "not-ours" {
			t.Fatalf("first read %v: want n open at the venue, not in the record yet", got)
		}
		led.add("n", "us")
		rc := h.await(pathdialer.EventRestingCancelled, nil)
		if rc.OrderID != "n" || rc.From != "eu" {
			t.Fatalf("resting-cancelled %v: want n, cancelled by the switch that left eu", rc)
		}
	})
}

// An order whose outcome was unknown is settled RESTING on the active
// endpoint by a reconcile that belongs to no switch (settling unknown
// outcomes), and the application has not recorded it (its call has not
// returned). A later switch's fence cancels it: the open-order read of that
// switch includes it, so the cancel is reported as that switch's.
func TestOpenOrdersIncludeWhatASettleWithoutSwitchSettledResting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, led := newRestingBook(), &ledger{}
		h := flattenHarness(t, venue.Deribit(), 500*time.Millisecond, pathdialer.ServiceREST, bk, led, true, func(c *pathdialer.Config) {
			c.SettleUnknown = 200 * time.Millisecond
			c.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
				var out []pathdialer.Settlement
				for _, tk := range r.Tickets {
					out = append(out, pathdialer.Settlement{OrderID: tk.OrderID, Service: tk.Service, Fate: pathdialer.FateResting, Detail: "the venue lists it open"})
				}
				return out, nil
			}
		})
		defer h.close()
		h.hooks.onFence = func(f pathdialer.Fence) { bk.drop(f.Endpoint.Name, false) }
		h.start()
		tk := mustAcquire(t, h.p, "x")
		bk.place("x", "eu")
		tk.Unknown(errors.New("connection cut after the write"))
		st := h.await(pathdialer.EventReconcileSuccess, func(e pathdialer.Event) bool { return e.From == "eu" && e.To == "eu" })
		if !slices.ContainsFunc(st.Settlements, func(s pathdialer.Settlement) bool { return s.OrderID == "x" && s.Fate == pathdialer.FateResting }) {
			t.Fatalf("settle %q %v: want x settled RESTING", st.Cause, st.Settlements)
		}
		reportDown(h.p, "eu", 0)
		e := h.await(pathdialer.EventOpenOrderDiff, nil)
		rc, ok := cancelledEvents(h.rec.all())["x"]
		if !ok || rc.From != "eu" || rc.To != "us" {
			t.Fatalf("open orders %v, resting-cancelled %+v (found %v): want x reported cancelled by the switch eu→us", e.Diffs, rc, ok)
		}
	})
}

// flattenHarness is a harness on venue v in flatten mode with CODSettle
// settle, whose open-order check of service compares led with bk (its list
// reporting closed orders when reportClosed); edit, if not nil, changes the
// rest of the configuration.
func flattenHarness(t *testing.T, v venue.Profile, settle time.Duration, service string, bk *restingBook, led *ledger, reportClosed bool, edit func(*pathdialer.Config)) *harness {
	return newHarness(t, func(c *pathdialer.Config) {
		c.Venue = v
		c.FenceMode = pathdialer.FenceFlatten
		c.CODSettle = settle
		c.OpenOrders = map[string]pathdialer.OpenOrderCheck{
			service: {Ours: led.ours, Venue: bk.list(reportClosed)},
		}
		if edit != nil {
			edit(c)
		}
	})
}

// An order first found not received, and booked after all (a late landing
// a re-query of the provisional verdict finds RESTING), is not in the
// application's record: the application was told it did not reach the
// venue. A later fence that cancels it must still report it cancelled, so
// the re-query's RESTING is read with the open orders like a switch's.
func TestOpenOrdersIncludeWhatARequerySettledResting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, led := newRestingBook(), &ledger{}
		h := flattenHarness(t, venue.Deribit(), 500*time.Millisecond, pathdialer.ServiceREST, bk, led, true, func(c *pathdialer.Config) {
			c.SettleUnknown = 200 * time.Millisecond
			c.MaxCopyHold = 2 * time.Second
			c.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
				var out []pathdialer.Settlement
				for _, tk := range r.Tickets {
					s := pathdialer.Settlement{OrderID: tk.OrderID, Service: tk.Service, Fate: pathdialer.FateNotReceived, Detail: "the venue has no record of it"}
					if r.Reason == pathdialer.ReasonRequery {
						s.Fate, s.Detail = pathdialer.FateResting, "the venue lists it open"
					}
					out = append(out, s)
				}
				return out, nil
			}
		})
		defer h.close()
		h.hooks.onFence = func(f pathdialer.Fence) { bk.drop(f.Endpoint.Name, false) }
		h.start()
		tk := mustAcquire(t, h.p, "x")
		tk.Unknown(errors.New("connection cut after the write"))
		st := h.await(pathdialer.EventReconcileSuccess, func(e pathdialer.Event) bool { return e.Cause != pathdialer.ReasonRequery })
		if !slices.ContainsFunc(st.Settlements, func(s pathdialer.Settlement) bool {
			return s.OrderID == "x" && s.Fate == pathdialer.FateNotReceived && s.Provisional
		}) {
			t.Fatalf("settle %q %v: want x provisionally NOT_RECEIVED", st.Cause, st.Settlements)
		}
		bk.place("x", "eu") // the held copy lands
		late := h.await(pathdialer.EventLateLanding, nil)
		if late.OrderID != "x" {
			t.Fatalf("late landing %+v: want x", late)
		}
		reportDown(h.p, "eu", 0)
		e := h.await(pathdialer.EventOpenOrderDiff, nil)
		rc, ok := cancelledEvents(h.rec.all())["x"]
		if !ok || rc.From != "eu" || rc.To != "us" {
			t.Fatalf("open orders %v, resting-cancelled %+v (found %v): want x, booked late through eu, reported cancelled by the switch eu→us", e.Diffs, rc, ok)
		}
	})
}
