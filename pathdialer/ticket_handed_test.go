package pathdialer_test

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// A ticket whose order was not sent yet when the Path handed it to
// reconciliation (a transport still waiting to write it: a FIX session
// logging on again) is no longer valid: the reconcile looks the order up as
// one that may be in flight, so writing it afterwards would release an order
// before the reconcile's lookups are answered. Its token does not tell: a
// resume after a halt keeps the token, so Valid must.
func TestTicketHandedToReconciliationIsNotValid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		waiting := mustAcquire(t, h.p, "o-1")
		if err := waiting.Valid(); err != nil {
			t.Fatalf("Valid right after the grant: %v", err)
		}
		h.probes.set("us", probeFail)
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventHalt, nil)
		h.probes.set("eu", probeOK)
		start := h.await(pathdialer.EventReconcileStart, nil)
		if start.From != "eu" || start.To != "eu" || start.Token != waiting.Token || len(start.Tickets) != 1 || start.Tickets[0].OrderID != "o-1" {
			t.Fatalf("reconcile %v (tickets %+v), want eu→eu under the ticket's token %d with o-1", start, start.Tickets, waiting.Token)
		}
		if err := waiting.Valid(); !errors.Is(err, pathdialer.ErrTicketExpired) {
			t.Fatalf("Valid after the ticket was handed to the reconcile of %s→%s: %v, want ErrTicketExpired", start.From, start.To, err)
		}
		h.await(pathdialer.EventRelease, nil)
		if err := waiting.Valid(); !errors.Is(err, pathdialer.ErrTicketExpired) {
			t.Fatalf("Valid after the release: %v, want ErrTicketExpired", err)
		}
		// A ticket granted after the release is valid.
		fresh := mustAcquire(t, h.p, "o-2")
		if err := fresh.Valid(); err != nil {
			t.Fatalf("Valid of a ticket granted after the release: %v", err)
		}
		fresh.Done()
		waiting.Done()
	})
}
