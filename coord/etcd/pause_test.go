package etcdcoord_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// frozen stands between a Follower and its Path and, once frozen, swallows
// every call: as in a process stopped with SIGSTOP, nothing the follower's
// goroutines would do (the watchdog's halt, the lapse at session end) reaches
// the gate. Only the Path's own comparison of the clock with the deadline last
// given to Extend stands between a stale decision and an order.
type frozen struct {
	*pathdialer.Path
	mu     sync.Mutex
	frozen bool
}

func (f *frozen) freeze() { f.mu.Lock(); f.frozen = true; f.mu.Unlock() }
func (f *frozen) isFrozen() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frozen
}

func (f *frozen) Hold(cause error) error {
	if f.isFrozen() {
		return nil
	}
	return f.Path.Hold(cause)
}

func (f *frozen) Halt(cause error) error {
	if f.isFrozen() {
		return nil
	}
	return f.Path.Halt(cause)
}

func (f *frozen) Assign(ctx context.Context, ep string, tok uint64) error {
	if f.isFrozen() {
		return errors.New("frozen")
	}
	return f.Path.Assign(ctx, ep, tok)
}

func (f *frozen) Resume(ctx context.Context) error {
	if f.isFrozen() {
		return errors.New("frozen")
	}
	return f.Path.Resume(ctx)
}

func (f *frozen) Extend(until time.Time) error {
	if f.isFrozen() {
		return nil
	}
	return f.Path.Extend(until)
}

// The pause regression: a trader whose session lapses while it is "paused"
// (no halt ever reaches its gate) must not be granted a ticket once the lease
// deadline (minus the margin) has passed, and a ticket granted before must fail
// its Valid check; the gate itself still says OPEN. Before validity was on the
// hot path, Acquire granted tickets here until the watchdog's halt arrived.
func TestPausedTraderNeverGrantsOnALapsedLease(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.observer(o)
	}
	r.decider(r.cli, "decider-1")

	pc := pathdialer.DefaultConfig()
	pc.Endpoints = endpoints
	pc.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
	pc.Fencer, pc.Reconcile = pathdialer.LocalFenceOnly, pathdialer.NoReconcile
	pc.ExternalDecisions = true
	pc.ProbeInterval, pc.ProbeTimeout, pc.ProbeJitter = 100*time.Millisecond, 50*time.Millisecond, 0
	p, err := pathdialer.New(pc)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(r.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	target := &frozen{Path: p}
	cut := r.srv.CuttableClient(t)
	fc := etcdcoord.DefaultFollowerConfig()
	fc.Client, fc.Prefix, fc.Name, fc.Target = cut.Client, prefix, "trader-paused", target
	fc.TTL, fc.Margin = time.Second, 200*time.Millisecond
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		t.Fatal(err)
	}
	r.goRun(r.ctx, f.Run)

	var active rec
	etcdtest.Eventually(t, 15*time.Second, "the trader trades on eu under the assignment's token", func() bool {
		l, ok := h.last()
		st := f.State()
		if !ok || l.a.Phase != etcdcoord.PhaseActive || !st.Applied || st.Revision != l.rev || !gateOpenOn(p, "eu") {
			return false
		}
		active = l
		return !p.Snapshot().ValidUntil.IsZero()
	})
	before, err := p.Acquire(context.Background(), pathdialer.ServiceREST, "o-before")
	if err != nil {
		t.Fatal(err)
	}
	if before.Token != uint64(active.rev) || before.ValidUntil.IsZero() || before.Valid() != nil {
		t.Fatalf("ticket under the assignment: token %d (token %d), ValidUntil %v, Valid %v", before.Token, active.rev, before.ValidUntil, before.Valid())
	}
	deadline := p.Snapshot().ValidUntil
	if left := time.Until(deadline); left <= 0 || left > fc.TTL-fc.Margin {
		t.Fatalf("deadline %v from now; want within the lease's TTL %v minus the margin %v", left, fc.TTL, fc.Margin)
	}

	// The pause: nothing reaches the gate any more, and etcd cannot be reached
	// (the lease will expire and another trader may be assigned meanwhile).
	target.freeze()
	cut.Cut(t)
	frozenAt := p.Snapshot().ValidUntil
	for time.Now().Before(frozenAt) {
		<-time.After(time.Until(frozenAt) + 10*time.Millisecond)
	}
	if st, _ := p.GateState(); st != pathdialer.GateOpen {
		t.Fatalf("gate %v: the halt reached the gate, the test proves nothing", st)
	}
	if tk, err := p.Acquire(context.Background(), pathdialer.ServiceREST, "o-after"); !errors.Is(err, pathdialer.ErrTicketExpired) {
		t.Fatalf("Acquire after the lease deadline: ticket %+v, err %v; want ErrTicketExpired", tk, err)
	}
	if err := before.Valid(); !errors.Is(err, pathdialer.ErrTicketExpired) {
		t.Fatalf("a ticket from before the pause is still valid: %v", err)
	}
	before.Done()
}
