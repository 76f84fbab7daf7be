package orderflow

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// A broker playing Kraken spot (one lookup per 3 s, no burst; venue time 60
// times faster): the book reconcile reads the venue's order listing once for
// every order, paced within the venue's budget, so reconciles of 22 orders
// back to back each finish within the client's reconcile timeout and none is
// throttled. One lookup per order, each meeting a 429, took over 10 s.
func TestBookReconcileListsWithinTheVenuesBudget(t *testing.T) {
	cfg, err := simbroker.FromVenue(venue.KrakenSpot(), simbroker.VenueOptions{TimeScale: 60})
	if err != nil {
		t.Fatal(err)
	}
	cfg.TickInterval = 25 * time.Millisecond
	cfg.Streams = []string{"px.EURUSD"}
	cfg.ClientCompID = "OFKRAKEN"
	cfg.Venue.LookupLag = 0 // the orders placed here are visible at once
	b, err := simbroker.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ocfg := FromSimBroker(b)
	ocfg.Timing.Quarantine = 0 // the venue's minimum
	c, err := New(ocfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	rc := pathdialer.Reconciliation{From: "eu", To: "eu", Reason: "test", Attempt: 1}
	for _, id := range []string{"booked-1", "booked-2"} {
		if err := c.PlaceREST(ctx, id); err != nil {
			t.Fatalf("place %s: %v", id, err)
		}
		rc.Tickets = append(rc.Tickets, pathdialer.TicketInfo{OrderID: id, Service: REST, Endpoint: "eu", State: pathdialer.TicketUnknown})
	}
	for i := range 20 {
		rc.Tickets = append(rc.Tickets, pathdialer.TicketInfo{OrderID: fmt.Sprintf("never-%d", i), Service: REST, Endpoint: "eu", State: pathdialer.TicketUnknown})
	}
	timeout := DefaultTiming().ReconcileTimeout
	for round := range 3 {
		rctx, rcancel := context.WithTimeout(ctx, timeout)
		ss, err := c.reconcileBook(rctx, rc, REST)
		rcancel()
		if err != nil {
			t.Fatalf("round %d: reconcileBook within %v: %v", round, timeout, err)
		}
		if len(ss) != len(rc.Tickets) {
			t.Fatalf("round %d: %d settlements, want %d", round, len(ss), len(rc.Tickets))
		}
		for _, s := range ss {
			booked := strings.HasPrefix(s.OrderID, "booked-")
			if booked == (s.Fate == pathdialer.FateNotReceived) {
				t.Fatalf("round %d: settlement %+v", round, s)
			}
			if booked && !strings.Contains(s.Detail, "booked through ") {
				t.Fatalf("round %d: settlement %+v does not name the region", round, s)
			}
		}
	}
	if st := b.VenueStats(); st.Throttled != 0 {
		t.Fatalf("%d lookups throttled: the reconciles did not keep within the venue's budget", st.Throttled)
	}
}
