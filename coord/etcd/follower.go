package etcdcoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// Target is what a Follower drives: *pathdialer.Path (with
// Config.ExternalDecisions) satisfies it.
type Target interface {
	Active() (pathdialer.Endpoint, uint64)
	Assign(ctx context.Context, endpoint string, token uint64) error
	Hold(cause error) error
	Halt(cause error) error
	Resume(ctx context.Context) error
	// Extend sets the instant until which the decision is known valid: the
	// follower passes its lease's deadline (see FollowerConfig.Margin) after
	// every keep-alive, and a past instant when the session ends.
	Extend(until time.Time) error
}

var _ Target = (*pathdialer.Path)(nil)

// FollowerConfig configures a Follower. Start from DefaultFollowerConfig.
type FollowerConfig struct {
	// Client is the etcd client. Required. The follower reads the
	// assignment with a receive limit just above the record limit, so that
	// a record it would refuse for its size is not received (only its
	// length); with a KV a caller put on Client in place of clientv3's own
	// (clientv3/namespace does), it reads through that KV, without the limit.
	Client *clientv3.Client
	// Prefix is the account's key prefix. Required.
	Prefix string
	// Name identifies this trading process (no '/'). Required.
	Name string
	// Target is the Path the follower drives. Required.
	Target Target
	// TTL of the follower's lease (whole seconds, >= 1 s). The follower halts
	// its Target when it cannot prove its lease alive (see Margin), so a
	// partition from etcd stops trading within TTL.
	TTL time.Duration
	// Margin is subtracted from the lease's deadline as measured by this
	// process (send time of the last successful keep-alive + TTL granted, on
	// the monotonic clock). The result is given to Target.Extend after every
	// keep-alive, so the Target refuses tickets once it passes even when this
	// process was paused and no goroutine ran to halt it. Margin covers the
	// clock-rate difference between this host and etcd's leader and the time
	// an order takes from the transport's validity check to the wire.
	// >= 0 and below TTL/2.
	Margin time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// OnBadRecord, optional, is called once for every assignment record the
	// follower refused (see State.Refused).
	OnBadRecord func(BadRecord)
}

// DefaultFollowerConfig returns a 5 s lease with a 500 ms margin.
func DefaultFollowerConfig() FollowerConfig {
	return FollowerConfig{TTL: 5 * time.Second, Margin: 500 * time.Millisecond}
}

// Validate names the first field that cannot work.
func (c FollowerConfig) Validate() error {
	if c.Client == nil {
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	}
	if _, err := newKeyLayout(c.Prefix); err != nil {
		return err
	}
	if err := checkName("Name", c.Name); err != nil {
		return err
	}
	if c.Target == nil {
		return fmt.Errorf("%w: Target is nil", ErrInvalidConfig)
	}
	if c.TTL < time.Second || c.TTL%time.Second != 0 {
		return fmt.Errorf("%w: TTL must be whole seconds >= 1s (got %v)", ErrInvalidConfig, c.TTL)
	}
	if c.Margin < 0 || c.Margin >= c.TTL/2 {
		return fmt.Errorf("%w: Margin must be >= 0 and below TTL/2", ErrInvalidConfig)
	}
	return nil
}

// State is what a Follower knows: the Assignment in force, its token, and
// whether this process's session is provably alive.
type State struct {
	Assignment Assignment
	// Revision of the Assignment (the fencing token when Phase is PhaseActive).
	Revision int64
	// Session is true while the follower's lease is provably alive.
	Session bool
	// Applied is true when the Target carries out the Assignment (and it was
	// acknowledged).
	Applied bool
	// Refused is why the record at Revision was refused (empty when it was
	// accepted). Assignment is then empty: the follower holds (grants
	// nothing) until a record it can accept replaces it, and acknowledges the
	// refusal so that the leading decider overwrites it. Losing the session
	// still halts.
	Refused string
}

// Follower drives one trading process's Path from the account's Assignment:
// it holds on PhaseFencing, halts on PhaseHalted and when its etcd session is
// lost, assigns and releases on PhaseActive under the record's revision as the
// fencing token, and acknowledges each Assignment it applied. A fence holds
// submissions as soon as the watch delivers it (a hold grants nothing, so it
// needs no proof of its writer); every record's writer is proven before it
// is acknowledged, and an active record's before flow is released. Create it with
// NewFollower; Run works until its context ends.
type Follower struct {
	cfg  FollowerConfig
	keys keyLayout
	log  *slog.Logger
	// capped reads the assignment: an answer above the record limit (plus
	// room for keys and fields) is refused from its length, before its
	// body is received (see tooLarge).
	capped clientv3.KV

	mu       sync.Mutex
	st       State
	lease    clientv3.LeaseID
	deadline time.Time     // the lease's, minus Margin; zero without a session
	wake     chan struct{} // buffered 1: the applier has something new
	opStop   context.CancelFunc
	changed  chan struct{}
	// reported: the last refused revision logged and reported.
	reported int64
	// verified: the last revision whose writer was proven the leader.
	verified int64
	// ackRev: the mod revision of this follower's key after its last write.
	ackRev int64
	// trace, set only by tests before Run, is told of each step of a
	// session and of each watch event as it arrives.
	trace func(step string, rev int64)
}

func (f *Follower) traced(step string, rev int64) {
	if f.trace != nil {
		f.trace(step, rev)
	}
}

// NewFollower validates cfg and returns a Follower.
func NewFollower(cfg FollowerConfig) (*Follower, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	keys, _ := newKeyLayout(cfg.Prefix)
	f := &Follower{cfg: cfg, keys: keys, log: cfg.Logger, wake: make(chan struct{}, 1), changed: make(chan struct{})}
	f.capped = capReads(cfg.Client, maxRecordBytes+len(keys.Assignment())+len(keys.Follower(cfg.Name))+answerFieldBytes)
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	return f, nil
}

// State returns what the follower knows now.
func (f *Follower) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

// Changed returns a channel closed at the next change of State.
func (f *Follower) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// setDeadline records the session's deadline (zero: no session) and passes it
// to the Target when the Target carries out the State in force: a Target not
// (yet) applying the current Assignment gets no extension, so its validity
// lapses rather than outlive what it was granted for. Without a session the
// Target's validity lapses at once.
func (f *Follower) setDeadline(d time.Time) {
	f.mu.Lock()
	f.deadline = d
	applied := f.st.Applied && f.st.Session
	f.mu.Unlock()
	switch {
	case d.IsZero():
		_ = f.cfg.Target.Extend(time.Now())
	case applied:
		_ = f.cfg.Target.Extend(d)
	}
}

// update changes the state under the lock, wakes the applier and interrupts
// whatever it is doing.
func (f *Follower) update(fn func(*State)) {
	f.mu.Lock()
	before := f.st
	fn(&f.st)
	if f.st.Assignment != before.Assignment || f.st.Revision != before.Revision || f.st.Session != before.Session || f.st.Refused != before.Refused {
		f.st.Applied = false
		if f.opStop != nil {
			f.opStop()
		}
		close(f.changed)
		f.changed = make(chan struct{})
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
	f.mu.Unlock()
}

// Run holds the Target, then keeps the session, watches the Assignment and
// applies it until ctx ends, when it revokes its lease and returns ctx's
// error. It leaves the Target halted if ctx ends: a follower that stops
// following must not keep trading on a stale token.
func (f *Follower) Run(ctx context.Context) error {
	_ = f.cfg.Target.Hold(ErrNotAssigned)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.apply(ctx)
	}()
	defer wg.Wait()
	defer func() { _ = f.cfg.Target.Halt(fmt.Errorf("follower stopped: %w", ErrSessionLost)) }()
	for ctx.Err() == nil {
		f.session(ctx)
		f.update(func(s *State) { s.Session = false })
		select {
		case <-ctx.Done():
		case <-time.After(f.cfg.TTL / 10):
		}
	}
	return ctx.Err()
}

// session runs one lease: grant, register, read and watch the Assignment, keep
// the lease alive, and return when it cannot be proven alive any more.
//
// Every call has a short timeout of its own (see callUntil), and one that
// timed out is made again at once, on the next member: one etcd member that
// stops answering with its connections open costs a fraction of the lease,
// not the session.
func (f *Follower) session(ctx context.Context) {
	c := f.cfg.Client
	ttl := int64(f.cfg.TTL / time.Second)
	floor := f.callFloor()
	var g *clientv3.LeaseGrantResponse
	var sent time.Time
	if err := callUntil(ctx, time.Now().Add(f.cfg.TTL/2), floor, func(cctx context.Context) error {
		sent = time.Now()
		var err error
		g, err = c.Grant(cctx, ttl)
		return err
	}); err != nil {
		return
	}
	deadline := sent.Add(time.Duration(g.TTL)*time.Second - f.cfg.Margin)
	f.traced("granted", 0)
	// Keep-alives every TTL/4 from the grant, not from the end of the setup
	// below: a setup that took longer (a starved host starting many
	// followers) renews the lease at once when it is done.
	tick := time.NewTicker(f.cfg.TTL / 4)
	defer tick.Stop()
	// Whatever ends this session, the Target's decision lapses now: the halt
	// the applier sends may come later (or, in a paused process, after the
	// lease is long gone).
	defer f.setDeadline(time.Time{})
	f.setDeadline(deadline)
	defer func() {
		_ = callUntil(context.Background(), time.Now().Add(500*time.Millisecond), floor, func(cctx context.Context) error {
			_, err := c.Revoke(cctx, g.ID)
			return err
		})
		f.mu.Lock()
		f.lease = 0
		f.mu.Unlock()
	}()
	// Register before reading: a decider that waits for acknowledgements sees
	// this follower from now on, and what it reads next is at least as new.
	// Both in one transaction (register), then the proof of the record's
	// writer (settle).
	f.mu.Lock()
	f.ackRev = 0
	f.mu.Unlock()
	hdr, kv, unchanged, read, err := f.register(ctx, g.ID)
	if err != nil {
		return
	}
	f.traced("registered", 0)
	f.mu.Lock()
	f.lease = g.ID
	f.mu.Unlock()
	// On return the session is no longer provable: halt before anything else
	// (the revoke above may wait on a dead network).
	defer f.update(func(s *State) { s.Session = false })
	var rev int64
	if read {
		rev, err = f.settle(ctx, hdr, kv, unchanged, deadline)
	} else {
		rev, err = f.readAssignmentAfter(ctx, deadline, true, true)
	}
	if err != nil {
		return
	}
	f.traced("read", rev)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	lost := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(lost)
		f.watch(sctx, rev)
	}()
	watchdog := time.NewTimer(time.Until(deadline))
	defer watchdog.Stop()
	for {
		select {
		case <-sctx.Done():
			return
		case <-lost:
			return // the assignment cannot be read: a new session
		case <-watchdog.C:
			f.log.Warn("etcdcoord: session cannot be proven alive: halting", "follower", f.cfg.Name)
			return
		case <-tick.C:
			var ka *clientv3.LeaseKeepAliveResponse
			var sent time.Time
			err := callUntil(sctx, deadline, floor, func(cctx context.Context) error {
				sent = time.Now()
				var err error
				ka, err = c.KeepAliveOnce(cctx, g.ID)
				return err
			})
			if err != nil {
				if errors.Is(err, rpctypes.ErrLeaseNotFound) {
					return
				}
				continue // the watchdog decides
			}
			deadline = sent.Add(time.Duration(ka.TTL)*time.Second - f.cfg.Margin)
			f.setDeadline(deadline)
			watchdog.Reset(time.Until(deadline))
			// Backstop for a watch that lags: a linearizable read, one
			// attempt (the watch re-reads on its own when its stream is
			// silent), so that it never delays the next keep-alive.
			_, _ = f.readAssignment(sctx, time.Now().Add(floor), true)
		}
	}
}

// register writes this follower's first acknowledgement (Ack{}: registered,
// nothing applied) under lease, guarded as putAck guards it, and reads the
// assignment in the same transaction: what it returns (the header revision
// and the assignment's key-value, nil when there is none) is at least as new
// as the registration (read false: it was not read, see below). As
// readAssignment does, it does not fetch the record again while the key is
// still at the revision of the State in force (unchanged): a session that
// follows another costs a few bytes however large the record is.
//
// An answer above the record limit (the assignment, or this follower's key
// as someone else wrote it) is refused by gRPC from its length, before its
// body is received; the registration is then made again without the keys'
// values (read false), and readAssignment reads the assignment alone.
func (f *Follower) register(ctx context.Context, lease clientv3.LeaseID) (hdr int64, kv *mvccpb.KeyValue, unchanged, read bool, err error) {
	key, akey := f.keys.Follower(f.cfg.Name), f.keys.Assignment()
	b, _ := json.Marshal(Ack{})
	val := string(b)
	keysOnly := false // kept across attempts: a timeout does not fetch it again
	err = callUntil(ctx, f.sessionDeadline(), f.callFloor(), func(cctx context.Context) error {
		for tries := 0; tries < 3; {
			f.mu.Lock()
			prev, known := f.ackRev, f.st.Revision
			f.mu.Unlock()
			var opts []clientv3.OpOption
			if keysOnly {
				opts = []clientv3.OpOption{clientv3.WithKeysOnly()}
			}
			// known 0: the compare holds only where the key is absent.
			rd := clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(akey), "=", known)}, nil, []clientv3.Op{clientv3.OpGet(akey, opts...)})
			resp, err := f.capped.Txn(cctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", prev)).
				Then(clientv3.OpPut(key, val, clientv3.WithLease(lease)), rd).
				Else(clientv3.OpGet(key, opts...), rd).Commit()
			if !keysOnly && tooLarge(err) {
				// Carried out all the same: an earlier attempt's write is
				// recognised below by its lease.
				keysOnly = true
				continue
			}
			if err != nil {
				return err
			}
			tries++
			hdr, kv, unchanged, read = resp.Header.Revision, nil, false, !keysOnly
			switch rr := resp.Responses[1].GetResponseTxn(); {
			case rr == nil:
				return errors.New("etcdcoord: registration: no answer to the read of the assignment")
			case rr.Succeeded:
				unchanged, read = known > 0, true
			default:
				if kvs := rr.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 && !keysOnly {
					kv = kvs[0]
				}
			}
			now := resp.Header.Revision
			if !resp.Succeeded {
				kvs := resp.Responses[0].GetResponseRange().Kvs
				// Nothing but this registration writes under its new lease.
				if len(kvs) == 1 && (keysOnly || string(kvs[0].Value) == val) && kvs[0].Lease == int64(lease) {
					now = kvs[0].ModRevision // an earlier attempt of this write landed
				} else {
					now = 0
					if len(kvs) == 1 {
						now = kvs[0].ModRevision
					}
					f.mu.Lock()
					f.ackRev = now
					f.mu.Unlock()
					continue // changed by someone else: overwrite it
				}
			}
			f.mu.Lock()
			f.ackRev = now
			f.mu.Unlock()
			return nil
		}
		return errors.New("etcdcoord: the acknowledgement key keeps changing under the follower")
	})
	return hdr, kv, unchanged, read, err
}

// settle records kv, read at header revision hdr (nil: no assignment;
// unchanged: the record of the State in force), as readAssignment records
// what it reads, marking the session alive, and returns hdr. When the writer
// cannot be proven in time it reads again (readAssignment).
func (f *Follower) settle(ctx context.Context, hdr int64, kv *mvccpb.KeyValue, unchanged bool, until time.Time) (int64, error) {
	if unchanged {
		f.update(func(s *State) { s.Session = true })
		return hdr, nil
	}
	var a Assignment
	var refused error
	var rev int64
	if kv != nil {
		rev = kv.ModRevision
		if err := callUntil(ctx, until, f.callFloor(), func(cctx context.Context) error {
			var err error
			a, refused, err = f.accept(cctx, kv)
			return err
		}); err != nil {
			if ctx.Err() != nil {
				return 0, err
			}
			return f.readAssignment(ctx, until, true)
		}
	}
	f.record(a, rev, refused, func(s *State) bool { return rev >= s.Revision || !s.Session }, true)
	return hdr, nil
}

// callFloor is the timeout of the first attempt of an etcd call (firstTimeout).
func (f *Follower) callFloor() time.Duration { return firstTimeout(f.cfg.TTL) }

// sessionDeadline is the session's deadline in force (zero: none).
func (f *Follower) sessionDeadline() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deadline
}

// readAssignment reads the Assignment (attempts as callUntil makes them, until
// until) and records it (marking the session alive when session is true). It
// returns the read's header revision. A record that cannot be accepted is
// recorded as refused, not returned as an error: the session goes on and the
// Target holds.
//
// When the key is still at the revision of the State in force, its value is
// not fetched again: the backstop read every TTL/4 costs a few bytes however
// large the record is (etcd's request limit, not the library's record limit,
// bounds what may be written). Nor is a record above the record limit
// received at all (see readOversized): it is refused from its size, once per
// revision, whatever the attempts' timeouts.
func (f *Follower) readAssignment(ctx context.Context, until time.Time, session bool) (int64, error) {
	return f.readAssignmentAfter(ctx, until, session, false)
}

// readAssignmentAfter is readAssignment; tooBig: an answer carrying the
// assignment was just above the record limit, so the first attempt starts
// as readOversized (the value is not asked for again before its revision is
// known).
func (f *Follower) readAssignmentAfter(ctx context.Context, until time.Time, session, tooBig bool) (int64, error) {
	var hdr int64
	var unchanged bool
	var a Assignment
	var rev int64
	var refused error
	key := f.keys.Assignment()
	err := callUntil(ctx, until, f.callFloor(), func(cctx context.Context) error {
		f.mu.Lock()
		known := f.st.Revision
		f.mu.Unlock()
		unchanged, a, rev, refused = false, Assignment{}, 0, nil
		var tr *clientv3.TxnResponse
		var err error
		if tooBig {
			err = errAnswerTooLarge
		} else {
			// known 0: the compare holds only where the key is absent.
			tr, err = f.capped.Txn(cctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", known)).Else(clientv3.OpGet(key)).Commit()
		}
		var kvs []*mvccpb.KeyValue
		switch {
		case errors.Is(err, errAnswerTooLarge) || tooLarge(err):
			var big bool
			if hdr, kvs, big, err = readOversized(cctx, f.cfg.Client, f.capped, key); err != nil {
				return err
			}
			if big {
				rev = kvs[0].ModRevision
				refused = fmt.Errorf("%w: the assignment at revision %d is above the %d-byte limit (not fetched)", ErrBadRecord, rev, maxRecordBytes)
				return nil
			}
		case err != nil:
			return err
		case tr.Succeeded:
			hdr, unchanged = tr.Header.Revision, known > 0
			return nil
		default:
			hdr, kvs = tr.Header.Revision, tr.Responses[0].GetResponseRange().Kvs
		}
		if len(kvs) == 0 {
			return nil
		}
		rev = kvs[0].ModRevision
		a, refused, err = f.accept(cctx, kvs[0])
		return err
	})
	if err != nil {
		return 0, err
	}
	if unchanged {
		if session {
			f.update(func(s *State) { s.Session = true })
		}
		return hdr, nil
	}
	f.record(a, rev, refused, func(s *State) bool { return rev >= s.Revision || !s.Session }, session)
	return hdr, nil
}

// readOversized reads the assignment key after an answer above the record
// limit: the revision of the record in force (a read without its value, on
// kv), then that revision's value alone, guarded by it (on capped, whose
// answers are limited as capReads limits them). An answer above the limit
// again proves that the record at that revision is above the limit (it
// carries nothing else): big is true and kvs holds the record without its
// value. A record that fits is returned as a read of it would return it (kvs
// empty: no assignment).
func readOversized(ctx context.Context, kv, capped clientv3.KV, key string) (hdr int64, kvs []*mvccpb.KeyValue, big bool, err error) {
	for range 3 {
		r, err := kv.Get(ctx, key, clientv3.WithKeysOnly())
		if err != nil {
			return 0, nil, false, err
		}
		if len(r.Kvs) == 0 {
			return r.Header.Revision, nil, false, nil
		}
		at := r.Kvs[0].ModRevision
		tr, err := capped.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", at)).Then(clientv3.OpGet(key)).Commit()
		switch {
		case tooLarge(err):
			return r.Header.Revision, r.Kvs, true, nil
		case err != nil:
			return 0, nil, false, err
		case tr.Succeeded:
			return tr.Header.Revision, tr.Responses[0].GetResponseRange().Kvs, false, nil
		}
		// Written again in between: read the new revision.
	}
	return 0, nil, false, errors.New("etcdcoord: the assignment keeps changing while it is read")
}

// capReads returns a KV that makes cli's calls with a receive limit of limit
// bytes (an answer above it is refused from its length, see tooLarge), or
// cli.KV itself when a caller put its own KV there (clientv3/namespace
// does): that KV is read through, without the limit.
func capReads(cli *clientv3.Client, limit int) clientv3.KV {
	if reflect.TypeOf(cli.KV) != reflect.TypeOf(clientv3.NewKV(cli)) {
		return cli.KV
	}
	// clientv3's own KV: the same calls on the same connection.
	return clientv3.NewKVFromKVClient(cappedKV{KVClient: clientv3.RetryKVClient(cli), limit: grpc.MaxCallRecvMsgSize(limit)}, cli)
}

// errAnswerTooLarge stands for an answer tooLarge refused.
var errAnswerTooLarge = errors.New("etcdcoord: answer above the record limit")

// answerFieldBytes bounds what an answer to a read of the assignment carries
// besides the keys and the record: the header and each key-value's numbers
// and field tags (a few hundred bytes at most).
const answerFieldBytes = 4 << 10

// cappedKV passes limit (a receive limit) to every read: an answer above it
// fails at once with codes.ResourceExhausted, from the length gRPC reads
// before the body (the rest of the body is not taken).
type cappedKV struct {
	pb.KVClient
	limit grpc.CallOption
}

func (c cappedKV) Range(ctx context.Context, in *pb.RangeRequest, opts ...grpc.CallOption) (*pb.RangeResponse, error) {
	return c.KVClient.Range(ctx, in, append(opts, c.limit)...)
}

func (c cappedKV) Txn(ctx context.Context, in *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	return c.KVClient.Txn(ctx, in, append(opts, c.limit)...)
}

// tooLarge: the answer was above the receive limit of cappedKV (not etcd's
// own "too many requests", which shares the code).
func tooLarge(err error) bool {
	st, ok := status.FromError(err)
	return err != nil && ok && st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "larger than max")
}

// accept decodes the record kv (the assignment key at its revision), proves
// it is the write the decider committed there (verifyBinding: not a replay or
// a copy) and that its writer was the leader at that revision. refused says
// why it cannot be acted on; err is a failure to find out (etcd unreachable),
// after which nothing is recorded.
func (f *Follower) accept(ctx context.Context, kv *mvccpb.KeyValue) (a Assignment, refused, err error) {
	rev := kv.ModRevision
	a, refused = decodeAssignment(kv.Value)
	if refused == nil {
		refused = verifyBinding(a, kv)
	}
	if refused != nil {
		return Assignment{}, refused, nil
	}
	f.mu.Lock()
	done := f.verified == rev
	f.mu.Unlock()
	if done {
		return a, nil, nil
	}
	refused, err = verifyWriter(ctx, f.cfg.Client, f.keys, a, rev)
	if err != nil {
		return Assignment{}, nil, err
	}
	if refused != nil {
		return Assignment{}, refused, nil
	}
	f.mu.Lock()
	f.verified = rev
	f.mu.Unlock()
	return a, nil, nil
}

// record puts the record at rev into the State when newer(State) holds (and
// sets Session when session is true); a refused record is logged and
// reported once, and the Target holds.
func (f *Follower) record(a Assignment, rev int64, refused error, newer func(*State) bool, session bool) {
	var report bool
	f.update(func(s *State) {
		if newer(s) {
			s.Assignment, s.Revision, s.Refused = a, rev, ""
			if refused != nil {
				s.Refused = refused.Error()
				if f.reported != rev {
					f.reported, report = rev, true
				}
			}
		}
		if session {
			s.Session = true
		}
	})
	if report {
		f.log.Error("etcdcoord: assignment refused: holding until a valid one replaces it",
			"follower", f.cfg.Name, "revision", rev, "err", refused)
		if f.cfg.OnBadRecord != nil {
			f.cfg.OnBadRecord(BadRecord{Key: f.keys.Assignment(), Revision: rev, Err: refused})
		}
	}
}

// watch follows the Assignment from rev+1 until ctx ends. A watch that goes
// silent (liveWatch) is replaced by one on a new stream from the last event
// seen; one that fails otherwise (compaction, a member without a leader), by
// one from a linearizable read. It returns (and the session ends) only when
// that read fails for a reason every member would share.
//
// A stream that goes silent again from the same revision, with no event in
// between, while the key holds a record it has not delivered, may be
// delivering one large record (up to etcd's request limit) slower than the
// silence bound on a loaded host, and a new stream would send it again from
// its first byte: each such restart doubles the bound, up to TTL/2, and the
// stream that delivers an event under a doubled bound is replaced by one
// under the first bound at once. A member that stops answering is left after
// two progress intervals (TTL/5) while nothing is left to deliver, and the
// doubled bound never outlives the delivery it waited for.
func (f *Follower) watch(ctx context.Context, rev int64) {
	every := f.cfg.TTL / 10
	bound, silentFrom := every, int64(-1)
	for ctx.Err() == nil {
		from, short := rev, false
		err := liveWatch(ctx, f.cfg.Client, bound, f.keys.Assignment(), []clientv3.OpOption{clientv3.WithRev(rev + 1)}, func(wr clientv3.WatchResponse) bool {
			for _, ev := range wr.Events {
				r := ev.Kv.ModRevision
				f.traced("event", r)
				if ev.Type != clientv3.EventTypePut {
					// Deleted: nothing to trade on.
					f.record(Assignment{}, r, fmt.Errorf("%w: the assignment was deleted", ErrBadRecord), func(s *State) bool { return r > s.Revision }, false)
					rev = r
					continue
				}
				f.holdEarly(ev.Kv)
				var a Assignment
				var refused error
				if err := callUntil(ctx, time.Now().Add(f.cfg.TTL/3), f.callFloor(), func(cctx context.Context) error {
					var err error
					a, refused, err = f.accept(cctx, ev.Kv)
					return err
				}); err != nil {
					return false // cannot check the writer: re-read
				}
				f.record(a, r, refused, func(s *State) bool { return r > s.Revision }, false)
				rev = r
			}
			if bound > every && len(wr.Events) > 0 {
				short = true // delivered: back to the first bound, on a new stream
				return false
			}
			return true
		})
		if ctx.Err() != nil {
			return
		}
		if short {
			bound, silentFrom = every, -1
			continue
		}
		if errors.Is(err, errWatchSilent) {
			// The member stopped answering: watch again from the last event
			// seen, on a new stream (the next member). Nothing is skipped:
			// every record written since is delivered, in order.
			if rev == from && rev == silentFrom && f.pending(ctx, rev, every) {
				bound = min(2*bound, f.cfg.TTL/2)
			} else {
				bound = every
			}
			silentFrom = rev
			f.log.Debug("etcdcoord: watch stream silent: watching again", "follower", f.cfg.Name, "from", rev+1, "silence_bound", 2*bound)
			continue
		}
		bound, silentFrom = every, -1
		if err != nil {
			f.log.Debug("etcdcoord: watch ended: re-reading", "follower", f.cfg.Name, "err", err)
		}
		until := f.sessionDeadline()
		r, err := f.readAssignment(ctx, until, false)
		if err == nil {
			rev = max(rev, r)
			continue
		}
		if ctx.Err() == nil && !retryable(err) {
			// Refused by every member alike (permissions, for one): end the
			// session rather than hold every switch while keep-alives work.
			f.log.Warn("etcdcoord: the assignment cannot be read: ending the session", "follower", f.cfg.Name, "err", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
}

// pending reports whether the assignment key was written after rev (a record
// the watch has yet to deliver), as a read of its revision alone (no value)
// finds out within wait; false when it cannot. A stream silent with nothing
// to deliver is a member that stopped answering, not a slow delivery.
func (f *Follower) pending(ctx context.Context, rev int64, wait time.Duration) bool {
	var moved bool
	_ = callUntil(ctx, time.Now().Add(wait), f.callFloor(), func(cctx context.Context) error {
		r, err := f.cfg.Client.Get(cctx, f.keys.Assignment(), clientv3.WithKeysOnly())
		if err != nil {
			return err
		}
		moved = len(r.Kvs) > 0 && r.Kvs[0].ModRevision > rev
		return nil
	})
	return moved
}

// holdEarly holds the Target at once on a fence or a halt newer than the
// State in force, before its writer is proven. A hold grants nothing, so it
// needs no proof of the writer: that proof (a round trip to etcd) comes
// before the record is applied and acknowledged, not before the old endpoint
// stops being granted. An active record is held by nothing here (it is
// applied once proven), nor is one that fails the checks made without etcd
// (it is refused, and held, at once).
func (f *Follower) holdEarly(kv *mvccpb.KeyValue) {
	f.mu.Lock()
	newer := kv.ModRevision > f.st.Revision && f.verified != kv.ModRevision
	f.mu.Unlock()
	if !newer {
		return
	}
	a, err := decodeAssignment(kv.Value)
	if err == nil {
		err = verifyBinding(a, kv)
	}
	if err != nil || a.Phase == PhaseActive {
		return
	}
	// A switch of the Target's own under way refuses the hold: the applier
	// halts it once the record is proven.
	cause := fmt.Errorf("%w: switch from %q to %q under way (token %d)", ErrNotAssigned, a.Endpoint, a.Target, kv.ModRevision)
	if a.Phase == PhaseHalted {
		cause = fmt.Errorf("%w: halted at token %d: %s", ErrNotAssigned, kv.ModRevision, a.Reason)
	}
	_ = f.cfg.Target.Hold(cause)
}

// apply carries the State out on the Target, one step at a time, and
// acknowledges it. A newer State interrupts the step in progress.
func (f *Follower) apply(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-retry.C:
		}
		f.mu.Lock()
		st := f.st
		if st.Applied {
			f.mu.Unlock()
			continue
		}
		opCtx, stop := context.WithCancel(ctx)
		f.opStop = stop
		f.mu.Unlock()
		err := f.applyOne(opCtx, st)
		stop()
		if err != nil {
			if ctx.Err() == nil && opCtx.Err() == nil {
				f.log.Warn("etcdcoord: apply assignment", "follower", f.cfg.Name, "err", err)
			}
			retry.Reset(f.cfg.TTL / 10)
			continue
		}
	}
}

func (f *Follower) applyOne(ctx context.Context, st State) error {
	t := f.cfg.Target
	if !st.Session {
		return t.Halt(ErrSessionLost)
	}
	if st.Refused != "" {
		// Hold, not halt: a refused record is no decision, and the leading
		// decider overwrites it. The hold grants nothing; the session's end
		// still halts.
		cause := fmt.Errorf("%w: the assignment at revision %d was refused: %s", ErrBadRecord, st.Revision, st.Refused)
		if err := t.Hold(cause); err != nil {
			// A switch of our own is under way: halting abandons it, so it
			// cannot release flow while the record is refused.
			if err := t.Halt(cause); err != nil {
				return err
			}
		}
		return f.ack(ctx, st)
	}
	if st.Revision == 0 {
		return t.Hold(ErrNotAssigned)
	}
	a := st.Assignment
	switch a.Phase {
	case PhaseFencing:
		cause := fmt.Errorf("%w: switch from %q to %q under way (token %d)", ErrNotAssigned, a.Endpoint, a.Target, st.Revision)
		if err := t.Hold(cause); err != nil {
			// A switch of our own is under way: halting abandons it, so it
			// cannot release flow while the fence is in force.
			if err := t.Halt(cause); err != nil {
				return err
			}
		}
	case PhaseHalted:
		if err := t.Halt(fmt.Errorf("%w: %s", ErrNotAssigned, a.Reason)); err != nil {
			return err
		}
	case PhaseActive:
		// Before the gate opens under this Assignment, its validity is the
		// session's deadline (a Path never extended would not expire).
		f.mu.Lock()
		dl := f.deadline
		f.mu.Unlock()
		if dl.IsZero() {
			return t.Halt(ErrSessionLost)
		}
		if err := t.Extend(dl); err != nil {
			return err
		}
		ep, gen := t.Active()
		tok := uint64(st.Revision)
		if ep.Name != a.Endpoint || gen < tok {
			if err := t.Assign(ctx, a.Endpoint, tok); err != nil && !errors.Is(err, pathdialer.ErrStaleToken) {
				return err
			}
		}
		if ep, gen := t.Active(); ep.Name != a.Endpoint || gen != tok {
			return fmt.Errorf("etcdcoord: target on %q under %d, want %q under %d", ep.Name, gen, a.Endpoint, tok)
		}
		if err := t.Resume(ctx); err != nil {
			return err
		}
	}
	return f.ack(ctx, st)
}

// ack records that st was applied, if it is still the State in force.
func (f *Follower) ack(ctx context.Context, st State) error {
	f.mu.Lock()
	lease := f.lease
	cur := f.st
	f.mu.Unlock()
	if cur.Assignment != st.Assignment || cur.Revision != st.Revision || cur.Refused != st.Refused || !cur.Session || lease == 0 {
		return nil // superseded: the applier runs again
	}
	ack := Ack{Token: uint64(st.Revision), Phase: st.Assignment.Phase, Endpoint: st.Assignment.Endpoint}
	if st.Refused != "" {
		ack = Ack{Token: uint64(st.Revision), Phase: PhaseRefused}
	}
	b, _ := json.Marshal(ack)
	if err := f.putAck(ctx, lease, string(b)); err != nil {
		return fmt.Errorf("acknowledge: %w", err)
	}
	f.mu.Lock()
	var extend time.Time
	if f.st.Assignment == st.Assignment && f.st.Revision == st.Revision && f.st.Refused == st.Refused && f.st.Session {
		f.st.Applied = true
		extend = f.deadline
		close(f.changed)
		f.changed = make(chan struct{})
	}
	f.mu.Unlock()
	if !extend.IsZero() {
		// The Target now carries out the Assignment in force: its decision is
		// valid until the session's deadline.
		_ = f.cfg.Target.Extend(extend)
	}
	return nil
}

// putAck writes the acknowledgement val under lease, guarded by the key's mod
// revision after this follower's last write to it. An attempt that timed out
// on a member that stopped answering is still in that member's socket and may
// be carried out when it resumes, after later acknowledgements: the guard
// makes such a late write fail instead of putting an older token back (the
// decider would wait for this follower again). When the key was changed by
// anyone else, it is overwritten.
func (f *Follower) putAck(ctx context.Context, lease clientv3.LeaseID, val string) error {
	key := f.keys.Follower(f.cfg.Name)
	return callUntil(ctx, f.sessionDeadline(), f.callFloor(), func(cctx context.Context) error {
		for range 3 {
			f.mu.Lock()
			prev := f.ackRev
			f.mu.Unlock()
			resp, err := f.cfg.Client.Txn(cctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", prev)).
				Then(clientv3.OpPut(key, val, clientv3.WithLease(lease))).
				Else(clientv3.OpGet(key)).Commit()
			if err != nil {
				return err
			}
			now := resp.Header.Revision
			if !resp.Succeeded {
				kvs := resp.Responses[0].GetResponseRange().Kvs
				if len(kvs) == 1 && string(kvs[0].Value) == val && kvs[0].Lease == int64(lease) {
					now = kvs[0].ModRevision // an earlier attempt of this write landed
				} else {
					if len(kvs) == 1 {
						now = kvs[0].ModRevision
					} else {
						now = 0
					}
					f.mu.Lock()
					f.ackRev = now
					f.mu.Unlock()
					continue // changed by someone else: overwrite it
				}
			}
			f.mu.Lock()
			f.ackRev = now
			f.mu.Unlock()
			return nil
		}
		return errors.New("etcdcoord: the acknowledgement key keeps changing under the follower")
	})
}
