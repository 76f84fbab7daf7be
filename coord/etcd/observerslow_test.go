package etcdcoord_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// An observer whose every etcd call takes longer than its Interval (here a
// round trip of at least 120 ms, 60 ms each way, against a 100 ms interval:
// what a busy host or a slow link looks like from the observer) but far less
// than its lease (2 s) keeps its opinions published: the lease is granted and
// renewed, and the observations stay in etcd, round after round.
func TestObserverSlowerThanIntervalKeepsPublishing(t *testing.T) {
	srv := etcdtest.Start(t)
	relay, err := faultnet.New(faultnet.Config{Target: srv.Endpoint, Name: "slow-etcd"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Close() })
	if err := relay.SetFault(faultnet.Latency(60*time.Millisecond, 0)); err != nil {
		t.Fatal(err)
	}
	slow := etcdtest.NewClient(t, relay.Addr())
	direct := srv.Client(t)

	cfg := etcdcoord.DefaultObserverConfig()
	cfg.Client, cfg.Prefix, cfg.Name, cfg.Region, cfg.Endpoints = slow, prefix, "mon-slow", "eu", endpoints
	cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
	cfg.Interval, cfg.ProbeTimeout, cfg.TTL = 100*time.Millisecond, 50*time.Millisecond, 2*time.Second
	o, err := etcdcoord.NewObserver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	key := prefix + "observations/mon-slow/"
	published := func() (rounds map[string]uint64, lease int64) {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		defer rcancel()
		resp, err := direct.Get(rctx, key, clientv3.WithPrefix())
		if err != nil {
			t.Fatalf("read the observations: %v", err)
		}
		rounds = map[string]uint64{}
		for _, kv := range resp.Kvs {
			var ob etcdcoord.Observation
			if err := json.Unmarshal(kv.Value, &ob); err != nil {
				t.Fatalf("observation %s: %v", kv.Key, err)
			}
			rounds[ob.Endpoint], lease = ob.Round, kv.Lease
		}
		return rounds, lease
	}
	etcdtest.Eventually(t, 10*time.Second, "the slow observer's opinions on both endpoints", func() bool {
		r, _ := published()
		return len(r) == len(endpoints)
	})
	first, lease := published()
	// Three lease lifetimes: had the lease not been renewed, it would have
	// expired and taken the opinions with it.
	end := time.Now().Add(3 * cfg.TTL)
	for time.Now().Before(end) {
		r, l := published()
		if len(r) != len(endpoints) {
			t.Fatalf("the slow observer's opinions vanished (lease lapsed): %v", r)
		}
		if l != lease {
			t.Logf("lease changed: %x -> %x", lease, l)
			lease = l
		}
		<-time.After(50 * time.Millisecond)
	}
	last, _ := published()
	for ep, n := range last {
		if n <= first[ep] {
			t.Fatalf("no publication on %s in %v: round %d, was %d", ep, 3*cfg.TTL, n, first[ep])
		}
	}
	t.Logf("rounds published in %v: %v -> %v", 3*cfg.TTL, first, last)
}
