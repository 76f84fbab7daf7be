package fix_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
	"github.com/brokerpath/brokerpath/venue"
)

// pacedVenue is the test venue with a lookup budget of 8 requests a second:
// at venue.LookupShare, one status request every 500 ms, two at once.
func pacedVenue() venue.Profile {
	p := testVenue()
	p.LookupBudget = venue.Documented(venue.Budget{Requests: 8, Per: time.Second, LookupCost: 1, Scope: venue.PerAPIKey, Exceeded: venue.Throttled},
		"https://pkg.go.dev/github.com/brokerpath/brokerpath/transports/fix", "the test acceptor counts 8 requests a second")
	return p
}

// Status requests, their repeats included, stay within the venue's lookup
// budget across reconciles (one budget, not one per reconcile), and every
// order is still asked about once before the answer deadline.
func TestStatusRequestsPacedByTheVenueBudget(t *testing.T) {
	p := pacedVenue()
	every := p.LookupInterval()
	burst := int(time.Second / every)
	if every != 500*time.Millisecond || burst != 2 {
		t.Fatalf("test venue: one lookup every %v, %d at once; the test assumes 500ms, 2", every, burst)
	}
	const answer = 1800 * time.Millisecond
	h := newHarness(t, harnessOpts{
		cfg:     func(c *pathdialer.Config) { c.Quarantine = time.Hour },
		recOpts: fix.ReconcileOptions{AnswerTimeout: answer, RetryInterval: 20 * time.Millisecond, Venue: p},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []string
	var tickets []pathdialer.TicketInfo
	for range 3 { // held at the broker's gateway, their status never answered
		id := uniq("paced-")
		if err := h.in.SendOrder(ctx, order(id, "STUCK-SILENT"), h.sid); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		tickets = append(tickets, pathdialer.TicketInfo{OrderID: id, Service: pathdialer.ServiceFIX, Endpoint: "eu", State: pathdialer.TicketHanded})
	}
	eventually(t, 5*time.Second, "the orders at the broker's gateway", func() bool {
		for _, id := range ids {
			if len(h.b.received(id)) != 1 {
				return false
			}
		}
		return true
	})
	asked := func() (n int) {
		for _, id := range ids {
			n += h.b.statusRequests(id)
		}
		return n
	}
	start := time.Now()
	for range 2 {
		_, err := h.rec.Reconcile(ctx, pathdialer.Reconciliation{From: "eu", To: "eu", Reason: pathdialer.ReasonRequery,
			Service: pathdialer.ServiceFIX, Tickets: tickets})
		if !errors.Is(err, fix.ErrReconcileIncomplete) {
			t.Fatalf("reconcile of orders whose status is never answered: %v, want ErrReconcileIncomplete", err)
		}
	}
	// Every order was asked about (the last request may still be on its way).
	eventually(t, 5*time.Second, "each order asked about", func() bool {
		for _, id := range ids {
			if h.b.statusRequests(id) == 0 {
				return false
			}
		}
		return true
	})
	// Whatever the host's load, the budget allows at most burst requests at
	// once and one per interval after: sends are counted after the window
	// they happened in is measured.
	n := asked()
	took := time.Since(start)
	if allowed := burst + int(took/every); n > allowed {
		t.Errorf("the broker got %d status requests in %v, more than the venue's budget allows (%d: %d at once, one every %v)",
			n, took.Round(time.Millisecond), allowed, burst, every)
	}
	t.Logf("%d status requests for %d orders in %v (budget: %d at once, one every %v)", n, len(ids), took.Round(time.Millisecond), burst, every)
}

// A request the venue's budget does not allow before AnswerTimeout is not
// sent: its order is undetermined with the budget named (kraken-spot: one
// lookup every 12 s at venue.LookupShare), and the broker is asked once.
func TestStatusRequestBeyondTheBudgetIsNotSent(t *testing.T) {
	p := venue.KrakenSpot()
	h := newHarness(t, harnessOpts{
		cfg:     func(c *pathdialer.Config) { c.Quarantine = time.Hour },
		recOpts: fix.ReconcileOptions{AnswerTimeout: 300 * time.Millisecond, Venue: p},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, second := uniq("budget-a-"), uniq("budget-b-") // asked in this order
	var tickets []pathdialer.TicketInfo
	for _, id := range []string{first, second} {
		if err := h.in.SendOrder(ctx, order(id, "STUCK-SILENT"), h.sid); err != nil {
			t.Fatal(err)
		}
		eventually(t, 5*time.Second, id+" at the broker's gateway", func() bool { return len(h.b.received(id)) == 1 })
		tickets = append(tickets, pathdialer.TicketInfo{OrderID: id, Service: pathdialer.ServiceFIX, Endpoint: "eu", State: pathdialer.TicketHanded})
	}
	s, err := h.rec.Reconcile(ctx, pathdialer.Reconciliation{From: "eu", To: "eu", Reason: pathdialer.ReasonRequery,
		Service: pathdialer.ServiceFIX, Tickets: tickets})
	if !errors.Is(err, fix.ErrReconcileIncomplete) {
		t.Fatalf("reconcile: %v, want ErrReconcileIncomplete", err)
	}
	got := settlementsByID(s)
	if d := got[first].Detail; d != "no answer to OrderStatusRequest before the deadline" {
		t.Errorf("%s (asked): %q", first, d)
	}
	if d := got[second].Detail; got[second].Fate != pathdialer.FateUndetermined || !strings.Contains(d, "not asked: the lookup budget of kraken-spot") {
		t.Errorf("%s (not asked): %v %q, want undetermined naming kraken-spot's budget", second, got[second].Fate, d)
	}
	eventually(t, 5*time.Second, "the one status request at the broker", func() bool { return h.b.statusRequests(first) == 1 })
	if n := h.b.statusRequests(second); n != 0 {
		t.Errorf("the broker got %d status requests for %s, want none", n, second)
	}
}

// The budget is one for both kinds of status request: against an acceptor
// that answers OrderStatusRequest "unsupported", the OrderMassStatusRequest
// that would follow is not sent when the venue's budget (kraken-spot: one
// request every 12 s) was spent on the first, and the order says why.
func TestCompatMassStatusWithinTheVenueBudget(t *testing.T) {
	cs := compat(t, true, fix.ReconcileOptions{MassStatus: true, SharedBook: true, AcceptUndetermined: true, Venue: venue.KrakenSpot()})
	cs.killRegionWithOrderInFlight(t, "inflight-budget")
	s := cs.waitSettled(t, "inflight-budget")["inflight-budget"]
	if s.Fate != pathdialer.FateUndetermined || !strings.Contains(s.Detail, "OrderMassStatusRequest: not sent: the lookup budget of kraken-spot") {
		t.Errorf("inflight-budget settled %v (%s), want undetermined naming the budget that held the mass status request back", s.Fate, s.Detail)
	}
	p := cs.procs[0]
	eventually(t, 5*time.Second, "the status request at the acceptor", func() bool { return len(p.received("H")) == 1 })
	if af := p.received("AF"); len(af) != 0 {
		t.Errorf("the acceptor got %d mass status requests, want none: %v", len(af), af)
	}
	if h := p.received("H"); len(h) != 1 {
		t.Errorf("the acceptor got %d status requests, want 1: %v", len(h), h)
	}
}
