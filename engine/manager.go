package engine

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Status is a copy of what the engine knows about one endpoint.
type Status struct {
	Endpoint             Endpoint
	State                HealthState
	ConsecutiveFailures  int
	ConsecutiveSuccesses int
	// LastProbeError is the error of the most recent result, nil after a success.
	// It wraps the probe's error (errors.Is finds the cause) or ErrProbePanic.
	LastProbeError error
	// LastSuccess is when the last successful result was recorded (zero if never).
	LastSuccess time.Time
	// LastLatency is the latency of the most recent result.
	LastLatency time.Duration
	// LastResult is when the most recent result of any kind was recorded (zero if
	// never). A monitor that stops feeding results shows here first.
	LastResult time.Time
	// DegradedSince is when the current uninterrupted Degraded period began (zero
	// when not Degraded).
	DegradedSince time.Time
	// Active reports whether this endpoint carries the flow.
	Active bool
	// Verified: the last conclusive identity check (Admit) verified it.
	Verified bool
	// IdentityMismatch: the last conclusive identity check found another account.
	IdentityMismatch bool
	// IdentityError is the last identity check's error (nil after a verification).
	IdentityError error
	// VerifiedAt is when it was last verified (zero if never).
	VerifiedAt time.Time
	// VerificationExpired: it was verified, but longer ago than
	// Config.VerificationMaxAge; Verified is then false.
	VerificationExpired bool
	// Jurisdiction, as registered (Endpoint.Jurisdiction).
	Jurisdiction string
	// Eligible: a failover target right now (healthy, fresh, admitted, allowed).
	// A switch to it may first need its identity re-checked
	// (Config.SwitchVerificationAge).
	Eligible bool
	// ProbeFailures and TrafficFailures are the consecutive failures of each
	// kind of evidence, counted apart so that one never masks the other:
	// probe results (Probe, Observe) and live traffic (ObserveTraffic,
	// ObserveTradePath). ConsecutiveFailures is the larger of the two.
	ProbeFailures, TrafficFailures int
	// LastTrafficSuccess is when live traffic last succeeded (zero if never).
	LastTrafficSuccess time.Time
	// ProbeNeverSucceeded: probe results were recorded, none a success.
	ProbeNeverSucceeded bool
	// BrokenProbe: the probe has never succeeded, or it fails
	// (FailureThreshold times in a row) while live traffic vouches for the
	// endpoint: live traffic succeeded since the probe began failing, none
	// failed since, and the last success is younger than MaxHealthAge. The
	// probe, not the endpoint, is suspect: while traffic vouches, the
	// endpoint is DEGRADED rather than DOWN and the active one keeps the flow.
	// Orders failing too is an outage, never a broken probe.
	BrokenProbe bool
	// GrayFailure: taken DOWN by live-traffic evidence, and a probe sent
	// after that traffic began to fail passed (none sent since failed before
	// it): the probe cannot see this failure. It comes back only on
	// trade-path evidence (ObserveTradePath or live traffic succeeding) or
	// after GrayWaitUntil; probe results, failures included, neither end it
	// nor shorten it. Orders failing before any probe was sent since is
	// GrayUndetermined, not GrayFailure.
	GrayFailure bool
	// GrayWaitUntil is when a GrayFailure ends without trade-path evidence
	// (at the first probe success from then on). Zero when not GrayFailure.
	GrayWaitUntil time.Time
	// GrayFailures counts the times it was taken out that way.
	GrayFailures int
	// GrayUndetermined: DOWN on live-traffic evidence, and no probe has been
	// sent since the first of those failures, so whether the probe can see
	// this failure is not known yet. The endpoint is DOWN all the same (the
	// active one fails over at once); the next probe sent since then decides:
	// a success makes it a GrayFailure, a failure an ordinary outage that the
	// probe's next success ends.
	GrayUndetermined bool
	// WatchTradePath: it is, or was, in a gray failure, or live traffic took
	// it DOWN in an outage that a probe success ended (a gray failure whose
	// probe failed for a while looks the same), and no live traffic has
	// succeeded on it since (a trade-path success ends the gray failure,
	// not the watch). The caller should keep checking its trade path every
	// round, including while it is considered for failback: a failed check
	// makes it DEGRADED (not a target, no failback), FailureThreshold of them
	// a gray failure again.
	WatchTradePath bool
	// SubmissionFailed: it has live-traffic failures standing (a gray
	// failure among them), and the broker answered an order there with a
	// server error (ObserveSubmissionFailed) within the gray wait
	// (Config.GrayFailbackWait per gray failure), no order and no
	// submission check (ObserveTradePath) having succeeded there since. Only
	// evidence from the submission path ends those failures: ObserveTradePath,
	// live traffic succeeding, or the gray wait. A lookup (ObserveLookup)
	// passing does not (it reads the order path, it does not submit), except
	// as the last resort (see ObserveLookup).
	SubmissionFailed bool
	// Bounces counts failovers away from it within Config.BounceWindow of a
	// failback to it, within Config.FlapWindow.
	Bounces int
	// FailbackCooldown is the cooldown a failback to it must wait since the
	// last switch: Config.Cooldown multiplied by Config.BounceFactor per
	// bounce, at most Config.MaxFailbackCooldown.
	FailbackCooldown time.Duration
}

// Decision is the verdict of one evaluation.
type Decision struct {
	Outcome Outcome
	// From is the active endpoint when the evaluation ran; To the chosen target
	// (empty when there is none).
	From, To string
	// RequiresTradingHalt is true exactly when Outcome is NoTargetAvailable.
	RequiresTradingHalt bool
	// Notes explain the verdict for humans: the evidence, the gate that refused,
	// staleness of the active endpoint's health. Nil in the steady healthy state.
	Notes []string
	// At is the Clock reading at which the evaluation ran.
	At time.Time
	// Token is the fencing token after this decision: the number of switches
	// so far, or the value last given to Assign (a Switched decision carries
	// the new token).
	Token uint64
	// Failback reports whether the decision came from EvaluateFailback.
	Failback bool
	// ReadOnlyTarget, on NoTargetAvailable, names a healthy, fresh, verified
	// endpoint excluded only by Config.TargetJurisdictions: a degraded mode may
	// read through it while submissions stay halted. Empty otherwise.
	ReadOnlyTarget string
	// Stale, when there is no target (NoTargetAvailable, or NoAction on a
	// DEGRADED active endpoint) or the primary is not yet a failback target
	// (PrimaryNotStable), names the candidates excluded only by stale or
	// inconclusive evidence: never probed, a last success older than
	// Config.MaxHealthAge, DEGRADED (failures below FailureThreshold, or a slow
	// answer), or an identity verification missing, expired or older than
	// Config.SwitchVerificationAge — not found DOWN. The caller should probe
	// (and re-check) them at once and evaluate again before halting.
	// Nil otherwise (and in the steady state).
	Stale []string
}

type endpointState struct {
	ep            Endpoint
	state         HealthState
	consecFail    int
	consecSucc    int
	lastErr       error
	lastSuccess   time.Time
	lastLatency   time.Duration
	lastResult    time.Time
	degradedSince time.Time
	// admission
	verified     bool
	mismatch     bool
	identityErr  error
	verifiedAt   time.Time
	verdictAsked time.Time // when the recorded identity verdict's check was asked
	jurisdiction string
	// evidence kept apart (see evidence.go)
	trafficFail int
	// ordering of evidence (Manager.seq at the record): the first probe
	// failure of the current run, the last live-traffic success and failure
	probeFailSeq, trafficOKSeq, trafficFailSeq uint64
	// trafficHungSeq: when live traffic was last reported hung (TrafficHung).
	trafficHungSeq uint64
	// submissionFailedAt: when the broker last answered an order there with
	// a server error (ObserveSubmissionFailed); zero once an order or a
	// submission check (ObserveTradePath) succeeded there since
	submissionFailedAt time.Time
	// tradePathDue: a gray failure began, or a probe success ended an
	// outage live traffic had taken DOWN, and no live traffic succeeded since
	tradePathDue       bool
	lastTrafficResult  time.Time
	lastTrafficSuccess time.Time
	lastTrafficFailure time.Time
	lastProbeFailure   time.Time
	probeResults       int
	probeOK            bool // a probe has succeeded at least once
	lastProbeSuccess   time.Time
	// the current run of live-traffic failures (evidence.go): when its
	// first failure was recorded, when the last probe was sent, and
	// whether a probe sent since that first failure passed, or failed
	trafficRunStart time.Time
	lastProbeSent   time.Time
	runProbePassed  bool
	runProbeFailed  bool
	slow            bool
	gray            bool
	graySince       time.Time
	grayCount       int
	failbackAt      time.Time   // last failback to it
	bounces         []time.Time // bounce times within FlapWindow
}

// Manager holds the endpoints, their counted health and the active endpoint, and
// evaluates failover and failback. Create it with New. Safe for concurrent use.
type Manager struct {
	cfg   Config
	clock Clock

	mu         sync.Mutex
	eps        []*endpointState // registration order
	ranked     []*endpointState // by Priority, ties by registration order
	byName     map[string]*endpointState
	primary    *endpointState
	active     *endpointState
	gen        uint64
	seq        uint64 // results recorded so far: orders evidence (evidence.go)
	lastSwitch time.Time
	switched   bool
	switches   []time.Time // switch times inside the flap window, oldest first
	history    []Decision
}

// New validates cfg (every field, as written) and returns an empty Manager.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	clk := cfg.Clock
	if clk == nil {
		clk = systemClock{}
	}
	return &Manager{cfg: cfg, clock: clk, byName: make(map[string]*endpointState)}, nil
}

// Config returns the configuration the Manager was built with.
func (m *Manager) Config() Config { return m.cfg }

// Register adds an endpoint in state Unknown. It refuses blank (or white-space)
// Name, Address or Region, a duplicate name, and a second primary. The primary
// becomes the active endpoint when it is registered.
func (m *Manager) Register(ep Endpoint) error {
	for _, f := range [...]struct{ name, val string }{{"Name", ep.Name}, {"Address", ep.Address}, {"Region", ep.Region}} {
		if strings.TrimSpace(f.val) == "" {
			return fmt.Errorf("%w: Endpoint.%s is blank (endpoint %q)", ErrBlankField, f.name, ep.Name)
		}
	}
	if err := checkJurisdiction(ep.Jurisdiction); err != nil {
		return fmt.Errorf("%w (endpoint %q)", err, ep.Name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.byName[ep.Name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateEndpoint, ep.Name)
	}
	if ep.Primary && m.primary != nil {
		return fmt.Errorf("%w: %q is primary, cannot also make %q primary", ErrSecondPrimary, m.primary.ep.Name, ep.Name)
	}
	es := &endpointState{ep: ep, jurisdiction: ep.Jurisdiction}
	m.eps = append(m.eps, es)
	m.byName[ep.Name] = es
	i, _ := slices.BinarySearchFunc(m.ranked, ep.Priority, func(e *endpointState, p int) int {
		if e.ep.Priority <= p {
			return -1 // equal priorities stay in registration order
		}
		return 1
	})
	m.ranked = slices.Insert(m.ranked, i, es)
	if ep.Primary {
		m.primary = es
		if m.active == nil {
			m.active = es
		}
	}
	return nil
}

// Validate refuses a configuration that could never act: no primary, nothing to
// fail over to, or a jurisdiction rule (Config.TargetJurisdictions) that names a
// jurisdiction no registered endpoint lies in, leaves a backup without a
// jurisdiction, or that no backup satisfies (ErrInvalidConfig; the last also
// wraps ErrNoAllowedBackup, and is checked after every other). Call it before
// the probe loop starts; such a configuration never errors at run time, it
// silently never fails over.
func (m *Manager) Validate() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.primary == nil {
		return ErrNoPrimary
	}
	if len(m.eps) < 2 {
		return fmt.Errorf("%w: only %q is registered", ErrNothingToFailOver, m.eps[0].ep.Name)
	}
	return m.validateJurisdictionsLocked()
}

// Active returns the endpoint carrying the flow; false before a primary is registered.
func (m *Manager) Active() (Endpoint, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.active == nil {
		return Endpoint{}, false
	}
	return m.active.ep, true
}

// Primary returns the primary endpoint; false before one is registered.
func (m *Manager) Primary() (Endpoint, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.primary == nil {
		return Endpoint{}, false
	}
	return m.primary.ep, true
}

// Token returns the fencing token: the number of switches made so far, or
// the value last given to Assign.
func (m *Manager) Token() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen
}

// Status returns a copy of one endpoint's status.
func (m *Manager) Status(name string) (Status, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.byName[name]
	if !ok {
		return Status{}, false
	}
	return m.statusLocked(es), true
}

// Statuses returns every endpoint's status, in registration order.
func (m *Manager) Statuses() []Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Status, len(m.eps))
	for i, es := range m.eps {
		out[i] = m.statusLocked(es)
	}
	return out
}

// Targets returns the endpoints eligible right now (Healthy with a fresh success),
// in priority order. The active endpoint is included when it is eligible.
func (m *Manager) Targets() []Endpoint {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	var out []Endpoint
	for _, es := range m.ranked {
		if m.eligibleLocked(es, now) {
			out = append(out, es.ep)
		}
	}
	return out
}

// History returns a copy of the switches made (the Switched decisions), oldest
// first. It grows by exactly one decision per switch; the caller may modify what it
// gets without affecting the Manager.
func (m *Manager) History() []Decision {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.history)
	for i := range out {
		out[i].Notes = slices.Clone(out[i].Notes)
	}
	return out
}

func (m *Manager) statusLocked(es *endpointState) Status {
	st := Status{
		Endpoint:             es.ep,
		State:                es.state,
		ConsecutiveFailures:  max(es.consecFail, es.trafficFail),
		ConsecutiveSuccesses: es.consecSucc,
		LastProbeError:       es.lastErr,
		LastSuccess:          es.lastSuccess,
		LastLatency:          es.lastLatency,
		LastResult:           es.lastResult,
		DegradedSince:        es.degradedSince,
		Active:               es == m.active,
		IdentityMismatch:     es.mismatch,
		IdentityError:        es.identityErr,
		VerifiedAt:           es.verifiedAt,
		Jurisdiction:         es.jurisdiction,
	}
	now := m.clock.Now()
	m.evidenceStatusLocked(es, now, &st)
	st.Verified = m.verifiedLocked(es, now)
	st.VerificationExpired = es.verified && !st.Verified
	st.Eligible = m.eligibleLocked(es, now)
	return st
}

// eligibleLocked: Healthy with a success younger than MaxHealthAge. (Healthy is only
// ever set by a success, so lastSuccess is meaningful; it is not compared with the
// zero Time, which a Clock is free to return.)
func (m *Manager) eligibleLocked(es *endpointState, now time.Time) bool {
	return m.healthyFreshLocked(es, now) && m.admittedLocked(es) && m.jurisdictionOKLocked(es)
}
