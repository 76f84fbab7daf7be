package etcdcoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// DeciderConfig configures a Decider. Start from DefaultDeciderConfig.
type DeciderConfig struct {
	// Client is the etcd client. Required. A decider taking office reads the
	// assignment with a receive limit just above the record limit, so that a
	// record it would refuse for its size is not received (only its length);
	// with a KV a caller put on Client in place of clientv3's own
	// (clientv3/namespace does), it reads through that KV, without the limit.
	Client *clientv3.Client
	// Prefix is the account's key prefix. Required.
	Prefix string
	// Name identifies this candidate (no '/'). Required.
	Name string
	// Endpoints are the account's endpoints (the Path's list): exactly one
	// Primary, at least two.
	Endpoints []pathdialer.Endpoint
	// Quorum live observers must agree for Down and for fresh-Healthy. >= 1;
	// a majority of the observers you run.
	Quorum int
	// Engine decides on the aggregated view. The observers already counted
	// their FailureThreshold, so the default here is 1 (one Down verdict);
	// MaxHealthAge must exceed Interval. Probe and Clock must be nil, and
	// BrokerFencesAtLogon false: the followers' acknowledgements are the fence.
	Engine engine.Config
	// Interval between decisions. > 0.
	Interval time.Duration
	// TTL of the decider's session (whole seconds, >= 1 s): a dead decider's
	// leadership passes on at most TTL after it stopped renewing.
	TTL time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// OnWrite, optional, is called after every Assignment the decider wrote,
	// with its revision.
	OnWrite func(a Assignment, revision int64)
	// RequireIdentity: an endpoint is a target only while at least Quorum live
	// observers agree it fronts the account (their Identity checks verified
	// it). Whatever it says, an endpoint any live observer found fronting
	// another account is never a target, and an active one is failed over.
	// Jurisdiction rules are Engine.TargetJurisdictions against the
	// Endpoints' Jurisdiction.
	RequireIdentity bool
	// OnBadRecord, optional, is called once for every record the decider
	// refused: an assignment it did not write or cannot decode (it overwrites
	// it with a fence while it leads), an observation that cannot be decoded
	// or does not match its key (it is not counted), a key under followers/
	// that is no follower's session (it is not waited for; see
	// FollowerMaxTTL).
	OnBadRecord func(BadRecord)
	// FollowerMaxTTL is the longest lease TTL any follower uses (at least
	// every FollowerConfig.TTL). A switch waits for the acknowledgement of
	// every key under <prefix>followers/ attached to a live lease granted at
	// most FollowerMaxTTL; a key without a lease, or under a longer lease, is
	// not a follower's session: it is reported once and not waited for. So a
	// key whose lease nobody renews delays a switch by at most
	// FollowerMaxTTL (its lease expires). >= 1 s; default 30 s.
	FollowerMaxTTL time.Duration
}

// DefaultDeciderConfig returns a configuration deciding every 500 ms, on a
// 5 s session, with the engine's defaults except FailureThreshold 1, waiting
// for followers' leases of up to 30 s.
func DefaultDeciderConfig() DeciderConfig {
	e := engine.DefaultConfig()
	e.FailureThreshold = 1
	return DeciderConfig{Engine: e, Interval: 500 * time.Millisecond, TTL: 5 * time.Second, Quorum: 2, FollowerMaxTTL: 30 * time.Second}
}

// Validate names the first field that cannot work.
func (c DeciderConfig) Validate() error {
	if c.Client == nil {
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	}
	if _, err := newKeyLayout(c.Prefix); err != nil {
		return err
	}
	if err := checkName("Name", c.Name); err != nil {
		return err
	}
	if len(c.Endpoints) < 2 {
		return fmt.Errorf("%w: Endpoints needs at least two", ErrInvalidConfig)
	}
	for i, ep := range c.Endpoints {
		if err := checkName(fmt.Sprintf("Endpoints[%d].Name", i), ep.Name); err != nil {
			return err
		}
	}
	if c.Quorum < 1 {
		return fmt.Errorf("%w: Quorum must be >= 1", ErrInvalidConfig)
	}
	if c.Interval <= 0 {
		return fmt.Errorf("%w: Interval must be > 0", ErrInvalidConfig)
	}
	if c.TTL < time.Second || c.TTL%time.Second != 0 {
		return fmt.Errorf("%w: TTL must be whole seconds >= 1s (got %v)", ErrInvalidConfig, c.TTL)
	}
	if c.FollowerMaxTTL < time.Second {
		return fmt.Errorf("%w: FollowerMaxTTL must be >= 1s, at least every follower's TTL (got %v)", ErrInvalidConfig, c.FollowerMaxTTL)
	}
	if c.Engine.Probe != nil || c.Engine.Clock != nil {
		return fmt.Errorf("%w: Engine.Probe and Engine.Clock must be nil", ErrInvalidConfig)
	}
	if c.Engine.BrokerFencesAtLogon {
		return fmt.Errorf("%w: Engine.BrokerFencesAtLogon must be false: the followers' acknowledgements are the fence", ErrInvalidConfig)
	}
	if c.Engine.MaxHealthAge <= c.Interval {
		return fmt.Errorf("%w: Engine.MaxHealthAge (%v) must exceed Interval (%v)", ErrInvalidConfig, c.Engine.MaxHealthAge, c.Interval)
	}
	return nil
}

// Decider campaigns for leadership of one account and, while it leads, decides
// on the quorum's view and writes the Assignment. Create it with NewDecider;
// Run campaigns and decides until its context ends.
type Decider struct {
	cfg  DeciderConfig
	keys keyLayout
	agg  *Aggregator
	log  *slog.Logger
	// capped reads the assignment when a term starts: an answer above the
	// record limit (plus room for the key and fields) is refused from its
	// length, before its body is received (see capReads).
	capped clientv3.KV

	mu      sync.Mutex
	leading bool
	nBad    uint64
}

// BadRecords counts the records the decider refused: assignments it did not
// write or could not decode, observations, and keys under followers/ that are
// no follower's session (each record version once).
func (d *Decider) BadRecords() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nBad
}

func (d *Decider) badRecord(b BadRecord) {
	d.mu.Lock()
	d.nBad++
	d.mu.Unlock()
	if d.cfg.OnBadRecord != nil {
		d.cfg.OnBadRecord(b)
	}
}

// NewDecider validates cfg (and the engine's own checks) and returns a Decider.
func NewDecider(cfg DeciderConfig) (*Decider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := newDecisionEngine(cfg); err != nil {
		return nil, err
	}
	keys, _ := newKeyLayout(cfg.Prefix)
	agg, err := newAggregator(cfg.Client, cfg.Prefix, cfg.Quorum)
	if err != nil {
		return nil, err
	}
	d := &Decider{cfg: cfg, keys: keys, agg: agg, log: cfg.Logger}
	d.capped = capReads(cfg.Client, maxRecordBytes+len(keys.Assignment())+answerFieldBytes)
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	agg.onBadRecord(func(b BadRecord) {
		d.log.Warn("etcdcoord: observation refused: not counted", "decider", cfg.Name, "key", b.Key, "revision", b.Revision, "err", b.Err)
		d.badRecord(b)
	})
	return d, nil
}

func newDecisionEngine(cfg DeciderConfig) (*engine.Manager, error) {
	ecfg := cfg.Engine
	ecfg.Probe = func(context.Context, engine.Endpoint) error { return errRecordedOnly }
	if cfg.RequireIdentity {
		ecfg.RequireAdmission = true
		if ecfg.VerificationMaxAge == 0 {
			// The quorum's agreement is re-read every Interval; without it for
			// MaxHealthAge, the verification no longer counts.
			ecfg.VerificationMaxAge = ecfg.MaxHealthAge
		}
	}
	eng, err := engine.New(ecfg)
	if err != nil {
		return nil, fmt.Errorf("%w: Engine: %w", ErrInvalidConfig, err)
	}
	for _, ep := range cfg.Endpoints {
		if err := eng.Register(engine.Endpoint{Name: ep.Name, Address: ep.Name, Region: nonBlank(ep.Region), Priority: ep.Priority, Primary: ep.Primary, Jurisdiction: ep.Jurisdiction}); err != nil {
			return nil, fmt.Errorf("%w: Endpoints: %w", ErrInvalidConfig, err)
		}
	}
	if err := eng.Validate(); err != nil {
		return nil, fmt.Errorf("%w: Endpoints: %w", ErrInvalidConfig, err)
	}
	return eng, nil
}

// Aggregator returns the decider's view of the observations.
func (d *Decider) Aggregator() *Aggregator { return d.agg }

// Leading reports whether this decider currently leads.
func (d *Decider) Leading() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.leading
}

func (d *Decider) setLeading(v bool) {
	d.mu.Lock()
	d.leading = v
	d.mu.Unlock()
}

// Run watches the observations, campaigns, and decides while it leads, until
// ctx ends; then it resigns (its session is revoked, so another candidate
// takes over at once) and returns ctx's error.
func (d *Decider) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = d.agg.run(ctx)
	}()
	defer wg.Wait()
	wait := d.cfg.Interval
	for ctx.Err() == nil {
		if err := d.term(ctx); err != nil && ctx.Err() == nil {
			// Back off on terms that keep failing: Interval, doubling up to TTL.
			d.log.Warn("etcdcoord: decider term ended", "decider", d.cfg.Name, "err", err, "retry_in", wait)
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			wait = min(2*wait, max(d.cfg.TTL, d.cfg.Interval))
			continue
		}
		wait = d.cfg.Interval
	}
	return ctx.Err()
}

// term runs one session: campaign, then lead until the session or ctx ends.
//
// The term keeps its lease itself (keepLease): concurrency.Session's
// keep-alive is one stream per client (clientv3's lessor), which waits on a
// member that stopped answering with its connection open until the lease is
// gone. Here every keep-alive has a timeout of its own and a timed-out one is
// made again on the next member; the term ends only when the lease cannot be
// proven alive.
func (d *Decider) term(ctx context.Context) error {
	c := d.cfg.Client
	floor := d.callFloor()
	var lease clientv3.LeaseID
	var valid time.Time
	if err := callUntil(ctx, time.Now().Add(d.cfg.TTL/2), floor, func(cctx context.Context) error {
		sent := time.Now()
		g, err := c.Grant(cctx, int64(d.cfg.TTL/time.Second))
		if err != nil {
			return err
		}
		lease, valid = g.ID, sent.Add(time.Duration(g.TTL)*time.Second)
		return nil
	}); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	defer func() {
		// Revoked at once (attempts on the next member within a second), so
		// that the next term, here or elsewhere, need not wait for the TTL.
		_ = callUntil(context.Background(), time.Now().Add(time.Second), floor, func(cctx context.Context) error {
			_, err := c.Revoke(cctx, lease)
			return err
		})
	}()
	sess, err := concurrency.NewSession(c, concurrency.WithLease(lease), concurrency.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("session: %w", err)
	}
	// The election needs the Session only for its client and lease: its own
	// keep-alive stops here, keepLease renews the lease.
	sess.Orphan()
	cctx, cancel := context.WithCancel(ctx)
	lv := &leaseValidity{until: valid}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		d.keepLease(cctx, lease, lv)
	}()
	el, err := d.campaign(cctx, sess)
	if err != nil {
		if lv.lapsed() {
			return fmt.Errorf("campaign: %w: %w", ErrSessionLost, err)
		}
		return fmt.Errorf("campaign: %w", err)
	}
	d.setLeading(true)
	defer d.setLeading(false)
	d.log.Info("etcdcoord: decider leads", "decider", d.cfg.Name, "term", el.Rev())
	l := &leader{d: d, el: el, lease: int64(lease), valid: lv}
	err = l.lead(cctx)
	if lv.lapsed() && ctx.Err() == nil {
		return fmt.Errorf("%w: the term's lease could not be renewed: %w", ErrSessionLost, err)
	}
	return err
}

// campaign does what concurrency.Election.Campaign does (the same keys: a
// candidate key <election>/<lease in hex> created under the session's lease;
// it leads once no key created earlier is left), with every call as callUntil
// makes it and the wait for an earlier key's deletion on a watch that is
// replaced when its member stops answering (liveWatch). Election.Campaign's
// watch would wait on such a member, and its clean-up on cancellation (Resign
// on the client's context) has no timeout at all. Here a campaign that ends
// early leaves its key to the lease, which term revokes.
func (d *Decider) campaign(ctx context.Context, sess *concurrency.Session) (*concurrency.Election, error) {
	c := d.cfg.Client
	pfx := d.keys.Election() + "/"
	key := d.keys.electionKey(int64(sess.Lease()))
	forever := time.Now().Add(100 * 365 * 24 * time.Hour) // the context bounds it
	var rev int64
	if err := callUntil(ctx, forever, d.callFloor(), func(cctx context.Context) error {
		resp, err := c.Txn(cctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, d.cfg.Name, clientv3.WithLease(sess.Lease()))).
			Else(clientv3.OpGet(key)).Commit()
		if err != nil {
			return err
		}
		rev = resp.Header.Revision
		if !resp.Succeeded {
			rev = resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for {
		var resp *clientv3.GetResponse
		if err := callUntil(ctx, forever, d.callFloor(), func(cctx context.Context) error {
			var err error
			resp, err = c.Get(cctx, pfx, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(rev-1))...)
			return err
		}); err != nil {
			return nil, err
		}
		if len(resp.Kvs) == 0 {
			return concurrency.ResumeElection(sess, pfx, key, rev), nil
		}
		// Wait for the newest earlier key to go, then look again.
		earlier := string(resp.Kvs[0].Key)
		err := liveWatch(ctx, c, d.cfg.TTL/10, earlier, []clientv3.OpOption{clientv3.WithRev(resp.Header.Revision + 1)}, func(wr clientv3.WatchResponse) bool {
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypeDelete {
					return false
				}
			}
			return true
		})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil && !errors.Is(err, errWatchSilent) {
			d.log.Debug("etcdcoord: campaign's watch ended: looking again", "decider", d.cfg.Name, "err", err)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(d.callFloor()):
			}
		}
	}
}

// callFloor is the timeout of the first attempt of an etcd call of the term
// (firstTimeout).
func (d *Decider) callFloor() time.Duration { return firstTimeout(d.cfg.TTL) }

// leaseValidity is the instant until which the term's lease is known alive:
// the send time of the last successful grant or keep-alive plus the TTL
// etcd granted, on this process's monotonic clock.
type leaseValidity struct {
	mu    sync.Mutex
	until time.Time
	gone  bool
}

func (v *leaseValidity) get() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.until
}

func (v *leaseValidity) set(t time.Time) {
	v.mu.Lock()
	v.until = t
	v.mu.Unlock()
}

func (v *leaseValidity) end() {
	v.mu.Lock()
	v.gone = true
	v.mu.Unlock()
}

// lapsed: the lease cannot be proven alive any more.
func (v *leaseValidity) lapsed() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.gone || !time.Now().Before(v.until)
}

// keepLease renews the term's lease every TTL/4 (each keep-alive as callUntil
// makes it, until the lease's validity) and returns when the lease cannot be
// proven alive (or ctx ends).
func (d *Decider) keepLease(ctx context.Context, lease clientv3.LeaseID, lv *leaseValidity) {
	defer lv.end()
	tick := time.NewTicker(d.cfg.TTL / 4)
	defer tick.Stop()
	dog := time.NewTimer(time.Until(lv.get()))
	defer dog.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-dog.C:
			d.log.Warn("etcdcoord: decider's lease cannot be proven alive: ending the term", "decider", d.cfg.Name)
			return
		case <-tick.C:
		}
		var ka *clientv3.LeaseKeepAliveResponse
		var sent time.Time
		err := callUntil(ctx, lv.get(), d.callFloor(), func(cctx context.Context) error {
			sent = time.Now()
			var err error
			ka, err = d.cfg.Client.KeepAliveOnce(cctx, lease)
			return err
		})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				d.log.Warn("etcdcoord: decider's lease expired: ending the term", "decider", d.cfg.Name)
				return
			}
			continue // the watchdog decides
		}
		until := sent.Add(time.Duration(ka.TTL) * time.Second)
		lv.set(until)
		dog.Reset(time.Until(until))
	}
}

// pending is a switch whose fence (the followers' acknowledgements) is awaited.
type pending struct {
	from, to string
	failback bool
	fenceRev int64
	// repair: the fence overwrote a refused record; followers may be on any
	// endpoint, so it is never abandoned before every follower acknowledged.
	repair bool
}

type leader struct {
	d       *Decider
	el      *concurrency.Election
	eng     *engine.Manager
	rec     Assignment
	rev     int64 // mod revision of the assignment (0: none)
	pending *pending
	waiting string // last "waiting for" note, logged on change
	lease   int64  // the election session's lease
	valid   *leaseValidity

	// keyCreated and keyVersion are the assignment key's CreateRevision and
	// Version at ModRevision keyRev: what the next write binds its record to
	// when keyRev is rev.
	keyRev, keyCreated, keyVersion int64

	// leaseTTL caches the granted TTL (seconds) of the leases under
	// followers/ keys; badAcks the mod revision of each followers/ key last
	// reported as not a live follower's.
	leaseTTL map[int64]int64
	badAcks  map[string]int64

	refused    error     // why the record at rev was refused (nil: accepted)
	reported   int64     // last refused revision reported
	repairs    int       // consecutive repairs, for the backoff
	nextRepair time.Time // no repair before
}

func (l *leader) lead(ctx context.Context) error {
	d := l.d
	eng, err := newDecisionEngine(d.cfg)
	if err != nil {
		return err
	}
	l.eng = eng
	for {
		err := l.read(ctx)
		if err == nil {
			break
		}
		if !l.survivable(err) {
			return err
		}
		l.d.log.Warn("etcdcoord: decider's read failed while its lease is alive: retrying", "decider", d.cfg.Name, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.cfg.Interval):
		}
	}
	primary, _ := eng.Primary()
	if l.refused != nil {
		if err := l.repair(ctx); err != nil && !errors.Is(err, errAssignmentChanged) {
			return err
		}
	} else if l.rev == 0 {
		if err := l.write(ctx, Assignment{Phase: PhaseActive, Endpoint: primary.Name, Reason: "initial assignment: the primary"}); err != nil {
			return err
		}
	} else if l.rec.Endpoint != primary.Name {
		// Adopt the endpoint flow is on. The recorded switch counts towards
		// cooldown: a new decider does not fail back at once.
		if _, err := eng.Assign(l.rec.Endpoint, eng.Token()+1, "adopted from the assignment by a new decider"); err != nil {
			return fmt.Errorf("adopt %q: %w", l.rec.Endpoint, err)
		}
	}
	if l.rec.Phase == PhaseFencing && l.pending == nil {
		// The previous decider died during a switch: keep waiting for its
		// fence. (A repair above has its own fence pending: kept as it is.)
		l.pending = &pending{from: l.rec.Endpoint, to: l.rec.Target, failback: l.rec.Failback, fenceRev: l.rev}
	}
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if err := l.check(ctx); err != nil {
			if errors.Is(err, errAssignmentChanged) {
				continue // changed again: the next check sees it
			}
			if l.survivable(err) {
				l.d.log.Warn("etcdcoord: decider's check failed while its lease is alive: retrying", "decider", d.cfg.Name, "err", err)
				continue
			}
			return err
		}
		if l.refused != nil {
			continue // waiting for the repair's backoff
		}
		if err := l.step(ctx); err != nil {
			if errors.Is(err, errAssignmentChanged) {
				continue // the next check repairs it
			}
			if l.survivable(err) {
				// A write that timed out may have been committed: the next
				// check finds a revision it did not record and fences.
				l.d.log.Warn("etcdcoord: decider's step failed while its lease is alive: retrying", "decider", d.cfg.Name, "err", err)
				continue
			}
			return err
		}
	}
}

// survivable: err is a failed etcd call (this call's timeout, a member
// unavailable) while the term's lease is still provably alive, so the term
// still leads: the next round makes the call again, on the next member. A
// refused guarded write (ErrDeposed), a lapsed lease and anything else end
// the term.
func (l *leader) survivable(err error) bool {
	return l.valid != nil && !errors.Is(err, ErrDeposed) && retryable(err) && !l.valid.lapsed()
}

// until is how long a read of the term may be attempted again (see
// callUntil): until its lease can no longer be proven alive.
func (l *leader) until() time.Time {
	if l.valid == nil {
		return time.Now().Add(l.d.cfg.Interval * 4)
	}
	return l.valid.get()
}

// read loads the assignment and its revision. A record above the record
// limit is not received (see readOversized): it is refused from its size, as
// a record that cannot be decoded is refused, and lead overwrites it with a
// fence under its guarded write.
func (l *leader) read(ctx context.Context) error {
	gctx, cancel := context.WithTimeout(ctx, l.d.cfg.Interval*4)
	defer cancel()
	key := l.d.keys.Assignment()
	var kvs []*mvccpb.KeyValue
	resp, err := l.d.capped.Get(gctx, key)
	switch {
	case tooLarge(err):
		var big bool
		if _, kvs, big, err = readOversized(gctx, l.d.cfg.Client, l.d.capped, key); err != nil {
			return fmt.Errorf("read assignment: %w", err)
		}
		if big {
			kv := kvs[0] // without its value
			l.rev = kv.ModRevision
			l.keyRev, l.keyCreated, l.keyVersion = kv.ModRevision, kv.CreateRevision, kv.Version
			l.rec, l.refused = Assignment{}, fmt.Errorf("%w: the assignment at revision %d is above the %d-byte limit (not fetched)", ErrBadRecord, kv.ModRevision, maxRecordBytes)
			return nil
		}
	case err != nil:
		return fmt.Errorf("read assignment: %w", err)
	default:
		kvs = resp.Kvs
	}
	if len(kvs) == 0 {
		l.rec, l.rev, l.refused = Assignment{}, 0, nil
		return nil
	}
	kv := kvs[0]
	a, refused := decodeAssignment(kv.Value)
	if refused == nil {
		refused = verifyBinding(a, kv)
	}
	if refused == nil {
		// Written by an earlier term: prove its writer led then.
		if refused, err = verifyWriter(gctx, l.d.cfg.Client, l.d.keys, a, kv.ModRevision); err != nil {
			return fmt.Errorf("read assignment: %w", err)
		}
	}
	l.rev = kv.ModRevision
	l.keyRev, l.keyCreated, l.keyVersion = kv.ModRevision, kv.CreateRevision, kv.Version
	if refused != nil {
		l.rec, l.refused = Assignment{}, refused
		return nil
	}
	l.rec, l.refused = a, nil
	return nil
}

// errAssignmentChanged: a guarded write found the assignment changed although
// this decider still leads; the next check repairs it.
var errAssignmentChanged = errors.New("etcdcoord: the assignment changed under the leader")

// check re-reads the assignment. Only this decider writes it while it leads,
// so any other revision is a write it did not make (a client with write
// access to the key, an operator's put, a delete): refused, reported, and
// overwritten by a fence. A follower's acknowledgement that refused the
// record in force (for example one that cannot prove an earlier term's
// writer any more) is repaired the same way.
func (l *leader) check(ctx context.Context) error {
	// Keys only: a record the decider did not write is never acted on, so its
	// value (up to etcd's request limit) is not fetched every Interval.
	var resp *clientv3.TxnResponse
	err := callUntil(ctx, l.until(), l.d.callFloor(), func(cctx context.Context) error {
		var err error
		resp, err = l.d.cfg.Client.Txn(cctx).Then(
			clientv3.OpGet(l.d.keys.Assignment(), clientv3.WithKeysOnly()),
			clientv3.OpGet(l.d.keys.Followers(), clientv3.WithPrefix()),
		).Commit()
		return err
	})
	if err != nil {
		return fmt.Errorf("check assignment: %w", err)
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	var rev int64
	if len(kvs) > 0 {
		rev = kvs[0].ModRevision
	}
	if rev != l.rev {
		var why error
		if len(kvs) == 0 {
			why = fmt.Errorf("%w: the assignment was deleted", ErrBadRecord)
		} else {
			why = fmt.Errorf("%w: the assignment at revision %d was not written by the leading decider (its last write was at %d)", ErrBadRecord, rev, l.rev)
		}
		l.rec, l.rev, l.refused = Assignment{}, rev, why
		l.pending = nil
	}
	if l.refused == nil && l.rev != 0 {
		for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
			var a Ack
			if json.Unmarshal(kv.Value, &a) == nil && a.Phase == PhaseRefused && a.Token == uint64(l.rev) {
				l.refused = fmt.Errorf("%w: follower %s refused the assignment at revision %d", ErrBadRecord, excerpt(strings.TrimPrefix(string(kv.Key), l.d.keys.Followers())), l.rev)
				l.pending = nil
				break
			}
		}
	}
	if l.refused == nil {
		l.repairs = 0
		return nil
	}
	return l.repair(ctx)
}

// repair reports the refused record (once per revision) and overwrites it
// with a fence from the endpoint the engine has active: every follower holds
// and acknowledges before anything is released again. Repairs back off:
// Interval, doubling up to TTL between consecutive ones.
func (l *leader) repair(ctx context.Context) error {
	d := l.d
	if l.reported != l.rev {
		l.reported = l.rev
		d.log.Error("etcdcoord: assignment refused: overwriting it with a fence", "decider", d.cfg.Name, "revision", l.rev, "err", l.refused)
		d.badRecord(BadRecord{Key: d.keys.Assignment(), Revision: l.rev, Err: l.refused})
	}
	if time.Now().Before(l.nextRepair) {
		return nil
	}
	l.repairs++
	l.nextRepair = time.Now().Add(min(d.cfg.Interval<<min(l.repairs-1, 16), max(d.cfg.TTL, d.cfg.Interval)))
	act, _ := l.eng.Active()
	why := l.refused
	if err := l.write(ctx, Assignment{Phase: PhaseFencing, Endpoint: act.Name, Reason: "repair: " + why.Error()}); err != nil {
		return err
	}
	l.refused = nil
	l.pending = &pending{from: act.Name, fenceRev: l.rev, repair: true}
	return nil
}

// write commits a only if this decider still leads and the assignment has not
// changed since it was read. The record names the key's CreateRevision and
// the Version this write gives it (Assignment.Created): the transaction's
// ModRevision comparison makes them exact. An active record never creates
// the key: a fence on the same endpoint is written first.
func (l *leader) write(ctx context.Context, a Assignment) error {
	d := l.d
	if l.rev == 0 && a.Phase == PhaseActive {
		if err := l.write(ctx, Assignment{Phase: PhaseFencing, Endpoint: a.Endpoint, Reason: "the key is created by a fence: " + a.Reason}); err != nil {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, d.cfg.Interval*4)
	defer cancel()
	if l.rev == 0 {
		l.keyRev, l.keyCreated, l.keyVersion = 0, 0, 0
	} else if l.keyRev != l.rev {
		resp, err := d.cfg.Client.Get(wctx, d.keys.Assignment(), clientv3.WithKeysOnly())
		if err != nil {
			return fmt.Errorf("write assignment: read its version: %w", err)
		}
		if len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision != l.rev {
			return fmt.Errorf("%w: before the write of %s %q", errAssignmentChanged, a.Phase, a.Endpoint)
		}
		l.keyRev, l.keyCreated, l.keyVersion = l.rev, resp.Kvs[0].CreateRevision, resp.Kvs[0].Version
	}
	a.Decider, a.Term, a.Lease, a.At = d.cfg.Name, l.el.Rev(), l.lease, time.Now().UTC()
	a.Created, a.Version = l.keyCreated, l.keyVersion+1
	a.Reason = clip(a.Reason)
	b, _ := json.Marshal(a)
	resp, err := d.cfg.Client.Txn(wctx).If(
		clientv3.Compare(clientv3.CreateRevision(l.el.Key()), "=", l.el.Rev()),
		clientv3.Compare(clientv3.ModRevision(d.keys.Assignment()), "=", l.rev),
	).Then(clientv3.OpPut(d.keys.Assignment(), string(b))).Else(clientv3.OpGet(l.el.Key())).Commit()
	if err != nil {
		return fmt.Errorf("write assignment: %w", err)
	}
	if !resp.Succeeded {
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 && kvs[0].CreateRevision == l.el.Rev() {
			return fmt.Errorf("%w: the write of %s %q was refused", errAssignmentChanged, a.Phase, a.Endpoint)
		}
		return fmt.Errorf("%w: the write of %s %q was refused (leadership or assignment changed)", ErrDeposed, a.Phase, a.Endpoint)
	}
	l.rec, l.rev, l.refused = a, resp.Header.Revision, nil
	l.keyRev, l.keyVersion = l.rev, a.Version
	if a.Created == 0 {
		l.keyCreated = l.rev
	}
	d.log.Info("etcdcoord: assignment written", "decider", d.cfg.Name, "phase", a.Phase, "endpoint", a.Endpoint, "target", a.Target, "revision", l.rev, "reason", a.Reason)
	if d.cfg.OnWrite != nil {
		d.cfg.OnWrite(a, l.rev)
	}
	return nil
}

// feed gives the engine the quorum's verdicts: Down is a failure, fresh-Healthy
// a success, anything else nothing at all; identity: a mismatch seen by any
// live observer excludes the endpoint, a quorum's verification admits it.
func (l *leader) feed() bool {
	v := l.d.agg.Verdicts()
	if v == nil {
		return false
	}
	for _, ep := range l.d.cfg.Endpoints {
		vd := v[ep.Name]
		switch vd.State {
		case VerdictDown:
			_, _ = l.eng.Observe(ep.Name, fmt.Errorf("%w (%s)", ErrQuorumDown, strings.Join(vd.DownBy, ",")), 0)
		case VerdictHealthy:
			_, _ = l.eng.Observe(ep.Name, nil, vd.Latency)
		}
		switch vd.Identity {
		case IdentityMismatch:
			_, _ = l.eng.Admit(ep.Name, fmt.Errorf("%w: observers %s found it fronting another account: %s", engine.ErrIdentityMismatch, strings.Join(vd.MismatchBy, ","), vd.IdentityError))
		case IdentityVerified:
			_, _ = l.eng.Admit(ep.Name, nil)
		}
	}
	return true
}

func (l *leader) step(ctx context.Context) error {
	if !l.feed() {
		return nil // no view: decide nothing
	}
	if p := l.pending; p != nil {
		if !p.failback && !p.repair {
			if d, err := l.eng.EvaluateFailover(false); err == nil && d.Outcome == engine.NoAction {
				l.pending = nil
				return l.write(ctx, Assignment{Phase: PhaseActive, Endpoint: p.from, Reason: "switch abandoned: the active endpoint answers again"})
			}
		}
		var missing []string
		err := callUntil(ctx, l.until(), l.d.callFloor(), func(cctx context.Context) error {
			var err error
			missing, err = l.unacked(cctx, p.fenceRev)
			return err
		})
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			if note := strings.Join(missing, ","); note != l.waiting {
				l.waiting = note
				l.d.log.Info("etcdcoord: waiting for followers to hold", "followers", note, "token", p.fenceRev)
			}
			return nil
		}
		l.waiting = ""
		l.pending = nil
		var d engine.Decision
		if p.failback {
			d, err = l.eng.EvaluateFailback(true)
		} else {
			d, err = l.eng.EvaluateFailover(true)
		}
		if err != nil {
			return err
		}
		switch d.Outcome {
		case engine.Switched:
			return l.write(ctx, Assignment{Phase: PhaseActive, Endpoint: d.To, Failback: p.failback, Reason: fmt.Sprintf("switched from %q: %s", d.From, strings.Join(d.Notes, "; "))})
		case engine.NoTargetAvailable:
			return l.write(ctx, Assignment{Phase: PhaseHalted, Endpoint: d.From, Reason: "no eligible target after the fence: " + strings.Join(d.Notes, "; ")})
		default:
			return l.write(ctx, Assignment{Phase: PhaseActive, Endpoint: d.From, Reason: "switch abandoned after the fence: " + d.Outcome.String()})
		}
	}
	d, err := l.eng.EvaluateFailover(false)
	if err != nil {
		return err
	}
	switch d.Outcome {
	case engine.FenceRequired:
		return l.fence(ctx, d, false)
	case engine.NoTargetAvailable:
		if l.rec.Phase != PhaseHalted {
			return l.write(ctx, Assignment{Phase: PhaseHalted, Endpoint: d.From, Reason: "no eligible target: " + strings.Join(d.Notes, "; ")})
		}
		return nil
	case engine.NoAction:
		if l.rec.Phase != PhaseActive {
			return l.write(ctx, Assignment{Phase: PhaseActive, Endpoint: d.From, Reason: "resume: " + string(l.rec.Phase) + " no longer warranted"})
		}
		fb, err := l.eng.EvaluateFailback(false)
		if err != nil {
			return err
		}
		if fb.Outcome == engine.FenceRequired {
			return l.fence(ctx, fb, true)
		}
	}
	return nil
}

func (l *leader) fence(ctx context.Context, d engine.Decision, failback bool) error {
	if err := l.write(ctx, Assignment{Phase: PhaseFencing, Endpoint: d.From, Target: d.To, Failback: failback, Reason: strings.Join(d.Notes, "; ")}); err != nil {
		return err
	}
	l.pending = &pending{from: d.From, to: d.To, failback: failback, fenceRev: l.rev}
	return nil
}

// unacked lists the followers with a live session that have not acknowledged
// token yet. A follower whose lease expired has no key and is not waited for:
// it halted itself before its lease could expire. A key without a lease, or
// under a lease granted longer than FollowerMaxTTL, is no follower's session:
// it is reported (once per revision of the key) and not waited for. A key
// under a lease that has just expired is not waited for either.
func (l *leader) unacked(ctx context.Context, token int64) ([]string, error) {
	d := l.d
	gctx, cancel := context.WithTimeout(ctx, d.cfg.Interval*4)
	defer cancel()
	resp, err := d.cfg.Client.Get(gctx, d.keys.Followers(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("read acknowledgements: %w", err)
	}
	if l.leaseTTL == nil {
		l.leaseTTL, l.badAcks = map[int64]int64{}, map[string]int64{}
	}
	maxTTL := int64(d.cfg.FollowerMaxTTL / time.Second)
	var missing []string
	seen := make(map[int64]bool)
	for _, kv := range resp.Kvs {
		var a Ack
		name := strings.TrimPrefix(string(kv.Key), d.keys.Followers())
		if err := json.Unmarshal(kv.Value, &a); err == nil && a.Token >= uint64(token) {
			continue
		}
		var why string
		switch {
		case kv.Lease == 0:
			why = "it has no lease"
		default:
			seen[kv.Lease] = true
			ttl, ok := l.leaseTTL[kv.Lease]
			if !ok {
				tr, err := d.cfg.Client.TimeToLive(gctx, clientv3.LeaseID(kv.Lease))
				switch {
				case errors.Is(err, rpctypes.ErrLeaseNotFound) || err == nil && tr.TTL < 0:
					continue // expired: the key goes with it
				case err != nil:
					ttl = 0 // unknown: wait for it, ask again next time
				default:
					ttl = tr.GrantedTTL
					l.leaseTTL[kv.Lease] = ttl
				}
			}
			if ttl > maxTTL {
				why = fmt.Sprintf("its lease was granted %d s, above FollowerMaxTTL (%v)", ttl, d.cfg.FollowerMaxTTL)
			}
		}
		if why == "" {
			missing = append(missing, name)
			continue
		}
		if l.badAcks[string(kv.Key)] != kv.ModRevision {
			l.badAcks[string(kv.Key)] = kv.ModRevision
			err := fmt.Errorf("%w: %s is not a live follower's session: %s; not waited for", ErrBadRecord, excerpt(string(kv.Key)), why)
			d.log.Warn("etcdcoord: key under followers/ not waited for", "decider", d.cfg.Name, "key", string(kv.Key), "revision", kv.ModRevision, "err", err)
			d.badRecord(BadRecord{Key: string(kv.Key), Revision: kv.ModRevision, Err: err})
		}
	}
	for id := range l.leaseTTL {
		if !seen[id] {
			delete(l.leaseTTL, id)
		}
	}
	sort.Strings(missing)
	return missing, nil
}
