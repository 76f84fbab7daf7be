package etcdcoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// ObserverConfig configures an Observer. Start from DefaultObserverConfig.
type ObserverConfig struct {
	// Client is the etcd client. Required.
	Client *clientv3.Client
	// Prefix is the account's key prefix. Required.
	Prefix string
	// Name identifies the observer (unique per account; no '/'). Required.
	Name string
	// Region is where the observer runs (for humans). Required.
	Region string
	// Endpoints are the account's endpoints (the same list the Path uses).
	Endpoints []pathdialer.Endpoint
	// Probe, optional: when set, Run probes every endpoint every Interval. When
	// nil, results come from Record (for example from a Path's EventProbe
	// events through RecordEvent).
	Probe pathdialer.ProbeFunc
	// ProbeTimeout bounds one probe. > 0 when Probe is set.
	ProbeTimeout time.Duration
	// Engine counts the observer's own evidence: FailureThreshold,
	// MaxHealthAge, DegradedLatency. Its Probe and Clock must be nil.
	Engine engine.Config
	// Interval between publications (and probe rounds). > 0.
	Interval time.Duration
	// TTL of the observer's lease, whole seconds, >= 1 s and > Interval. The
	// lease is renewed by the publication loop itself, so a stalled observer's
	// opinions expire with it. A publication may take as long as the lease
	// lives (not one Interval): a host or a cluster that is slow but answers
	// within the lease keeps the observer's opinions published.
	TTL time.Duration
	// Logger; nil discards.
	Logger *slog.Logger

	// --- identity (who each endpoint fronts) ---

	// Identity, optional: when set, Run asks every endpoint who it fronts every
	// IdentityInterval (bounded by IdentityTimeout) and publishes the verdict
	// against ExpectedIdentity. Without it, verdicts come from RecordIdentity
	// (for example a Path's EventIdentity events through RecordEvent).
	Identity pathdialer.IdentityFunc
	// ExpectedIdentity is what every endpoint must front (see
	// pathdialer.Identity.Match). Required with Identity.
	ExpectedIdentity pathdialer.Identity
	// IdentityInterval between identity checks (> 0 with Identity).
	IdentityInterval time.Duration
	// IdentityTimeout bounds one identity check (> 0 with Identity).
	IdentityTimeout time.Duration
	// IdentityMaxAge: a verification older than this is no longer published
	// as VERIFIED. > 0.
	IdentityMaxAge time.Duration
}

// DefaultObserverConfig returns a configuration for a monitor publishing every
// second under a 5 s lease, with the engine's defaults.
func DefaultObserverConfig() ObserverConfig {
	return ObserverConfig{
		Engine:           engine.DefaultConfig(),
		Interval:         time.Second,
		ProbeTimeout:     500 * time.Millisecond,
		TTL:              5 * time.Second,
		IdentityInterval: time.Minute,
		IdentityTimeout:  5 * time.Second,
		IdentityMaxAge:   3 * time.Minute,
	}
}

// Validate names the first field that cannot work.
func (c ObserverConfig) Validate() error {
	if c.Client == nil {
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	}
	if _, err := newKeyLayout(c.Prefix); err != nil {
		return err
	}
	if err := checkName("Name", c.Name); err != nil {
		return err
	}
	if err := checkName("Region", c.Region); err != nil {
		return err
	}
	if len(c.Endpoints) == 0 {
		return fmt.Errorf("%w: Endpoints is empty", ErrInvalidConfig)
	}
	for i, ep := range c.Endpoints {
		if err := checkName(fmt.Sprintf("Endpoints[%d].Name", i), ep.Name); err != nil {
			return err
		}
	}
	if c.Interval <= 0 {
		return fmt.Errorf("%w: Interval must be > 0", ErrInvalidConfig)
	}
	if c.Probe != nil && (c.ProbeTimeout <= 0 || c.ProbeTimeout >= c.Interval) {
		return fmt.Errorf("%w: ProbeTimeout must be > 0 and below Interval", ErrInvalidConfig)
	}
	if c.TTL < time.Second || c.TTL%time.Second != 0 || c.TTL <= c.Interval {
		return fmt.Errorf("%w: TTL must be whole seconds, >= 1s and > Interval (got %v)", ErrInvalidConfig, c.TTL)
	}
	if c.Engine.Probe != nil || c.Engine.Clock != nil {
		return fmt.Errorf("%w: Engine.Probe and Engine.Clock must be nil", ErrInvalidConfig)
	}
	if c.IdentityMaxAge <= 0 {
		return fmt.Errorf("%w: IdentityMaxAge must be > 0", ErrInvalidConfig)
	}
	if c.Identity != nil {
		w := c.ExpectedIdentity
		if w.Account == "" && w.Entity == "" && len(w.Entitlements) == 0 && len(w.Extra) == 0 {
			return fmt.Errorf("%w: ExpectedIdentity is empty: an Identity check needs something to compare", ErrInvalidConfig)
		}
		if c.IdentityInterval <= 0 || c.IdentityTimeout <= 0 {
			return fmt.Errorf("%w: IdentityInterval (%v) and IdentityTimeout (%v) must be > 0", ErrInvalidConfig, c.IdentityInterval, c.IdentityTimeout)
		}
	}
	return nil
}

// Observer publishes one monitor's per-endpoint opinions under its own lease.
// Create it with NewObserver; Run publishes until its context ends.
type Observer struct {
	cfg   ObserverConfig
	keys  keyLayout
	eng   *engine.Manager
	log   *slog.Logger
	mu    sync.Mutex
	round uint64
}

var errRecordedOnly = errors.New("etcdcoord: this observer records results, it does not probe")

// NewObserver validates cfg and returns an Observer.
func NewObserver(cfg ObserverConfig) (*Observer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	keys, _ := newKeyLayout(cfg.Prefix)
	ecfg := cfg.Engine
	ecfg.Probe = func(context.Context, engine.Endpoint) error { return errRecordedOnly }
	ecfg.VerificationMaxAge = cfg.IdentityMaxAge
	eng, err := engine.New(ecfg)
	if err != nil {
		return nil, fmt.Errorf("%w: Engine: %w", ErrInvalidConfig, err)
	}
	for _, ep := range cfg.Endpoints {
		if err := eng.Register(engine.Endpoint{Name: ep.Name, Address: ep.Name, Region: nonBlank(ep.Region), Priority: ep.Priority, Jurisdiction: ep.Jurisdiction}); err != nil {
			return nil, fmt.Errorf("%w: Endpoints: %w", ErrInvalidConfig, err)
		}
	}
	o := &Observer{cfg: cfg, keys: keys, eng: eng, log: cfg.Logger}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

func nonBlank(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Record counts one probe result (err nil for success). Unknown endpoints are
// ignored; so is the caller's own cancellation.
func (o *Observer) Record(endpoint string, err error, latency time.Duration) {
	if errors.Is(err, context.Canceled) {
		return
	}
	_, _ = o.eng.Observe(endpoint, err, latency)
}

// RecordIdentity records an identity verdict about endpoint: nil when it was
// verified to front the expected account, an error wrapping
// engine.ErrIdentityMismatch when it fronts another; any other error is an
// inconclusive check (the previous verdict stands until IdentityMaxAge).
// Unknown endpoints are ignored.
func (o *Observer) RecordIdentity(endpoint string, verdict error) {
	_, _ = o.eng.Admit(endpoint, verdict)
}

// RecordEvent feeds a pathdialer EventProbe to Record and an EventIdentity
// verdict (verified, or a mismatch) to RecordIdentity; other events are
// ignored. Chain it into pathdialer.Config.OnEvent.
func (o *Observer) RecordEvent(ev pathdialer.Event) {
	switch ev.Kind {
	case pathdialer.EventProbe:
		o.Record(ev.Endpoint, ev.Err, ev.Duration)
	case pathdialer.EventIdentity:
		switch {
		case errors.Is(ev.Err, engine.ErrIdentityMismatch):
			o.RecordIdentity(ev.Endpoint, ev.Err)
		case ev.Err == nil && ev.Cause == "identity verified":
			o.RecordIdentity(ev.Endpoint, nil)
		}
	}
}

// checkIdentities asks every endpoint who it fronts, concurrently, each check
// bounded by IdentityTimeout (a check that ignores its context is abandoned
// and counts as inconclusive).
func (o *Observer) checkIdentities(ctx context.Context) {
	var wg sync.WaitGroup
	for _, ep := range o.cfg.Endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, o.cfg.IdentityTimeout)
			defer cancel()
			type res struct {
				id  pathdialer.Identity
				err error
			}
			ch := make(chan res, 1)
			go func() {
				id, err := o.cfg.Identity(cctx, ep)
				ch <- res{id, err}
			}()
			var r res
			select {
			case r = <-ch:
			case <-cctx.Done():
				r.err = cctx.Err()
			}
			if ctx.Err() != nil {
				return
			}
			verdict := error(nil)
			if r.err != nil {
				verdict = fmt.Errorf("identity check of %q could not be made: %w", ep.Name, r.err)
			} else {
				verdict = o.cfg.ExpectedIdentity.Match(r.id)
			}
			o.RecordIdentity(ep.Name, verdict)
		}()
	}
	wg.Wait()
}

// Observations returns what the observer would publish now.
func (o *Observer) Observations() []Observation {
	o.mu.Lock()
	round := o.round
	o.mu.Unlock()
	now := time.Now()
	maxAge := o.cfg.Engine.MaxHealthAge
	var out []Observation
	for _, st := range o.eng.Statuses() {
		ob := Observation{
			Observer: o.cfg.Name, Region: o.cfg.Region, Endpoint: st.Endpoint.Name,
			State:               st.State,
			Fresh:               st.State == engine.Healthy && !st.LastSuccess.IsZero() && now.Sub(st.LastSuccess) <= maxAge,
			Stale:               st.LastResult.IsZero() || now.Sub(st.LastResult) > maxAge,
			ConsecutiveFailures: st.ConsecutiveFailures, ConsecutiveSuccesses: st.ConsecutiveSuccesses,
			Latency: st.LastLatency, Round: round,
			Jurisdiction: st.Jurisdiction,
		}
		if st.LastProbeError != nil {
			ob.LastError = st.LastProbeError.Error()
		}
		switch {
		case st.IdentityMismatch:
			ob.Identity = IdentityMismatch
		case st.Verified:
			ob.Identity = IdentityVerified
		}
		if st.IdentityError != nil {
			ob.IdentityError = st.IdentityError.Error()
		}
		out = append(out, ob)
	}
	return out
}

// Run probes (when Config.Probe is set) and publishes every Interval until ctx
// ends, then revokes its lease so its opinions disappear at once. It returns
// ctx's error. Lost leases and etcd errors are retried; they are not fatal.
func (o *Observer) Run(ctx context.Context) error {
	var lease clientv3.LeaseID
	defer func() {
		if lease != 0 {
			rctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, _ = o.cfg.Client.Revoke(rctx, lease)
			cancel()
		}
	}()
	t := time.NewTicker(o.cfg.Interval)
	defer t.Stop()
	var lastID time.Time
	var until time.Time // the lease's deadline as measured here
	for {
		if o.cfg.Identity != nil && (lastID.IsZero() || time.Since(lastID) >= o.cfg.IdentityInterval) {
			lastID = time.Now()
			o.checkIdentities(ctx)
		}
		if o.cfg.Probe != nil {
			o.probeRound(ctx)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var err error
		lease, until, err = o.publish(ctx, lease, until)
		if err != nil && ctx.Err() == nil {
			o.log.Warn("etcdcoord: observer publish", "observer", o.cfg.Name, "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (o *Observer) probeRound(ctx context.Context) {
	var wg sync.WaitGroup
	for _, ep := range o.cfg.Endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, o.cfg.ProbeTimeout)
			defer cancel()
			start := time.Now()
			err := o.cfg.Probe(pctx, ep)
			if ctx.Err() != nil {
				return
			}
			if err == nil && pctx.Err() != nil {
				err = pctx.Err()
			}
			o.Record(ep.Name, err, time.Since(start))
		}()
	}
	wg.Wait()
}

// publish writes every opinion under the lease (granting one when needed) and
// renews it. It returns the lease in use (0 when it has to be granted again)
// and its deadline as measured here: the send time of the last grant or
// renewal that succeeded plus the TTL granted.
//
// A publication may take as long as the lease lives, not one Interval: each
// call is made as callUntil makes them (a short first attempt, doubling, made
// again at once on a timeout, so a member that stopped answering costs one
// short attempt) until the lease's deadline (a grant: until one TTL from
// now). A host or a cluster that is slow but answers within the lease keeps
// the observer's opinions published; a call that cannot be made by then
// leaves the lease to lapse, and the next round grants a new one.
func (o *Observer) publish(ctx context.Context, lease clientv3.LeaseID, until time.Time) (clientv3.LeaseID, time.Time, error) {
	c := o.cfg.Client
	floor := firstTimeout(o.cfg.TTL)
	if lease != 0 && !time.Now().Before(until) {
		lease = 0 // it may have lapsed: nothing written under it is sure to last
	}
	if lease == 0 {
		var g *clientv3.LeaseGrantResponse
		var sent time.Time
		if err := callUntil(ctx, time.Now().Add(o.cfg.TTL), floor, func(cctx context.Context) error {
			sent = time.Now()
			var err error
			g, err = c.Grant(cctx, int64(o.cfg.TTL/time.Second))
			return err
		}); err != nil {
			return 0, time.Time{}, fmt.Errorf("grant lease: %w", err)
		}
		lease, until = g.ID, sent.Add(time.Duration(g.TTL)*time.Second)
	}
	o.mu.Lock()
	o.round++
	o.mu.Unlock()
	var ops []clientv3.Op
	for _, ob := range o.Observations() {
		b, _ := json.Marshal(ob)
		ops = append(ops, clientv3.OpPut(o.keys.Observation(o.cfg.Name, ob.Endpoint), string(b), clientv3.WithLease(lease)))
	}
	// The same puts again after an attempt that timed out (and may have
	// landed): writing them twice changes nothing.
	if err := callUntil(ctx, until, floor, func(cctx context.Context) error {
		_, err := c.Txn(cctx).Then(ops...).Commit()
		return err
	}); err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return 0, time.Time{}, fmt.Errorf("lease expired: %w", err)
		}
		return lease, until, fmt.Errorf("put observations: %w", err)
	}
	var ka *clientv3.LeaseKeepAliveResponse
	var sent time.Time
	if err := callUntil(ctx, until, floor, func(cctx context.Context) error {
		sent = time.Now()
		var err error
		ka, err = c.KeepAliveOnce(cctx, lease)
		return err
	}); err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return 0, time.Time{}, fmt.Errorf("lease expired: %w", err)
		}
		return lease, until, fmt.Errorf("renew lease: %w", err)
	}
	return lease, sent.Add(time.Duration(ka.TTL) * time.Second), nil
}
