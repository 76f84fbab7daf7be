package etcdcoord_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	const n = 10
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
