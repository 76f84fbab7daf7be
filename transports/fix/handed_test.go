package fix_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// An order granted on eu while the session is down waits for the logon. If
// meanwhile the Path halts and resumes on eu (same token), the resume's
// reconcile is handed the order's ticket as in flight; when the session logs
// on again (during that reconcile) the order is not sent: it would reach the
// broker before the reconcile's lookups were answered. SendOrder returns
// ErrNotSent wrapping pathdialer.ErrTicketExpired, and the reconcile settles
// the order NOT_RECEIVED (this process never wrote it) and releases flow.
func TestOrderWaitingForLogonIsNotSentAfterItsTicketWasHanded(t *testing.T) {
	entered := make(chan pathdialer.Reconciliation, 4)
	gate := make(chan struct{})
	h := newHarness(t, harnessOpts{reconcile: func(rec *fix.Reconciler) pathdialer.ReconcileFunc {
		return func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
			select {
			case entered <- r:
			default:
			}
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return rec.Reconcile(ctx, r)
		}
	}})
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	eligible := func(name string) bool {
		for _, e := range h.path.Snapshot().Endpoints {
			if e.Name == name {
				return e.Eligible
			}
		}
		return false
	}
	// us fails first (no target to switch to), then the session drops;
	// the probes still find eu healthy, so the gate stays open on eu and
	// the order's ticket is granted there.
	h.down["us"].Store(true)
	eventually(t, 5*time.Second, "us not eligible", func() bool { return !eligible("us") })
	if err := h.b.relays["eu"].SetFault(faultnet.Down()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the session logged out", func() bool { _, ok := h.in.LoggedOn(h.sid); return !ok })
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		errc <- h.in.SendOrder(ctx, order("wait-1", "FILL"), h.sid)
	}()
	eventually(t, 5*time.Second, "wait-1 granted", func() bool { return h.path.Snapshot().InFlight == 1 })
	// eu fails too: halt; eu answers again: resume on eu, with a
	// reconcile handed wait-1 (the same token: no switch).
	h.down["eu"].Store(true)
	h.waitEvent(t, pathdialer.EventHalt)
	h.down["eu"].Store(false)
	var r pathdialer.Reconciliation
	select {
	case r = <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no reconcile after the resume")
	}
	if r.From != "eu" || r.To != "eu" || len(r.Tickets) != 1 || r.Tickets[0].OrderID != "wait-1" {
		t.Fatalf("reconcile %s→%s with %+v, want eu→eu with wait-1", r.From, r.To, r.Tickets)
	}
	// The session logs on to eu again while the reconcile runs.
	if err := h.b.relays["eu"].SetFault(faultnet.None()); err != nil {
		t.Fatal(err)
	}
	h.waitLogon(t, "eu", 10*time.Second)
	var err error
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("SendOrder still waiting 10 s after the logon")
	}
	if err == nil {
		// Sent: show where it landed, with the reconcile still running.
		deadline := time.Now().Add(5 * time.Second)
		for len(h.b.received("wait-1")) == 0 && time.Now().Before(deadline) {
			<-time.After(10 * time.Millisecond)
		}
	}
	if got := h.b.received("wait-1"); len(got) != 0 || err == nil {
		t.Fatalf("wait-1, handed to the reconcile of eu→eu, was sent during it (SendOrder: %v; at the broker: %+v)", err, got)
	}
	if !errors.Is(err, fix.ErrNotSent) || !errors.Is(err, pathdialer.ErrTicketExpired) {
		t.Fatalf("SendOrder: %v, want ErrNotSent wrapping pathdialer.ErrTicketExpired", err)
	}
	close(gate)
	h.waitEvent(t, pathdialer.EventRelease)
	// The reconcile settles it from this process's own record: never written.
	select {
	case s := <-h.recs:
		if got := settlementsByID(s)["wait-1"]; got.Fate != pathdialer.FateNotReceived {
			t.Fatalf("wait-1 settled %v (%s), want NOT_RECEIVED", got.Fate, got.Detail)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no settlements")
	}
	if got := h.b.received("wait-1"); len(got) != 0 {
		t.Fatalf("wait-1 reached the broker after all: %+v", got)
	}
}
