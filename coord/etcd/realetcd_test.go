//go:build realetcd

// Tests against a real three-member etcd cluster (separate processes from
// /usr/bin/etcd, see internal/realetcd). Built only with -tags realetcd:
// `make test-etcd-real` installs the binary and runs them.

package etcdcoord_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/realetcd"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// realCluster starts the cluster or fails the test saying how to get etcd.
func realCluster(t *testing.T) *realetcd.Cluster {
	t.Helper()
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		// Memory-backed data directories: fsync on a shared disk is not what
		// these tests measure.
		if d, err := os.MkdirTemp("/dev/shm", "realetcd-"); err == nil {
			dir = d
			t.Cleanup(func() { _ = os.RemoveAll(d) })
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := realetcd.Start(ctx, realetcd.Options{Dir: dir})
	if err != nil {
		t.Fatalf("start a real etcd cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func realClient(t *testing.T, c *realetcd.Cluster) *clientv3.Client {
	t.Helper()
	var cli *clientv3.Client
	var err error
	if os.Getenv("BROKERPATH_REALETCD_ONECONN") != "" {
		// One TCP connection per client (etcdcoord.NewClient).
		cli, err = etcdcoord.NewClient(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	} else {
		cli, err = c.Client(nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// haltCounter is a Path that counts the halts the follower sends while armed.
type haltCounter struct {
	*pathdialer.Path
	armed atomic.Bool
	halts atomic.Int64
}

func (h *haltCounter) Halt(cause error) error {
	if h.armed.Load() {
		h.halts.Add(1)
	}
	return h.Path.Halt(cause)
}

type realTrader struct {
	*trader
	target *haltCounter
	mu     sync.Mutex
	seen   map[int64]time.Time // revision -> first instant the follower had applied it
	known  map[int64]time.Time // revision -> first instant the follower knew it
}

func (r *rig) realTrader(cli *clientv3.Client, name string) *realTrader {
	pc := pathdialer.DefaultConfig()
	pc.Endpoints = endpoints
	pc.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
	pc.Fencer, pc.Reconcile = pathdialer.LocalFenceOnly, pathdialer.NoReconcile
	pc.ExternalDecisions = true
	// The Path's own probes decide nothing here (ExternalDecisions): slow
	// them so that hundreds of Paths do not measure the scheduler.
	pc.ProbeInterval, pc.ProbeTimeout, pc.ProbeJitter = time.Second, 500*time.Millisecond, 0
	p, err := pathdialer.New(pc)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := p.Start(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = p.Close() })
	hc := &haltCounter{Path: p}
	fc := etcdcoord.DefaultFollowerConfig() // 5 s lease, 500 ms margin
	fc.Client, fc.Prefix, fc.Name, fc.Target = cli, prefix, name, hc
	if os.Getenv("COORD_DEBUG") != "" {
		fc.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		r.t.Fatal(err)
	}
	r.goRun(r.ctx, f.Run)
	rt := &realTrader{trader: &trader{name: name, path: p, f: f}, target: hc, seen: map[int64]time.Time{}, known: map[int64]time.Time{}}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			ch := f.Changed()
			st := f.State()
			rt.mu.Lock()
			if _, ok := rt.known[st.Revision]; !ok {
				rt.known[st.Revision] = time.Now()
			}
			rt.mu.Unlock()
			if st.Applied && st.Session {
				rt.mu.Lock()
				if _, ok := rt.seen[st.Revision]; !ok {
					rt.seen[st.Revision] = time.Now()
				}
				rt.mu.Unlock()
			}
			select {
			case <-r.ctx.Done():
				return
			case <-ch:
			}
		}
	}()
	return rt
}

// tradePaced acquires a ticket every 10 ms (100 orders a second a trader)
// until ctx ends, recording each grant: a trading loop, not a CPU hog that
// would measure the scheduler rather than the coordination.
func (rt *realTrader) tradePaced(ctx context.Context, wg *sync.WaitGroup, mu *sync.Mutex, out *[]grant) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			actx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			tk, err := rt.path.Acquire(actx, "rest", fmt.Sprintf("%s-%d", rt.name, n))
			cancel()
			if err != nil {
				continue
			}
			at := time.Now()
			mu.Lock()
			*out = append(*out, grant{rt.name, tk.Endpoint, tk.Token, at})
			mu.Unlock()
			tk.Done()
		}
	}()
}

func (rt *realTrader) appliedAt(rev int64) (time.Time, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	at, ok := rt.seen[rev]
	return at, ok
}

// writes records the decider's writes with the instant each returned.
type writes struct {
	mu   sync.Mutex
	at   map[int64]time.Time
	recs []rec
}

func (w *writes) on(a etcdcoord.Assignment, rev int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.at[rev] = time.Now()
	w.recs = append(w.recs, rec{a, rev})
}

func (w *writes) last() (rec, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.recs) == 0 {
		return rec{}, false
	}
	return w.recs[len(w.recs)-1], true
}

func (w *writes) all() []rec {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]rec(nil), w.recs...)
}

// waitApplied waits up to limit for the last record to be active on ep and
// applied by every trader; it returns that record and whether it came.
func waitApplied(h *writes, ep string, limit time.Duration, trs []*trader) (rec, bool) {
	for end := time.Now().Add(limit); time.Now().Before(end); <-time.After(5 * time.Millisecond) {
		r, ok := h.last()
		if !ok || r.a.Phase != etcdcoord.PhaseActive || r.a.Endpoint != ep {
			continue
		}
		all := true
		for _, tr := range trs {
			if st := tr.f.State(); !gateOpenOn(tr.path, ep) || !st.Session || !st.Applied || st.Revision != r.rev {
				all = false
				break
			}
		}
		if all {
			return r, true
		}
	}
	r, _ := h.last()
	return r, false
}

// ackRegressions lists the followers whose acknowledgement key names an
// older token than the last assignment written.
func ackRegressions(t *testing.T, c *realetcd.Cluster, w *writes) []string {
	t.Helper()
	cli := realClient(t, c)
	last, _ := w.last()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix+"followers/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("read the acknowledgements: %v", err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		var a etcdcoord.Ack
		if err := json.Unmarshal(kv.Value, &a); err != nil || a.Token < uint64(last.rev) {
			out = append(out, fmt.Sprintf("%s=%d(rev %d)", strings.TrimPrefix(string(kv.Key), prefix+"followers/"), a.Token, kv.ModRevision))
		}
	}
	return out
}

// etcdHistory reads every version of the assignment key from etcd (all
// members answering again), oldest first.
func etcdHistory(t *testing.T, c *realetcd.Cluster) []rec {
	t.Helper()
	cli := realClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cur, err := cli.Get(ctx, prefix+"assignment")
	if err != nil {
		t.Fatalf("read the assignment: %v", err)
	}
	var out []rec
	if len(cur.Kvs) == 0 {
		return nil
	}
	last := cur.Kvs[0].ModRevision
	for wr := range cli.Watch(ctx, prefix+"assignment", clientv3.WithRev(1)) {
		if wr.Err() != nil {
			t.Fatalf("etcd's history of the assignment: %v", wr.Err())
		}
		for _, ev := range wr.Events {
			var a etcdcoord.Assignment
			if err := json.Unmarshal(ev.Kv.Value, &a); err == nil {
				out = append(out, rec{a, ev.Kv.ModRevision})
			}
			if ev.Kv.ModRevision >= last {
				return out
			}
		}
	}
	t.Fatal("etcd's history of the assignment: the watch ended early")
	return nil
}

// TestRealEtcdFrozenMember: one etcd member stopped with SIGSTOP (its TCP
// connections stay open, quorum is intact) for longer than two follower
// leases, with a switch in the middle. No follower may halt, the decider keeps
// its term, every follower holds on the fence and acts on the new assignment
// within a bound, and no ticket is granted under a token once etcd's history
// has a newer active assignment.
func TestRealEtcdFrozenMember(t *testing.T) {
	for _, which := range []string{"follower-member", "leader-member"} {
		t.Run(which, func(t *testing.T) { testFrozenMember(t, which == "leader-member", false) })
	}
}

// TestRealEtcdKilledLeader: the same with the raft leader killed (SIGKILL)
// instead of frozen; it stays dead.
func TestRealEtcdKilledLeader(t *testing.T) { testFrozenMember(t, true, true) }

func testFrozenMember(t *testing.T, leader, kill bool) {
	n := envInt("BROKERPATH_REALETCD_N", 20)
	bound := time.Duration(envInt("BROKERPATH_REALETCD_BOUND_MS", 1000)) * time.Millisecond
	c := realCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{t: t, cli: realClient(t, c), reach: &reach{}, ctx: ctx}
	t.Cleanup(func() { cancel(); r.wg.Wait() })
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.observerWith(realClient(t, c), o)
	}
	w := &writes{at: map[int64]time.Time{}}
	dcfg := deciderConfig(realClient(t, c), "decider-1")
	dcfg.OnWrite = w.on
	// A lease that outlives a raft election: with the etcd leader frozen, no
	// keep-alive succeeds until the others elect a new one (etcd's default
	// election timeout, 1 s, up to twice that with its randomization).
	dcfg.TTL = 5 * time.Second
	if os.Getenv("COORD_DEBUG") != "" {
		dcfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	d, err := etcdcoord.NewDecider(dcfg)
	if err != nil {
		t.Fatal(err)
	}
	r.goRun(r.ctx, d.Run)
	trs := make([]*realTrader, n)
	startAt := time.Now()
	for i := range trs {
		trs[i] = r.realTrader(realClient(t, c), fmt.Sprintf("trader-%03d", i))
	}
	plain := make([]*trader, n)
	for i, tr := range trs {
		plain[i] = tr.trader
	}
	first, ok := waitApplied(w, "eu", 30*time.Second, plain)
	if !ok {
		last, _ := w.last()
		var behind []string
		for _, tr := range plain {
			if st := tr.f.State(); !gateOpenOn(tr.path, "eu") || !st.Session || !st.Applied || st.Revision != last.rev {
				gs, _ := tr.path.GateState()
				behind = append(behind, fmt.Sprintf("%s(session %v applied %v rev %d gate %v)", tr.name, st.Session, st.Applied, st.Revision, gs))
			}
		}
		t.Fatalf("the followers did not trade on eu within 30 s: last write rev %d %s %s; %d behind: %v", last.rev, last.a.Phase, last.a.Endpoint, len(behind), behind[:min(len(behind), 10)])
	}
	startTook := time.Since(startAt)
	conns := memberConns(c)
	var gmu sync.Mutex
	var grants []grant
	tctx, stopTrading := context.WithCancel(r.ctx)
	var twg sync.WaitGroup
	for _, tr := range trs {
		tr.tradePaced(tctx, &twg, &gmu, &grants)
	}
	// The decider must lead throughout: poll it.
	var lostLead atomic.Int64
	pctx, stopPoll := context.WithCancel(r.ctx)
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		for pctx.Err() == nil {
			if !d.Leading() {
				lostLead.Add(1)
			}
			select {
			case <-pctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	for _, tr := range trs {
		tr.target.armed.Store(true)
	}

	victim := c.Leader(r.ctx)
	if victim < 0 {
		t.Fatal("no etcd leader")
	}
	if !leader {
		victim = (victim + 1) % 3
	}
	frozeAt := time.Now()
	fault := c.Freeze
	if kill {
		fault = c.Kill
	}
	if err := fault(victim); err != nil {
		t.Fatal(err)
	}
	t.Logf("froze member %s (pid %d, leader %v); %d followers", c.Members[victim].Name, c.Members[victim].PID(), leader, n)
	// Two follower leases into the freeze, eu goes down for every observer.
	<-time.After(6 * time.Second)
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.reach.set(o, "eu", false)
	}
	switchAt := time.Now()
	second, switched := waitApplied(w, "us", 20*time.Second, plain)
	switchTook := time.Since(switchAt)
	<-time.After(time.Until(frozeAt.Add(12 * time.Second)))
	thawAt := time.Now()
	if !kill {
		if err := c.Thaw(victim); err != nil {
			t.Fatal(err)
		}
	}
	// What the thawed member still held in its sockets (calls that timed
	// out) is carried out now: no follower's acknowledgement may go back to
	// an older token because of it.
	<-time.After(3 * time.Second)
	regressed := ackRegressions(t, c, w)
	stopTrading()
	twg.Wait()
	stopPoll()
	pwg.Wait()
	for _, tr := range trs {
		tr.target.armed.Store(false)
	}

	// Halts.
	var halted []string
	for _, tr := range trs {
		if k := tr.target.halts.Load(); k > 0 {
			halted = append(halted, fmt.Sprintf("%s(%d)", tr.name, k))
		}
	}
	// The decider's term: every write during the run under one term.
	terms := map[int64]bool{}
	var fence rec
	for _, wr := range w.all() {
		terms[wr.a.Term] = true
		if wr.a.Phase == etcdcoord.PhaseFencing && wr.rev > first.rev && wr.rev < second.rev {
			fence = wr
		}
	}
	// Fence -> every follower holding, and active -> every follower acting.
	w.mu.Lock()
	fenceAt, activeAt := w.at[fence.rev], w.at[second.rev]
	w.mu.Unlock()
	var fenceLag, activeLag []time.Duration
	for _, tr := range trs {
		if at, ok := tr.appliedAt(fence.rev); ok {
			fenceLag = append(fenceLag, at.Sub(fenceAt))
		} else {
			fenceLag = append(fenceLag, -1) // skipped the fence (saw the active record first)
		}
		if at, ok := tr.appliedAt(second.rev); ok {
			activeLag = append(activeLag, at.Sub(activeAt))
			if at.Sub(activeAt) > bound {
				tr.mu.Lock()
				k := tr.known[second.rev]
				tr.mu.Unlock()
				t.Logf("%s: active record known after %v, applied after %v", tr.name, k.Sub(activeAt).Round(time.Millisecond), at.Sub(activeAt).Round(time.Millisecond))
			}
		} else {
			activeLag = append(activeLag, time.Hour) // never
		}
	}
	sort.Slice(fenceLag, func(i, j int) bool { return fenceLag[i] < fenceLag[j] })
	sort.Slice(activeLag, func(i, j int) bool { return activeLag[i] < activeLag[j] })
	maxFence, maxActive := fenceLag[len(fenceLag)-1], activeLag[len(activeLag)-1]
	// Stale grants, judged from etcd's history: a grant under token T on
	// endpoint E needs an active record (E, T), and must come before the next
	// active record was written (which the decider wrote only after every
	// follower acknowledged the fence between them).
	all := etcdHistory(t, c)
	if got, want := len(all), len(w.all()); got < want {
		t.Errorf("etcd's history has %d records of the assignment, the decider wrote %d", got, want)
	}
	stale := 0
	for _, g := range grants {
		ok := false
		for i, hr := range all {
			if hr.rev == int64(g.gen) && hr.a.Phase == etcdcoord.PhaseActive && hr.a.Endpoint == g.endpoint {
				ok = true
				for _, later := range all[i+1:] {
					if later.a.Phase == etcdcoord.PhaseActive {
						w.mu.Lock()
						wat, known := w.at[later.rev]
						w.mu.Unlock()
						if known && g.at.After(wat) {
							ok = false
						}
						break
					}
				}
				break
			}
		}
		if !ok {
			stale++
		}
	}
	for _, wr := range w.all() {
		w.mu.Lock()
		at := w.at[wr.rev]
		w.mu.Unlock()
		t.Logf("write rev %d at +%v: %s %s->%s term %d: %s", wr.rev, at.Sub(frozeAt).Round(time.Millisecond), wr.a.Phase, wr.a.Endpoint, wr.a.Target, wr.a.Term, wr.a.Reason)
	}
	if !switched {
		t.Errorf("eu down -> assignment on us applied by every follower: not within %v", switchTook.Round(time.Millisecond))
	}
	t.Logf("eu down -> us applied by all: %v; frozen %v; %d grants, %d stale; halts %d/%d %v; decider terms %d, not leading %d polls; fence rev %d -> all holding %v (median %v); active rev %d -> all acting %v (median %v); thawed %v after the freeze",
		switchTook.Round(time.Millisecond), thawAt.Sub(frozeAt).Round(time.Millisecond), len(grants), stale, len(halted), n, halted, len(terms), lostLead.Load(),
		fence.rev, maxFence.Round(time.Millisecond), fenceLag[len(fenceLag)/2].Round(time.Millisecond),
		second.rev, maxActive.Round(time.Millisecond), activeLag[len(activeLag)/2].Round(time.Millisecond), thawAt.Sub(frozeAt).Round(time.Millisecond))
	kind := "follower-member"
	if leader {
		kind = "leader-member"
	}
	if kill {
		kind = "leader-member-killed"
	}
	p99 := func(d []time.Duration) time.Duration { return d[(len(d)-1)*99/100].Round(time.Millisecond) }
	fmt.Printf("figures: N=%d frozen=%s halts=%d/%d decider_terms=%d not_leading_polls=%d start_all_trading=%v conns=%d eu_down_to_us_applied=%v fence_to_holding median/p99/max=%v/%v/%v active_to_acting median/p99/max=%v/%v/%v grants=%d stale=%d\n",
		n, kind, len(halted), n, len(terms), lostLead.Load(), startTook.Round(time.Millisecond), conns, switchTook.Round(time.Millisecond),
		fenceLag[len(fenceLag)/2].Round(time.Millisecond), p99(fenceLag), maxFence.Round(time.Millisecond),
		activeLag[len(activeLag)/2].Round(time.Millisecond), p99(activeLag), maxActive.Round(time.Millisecond), len(grants), stale)
	if len(regressed) != 0 {
		t.Errorf("%d acknowledgements went back to an older token after the thaw: %v", len(regressed), regressed[:min(len(regressed), 10)])
	}
	if stale != 0 {
		t.Errorf("%d grants under a token etcd's history had superseded", stale)
	}
	if len(halted) != 0 {
		t.Errorf("%d of %d followers halted with one etcd member frozen (quorum intact): %v", len(halted), n, halted)
	}
	if len(terms) != 1 || lostLead.Load() != 0 {
		t.Errorf("the decider lost its term: %d terms in its writes, not leading in %d polls", len(terms), lostLead.Load())
	}
	if fence.rev == 0 {
		t.Errorf("no fence between the active records %d and %d", first.rev, second.rev)
	} else if p99(fenceLag) > bound {
		t.Errorf("fence written -> followers holding: p99 %v (max %v), want <= %v", p99(fenceLag), maxFence, bound)
	}
	if p99(activeLag) > bound {
		t.Errorf("active written -> followers acting: p99 %v (max %v), want <= %v", p99(activeLag), maxActive, bound)
	}
}

// memberConns counts the established TCP connections to the members' client
// ports on this machine (every client of the test, plus any a member opens to
// its own client port), from /proc/net/tcp{,6}.
func memberConns(c *realetcd.Cluster) int {
	ports := map[string]bool{}
	for _, ep := range c.Endpoints() {
		if i := strings.LastIndex(ep, ":"); i >= 0 {
			if p, err := strconv.Atoi(ep[i+1:]); err == nil {
				ports[fmt.Sprintf("%04X", p)] = true
			}
		}
	}
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 4 || fs[3] != "01" { // ESTABLISHED
				continue
			}
			if i := strings.LastIndex(fs[2], ":"); i >= 0 && ports[fs[2][i+1:]] {
				n++
			}
		}
	}
	return n
}
