package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// Identity is what an endpoint says it fronts: the account, the legal entity,
// the entitlements, and any other fields worth comparing (FIX CompIDs, an account
// tag). An endpoint you cannot trade your positions through is not a backup.
type Identity struct {
	Account      string            `json:"account"`
	Entity       string            `json:"entity,omitempty"`
	Entitlements []string          `json:"entitlements,omitempty"`
	Extra        map[string]string `json:"extra,omitempty"`
}

// Match compares what an endpoint answered (got) with the expected identity (the
// receiver). Empty expected fields are not compared; every expected entitlement
// must be present. The error wraps engine.ErrIdentityMismatch and names every
// difference.
func (want Identity) Match(got Identity) error {
	var diffs []string
	if want.Account != "" && got.Account != want.Account {
		diffs = append(diffs, fmt.Sprintf("account %q, expected %q", got.Account, want.Account))
	}
	if want.Entity != "" && got.Entity != want.Entity {
		diffs = append(diffs, fmt.Sprintf("entity %q, expected %q", got.Entity, want.Entity))
	}
	for _, e := range want.Entitlements {
		if !slices.Contains(got.Entitlements, e) {
			diffs = append(diffs, fmt.Sprintf("entitlement %q missing", e))
		}
	}
	keys := make([]string, 0, len(want.Extra))
	for k := range want.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if got.Extra[k] != want.Extra[k] {
			diffs = append(diffs, fmt.Sprintf("%s %q, expected %q", k, got.Extra[k], want.Extra[k]))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", engine.ErrIdentityMismatch, strings.Join(diffs, "; "))
}

// IdentityFunc asks one endpoint who it fronts (for example an authenticated
// account query, rest.IdentityCheck). An error means the question could not be
// answered; the previous verdict stands (until it expires). It should honour
// ctx; the Path bounds it with Config.IdentityTimeout either way.
type IdentityFunc func(ctx context.Context, ep Endpoint) (Identity, error)

// The comparison rule, one for every value (ExpectedIdentity's account,
// entity, entitlements and Extra values, endpoint jurisdictions and
// Engine.TargetJurisdictions): values are compared exactly as written, case
// included, and nothing is trimmed. New refuses a configured value that could
// never compare as meant: blank where a value is required (an Extra value, an
// entitlement, a jurisdiction rule entry) or with leading or trailing white
// space. What an endpoint answers is compared as it answered: a padded answer
// is a mismatch, which keeps the endpoint out, loudly.

const (
	defaultStartWait             = 10 * time.Second
	defaultVerificationMaxAge    = 3 * time.Minute
	defaultSwitchVerificationAge = 0
)

// withAdmissionDefaults sets the engine's identity freshness for a Path: a
// verification expires after three missed checks at the default interval. A
// switch adds no re-check before it begins (Engine.SwitchVerificationAge 0):
// Config.SwitchIdentityCheck re-proves the target alongside the fence and
// reconcile instead, which adds no time to the hold when it is quicker.
func (c Config) withAdmissionDefaults() Config {
	c.Engine.VerificationMaxAge = defaultVerificationMaxAge
	c.Engine.SwitchVerificationAge = defaultSwitchVerificationAge
	return c
}

// admissionEngineConfig is the engine configuration a Path runs: with an
// Identity check, admission is required.
func admissionEngineConfig(c Config) engine.Config {
	e := c.Engine
	if c.Identity != nil {
		e.RequireAdmission = true
	}
	return e
}

// validateAdmission refuses expectations and jurisdictions that cannot compare.
func (c Config) validateAdmission() error {
	padded := func(v string) bool { return strings.TrimSpace(v) != v }
	for i, ep := range c.Endpoints {
		if padded(ep.Jurisdiction) {
			return configError(fmt.Sprintf("Endpoints[%d].Jurisdiction", i), ep.Name, "Endpoints[%d] (%q) Jurisdiction %q has leading or trailing white space; jurisdictions are compared exactly as written", i, ep.Name, ep.Jurisdiction)
		}
	}
	if c.StartWait < 0 {
		return configError("StartWait", "", "StartWait is %v, must be >= 0 (0 = do not wait)", c.StartWait)
	}
	if c.Identity == nil {
		return nil
	}
	want := c.ExpectedIdentity
	for _, f := range [...]struct{ name, v string }{{"Account", want.Account}, {"Entity", want.Entity}} {
		if padded(f.v) {
			return configError("ExpectedIdentity."+f.name, "", "ExpectedIdentity.%s %q has leading or trailing white space (or is only white space); identities are compared exactly as written", f.name, f.v)
		}
	}
	for i, e := range want.Entitlements {
		if strings.TrimSpace(e) == "" || padded(e) {
			return configError(fmt.Sprintf("ExpectedIdentity.Entitlements[%d]", i), "", "ExpectedIdentity.Entitlements[%d] is %q: blank or padded entitlements never compare as meant", i, e)
		}
	}
	keys := slices.Sorted(maps.Keys(want.Extra))
	for _, k := range keys {
		v := want.Extra[k]
		switch {
		case strings.TrimSpace(k) == "" || padded(k):
			return configError("ExpectedIdentity.Extra", "", "ExpectedIdentity.Extra has a blank or padded key %q", k)
		case strings.TrimSpace(v) == "":
			return configError(fmt.Sprintf("ExpectedIdentity.Extra[%q]", k), "", "ExpectedIdentity.Extra[%q] is blank: it would compare nothing (an empty answer matches it); give the value to expect or remove the key", k)
		case padded(v):
			return configError(fmt.Sprintf("ExpectedIdentity.Extra[%q]", k), "", "ExpectedIdentity.Extra[%q] %q has leading or trailing white space; identities are compared exactly as written", k, v)
		}
	}
	return nil
}

// engineVerdict filters the engine's Validate for a Path. A jurisdiction rule
// no backup satisfies is meaningful with DegradedReads: an outage of the
// primary halts orders (none crosses the border) while reads go to a backup
// outside the rule. Without DegradedReads it is refused, saying so.
func (c Config) engineVerdict(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, engine.ErrNoAllowedBackup) && c.DegradedReads:
		return nil
	case errors.Is(err, engine.ErrNoAllowedBackup):
		return configError("Endpoints", "", "Endpoints: %w; with DegradedReads set this configuration is meaningful (an outage of the primary halts orders while reads go to a healthy backup outside the rule)", err)
	case errors.Is(err, engine.ErrNoPrimary):
		return configError("Endpoints[].Primary", "", "Endpoints: no endpoint is Primary (mark exactly one): %w", err)
	}
	return configError("Endpoints", "", "Endpoints: %w", err)
}

// admission is the Path's bookkeeping for identity checks and evidence
// reports; only its own methods touch it.
type admission struct {
	mu           sync.Mutex
	checking     map[string]chan struct{} // endpoint -> closed when its check returns
	expired      map[string]bool          // expiry announced
	brokenProbe  map[string]bool          // broken probe announced
	gray         map[string]bool          // gray failure announced
	lastOnDemand map[string]time.Time
	probeStart   map[string]time.Time // when the running probe of an endpoint started
	startHalt    string               // the halt kind Start left the gate in ("" = none)

	// The controller goroutine's own (guard.go): the identity re-check of
	// the switch under way, and the endpoint the gate last opened on ("" =
	// the primary, where Start opens it).
	sw           *switchCheck
	lastReleased string
	// movedSinceRelease: a switch moved flow off lastReleased since the gate
	// last opened (even if a later switch came back to it before a release):
	// the endpoint's identity is then re-proved before flow returns to it.
	movedSinceRelease bool
}

func (a *admission) init() {
	if a.checking == nil {
		a.checking = map[string]chan struct{}{}
		a.expired = map[string]bool{}
		a.brokenProbe = map[string]bool{}
		a.gray = map[string]bool{}
		a.lastOnDemand = map[string]time.Time{}
		a.probeStart = map[string]time.Time{}
	}
}

// checkIdentities asks every endpoint concurrently and records the verdicts.
// Every check is bounded by IdentityTimeout, so one hung check delays nothing
// else beyond that.
func (p *Path) checkIdentities(ctx context.Context) {
	if p.cfg.Identity == nil {
		return
	}
	var wg sync.WaitGroup
	for _, rt := range p.order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.checkIdentity(ctx, rt, false)
		}()
	}
	wg.Wait()
}

type identityResult struct {
	id  Identity
	err error
}

// checkIdentity runs one identity check of rt, bounded by IdentityTimeout
// whatever the IdentityFunc does, records the verdict, and announces a change.
// A check of rt still running from before (it ignores its context) is not
// started again: a periodic check counts that as inconclusive; an on-demand
// one waits for it (at most IdentityTimeout) and takes its verdict.
func (p *Path) checkIdentity(ctx context.Context, rt *endpointRT, onDemand bool) {
	name := rt.ep.Name
	p.adm.mu.Lock()
	p.adm.init()
	running := p.adm.checking[name]
	var done chan struct{}
	if running == nil {
		done = make(chan struct{})
		p.adm.checking[name] = done
	}
	p.adm.mu.Unlock()
	var verdict error
	asked := time.Now()
	if running != nil {
		if onDemand {
			t := time.NewTimer(p.cfg.IdentityTimeout)
			defer t.Stop()
			select {
			case <-running:
				return // its verdict is recorded
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
		verdict = fmt.Errorf("identity check of %q could not be made: the previous check has not returned (it ignores its context): %w", name, context.DeadlineExceeded)
	} else {
		cctx, cancel := context.WithTimeout(ctx, p.cfg.IdentityTimeout)
		defer cancel()
		res := make(chan identityResult, 1)
		p.probeWG.Add(1)
		go func() {
			defer p.probeWG.Done()
			defer func() {
				p.adm.mu.Lock()
				delete(p.adm.checking, name)
				p.adm.mu.Unlock()
				close(done)
			}()
			var got Identity
			err := callHook(cctx, func(ctx context.Context) error {
				var err error
				got, err = p.cfg.Identity(ctx, rt.ep)
				return err
			})
			res <- identityResult{got, err}
		}()
		t := time.NewTimer(p.cfg.IdentityTimeout)
		defer t.Stop()
		var r identityResult
		select {
		case r = <-res:
		case <-t.C:
			r.err = fmt.Errorf("no answer within IdentityTimeout %v: %w", p.cfg.IdentityTimeout, context.DeadlineExceeded)
		case <-ctx.Done():
			return // closing, or Start's context ended: not evidence
		}
		if ctx.Err() != nil {
			return
		}
		if r.err != nil {
			verdict = fmt.Errorf("identity check of %q could not be made: %w", name, r.err)
		} else {
			verdict = p.cfg.ExpectedIdentity.Match(r.id)
		}
	}
	p.admit(rt, verdict, asked)
}

// admit records a verdict (unless a check asked later already recorded one) and announces a change of it.
func (p *Path) admit(rt *endpointRT, verdict error, asked time.Time) {
	prev, _ := p.eng.Status(rt.ep.Name)
	st, aerr := p.eng.AdmitAsOf(rt.ep.Name, verdict, asked)
	if aerr != nil {
		return
	}
	if st.Verified {
		p.adm.mu.Lock()
		p.adm.init()
		delete(p.adm.expired, rt.ep.Name)
		p.adm.mu.Unlock()
	}
	changed := prev.Verified != st.Verified || prev.IdentityMismatch != st.IdentityMismatch
	if changed || errors.Is(verdict, engine.ErrIdentityMismatch) && !prev.IdentityMismatch {
		cause := "identity verified"
		if verdict != nil {
			cause = verdict.Error()
		}
		p.events.emit(Event{Kind: EventIdentity, Endpoint: rt.ep.Name, Token: p.active.Load().gen, Err: verdict, Cause: cause})
	}
	if st.IdentityMismatch && st.Active {
		p.kick() // the active endpoint fronts another account: evaluate now
	}
}

// noteExpiries announces, once each, verifications that expired
// (Engine.VerificationMaxAge) because no later check verified the endpoint.
func (p *Path) noteExpiries() {
	if p.cfg.Identity == nil {
		return
	}
	for _, st := range p.eng.Statuses() {
		if !st.VerificationExpired {
			continue
		}
		name := st.Endpoint.Name
		p.adm.mu.Lock()
		p.adm.init()
		seen := p.adm.expired[name]
		p.adm.expired[name] = true
		p.adm.mu.Unlock()
		if seen {
			continue
		}
		cause := fmt.Sprintf("identity verification of %q expired: verified %v ago, longer than Engine.VerificationMaxAge %v, and no check since verified it; it is not a target until one does", name, time.Since(st.VerifiedAt).Round(time.Millisecond), p.cfg.Engine.VerificationMaxAge)
		if st.IdentityError != nil {
			cause += fmt.Sprintf(" (last check: %v)", st.IdentityError)
		}
		p.events.emit(Event{Kind: EventIdentity, Endpoint: name, Token: p.active.Load().gen, Err: st.IdentityError, Cause: cause})
	}
}

// admissible refuses, for Assign, a target this process found fronting
// another account or outside Engine.TargetJurisdictions.
func (p *Path) admissible(endpoint string) error {
	if err := p.eng.Admissible(endpoint); err != nil {
		return fmt.Errorf("pathdialer: Assign to %q refused: %w", endpoint, err)
	}
	return nil
}

// ReadEndpoint returns the endpoint reads go to and its token: the active
// endpoint, or, in the degraded mode of Config.DegradedReads, the healthy endpoint
// outside the allowed jurisdictions that reads may use while submissions stay
// halted.
func (p *Path) ReadEndpoint() (Endpoint, uint64) {
	if r := p.readView.Load(); r != nil {
		return r.rt.ep, r.gen
	}
	return p.Active()
}

func (p *Path) setReadView(rt *endpointRT) {
	if rt == nil {
		p.readView.Store(nil)
		return
	}
	p.readView.Store(&activeView{rt: rt, gen: p.active.Load().gen})
}
