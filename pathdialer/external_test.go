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
)

// With ExternalDecisions the Path never switches by itself; Assign fences,
// switches, reconciles and releases under the coordinator's token; Halt, Hold and
// Resume drive the gate.
func TestExternalDecisions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.ExternalDecisions = true })
		defer h.close()
		if err := h.p.Halt(errors.New("x")); !errors.Is(err, pathdialer.ErrNotStarted) {
			t.Fatalf("Halt before Start: %v", err)
		}
		h.start()
		// External mode starts held: no ticket before the coordinator's word.
		if st, cause := h.p.GateState(); st != pathdialer.GateHeld || !strings.Contains(cause.Error(), "first assignment") {
			t.Fatalf("gate at Start: %v (%v)", st, cause)
		}
		if err := h.p.Assign(context.Background(), "eu", 1); err != nil {
			t.Fatalf("first Assign: %v", err)
		}
		if st, _ := h.p.GateState(); st != pathdialer.GateOpen {
			t.Fatalf("gate after the first Assign: %v", st)
		}
		inflight := mustAcquire(t, h.p, "o-inflight")
		h.probes.set("eu", probeBlackhole)
		<-time.After(30 * time.Second)
		synctest.Wait()
		if a, gen := h.p.Active(); a.Name != "eu" || gen != 1 {
			t.Fatalf("the Path switched by itself to %s/%d", a.Name, gen)
		}
		if st, _ := h.p.GateState(); st != pathdialer.GateOpen {
			t.Fatalf("gate %v without a coordinator's word", st)
		}
		if st, _ := h.p.Engine().Status("eu"); st.ConsecutiveFailures == 0 {
			t.Fatal("the probes were not counted")
		}

		ctx := context.Background()
		if err := h.p.Assign(ctx, "us", 7); err != nil {
			t.Fatalf("Assign: %v", err)
		}
		if a, gen := h.p.Active(); a.Name != "us" || gen != 7 {
			t.Fatalf("after Assign: %s/%d", a.Name, gen)
		}
		if !h.p.Fenced("eu") {
			t.Error("eu not fenced")
		}
		if f := h.hooks.fenceCalls(); len(f) != 1 || f[0].Endpoint.Name != "eu" || f[0].To != "us" {
			t.Errorf("fence calls %+v", f)
		}
		recs := h.hooks.reconciliations()
		if len(recs) != 2 || recs[0].Reason != "assigned by the coordinator" || recs[1].Token != 7 || !slices.Equal(orderIDs(recs[1].Tickets), []string{"o-inflight"}) {
			t.Fatalf("reconciliations %+v", recs)
		}
		inflight.Done() // late
		tk := mustAcquire(t, h.p, "o-7")
		if tk.Endpoint != "us" || tk.Token != 7 {
			t.Fatalf("ticket %s/%d, want us under token 7", tk.Endpoint, tk.Token)
		}
		tk.Done()
		if hist := h.p.Engine().History(); len(hist) != 1 || hist[0].Token != 7 {
			t.Errorf("engine history %+v", hist)
		}

		if err := h.p.Assign(ctx, "eu", 5); !errors.Is(err, pathdialer.ErrStaleToken) {
			t.Fatalf("stale Assign: %v", err)
		}
		if err := h.p.Assign(ctx, "us", 9); err != nil {
			t.Fatal(err)
		}
		if tk := mustAcquire(t, h.p, "o-9"); tk.Token != 9 || tk.Endpoint != "us" {
			t.Fatalf("after a token-only Assign: %s/%d", tk.Endpoint, tk.Token)
		} else {
			tk.Done()
		}

		if err := h.p.Halt(errors.New("etcd session lost")); err != nil {
			t.Fatal(err)
		}
		if _, err := h.p.Acquire(ctx, "rest", "o-halt"); !errors.Is(err, pathdialer.ErrTradingHalted) || !strings.Contains(err.Error(), "etcd session lost") {
			t.Fatalf("Acquire while halted: %v", err)
		}
		if err := h.p.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		if st, _ := h.p.GateState(); st != pathdialer.GateOpen {
			t.Fatalf("gate after Resume: %v", st)
		}
		if recs := h.hooks.reconciliations(); len(recs) != 3 || recs[2].From != "us" || recs[2].To != "us" {
			t.Fatalf("Resume did not reconcile: %+v", recs)
		}

		if err := h.p.Hold(errors.New("re-electing")); err != nil {
			t.Fatal(err)
		}
		waited := make(chan error, 1)
		go func() {
			tk, err := h.p.Acquire(ctx, "rest", "o-held")
			if err == nil {
				tk.Done()
			}
			waited <- err
		}()
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("Acquire did not wait while held: %v", err)
		default:
		}
		if err := h.p.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-waited; err != nil {
			t.Fatalf("held Acquire after Resume: %v", err)
		}
	})
}

func TestExternalCallsRefusedOnASelfDecidingPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		if err := h.p.Assign(context.Background(), "us", 1); !errors.Is(err, pathdialer.ErrNotExternal) {
			t.Fatalf("Assign: %v", err)
		}
		if err := h.p.Halt(nil); !errors.Is(err, pathdialer.ErrNotExternal) {
			t.Fatalf("Halt: %v", err)
		}
		if err := h.p.Assign(context.Background(), "nowhere", 1); !errors.Is(err, pathdialer.ErrUnknownEndpoint) {
			t.Fatalf("Assign to an unknown endpoint: %v", err)
		}
	})
}

// A Halt while an assigned switch is still fencing takes over the gate and
// tells the waiting Assign it will not be released.
func TestHaltDuringAssignedSwitchEndsTheAssign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.ExternalDecisions = true })
		defer h.close()
		h.start()
		if err := h.p.Assign(context.Background(), "eu", 1); err != nil {
			t.Fatal(err)
		}
		h.hooks.setFenceFails(-1)
		res := make(chan error, 1)
		go func() { res <- h.p.Assign(context.Background(), "us", 2) }()
		h.await(pathdialer.EventFenceFailure, nil)
		if err := h.p.Halt(errors.New("session lost")); err != nil {
			t.Fatal(err)
		}
		if err := <-res; !errors.Is(err, pathdialer.ErrTradingHalted) || !strings.Contains(err.Error(), "session lost") {
			t.Fatalf("Assign after Halt: %v", err)
		}
		if a, gen := h.p.Active(); a.Name != "eu" || gen != 1 {
			t.Fatalf("active %s/%d after an aborted switch", a.Name, gen)
		}
		if _, err := h.p.Acquire(context.Background(), "rest", "o"); !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Fatalf("Acquire: %v", err)
		}
	})
}

// The pause case: the coordinator's decision is valid until the deadline given
// to Extend. When the process is paused past it (here: nothing runs to halt the
// gate, as in a stopped process whose watchdog has not fired yet), Acquire
// refuses by comparing the clock, with no watchdog, and a ticket granted before
// the pause fails its Valid check, so the transport does not send it.
func TestAcquireRefusesOnceTheDecisionLapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.ExternalDecisions = true })
		defer h.close()
		h.start()
		ctx := context.Background()
		if err := h.p.Assign(ctx, "eu", 3); err != nil {
			t.Fatal(err)
		}
		// Before the first Extend, decisions do not expire.
		if tk := mustAcquire(t, h.p, "o-0"); !tk.ValidUntil.IsZero() || tk.Valid() != nil {
			t.Fatalf("ticket before Extend: ValidUntil %v, Valid %v", tk.ValidUntil, tk.Valid())
		}
		until := time.Now().Add(5 * time.Second)
		if err := h.p.Extend(until); err != nil {
			t.Fatal(err)
		}
		granted := mustAcquire(t, h.p, "o-1")
		if !granted.ValidUntil.Equal(until) || granted.Valid() != nil || granted.Token != 3 {
			t.Fatalf("ticket: ValidUntil %v (want %v), Valid %v, Token %d", granted.ValidUntil, until, granted.Valid(), granted.Token)
		}
		if s := h.p.Snapshot(); !s.ValidUntil.Equal(until) {
			t.Errorf("Snapshot.ValidUntil = %v, want %v", s.ValidUntil, until)
		}
		time.Sleep(5 * time.Second) // the pause: the lease lapses, no one halts
		if st, _ := h.p.GateState(); st != pathdialer.GateOpen {
			t.Fatalf("gate %v: the test must show the refusal without a halt", st)
		}
		if _, err := h.p.Acquire(ctx, pathdialer.ServiceREST, "o-2"); !errors.Is(err, pathdialer.ErrTicketExpired) {
			t.Fatalf("Acquire after the deadline: %v, want ErrTicketExpired", err)
		}
		if err := granted.Valid(); !errors.Is(err, pathdialer.ErrTicketExpired) {
			t.Fatalf("Valid of a ticket granted before the pause: %v", err)
		}
		granted.Done()
		// A keep-alive moves the deadline forward: trading goes on.
		if err := h.p.Extend(time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		mustAcquire(t, h.p, "o-3").Done()
		// A past deadline lapses at once.
		_ = h.p.Extend(time.Now().Add(-time.Second))
		if _, err := h.p.Acquire(ctx, pathdialer.ServiceREST, "o-4"); !errors.Is(err, pathdialer.ErrTicketExpired) {
			t.Fatalf("Acquire after a past Extend: %v", err)
		}
	})
}

func TestExtendOnlyOnACoordinatedPath(t *testing.T) {
	h := newHarness(t, nil)
	defer h.close()
	if err := h.p.Extend(time.Now().Add(time.Minute)); !errors.Is(err, pathdialer.ErrNotExternal) {
		t.Fatalf("Extend on a self-deciding Path: %v", err)
	}
}
