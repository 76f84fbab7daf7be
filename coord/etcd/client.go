package etcdcoord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
)

// NewClient returns an etcd client that holds ONE TCP connection, to one
// member of cfg.Endpoints at a time, instead of clientv3's one connection per
// member. Use it for every role of a process (a *clientv3.Client is safe for
// concurrent use); at hundreds of processes it divides the connections etcd
// holds by the number of members.
//
// clientv3 balances over every member with gRPC's round_robin policy, which
// connects to all of them. This client turns that policy off (gRPC's default,
// pick_first, then connects to the one address it is given) and moves to
// another member itself, only when the member it is on stopped answering:
//
//   - A call or stream read that ends because its deadline passed, or with
//     the member unavailable, and a connection that fails (the member
//     refuses connections), make the client ask the member for its status
//     (etcd's Maintenance.Status, which a member answers on its own, without
//     its raft leader), one question at a time.
//   - When the member has not answered within 250 ms (nor any other call
//     meanwhile), the client asks the other members in turn (on a connection
//     of their own, closed at once), those it has not left in the last 30 s
//     first. It moves to the first that answers within 1 s with a raft
//     leader, if its own member still has not answered when twice that
//     answer's time (at least 250 ms) has passed: a member is left only for
//     one that just answered clearly sooner, so the client never moves to a
//     silent member, and does not go back to one it left. When no other
//     member answers, it stays.
//   - A member that answers is kept, also when it refuses calls because the
//     members are electing a raft leader ("no leader", "request timed
//     out"): the election ends within a few election timeouts, and every
//     member refuses calls meanwhile. One that answers without a leader for
//     3 s (cut off from the others) is left like a silent one.
//   - The client moves at most once a second; when no other member
//     answered, it waits twice as long before it asks again (up to 8 s): a
//     machine or cluster too loaded to answer anyone is not helped by new
//     connections.
//   - When the client leaves a member, the calls still waiting on it that have
//     a deadline (every call the roles of this package make) end at once with
//     codes.Unavailable, and the roles make them again on the new member; a
//     watch stream left on the old member is given up by the roles' own
//     silence check. Calls of your own with no deadline are not ended (those
//     waiting for a ready connection go on on the new one): give them one.
//
// So a member that stops answering with its connection open costs a client
// about 0.5-0.7 s (its first timed-out call, then the status questions)
// before its calls go to another member, a killed member a few
// milliseconds; clientv3.New's client, connected to every member, retries on
// the next one at once. The roles' timeouts leave room for that (a
// follower's 5 s lease is renewed every 1.25 s).
//
// Each move is logged at WARN level by cfg.Logger.
//
// Experimental: measured against real etcd processes (see the README's "One
// connection per process"), with 100 followers it keeps the guarantee the
// README's "One etcd member that stops answering" states for clientv3.New
// (no follower halts with one member frozen or killed, the decider keeps its
// term), but with 300 followers on a loaded 2-core machine it does not (up
// to two thirds of them halted in some runs with the raft leader frozen or
// killed, where clientv3.New lost at most 8). Until it does, use clientv3.New
// for trading processes at that scale.
//
// cfg.Endpoints must not be empty and cfg.AutoSyncInterval must be 0 (the
// automatic member sync would hand the client every member again). The first
// member is picked at random, so that the processes of a deployment spread
// over the members.
func NewClient(cfg clientv3.Config) (*clientv3.Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcdcoord: NewClient: clientv3.Config.Endpoints is empty")
	}
	if cfg.AutoSyncInterval != 0 {
		return nil, fmt.Errorf("etcdcoord: NewClient: clientv3.Config.AutoSyncInterval is %v: it must be 0 (the sync would connect to every member)", cfg.AutoSyncInterval)
	}
	r := newMemberRing(slices.Clone(cfg.Endpoints), rand.IntN(len(cfg.Endpoints)))
	cfg.Endpoints = []string{r.endpoints[r.cur]}
	cfg.DialOptions = append(slices.Clip(cfg.DialOptions),
		// Ignore the resolver's round_robin service config: pick_first.
		grpc.WithDisableServiceConfig(),
		grpc.WithChainUnaryInterceptor(r.unary),
		grpc.WithChainStreamInterceptor(r.stream),
	)
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.client = c
	r.connected = time.Now()
	r.mu.Unlock()
	if len(r.endpoints) > 1 {
		go r.watchConn(c)
	}
	return c, nil
}

const (
	// probeTimeout: how long a member has to answer a status question.
	probeTimeout = 1000 * time.Millisecond
	// connectGrace: how long after the client connected to a member a status
	// question may wait (a new connection's TCP and HTTP/2 handshakes, slow
	// on a loaded machine).
	connectGrace = 2 * time.Second
	// askOthersAfter: how long the client's member has to answer a status
	// question before the client asks the other members.
	askOthersAfter = 250 * time.Millisecond
	// probeEvery: the least time between the end of one status question (or
	// a move) and the next question.
	probeEvery = 250 * time.Millisecond
	// suspectFor: how long a member the client left stays suspected.
	suspectFor = 30 * time.Second
	// leaderlessFor: how long a member may answer without a raft leader
	// before the client leaves it.
	leaderlessFor = 3 * time.Second
	// minMoveGap: the least time between two moves; it doubles, up to
	// maxMoveGap, while the members moved to do not answer (a machine or
	// cluster too loaded to answer anyone, not one silent member).
	minMoveGap = time.Second
	maxMoveGap = 8 * time.Second
)

// errMoved is the cause given to the calls left on a member the client left.
var errMoved = errors.New("etcdcoord: the etcd member stopped answering: the client moved to another")

// memberRing moves a client from member to member.
type memberRing struct {
	endpoints []string

	mu         sync.Mutex
	client     *clientv3.Client
	cur        int         // index of the member the client is on
	gen        uint64      // moves so far: a call remembers the gen it started under
	connected  time.Time   // when the client was pointed at cur
	moved      time.Time   // the last move, or the last time no other member answered
	suspect    []time.Time // per member: suspected until then
	probing    bool        // a status question is under way
	probed     time.Time   // the end of the last question, or the last move
	leaderless time.Time   // since when cur answers without a leader (zero: it has one)
	answered   time.Time   // the last answer (a reply, or a refusal from etcd) of cur
	moveGap    time.Duration
	calls      map[*call]struct{}
}

// call is one call with a deadline under way on the member of gen.
type call struct {
	gen    uint64
	cancel context.CancelCauseFunc
}

func newMemberRing(endpoints []string, first int) *memberRing {
	return &memberRing{endpoints: endpoints, cur: first, suspect: make([]time.Time, len(endpoints)), moveGap: minMoveGap, calls: map[*call]struct{}{}}
}

// answer reports whether err (nil: a reply) came from the member: a refusal
// of etcd's own ("etcdserver: ...", or a code a transport does not give)
// rather than a deadline, a cancellation or a connection failure.
func answer(err error) bool {
	if err == nil {
		return true
	}
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.DeadlineExceeded, codes.Canceled, codes.Unavailable:
		return strings.HasPrefix(st.Message(), "etcdserver: ")
	}
	return true
}

// heard records that the member of gen answered.
func (r *memberRing) heard(gen uint64) {
	r.mu.Lock()
	if gen == r.gen {
		r.answered = time.Now()
		r.moveGap = minMoveGap
	}
	r.mu.Unlock()
}

// memberFailed reports whether err may mean the member did not answer in time
// or is unreachable (not that the caller gave up: a canceled context).
func memberFailed(ctx context.Context, err error) bool {
	if err == nil || errors.Is(ctx.Err(), context.Canceled) {
		return false
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded, codes.Unavailable:
		return true
	}
	return false
}

type probeKey struct{}

// enter registers a call with a deadline, so that a move ends it; it returns
// the context to make the call with, the gen it started under and the
// function that unregisters it.
func (r *memberRing) enter(ctx context.Context) (context.Context, uint64, func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	gen := r.gen
	if _, ok := ctx.Deadline(); !ok || len(r.endpoints) < 2 {
		return ctx, gen, func() {}
	}
	cctx, cancel := context.WithCancelCause(ctx)
	c := &call{gen: gen, cancel: cancel}
	r.calls[c] = struct{}{}
	return cctx, gen, func() {
		r.mu.Lock()
		delete(r.calls, c)
		r.mu.Unlock()
		cancel(nil)
	}
}

// moved turns the error of a call ended by a move into codes.Unavailable (a
// failure the caller may retry at once).
func moved(ctx, cctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), errMoved) {
		return status.Error(codes.Unavailable, errMoved.Error())
	}
	return err
}

// watchConn starts a status question whenever the client's connection fails
// (the member refuses connections: a killed process), until the client is
// closed: clientv3's calls wait for a ready connection until their deadline,
// which may be long.
func (r *memberRing) watchConn(c *clientv3.Client) {
	conn := c.ActiveConnection()
	for {
		st := conn.GetState()
		if st == connectivity.TransientFailure {
			r.mu.Lock()
			gen := r.gen
			r.mu.Unlock()
			r.failed(gen)
		}
		if !conn.WaitForStateChange(c.Ctx(), st) {
			return
		}
	}
}

// failed asks the member of gen for its status unless a question is under
// way, one ended less than probeEvery ago, or the client has moved since gen.
func (r *memberRing) failed(gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.endpoints) < 2 || r.client == nil || gen != r.gen || r.probing || time.Since(r.probed) < probeEvery {
		return
	}
	r.probing = true
	c := r.client
	start := time.Now()
	until := start.Add(probeTimeout)
	if grace := r.connected.Add(connectGrace); grace.After(until) && c.ActiveConnection().GetState() != connectivity.Ready {
		until = grace
	}
	go r.probe(c, gen, start, until)
}

// probe asks the member of gen (the client's only connection) for its
// status, until until. When it has not answered after askOthersAfter (nor any
// other call since start), or answers without a raft leader for
// leaderlessFor, it asks the other members in turn (see candidatesLocked),
// and moves the client to the first that answers with a leader, if the
// client's member still has not answered when twice that answer's time (at
// least askOthersAfter) has passed: a member is left only for one that
// answers clearly sooner. When none does, the client stays (a cluster or
// machine too loaded to answer anyone is not helped by a new connection).
func (r *memberRing) probe(c *clientv3.Client, gen uint64, start, until time.Time) {
	type result struct {
		resp *pb.StatusResponse
		err  error
	}
	ctx, cancel := context.WithDeadline(context.WithValue(c.Ctx(), probeKey{}, true), until)
	defer cancel()
	cur := make(chan result, 1)
	go func() {
		resp, err := pb.NewMaintenanceClient(c.ActiveConnection()).Status(ctx, &pb.StatusRequest{})
		cur <- result{resp, err}
	}()
	var got *result
	wait := time.NewTimer(askOthersAfter)
	select {
	case x := <-cur:
		got = &x
	case <-wait.C:
	}
	wait.Stop()
	now := time.Now()
	r.mu.Lock()
	why := ""
	switch {
	case gen != r.gen || c.Ctx().Err() != nil:
	case got == nil || (got.err != nil && !answer(got.err)):
		// Not when it answered another call meanwhile (slow, not silent),
		// nor sooner than moveGap after the last move.
		if !r.answered.After(start) && now.Sub(r.moved) >= r.moveGap {
			why = "did not answer a status request"
		}
	case got.err != nil:
		// It answered (with a refusal): alive.
		r.answered, r.leaderless = now, time.Time{}
	case got.resp.Leader == 0:
		r.answered = now
		if r.leaderless.IsZero() {
			r.leaderless = now
		} else if now.Sub(r.leaderless) >= leaderlessFor && now.Sub(r.moved) >= r.moveGap {
			why = "answers without a raft leader"
		}
	default:
		r.answered, r.leaderless = now, time.Time{}
		r.moveGap = minMoveGap
	}
	if why == "" {
		r.probing, r.probed = false, now
		r.mu.Unlock()
		return
	}
	cands := r.candidatesLocked(now)
	r.mu.Unlock()
	to := -1
	var lastErr error
	if got != nil {
		lastErr = got.err
	}
	for _, j := range cands {
		asked := time.Now()
		cctx, ccancel := context.WithTimeout(context.WithValue(c.Ctx(), probeKey{}, true), probeTimeout)
		st, serr := c.Maintenance.Status(cctx, r.endpoints[j])
		ccancel()
		if serr != nil || st.Leader == 0 {
			continue
		}
		if got == nil {
			// Give the client's member as long again to answer.
			wait := time.NewTimer(max(2*time.Since(asked), askOthersAfter))
			select {
			case x := <-cur:
				got = &x
				if answer(x.err) {
					r.heard(gen)
				} else {
					lastErr = x.err
				}
			case <-wait.C:
			}
			wait.Stop()
		}
		to = j
		break
	}
	now = time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probing, r.probed = false, now
	switch {
	case gen != r.gen || c.Ctx().Err() != nil:
	case why != "answers without a raft leader" && r.answered.After(start):
		// It answered after all.
	case to < 0:
		// Nobody answered: stay, and wait longer before trying again.
		r.moveGap = min(2*r.moveGap, maxMoveGap)
		r.moved = now
	default:
		r.moveLocked(now, to, why, lastErr)
	}
}

// candidatesLocked lists the other members, those not suspected first (in
// ring order), then the suspected ones, suspected longest ago first.
func (r *memberRing) candidatesLocked(now time.Time) []int {
	n := len(r.endpoints)
	var fresh, stale []int
	for i := 1; i < n; i++ {
		j := (r.cur + i) % n
		if now.Before(r.suspect[j]) {
			stale = append(stale, j)
		} else {
			fresh = append(fresh, j)
		}
	}
	slices.SortStableFunc(stale, func(a, b int) int { return r.suspect[a].Compare(r.suspect[b]) })
	return append(fresh, stale...)
}

// moveLocked suspects the current member and points the client at member
// to, ending the calls with a deadline still waiting on the member left.
func (r *memberRing) moveLocked(now time.Time, to int, why string, err error) {
	from := r.cur
	r.suspect[from] = now.Add(suspectFor)
	r.cur, r.gen, r.connected, r.moved, r.probed, r.leaderless = to, r.gen+1, now, now, now, time.Time{}
	for c := range r.calls {
		c.cancel(errMoved)
		delete(r.calls, c)
	}
	r.client.SetEndpoints(r.endpoints[to])
	r.client.GetLogger().Warn("etcdcoord: etcd member left: "+why,
		zap.String("from", r.endpoints[from]), zap.String("to", r.endpoints[to]), zap.Error(err))
}

func (r *memberRing) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if ctx.Value(probeKey{}) != nil {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	cctx, gen, leave := r.enter(ctx)
	err := moved(ctx, cctx, invoker(cctx, method, req, reply, cc, opts...))
	leave()
	if answer(err) {
		r.heard(gen)
	} else if memberFailed(ctx, err) {
		r.failed(gen)
	}
	return err
}

func (r *memberRing) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cctx, gen, leave := r.enter(ctx)
	s, err := streamer(cctx, desc, cc, method, opts...)
	if err != nil {
		err = moved(ctx, cctx, err)
		leave()
		if memberFailed(ctx, err) {
			r.failed(gen)
		}
		return nil, err
	}
	if cctx != ctx {
		// The stream is done when its context is (clientv3 cancels it
		// after the last read).
		context.AfterFunc(cctx, leave)
	}
	return &ringStream{ClientStream: s, r: r, gen: gen, ctx: ctx, cctx: cctx}, nil
}

type ringStream struct {
	grpc.ClientStream
	r         *memberRing
	gen       uint64
	ctx, cctx context.Context
}

func (s *ringStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == io.EOF {
		return err
	}
	err = moved(s.ctx, s.cctx, err)
	if answer(err) {
		s.r.heard(s.gen)
	} else if memberFailed(s.ctx, err) {
		s.r.failed(s.gen)
	}
	return err
}
