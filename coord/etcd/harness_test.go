package etcdcoord_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, etcdtest.IgnoredGoroutines...)
}

const prefix = "/brokerpath/acct-test/"

var endpoints = []pathdialer.Endpoint{
	{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{"rest": "https://127.0.0.1:1"}},
	{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"rest": "https://127.0.0.1:2"}},
}

// reach is a fake network: whether an observer reaches an endpoint.
type reach struct{ m sync.Map }

func (r *reach) set(observer, ep string, ok bool) { r.m.Store(observer+"/"+ep, ok) }
func (r *reach) probe(observer string) pathdialer.ProbeFunc {
	return func(ctx context.Context, ep pathdialer.Endpoint) error {
		if v, ok := r.m.Load(observer + "/" + ep.Name); ok && !v.(bool) {
			return fmt.Errorf("%s cannot reach %s", observer, ep.Name)
		}
		return nil
	}
}

type rig struct {
	t     *testing.T
	srv   *etcdtest.Server
	cli   *clientv3.Client
	reach *reach
	ctx   context.Context
	wg    sync.WaitGroup
}

func newRig(t *testing.T) *rig {
	srv := etcdtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{t: t, srv: srv, cli: srv.Client(t), reach: &reach{}, ctx: ctx}
	t.Cleanup(func() { cancel(); r.wg.Wait() })
	return r
}

func (r *rig) goRun(ctx context.Context, run func(context.Context) error) {
	r.wg.Add(1)
	go func() { defer r.wg.Done(); _ = run(ctx) }()
}

func (r *rig) observer(name string) { r.observerWith(r.cli, name) }

func (r *rig) observerWith(cli *clientv3.Client, name string) {
	cfg := etcdcoord.DefaultObserverConfig()
	cfg.Client, cfg.Prefix, cfg.Name, cfg.Region, cfg.Endpoints = cli, prefix, name, name, endpoints
	cfg.Probe = r.reach.probe(name)
	cfg.Interval, cfg.ProbeTimeout, cfg.TTL = 100*time.Millisecond, 50*time.Millisecond, time.Second
	cfg.Engine.FailureThreshold, cfg.Engine.MaxHealthAge = 2, 500*time.Millisecond
	if os.Getenv("COORD_DEBUG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	o, err := etcdcoord.NewObserver(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.goRun(r.ctx, o.Run)
}

func deciderConfig(cli *clientv3.Client, name string) etcdcoord.DeciderConfig {
	cfg := etcdcoord.DefaultDeciderConfig()
	cfg.Client, cfg.Prefix, cfg.Name, cfg.Endpoints, cfg.Quorum = cli, prefix, name, endpoints, 2
	cfg.Interval, cfg.TTL = 100*time.Millisecond, time.Second
	cfg.Engine.MaxHealthAge, cfg.Engine.Cooldown = 500*time.Millisecond, time.Hour
	return cfg
}

func (r *rig) decider(cli *clientv3.Client, name string) (*etcdcoord.Decider, context.CancelFunc) {
	d, err := etcdcoord.NewDecider(deciderConfig(cli, name))
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(r.ctx)
	r.goRun(ctx, d.Run)
	return d, cancel
}

// grant is one ticket granted to a trader.
type grant struct {
	trader, endpoint string
	gen              uint64
	at               time.Time
}

type trader struct {
	name string
	path *pathdialer.Path
	f    *etcdcoord.Follower
}

// coordinatedPath is a started Path on the test endpoints whose switches a
// follower drives (ExternalDecisions), probes always passing, closed at the
// test's end.
func (r *rig) coordinatedPath() *pathdialer.Path {
	pc := pathdialer.DefaultConfig()
	pc.Endpoints = endpoints
	pc.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
	pc.Fencer, pc.Reconcile = pathdialer.LocalFenceOnly, pathdialer.NoReconcile
	pc.ExternalDecisions = true
	pc.ProbeInterval, pc.ProbeTimeout, pc.ProbeJitter = 100*time.Millisecond, 50*time.Millisecond, 0
	p, err := pathdialer.New(pc)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := p.Start(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = p.Close() })
	return p
}

func (r *rig) trader(cli *clientv3.Client, name string) *trader {
	p := r.coordinatedPath()
	fc := etcdcoord.DefaultFollowerConfig()
	fc.Client, fc.Prefix, fc.Name, fc.Target = cli, prefix, name, p
	fc.TTL, fc.Margin = time.Second, 200*time.Millisecond
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		r.t.Fatal(err)
	}
	r.goRun(r.ctx, f.Run)
	return &trader{name: name, path: p, f: f}
}

// trade acquires tickets in a loop until ctx ends, recording each grant that
// the follower confirms under the current token. It asks every tradeEvery
// (granted or not): an unpaced loop on an open gate spins, and a few of them
// under the race detector starve the follower, decider and observer
// goroutines of this process on a loaded host (their leases are 1 s).
func (tr *trader) trade(ctx context.Context, wg *sync.WaitGroup, mu *sync.Mutex, out *[]grant) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ctx.Err() == nil; n++ {
			actx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			tk, err := tr.path.Acquire(actx, "rest", fmt.Sprintf("%s-%d", tr.name, n))
			cancel()
			if err == nil {
				at := time.Now()
				mu.Lock()
				*out = append(*out, grant{tr.name, tk.Endpoint, tk.Token, at})
				mu.Unlock()
				tk.Done()
			}
			select {
			case <-ctx.Done():
			case <-time.After(tradeEvery):
			}
		}
	}()
}

// tradeEvery paces trade: 200 asks a second per trader.
const tradeEvery = 5 * time.Millisecond

// history is every write to the assignment key, in order.
type history struct {
	mu   sync.Mutex
	recs []rec
}

type rec struct {
	a   etcdcoord.Assignment
	rev int64
}

func (r *rig) history() *history {
	h := &history{}
	ctx, cancel := context.WithCancel(r.ctx)
	r.t.Cleanup(cancel)
	wch := r.cli.Watch(ctx, prefix+"assignment", clientv3.WithRev(1))
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for wr := range wch {
			for _, ev := range wr.Events {
				var a etcdcoord.Assignment
				if json.Unmarshal(ev.Kv.Value, &a) == nil {
					h.mu.Lock()
					h.recs = append(h.recs, rec{a, ev.Kv.ModRevision})
					h.mu.Unlock()
				}
			}
		}
	}()
	return h
}

func (h *history) all() []rec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]rec(nil), h.recs...)
}

// actives lists the endpoints of the PhaseActive writes, in order.
func (h *history) actives() []string {
	var out []string
	for _, r := range h.all() {
		if r.a.Phase == etcdcoord.PhaseActive {
			out = append(out, r.a.Endpoint)
		}
	}
	return out
}

func (h *history) last() (rec, bool) {
	all := h.all()
	if len(all) == 0 {
		return rec{}, false
	}
	return all[len(all)-1], true
}

func gateOpenOn(p *pathdialer.Path, ep string) bool {
	st, _ := p.GateState()
	a, _ := p.Active()
	return st == pathdialer.GateOpen && a.Name == ep
}

func waitActive(t *testing.T, h *history, ep string, trs ...*trader) rec {
	t.Helper()
	var got rec
	etcdtest.Eventually(t, 15*time.Second, "assignment active on "+ep+" and applied", func() bool {
		r, ok := h.last()
		if !ok || r.a.Phase != etcdcoord.PhaseActive || r.a.Endpoint != ep {
			return false
		}
		for _, tr := range trs {
			if st := tr.f.State(); !gateOpenOn(tr.path, ep) || !st.Session || !st.Applied || st.Revision != r.rev {
				return false
			}
		}
		got = r
		return true
	})
	return got
}

var _ = atomic.Bool{}
var _ = os.Getenv
var _ = engine.Down
