package pathdialer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// Never halt on stale evidence. When the engine finds no target (or no
// failback) only because candidates' evidence is stale — a probe that came back
// late on a loaded machine, an identity verification older than
// Engine.SwitchVerificationAge — and not because anything failed, the
// controller probes those candidates (and re-checks their identity) at once,
// under the hold (orders wait, they are not refused yet), bounded by
// ProbeTimeout and IdentityTimeout, and evaluates again. It halts only if the
// fresh evidence still leaves nowhere to go; the decision's notes and an
// EventOnDemand say which happened, including an identity re-check that
// failed or timed out (the candidate is then not a switch target, whatever an
// older verification said). A candidate whose probe is already running (a
// round's) is not probed twice: the on-demand probe waits until that probe's
// result is recorded, and probes afresh when it will not be (the probe was cut
// by Start's context).
//
// Sizing (the defaults follow it): ProbeTimeout well above the slowest healthy
// probe under load (a fresh TLS handshake on a busy 2-core host takes
// 100–300 ms; the default is 500 ms), ProbeInterval at least twice
// ProbeTimeout plus ProbeJitter (default 1 s), and Engine.MaxHealthAge several
// intervals (default 5 s) so that one late round never makes a healthy backup
// stale; the on-demand probe covers the rest. A failover then waits at most one
// ProbeTimeout (plus one IdentityTimeout when identities are checked) longer
// when a candidate's evidence was stale.

// evaluate runs the engine's failover (or failback) evaluation; when the
// decision names candidates excluded only by stale evidence, it refreshes them
// at once and evaluates again. A NoTargetAvailable on stale evidence holds the
// gate while the candidates are probed (unless trading is already halted);
// when the fresh evaluation keeps trading on the active endpoint, the gate is
// opened again.
func (c *controller) evaluate(ctx context.Context, failback, fenceConfirmed bool) (engine.Decision, error) {
	p := c.p
	eval := func() (engine.Decision, error) {
		if failback {
			return p.eng.EvaluateFailback(fenceConfirmed)
		}
		return p.eng.EvaluateFailoverAvoiding(fenceConfirmed, c.avoid) // targets whose dead-man arm failed (deadman.go)
	}
	d, err := eval()
	if err != nil {
		return d, err
	}
	stale := d.Stale
	if d.Outcome == engine.NoTargetAvailable {
		stale = append(slices.Clone(stale), p.mismatchedCandidates(d.From, stale)...)
	}
	if len(stale) == 0 {
		return d, nil
	}
	names := p.dueForRefresh(stale)
	if len(names) == 0 {
		return d, nil
	}
	held := false
	if d.Outcome == engine.NoTargetAvailable && !c.halted {
		v := p.gate.Load()
		held = v.state == GateOpen || v.downHold
		c.hold(fmt.Errorf("no target on fresh evidence yet: probing %s at once before deciding", strings.Join(names, ", ")))
	}
	start := time.Now()
	found := p.refresh(ctx, names)
	if ctx.Err() != nil {
		return d, ctx.Err()
	}
	d2, err := eval()
	if err != nil {
		return d2, err
	}
	note := fmt.Sprintf("on-demand: %s excluded only by stale or inconclusive evidence (or an old identity mismatch), so probed and checked at once (%v): %s; now %s",
		strings.Join(names, ", "), time.Since(start).Round(time.Millisecond), strings.Join(found, "; "), d2.Outcome)
	d2.Notes = append(d2.Notes, note)
	p.events.emit(Event{Kind: EventOnDemand, From: d2.From, To: d2.To, Token: d2.Token, Duration: time.Since(start), Cause: note})
	if held && d2.Outcome == engine.NoAction {
		// The active endpoint keeps the flow after all (it was only held,
		// never fenced): open the gate again.
		c.release(ctx)
	}
	return d2, nil
}

// mismatchedCandidates names the endpoints, other than active and those
// already in stale, whose probe answers but whose last identity check found
// another account: before a halt their identity is checked again at once
// (a mismatch is a verdict of the last periodic check, which may be a whole
// IdentityInterval old; the account behind an endpoint can be put right).
func (p *Path) mismatchedCandidates(active string, stale []string) []string {
	if p.cfg.Identity == nil {
		return nil
	}
	var out []string
	for _, st := range p.eng.Statuses() {
		n := st.Endpoint.Name
		if n == active || slices.Contains(stale, n) || !st.IdentityMismatch || st.State != engine.Healthy {
			continue
		}
		out = append(out, n)
	}
	return out
}

// dueForRefresh keeps the names not refreshed within the last ProbeInterval,
// so a halt that lasts does not probe on demand more often than the monitor.
func (p *Path) dueForRefresh(names []string) []string {
	now := time.Now()
	p.adm.mu.Lock()
	defer p.adm.mu.Unlock()
	p.adm.init()
	var out []string
	for _, n := range names {
		if last, ok := p.adm.lastOnDemand[n]; ok && now.Sub(last) < p.cfg.ProbeInterval {
			continue
		}
		p.adm.lastOnDemand[n] = now
		out = append(out, n)
	}
	return out
}

// refresh probes the named endpoints at once (and re-checks the identity of
// those whose verification is not fresh enough for a switch), concurrently,
// and says what it found for each.
func (p *Path) refresh(ctx context.Context, names []string) []string {
	found := make([]string, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		rt, ok := p.eps[name]
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var inner sync.WaitGroup
			inner.Add(1)
			go func() {
				defer inner.Done()
				p.probeOne(ctx, rt, true)
			}()
			recheck := p.needsIdentityCheck(name)
			since := time.Now()
			if recheck {
				inner.Add(1)
				go func() {
					defer inner.Done()
					p.checkIdentity(ctx, rt, true)
				}()
			}
			inner.Wait()
			found[i] = p.describeFresh(name, recheck, since)
		}()
	}
	wg.Wait()
	return found
}

// needsIdentityCheck: identities are checked and name's verification is
// missing or older than a switch accepts.
func (p *Path) needsIdentityCheck(name string) bool {
	if p.cfg.Identity == nil {
		return false
	}
	st, ok := p.eng.Status(name)
	if !ok {
		return false
	}
	if !st.Verified {
		return true
	}
	age := p.cfg.Engine.SwitchVerificationAge
	return age > 0 && time.Since(st.VerifiedAt) >= age
}

// describeFresh says what the engine knows about name after a refresh that
// began at since; recheck says whether that refresh re-checked its identity.
// A re-check that did not verify it (it failed, timed out, or found another
// account) is named as such: an older verification no longer vouches for a
// switch to it.
func (p *Path) describeFresh(name string, recheck bool, since time.Time) string {
	st, ok := p.eng.Status(name)
	if !ok {
		return name + ": unknown"
	}
	s := fmt.Sprintf("%q %v", name, st.State)
	if st.LastProbeError != nil {
		s += fmt.Sprintf(" (%v)", st.LastProbeError)
	}
	reverified := true
	if p.cfg.Identity != nil {
		switch {
		case st.IdentityMismatch:
			s += fmt.Sprintf(", identity mismatch: %v", st.IdentityError)
		case recheck && (!st.Verified || st.VerifiedAt.Before(since)):
			reverified = false
			if st.IdentityError != nil {
				s += fmt.Sprintf(", identity re-check failed: %v", st.IdentityError)
			} else {
				s += ", identity re-check gave no answer"
			}
			if st.Verified {
				s += fmt.Sprintf(" (last verified %v ago; a switch needs a verification younger than %v)", time.Since(st.VerifiedAt).Round(time.Millisecond), p.cfg.Engine.SwitchVerificationAge)
			}
		case st.Verified:
			s += ", identity verified"
		case st.IdentityError != nil:
			s += fmt.Sprintf(", identity not verified: %v", st.IdentityError)
		default:
			s += ", identity not verified"
		}
	}
	switch {
	case st.Eligible && !reverified:
		s += ", not a switch target"
	case st.Eligible:
		s += ", eligible"
	default:
		s += ", not eligible"
	}
	return s
}
