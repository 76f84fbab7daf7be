package etcdcoord

import "errors"

// Sentinel errors, checked with errors.Is.
var (
	// ErrInvalidConfig: a Config field cannot work as written.
	ErrInvalidConfig = errors.New("etcdcoord: invalid config")
	// ErrQuorumDown is what the decider feeds its engine for an endpoint that a
	// quorum of live observers reports Down.
	ErrQuorumDown = errors.New("etcdcoord: a quorum of observers reports the endpoint down")
	// ErrSessionLost: this process cannot prove its etcd session (lease) is alive;
	// submissions are held or halted until it can.
	ErrSessionLost = errors.New("etcdcoord: etcd session lost")
	// ErrNotAssigned: no Assignment has been applied yet, or the current one
	// does not let flow through (fencing, halted).
	ErrNotAssigned = errors.New("etcdcoord: no active assignment")
	// ErrDeposed: the decider lost its leadership while writing.
	ErrDeposed = errors.New("etcdcoord: decider is no longer the leader")
	// ErrBadRecord: a record under the prefix could not be decoded, does not
	// match its key, or was not written by the leader in office at its
	// revision. It is refused, never acted on.
	ErrBadRecord = errors.New("etcdcoord: bad record")
)

// BadRecord describes a record under the prefix that was refused: the
// assignment or an observation that could not be decoded or proven. Err wraps
// ErrBadRecord and names what is wrong (the record's content is never quoted
// in full).
type BadRecord struct {
	Key      string
	Revision int64
	Err      error
}
