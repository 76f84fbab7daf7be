package engine

import (
	"fmt"
	"slices"
	"time"
)

// EvaluateFailover decides whether flow must leave the active endpoint.
//
// It warrants failover when the active endpoint is Down, or has been Degraded for
// Config.MaxDegradedDuration (when set) with fresh evidence (its last result younger
// than Config.MaxHealthAge). Then it picks the eligible endpoint with the lowest
// Priority (ties: registered first). With a target and no confirmed fence (and
// !Config.BrokerFencesAtLogon) the outcome is FenceRequired and nothing changes; with a
// target otherwise, Switched. With no target and the active endpoint Down, the
// outcome is NoTargetAvailable (halt) and the active endpoint is unchanged; with no
// target and the active endpoint merely Degraded it is NoAction: a slow path that
// still answers is kept, and Notes say so. Failover is never gated by cooldown or the
// flap limiter. Otherwise the outcome is NoAction, with staleness of the active
// endpoint's health (never acted on) in Notes.
// It returns ErrNoActiveEndpoint before a primary is registered.
func (m *Manager) EvaluateFailover(fenceConfirmed bool) (Decision, error) {
	return m.EvaluateFailoverAvoiding(fenceConfirmed, nil)
}

// EvaluateFailoverAvoiding is EvaluateFailover with the endpoints named in
// avoid passed over as targets while another eligible endpoint exists: a
// caller that cannot complete a switch to one of them (for example, the
// venue's dead-man timer cannot be armed through it) asks for the next. When
// every eligible endpoint is in avoid, the target is chosen among them as
// EvaluateFailover would. A target passed over is named in Notes. Nothing
// else changes: whether failover is warranted, health, cooldown and the
// flap limiter are as with EvaluateFailover, and the Manager keeps nothing of
// avoid.
func (m *Manager) EvaluateFailoverAvoiding(fenceConfirmed bool, avoid []string) (Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.active == nil {
		return Decision{}, ErrNoActiveEndpoint
	}
	now := m.clock.Now()
	act := m.active
	d := Decision{At: now, From: act.ep.Name, Token: m.gen}
	reason := m.failoverReasonLocked(act, now)
	if reason == "" {
		d.Outcome = NoAction
		d.Notes = m.activeNotesLocked(act, now)
		return d, nil
	}
	target := m.bestTargetLocked(now, avoid)
	if target == nil {
		d.Notes = append([]string{reason}, m.ineligibleNotesLocked(now)...)
		d.Stale = m.staleCandidatesLocked(now)
		if len(d.Stale) > 0 {
			d.Notes = append(d.Notes, fmt.Sprintf("excluded only by stale or inconclusive evidence (not found DOWN): %v; probe them at once before halting", d.Stale))
		}
		if act.state != Down && !act.mismatch {
			d.Outcome = NoAction
			d.Notes = append(d.Notes, fmt.Sprintf("no eligible target: staying on DEGRADED %q, which still answers", act.ep.Name))
			return d, nil
		}
		d.Outcome = NoTargetAvailable
		d.RequiresTradingHalt = true
		if ro := m.readOnlyTargetLocked(now); ro != nil {
			d.ReadOnlyTarget = ro.ep.Name
			d.Notes = append(d.Notes, fmt.Sprintf("%q is healthy but outside the allowed jurisdictions: usable for reads only (degraded mode), never for orders", ro.ep.Name))
		}
		return d, nil
	}
	d.To = target.ep.Name
	d.Notes = []string{reason}
	if best := m.bestTargetLocked(now, nil); best != target {
		d.Notes = append(d.Notes, fmt.Sprintf("%q passed over as a target (the caller avoids it): %q instead", best.ep.Name, target.ep.Name))
	}
	if !m.cfg.BrokerFencesAtLogon && !fenceConfirmed {
		d.Outcome = FenceRequired
		d.Notes = append(d.Notes, fmt.Sprintf("fence %q before switching to %q", act.ep.Name, target.ep.Name))
		return d, nil
	}
	m.switchLocked(target, now, &d)
	return d, nil
}

// EvaluateFailback decides whether flow should return to the primary. When the
// primary is already active the outcome is NoAction. Otherwise, in this order:
// CooldownActive while less than Config.Cooldown has passed since the last switch;
// FlapSuppressed while Config.FlapLimit switches lie within Config.FlapWindow;
// PrimaryNotStable unless the primary is Healthy, fresh, and has
// Config.FailbackSuccessThreshold consecutive successes; then FenceRequired (unless
// fenceConfirmed or Config.BrokerFencesAtLogon) and finally Switched.
// It returns ErrNoActiveEndpoint before a primary is registered.
func (m *Manager) EvaluateFailback(fenceConfirmed bool) (Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.active == nil {
		return Decision{}, ErrNoActiveEndpoint
	}
	now := m.clock.Now()
	act, prim := m.active, m.primary
	d := Decision{At: now, From: act.ep.Name, Token: m.gen, Failback: true}
	if act == prim {
		d.Outcome = NoAction
		return d, nil
	}
	d.To = prim.ep.Name
	if m.switched {
		cool := m.failbackCooldownLocked(prim, now)
		if since := now.Sub(m.lastSwitch); since < cool {
			d.Outcome = CooldownActive
			d.Notes = []string{fmt.Sprintf("cooldown: %v of %v since the last switch", since, cool)}
			if b := m.bouncesLocked(prim, now); b > 0 {
				d.Notes = append(d.Notes, fmt.Sprintf("the cooldown is %v (Cooldown %v multiplied by %d per bounce, at most %v) because %q bounced %d time(s) within %v: failed over again within %v of a failback", cool, m.cfg.Cooldown, m.cfg.BounceFactor, m.cfg.MaxFailbackCooldown, prim.ep.Name, b, m.cfg.FlapWindow, m.cfg.BounceWindow))
			}
			return d, nil
		}
	}
	if n := m.switchesInWindowLocked(now); n >= m.cfg.FlapLimit {
		d.Outcome = FlapSuppressed
		d.Notes = []string{fmt.Sprintf("flap limiter tripped: %d switches within %v (limit %d); the primary %q is oscillating, a human should look at it", n, m.cfg.FlapWindow, m.cfg.FlapLimit, prim.ep.Name)}
		return d, nil
	}
	if b := m.bouncesLocked(prim, now); m.cfg.FlapBounces > 0 && b >= m.cfg.FlapBounces {
		d.Outcome = FlapSuppressed
		d.Notes = []string{fmt.Sprintf("flap limiter tripped: the primary %q bounced %d times within %v (limit %d): failed over again within %v of a failback; a human should look at it", prim.ep.Name, b, m.cfg.FlapWindow, m.cfg.FlapBounces, m.cfg.BounceWindow)}
		return d, nil
	}
	if !m.eligibleLocked(prim, now) || !m.switchVerifiedLocked(prim, now) || prim.consecSucc < m.cfg.FailbackSuccessThreshold {
		d.Outcome = PrimaryNotStable
		d.Notes = []string{fmt.Sprintf("primary %q not yet stable: %s, %d of %d consecutive successes", prim.ep.Name, m.describeLocked(prim, now), prim.consecSucc, m.cfg.FailbackSuccessThreshold)}
		if m.staleOnlyLocked(prim, now) && (prim.consecSucc >= m.cfg.FailbackSuccessThreshold || prim.state == Unknown || now.Sub(prim.lastSuccess) >= m.cfg.MaxHealthAge) {
			d.Stale = []string{prim.ep.Name}
			d.Notes = append(d.Notes, fmt.Sprintf("%q is held back only by stale evidence: probe it at once", prim.ep.Name))
		}
		return d, nil
	}
	if !m.cfg.BrokerFencesAtLogon && !fenceConfirmed {
		d.Outcome = FenceRequired
		d.Notes = []string{fmt.Sprintf("fence %q before failing back to %q", act.ep.Name, prim.ep.Name)}
		return d, nil
	}
	m.switchLocked(prim, now, &d)
	return d, nil
}

func (m *Manager) switchLocked(target *endpointState, now time.Time, d *Decision) {
	m.noteSwitchLocked(m.active, target, now)
	m.active = target
	m.gen++
	m.lastSwitch = now
	m.switched = true
	// Keep only the switch times that can still count towards the flap limiter.
	keep := m.switches[:0]
	for _, t := range m.switches {
		if now.Sub(t) < m.cfg.FlapWindow {
			keep = append(keep, t)
		}
	}
	m.switches = append(keep, now)
	d.Outcome = Switched
	d.Token = m.gen
	h := *d
	h.Notes = slices.Clone(d.Notes) // the caller owns d.Notes
	m.history = append(m.history, h)
}

func (m *Manager) switchesInWindowLocked(now time.Time) int {
	n := 0
	for _, t := range m.switches {
		if now.Sub(t) < m.cfg.FlapWindow {
			n++
		}
	}
	return n
}

// failoverReasonLocked returns why the active endpoint warrants failover, or "".
// Down always does. Degraded does after MaxDegradedDuration, but only on fresh
// evidence: a Degraded state frozen by a stalled monitor is staleness, reported by
// activeNotesLocked and not acted on.
func (m *Manager) failoverReasonLocked(act *endpointState, now time.Time) string {
	if act.mismatch {
		return fmt.Sprintf("active endpoint %q fronts another account: %v", act.ep.Name, act.identityErr)
	}
	switch act.state {
	case Down:
		if note := m.grayNoteLocked(act, now); note != "" {
			return fmt.Sprintf("active endpoint %q is %s", act.ep.Name, note)
		}
		if act.trafficFail == 0 {
			return fmt.Sprintf("active endpoint %q is DOWN after %d consecutive failures (last: %v)", act.ep.Name, act.consecFail, act.lastErr)
		}
		return fmt.Sprintf("active endpoint %q is DOWN after %d consecutive failures (probe %d, live traffic %d; last: %v)%s", act.ep.Name, max(act.consecFail, act.trafficFail), act.consecFail, act.trafficFail, act.lastErr, m.undeterminedNoteLocked(act))
	case Degraded:
		if act.consecFail >= m.cfg.FailureThreshold && !m.trafficVouchesLocked(act, now) {
			// DEGRADED only while live traffic vouched for it; it no longer
			// does (quiet for MaxHealthAge): the probe counts again.
			return fmt.Sprintf("active endpoint %q is DOWN after %d consecutive probe failures (last: %v); live traffic no longer vouches for it (last success %v ago, max %v)", act.ep.Name, act.consecFail, act.lastErr, now.Sub(act.lastTrafficSuccess), m.cfg.MaxHealthAge)
		}
		if !act.slow && m.trafficVouchesLocked(act, now) {
			return "" // a failing probe while orders succeed: the probe is suspect
		}
		if m.cfg.MaxDegradedDuration > 0 && now.Sub(act.lastResult) < m.cfg.MaxHealthAge {
			if d := now.Sub(act.degradedSince); d >= m.cfg.MaxDegradedDuration {
				return fmt.Sprintf("active endpoint %q DEGRADED for %v (limit %v): failover warranted", act.ep.Name, d, m.cfg.MaxDegradedDuration)
			}
		}
	}
	return ""
}

// bestTargetLocked returns the eligible endpoint with the lowest priority other
// than the active one, or nil; one named in avoid only when every eligible
// endpoint is.
func (m *Manager) bestTargetLocked(now time.Time, avoid []string) *endpointState {
	var avoided *endpointState
	for _, es := range m.ranked {
		if es != m.active && m.eligibleLocked(es, now) && m.switchVerifiedLocked(es, now) {
			if !slices.Contains(avoid, es.ep.Name) {
				return es
			}
			if avoided == nil {
				avoided = es
			}
		}
	}
	return avoided
}

// activeNotesLocked explains a NoAction verdict when there is something a human
// should know; nil in the steady healthy state (no allocation).
func (m *Manager) activeNotesLocked(act *endpointState, now time.Time) []string {
	var notes []string
	if act.state == Unknown {
		notes = append(notes, fmt.Sprintf("active endpoint %q has no health evidence yet (UNKNOWN)", act.ep.Name))
	} else if age := now.Sub(act.lastResult); age >= m.cfg.MaxHealthAge {
		notes = append(notes, fmt.Sprintf("health of active endpoint %q is stale: last result %v ago (max %v); the monitor may have stalled; not acting on staleness", act.ep.Name, age, m.cfg.MaxHealthAge))
	}
	if note := m.brokenProbeNoteLocked(act, now); note != "" {
		notes = append(notes, note)
	} else if act.state == Degraded {
		notes = append(notes, fmt.Sprintf("active endpoint %q is DEGRADED (%d of %d failures, last latency %v); no failover below the threshold", act.ep.Name, max(act.consecFail, act.trafficFail), m.cfg.FailureThreshold, act.lastLatency))
		if m.cfg.MaxDegradedDuration > 0 {
			notes = append(notes, fmt.Sprintf("DEGRADED for %v of the %v that warrant failover", now.Sub(act.degradedSince), m.cfg.MaxDegradedDuration))
		}
	}
	return notes
}

func (m *Manager) ineligibleNotesLocked(now time.Time) []string {
	var notes []string
	for _, es := range m.ranked {
		if es == m.active {
			continue
		}
		notes = append(notes, fmt.Sprintf("%q not eligible: %s", es.ep.Name, m.describeLocked(es, now)))
	}
	if len(notes) == 0 {
		notes = append(notes, "no other endpoint is registered")
	}
	return notes
}

func (m *Manager) describeLocked(es *endpointState, now time.Time) string {
	switch {
	case es.state == Unknown:
		return "UNKNOWN (never probed)"
	case es.gray:
		return m.grayNoteLocked(es, now)
	case es.state != Healthy:
		return fmt.Sprintf("%v (%d consecutive failures, last error: %v)%s", es.state, max(es.consecFail, es.trafficFail), es.lastErr, m.undeterminedNoteLocked(es))
	case now.Sub(es.lastSuccess) >= m.cfg.MaxHealthAge:
		return fmt.Sprintf("HEALTHY but last success %v ago (max %v)", now.Sub(es.lastSuccess), m.cfg.MaxHealthAge)
	}
	if note := m.admissionNoteLocked(es); note != "" {
		return note
	}
	return "HEALTHY and fresh"
}
