package fix_test

import (
	"context"
	"errors"
	"github.com/brokerpath/brokerpath/venue"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// An order the broker's gateway holds (neither booked nor answered) is cut
// with its connection: the settle reconcile finds it NOT_RECEIVED,
// provisional. After the quarantine the Path re-queries it through the same
// Reconciler (which kept the order's symbol and side): when the gateway booked
// it meanwhile, the re-query finds it (a late landing, never resent);
// otherwise the verdict turns final and MayResend grants one resend.
func TestProvisionalNotReceivedIsRequeried(t *testing.T) {
	for _, late := range []bool{false, true} {
		name := "stays-not-received"
		if late {
			name = "late-landing"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{cfg: func(c *pathdialer.Config) {
				// The test's acceptor answers lookups at once and refuses a
				// repeated ClOrdID in every state; copies are held at most 2 s.
				c.Venue = testVenue()
				c.Quarantine, c.MaxCopyHold = 2*time.Second, 2*time.Second
			}})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			id := uniq("stuck-")
			if err := h.in.SendOrder(ctx, order(id, "STUCK"), h.sid); err != nil {
				t.Fatal(err)
			}
			eventually(t, 5*time.Second, "the order at the broker's gateway", func() bool { return len(h.b.received(id)) == 1 })
			if err := h.b.relays["eu"].SetFault(faultnet.Reset()); err != nil {
				t.Fatal(err)
			}
			s, ok := settlementsByID(h.waitReconcile(t))[id]
			if !ok || s.Fate != pathdialer.FateNotReceived {
				t.Fatalf("settle reconcile: %+v, want %s NOT_RECEIVED", s, id)
			}
			provisional := func() bool {
				return slices.ContainsFunc(h.path.Snapshot().Provisional, func(v pathdialer.Verdict) bool { return v.OrderID == id })
			}
			// The Path records the verdict when the reconciler returned.
			eventually(t, 5*time.Second, "the provisional verdict", provisional)
			if r, err := h.path.MayResend(id); err != nil || r.Allowed || r.Verdict.Final {
				t.Fatalf("MayResend while provisional = %+v, %v", r, err)
			}
			if late {
				h.b.bookLate(id, "0") // the gateway books it: resting
			}
			deadline := time.Now().Add(20 * time.Second)
			for provisional() {
				if time.Now().After(deadline) {
					for _, e := range h.path.Snapshot().Events {
						t.Log(e.String())
					}
					t.Fatal("the verdict is still provisional 20 s after a 2 s quarantine")
				}
				<-time.After(20 * time.Millisecond)
			}
			if n := h.b.statusRequests(id); n < 2 {
				t.Errorf("the broker got %d status requests for %s, want the settle's and the re-query's", n, id)
			}
			r, err := h.path.MayResend(id)
			if err != nil {
				t.Fatal(err)
			}
			if late {
				if r.Allowed || !r.Verdict.LateLanding || r.Verdict.Fate != pathdialer.FateResting || !r.Verdict.Final {
					t.Fatalf("MayResend after the late landing = %+v", r)
				}
				ll := h.waitEvent(t, pathdialer.EventLateLanding)
				if ll.OrderID != id || ll.Endpoint != "eu" {
					t.Fatalf("late landing event %v", ll)
				}
				return
			}
			if !r.Allowed || !r.Verdict.Final || r.Verdict.Fate != pathdialer.FateNotReceived || r.OrderID != id {
				t.Fatalf("MayResend after the re-query = %+v", r)
			}
		})
	}
}

// The Reconciler's side of a re-query, called directly (the Path's own
// re-query is an hour away): it asks again about an order it settled
// NOT_RECEIVED, finds a late booking, waits for a logon no longer than
// AnswerTimeout (a re-query runs while flow is open and is retried later), and
// forgets the order once a re-query settled it.
func TestReconcilerRequery(t *testing.T) {
	h := newHarness(t, harnessOpts{
		cfg:     func(c *pathdialer.Config) { c.Quarantine = time.Hour },
		recOpts: fix.ReconcileOptions{AnswerTimeout: 500 * time.Millisecond},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := uniq("stuck-")
	if err := h.in.SendOrder(ctx, order(id, "STUCK"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the order at the broker's gateway", func() bool { return len(h.b.received(id)) == 1 })
	if err := h.b.relays["eu"].SetFault(faultnet.Reset()); err != nil {
		t.Fatal(err)
	}
	if s := settlementsByID(h.waitReconcile(t))[id]; s.Fate != pathdialer.FateNotReceived {
		t.Fatalf("settle reconcile: %+v, want NOT_RECEIVED", s)
	}
	h.waitLogon(t, "eu", 5*time.Second)
	requery := func(to string) ([]pathdialer.Settlement, error) {
		return h.rec.Reconcile(ctx, pathdialer.Reconciliation{From: to, To: to, Reason: pathdialer.ReasonRequery, Service: pathdialer.ServiceFIX,
			Tickets: []pathdialer.TicketInfo{{OrderID: id, Service: pathdialer.ServiceFIX, Endpoint: "eu", State: pathdialer.TicketHanded}}})
	}
	// The session is not on "us": the re-query gives up after AnswerTimeout,
	// long before its context ends, and keeps the order.
	if _, err := requery("us"); !errors.Is(err, fix.ErrReconcileIncomplete) || ctx.Err() != nil {
		t.Fatalf("re-query through an endpoint the session is not on: %v (ctx %v)", err, ctx.Err())
	}
	h.b.bookLate(id, "2")
	s, err := requery("eu")
	if err != nil || len(s) != 1 || s[0].Fate != pathdialer.FateFilled {
		t.Fatalf("re-query after the late booking = %+v, %v, want FILLED", s, err)
	}
	// Settled by a re-query: the record is gone (bounded memory).
	s, err = requery("eu")
	if err == nil || len(s) != 1 || s[0].Fate != pathdialer.FateUndetermined || !strings.Contains(s[0].Detail, "no record") {
		t.Fatalf("re-query of an order already settled by a re-query = %+v, %v", s, err)
	}
}

// testVenue is the test acceptor as a venue profile: lookups see an order
// once it is booked, and a repeated ClOrdID is refused in every state.
func testVenue() venue.Profile {
	const doc = "https://pkg.go.dev/github.com/brokerpath/brokerpath/transports/fix"
	p := venue.Conservative()
	p.Name = "test acceptor"
	p.LookupFalseNegative = venue.Documented(time.Duration(0), doc, "the test acceptor answers from its book")
	p.DedupScope = venue.Documented(venue.DedupAllStates, doc, "the test acceptor refuses a repeated ClOrdID")
	p.DedupWindow = venue.Documented(venue.Forever, doc, "the test acceptor refuses a repeated ClOrdID")
	return p
}

// Unanswered status requests are sent again with a backoff that doubles from
// RetryInterval up to 8× RetryInterval (at most AnswerTimeout/2): a slow
// broker asked about many orders is not flooded with a copy of every request
// each RetryInterval.
func TestReconcileRetriesBackOff(t *testing.T) {
	const retry, answer = 20 * time.Millisecond, 1500 * time.Millisecond
	h := newHarness(t, harnessOpts{
		cfg:     func(c *pathdialer.Config) { c.Quarantine = time.Hour },
		recOpts: fix.ReconcileOptions{AnswerTimeout: answer, RetryInterval: retry},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := uniq("silent-")
	if err := h.in.SendOrder(ctx, order(id, "STUCK-SILENT"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the order at the broker's gateway", func() bool { return len(h.b.received(id)) == 1 })
	s, err := h.rec.Reconcile(ctx, pathdialer.Reconciliation{From: "eu", To: "eu", Reason: pathdialer.ReasonRequery, Service: pathdialer.ServiceFIX,
		Tickets: []pathdialer.TicketInfo{{OrderID: id, Service: pathdialer.ServiceFIX, Endpoint: "eu", State: pathdialer.TicketHanded}}})
	if !errors.Is(err, fix.ErrReconcileIncomplete) || len(s) != 1 || s[0].Fate != pathdialer.FateUndetermined {
		t.Fatalf("reconcile of an order whose status is never answered = %+v, %v, want undetermined and ErrReconcileIncomplete", s, err)
	}
	// Sends at 0, 20, 60, 140, then every 160 ms until 1500 ms: 13 at most
	// (a starved host sends fewer); every 20 ms would be 76.
	eventually(t, 5*time.Second, "the status requests at the broker", func() bool { return h.b.statusRequests(id) >= 2 })
	if n := h.b.statusRequests(id); n > 13 {
		t.Fatalf("the broker got %d status requests for one order in %v (RetryInterval %v), want at most 13 (backoff)", n, answer, retry)
	}
}

// A reconcile that fails (here: one order's status is never answered) keeps
// the answers it did get for the next attempt on the same endpoint: the
// retry does not ask again about an order already settled, and settles it
// even when the broker no longer answers.
func TestFailedReconcileKeepsItsAnswersForTheNextAttempt(t *testing.T) {
	h := newHarness(t, harnessOpts{
		cfg:     func(c *pathdialer.Config) { c.Quarantine = time.Hour },
		recOpts: fix.ReconcileOptions{AnswerTimeout: 300 * time.Millisecond},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	booked, silent := uniq("booked-"), uniq("silent-")
	if err := h.in.SendOrder(ctx, order(booked, "MUTE"), h.sid); err != nil { // booked, never answered
		t.Fatal(err)
	}
	if err := h.in.SendOrder(ctx, order(silent, "STUCK-SILENT"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "both orders at the broker", func() bool {
		return len(h.b.received(booked)) == 1 && len(h.b.received(silent)) == 1
	})
	reconcile := func() map[string]pathdialer.Settlement {
		s, err := h.rec.Reconcile(ctx, pathdialer.Reconciliation{From: "eu", To: "eu", Service: pathdialer.ServiceFIX, Tickets: []pathdialer.TicketInfo{
			{OrderID: booked, Service: pathdialer.ServiceFIX, Endpoint: "eu", State: pathdialer.TicketHanded},
			{OrderID: silent, Service: pathdialer.ServiceFIX, Endpoint: "eu", State: pathdialer.TicketHanded},
		}})
		if !errors.Is(err, fix.ErrReconcileIncomplete) {
			t.Fatalf("reconcile with an order whose status is never answered: %v, want ErrReconcileIncomplete", err)
		}
		return settlementsByID(s)
	}
	// A starved host may answer later than AnswerTimeout: attempts until one
	// got the booked order's answer.
	for deadline := time.Now().Add(15 * time.Second); ; {
		s := reconcile()[booked]
		if s.Fate == pathdialer.FateFilled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempts for 15 s: %+v, want %s FILLED", s, booked)
		}
	}
	asked := h.b.statusRequests(booked)
	h.b.statusSilent.Store(true)
	if s := reconcile()[booked]; s.Fate != pathdialer.FateFilled {
		t.Fatalf("second attempt, the broker silent: %+v, want %s FILLED (answered to the first attempt)", s, booked)
	}
	if n := h.b.statusRequests(booked); n != asked {
		t.Errorf("the second attempt asked again about %s (%d status requests, %d before)", booked, n, asked)
	}
}
