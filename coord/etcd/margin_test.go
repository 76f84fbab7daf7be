package etcdcoord_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// timedLease records, for every Grant and KeepAliveOnce that succeeded, the
// instant the call entered the client and the TTL etcd granted. The lease
// cannot expire on the server before that instant plus that TTL (etcd counts
// the TTL from the request's arrival, which is later), so a follower whose
// Target stays valid past "entry + TTL - Margin" gave away its Margin.
type timedLease struct {
	clientv3.Lease
	mu     sync.Mutex
	latest time.Time // entry + TTL of the most recent successful call
	calls  int
}

func (l *timedLease) note(sent time.Time, ttl int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := sent.Add(time.Duration(ttl) * time.Second); e.After(l.latest) {
		l.latest = e
	}
	l.calls++
}

// earliestExpiry is the earliest instant the server may expire the lease, by
// the calls that returned so far, and how many there were.
func (l *timedLease) earliestExpiry() (time.Time, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.latest, l.calls
}

func (l *timedLease) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	sent := time.Now()
	r, err := l.Lease.Grant(ctx, ttl)
	if err == nil {
		l.note(sent, r.TTL)
	}
	return r, err
}

func (l *timedLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	sent := time.Now()
	r, err := l.Lease.KeepAliveOnce(ctx, id)
	if err == nil {
		l.note(sent, r.TTL)
	}
	return r, err
}

// marginTarget passes every call to the Path (until frozen, as frozen does)
// and checks every validity the follower gives with Extend against the
// lease's earliest server-side expiry known at that instant.
type marginTarget struct {
	frozen
	lease  *timedLease
	margin time.Duration

	mu       sync.Mutex
	checked  int      // extensions into the future, checked
	bad      []string // extensions past earliest expiry - margin
	lastSeen time.Time
}

func (m *marginTarget) Extend(until time.Time) error {
	if m.isFrozen() {
		return nil
	}
	now := time.Now()
	if until.After(now) {
		expiry, _ := m.lease.earliestExpiry()
		m.mu.Lock()
		m.checked++
		m.lastSeen = expiry
		if limit := expiry.Add(-m.margin); until.After(limit) {
			m.bad = append(m.bad, until.Sub(limit).String())
		}
		m.mu.Unlock()
	}
	return m.frozen.Extend(until)
}

func (m *marginTarget) report() (checked int, bad []string, expiry time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checked, append([]string(nil), m.bad...), m.lastSeen
}

// The lease margin: the follower's Target must stop granting Margin before the
// earliest instant etcd may expire its lease (the keep-alive's send plus the
// TTL granted), never at that instant. Every validity given to the Target is
// checked against the lease calls seen so far; then the process is paused
// (no call reaches the Target, etcd is cut off) and resumed half a Margin
// before that expiry, while the lease is still alive on the server: by then
// the Path must refuse a ticket, and one granted before the pause must have
// lapsed. With the Margin left out of the deadline, both fail.
func TestFollowerStopsMarginBeforeLeaseExpiry(t *testing.T) {
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

	cut := r.srv.CuttableClient(t)
	lease := &timedLease{Lease: cut.Client.Lease}
	cut.Client.Lease = lease
	fc := etcdcoord.DefaultFollowerConfig()
	// A margin of nearly half the lease: far more than a loaded host takes
	// between the follower reading its clock and the call entering the
	// client, so a deadline without it is caught on every keep-alive; a
	// lease of 3 s rides out a loaded host's stalls.
	fc.TTL, fc.Margin = 3*time.Second, 1200*time.Millisecond
	target := &marginTarget{frozen: frozen{Path: p}, lease: lease, margin: fc.Margin}
	fc.Client, fc.Prefix, fc.Name, fc.Target = cut.Client, prefix, "trader-margin", target
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		t.Fatal(err)
	}
	r.goRun(r.ctx, f.Run)

	etcdtest.Eventually(t, 30*time.Second, "the trader trades on eu, extended after three keep-alives", func() bool {
		l, ok := h.last()
		st := f.State()
		if !ok || l.a.Phase != etcdcoord.PhaseActive || !st.Applied || st.Revision != l.rev || !gateOpenOn(p, "eu") {
			return false
		}
		n, _, _ := target.report()
		return n >= 4
	})
	before, err := p.Acquire(context.Background(), pathdialer.ServiceREST, "o-before")
	if err != nil {
		t.Fatal(err)
	}

	// The pause: nothing reaches the Path any more and etcd cannot be reached.
	target.freeze()
	cut.Cut(t)
	checked, bad, expiry := target.report()
	if len(bad) > 0 {
		t.Fatalf("%d of %d validities given to the Target reach past the lease's earliest expiry minus the margin %v (by %v): the margin is not kept",
			len(bad), checked, fc.Margin, bad)
	}
	if expiry.IsZero() {
		t.Fatal("no lease call recorded before an extension: the test proves nothing")
	}
	resume := expiry.Add(-fc.Margin / 2)
	for time.Now().Before(resume) {
		<-time.After(time.Until(resume))
	}
	if st, _ := p.GateState(); st != pathdialer.GateOpen {
		t.Fatalf("gate %v: the halt reached the gate, the test proves nothing", st)
	}
	tk, err := p.Acquire(context.Background(), pathdialer.ServiceREST, "o-resumed")
	late := time.Since(expiry)
	if !errors.Is(err, pathdialer.ErrTicketExpired) {
		if err == nil {
			tk.Done()
		}
		t.Fatalf("resumed %v before the lease's earliest expiry on etcd: Acquire gave err %v; want ErrTicketExpired (valid until %v)",
			-late, err, p.Snapshot().ValidUntil.Sub(expiry))
	}
	if err := before.Valid(); !errors.Is(err, pathdialer.ErrTicketExpired) {
		t.Fatalf("a ticket from before the pause is still valid %v before the lease may expire: %v", -late, err)
	}
	before.Done()
}
