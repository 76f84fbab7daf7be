package etcdcoord_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
)

// The current term's genuine "active eu" record, written back byte for byte
// after the decider moved flow to us (eu Down by the observers' quorum): its
// writer still leads, but the record is not the decider's write at its
// revision. No follower grants a ticket on eu; the decider overwrites the
// replay and flow returns to us.
func TestReplayedGenuineRecordRefused(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.observer(o)
	}
	d, _ := r.decider(r.cli, "decider-1")
	var bad atomic.Int64
	var lc logCount
	var trs []*trader
	for i := range 5 {
		trs = append(trs, r.traderLogged(fmt.Sprintf("trader-%d", i), &lc, &bad))
	}
	first := waitActive(t, h, "eu", trs...)
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.reach.set(o, "eu", false)
	}
	onUS := waitActive(t, h, "us", trs...)
	if onUS.a.Term != first.a.Term || !d.Leading() {
		t.Fatalf("the term changed between the two records (%d, %d): the replay would not be same-term", first.a.Term, onUS.a.Term)
	}
	old, err := r.cli.Get(r.ctx, prefix+"assignment", clientv3.WithRev(first.rev))
	if err != nil || len(old.Kvs) != 1 {
		t.Fatalf("read the genuine record at %d: %v %v", first.rev, err, old)
	}

	ctx, stop := context.WithCancel(r.ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var grants []grant
	defer func() { stop(); wg.Wait() }() // also when a check below fails
	for _, tr := range trs {
		tr.trade(ctx, &wg, &mu, &grants)
	}
	<-time.After(200 * time.Millisecond)
	resp, err := r.cli.Put(r.ctx, prefix+"assignment", string(old.Kvs[0].Value))
	if err != nil {
		t.Fatal(err)
	}
	put := time.Now()
	// Every follower's watch delivers the replay and the follower refuses it
	// at once (the binding check needs no round trip) while the decider
	// repairs it: trade until every follower has reported it.
	etcdtest.Eventually(t, 5*time.Second, "every follower reports the replay", func() bool { return bad.Load() >= int64(len(trs)) })
	stop()
	wg.Wait()

	var onEU, onUSAfter int
	for _, g := range grants {
		switch {
		case g.endpoint == "eu":
			onEU++
		case g.at.After(put):
			onUSAfter++
		}
	}
	followed := 0
	for _, tr := range trs {
		if _, gen := tr.path.Active(); gen == uint64(resp.Header.Revision) {
			followed++
		}
	}
	t.Logf("replay at revision %d: %d tickets on eu, %d followers moved under the replay's token, %d bad records reported", resp.Header.Revision, onEU, followed, bad.Load())
	if onEU != 0 || followed != 0 {
		t.Fatalf("the replayed record steered followers: %d tickets granted on eu, %d of %d followers under its token", onEU, followed, len(trs))
	}
	last := waitActive(t, h, "us", trs...)
	if last.rev <= resp.Header.Revision || !d.Leading() {
		t.Fatalf("us active at %d (replay at %d), decider leading %v", last.rev, resp.Header.Revision, d.Leading())
	}

	// The latest genuine record written back at a new revision: same
	// endpoint, but a token the decider never issued. Refused too.
	cur, err := r.cli.Get(r.ctx, prefix+"assignment")
	if err != nil || len(cur.Kvs) != 1 || cur.Kvs[0].ModRevision != last.rev {
		t.Fatalf("read the latest record: %v %v", err, cur)
	}
	before := bad.Load()
	again, err := r.cli.Put(r.ctx, prefix+"assignment", string(cur.Kvs[0].Value))
	if err != nil {
		t.Fatal(err)
	}
	etcdtest.Eventually(t, 5*time.Second, "every follower reports the second replay", func() bool { return bad.Load() >= before+int64(len(trs)) })
	for _, tr := range trs {
		if _, gen := tr.path.Active(); gen == uint64(again.Header.Revision) {
			t.Fatalf("%s took the replayed latest record's revision %d as its token", tr.name, gen)
		}
	}
	waitActive(t, h, "us", trs...)
	if st := trs[0].f.State(); st.Revision <= again.Header.Revision || st.Assignment.Phase != etcdcoord.PhaseActive {
		t.Fatalf("follower state %+v after the repair of the replay at %d", st, again.Header.Revision)
	}
}
