package etcdcoord

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Aggregator keeps the live observations of one account in memory, fed by an
// etcd watch on <prefix>observations/, and aggregates them by quorum. An
// observation disappears when its observer's lease expires. Each Decider runs
// one; read it through Decider.Aggregator. Safe for concurrent use.
type Aggregator struct {
	client *clientv3.Client
	keys   keyLayout
	quorum int

	mu     sync.Mutex
	obs    map[string]Observation // by key
	synced bool
	onBad  func(BadRecord)
	bad    map[string]int64 // refused records reported: key → mod revision
	nBad   uint64
}

// BadRecords counts the observation records refused so far (each record
// version once).
func (a *Aggregator) BadRecords() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nBad
}

// refuse reports a refused record once per version; a.mu is held.
func (a *Aggregator) refuse(key string, rev int64, err error) func() {
	if a.bad[key] == rev {
		return nil
	}
	a.bad[key] = rev
	a.nBad++
	if fn := a.onBad; fn != nil {
		b := BadRecord{Key: key, Revision: rev, Err: err}
		return func() { fn(b) }
	}
	return nil
}

// onBadRecord sets fn to be called for every observation record refused (one
// that cannot be decoded, or whose body names another observer or endpoint
// than its key). Call it before run.
func (a *Aggregator) onBadRecord(fn func(BadRecord)) {
	a.mu.Lock()
	a.onBad = fn
	a.mu.Unlock()
}

// newAggregator returns an Aggregator of the observations under prefix.
func newAggregator(client *clientv3.Client, prefix string, quorum int) (*Aggregator, error) {
	keys, err := newKeyLayout(prefix)
	if err != nil {
		return nil, err
	}
	if client == nil {
		return nil, errors.Join(ErrInvalidConfig, errors.New("etcdcoord: Client is nil"))
	}
	if quorum < 1 {
		return nil, errors.Join(ErrInvalidConfig, errors.New("etcdcoord: Quorum must be >= 1"))
	}
	return &Aggregator{client: client, keys: keys, quorum: quorum, obs: map[string]Observation{}, bad: map[string]int64{}}, nil
}

// Synced reports whether the aggregator holds a current view (a full read
// followed by an unbroken watch).
func (a *Aggregator) Synced() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.synced
}

// Observations returns the live observations.
func (a *Aggregator) Observations() []Observation {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Observation, 0, len(a.obs))
	for _, o := range a.obs {
		out = append(out, o)
	}
	return out
}

// Verdicts aggregates the live observations (see Aggregate). It returns nil
// while the aggregator is not synced: no view is not a view of nothing.
func (a *Aggregator) Verdicts() map[string]Verdict {
	if !a.Synced() {
		return nil
	}
	return Aggregate(a.Observations(), a.quorum)
}

// run reads and then watches the observations until ctx ends; it returns ctx's
// error. A broken watch (lost leader, compaction) is re-established with a full
// read; meanwhile the aggregator is not synced.
func (a *Aggregator) run(ctx context.Context) error {
	for ctx.Err() == nil {
		a.runOnce(ctx)
		a.setSynced(false)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return ctx.Err()
}

func (a *Aggregator) setSynced(v bool) {
	a.mu.Lock()
	a.synced = v
	a.mu.Unlock()
}

// aggregatorProgressEvery: how often the observations' watch asks for
// progress; it is replaced after two intervals without an answer.
const aggregatorProgressEvery = 250 * time.Millisecond

func (a *Aggregator) runOnce(ctx context.Context) {
	var resp *clientv3.GetResponse
	if err := callUntil(ctx, time.Now().Add(2*time.Second), aggregatorProgressEvery, func(cctx context.Context) error {
		var err error
		resp, err = a.client.Get(cctx, a.keys.Observations(), clientv3.WithPrefix())
		return err
	}); err != nil {
		return
	}
	m := make(map[string]Observation, len(resp.Kvs))
	var calls []func()
	a.mu.Lock()
	for _, kv := range resp.Kvs {
		o, err := decodeObservation(a.keys, string(kv.Key), kv.Value)
		if err != nil {
			calls = appendCall(calls, a.refuse(string(kv.Key), kv.ModRevision, err))
			continue
		}
		m[string(kv.Key)] = o
	}
	a.obs = m
	a.synced = true
	a.mu.Unlock()
	runCalls(calls)
	// A watch whose member stops answering (liveWatch) ends like a broken one.
	_ = liveWatch(ctx, a.client, aggregatorProgressEvery, a.keys.Observations(), []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision + 1)}, func(wr clientv3.WatchResponse) bool {
		var calls []func()
		a.mu.Lock()
		for _, ev := range wr.Events {
			k := string(ev.Kv.Key)
			if !strings.HasPrefix(k, a.keys.Observations()) {
				continue
			}
			if ev.Type == clientv3.EventTypeDelete {
				delete(a.obs, k)
				delete(a.bad, k)
				continue
			}
			o, err := decodeObservation(a.keys, k, ev.Kv.Value)
			if err != nil {
				// Refused: whatever this key said before no longer counts.
				delete(a.obs, k)
				calls = appendCall(calls, a.refuse(k, ev.Kv.ModRevision, err))
				continue
			}
			a.obs[k] = o
		}
		a.mu.Unlock()
		runCalls(calls)
		return true
	})
}

func appendCall(calls []func(), fn func()) []func() {
	if fn != nil {
		calls = append(calls, fn)
	}
	return calls
}

func runCalls(calls []func()) {
	for _, fn := range calls {
		fn()
	}
}
