package etcdcoord_test

import (
	"context"
	"sync"
	"testing"
	"time"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// holdClock is the Path with the instant of every Hold and Resume that
// returned.
type holdClock struct {
	*pathdialer.Path
	mu      sync.Mutex
	holds   []time.Time
	resumes []time.Time
	halts   []error
}

func (h *holdClock) Halt(cause error) error {
	h.mu.Lock()
	h.halts = append(h.halts, cause)
	h.mu.Unlock()
	return h.Path.Halt(cause)
}

func (h *holdClock) Resume(ctx context.Context) error {
	err := h.Path.Resume(ctx)
	if err == nil {
		h.mu.Lock()
		h.resumes = append(h.resumes, time.Now())
		h.mu.Unlock()
	}
	return err
}

func (h *holdClock) Hold(cause error) error {
	err := h.Path.Hold(cause)
	if err == nil {
		h.mu.Lock()
		h.holds = append(h.holds, time.Now())
		h.mu.Unlock()
	}
	return err
}

func (h *holdClock) firstHold(after time.Time) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, at := range h.holds {
		if at.After(after) {
			return at, true
		}
	}
	return time.Time{}, false
}

// A fence is a hold whoever wrote it: a follower holds as soon as its watch
// delivers the fence, not one round trip later, when the writer's election
// has been proven (that proof is needed before flow is released, not before
// it is held). The follower's link to etcd has 300 ms of latency each way:
// the fence reaches it ~300 ms after it was written, and proving its writer
// costs at least one more round trip (600 ms, after a first attempt that
// times out at a 25th of the lease). Holding must come within 800 ms of the
// write.
func TestFollowerHoldsOnAFenceBeforeProvingItsWriter(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.observer(o)
	}
	var wmu sync.Mutex
	written := map[int64]time.Time{}
	dcfg := deciderConfig(r.cli, "decider-1")
	dcfg.OnWrite = func(a etcdcoord.Assignment, rev int64) {
		wmu.Lock()
		written[rev] = time.Now()
		wmu.Unlock()
	}
	d, err := etcdcoord.NewDecider(dcfg)
	if err != nil {
		t.Fatal(err)
	}
	r.goRun(r.ctx, d.Run)

	relay, err := faultnet.New(faultnet.Config{Target: r.srv.Endpoint, Name: "etcd"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Close() })
	cli := etcdtest.NewClient(t, relay.Addr())
	p := r.coordinatedPath()
	target := &holdClock{Path: p}
	fc := etcdcoord.DefaultFollowerConfig()
	fc.Client, fc.Prefix, fc.Name, fc.Target = cli, prefix, "trader-far", target
	fc.TTL, fc.Margin = 10*time.Second, time.Second
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		t.Fatal(err)
	}
	r.goRun(r.ctx, f.Run)
	tr := &trader{name: "trader-far", path: p, f: f}
	first := waitActive(t, h, "eu", tr)

	if err := relay.SetFault(faultnet.Latency(300*time.Millisecond, 0)); err != nil {
		t.Fatal(err)
	}
	downAt := time.Now()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.reach.set(o, "eu", false)
	}
	second := waitActive(t, h, "us", tr)
	var fence int64
	for _, rc := range h.all() {
		if rc.a.Phase == etcdcoord.PhaseFencing && rc.rev > first.rev && rc.rev < second.rev {
			fence = rc.rev
		}
	}
	wmu.Lock()
	fenceAt, ok := written[fence]
	wmu.Unlock()
	if fence == 0 || !ok {
		t.Fatalf("no fence written between the active records %d and %d", first.rev, second.rev)
	}
	holdAt, ok := target.firstHold(downAt)
	if !ok {
		t.Fatal("the follower never held")
	}
	if lag := holdAt.Sub(fenceAt); lag > 800*time.Millisecond {
		t.Fatalf("fence at revision %d written -> follower holding: %v, want <= 800ms (the watch delivers it in ~300ms)", fence, lag.Round(time.Millisecond))
	} else {
		t.Logf("fence at revision %d written -> follower holding: %v", fence, lag.Round(time.Millisecond))
	}
}

// A follower starting against an assignment already in force trades after
// three round trips to etcd: the lease's grant, one transaction that
// registers it and reads the assignment, and the proof of the record's
// writer. Its link to etcd has 250 ms of latency each way (500 ms a round
// trip, the client connected beforehand): trading within 2 s of Run (under
// four round trips) fails a start that registers and reads in two calls.
func TestFollowerStartsInThreeRoundTrips(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.observer(o)
	}
	r.decider(r.cli, "decider-1")
	etcdtest.Eventually(t, 15*time.Second, "eu active", func() bool {
		l, ok := h.last()
		return ok && l.a.Phase == etcdcoord.PhaseActive && l.a.Endpoint == "eu"
	})

	relay, err := faultnet.New(faultnet.Config{Target: r.srv.Endpoint, Name: "etcd"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Close() })
	if err := relay.SetFault(faultnet.Latency(250*time.Millisecond, 0)); err != nil {
		t.Fatal(err)
	}
	cli := etcdtest.NewClient(t, relay.Addr())
	// Connected before the start: what is timed is the follower's calls.
	if _, err := cli.Get(r.ctx, prefix+"assignment"); err != nil {
		t.Fatal(err)
	}
	p := r.coordinatedPath()
	target := &holdClock{Path: p}
	fc := etcdcoord.DefaultFollowerConfig()
	fc.Client, fc.Prefix, fc.Name, fc.Target = cli, prefix, "trader-far", target
	// A long lease: a first attempt times out after a 25th of it (800 ms),
	// far above the link's round trip.
	fc.TTL, fc.Margin = 20*time.Second, time.Second
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r.goRun(r.ctx, f.Run)
	etcdtest.Eventually(t, 15*time.Second, "the follower trades on eu", func() bool { return gateOpenOn(p, "eu") })
	target.mu.Lock()
	took := target.resumes[0].Sub(start)
	target.mu.Unlock()
	if took > 2*time.Second {
		t.Fatalf("Run -> trading over a 500 ms round trip: %v, want <= 2s (under four round trips)", took.Round(time.Millisecond))
	}
	t.Logf("Run -> trading over a 500 ms round trip: %v", took.Round(time.Millisecond))
}

// A session whose setup is slow (the process descheduled for most of the
// lease between the grant and the first read, as on a starved host starting
// hundreds of followers) keeps its lease: its first keep-alive comes a
// quarter of the TTL after the grant, or at once when the setup took longer,
// not a quarter of the TTL after the setup. Here the setup is held 3.1 s of
// a 4 s lease (deadline 3.6 s after the grant): the follower must not lose
// that first session (no halt) and must trade on eu.
func TestFollowerSlowSetupKeepsItsFirstSession(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.observer(o)
	}
	r.decider(r.cli, "decider-1")
	etcdtest.Eventually(t, 15*time.Second, "eu active", func() bool {
		l, ok := h.last()
		return ok && l.a.Phase == etcdcoord.PhaseActive && l.a.Endpoint == "eu"
	})
	p := r.coordinatedPath()
	target := &holdClock{Path: p}
	fc := etcdcoord.DefaultFollowerConfig()
	fc.Client, fc.Prefix, fc.Name, fc.Target = r.cli, prefix, "trader-slow", target
	fc.TTL, fc.Margin = 4*time.Second, 400*time.Millisecond
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var grantedAt time.Time
	etcdcoord.SetTrace(f, func(step string, _ int64) {
		switch step {
		case "granted":
			grantedAt = time.Now()
		case "registered":
			once.Do(func() { <-time.After(time.Until(grantedAt.Add(3100 * time.Millisecond))) })
		}
	})
	r.goRun(r.ctx, f.Run)
	etcdtest.Eventually(t, 15*time.Second, "the follower trades on eu", func() bool { return gateOpenOn(p, "eu") })
	// Past the first session's deadline had it not been renewed.
	<-time.After(time.Until(grantedAt.Add(fc.TTL)))
	target.mu.Lock()
	halts := append([]error(nil), target.halts...)
	target.mu.Unlock()
	if len(halts) != 0 || !gateOpenOn(p, "eu") || !f.State().Session {
		t.Fatalf("setup held 3.1 s of a 4 s lease: halts %v, trading on eu %v, session %v; want the first session kept", halts, gateOpenOn(p, "eu"), f.State().Session)
	}
}
