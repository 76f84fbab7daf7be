package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Endpoint admission: an endpoint is a target only if it fronts the expected
// account (identity) and lies where the account may fail over to (jurisdiction).
// The engine learns both through this explicit API; it does no I/O.

// ErrIdentityMismatch marks an identity check whose answer proves the endpoint
// fronts another account, entity or entitlement set. Wrap it in the error passed
// to Admit.
var ErrIdentityMismatch = errors.New("engine: endpoint identity mismatch")

// ErrJurisdiction marks an endpoint refused because it lies outside
// Config.TargetJurisdictions (Assign), and a jurisdiction written so that it
// could never match (Register: leading or trailing white space).
var ErrJurisdiction = errors.New("engine: jurisdiction rule")

// ErrNoAllowedBackup marks a jurisdiction rule (Config.TargetJurisdictions)
// that no backup satisfies: failover could never happen. Manager.Validate
// returns it (wrapped with ErrInvalidConfig) only when every other check
// passed, so a caller for which such a rule is meaningful (one that keeps
// reads on a backup outside the rule while orders halt, a degraded read-only
// mode) may accept exactly this error.
var ErrNoAllowedBackup = errors.New("no backup lies in the allowed jurisdictions")

// checkJurisdiction refuses a jurisdiction that could never compare equal to a
// valid rule entry: one with leading or trailing white space. Blank means none.
func checkJurisdiction(j string) error {
	if strings.TrimSpace(j) != j {
		return fmt.Errorf("%w: jurisdiction %q has leading or trailing white space; jurisdictions are compared exactly as written", ErrJurisdiction, j)
	}
	return nil
}

// Admit records the result of an identity check of the named endpoint (run by
// the caller, e.g. an authenticated account query compared with the expected
// account):
//
//   - nil: verified, it fronts the expected account;
//   - an error wrapping ErrIdentityMismatch: it fronts something else. It is never
//     a target, whatever its health, until a later check verifies it; if it is
//     the active endpoint, failover is warranted;
//   - any other error: the check could not be made; the previous verdict
//     stands (the error is kept in Status.IdentityError).
//
// With Config.RequireAdmission, an endpoint never verified is not a target.
func (m *Manager) Admit(name string, result error) (Status, error) {
	return m.AdmitAsOf(name, result, time.Time{})
}

// AdmitAsOf is Admit for a check that was asked at asked (a Clock reading; the
// zero time means now, as Admit). A verdict asked before the one already recorded is
// ignored and the status is returned unchanged: a slow check that began before
// another one found a mismatch cannot overwrite that newer finding (nor can one
// asked at the same Clock reading as a recorded mismatch).
func (m *Manager) AdmitAsOf(name string, result error, asked time.Time) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.byName[name]
	if !ok {
		return Status{}, fmt.Errorf("%w: %q", ErrUnknownEndpoint, name)
	}
	now := m.clock.Now()
	inFlight := !asked.IsZero() // a check that was asked earlier and answers now
	if !inFlight {
		asked = now
	}
	// Asked before the recorded verdict: older news. A check in flight that
	// was asked at the same instant as a recorded mismatch: the mismatch
	// stands (the safe side of a tie the clock cannot order).
	if asked.Before(es.verdictAsked) || inFlight && asked.Equal(es.verdictAsked) && es.mismatch && !errors.Is(result, ErrIdentityMismatch) {
		return m.statusLocked(es), nil
	}
	es.verdictAsked = asked
	es.identityErr = result
	switch {
	case result == nil:
		es.verified, es.mismatch = true, false
		es.verifiedAt = now
	case errors.Is(result, ErrIdentityMismatch):
		es.verified, es.mismatch = false, true
	}
	return m.statusLocked(es), nil
}

// validateJurisdictionsLocked: every rule entry names a jurisdiction some
// endpoint lies in, every backup has a jurisdiction, and one backup satisfies
// the rule.
func (m *Manager) validateJurisdictionsLocked() error {
	rule := m.cfg.TargetJurisdictions
	if len(rule) == 0 {
		return nil
	}
	for _, j := range rule {
		if !slices.ContainsFunc(m.eps, func(es *endpointState) bool { return es.jurisdiction == j }) {
			return fmt.Errorf("%w: TargetJurisdictions names %q, which no registered endpoint lies in (jurisdictions are compared exactly as written)", ErrInvalidConfig, j)
		}
	}
	ok := false
	for _, es := range m.eps {
		if es == m.primary {
			continue
		}
		if es.jurisdiction == "" {
			return fmt.Errorf("%w: backup %q has no jurisdiction, but TargetJurisdictions %v is set: it could never be a target", ErrInvalidConfig, es.ep.Name, rule)
		}
		ok = ok || slices.Contains(rule, es.jurisdiction)
	}
	if !ok {
		return fmt.Errorf("%w: %w %v: failover could never happen", ErrInvalidConfig, ErrNoAllowedBackup, rule)
	}
	return nil
}

// verifiedLocked: verified, and not longer ago than VerificationMaxAge.
func (m *Manager) verifiedLocked(es *endpointState, now time.Time) bool {
	if !es.verified {
		return false
	}
	return m.cfg.VerificationMaxAge <= 0 || now.Sub(es.verifiedAt) < m.cfg.VerificationMaxAge
}

// admittedLocked: not proven to front another account, and verified (within
// VerificationMaxAge) when verification is required.
func (m *Manager) admittedLocked(es *endpointState) bool {
	if es.mismatch {
		return false
	}
	return !m.cfg.RequireAdmission || m.verifiedLocked(es, m.clock.Now())
}

// switchVerifiedLocked: admission proved recently enough to switch to it.
func (m *Manager) switchVerifiedLocked(es *endpointState, now time.Time) bool {
	if !m.cfg.RequireAdmission || m.cfg.SwitchVerificationAge <= 0 {
		return true
	}
	return m.verifiedLocked(es, now) && now.Sub(es.verifiedAt) < m.cfg.SwitchVerificationAge
}

// refusalLocked says why name may not carry orders (for Assign): it fronts
// another account, or lies outside the allowed jurisdictions. nil otherwise.
func (m *Manager) refusalLocked(es *endpointState) error {
	if es.mismatch {
		return fmt.Errorf("%w: %q was found fronting another account: %v", ErrIdentityMismatch, es.ep.Name, es.identityErr)
	}
	if !m.jurisdictionOKLocked(es) {
		j := es.jurisdiction
		if j == "" {
			j = "(none)"
		}
		return fmt.Errorf("%w: %q lies in %s, outside the allowed %v", ErrJurisdiction, es.ep.Name, j, m.cfg.TargetJurisdictions)
	}
	return nil
}

// Admissible returns nil when name may carry orders as far as admission goes,
// or an error wrapping ErrIdentityMismatch (the last conclusive identity check
// found another account) or ErrJurisdiction (outside Config.TargetJurisdictions),
// or ErrUnknownEndpoint. It says nothing about health.
func (m *Manager) Admissible(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.byName[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownEndpoint, name)
	}
	return m.refusalLocked(es)
}

// jurisdictionOKLocked: the primary always; others when no rule is set or their
// jurisdiction is allowed.
func (m *Manager) jurisdictionOKLocked(es *endpointState) bool {
	if es == m.primary || len(m.cfg.TargetJurisdictions) == 0 {
		return true
	}
	return slices.Contains(m.cfg.TargetJurisdictions, es.jurisdiction)
}

func (m *Manager) healthyFreshLocked(es *endpointState, now time.Time) bool {
	return es.state == Healthy && now.Sub(es.lastSuccess) < m.cfg.MaxHealthAge
}

// readOnlyTargetLocked returns the best endpoint excluded only by the
// jurisdiction rule (healthy, fresh, admitted), for a degraded read-only mode.
func (m *Manager) readOnlyTargetLocked(now time.Time) *endpointState {
	for _, es := range m.ranked {
		if es != m.active && m.healthyFreshLocked(es, now) && m.admittedLocked(es) && !m.jurisdictionOKLocked(es) {
			return es
		}
	}
	return nil
}

// admissionNoteLocked explains why a healthy, fresh endpoint is still not a
// target ("" when it is).
func (m *Manager) admissionNoteLocked(es *endpointState) string {
	switch {
	case es.mismatch:
		return fmt.Sprintf("HEALTHY but identity mismatch: %v", es.identityErr)
	case m.cfg.RequireAdmission && !m.verifiedLocked(es, m.clock.Now()):
		what := "never verified"
		if es.verified {
			what = fmt.Sprintf("verified %v ago, longer than VerificationMaxAge %v", m.clock.Now().Sub(es.verifiedAt), m.cfg.VerificationMaxAge)
		}
		if es.identityErr != nil {
			return fmt.Sprintf("HEALTHY but identity %s (last check: %v)", what, es.identityErr)
		}
		return "HEALTHY but identity " + what
	case !m.jurisdictionOKLocked(es):
		j := es.jurisdiction
		if j == "" {
			j = "(none)"
		}
		return fmt.Sprintf("HEALTHY but jurisdiction %s is outside the allowed %v", j, m.cfg.TargetJurisdictions)
	case !m.switchVerifiedLocked(es, m.clock.Now()):
		return fmt.Sprintf("HEALTHY but identity verified %v ago: a switch needs a verification younger than %v (re-check it)", m.clock.Now().Sub(es.verifiedAt), m.cfg.SwitchVerificationAge)
	}
	return ""
}
