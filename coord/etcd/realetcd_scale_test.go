//go:build realetcd

// Scale against a real three-member etcd: N followers started at once, then a
// switch, with the time each follower took at every step (the record known
// from its watch, the Target acting on it, the acknowledgement written) and
// the scheduling delay of this process measured in the same run.

package etcdcoord_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// lagMeter measures this process's scheduling delay: a goroutine asks for a
// 5 ms timer again and again and records how late each wake-up is.
type lagMeter struct {
	mu  sync.Mutex
	at  []time.Time
	lag []time.Duration
}

func startLag(ctx context.Context, wg *sync.WaitGroup) *lagMeter {
	m := &lagMeter{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		const tick = 5 * time.Millisecond
		t := time.NewTimer(tick)
		defer t.Stop()
		for {
			start := time.Now()
			t.Reset(tick)
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				_ = now
				late := time.Since(start) - tick
				m.mu.Lock()
				m.at, m.lag = append(m.at, start), append(m.lag, max(late, 0))
				m.mu.Unlock()
			}
		}
	}()
	return m
}

// window returns the median, p99 and worst wake-up delay between from and to.
func (m *lagMeter) window(from, to time.Time) (p50, p99, worst time.Duration) {
	m.mu.Lock()
	var d []time.Duration
	for i, at := range m.at {
		if !at.Before(from) && at.Before(to) {
			d = append(d, m.lag[i])
		}
	}
	m.mu.Unlock()
	if len(d) == 0 {
		return 0, 0, 0
	}
	slices.Sort(d)
	return d[len(d)/2], d[(len(d)-1)*99/100], d[len(d)-1]
}

func (m *lagMeter) String(from, to time.Time) string {
	a, b, c := m.window(from, to)
	return fmt.Sprintf("%v/%v/%v", a.Round(time.Millisecond), b.Round(time.Millisecond), c.Round(time.Millisecond))
}

// opTarget is the Path with the instant of every Hold, Halt and Resume that
// returned, and the halts counted while armed.
type opTarget struct {
	*pathdialer.Path
	armed atomic.Bool
	halts atomic.Int64
	mu    sync.Mutex
	ops   []op
}

// haltCauses: every cause of a halt counted while armed.
var haltCauses sync.Map

type op struct {
	kind string
	at   time.Time
}

func (o *opTarget) note(kind string) {
	o.mu.Lock()
	o.ops = append(o.ops, op{kind, time.Now()})
	o.mu.Unlock()
}

func (o *opTarget) Hold(cause error) error {
	err := o.Path.Hold(cause)
	if err == nil {
		o.note("hold")
	}
	return err
}

func (o *opTarget) Halt(cause error) error {
	if o.armed.Load() {
		o.halts.Add(1)
		haltCauses.Store(fmt.Sprint(cause), true)
	}
	err := o.Path.Halt(cause)
	o.note("halt")
	return err
}

func (o *opTarget) Resume(ctx context.Context) error {
	err := o.Path.Resume(ctx)
	if err == nil {
		o.note("resume")
	}
	return err
}

// first returns the first op of kind that returned at or after t.
func (o *opTarget) first(kind string, t time.Time) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range o.ops {
		if p.kind == kind && !p.at.Before(t) {
			return p.at, true
		}
	}
	return time.Time{}, false
}

type scaleTrader struct {
	*trader
	target *opTarget
	mu     sync.Mutex
	known  map[int64]time.Time  // revision -> first instant State had it
	seen   map[int64]time.Time  // revision -> first instant it was applied and acknowledged
	event  map[int64]time.Time  // revision -> first instant its watch delivered it
	steps  map[string]time.Time // session step -> first instant
}

// scaleTrader builds a follower on cli with a 5 s lease; its Target records
// when it acted.
func (r *rig) scaleTrader(cli *clientv3.Client, name string, wrap func(*pathdialer.Path) etcdcoord.Target) *scaleTrader {
	pc := pathdialer.DefaultConfig()
	pc.Endpoints = endpoints
	pc.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
	pc.Fencer, pc.Reconcile = pathdialer.LocalFenceOnly, pathdialer.NoReconcile
	pc.ExternalDecisions = true
	// The Path's own probes decide nothing here (ExternalDecisions).
	pc.ProbeInterval, pc.ProbeTimeout, pc.ProbeJitter = time.Second, 500*time.Millisecond, 0
	p, err := pathdialer.New(pc)
	if err != nil {
		r.t.Error(err)
		return nil
	}
	if err := p.Start(r.ctx); err != nil {
		r.t.Error(err)
		return nil
	}
	r.t.Cleanup(func() { _ = p.Close() })
	ot := &opTarget{Path: p}
	var tg etcdcoord.Target = ot
	if wrap != nil {
		tg = wrap(p)
	}
	fc := etcdcoord.DefaultFollowerConfig() // 5 s lease, 500 ms margin
	fc.Client, fc.Prefix, fc.Name, fc.Target = cli, prefix, name, tg
	if os.Getenv("COORD_DEBUG") != "" {
		fc.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		r.t.Error(err)
		return nil
	}
	st := &scaleTrader{trader: &trader{name: name, path: p, f: f}, target: ot, known: map[int64]time.Time{}, seen: map[int64]time.Time{},
		event: map[int64]time.Time{}, steps: map[string]time.Time{}}
	etcdcoord.SetTrace(f, func(step string, rev int64) {
		now := time.Now()
		st.mu.Lock()
		defer st.mu.Unlock()
		if step == "event" {
			if _, ok := st.event[rev]; !ok {
				st.event[rev] = now
			}
			return
		}
		if _, ok := st.steps[step]; !ok {
			st.steps[step] = now
		}
	})
	r.goRun(r.ctx, f.Run)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			ch := f.Changed()
			s := f.State()
			now := time.Now()
			st.mu.Lock()
			if _, ok := st.known[s.Revision]; !ok {
				st.known[s.Revision] = now
			}
			if _, ok := st.seen[s.Revision]; !ok && s.Applied && s.Session {
				st.seen[s.Revision] = now
			}
			st.mu.Unlock()
			select {
			case <-r.ctx.Done():
				return
			case <-ch:
			}
		}
	}()
	return st
}

func (st *scaleTrader) step(name string) (time.Time, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	t, ok := st.steps[name]
	return t, ok
}

func (st *scaleTrader) at(m map[int64]time.Time, rev int64) (time.Time, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	t, ok := m[rev]
	return t, ok
}

// tradePaced: as realTrader's, one ticket every 10 ms.
func (st *scaleTrader) tradePaced(ctx context.Context, wg *sync.WaitGroup, mu *sync.Mutex, out *[]grant) {
	(&realTrader{trader: st.trader}).tradePaced(ctx, wg, mu, out)
}

// lags sorts d and returns "median/p99/max" and the p99.
func lags(d []time.Duration) (string, time.Duration) {
	if len(d) == 0 {
		return "-", 0
	}
	slices.Sort(d)
	p99 := d[(len(d)-1)*99/100]
	return fmt.Sprintf("%v/%v/%v", d[len(d)/2].Round(time.Millisecond), p99.Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond)), p99
}

// staleGrants counts the grants that etcd's history does not back: a grant
// under token T on endpoint E needs an active record (E, T) and must come
// before the next active record was written.
func staleGrants(all []rec, w *writes, grants []grant) int {
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
	return stale
}

// TestRealEtcdScale: N followers (BROKERPATH_REALETCD_N, default 100), each
// with its own client and Path, started at once against a leading decider:
// every one trading within BROKERPATH_REALETCD_START_MS (default 2000) and
// none losing its first session. Then a switch: from the fence written to
// every follower holding, and from the active record written to every
// follower trading, p99 within BROKERPATH_REALETCD_BOUND_MS (default 1000);
// no stale grant judged from etcd's history. The figures line splits each
// follower's time into the watch event, the Target acting and the
// acknowledgement, beside this process's scheduling delay in the same window.
func TestRealEtcdScale(t *testing.T) {
	n := envInt("BROKERPATH_REALETCD_N", 100)
	bound := time.Duration(envInt("BROKERPATH_REALETCD_BOUND_MS", 1000)) * time.Millisecond
	startBound := time.Duration(envInt("BROKERPATH_REALETCD_START_MS", 2000)) * time.Millisecond
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
	if _, ok := waitApplied(w, "eu", 30*time.Second, nil); !ok {
		t.Fatal("the decider did not make eu active within 30 s")
	}

	// Start N at once: clients, Paths and followers built in parallel.
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
	plain := make([]*trader, n)
	for i, tr := range trs {
		plain[i] = tr.trader
	}
	first, ok := waitApplied(w, "eu", 30*time.Second, plain)
	startTook := time.Since(startAt)
	startLag := lag.String(startAt, time.Now())
	if !ok {
		t.Fatalf("the followers did not all trade on eu within 30 s of their start")
	}

	var gmu sync.Mutex
	var grants []grant
	tctx, stopTrading := context.WithCancel(r.ctx)
	var twg sync.WaitGroup
	for _, tr := range trs {
		tr.tradePaced(tctx, &twg, &gmu, &grants)
	}
	<-time.After(2 * time.Second)
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.reach.set(o, "eu", false)
	}
	switchAt := time.Now()
	second, switched := waitApplied(w, "us", 30*time.Second, plain)
	switchTook := time.Since(switchAt)
	<-time.After(time.Second)
	stopTrading()
	twg.Wait()
	for _, tr := range trs {
		tr.target.armed.Store(false)
	}
	if !switched {
		t.Fatalf("eu down -> us applied by every follower: not within %v", switchTook.Round(time.Millisecond))
	}
	var fence rec
	for _, wr := range w.all() {
		if wr.a.Phase == etcdcoord.PhaseFencing && wr.rev > first.rev && wr.rev < second.rev {
			fence = wr
		}
	}
	if fence.rev == 0 {
		t.Fatalf("no fence between the active records %d and %d", first.rev, second.rev)
	}
	w.mu.Lock()
	fenceAt, activeAt := w.at[fence.rev], w.at[second.rev]
	w.mu.Unlock()
	var sGranted, sRegistered, sRead, sTrading, fEvent, aEvent []time.Duration
	var fKnown, fActing, fAcked, aKnown, aActing, aAcked []time.Duration
	var halted []string
	for _, tr := range trs {
		if k := tr.target.halts.Load(); k > 0 {
			halted = append(halted, fmt.Sprintf("%s(%d)", tr.name, k))
		}
		never := time.Hour
		add := func(out *[]time.Duration, at time.Time, ok bool, from time.Time) {
			if ok {
				*out = append(*out, at.Sub(from))
			} else {
				*out = append(*out, never)
			}
		}
		g, ok := tr.step("granted")
		add(&sGranted, g, ok, startAt)
		g, ok = tr.step("registered")
		add(&sRegistered, g, ok, startAt)
		g, ok = tr.step("read")
		add(&sRead, g, ok, startAt)
		g, ok = tr.target.first("resume", startAt)
		add(&sTrading, g, ok, startAt)
		e, ok := tr.at(tr.event, fence.rev)
		add(&fEvent, e, ok, fenceAt)
		e, ok = tr.at(tr.event, second.rev)
		add(&aEvent, e, ok, activeAt)
		k, ok := tr.at(tr.known, fence.rev)
		add(&fKnown, k, ok, fenceAt)
		// The decider's OnWrite runs after its Txn returned: a follower can
		// act before it. Its first hold after eu went down is the fence's.
		h, ok := tr.target.first("hold", switchAt)
		add(&fActing, h, ok, fenceAt)
		s, ok := tr.at(tr.seen, fence.rev)
		add(&fAcked, s, ok, fenceAt)
		k, ok = tr.at(tr.known, second.rev)
		add(&aKnown, k, ok, activeAt)
		rs, ok := tr.target.first("resume", fenceAt)
		add(&aActing, rs, ok, activeAt)
		s, ok = tr.at(tr.seen, second.rev)
		add(&aAcked, s, ok, activeAt)
	}
	stale := staleGrants(etcdHistory(t, c), w, grants)
	sg, _ := lags(sGranted)
	sr, _ := lags(sRegistered)
	sd, _ := lags(sRead)
	st, _ := lags(sTrading)
	fe, _ := lags(fEvent)
	ae, _ := lags(aEvent)
	fk, _ := lags(fKnown)
	fa, fp99 := lags(fActing)
	fc, _ := lags(fAcked)
	ak, _ := lags(aKnown)
	aa, ap99 := lags(aActing)
	ac, _ := lags(aAcked)
	fmt.Printf("figures: scale N=%d start_all_trading=%v start_halts=%d (granted %s registered %s read %s trading %s) sched_lag_start=%s | fence->event %s ->known %s ->holding %s ->acked %s | fence->active_written %v | active->event %s ->known %s ->trading %s ->acked %s | sched_lag_switch median/p99/max=%s | grants=%d stale=%d\n",
		n, startTook.Round(time.Millisecond), len(halted), sg, sr, sd, st, startLag, fe, fk, fa, fc, activeAt.Sub(fenceAt).Round(time.Millisecond), ae, ak, aa, ac,
		lag.String(fenceAt, time.Now()), len(grants), stale)
	if stale != 0 {
		t.Errorf("%d grants under a token etcd's history had superseded", stale)
	}
	if len(halted) != 0 {
		var causes []string
		haltCauses.Range(func(k, _ any) bool { causes = append(causes, k.(string)); return true })
		t.Errorf("%d of %d followers halted (lost a session): %v; causes %q", len(halted), n, halted[:min(len(halted), 10)], causes)
	}
	if startTook > startBound {
		t.Errorf("%d followers started at once: all trading after %v, want <= %v", n, startTook.Round(time.Millisecond), startBound)
	}
	if fp99 > bound {
		t.Errorf("fence written -> followers holding: p99 %v, want <= %v", fp99.Round(time.Millisecond), bound)
	}
	if ap99 > bound {
		t.Errorf("active written -> followers trading: p99 %v, want <= %v", ap99.Round(time.Millisecond), bound)
	}
}
