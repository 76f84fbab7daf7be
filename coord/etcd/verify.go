package etcdcoord

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
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

// verifyBinding proves that kv (the assignment key at the record's revision)
// is the write the decider committed for a: the key's CreateRevision and
// Version are the ones the record names (see Assignment.Created). Any other
// write of the same bytes (a replay of a genuine record, at once or later, a
// copy restored by hand) has a higher Version or another CreateRevision. A
// record that created its key can be replayed after a delete, so it may not
// release flow: PhaseActive is refused. It needs no history: a compacted
// etcd proves it as well.
func verifyBinding(a Assignment, kv *mvccpb.KeyValue) error {
	if a.Created == 0 {
		if kv.Version != 1 || a.Version != 1 {
			return fmt.Errorf("%w: the assignment at revision %d claims to have created its key (version %d), but the key is at version %d: a replay or a copy",
				ErrBadRecord, kv.ModRevision, a.Version, kv.Version)
		}
		if a.Phase == PhaseActive {
			return fmt.Errorf("%w: the assignment at revision %d created its key and releases flow: only a fence or a halt may create the key (a record that created it can be replayed after a delete)",
				ErrBadRecord, kv.ModRevision)
		}
		return nil
	}
	if kv.CreateRevision != a.Created || kv.Version != a.Version {
		return fmt.Errorf("%w: the assignment at revision %d is not the decider's write there: it was written as version %d of the key created at %d, and the key is at version %d created at %d: a replay or a copy",
			ErrBadRecord, kv.ModRevision, a.Version, a.Created, kv.Version, kv.CreateRevision)
	}
	return nil
}
