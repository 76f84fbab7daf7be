package pathdialer

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/brokerpath/brokerpath/venue"
)

// DefaultMaxCopyHold is Config.MaxCopyHold's default: 10 s, twice the longest
// bound the transports put by default on getting an order's bytes to the
// broker and an answer back (5 s: the FIX relay's DialTimeout, the REST read
// breaker's Timeout), so a copy delayed by up to one such bound on the way out
// and one in the broker's gateway is covered. The local fence also aborts
// connections (unsent bytes are discarded, not flushed). Raise it when your
// broker's gateway can queue longer, or when you set the transports' timeouts
// higher.
const DefaultMaxCopyHold = 10 * time.Second

// venueProfile returns the profile the Path judges by: Config.Venue, or
// venue.Conservative() when it is the zero value.
func (c Config) venueProfile() venue.Profile {
	if c.Venue == (venue.Profile{}) {
		return venue.Conservative()
	}
	return c.Venue
}

// maxCopyHold returns MaxCopyHold with its default applied.
func (c Config) maxCopyHold() time.Duration {
	if c.MaxCopyHold == 0 {
		return DefaultMaxCopyHold
	}
	return c.MaxCopyHold
}

// quarantine returns Quarantine with its default (the venue's minimum)
// applied.
func (c Config) quarantine() time.Duration {
	if c.Quarantine == 0 {
		return c.venueProfile().MinQuarantine(c.maxCopyHold())
	}
	return c.Quarantine
}

// validateVenue checks the profile and that Quarantine covers what the venue
// needs for a lookup that finds nothing to prove anything.
func (c Config) validateVenue() error {
	v := c.venueProfile()
	if err := v.Validate(); err != nil {
		return configError("Venue", "", "Venue: %w", err)
	}
	for _, key := range slices.Sorted(maps.Keys(c.ReconcileListings)) {
		n := c.ReconcileListings[key]
		switch _, byService := c.ReconcileByService[key]; {
		case key == "" && c.Reconcile == nil:
			return configError("ReconcileListings", "", "ReconcileListings has the key \"\" (Config.Reconcile), but Reconcile is nil: use the service's key from ReconcileByService")
		case key != "" && !byService:
			return configError("ReconcileListings", "", "ReconcileListings names %q, which is not a key of ReconcileByService (\"\" is Config.Reconcile)", key)
		case n < 1:
			return configError("ReconcileListings", "", "ReconcileListings[%q] is %d: the requests one listing call makes must be >= 1", key, n)
		}
	}
	hold := c.maxCopyHold()
	if minQ := v.MinQuarantine(hold); c.Quarantine > 0 && c.Quarantine < minQ {
		fn := v.FalseNegative()
		why := fmt.Sprintf("%s's lookups may answer \"not found\" for %v after booking an order", v.Name, fn)
		if !v.LookupFalseNegative.Known() {
			why = fmt.Sprintf("%s does not document how long a lookup may wrongly answer \"not found\" (%v assumed)", v.Name, fn)
		} else if u := v.LookupFalseNegative.URL; u != "" {
			why += " (" + u + ")"
		}
		return configError("Quarantine", "", "Quarantine is %v, shorter than the venue's minimum %v: %s, and a copy may be held up to MaxCopyHold (%v) before it is booked; a lookup before then proves nothing (set Venue to the venue's profile, lower MaxCopyHold if your path provably holds copies for less, or leave Quarantine 0)", c.Quarantine, minQ, why, hold)
	}
	return nil
}

// resolveVenue fills in the defaults New keeps: the profile, MaxCopyHold and
// Quarantine, and the late-landing watch's schedule.
func (p *Path) resolveVenue() error {
	c := &p.cfg
	c.Venue = c.venueProfile()
	c.MaxCopyHold = c.maxCopyHold()
	c.Quarantine = c.quarantine()
	p.verdicts.horizon = c.Venue.LateLandingHorizon(c.MaxCopyHold)
	sched, err := c.Venue.RequerySchedule(watchFirst, p.verdicts.horizon)
	if err != nil {
		return configError("Venue", "", "Venue: %w", err)
	}
	p.verdicts.schedule = sched
	return nil
}

// watchFirst is the first look of the late-landing watch after a final
// NOT_RECEIVED (then doubling gaps, each at least the venue's LookupInterval).
const watchFirst = time.Second

// evidence is what the Path knows about the lookup that found v's order
// missing, at now.
func (p *Path) evidence(v *Verdict, now time.Time) venue.Evidence {
	e := venue.Evidence{
		LookupAfterSend: now.Sub(v.FoundAt),
		MaxCopyHold:     p.cfg.MaxCopyHold,
		SinceFirstSend:  now.Sub(v.FoundAt),
	}
	if at, ok := p.brokerFencedAt(v.Endpoint); ok {
		// The Fencer's nil return with BrokerFencesViaFencer: the broker fenced the
		// endpoint or advanced its fencing token. The profile says which of
		// the two the venue can do.
		e.BrokerFenced, e.TokenChecked = true, true
		e.LookupAfterCutoff = now.Sub(at)
	}
	return e
}

// brokerFencedAt: when the broker itself confirmed (Config.BrokerFencesViaFencer)
// that endpoint can no longer book this account's orders, if it was and the
// endpoint was not unfenced since.
func (p *Path) brokerFencedAt(endpoint string) (time.Time, bool) {
	rt, ok := p.eps[endpoint]
	if !ok || !p.cfg.BrokerFencesViaFencer || !rt.brokerFenced.Load() {
		return time.Time{}, false
	}
	return p.epoch.Add(time.Duration(rt.brokerFencedAt.Load())), true
}

// unknownLookupBatch bounds a re-query's orders when the venue's budget is
// unknown.
const unknownLookupBatch = 10

// lookupBatch is the most orders one re-query asks about: what the venue's
// budget allows the lookups in one of its windows (LookupInterval spacing),
// at least 1.
func (p *Path) lookupBatch() int {
	b := p.cfg.Venue.LookupBudget
	if !b.Reliable() || b.Value.Per <= 0 {
		return unknownLookupBatch
	}
	return max(1, int(b.Value.Per/p.cfg.Venue.LookupInterval()))
}

// requeryBatch is the most orders one re-query through reconciler key asks
// about: every due order where the function reads listings (one call
// answers for all, Config.ReconcileListings), else lookupBatch.
func (p *Path) requeryBatch(key string) int {
	if p.cfg.ReconcileListings[key] > 0 {
		return math.MaxInt
	}
	return p.lookupBatch()
}

// requeryAhead returns what one re-query through reconciler key asks about:
// the due tickets, at most requeryBatch, and then, oldest due first, the
// provisional NOT_RECEIVED verdicts of the same reconciler that would fall
// due before the pause this re-query starts ends (requeryPause, counting
// them): waiting for that pause, their next look would come later than
// MaxCopyHold after the last. An early look is harmless: it finds a landing
// or changes nothing (verdict.go: requeried).
func (p *Path) requeryAhead(key string, due []TicketInfo, now time.Time) []TicketInfo {
	n := p.requeryBatch(key)
	if len(due) >= n {
		return due[:n]
	}
	type soon struct {
		t  TicketInfo
		at time.Time
	}
	var cands []soon
	p.verdicts.mu.Lock()
	for _, id := range p.verdicts.order {
		v := p.verdicts.byID[id]
		if v == nil || v.Final || !v.open() || !now.Before(v.RequeryAt) || p.reconcilerKey(v.Service) != key {
			continue // final (the watch keeps its own schedule), already due, or another reconciler's
		}
		cands = append(cands, soon{TicketInfo{OrderID: v.OrderID, Service: v.Service, Endpoint: v.Endpoint, Token: v.Token, State: TicketHanded}, v.RequeryAt})
	}
	p.verdicts.mu.Unlock()
	slices.SortStableFunc(cands, func(a, b soon) int { return a.at.Compare(b.at) })
	out := slices.Clone(due)
	for _, c := range cands {
		if len(out) >= n || !c.at.Before(now.Add(p.requeryPause(key, len(out)+1))) {
			break
		}
		out = append(out, c.t)
	}
	return out
}

// requeryPause is how long the next re-query through reconciler key waits
// after one that asked about n orders: the listing's requests at the venue's
// LookupInterval where the function reads listings, else lookupPause(n).
func (p *Path) requeryPause(key string, n int) time.Duration {
	if k := p.cfg.ReconcileListings[key]; k > 0 {
		return time.Duration(k) * p.cfg.Venue.LookupInterval()
	}
	return p.lookupPause(n)
}

// lookupPause is how long a reconciler's next re-query waits after one that
// asked about n orders: n lookups at the venue's LookupInterval.
func (p *Path) lookupPause(n int) time.Duration {
	return time.Duration(n) * p.cfg.Venue.LookupInterval()
}
