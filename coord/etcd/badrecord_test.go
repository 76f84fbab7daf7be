package etcdcoord_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// logCount is a slog handler that counts the records at WARN and above and
// keeps their messages.
type logCount struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logCount) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCount) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCount) WithGroup(string) slog.Handler            { return l }
func (l *logCount) Handle(_ context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	l.mu.Lock()
	l.msgs = append(l.msgs, b.String())
	l.mu.Unlock()
	return nil
}

func (l *logCount) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

// followerWith starts a trader whose follower logs to lc and reports bad
// records to bad.
func (r *rig) traderLogged(name string, lc *logCount, bad *atomic.Int64) *trader {
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
	fc := etcdcoord.DefaultFollowerConfig()
	fc.Client, fc.Prefix, fc.Name, fc.Target = r.cli, prefix, name, p
	fc.TTL, fc.Margin = time.Second, 200*time.Millisecond
	fc.Logger = slog.New(lc)
	fc.OnBadRecord = func(etcdcoord.BadRecord) { bad.Add(1) }
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		r.t.Fatal(err)
	}
	r.goRun(r.ctx, f.Run)
	return &trader{name: name, path: p, f: f}
}

// A record nobody can decode at <prefix>assignment, and no decider to repair
// it: the follower holds at once instead of trading on the last decision it
// decoded, keeps holding (a refused record is no decision to halt on) past
// its lease, says why once, and reports it.
func TestGarbageAssignmentHoldsFollower(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us"} {
		r.observer(o)
	}
	d, stopDecider := r.decider(r.cli, "decider-1")
	var lc logCount
	var bad atomic.Int64
	tr := r.traderLogged("trader-1", &lc, &bad)
	waitActive(t, h, "eu", tr)
	stopDecider() // nobody repairs what follows
	etcdtest.Eventually(t, 5*time.Second, "the decider resigns", func() bool { return !d.Leading() })

	ctx, stop := context.WithCancel(r.ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var grants []grant
	tr.trade(ctx, &wg, &mu, &grants)
	<-time.After(200 * time.Millisecond)

	resp, err := r.cli.Put(r.ctx, prefix+"assignment", "{garbage")
	if err != nil {
		t.Fatal(err)
	}
	put := time.Now()
	etcdtest.Eventually(t, 5*time.Second, "the trader holds", func() bool {
		st, _ := tr.path.GateState()
		return st == pathdialer.GateHeld
	})
	held := time.Since(put)
	<-time.After(1500 * time.Millisecond) // past the 1 s lease: still a hold, not a halt
	stop()
	wg.Wait()

	st, cause := tr.path.GateState()
	if st != pathdialer.GateHeld || !errors.Is(cause, etcdcoord.ErrBadRecord) {
		t.Fatalf("gate %v (%v) 1.5 s after the garbage record, want held for a bad record", st, cause)
	}
	if held > time.Second {
		t.Fatalf("held %v after the garbage record; the lease TTL is 1s", held)
	}
	fs := tr.f.State()
	if fs.Refused == "" || fs.Revision != resp.Header.Revision {
		t.Fatalf("follower state %+v: want the record at revision %d refused", fs, resp.Header.Revision)
	}
	var lastEU time.Time
	n := 0
	for _, g := range grants {
		if g.endpoint == "eu" {
			n++
			if g.at.After(lastEU) {
				lastEU = g.at
			}
		}
	}
	if n == 0 {
		t.Fatal("no grant on eu before the garbage record: the control failed")
	}
	if late := lastEU.Sub(put); late > 150*time.Millisecond {
		t.Fatalf("a ticket on eu %v after the garbage record was written: trading on the last decision", late)
	}
	lines := lc.lines()
	if len(lines) == 0 || len(lines) > 3 {
		t.Fatalf("follower logged %d warnings/errors, want 1..3: %q", len(lines), lines)
	}
	if bad.Load() != 1 {
		t.Fatalf("OnBadRecord called %d times, want 1", bad.Load())
	}
	t.Logf("held %v after the write; last eu ticket %v after it; %d log lines: %q", held, lastEU.Sub(put), len(lines), lines)

	// A new decider repairs the record: flow resumes on eu under a new token.
	d2, _ := r.decider(r.cli, "decider-2")
	etcdtest.Eventually(t, 10*time.Second, "decider-2 leads", d2.Leading)
	last := waitActive(t, h, "eu", tr)
	if last.rev <= resp.Header.Revision {
		t.Fatalf("the repair is at revision %d, the garbage at %d", last.rev, resp.Header.Revision)
	}
}

// The case: garbage at <prefix>assignment, then eu unreachable for
// every observer. The leading decider reports the record once, overwrites it
// with a fence under a new revision, and fails over; it never spins.
func TestGarbageAssignmentDeciderRepairsAndFailsOver(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.observer(o)
	}
	var lc logCount
	var bad atomic.Int64
	cfg := deciderConfig(r.cli, "decider-1")
	cfg.Logger = slog.New(&lc)
	cfg.OnBadRecord = func(b etcdcoord.BadRecord) { bad.Add(1) }
	d, err := etcdcoord.NewDecider(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.goRun(r.ctx, d.Run)
	var flc logCount
	var fbad atomic.Int64
	tr := r.traderLogged("trader-1", &flc, &fbad)
	waitActive(t, h, "eu", tr)

	resp, err := r.cli.Put(r.ctx, prefix+"assignment", "{garbage")
	if err != nil {
		t.Fatal(err)
	}
	put := time.Now()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.reach.set(o, "eu", false)
	}
	last := waitActive(t, h, "us", tr)
	took := time.Since(put)
	<-time.After(500 * time.Millisecond) // let any spin show in the log

	var repaired bool
	for _, w := range h.all() {
		if w.rev > resp.Header.Revision && w.a.Phase == etcdcoord.PhaseFencing {
			repaired = true
			break
		}
	}
	if !repaired {
		t.Fatalf("no fence written after the garbage record: %+v", h.all())
	}
	if last.rev <= resp.Header.Revision || !d.Leading() {
		t.Fatalf("us active at %d (garbage at %d), leading %v", last.rev, resp.Header.Revision, d.Leading())
	}
	lines := lc.lines()
	if len(lines) == 0 || len(lines) > 2 {
		t.Fatalf("decider logged %d warnings/errors, want 1..2: %q", len(lines), lines)
	}
	if bad.Load() != 1 {
		t.Fatalf("decider's OnBadRecord called %d times, want 1", bad.Load())
	}
	t.Logf("failover to us %v after the garbage record; decider log: %q; follower log: %q", took, lines, flc.lines())
}

// An observer may write only under its own key (etcd's roles enforce that),
// but the record's body names the observer and endpoint too: a body that does
// not match its key is refused and reported, not counted.
func TestForgedObservationRefused(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	var bad atomic.Int64
	agg, err := etcdcoord.NewAggregator(cli, prefix, 2)
	if err != nil {
		t.Fatal(err)
	}
	etcdcoord.OnAggregatorBadRecord(agg, func(etcdcoord.BadRecord) { bad.Add(1) })
	done := make(chan struct{})
	go func() { defer close(done); _ = etcdcoord.RunAggregator(ctx, agg) }()
	t.Cleanup(func() { cancel(); <-done })

	lease, err := cli.Grant(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	put := func(key string, o etcdcoord.Observation) {
		t.Helper()
		b, _ := json.Marshal(o)
		if _, err := cli.Put(ctx, prefix+"observations/"+key, string(b), clientv3.WithLease(lease.ID)); err != nil {
			t.Fatal(err)
		}
	}
	// One writer (mon-x) claims to speak for two observers.
	put("mon-x/a", etcdcoord.Observation{Observer: "mon-eu", Region: "eu", Endpoint: "eu", State: engine.Down})
	put("mon-x/b", etcdcoord.Observation{Observer: "mon-us", Region: "us", Endpoint: "eu", State: engine.Down})
	// A record whose body does not parse.
	if _, err := cli.Put(ctx, prefix+"observations/mon-y/eu", "{garbage", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	etcdtest.Eventually(t, 5*time.Second, "the aggregator syncs and sees three records", func() bool {
		return agg.Synced() && bad.Load() >= 3
	})
	if v := agg.Verdicts()["eu"]; v.State == etcdcoord.VerdictDown || v.Down > 0 {
		t.Fatalf("forged observations counted: %+v", v)
	}
	if bad.Load() != 3 {
		t.Fatalf("OnBadRecord called %d times, want 3", bad.Load())
	}
}
