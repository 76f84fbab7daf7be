package etcdcoord

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// One etcd member can stop answering while its TCP connections stay open (a
// stopped process, a stalled disk, a hung VM): quorum is intact, yet every call
// clientv3 places on that member waits for its context. clientv3 balances with
// gRPC's round_robin policy (client/v3/internal/resolver: loadBalancingPolicy
// "round_robin"), so each new unary call or stream goes to the next member
// whose connection is READY, and a silent member's connection stays READY
// until gRPC's keepalive closes it, which grpc-go allows no sooner than 10 s
// after the last read (keepalive.ClientParameters.Time has a 10 s floor, see
// clientv3.Config.DialKeepAliveTime). Hence: every call here has a timeout of
// its own, short at first (see callUntil), and a call that timed out is made
// again at once: the balancer places the new attempt on another member. Doing
// it again at once matters: a caller that makes the same few calls every round
// would otherwise meet the silent member in the same place every round.

// firstTimeout is the timeout of a first attempt for a role whose lease is
// ttl: a 25th of it (200 ms for a 5 s lease), at least 50 ms. A member that
// answers at all answers a loopback or LAN call far sooner; a later attempt
// doubles it, so a cluster that is merely slow still gets its calls through.
func firstTimeout(ttl time.Duration) time.Duration {
	return max(ttl/25, 50*time.Millisecond)
}

// retryable: a failure another member may not share (this attempt's own
// timeout, a member without a leader or unreachable).
func retryable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	code := status.Code(err)
	var ee rpctypes.EtcdError // clientv3 turns some statuses into these
	if errors.As(err, &ee) {
		code = ee.Code()
	}
	if code == codes.Unknown {
		// The server's own context expired (a member waiting on a leader
		// that stopped answering): etcd passes it on as Unknown.
		if st, ok := status.FromError(err); ok && st.Message() == context.DeadlineExceeded.Error() {
			return true
		}
	}
	return code == codes.Unavailable || code == codes.DeadlineExceeded
}

// callUntil runs op until it succeeds, fails for a reason another member
// would share, until passes or ctx ends. The first attempt has the timeout
// first, each later one twice its predecessor's up to 4*first, none beyond
// until: the round-robin balancer places each attempt on the next member, so
// a member that stopped answering costs one short attempt each time the
// rotation reaches it, not the time left. It
// returns op's last error (context.DeadlineExceeded if until had passed
// before the first attempt).
func callUntil(ctx context.Context, until time.Time, first time.Duration, op func(context.Context) error) error {
	err := error(context.DeadlineExceeded)
	for t := first; ; t = min(2*t, 4*first) {
		left := time.Until(until)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if left <= 0 {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, min(t, left))
		start := time.Now()
		err = op(cctx)
		timedOut := cctx.Err() != nil
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if !timedOut && !retryable(err) {
			return err
		}
		if !timedOut {
			// A quick refusal (no leader, connection refused): do not spin.
			pause := min(time.Until(until), max(first/4, 10*time.Millisecond)-time.Since(start))
			if pause > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(pause):
				}
			}
		}
	}
}

// errWatchSilent: a watch stream answered neither events nor a progress
// request for two progress intervals.
var errWatchSilent = errors.New("etcdcoord: watch stream silent")

// watchStreamKey is outgoing gRPC metadata that gives each watch started here a
// gRPC stream of its own: clientv3 multiplexes the watches whose contexts carry
// equal metadata onto one stream (streamKeyFromCtx in client/v3/watch.go), so
// without it a restarted watch would go back to the silent stream.
const watchStreamKey = "brokerpath-watch-stream"

var watchSeq atomic.Uint64

// liveWatch watches key with opts (plus WithCreatedNotify) on a stream of its
// own and calls fn for every response carrying events, until fn returns false
// (nil), the watch fails (its error), or the stream goes silent: every
// interval it asks the member for a progress notification
// (clientv3.Watcher.RequestProgress, answered by every etcd >= 3.4), and when
// nothing at all came back for two intervals (the member stopped answering
// with its connection open), it gives the stream up and returns
// errWatchSilent. The caller re-reads and watches again: the new stream goes to
// the next member. Also with a WithRequireLeader context: a member that lost
// its leader cancels the watch itself.
func liveWatch(ctx context.Context, c *clientv3.Client, every time.Duration, key string, opts []clientv3.OpOption, fn func(clientv3.WatchResponse) bool) error {
	md := metadata.AppendToOutgoingContext(clientv3.WithRequireLeader(ctx), watchStreamKey, strconv.FormatUint(watchSeq.Add(1), 10))
	wctx, cancel := context.WithCancel(md)
	defer cancel()
	// The silence timer only signals: this loop cancels the watch itself, so
	// it never asks for progress on a stream it has given up. (Asking on a
	// stream clientv3 has already dropped would make it open a new one with
	// no watch on it, which lives as long as the client.)
	silent := make(chan struct{}, 1)
	dog := time.AfterFunc(2*every, func() {
		select {
		case silent <- struct{}{}:
		default:
		}
	})
	defer dog.Stop()
	created := make(chan clientv3.WatchChan, 1)
	go func() {
		created <- c.Watch(wctx, key, append(opts[:len(opts):len(opts)], clientv3.WithCreatedNotify())...)
	}()
	var wch clientv3.WatchChan
	select {
	case wch = <-created: // Watch returns once the member confirmed the watch
	case <-silent:
		cancel()
		<-created
		return errWatchSilent
	case <-ctx.Done():
		cancel()
		<-created
		return ctx.Err()
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	rearm := func() {
		dog.Stop()
		select {
		case <-silent: // fired before the answer was read
		default:
		}
		dog.Reset(2 * every)
	}
	handle := func(wr clientv3.WatchResponse, ok bool) (bool, error) {
		if !ok || wr.Err() != nil || wr.Canceled {
			switch {
			case ctx.Err() != nil:
				return true, ctx.Err()
			case wr.Err() != nil:
				return true, wr.Err()
			}
			return true, errors.New("etcdcoord: watch closed")
		}
		if len(wr.Events) == 0 {
			rearm()
			return false, nil // created, or progress: the stream answers
		}
		// The stream answered; fn's own calls are not its silence.
		dog.Stop()
		if !fn(wr) {
			return true, nil
		}
		rearm()
		return false, nil
	}
	for {
		select {
		case <-silent:
			return errWatchSilent
		case <-tick.C:
			// Whatever the stream already delivered comes first: a watch
			// that has just ended must not be asked for progress.
			select {
			case wr, ok := <-wch:
				if done, err := handle(wr, ok); done {
					return err
				}
				continue
			default:
			}
			rctx, rcancel := context.WithTimeout(wctx, every)
			_ = c.RequestProgress(rctx)
			rcancel()
		case wr, ok := <-wch:
			if done, err := handle(wr, ok); done {
				return err
			}
		}
	}
}
