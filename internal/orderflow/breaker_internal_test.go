package orderflow

import (
	"context"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// The REST transport's read breaker opens when reads keep failing (an
// outage) and stays open for its timeout after the outage ends. The book
// lookups of a reconcile and the dead-man refreshes are not the
// application's reads: they are marked as the reconcile's (rest.WithReconcile)
// and reach the broker through an open breaker, so a reconcile does not keep
// flow held, nor a refresh leave the dead-man timer unarmed, after the
// endpoint answers again.
func TestReconcileAndDeadManRefreshPassAnOpenReadBreaker(t *testing.T) {
	b := startBroker(t, "OFBREAKER")
	ocfg := FromSimBroker(b)
	// The read endpoint stays eu: its failing reads never take it DOWN.
	ocfg.Timing.FailureThreshold = 1000
	c, err := New(ocfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.PlaceREST(ctx, "booked-1"); err != nil {
		t.Fatalf("place: %v", err)
	}

	// eu's REST door down: reads fail until its breaker opens (5 in a
	// row), then the door opens again.
	setAll := func(f simbroker.Fault) {
		t.Helper()
		if err := b.SetFault("eu", simbroker.REST, f); err != nil {
			t.Fatal(err)
		}
	}
	setAll(simbroker.Down{})
	open := ""
	for i := 0; i < 50 && open == ""; i++ {
		_, _ = c.Account(ctx)
		ep, _ := c.path.ReadEndpoint()
		if st, _ := c.REST().BreakerState(ep.Name); st == gobreaker.StateOpen {
			open = ep.Name
		}
	}
	if open == "" {
		t.Fatal("the read breaker never opened")
	}
	setAll(simbroker.None{})
	// The outage is over; the breaker stays open for its timeout (5 s).
	if ep, _ := c.path.ReadEndpoint(); ep.Name != open {
		t.Fatalf("reads moved from %s to %s: the premise (an open breaker on the read endpoint) no longer holds", open, ep.Name)
	}
	rc := pathdialer.Reconciliation{From: open, To: open, Reason: "test", Attempt: 1,
		Tickets: []pathdialer.TicketInfo{{OrderID: "booked-1", Service: REST, Endpoint: open, State: pathdialer.TicketUnknown}}}
	ss, err := c.reconcileBook(ctx, rc, REST)
	if err != nil {
		t.Fatalf("reconcile lookup with %s's read breaker open: %v", open, err)
	}
	if len(ss) != 1 || ss[0].Fate == pathdialer.FateNotReceived {
		t.Fatalf("settlements %+v, want booked-1 found", ss)
	}
	// The lookup's success closed the breaker; open it again, then refresh.
	setAll(simbroker.Down{})
	open = ""
	for i := 0; i < 50 && open == ""; i++ {
		_, _ = c.Account(ctx)
		ep, _ := c.path.ReadEndpoint()
		if st, _ := c.REST().BreakerState(ep.Name); st == gobreaker.StateOpen {
			open = ep.Name
		}
	}
	if open == "" {
		t.Fatal("the read breaker never opened again")
	}
	setAll(simbroker.None{})
	if err := c.armDeadMan(ctx, 10*time.Second); err != nil {
		t.Fatalf("dead-man refresh with %s's read breaker open: %v", open, err)
	}
	if armed, _ := b.DeadMan(); !armed {
		t.Fatal("the broker's dead-man timer is not armed after the refresh")
	}
}

// The dead-man timer is the account's, whichever region armed it: when the
// refresh through the path reads are on fails (its REST door is down while
// its probes and FIX still answer, so no switch comes yet), it is refreshed
// through another region instead of left to lapse while orders rest.
func TestDeadManRefreshFallsBackToAnotherRegion(t *testing.T) {
	b := startBroker(t, "OFDMFALLBACK")
	ocfg := FromSimBroker(b)
	ocfg.Timing.FailureThreshold = 1000 // eu stays the active endpoint
	ocfg.DeadManTimeout, ocfg.DeadManRefresh = time.Minute, 50*time.Second
	c, err := New(ocfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := b.SetFault("eu", simbroker.REST, simbroker.Down{}); err != nil {
		t.Fatal(err)
	}
	if err := c.refreshDeadMan(ctx); err != nil {
		t.Fatalf("refresh with eu's REST door down: %v", err)
	}
	var last simbroker.Record
	for _, r := range b.Audit() {
		if r.Kind == simbroker.KindDeadMan {
			last = r
		}
	}
	if last.Region != "us" || last.Outcome != simbroker.OutcomeOK {
		t.Fatalf("last dead-man record %+v, want an arm through us", last)
	}
	if ep, _ := c.path.ReadEndpoint(); ep.Name != "eu" {
		t.Fatalf("reads moved to %s: the refresh was not a fallback", ep.Name)
	}
}

// startBroker starts a simulated broker for one test (ticks every 25 ms on
// px.EURUSD, FIX client compID), closed when the test ends.
func startBroker(t *testing.T, compID string) *simbroker.Broker {
	t.Helper()
	cfg := simbroker.DefaultConfig()
	cfg.TickInterval = 25 * time.Millisecond
	cfg.Streams = []string{"px.EURUSD"}
	cfg.ClientCompID = compID
	b, err := simbroker.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
