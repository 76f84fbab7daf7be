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
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.byName[name]
	if !ok {
		return Status{}, fmt.Errorf("%w: %q", ErrUnknownEndpoint, name)
	}
	now := m.clock.Now()
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

// SetJurisdiction records the jurisdiction an endpoint lies in (for example "EU",
// "UK", "US"). With Config.TargetJurisdictions set, a failover target must lie in
// one of them; the primary is always a valid failback target.
func (m *Manager) SetJurisdiction(name, jurisdiction string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.byName[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownEndpoint, name)
	}
	es.jurisdiction = strings.TrimSpace(jurisdiction)
	return nil
}

// admittedLocked: not proven to front another account, and verified when
// verification is required.
func (m *Manager) admittedLocked(es *endpointState) bool {
	if es.mismatch {
		return false
	}
	return es.verified || !m.cfg.RequireAdmission
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
	case m.cfg.RequireAdmission && !es.verified:
		if es.identityErr != nil {
			return fmt.Sprintf("HEALTHY but identity never verified (last check: %v)", es.identityErr)
		}
		return "HEALTHY but identity never verified"
	case !m.jurisdictionOKLocked(es):
		j := es.jurisdiction
		if j == "" {
			j = "(none)"
		}
		return fmt.Sprintf("HEALTHY but jurisdiction %s is outside the allowed %v", j, m.cfg.TargetJurisdictions)
	}
	return ""
}
