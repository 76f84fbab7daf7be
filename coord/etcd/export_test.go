package etcdcoord

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A Decider builds and runs its own Aggregator; the tests run one alone.

func NewAggregator(client *clientv3.Client, prefix string, quorum int) (*Aggregator, error) {
	return newAggregator(client, prefix, quorum)
}

func RunAggregator(ctx context.Context, a *Aggregator) error { return a.run(ctx) }

func OnAggregatorBadRecord(a *Aggregator, fn func(BadRecord)) { a.onBadRecord(fn) }

// CallUntil is the retry loop every role's etcd calls go through.
var CallUntil = callUntil

// CapsAssignmentReads: f reads the assignment with a receive limit (through
// its own KV, not Client.KV).
func CapsAssignmentReads(f *Follower) bool { return f.capped != f.cfg.Client.KV }

// CapsDeciderReads: d reads the assignment with a receive limit when a term
// starts (through its own KV, not Client.KV).
func CapsDeciderReads(d *Decider) bool { return d.capped != d.cfg.Client.KV }
