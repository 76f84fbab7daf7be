package engine

import (
	"fmt"
	"time"
)

// Evidence. The engine keeps two kinds of health evidence apart, so that one
// never masks the other:
//
//   - probe results (Probe, Observe): a synthetic check the caller chose;
//   - live traffic (ObserveTraffic) and trade-path checks (ObserveTradePath):
//     what the orders themselves met.
//
// Each kind counts its own consecutive failures; an endpoint is DOWN when
// either count reaches Config.FailureThreshold, DEGRADED while either is above
// zero (or the last success was slower than Config.DegradedLatency), HEALTHY
// otherwise. A live-traffic success never clears probe failures, and a probe
// success clears live-traffic failures only when the probe has shown it can
// see them — a probe sent since the first of them failed too (an ordinary
// outage) — or when they are stale: below the threshold and older than
// Config.MaxHealthAge (an endpoint that carries no traffic any more would
// otherwise stay DEGRADED for ever).
//
// When a probe counts as "sent since" a failure: the engine takes a probe as
// sent at the Clock reading of its record minus its latency (Probe measures
// the latency; Observe is given it). A probe in flight when the orders began
// to fail may have been answered before the failure began: it decides
// nothing about them, passing or failing.
//
// What moves orders. Live traffic is the stronger evidence, in both
// directions:
//
//   - Live traffic failing (FailureThreshold failures in a row) takes the
//     endpoint DOWN whatever its probe says; the active endpoint then fails
//     over at once.
//   - A probe failing while live traffic on the endpoint succeeds is a broken
//     probe (Status.BrokenProbe): as long as live traffic has succeeded since
//     the probe began failing, no live traffic has failed since that success,
//     and that success is younger than Config.MaxHealthAge, the endpoint is
//     DEGRADED, not DOWN, and flow stays on it. One failed order ends this at
//     once (DOWN, failover), and so does live traffic reported hung
//     (TrafficHung) with no success since; traffic that goes quiet for
//     MaxHealthAge ends it at the next probe failure (the probe counts again).
//
// Gray or not. A gray failure is an endpoint whose probe passed after its
// live traffic began to fail: the probe cannot see what breaks the orders.
// When the orders notice a failure first (the usual order of events while
// orders flow: FailureThreshold orders fail within milliseconds, the next
// probe is up to a probe interval away), its cause is undetermined until a
// probe sent since the first of those failures answers (Status.GrayUndetermined):
// the endpoint is DOWN meanwhile (failover is not delayed), and that probe
// decides. It fails: the probe sees the failure, an ordinary outage, which
// the probe's next success ends (a region that died and healed is a failover
// target again at once). It passes: a gray failure. A probe sent since the
// first failure that passed before FailureThreshold of them were counted
// makes the endpoint gray the moment they are, unless a later one failed.
//
// What ends a gray failure. Once it is established, probe results —
// successes, and failures too — neither end it nor turn it into an ordinary
// outage that probe successes could end. It stays DOWN until
// trade-path evidence says it works (ObserveTradePath or ObserveTraffic with a
// nil result), or, without it, until Config.GrayFailbackWait times the number
// of gray failures of that endpoint (at most Config.MaxGrayFailbackWait) has
// passed, no trade-path check has failed for MaxHealthAge, and a probe
// succeeds. Until live traffic succeeds on it again, an endpoint that was gray
// is Status.WatchTradePath, and so is one that live traffic took DOWN in an
// outage that a probe success ended (a gray failure whose probe failed for a
// while, a partition over a broken trade path, looks the same to the probe):
// the caller keeps checking its trade path, also
// while it is considered for failback, and one failure makes it DEGRADED
// again (not a target, no failback), FailureThreshold of them a gray failure
// again.
//
// Which evidence ends it. A lookup (ObserveLookup: an order-status query of
// an order ID never sent) reads the order path; it does not submit. When the
// broker answered an order with a server error in the failures that took the
// endpoint out (ObserveSubmissionFailed), a broker that answers reads while
// it refuses orders passes the lookup and fails the orders, so the lookup's
// success ends nothing: the gray failure (or the
// failures whose cause is still undetermined) stands until a check that
// exercises submission passes (ObserveTradePath), an order succeeds there,
// or the gray wait ends — or, when no other endpoint is eligible (trading
// would halt), the lookup passes after the endpoint's failback cooldown
// without a failure: a last resort, tried at most once a cooldown, since
// only an order can tell. Failures of lookups alone (reconcile reads
// answered 503) end on a lookup's success, as on any trade-path evidence.

type source int

const (
	srcProbe source = iota
	srcTraffic
	srcTradePath
	srcLookup // a trade-path check that only reads (ObserveLookup)
)

// ObserveTraffic records the result of live traffic (an order, an
// authenticated read) on the named endpoint: nil is a success with the given
// latency, anything else a failure. It is counted apart from probe results
// (see Status.ProbeFailures and Status.TrafficFailures). The caller filters
// out its own cancellations. An unknown name returns ErrUnknownEndpoint.
func (m *Manager) ObserveTraffic(name string, result error, latency time.Duration) (Status, error) {
	return m.observe(name, result, latency, srcTraffic)
}

// ObserveTradePath records the result of a trade-path check (for example an
// authenticated order-status query, or a test order the broker rejects in a
// known way): evidence about the path orders take, stronger than a probe. A
// success ends a gray failure at once; a failure counts as a live-traffic
// failure. An unknown name returns ErrUnknownEndpoint.
func (m *Manager) ObserveTradePath(name string, result error) (Status, error) {
	return m.observe(name, result, 0, srcTradePath)
}

// ObserveLookup records the result of a trade-path check that reads the
// order path without submitting (for example an order-status query of an
// order ID never sent). A failure counts as ObserveTradePath's. A success
// counts as ObserveTradePath's too, except while the endpoint's live-traffic
// failures include an order the broker answered with a server error
// (ObserveSubmissionFailed, Status.SubmissionFailed): then it is no evidence
// about what failed and changes nothing — unless no other endpoint is
// eligible and the endpoint has had no failure for its failback cooldown
// (Status.FailbackCooldown): then, rather than halt for the whole gray
// wait, it counts, and the next order there tells. An unknown name returns
// ErrUnknownEndpoint.
func (m *Manager) ObserveLookup(name string, result error) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.byName[name]
	if !ok {
		return Status{}, fmt.Errorf("%w: %q", ErrUnknownEndpoint, name)
	}
	if now := m.clock.Now(); result != nil || !m.submissionFailedLocked(es, now) || m.lastResortLocked(es, now) {
		m.recordLocked(es, result, 0, srcLookup)
	}
	return m.statusLocked(es), nil
}

// lastResortLocked: a lookup passing on es, whose standing failures include
// a submission the broker answered with a server error, counts after all:
// no other endpoint is eligible and the active one (when another) is DOWN
// (without es, trading halts), and es has had
// no failure for its failback cooldown (failbackCooldownLocked). Only an
// order can tell whether the broker takes orders there again; a halt is
// right only when no path is usable, so es is tried, at most once a
// cooldown, rather than held out for the whole gray wait.
func (m *Manager) lastResortLocked(es *endpointState, now time.Time) bool {
	for _, o := range m.ranked {
		if o != es && (m.eligibleLocked(o, now) || o == m.active && o.state != Down) {
			return false // a target, or the active endpoint still carrying flow
		}
	}
	return now.Sub(es.lastTrafficFailure) >= m.failbackCooldownLocked(es, now)
}

// ObserveSubmissionFailed records that the broker answered an order
// submitted on the named endpoint with a server error (a 5xx: its order
// service failed, whatever its reads and probe answer). Report the failure
// itself first (ObserveTraffic): it is ignored when the endpoint has no
// live-traffic failure standing. From then on, until an order succeeds there
// (ObserveTraffic) or a check of submission does (ObserveTradePath), and at
// most for the gray wait (Config.GrayFailbackWait per gray failure), a
// lookup passing (ObserveLookup) ends none of the endpoint's failures except
// as the last resort (Status.SubmissionFailed). An unknown name returns
// ErrUnknownEndpoint.
func (m *Manager) ObserveSubmissionFailed(name string) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.byName[name]
	if !ok {
		return Status{}, fmt.Errorf("%w: %q", ErrUnknownEndpoint, name)
	}
	if es.trafficFail > 0 {
		es.submissionFailedAt = m.clock.Now()
	}
	return m.statusLocked(es), nil
}

// submissionFailedLocked: es has live-traffic failures standing, and the
// broker answered an order there with a server error within the gray wait,
// none having succeeded since (Status.SubmissionFailed).
func (m *Manager) submissionFailedLocked(es *endpointState, now time.Time) bool {
	if es.trafficFail == 0 || es.submissionFailedAt.IsZero() {
		return false
	}
	w := m.cfg.GrayFailbackWait * time.Duration(max(es.grayCount, 1))
	if w > m.cfg.MaxGrayFailbackWait || w < 0 {
		w = m.cfg.MaxGrayFailbackWait
	}
	return now.Sub(es.submissionFailedAt) < w
}

// TrafficHung records that live traffic on the named endpoint is hung: an
// order has gone unanswered far longer than the endpoint answers, and none has
// succeeded since it was sent. It is no failure (the order may still be
// answered), but until live traffic succeeds on the endpoint again it no
// longer vouches for a failing probe (Status.BrokenProbe): the probe's
// failures count, and take the endpoint DOWN at FailureThreshold. An unknown
// name returns ErrUnknownEndpoint.
func (m *Manager) TrafficHung(name string) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.byName[name]
	if !ok {
		return Status{}, fmt.Errorf("%w: %q", ErrUnknownEndpoint, name)
	}
	m.seq++
	es.trafficHungSeq = m.seq
	m.stateLocked(es, es.state, m.clock.Now())
	return m.statusLocked(es), nil
}

func (m *Manager) observe(name string, result error, latency time.Duration, src source) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.byName[name]
	if !ok {
		return Status{}, fmt.Errorf("%w: %q", ErrUnknownEndpoint, name)
	}
	m.recordLocked(es, result, latency, src)
	return m.statusLocked(es), nil
}

// recordLocked applies one result (a probe's, live traffic's or a trade-path
// check's) to the endpoint's evidence, then derives its state from it.
func (m *Manager) recordLocked(es *endpointState, err error, latency time.Duration, src source) {
	now := m.clock.Now()
	prev := es.state
	thr := m.cfg.FailureThreshold
	m.seq++
	es.lastResult = now
	es.lastLatency = latency
	if src == srcProbe {
		es.lastProbeSent = now.Add(-latency)
	}
	if err != nil {
		m.failureLocked(es, err, src, now)
	} else {
		m.successLocked(es, latency, src, now)
	}
	if src != srcProbe && err != nil && !es.gray && es.trafficFail >= thr && es.consecFail == 0 && es.runProbePassed && !es.runProbeFailed && now.Sub(es.lastProbeSuccess) < m.cfg.MaxHealthAge {
		// A probe sent since the first of these failures passed, and
		// none sent since failed: the probe cannot see this failure.
		m.beginGrayLocked(es, now)
	}
	m.stateLocked(es, prev, now)
}

// failureLocked records a failed result: a probe's, or live traffic's (an
// order, a trade-path check).
func (m *Manager) failureLocked(es *endpointState, err error, src source, now time.Time) {
	es.lastErr = err
	es.consecSucc = 0
	if src == srcProbe {
		es.probeResults++
		if es.consecFail == 0 {
			es.probeFailSeq = m.seq
		}
		es.consecFail++
		es.lastProbeFailure = now
		if m.probeSinceRunLocked(es) {
			es.runProbeFailed = true // the probe sees the orders' failure
		}
		// A gray failure stands whatever the probe says: the probe could
		// not see it when it began, so its failures (a late probe on a
		// loaded host, the region briefly dark) are no evidence about the
		// trade path, and its successes after them none either.
		return
	}
	if es.trafficFail == 0 {
		// The first failure of a run: no probe has been sent since.
		es.trafficRunStart = now
		es.runProbePassed, es.runProbeFailed = false, false
	}
	es.trafficFail++
	es.lastTrafficResult = now
	es.lastTrafficFailure = now
	es.trafficFailSeq = m.seq
}

// successLocked records a successful result: a probe's, or live traffic's (an
// order, a trade-path check). A success slower than DegradedLatency is no
// progress towards failback stability.
func (m *Manager) successLocked(es *endpointState, latency time.Duration, src source, now time.Time) {
	es.lastSuccess = now
	es.slow = m.cfg.DegradedLatency > 0 && latency > m.cfg.DegradedLatency
	if src == srcProbe {
		m.probeSuccessLocked(es, now)
	} else {
		es.trafficFail = 0
		es.lastTrafficResult = now
		es.lastTrafficSuccess = now
		es.trafficOKSeq = m.seq
		es.gray = false // the trade path works
		if src == srcTraffic {
			es.tradePathDue = false // it carries orders again
		}
		if src != srcLookup {
			es.submissionFailedAt = time.Time{} // an order, or a check of submission, went through
		}
		if es.slow {
			es.consecSucc = 0
		} else {
			es.consecSucc++
		}
	}
	if es.consecFail == 0 && es.trafficFail == 0 {
		es.lastErr = nil
	}
}

// probeSuccessLocked records a probe's success: it ends the probe's failures,
// and, when the probe can see them, the live-traffic failures and a gray
// failure.
func (m *Manager) probeSuccessLocked(es *endpointState, now time.Time) {
	thr := m.cfg.FailureThreshold
	es.probeResults++
	es.consecFail = 0
	es.probeOK = true
	es.lastProbeSuccess = now
	if m.probeSinceRunLocked(es) {
		es.runProbePassed = true
	}
	switch {
	case es.trafficFail > 0 && !es.gray && es.runProbeFailed:
		// A probe sent since the orders began to fail failed too: it
		// sees this failure (an ordinary outage), so its success is
		// evidence of recovery.
		if es.trafficFail >= thr {
			// Live traffic took it DOWN: a gray failure that the
			// probe's failures hid (a partition while the trade path
			// was broken) would look the same, so its trade path is
			// watched until live traffic succeeds on it.
			es.tradePathDue = true
		}
		es.trafficFail = 0
	case es.trafficFail > 0 && es.trafficFail < thr && now.Sub(es.lastTrafficResult) >= m.cfg.MaxHealthAge:
		es.trafficFail = 0 // stale live-traffic failures below the threshold
	}
	if es.trafficFail >= thr && !es.gray && es.runProbePassed {
		// DOWN on live traffic, its cause undetermined until now: this
		// probe (or an earlier one), sent since the first of those
		// failures, passes, and none sent since failed. The probe
		// cannot see what breaks the orders, so it cannot vouch for
		// recovery: a gray failure. A probe sent before the first
		// failure (in flight when the orders failed) decides nothing.
		m.beginGrayLocked(es, now)
	}
	if es.gray && !now.Before(m.grayUntilLocked(es)) && now.Sub(es.lastTrafficFailure) >= m.cfg.MaxHealthAge {
		// Waited long enough without trade-path evidence, and no
		// trade-path check (or order) failed recently: a failing
		// trade-path check keeps the endpoint out whatever the wait.
		es.gray = false
		es.trafficFail = 0
	}
	if es.slow {
		// Answering, but too slowly to trade on: Degraded evidence, and
		// no progress towards failback stability.
		es.consecSucc = 0
	} else {
		es.consecSucc++
	}
}

// stateLocked derives the endpoint's state from its evidence (prev is the
// state before the result) and when it became Degraded.
func (m *Manager) stateLocked(es *endpointState, prev HealthState, now time.Time) {
	thr := m.cfg.FailureThreshold
	fails := max(es.consecFail, es.trafficFail)
	switch {
	case es.gray || fails >= thr && !m.trafficVouchesLocked(es, now):
		es.state = Down
	case fails > 0 || es.slow:
		es.state = Degraded
	default:
		es.state = Healthy
	}
	switch {
	case es.state != Degraded:
		es.degradedSince = time.Time{}
	case prev != Degraded:
		es.degradedSince = now
	}
}

// probeSinceRunLocked: live traffic on es is failing, and the probe being
// recorded was sent (recorded at the Clock's reading minus its latency) no
// earlier than the first failure of that run. A probe in flight when the
// orders began to fail may have been answered before the failure began, so
// it says nothing about whether the probe can see it.
func (m *Manager) probeSinceRunLocked(es *endpointState) bool {
	return es.trafficFail > 0 && !es.lastProbeSent.Before(es.trafficRunStart)
}

// grayUndeterminedLocked: DOWN on live traffic, not a gray failure, and no
// probe sent since the first of those failures has failed: the next probe
// sent since then decides whether the probe can see this failure.
func (m *Manager) grayUndeterminedLocked(es *endpointState) bool {
	return !es.gray && es.trafficFail >= m.cfg.FailureThreshold && !es.runProbeFailed
}

func (m *Manager) beginGrayLocked(es *endpointState, now time.Time) {
	es.gray = true
	es.graySince = now
	es.grayCount++
	es.tradePathDue = true
}

// trafficVouchesLocked: the probe of es is failing, but live traffic on es has
// succeeded since the probe began failing, no live traffic (or trade-path
// check) has failed or been reported hung (TrafficHung) since that success,
// and that success is younger than MaxHealthAge. The probe, not the endpoint, is then the suspect: its failures
// alone do not take es DOWN.
func (m *Manager) trafficVouchesLocked(es *endpointState, now time.Time) bool {
	return es.consecFail > 0 && es.trafficFail == 0 && !es.gray &&
		es.trafficOKSeq > es.probeFailSeq && es.trafficOKSeq > es.trafficFailSeq && es.trafficOKSeq > es.trafficHungSeq &&
		now.Sub(es.lastTrafficSuccess) < m.cfg.MaxHealthAge
}

// grayUntilLocked: when a gray failure ends without trade-path evidence.
func (m *Manager) grayUntilLocked(es *endpointState) time.Time {
	w := m.cfg.GrayFailbackWait * time.Duration(max(es.grayCount, 1))
	if w > m.cfg.MaxGrayFailbackWait || w < 0 {
		w = m.cfg.MaxGrayFailbackWait
	}
	return es.graySince.Add(w)
}

// brokenProbeLocked: the probe never succeeded, or it fails
// (FailureThreshold times in a row) while live traffic vouches for the
// endpoint (trafficVouchesLocked). Orders failing too is an outage, not a
// broken probe.
func (m *Manager) brokenProbeLocked(es *endpointState, now time.Time) bool {
	thr := m.cfg.FailureThreshold
	if es.probeResults < thr {
		return false
	}
	if !es.probeOK {
		return true
	}
	return es.consecFail >= thr && m.trafficVouchesLocked(es, now)
}

// brokenProbeNoteLocked explains why a failing probe does not move flow off
// the active endpoint ("" when it does not apply).
func (m *Manager) brokenProbeNoteLocked(es *endpointState, now time.Time) string {
	if es.consecFail == 0 || !m.trafficVouchesLocked(es, now) {
		return ""
	}
	return fmt.Sprintf("the probe of %q fails (%d in a row, last: %v) while live traffic on it succeeds (last %v ago, none failed since): the probe, not the endpoint, is suspect; flow stays until an order fails or hangs, or traffic is quiet for %v",
		es.ep.Name, es.consecFail, es.lastErr, now.Sub(es.lastTrafficSuccess), m.cfg.MaxHealthAge)
}

// noteSwitchLocked counts bounces: a failover away from an endpoint within
// BounceWindow of a failback to it.
func (m *Manager) noteSwitchLocked(from, to *endpointState, now time.Time) {
	if m.cfg.BounceWindow > 0 && !from.failbackAt.IsZero() && now.Sub(from.failbackAt) < m.cfg.BounceWindow {
		keep := from.bounces[:0]
		for _, t := range from.bounces {
			if now.Sub(t) < m.cfg.FlapWindow {
				keep = append(keep, t)
			}
		}
		from.bounces = append(keep, now)
	}
	from.failbackAt = time.Time{}
	if to == m.primary {
		to.failbackAt = now
	}
}

func (m *Manager) bouncesLocked(es *endpointState, now time.Time) int {
	n := 0
	for _, t := range es.bounces {
		if now.Sub(t) < m.cfg.FlapWindow {
			n++
		}
	}
	return n
}

// failbackCooldownLocked: Cooldown multiplied by BounceFactor per bounce of
// es, at most MaxFailbackCooldown.
func (m *Manager) failbackCooldownLocked(es *endpointState, now time.Time) time.Duration {
	c := m.cfg.Cooldown
	if m.cfg.BounceWindow <= 0 {
		return c
	}
	bound := max(m.cfg.MaxFailbackCooldown, c)
	for range m.bouncesLocked(es, now) {
		c *= time.Duration(m.cfg.BounceFactor)
		if c >= bound || c < 0 {
			return bound
		}
	}
	return c
}

// staleOnlyLocked: es is not a target only because its evidence is stale or
// inconclusive (never probed, last success too old, DEGRADED by failures below
// FailureThreshold or by a slow answer, identity verification missing, expired
// or older than SwitchVerificationAge), not because it was found DOWN, on
// another account, outside the rules or in a gray failure.
func (m *Manager) staleOnlyLocked(es *endpointState, now time.Time) bool {
	if es == m.active || es.mismatch || es.gray || !m.jurisdictionOKLocked(es) {
		return false
	}
	switch es.state {
	case Unknown:
		return true
	case Degraded:
		// Failures below FailureThreshold (one probe that timed out on a
		// loaded host) or a slow answer: inconclusive, not a verdict. A halt
		// must rest on fresh evidence, so the candidate is probed again first.
		return true
	case Healthy:
	default:
		return false
	}
	if now.Sub(es.lastSuccess) >= m.cfg.MaxHealthAge {
		return true
	}
	return !m.admittedLocked(es) || !m.switchVerifiedLocked(es, now)
}

// staleCandidatesLocked lists, in priority order, the failover candidates
// excluded only by stale evidence (nil when there is none).
func (m *Manager) staleCandidatesLocked(now time.Time) []string {
	var out []string
	for _, es := range m.ranked {
		if m.staleOnlyLocked(es, now) {
			out = append(out, es.ep.Name)
		}
	}
	return out
}

func (m *Manager) evidenceStatusLocked(es *endpointState, now time.Time, st *Status) {
	st.ProbeFailures = es.consecFail
	st.TrafficFailures = es.trafficFail
	st.LastTrafficSuccess = es.lastTrafficSuccess
	st.ProbeNeverSucceeded = es.probeResults > 0 && !es.probeOK
	st.BrokenProbe = m.brokenProbeLocked(es, now)
	st.GrayFailure = es.gray
	if es.gray {
		st.GrayWaitUntil = m.grayUntilLocked(es)
	}
	st.GrayFailures = es.grayCount
	st.GrayUndetermined = m.grayUndeterminedLocked(es)
	st.WatchTradePath = es.tradePathDue
	st.SubmissionFailed = m.submissionFailedLocked(es, now)
	st.Bounces = m.bouncesLocked(es, now)
	st.FailbackCooldown = m.failbackCooldownLocked(es, now)
}

// undeterminedNoteLocked explains, as a suffix, a DOWN on live traffic whose
// cause the next probe decides ("" when that does not apply).
func (m *Manager) undeterminedNoteLocked(es *endpointState) string {
	if !m.grayUndeterminedLocked(es) {
		return ""
	}
	return "; no probe sent since the orders began to fail has answered yet: the next one decides whether this is an outage (it fails; a later probe success ends it) or a gray failure (it passes)"
}

// grayNoteLocked explains a gray failure ("" when es has none).
func (m *Manager) grayNoteLocked(es *endpointState, now time.Time) string {
	if !es.gray {
		return ""
	}
	until := m.grayUntilLocked(es)
	left := until.Sub(now)
	if left < 0 {
		left = 0
	}
	what := "trade-path evidence"
	if m.submissionFailedLocked(es, now) {
		what = "evidence from order submission (a lookup passing is not: orders failed there)"
	}
	return fmt.Sprintf("DOWN on live-traffic evidence while its probe passed (gray failure #%d, %d live-traffic failures, last: %v): the probe cannot see this failure, so it needs %s to come back, or a wait of %v more (%v in all) and a probe success",
		es.grayCount, es.trafficFail, es.lastErr, what, left, until.Sub(es.graySince))
}
