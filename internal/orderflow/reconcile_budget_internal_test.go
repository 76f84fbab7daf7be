package orderflow

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// A broker whose lookup budget is spent answers 429 with Retry-After: the
// book lookup backs off as told and asks again, instead of failing the
// reconcile (retried, it failed the same way until the Path halted).
func TestBookLookupBacksOffOn429(t *testing.T) {
	cfg := simbroker.DefaultConfig()
	cfg.TickInterval = 25 * time.Millisecond
	cfg.Streams = []string{"px.EURUSD"}
	cfg.ClientCompID = "OFBUDGET"
	cfg.Venue = &simbroker.VenuePlay{LookupRate: 4, LookupBurst: 2}
	b, err := simbroker.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	c, err := New(FromSimBroker(b))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	rc := pathdialer.Reconciliation{From: "eu", To: "eu", Reason: "test", Attempt: 1}
	for i := range 5 {
		rc.Tickets = append(rc.Tickets, pathdialer.TicketInfo{OrderID: fmt.Sprintf("never-%d", i), Service: REST, Endpoint: "eu", State: pathdialer.TicketUnknown})
	}
	ss, err := c.reconcileBook(ctx, rc, REST)
	if err != nil {
		t.Fatalf("reconcileBook: %v", err)
	}
	if len(ss) != 5 {
		t.Fatalf("%d settlements, want 5", len(ss))
	}
	for _, s := range ss {
		if s.Fate != pathdialer.FateNotReceived {
			t.Fatalf("settlement %+v, want NOT_RECEIVED", s)
		}
	}
	if st := b.VenueStats(); st.Throttled == 0 {
		t.Fatalf("no lookup was throttled (%+v): the test did not spend the budget", st)
	}
}
