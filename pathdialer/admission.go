package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

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
// answered; the previous verdict stands.
type IdentityFunc func(ctx context.Context, ep Endpoint) (Identity, error)

// checkIdentities asks every endpoint concurrently and records the verdicts.
func (p *Path) checkIdentities(ctx context.Context) {
	if p.cfg.Identity == nil {
		return
	}
	var wg sync.WaitGroup
	for _, rt := range p.order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, p.cfg.IdentityTimeout)
			defer cancel()
			var got Identity
			err := callHook(cctx, func(ctx context.Context) error {
				var err error
				got, err = p.cfg.Identity(ctx, rt.ep)
				return err
			})
			if ctx.Err() != nil {
				return
			}
			var verdict error
			if err != nil {
				verdict = fmt.Errorf("identity check of %q could not be made: %w", rt.ep.Name, err)
			} else {
				verdict = p.cfg.ExpectedIdentity.Match(got)
			}
			prev, _ := p.eng.Status(rt.ep.Name)
			st, aerr := p.eng.Admit(rt.ep.Name, verdict)
			if aerr != nil {
				return
			}
			changed := prev.Verified != st.Verified || prev.IdentityMismatch != st.IdentityMismatch
			if changed || errors.Is(verdict, engine.ErrIdentityMismatch) && !prev.IdentityMismatch {
				cause := "identity verified"
				if verdict != nil {
					cause = verdict.Error()
				}
				p.events.emit(Event{Kind: EventIdentity, Endpoint: rt.ep.Name, Generation: p.active.Load().gen, Err: verdict, Cause: cause})
			}
			if st.IdentityMismatch && st.Active {
				p.kick() // the active endpoint fronts another account: evaluate now
			}
		}()
	}
	wg.Wait()
}

// ReadEndpoint returns the endpoint reads go to and its generation: the active
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
