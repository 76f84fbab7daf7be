package etcdcoord_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
)

// A decider that takes office while a 1 MiB record (far above the 64 KiB
// record limit) is on the assignment key, on a host that delivers such a
// record slower than a read's timeout, does not fetch it at every attempt
// (each would time out, and the term would never act): it learns that the
// record is too large without receiving it, refuses it (reported once), and
// overwrites it with a fence under its guarded write, as it does a record it
// cannot decode.
func TestDeciderTakesOfficeOverAnOversizedRecord(t *testing.T) {
	r, big, rev, slow, read, cli := oversizedRecord(t, "us")
	cfg := deciderConfig(cli, "decider-big")
	var mu sync.Mutex
	var writes []etcdcoord.Assignment
	var bad []etcdcoord.BadRecord
	cfg.OnWrite = func(a etcdcoord.Assignment, _ int64) {
		mu.Lock()
		writes = append(writes, a)
		mu.Unlock()
	}
	cfg.OnBadRecord = func(b etcdcoord.BadRecord) {
		mu.Lock()
		bad = append(bad, b)
		mu.Unlock()
	}
	d, err := etcdcoord.NewDecider(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r.goRun(r.ctx, d.Run)

	// Three leases' worth of terms and reads (a read's timeout is 4 Intervals).
	<-time.After(3 * cfg.TTL)
	mu.Lock()
	defer mu.Unlock()
	got, err := r.cli.Get(r.ctx, prefix+"assignment")
	if err != nil {
		t.Fatal(err)
	}
	var now etcdcoord.Assignment
	if len(got.Kvs) == 1 {
		_ = json.Unmarshal(got.Kvs[0].Value, &now)
	}
	t.Logf("in %v: %d answers carrying the %d-byte record, %d refused from their length, %d bytes read by the decider's client; leading %v; %d writes %+v; bad records %+v; record in force %s %q by %q",
		time.Since(start).Round(time.Millisecond), slow.large.Load(), len(big), slow.refused.Load(), read.Load(), d.Leading(), len(writes), writes, bad, now.Phase, now.Endpoint, now.Decider)
	notReceived(t, "decider", big, slow, read, 3*cfg.TTL)
	if len(writes) == 0 || writes[0].Phase != etcdcoord.PhaseFencing || !strings.Contains(writes[0].Reason, "limit") {
		t.Fatalf("writes %+v: want the oversized record overwritten by a fence that says why", writes)
	}
	if len(bad) != 1 || bad[0].Revision != rev || !strings.Contains(bad[0].Err.Error(), "limit") {
		t.Errorf("bad records %+v: want the record at %d reported once, as above the limit", bad, rev)
	}
	if now.Decider != "decider-big" || now.Created != rev {
		t.Errorf("record in force %+v: want the decider's, on the key created at %d", now, rev)
	}
}

// As a follower's, the decider's receive limit goes with clientv3's own KV
// only: a KV the caller wrapped (clientv3/namespace) is read through.
func TestDeciderReadsThroughAWrappedKV(t *testing.T) {
	srv := etcdtest.Start(t)
	wrapped := etcdtest.NewClient(t, srv.Endpoint)
	wrapped.KV = namespace.NewKV(wrapped.KV, "/tenant-a")
	for _, c := range []struct {
		name string
		cli  *clientv3.Client
		want bool
	}{{"clientv3's KV", srv.Client(t), true}, {"a namespaced KV", wrapped, false}} {
		d, err := etcdcoord.NewDecider(deciderConfig(c.cli, "decider-1")) // not run
		if err != nil {
			t.Fatal(err)
		}
		if got := etcdcoord.CapsDeciderReads(d); got != c.want {
			t.Errorf("%s: reads capped %v, want %v", c.name, got, c.want)
		}
	}
}

// A decider that takes office over a record it refuses (here one nobody can
// decode) overwrites it with a repair fence, and, as a repair made later in
// the term does, waits for every live follower to acknowledge that fence
// before it releases flow: followers may be on any endpoint. A follower that
// has not acknowledged holds the release back; its acknowledgement lets it
// through.
func TestDeciderRepairOnTakingOfficeWaitsForEveryFollower(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us"} {
		r.observer(o)
	}
	if _, err := r.cli.Put(r.ctx, prefix+"assignment", "{garbage"); err != nil {
		t.Fatal(err)
	}
	// A live follower's session that has acknowledged nothing yet.
	lease, err := r.cli.Grant(r.ctx, 20)
	if err != nil {
		t.Fatal(err)
	}
	ack, _ := json.Marshal(etcdcoord.Ack{})
	if _, err := r.cli.Put(r.ctx, prefix+"followers/trader-slow", string(ack), clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	d, _ := r.decider(r.cli, "decider-1")
	var fence rec
	etcdtest.Eventually(t, 10*time.Second, "the repair fence", func() bool {
		for _, w := range h.all() {
			if w.a.Phase == etcdcoord.PhaseFencing && strings.HasPrefix(w.a.Reason, "repair") {
				fence = w
				return true
			}
		}
		return false
	})
	<-time.After(1 * time.Second) // ten Intervals: ample for a release
	if last, _ := h.last(); last.rev != fence.rev {
		t.Fatalf("released at %d (%s %q: %s) while trader-slow has not acknowledged the repair fence at %d", last.rev, last.a.Phase, last.a.Endpoint, last.a.Reason, fence.rev)
	}
	ack, _ = json.Marshal(etcdcoord.Ack{Token: uint64(fence.rev), Phase: etcdcoord.PhaseFencing, Endpoint: fence.a.Endpoint})
	if _, err := r.cli.Put(r.ctx, prefix+"followers/trader-slow", string(ack), clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	etcdtest.Eventually(t, 10*time.Second, "released once every follower acknowledged", func() bool {
		last, _ := h.last()
		return last.rev > fence.rev && last.a.Phase == etcdcoord.PhaseActive && d.Leading()
	})
	t.Logf("writes: %+v", h.all())
}
