package etcdcoord_test

import (
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/server/v3/embed"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// A 1 MiB record (valid JSON, far above the library's 64 KiB record limit,
// below etcd's default 1.5 MiB request limit) on the assignment key, watched
// by many followers with their own clients: followers hold, none halts on the
// record, the decider overwrites it and flow resumes on the same endpoint.
// (Under this load a follower may still lose its session to a keep-alive that
// times out, or the decider its term to a read that times out; both are
// logged, not asserted: they are the session's and the term's own limits.)
func TestLargeRecordIsABoundedHold(t *testing.T) {
	// Ten followers on a 1 s lease, under the race detector on a loaded
	// machine, already load the embedded etcd as hundreds would a cluster.
	n := 10
	if v, err := strconv.Atoi(os.Getenv("COORD_LARGE_N")); err == nil && v > 0 {
		n = v // for measuring: COORD_LARGE_N=100 go test -run TestLargeRecordIsABoundedHold
	}
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us"} {
		r.observer(o)
	}
	d, _ := r.decider(r.cli, "decider-1")
	var trs []*trader
	for i := range n {
		trs = append(trs, r.trader(etcdtest.NewClient(t, r.srv.Endpoint), fmt.Sprintf("trader-%02d", i)))
	}
	first := waitActive(t, h, "eu", trs...)

	// Watch every gate and the decider's leadership from now on.
	ctx, stop := context.WithCancel(r.ctx)
	var halted, haltedBad, held atomic.Int64
	var lostTerm atomic.Bool
	var wg sync.WaitGroup
	for _, tr := range trs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var wasHalted, wasHeld bool
			for ctx.Err() == nil {
				switch st, cause := tr.path.GateState(); st {
				case pathdialer.GateHalted:
					if !wasHalted {
						t.Logf("%s halted: %v", tr.name, cause)
						wasHalted = true
						halted.Add(1)
						if errors.Is(cause, etcdcoord.ErrBadRecord) {
							haltedBad.Add(1)
						}
					}
				case pathdialer.GateHeld:
					if !wasHeld {
						wasHeld = true
						held.Add(1)
					}
				}
				select {
				case <-ctx.Done():
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if !d.Leading() {
				lostTerm.Store(true)
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	big := first.a
	big.Reason = strings.Repeat("x", 1<<20)
	b, _ := json.Marshal(big)
	resp, err := r.cli.Put(r.ctx, prefix+"assignment", string(b))
	if err != nil {
		t.Fatal(err)
	}
	put := time.Now()
	etcdtest.Eventually(t, 15*time.Second, "a record written after the large one", func() bool {
		l, ok := h.last()
		return ok && l.rev > resp.Header.Revision
	})
	last := waitActive(t, h, "eu", trs...)
	took := time.Since(put)
	<-time.After(time.Second) // a late halt would show here
	stop()
	wg.Wait()
	t.Logf("%d-byte record at revision %d, %d followers: %d held, %d halted (%d on the record), decider lost its term: %v; active on eu again (revision %d) %v after the write",
		len(b), resp.Header.Revision, n, held.Load(), halted.Load(), haltedBad.Load(), lostTerm.Load(), last.rev, took)
	if haltedBad.Load() != 0 {
		t.Fatalf("%d of %d followers halted on the large record", haltedBad.Load(), n)
	}
	if last.rev <= resp.Header.Revision {
		t.Fatalf("eu active at %d, the large record at %d", last.rev, resp.Header.Revision)
	}
}

// With etcd's request limit set as the README recommends (128 KiB), a 1 MiB
// write on the assignment key is refused by etcd itself, every role works
// under the limit, and the largest record etcd lets through (above the
// library's 64 KiB limit) is a hold that the decider repairs.
func TestRequestLimitBoundsRecord(t *testing.T) {
	srv := etcdtest.StartWith(t, func(c *embed.Config) { c.MaxRequestBytes = 128 << 10 })
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{t: t, srv: srv, cli: srv.Client(t), reach: &reach{}, ctx: ctx}
	t.Cleanup(func() { cancel(); r.wg.Wait() })
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us"} {
		r.observer(o)
	}
	d, _ := r.decider(r.cli, "decider-1")
	var trs []*trader
	for i := range 5 {
		trs = append(trs, r.trader(etcdtest.NewClient(t, r.srv.Endpoint), fmt.Sprintf("trader-%d", i)))
	}
	first := waitActive(t, h, "eu", trs...)

	big := first.a
	big.Reason = strings.Repeat("x", 1<<20)
	b, _ := json.Marshal(big)
	if _, err := r.cli.Put(r.ctx, prefix+"assignment", string(b)); err == nil {
		t.Fatalf("a %d-byte write under a 128 KiB request limit was accepted", len(b))
	}
	big.Reason = strings.Repeat("x", 200<<10)
	b, _ = json.Marshal(big)
	if _, err := r.cli.Put(r.ctx, prefix+"assignment", string(b)); !errors.Is(err, rpctypes.ErrRequestTooLarge) {
		t.Fatalf("a %d-byte write under a 128 KiB request limit: %v, want etcd to refuse it as too large", len(b), err)
	}
	big.Reason = strings.Repeat("x", 100<<10)
	b, _ = json.Marshal(big)
	resp, err := r.cli.Put(r.ctx, prefix+"assignment", string(b))
	if err != nil {
		t.Fatalf("a %d-byte write under a 128 KiB request limit: %v", len(b), err)
	}
	etcdtest.Eventually(t, 15*time.Second, "a record written after the large one", func() bool {
		l, ok := h.last()
		return ok && l.rev > resp.Header.Revision
	})
	last := waitActive(t, h, "eu", trs...)
	for _, tr := range trs {
		if st, cause := tr.path.GateState(); st != pathdialer.GateOpen {
			t.Fatalf("%s: gate %v (%v) after the repair", tr.name, st, cause)
		}
	}
	if !d.Leading() || last.rev <= resp.Header.Revision {
		t.Fatalf("decider leading %v; eu active at %d, the %d-byte record at %d", d.Leading(), last.rev, len(b), resp.Header.Revision)
	}
}
