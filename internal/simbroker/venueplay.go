package simbroker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/venue"
)

// VenuePlay is how the simulated broker plays a venue.Profile: the venue's
// facts turned into the broker's behaviour. FromVenue builds it (with the
// Config around it); Config.Venue carries it. Durations are the played ones,
// already divided by TimeScale.
//
// What each profile field becomes:
//
//   - DedupScope, DedupWindow: Config.Dedup (all states: DedupAcrossRegions
//     for DedupWindow, then a repeat books anew; open orders: DedupOpenOnly;
//     none, unknown or a mere requirement on the client: DedupNone) and
//     DedupWindow (0: for ever).
//   - LookupFalseNegative: LookupLag — a booked order answers "not found"
//     (REST 404, FIX unknown order, missing from listings) for this long.
//   - LookupRetention: Retention — a finished order is no longer found after
//     this long (0: for ever).
//   - LookupBudget: LookupRate and LookupBurst, a token bucket for order
//     lookups (REST GET /v1/orders…, FIX status requests), account-wide or
//     per region (per IP or connection). Over it: REST 429 with Retry-After;
//     Banned: a lookup sent while throttled bans for BanFor (HTTP 418);
//     SessionTerminated: a FIX status request over it resets the session.
//   - BrokerFence: one session per identity: Config.SessionPolicy
//     SessionOnePerCredential with Config.Fence FenceEnforced (the new logon
//     fences the old region, REST included); a kill switch: FenceEnforced.
//   - FencingTokens: Config.Tokens TokensChecked when supported.
//   - SessionsPerIdentity, Lockout: the FIX session: one at a time (the
//     simulated broker has one session ID), and Lockout — after a session
//     dropped without a Logout, logons are refused for this long.
//   - CancelOnDisconnect, DeadMan, HotStandby: kept in Profile, not played
//     here (no resting-order cancels on a disconnect; one FIX session).
type VenuePlay struct {
	// Profile is the profile a client of this broker should judge by: the
	// venue's, every duration and rate scaled by TimeScale.
	Profile venue.Profile
	// TimeScale: venue time runs this many times faster (>= 1).
	TimeScale float64

	DedupWindow time.Duration
	LookupLag   time.Duration
	Retention   time.Duration
	// LookupRate is lookups per second (0: unlimited), LookupBurst the
	// bucket's size; PerRegion counts each region apart.
	LookupRate  float64
	LookupBurst int
	PerRegion   bool
	Overrun     venue.Overrun
	BanFor      time.Duration
	Lockout     time.Duration
	// CopyHold is how long HoldCopies holds a region's bytes: longer than the
	// quarantine a client of this profile waits (MinQuarantine of
	// VenueOptions.MaxCopyHold), so the copies land after the verdict.
	CopyHold time.Duration

	// Mapping says, field by field, how the profile was played.
	Mapping []string
}

// VenueOptions tune FromVenue.
type VenueOptions struct {
	// TimeScale makes venue time run faster: every duration of the profile
	// is divided by it and every rate multiplied (60: a minute of the venue
	// is a second here). 0 means 1.
	TimeScale float64
	// Heartbeat is the FIX heartbeat interval the client uses, for a lockout
	// counted in heartbeats (not scaled). 0 means 1 s.
	Heartbeat time.Duration
	// UnknownLag is the lookup lag played (before scaling) when the venue's
	// LookupFalseNegative is unknown. 0 means venue.UnknownFalseNegative, the
	// horizon the rules assume.
	UnknownLag time.Duration
	// UnknownWindow is the dedup window played (before scaling) when the
	// venue deduplicates in every state for an undocumented time. 0 means
	// one minute.
	UnknownWindow time.Duration
	// BanFor is how long a banned client is refused (before scaling); 0
	// means two minutes (Binance's shortest ban).
	BanFor time.Duration
	// MaxCopyHold is the client's pathdialer.Config.MaxCopyHold, from which
	// CopyHold is derived; 0 means 10 s.
	MaxCopyHold time.Duration
	// CopyHold, when set, is the hold played (not scaled: it is the
	// network's); 0 means twice the client's minimum quarantine.
	CopyHold time.Duration
}

// FromVenue returns a Config (DefaultConfig otherwise) whose broker plays p,
// as VenuePlay describes, with venue time scaled by opts.TimeScale. p must
// pass its Validate.
func FromVenue(p venue.Profile, opts VenueOptions) (Config, error) {
	if err := p.Validate(); err != nil {
		return Config{}, fmt.Errorf("%w: FromVenue: %w", ErrInvalidConfig, err)
	}
	k := opts.TimeScale
	switch {
	case k == 0:
		k = 1
	case k < 1 || math.IsNaN(k) || math.IsInf(k, 0):
		return Config{}, fmt.Errorf("%w: VenueOptions.TimeScale %v must be >= 1 (0 = 1)", ErrInvalidConfig, opts.TimeScale)
	}
	for name, d := range map[string]time.Duration{"Heartbeat": opts.Heartbeat, "UnknownLag": opts.UnknownLag, "UnknownWindow": opts.UnknownWindow,
		"BanFor": opts.BanFor, "MaxCopyHold": opts.MaxCopyHold, "CopyHold": opts.CopyHold} {
		if d < 0 {
			return Config{}, fmt.Errorf("%w: VenueOptions.%s %v is negative", ErrInvalidConfig, name, d)
		}
	}
	hb := orDur(opts.Heartbeat, time.Second)
	sc := func(d time.Duration) time.Duration {
		if d == venue.Forever {
			return d
		}
		return time.Duration(float64(d) / k)
	}
	cfg := DefaultConfig()
	pl := &VenuePlay{Profile: ScaleProfile(p, k), TimeScale: k}
	note := func(format string, a ...any) { pl.Mapping = append(pl.Mapping, fmt.Sprintf(format, a...)) }

	// Deduplication.
	switch d := p.DedupScope; {
	case d.Reliable() && d.Value == venue.DedupAllStates:
		cfg.Dedup = DedupAcrossRegions
		if w := p.DedupWindow; w.Reliable() && w.Value != venue.Forever {
			pl.DedupWindow = sc(w.Value)
		} else if !w.Reliable() {
			pl.DedupWindow = sc(orDur(opts.UnknownWindow, time.Minute))
		}
		note("DedupScope all states: refused for %s", windowText(pl.DedupWindow))
	case d.Reliable() && d.Value == venue.DedupOpenOrders:
		cfg.Dedup = DedupOpenOnly
		note("DedupScope open orders: a copy of a filled or canceled order books anew")
	default:
		cfg.Dedup = DedupNone
		note("DedupScope %s (%s): no deduplication", d.Value, d.Basis)
	}
	// Lookups.
	if f := p.LookupFalseNegative; f.Known() && f.Basis != venue.BasisRequirement {
		pl.LookupLag = sc(f.Value)
	} else {
		pl.LookupLag = sc(orDur(opts.UnknownLag, venue.UnknownFalseNegative))
	}
	note("LookupFalseNegative: a booked order answers not found for %v", pl.LookupLag)
	if r := p.LookupRetention; r.Reliable() && r.Value != venue.Forever {
		pl.Retention = sc(r.Value)
		note("LookupRetention: a finished order is forgotten after %v", pl.Retention)
	}
	if b := p.LookupBudget; b.Reliable() {
		cost := max(b.Value.LookupCost, 1)
		pl.LookupRate = float64(b.Value.Requests) / float64(cost) / b.Value.Per.Seconds() * k
		pl.LookupBurst = max(1, b.Value.Requests/cost)
		pl.PerRegion = b.Value.Scope == venue.PerIP || b.Value.Scope == venue.PerConnection || b.Value.Scope == venue.PerSession
		pl.Overrun = b.Value.Exceeded
	} else {
		// The rules pace an unknown budget at UnknownLookupInterval within
		// LookupShare of it: the venue is played as allowing exactly that.
		pl.LookupRate = 1 / venue.UnknownLookupInterval.Seconds() / venue.LookupShare * k
		pl.LookupBurst = unknownLookupBurst
		pl.Overrun = venue.Throttled
	}
	pl.BanFor = sc(orDur(opts.BanFor, 2*time.Minute))
	note("LookupBudget: %.1f lookups/s, burst %d, %s, over it %s", pl.LookupRate, pl.LookupBurst, map[bool]string{true: "per region", false: "account-wide"}[pl.PerRegion], pl.Overrun)
	// Fences and tokens.
	if p.BrokerFence.Reliable() {
		switch p.BrokerFence.Value {
		case venue.FenceOneSession:
			cfg.SessionPolicy, cfg.Fence = SessionOnePerCredential, FenceEnforced
			note("BrokerFence one session: a logon through another region fences the old one")
		case venue.FenceKillSwitch:
			cfg.Fence = FenceEnforced
			note("BrokerFence kill switch: FenceRegion")
		}
	}
	if t := p.FencingTokens; t.Reliable() && t.Value == venue.Supported {
		cfg.Tokens = TokensChecked
		note("FencingTokens: checked")
	}
	// Sessions.
	pl.Lockout = sc(p.Lockout.Value.Fixed) + time.Duration(p.Lockout.Value.HeartbeatMultiple*float64(hb))
	if !p.Lockout.Known() {
		pl.Lockout = 2*hb + sc(venue.UnknownLockout)
	}
	note("Lockout: a FIX session dropped without a logout blocks logons for %v", pl.Lockout)
	hold := orDur(opts.MaxCopyHold, 10*time.Second)
	pl.CopyHold = opts.CopyHold
	if pl.CopyHold == 0 {
		pl.CopyHold = 2 * pl.Profile.MinQuarantine(hold)
	}
	note("HoldCopies holds a region's bytes for %v", pl.CopyHold)
	note("CancelOnDisconnect, DeadMan, HotStandby: not played")
	cfg.Venue = pl
	return cfg, nil
}

// ScaleProfile returns p with venue time running k times faster: every
// duration divided by k (Forever stays), every budget's window too.
// Sources are kept; the Scope says the profile is scaled.
func ScaleProfile(p venue.Profile, k float64) venue.Profile {
	if k == 1 {
		return p
	}
	sc := func(d time.Duration) time.Duration {
		if d == venue.Forever || d == 0 {
			return d
		}
		return max(time.Duration(float64(d)/k), 1)
	}
	p.Scope = fmt.Sprintf("%s (simulated, venue time ×%g)", p.Scope, k)
	if p.DedupWindow.Known() {
		p.DedupWindow.Value = sc(p.DedupWindow.Value)
	}
	if p.LookupFalseNegative.Known() {
		p.LookupFalseNegative.Value = sc(p.LookupFalseNegative.Value)
	} else {
		// What the rules would assume, scaled: the played lag.
		p.LookupFalseNegative = venue.Fact[time.Duration]{Value: sc(venue.UnknownFalseNegative), Source: venue.Source{
			URL: "https://pkg.go.dev/github.com/brokerpath/brokerpath/venue#UnknownFalseNegative", Quote: "UnknownFalseNegative",
			Basis: venue.BasisReported, Note: "unknown at the venue: the rules' assumed horizon, scaled"}}
	}
	if p.LookupRetention.Known() {
		p.LookupRetention.Value = sc(p.LookupRetention.Value)
	}
	if p.LookupBudget.Known() {
		p.LookupBudget.Value.Per = sc(p.LookupBudget.Value.Per)
	}
	if p.Lockout.Known() {
		p.Lockout.Value.Fixed = sc(p.Lockout.Value.Fixed)
	}
	if p.DeadMan.Known() {
		p.DeadMan.Value.Timeout, p.DeadMan.Value.Refresh = sc(p.DeadMan.Value.Timeout), sc(p.DeadMan.Value.Refresh)
	}
	return p
}

func orDur(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func windowText(w time.Duration) string {
	if w == 0 {
		return "ever"
	}
	return w.String()
}

// unknownLookupBurst is the burst played for an unknown lookup budget: the
// rules let a re-query ask about 10 orders at once where the budget is
// unknown, within LookupShare of it.
const unknownLookupBurst = int(10 / venue.LookupShare)

// validate checks a VenuePlay given in Config.Venue.
func (pl *VenuePlay) validate() error {
	if pl == nil {
		return nil
	}
	if pl.DedupWindow < 0 || pl.LookupLag < 0 || pl.Retention < 0 || pl.BanFor < 0 || pl.Lockout < 0 || pl.CopyHold < 0 {
		return errors.New("Venue: durations must not be negative")
	}
	if pl.LookupRate < 0 || math.IsNaN(pl.LookupRate) || pl.LookupBurst < 0 {
		return errors.New("Venue: LookupRate and LookupBurst must not be negative")
	}
	if pl.Profile.Name != "" {
		if err := pl.Profile.Validate(); err != nil {
			return fmt.Errorf("Venue.Profile: %w", err)
		}
	}
	return nil
}

// venueState is the broker's running state of its VenuePlay: the lookup
// buckets, bans and the FIX lockout. A nil *venueState plays nothing.
type venueState struct {
	pl *VenuePlay

	mu          sync.Mutex
	buckets     map[string]*tokenBucket // "" account-wide, else the region
	banned      map[string]time.Time
	lockedUntil time.Time
	throttled   int
	lockouts    int
}

func newVenueState(pl *VenuePlay) *venueState {
	if pl == nil {
		return nil
	}
	return &venueState{pl: pl, buckets: map[string]*tokenBucket{}, banned: map[string]time.Time{}}
}

// lookupVerdict is what the budget says of one lookup.
type lookupVerdict struct {
	ok         bool
	status     int // 429 or 418
	retryAfter time.Duration
	terminate  bool // the session is ended (SessionTerminated)
}

// takeLookup spends one lookup of region's budget at now.
func (v *venueState) takeLookup(region string, now time.Time) lookupVerdict {
	if v == nil || v.pl.LookupRate <= 0 {
		return lookupVerdict{ok: true}
	}
	key := ""
	if v.pl.PerRegion {
		key = region
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if until, ok := v.banned[key]; ok {
		if now.Before(until) {
			v.throttled++
			return lookupVerdict{status: http.StatusTeapot, retryAfter: until.Sub(now)}
		}
		delete(v.banned, key)
	}
	b := v.buckets[key]
	if b == nil {
		b = newTokenBucket(v.pl.LookupRate, v.pl.LookupBurst, now)
		v.buckets[key] = b
	}
	ok, wait := b.take(now)
	if ok {
		return lookupVerdict{ok: true}
	}
	v.throttled++
	out := lookupVerdict{status: http.StatusTooManyRequests, retryAfter: wait}
	switch v.pl.Overrun {
	case venue.Banned:
		// Failing to back off: banned.
		if b.tokens < 0 {
			v.banned[key] = now.Add(v.pl.BanFor)
			out.status, out.retryAfter = http.StatusTeapot, v.pl.BanFor
		}
		b.tokens-- // a request while throttled counts against the client
	case venue.SessionTerminated:
		out.terminate = true
	}
	return out
}

// visible reports whether a lookup at now sees o: booked at least LookupLag
// ago, and, once finished, not forgotten (Retention).
func (v *venueState) visible(o *Order, now time.Time) bool {
	if v == nil {
		return true
	}
	if now.Sub(o.CreatedAt) < v.pl.LookupLag {
		return false
	}
	if v.pl.Retention > 0 && !o.Open() && now.Sub(o.UpdatedAt) >= v.pl.Retention {
		return false
	}
	return true
}

// lockedOut reports whether a FIX logon at now is refused, and until when.
func (v *venueState) lockedOut(now time.Time) (bool, time.Time) {
	if v == nil {
		return false, time.Time{}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if now.Before(v.lockedUntil) {
		v.lockouts++
		return true, v.lockedUntil
	}
	return false, time.Time{}
}

// sessionDropped starts the lockout after a FIX session ended without a
// Logout from the client.
func (v *venueState) sessionDropped(now time.Time) {
	if v == nil || v.pl.Lockout <= 0 {
		return
	}
	v.mu.Lock()
	v.lockedUntil = now.Add(v.pl.Lockout)
	v.mu.Unlock()
}

// VenueStats counts what the venue play refused.
type VenueStats struct {
	// Throttled: lookups answered 429 or 418 (REST) or dropped (FIX).
	Throttled int
	// Lockouts: FIX logons refused during a lockout.
	Lockouts int
}

// VenueStats returns the counts of the venue play (zero without one).
func (b *Broker) VenueStats() VenueStats {
	v := b.venue
	if v == nil {
		return VenueStats{}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return VenueStats{Throttled: v.throttled, Lockouts: v.lockouts}
}

// Play returns the broker's VenuePlay, nil when it plays none.
func (b *Broker) Play() *VenuePlay { return b.cfg.Venue }

// visibleOrder is the latest booking of clientOrderID a lookup sees now.
func (b *Broker) visibleOrder(clientOrderID string, now time.Time) (Order, bool) {
	bk := b.book
	bk.mu.Lock()
	defer bk.mu.Unlock()
	prev := bk.byCID[clientOrderID]
	for i := len(prev) - 1; i >= 0; i-- {
		if b.venue.visible(prev[i], now) {
			return *prev[i], true
		}
	}
	return Order{}, false
}

// visibleList is book.list as a lookup sees it now.
func (b *Broker) visibleList(openOnly bool, now time.Time) []Order {
	bk := b.book
	bk.mu.Lock()
	defer bk.mu.Unlock()
	out := make([]Order, 0, len(bk.all))
	for _, o := range bk.all {
		if (openOnly && !o.Open()) || !b.venue.visible(o, now) {
			continue
		}
		out = append(out, *o)
	}
	return out
}

// throttleREST answers a REST lookup over the budget (429 or 418 with
// Retry-After) and reports whether it did.
func (rg *Region) throttleREST(w http.ResponseWriter, r *http.Request) bool {
	v := rg.b.venue.takeLookup(rg.name, time.Now())
	if v.ok {
		return false
	}
	svc, src := rg.sourceOf(r)
	rg.b.audit.add(Record{Kind: KindLookup, Region: rg.name, Service: string(svc), ConnID: src.connID, ClientOrderID: r.PathValue("id"),
		Outcome: OutcomeFailed, Detail: "rate limited (" + strconv.Itoa(v.status) + ")"})
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(v.retryAfter)))
	msg := "too many requests: the lookup budget is spent"
	if v.status == http.StatusTeapot {
		msg = "banned for failing to back off after 429"
	}
	writeJSON(w, v.status, map[string]string{"error": msg, "code": "rate_limited"})
	return true
}

// HoldCopies holds every byte sent to region's services (a blackhole: the
// connections stay open, nothing is delivered either way) for the play's
// CopyHold, or d when d > 0, then delivers them: copies the client wrote
// land late, after a quarantine of the venue's profile has passed. It
// blocks for the hold (or until ctx is done: the bytes are delivered then);
// services default to rest and fix.
func (b *Broker) HoldCopies(ctx context.Context, region string, d time.Duration, svcs ...Service) error {
	if d <= 0 {
		if b.cfg.Venue == nil || b.cfg.Venue.CopyHold <= 0 {
			return fmt.Errorf("%w: HoldCopies needs a hold: give d or a Venue with CopyHold", ErrInvalidFault)
		}
		d = b.cfg.Venue.CopyHold
	}
	if len(svcs) == 0 {
		svcs = []Service{REST, FIX}
	}
	for _, s := range svcs {
		if err := b.SetFault(region, s, Blackhole{}); err != nil {
			return err
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	var errs []error
	for _, s := range svcs {
		errs = append(errs, b.SetFault(region, s, None{}))
	}
	return errors.Join(errs...)
}

// throttleFIX drops a FIX status request over the lookup budget (no answer:
// the client's answer timeout tells it), auditing it; with
// SessionTerminated the session is ended as well. It reports whether it did.
func (fs *fixServer) throttleFIX(fc *fixConn, clOrdID string) bool {
	v := fs.b.venue.takeLookup(fc.rg.name, time.Now())
	if v.ok {
		return false
	}
	src := fc.source()
	detail := "rate limited: not answered"
	if v.terminate {
		detail = "rate limited: session terminated"
	}
	fs.b.audit.add(Record{Kind: KindLookup, Region: fc.rg.name, Service: string(FIX), ConnID: src.connID, ClientOrderID: clOrdID,
		Outcome: OutcomeFailed, Detail: detail})
	if v.terminate {
		fc.reset()
	}
	return true
}
