package etcdcoord_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
)

// Keys under followers/ that no live follower holds: one written without a
// lease (a tool, an operator, a trader's credential), one under a lease
// granted far longer than any follower's (its process is gone, the lease
// lives on). The next switch does not wait for either; the decider reports
// each once, naming the key.
func TestFollowerKeyWithoutLiveFollowerDoesNotHoldSwitch(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.observer(o)
	}
	var lc logCount
	var mu sync.Mutex
	var bad []etcdcoord.BadRecord
	cfg := deciderConfig(r.cli, "decider-1")
	cfg.Logger = slog.New(&lc)
	cfg.FollowerMaxTTL = 10 * time.Second
	cfg.OnBadRecord = func(b etcdcoord.BadRecord) { mu.Lock(); bad = append(bad, b); mu.Unlock() }
	d, err := etcdcoord.NewDecider(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.goRun(r.ctx, d.Run)
	trs := []*trader{r.trader(r.cli, "trader-1"), r.trader(r.cli, "trader-2")}
	waitActive(t, h, "eu", trs...)

	if _, err := r.cli.Put(r.ctx, prefix+"followers/ghost", `{"token":0}`); err != nil {
		t.Fatal(err)
	}
	long, err := r.cli.Grant(r.ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cli.Put(r.ctx, prefix+"followers/gone", `{"token":0}`, clientv3.WithLease(long.ID)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.reach.set(o, "eu", false)
	}
	switched := false
	etcdtest.Eventually(t, 8*time.Second, "the switch to us completes (8 s bound)", func() bool {
		last, ok := h.last()
		switched = ok && last.a.Phase == etcdcoord.PhaseActive && last.a.Endpoint == "us"
		return switched
	})
	took := time.Since(start)
	waitActive(t, h, "us", trs...)
	mu.Lock()
	got := append([]etcdcoord.BadRecord(nil), bad...)
	mu.Unlock()
	t.Logf("switch to us %v after eu went down, with two keys no follower holds; reported: %v", took, got)
	if took > 5*time.Second {
		t.Fatalf("the switch took %v", took)
	}
	keys := map[string]int{}
	for _, b := range got {
		keys[b.Key]++
	}
	if len(got) != 2 || keys[prefix+"followers/ghost"] != 1 || keys[prefix+"followers/gone"] != 1 {
		t.Fatalf("reported %v, want followers/ghost and followers/gone once each", got)
	}
	n := 0
	for _, l := range lc.lines() {
		if strings.Contains(l, "followers/ghost") || strings.Contains(l, "followers/gone") {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d log lines name the keys, want 2: %q", n, lc.lines())
	}
}

func TestDeciderConfigFollowerMaxTTL(t *testing.T) {
	srv := etcdtest.Start(t)
	cfg := deciderConfig(srv.Client(t), "decider-1")
	cfg.FollowerMaxTTL = 500 * time.Millisecond
	if _, err := etcdcoord.NewDecider(cfg); !errors.Is(err, etcdcoord.ErrInvalidConfig) || !strings.Contains(err.Error(), "FollowerMaxTTL") {
		t.Fatalf("FollowerMaxTTL 500ms: %v, want an error naming FollowerMaxTTL", err)
	}
}
