package pathdialer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// restingBook is an in-memory venue stand-in: each order, the endpoint it was
// placed through and its state; reads counts the open-order queries and when
// they came.
type restingBook struct {
	mu     sync.Mutex
	orders map[string]*restingOrder
	reads  []time.Time
	fail   error
}

type restingOrder struct {
	via    string
	state  pathdialer.VenueOrderState
	symbol string
}

func newRestingBook() *restingBook { return &restingBook{orders: map[string]*restingOrder{}} }

func (b *restingBook) place(id, via string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.orders[id] = &restingOrder{via: via, state: pathdialer.VenueOpen, symbol: "BTC-PERP"}
}

func (b *restingBook) setState(id string, s pathdialer.VenueOrderState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.orders[id].state = s
}

// drop applies cancel-on-disconnect for endpoint left: the orders placed
// through it (connection or session scope), or every open order.
func (b *restingBook) drop(left string, everyOrder bool) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var gone []string
	for id, o := range b.orders {
		if o.state == pathdialer.VenueOpen && (everyOrder || o.via == left) {
			o.state = pathdialer.VenueCancelled
			gone = append(gone, id)
		}
	}
	slices.Sort(gone)
	return gone
}

// list answers like a REST open-orders endpoint that also reports the state
// of the orders asked about (reportClosed) or only the open ones.
func (b *restingBook) list(reportClosed bool) func(context.Context, pathdialer.OpenOrderQuery) ([]pathdialer.VenueOrder, error) {
	return func(ctx context.Context, q pathdialer.OpenOrderQuery) ([]pathdialer.VenueOrder, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.reads = append(b.reads, time.Now())
		if b.fail != nil {
			return nil, b.fail
		}
		var out []pathdialer.VenueOrder
		for id, o := range b.orders {
			if o.state == pathdialer.VenueOpen || reportClosed {
				out = append(out, pathdialer.VenueOrder{OrderID: id, Symbol: o.symbol, State: o.state})
			}
		}
		if reportClosed {
			for _, mine := range q.Ours {
				if _, ok := b.orders[mine.OrderID]; !ok {
					out = append(out, pathdialer.VenueOrder{OrderID: mine.OrderID, State: pathdialer.VenueNotFound})
				}
			}
		}
		return out, nil
	}
}

// ledger is the application's own record of its open orders.
type ledger struct {
	mu   sync.Mutex
	open []pathdialer.OpenOrder
}

func (l *ledger) add(id, via string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open = append(l.open, pathdialer.OpenOrder{OrderID: id, Symbol: "BTC-PERP", Endpoint: via})
}

func (l *ledger) ours(context.Context, string) ([]pathdialer.OpenOrder, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.open), nil
}

func diffCauses(ds []pathdialer.OrderDiff) map[string]string {
	out := map[string]string{}
	for _, d := range ds {
		c := d.Cause.String()
		if d.Presumed {
			c += "(presumed)"
		}
		out[d.OrderID] = c
	}
	return out
}

// After every switch the application's open orders are compared with the
// venue's, CODSettle after the fence, and each difference is reported with
// its cause; every order the switch cancelled gets its own event and is
// counted.
func TestOpenOrdersReconciledAfterASwitch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, led := newRestingBook(), &ledger{}
		var fencedAt time.Time
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue = venue.Deribit()
			c.FenceMode = pathdialer.FenceFlatten
			c.CODSettle = 3 * time.Second
			c.OpenOrders = map[string]pathdialer.OpenOrderCheck{
				pathdialer.ServiceFIX: {Ours: led.ours, Venue: bk.list(true)},
			}
		})
		defer h.close()
		h.hooks.onFence = func(f pathdialer.Fence) {
			fencedAt = time.Now()
			bk.drop(f.Endpoint.Name, false) // Deribit: the connection's orders
		}
		// a: rests, placed on eu (cancelled by the switch); b: filled
		// meanwhile; c: placed on us before (kept); e: the venue never had
		// it; z: open at the venue, not in the application's record.
		for _, o := range []struct{ id, via string }{{"a", "eu"}, {"b", "eu"}, {"c", "us"}, {"e", "eu"}} {
			led.add(o.id, o.via)
			if o.id != "e" {
				bk.place(o.id, o.via)
			}
		}
		bk.place("z", "us")
		bk.setState("b", pathdialer.VenueFilled)
		h.start()
		reportDown(h.p, "eu", 0)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		e := h.await(pathdialer.EventOpenOrderDiff, nil)
		if e.Err != nil || e.Service != pathdialer.ServiceFIX || e.From != "eu" || e.To != "us" {
			t.Fatalf("open-orders event %v: want fix's reconcile eu→us", e)
		}
		want := map[string]string{"a": "cancelled-by-switch", "b": "filled", "e": "unknown-to-venue", "z": "not-ours"}
		if got := diffCauses(e.Diffs); !mapsEqual(got, want) {
			t.Fatalf("diffs %v, want %v", got, want)
		}
		if len(bk.reads) != 1 || bk.reads[0].Sub(fencedAt) < 3*time.Second {
			t.Fatalf("venue read at %v after the fence, want once, at least CODSettle (3 s) after it", bk.reads)
		}
		rc := h.await(pathdialer.EventRestingCancelled, nil)
		if rc.OrderID != "a" || rc.Service != pathdialer.ServiceFIX || !strings.Contains(rc.Cause, "cancel-on-disconnect") {
			t.Fatalf("resting-cancelled %v: want order a, naming cancel-on-disconnect", rc)
		}
		synctest.Wait()
		if n := countKind(h.rec.all(), pathdialer.EventRestingCancelled); n != 1 {
			t.Fatalf("%d resting-cancelled events, want 1", n)
		}
		s := h.p.Snapshot()
		if s.RestingCancelled != 1 || len(s.OpenOrders) != 1 || s.OpenOrders[0].Ours != 4 || s.OpenOrders[0].Open != 2 || len(s.OpenOrders[0].Diffs) != 4 {
			t.Fatalf("Snapshot: resting_cancelled %d, open_orders %+v; want 1 and fix's report (4 ours, 2 open, 4 diffs)", s.RestingCancelled, s.OpenOrders)
		}
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A venue that lists only open orders: an order gone from the list is
// presumed cancelled where the fence mode's cancel-on-disconnect reaches it
// (and says so), and unknown to the venue where it does not.
func TestOpenOrdersPresumedFromTheFenceEffect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, led := newRestingBook(), &ledger{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue = venue.Deribit()
			c.FenceMode = pathdialer.FenceFlatten
			c.OpenOrders = map[string]pathdialer.OpenOrderCheck{
				pathdialer.ServiceREST: {Ours: led.ours, Venue: bk.list(false)},
			}
		})
		defer h.close()
		h.hooks.onFence = func(f pathdialer.Fence) { bk.drop(f.Endpoint.Name, false) }
		led.add("a", "eu")
		bk.place("a", "eu")
		led.add("c", "us") // gone for a reason the switch does not explain
		h.start()
		reportDown(h.p, "eu", 0)
		e := h.await(pathdialer.EventOpenOrderDiff, nil)
		got := diffCauses(e.Diffs)
		if want := map[string]string{"a": "cancelled-by-switch(presumed)", "c": "unknown-to-venue"}; !mapsEqual(got, want) {
			t.Fatalf("diffs %v, want %v", got, want)
		}
		for _, d := range e.Diffs {
			if d.OrderID == "a" && !strings.Contains(d.Detail, "did not say whether it filled") {
				t.Fatalf("presumed cancel %q does not say a fill is not excluded", d.Detail)
			}
		}
	})
}

// A venue that cannot be read: the reconcile is retried, then reported as a
// failure (event and Snapshot), never as "no difference"; submissions were
// never held for it.
func TestOpenOrdersFailureIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, led := newRestingBook(), &ledger{}
		bk.fail = errors.New("GET /open_orders: 429 too many requests")
		h := newHarness(t, func(c *pathdialer.Config) {
			c.ReconcileAttempts = 3
			c.OpenOrders = map[string]pathdialer.OpenOrderCheck{
				pathdialer.ServiceREST: {Ours: led.ours, Venue: bk.list(true)},
			}
		})
		defer h.close()
		led.add("a", "eu")
		h.start()
		reportDown(h.p, "eu", 0)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		if st := gateState(h.p); st != pathdialer.GateOpen {
			t.Fatalf("gate %v after the release, want open while open orders are read", st)
		}
		e := h.await(pathdialer.EventOpenOrderDiff, nil)
		if e.Err == nil || !strings.Contains(e.Err.Error(), "429") || e.Attempt != 3 || len(bk.reads) != 3 {
			t.Fatalf("event %v after %d reads: want the venue's error after 3 attempts", e, len(bk.reads))
		}
		if s := h.p.Snapshot(); len(s.OpenOrders) != 1 || !strings.Contains(s.OpenOrders[0].Error, "not reconciled") {
			t.Fatalf("Snapshot().OpenOrders = %+v, want the failure", s.OpenOrders)
		}
	})
}

// A reconcile superseded (here by a halt: nowhere to send orders) is
// reported so and runs again after the next release, although that release
// (a resume on the same endpoint) follows no fence of its own.
func TestOpenOrdersSupersededRunAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, led := newRestingBook(), &ledger{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.CODSettle = time.Minute
			c.OpenOrders = map[string]pathdialer.OpenOrderCheck{
				pathdialer.ServiceREST: {Ours: led.ours, Venue: bk.list(true)},
			}
		})
		defer h.close()
		h.start()
		h.probes.set("eu", probeFail)
		reportDown(h.p, "eu", 0)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		// Within CODSettle, us fails too: nowhere to go, a halt.
		h.probes.set("us", probeFail)
		reportDown(h.p, "us", 1)
		e := h.await(pathdialer.EventOpenOrderDiff, nil)
		if !strings.Contains(e.Error, "superseded") {
			t.Fatalf("first open-orders event %v, want superseded", e)
		}
		h.await(pathdialer.EventHalt, nil)
		h.probes.set("us", probeOK)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		e = h.await(pathdialer.EventOpenOrderDiff, nil)
		if e.Err != nil || e.From != "eu" || e.To != "us" || len(bk.reads) != 1 {
			t.Fatalf("event %v with %d read(s), want the reconcile owed for the fence of eu, on us", e, len(bk.reads))
		}
	})
}
