package engine

import (
	"fmt"
	"strings"
)

// Assign records a switch decided elsewhere — by a coordinator that runs its own
// Manager on a quorum's view and hands out tokens as fencing tokens — and
// makes name the active endpoint under token. It does not check health: the
// coordinator already did. It refuses an unknown endpoint (ErrUnknownEndpoint),
// a token that does not move forward (ErrStaleToken), and an endpoint
// this Manager knows cannot carry the account's orders: found fronting another
// account (ErrIdentityMismatch) or outside Config.TargetJurisdictions
// (ErrJurisdiction). A refused Assign changes nothing. Assigning the
// active endpoint again with a higher token only advances the token
// (no switch is recorded). A recorded switch counts towards cooldown and the flap
// limiter like any other and appears in History with Outcome Switched.
func (m *Manager) Assign(name string, token uint64, note string) (Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.byName[name]
	if !ok {
		return Decision{}, fmt.Errorf("%w: %q", ErrUnknownEndpoint, name)
	}
	if m.active == nil {
		return Decision{}, ErrNoActiveEndpoint
	}
	if token <= m.gen {
		return Decision{}, fmt.Errorf("%w: token %d is not after the current %d", ErrStaleToken, token, m.gen)
	}
	if err := m.refusalLocked(es); err != nil {
		return Decision{}, fmt.Errorf("engine: Assign refused: %w", err)
	}
	now := m.clock.Now()
	d := Decision{At: now, From: m.active.ep.Name, To: name}
	if strings.TrimSpace(note) != "" {
		d.Notes = []string{note}
	}
	if es == m.active {
		m.gen = token
		d.Outcome = NoAction
		d.To = ""
		d.Token = token
		return d, nil
	}
	m.switchLocked(es, now, &d)
	m.gen = token
	d.Token = token
	m.history[len(m.history)-1].Token = token
	return d, nil
}
