package etcdcoord_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// Seed 000's split case: one observer partitioned from the primary must not
// cause a failover; a quorum must (the positive control).
func TestSplitObserverDoesNotFailOver(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.observer(o)
	}
	d, _ := r.decider(r.cli, "decider-1")
	tr := r.trader(r.cli, "trader-1")
	first := waitActive(t, h, "eu", tr)

	r.reach.set("mon-us", "eu", false) // mon-us is cut off from eu; eu is fine
	etcdtest.Eventually(t, 10*time.Second, "the decider sees mon-us report eu DOWN", func() bool {
		v := d.Aggregator().Verdicts()["eu"]
		return v.Down == 1 && v.State == etcdcoord.VerdictHealthy
	})
	// Hold the split for well beyond the decider's MaxHealthAge and several rounds.
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
		<-time.After(50 * time.Millisecond)
		if l, _ := h.last(); l.rev != first.rev {
			t.Fatalf("a single partitioned observer changed the assignment: %+v", l)
		}
		if !gateOpenOn(tr.path, "eu") {
			t.Fatal("trader stopped trading on eu during a single observer's partition")
		}
	}

	r.reach.set("mon-eu", "eu", false) // now a quorum (2 of 3) cannot reach eu
	waitActive(t, h, "us", tr)
	if got := h.actives(); len(got) != 2 || got[0] != "eu" || got[1] != "us" {
		t.Fatalf("active writes %v, want [eu us]", got)
	}
}

// The decider dies (its client is cut off from etcd): another candidate takes
// over, adopts the assignment without writing it again, and a later failover
// is written exactly once.
func TestDeciderDiesAnotherTakesOver(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.observer(o)
	}
	c1 := r.srv.CuttableClient(t)
	d1, _ := r.decider(c1.Client, "decider-1")
	etcdtest.Eventually(t, 10*time.Second, "decider-1 leads", d1.Leading)
	d2, _ := r.decider(r.cli, "decider-2")
	tr := r.trader(r.cli, "trader-1")
	waitActive(t, h, "eu", tr)
	if d2.Leading() {
		t.Fatal("two deciders lead at once")
	}

	c1.Cut(t) // decider-1 is gone as far as etcd is concerned
	etcdtest.Eventually(t, 10*time.Second, "decider-2 takes over", d2.Leading)
	if got := h.actives(); len(got) != 1 {
		t.Fatalf("the takeover wrote the assignment again: %v", got)
	}

	r.reach.set("mon-eu", "eu", false)
	r.reach.set("mon-us", "eu", false)
	last := waitActive(t, h, "us", tr)
	if last.a.Decider != "decider-2" {
		t.Fatalf("the failover was written by %q", last.a.Decider)
	}
	c1.Heal(t) // the deposed decider comes back: its guarded writes must fail
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		<-time.After(50 * time.Millisecond)
	}
	if got := h.actives(); len(got) != 2 || got[1] != "us" {
		t.Fatalf("active writes %v, want exactly [eu us]", got)
	}
	for _, w := range h.all() {
		if w.a.Decider == "decider-1" && w.rev > last.rev {
			t.Fatalf("the deposed decider wrote: %+v", w)
		}
	}
}

// A trading process cut off from etcd stops granting tickets within its lease
// TTL, and resumes (through reconciliation) when it is back.
func TestTraderCutOffFromEtcdHaltsWithinLease(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us"} {
		r.observer(o)
	}
	r.decider(r.cli, "decider-1")
	c := r.srv.CuttableClient(t)
	tr := r.trader(c.Client, "trader-1")
	waitActive(t, h, "eu", tr)

	cut := time.Now()
	c.Cut(t)
	etcdtest.Eventually(t, 3*time.Second, "trader halts", func() bool {
		st, _ := tr.path.GateState()
		return st == pathdialer.GateHalted
	})
	if took := time.Since(cut); took >= time.Second {
		t.Fatalf("halted %v after the cut; the lease TTL is 1s", took)
	}
	_, err := tr.path.Acquire(context.Background(), "rest", "late")
	if !errors.Is(err, pathdialer.ErrTradingHalted) {
		t.Fatalf("Acquire while cut off: %v, want ErrTradingHalted", err)
	}
	c.Heal(t)
	waitActive(t, h, "eu", tr)
}

// Two trading processes never hold tickets on two paths at once: every grant
// on the old endpoint precedes every grant on the new one, across a failover
// during which one of them is also cut off from etcd, and every ticket
// carries the token of the assignment it was granted under.
func TestTwoTradersNeverOnTwoPaths(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.observer(o)
	}
	r.decider(r.cli, "decider-1")
	cA := r.srv.CuttableClient(t)
	a := r.trader(cA.Client, "trader-a")
	b := r.trader(r.cli, "trader-b")
	first := waitActive(t, h, "eu", a, b)

	ctx, stop := context.WithCancel(r.ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var grants []grant
	a.trade(ctx, &wg, &mu, &grants)
	b.trade(ctx, &wg, &mu, &grants)
	<-time.After(200 * time.Millisecond)

	cA.Cut(t) // trader-a cannot see the switch coming
	r.reach.set("mon-eu", "eu", false)
	r.reach.set("mon-us", "eu", false)
	second := waitActive(t, h, "us", b)
	<-time.After(300 * time.Millisecond)
	cA.Heal(t)
	waitActive(t, h, "us", a, b)
	<-time.After(200 * time.Millisecond)
	stop()
	wg.Wait()

	var lastEU, firstUS time.Time
	var nEU, nUS int
	for _, g := range grants {
		switch g.endpoint {
		case "eu":
			nEU++
			if g.gen != uint64(first.rev) {
				t.Fatalf("eu ticket under token %d, token was %d", g.gen, first.rev)
			}
			if g.at.After(lastEU) {
				lastEU = g.at
			}
		case "us":
			nUS++
			if g.gen != uint64(second.rev) {
				t.Fatalf("us ticket under token %d, token was %d", g.gen, second.rev)
			}
			if firstUS.IsZero() || g.at.Before(firstUS) {
				firstUS = g.at
			}
		}
	}
	if nEU == 0 || nUS == 0 {
		t.Fatalf("grants: %d on eu, %d on us; want both", nEU, nUS)
	}
	if !lastEU.Before(firstUS) {
		t.Fatalf("a ticket on eu at %v after the first on us at %v: two live paths", lastEU, firstUS)
	}
	t.Logf("%d grants on eu, %d on us; gap %v", nEU, nUS, firstUS.Sub(lastEU))
}
