//go:build realetcd

package etcdcoord_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// TestRealEtcdPausedFollower: one follower stops answering during a switch,
// as a process stopped with SIGSTOP does: every byte between its client and
// the three etcd members is held (its TCP connections stay open, its
// keep-alives and acknowledgements stop while its lease runs) and nothing it
// would do reaches its Path. It is paused right after a keep-alive succeeded
// (its lease has the most time left) and eu goes down for every observer at
// once. The other N followers (BROKERPATH_REALETCD_N, default 20) hold on the
// fence; the decider waits for the paused follower's acknowledgement only
// until its lease expires: from the pause to the active record on us, at most
// the follower's TTL plus etcd's expiry sweep (500 ms) and one decider
// interval (BROKERPATH_REALETCD_PAUSE_SLACK_MS, default 1000 ms, in all).
// No ticket is granted under a token etcd's history had superseded (the
// paused follower's Path keeps trying: its validity lapses before its lease),
// and after the pause the follower trades on us.
func TestRealEtcdPausedFollower(t *testing.T) {
	n := envInt("BROKERPATH_REALETCD_N", 20)
	slack := time.Duration(envInt("BROKERPATH_REALETCD_PAUSE_SLACK_MS", 1000)) * time.Millisecond
	c := realCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{t: t, cli: realClient(t, c), reach: &reach{}, ctx: ctx}
	t.Cleanup(func() { cancel(); r.wg.Wait() })
	lag := startLag(ctx, &r.wg)
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.observerWith(realClient(t, c), o)
	}
	w := &writes{at: map[int64]time.Time{}}
	dcfg := deciderConfig(realClient(t, c), "decider-1")
	dcfg.OnWrite = w.on
	dcfg.TTL = 5 * time.Second
	if os.Getenv("COORD_DEBUG") != "" {
		dcfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	d, err := etcdcoord.NewDecider(dcfg)
	if err != nil {
		t.Fatal(err)
	}
	r.goRun(r.ctx, d.Run)

	// The paused follower reaches every member through a relay of its own.
	var relays []*faultnet.Relay
	var addrs []string
	for i, m := range c.Members {
		rl, err := faultnet.New(faultnet.Config{Target: m.Client, Name: fmt.Sprintf("paused-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rl.Close() })
		relays, addrs = append(relays, rl), append(addrs, rl.Addr())
	}
	pcli, err := c.Client(func(cfg *clientv3.Config) { cfg.Endpoints = addrs })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pcli.Close() })
	var target *frozen
	paused := r.scaleTrader(pcli, "trader-paused", func(p *pathdialer.Path) etcdcoord.Target {
		target = &frozen{Path: p}
		return target
	})
	if _, ok := waitApplied(w, "eu", 30*time.Second, []*trader{paused.trader}); !ok {
		t.Fatal("the paused follower did not trade on eu within 30 s")
	}
	// The others start at once (clients first): each trading within
	// BROKERPATH_REALETCD_START_MS (default 2000), none losing its first
	// session.
	startBound := time.Duration(envInt("BROKERPATH_REALETCD_START_MS", 2000)) * time.Millisecond
	clis := make([]*clientv3.Client, n)
	for i := range clis {
		clis[i] = realClient(t, c)
	}
	trs := make([]*scaleTrader, n)
	startAt := time.Now()
	var bwg sync.WaitGroup
	for i := range trs {
		bwg.Add(1)
		go func() {
			defer bwg.Done()
			trs[i] = r.scaleTrader(clis[i], fmt.Sprintf("trader-%03d", i), nil)
			trs[i].target.armed.Store(true) // a halt from now on is a lost session
		}()
	}
	bwg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	others := make([]*trader, n)
	for i, tr := range trs {
		others[i] = tr.trader
	}
	if _, ok := waitApplied(w, "eu", 30*time.Second, append(others[:n:n], paused.trader)); !ok {
		t.Fatal("the followers did not all trade on eu within 30 s")
	}
	startTook := time.Since(startAt)
	startLag := lag.String(startAt, time.Now())
	var gmu sync.Mutex
	var grants []grant
	tctx, stopTrading := context.WithCancel(r.ctx)
	var twg sync.WaitGroup
	for _, tr := range append(trs, paused) {
		tr.tradePaced(tctx, &twg, &gmu, &grants)
	}
	<-time.After(time.Second)

	// Pause right after a keep-alive: the Path's validity moves on.
	v0 := paused.path.Snapshot().ValidUntil
	for end := time.Now().Add(10 * time.Second); paused.path.Snapshot().ValidUntil.Equal(v0); <-time.After(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the paused follower's validity did not move in 10 s: no keep-alive")
		}
	}
	for _, rl := range relays {
		if err := rl.SetFault(faultnet.Blackhole()); err != nil {
			t.Fatal(err)
		}
	}
	target.freeze()
	pauseAt := time.Now()
	validUntil := paused.path.Snapshot().ValidUntil
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.reach.set(o, "eu", false)
	}
	second, switched := waitApplied(w, "us", 30*time.Second, others)
	if !switched {
		t.Fatalf("eu down -> us applied by the %d followers not paused: not within 30 s", n)
	}
	var fence rec
	for _, wr := range w.all() {
		if wr.a.Phase == etcdcoord.PhaseFencing && wr.rev < second.rev {
			fence = wr
		}
	}
	w.mu.Lock()
	fenceAt, activeAt := w.at[fence.rev], w.at[second.rev]
	w.mu.Unlock()
	lagFig := lag.String(pauseAt, activeAt)

	// The pause ends: the follower finds its session gone and follows again.
	for _, rl := range relays {
		if err := rl.SetFault(faultnet.None()); err != nil {
			t.Fatal(err)
		}
	}
	target.mu.Lock()
	target.frozen = false
	target.mu.Unlock()
	thawAt := time.Now()
	_, back := waitApplied(w, "us", 30*time.Second, []*trader{paused.trader})
	backTook := time.Since(thawAt)
	stopTrading()
	twg.Wait()
	var halted []string
	for _, tr := range trs {
		tr.target.armed.Store(false)
		if k := tr.target.halts.Load(); k > 0 {
			halted = append(halted, fmt.Sprintf("%s(%d)", tr.name, k))
		}
	}
	var fActing []time.Duration
	for _, tr := range trs {
		if h, ok := tr.target.first("hold", pauseAt); ok {
			fActing = append(fActing, h.Sub(fenceAt))
		} else {
			fActing = append(fActing, time.Hour)
		}
	}
	fa, _ := lags(fActing)
	var aActing []time.Duration
	for _, tr := range trs {
		if rs, ok := tr.target.first("resume", fenceAt); ok {
			aActing = append(aActing, rs.Sub(activeAt))
		} else {
			aActing = append(aActing, time.Hour)
		}
	}
	aa, _ := lags(aActing)
	stale := staleGrants(etcdHistory(t, c), w, grants)
	var pausedAfter int
	for _, g := range grants {
		if g.trader == paused.name && g.at.After(validUntil) && g.at.Before(thawAt) {
			pausedAfter++
		}
	}
	hold, fromPause := activeAt.Sub(fenceAt), activeAt.Sub(pauseAt)
	fmt.Printf("figures: paused N=%d+1 start_all_trading=%v sched_lag_start=%s | pause->fence %v fence->others_holding %s | others held (fence->active written) %v, pause->active written %v (lease %v, bound %v) | active->others_trading %s | paused follower's validity ended %v after the pause; its grants after it (paused) %d | back on us %v after the pause ended | halts %d | sched_lag median/p99/max=%s | grants=%d stale=%d\n",
		n, startTook.Round(time.Millisecond), startLag, fenceAt.Sub(pauseAt).Round(time.Millisecond), fa, hold.Round(time.Millisecond), fromPause.Round(time.Millisecond), 5*time.Second, 5*time.Second+slack, aa,
		validUntil.Sub(pauseAt).Round(time.Millisecond), pausedAfter, backTook.Round(time.Millisecond), len(halted), lagFig, len(grants), stale)
	if fence.rev == 0 {
		t.Errorf("no fence before the active record %d", second.rev)
	}
	if fromPause > 5*time.Second+slack {
		t.Errorf("a paused follower held the others %v after its pause (fence -> active %v), want <= its 5 s lease + %v", fromPause.Round(time.Millisecond), hold.Round(time.Millisecond), slack)
	}
	if stale != 0 {
		t.Errorf("%d grants under a token etcd's history had superseded", stale)
	}
	if pausedAfter != 0 {
		t.Errorf("the paused follower was granted %d tickets after its validity ended", pausedAfter)
	}
	if len(halted) != 0 {
		var causes []string
		haltCauses.Range(func(k, _ any) bool { causes = append(causes, k.(string)); return true })
		t.Errorf("%d of %d followers not paused halted (lost a session): %v; causes %q", len(halted), n, halted[:min(len(halted), 10)], causes)
	}
	if startTook > startBound {
		t.Errorf("%d followers started at once: all trading after %v, want <= %v", n, startTook.Round(time.Millisecond), startBound)
	}
	if !back {
		t.Errorf("the paused follower did not trade on us within 30 s of the pause's end")
	}
}
