package etcdcoord

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// verifyWriter proves that the decider named in a, written at revision rev,
// led the election at rev: the oldest key under the election prefix then was
// its key (<prefix>election/<Lease in hex>), created at Term. When etcd has
// compacted rev away, the writer must lead now. refused says why the record
// cannot be acted on; err is a failure to find out.
func verifyWriter(ctx context.Context, cli *clientv3.Client, keys keyLayout, a Assignment, rev int64) (refused, err error) {
	want := keys.electionKey(a.Lease)
	leaderAt := func(opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
		opts = append(opts, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
		return cli.Get(ctx, keys.Election()+"/", opts...)
	}
	resp, err := leaderAt(clientv3.WithRev(rev))
	if errors.Is(err, rpctypes.ErrCompacted) {
		if resp, err = leaderAt(); err != nil {
			return nil, err
		}
		if len(resp.Kvs) > 0 && string(resp.Kvs[0].Key) == want && resp.Kvs[0].CreateRevision == a.Term {
			return nil, nil
		}
		return fmt.Errorf("%w: the assignment at revision %d names decider %s (term %d), which does not lead now, and etcd has compacted the history that would prove it led then",
			ErrBadRecord, rev, excerpt(a.Decider), a.Term), nil
	}
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return fmt.Errorf("%w: the assignment at revision %d was written while no decider led", ErrBadRecord, rev), nil
	}
	if kv := resp.Kvs[0]; string(kv.Key) != want || kv.CreateRevision != a.Term {
		return fmt.Errorf("%w: the assignment at revision %d names decider %s (term %d, lease %x), but the leader then was the candidate of term %d",
			ErrBadRecord, rev, excerpt(a.Decider), a.Term, a.Lease, kv.CreateRevision), nil
	}
	return nil, nil
}
