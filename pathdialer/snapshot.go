package pathdialer

import (
	"net/url"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/safetext"
)

// Snapshot is a consistent-enough picture of a Path for status pages and logs. It
// marshals to JSON and holds no credentials: service addresses are shown
// without user information, query or fragment (a ?token= in a stream URL is
// replaced by "?REDACTED"). Text that may come from a counterparty (causes,
// errors, notes, details) is escaped and cut as in Event.
type Snapshot struct {
	Time      time.Time          `json:"time"`
	Active    string             `json:"active"`
	Token     uint64             `json:"token"`
	Gate      GateState          `json:"gate"`
	GateCause string             `json:"gate_cause,omitempty"`
	GateSince time.Time          `json:"gate_since"`
	InFlight  int                `json:"in_flight"`
	Unknown   int                `json:"unknown"`
	Endpoints []EndpointSnapshot `json:"endpoints"`
	Monitor   MonitorSnapshot    `json:"monitor"`
	// Switches is the engine's history of switches, oldest first.
	Switches []engine.Decision `json:"switches"`
	// Events are the most recent events (probe results excluded), oldest first.
	Events []Event `json:"events"`
	// DroppedReports counts passive signals dropped as stale (older token or
	// fenced endpoint).
	DroppedReports uint64 `json:"dropped_reports"`
	Halts          uint64 `json:"halts"`
	// ReadEndpoint is where reads go: the active endpoint, or another one in
	// the degraded read-only mode.
	ReadEndpoint string `json:"read_endpoint"`
	// Provisional lists the NOT_RECEIVED verdicts not yet final (the order
	// may still land; MayResend answers no for them), oldest first, at most
	// maxSnapshotProvisional of them; ProvisionalCount counts them all.
	Provisional      []Verdict `json:"provisional,omitempty"`
	ProvisionalCount int       `json:"provisional_count"`
	// LateLandings counts the orders found booked after a NOT_RECEIVED
	// (EventLateLanding); LateAfterFinal those found after the verdict was
	// final, an alarm (see Verdict.AfterFinal). Watched counts the final
	// NOT_RECEIVED verdicts still looked up by the late-landing watch.
	LateLandings   uint64 `json:"late_landings"`
	LateAfterFinal uint64 `json:"late_after_final"`
	Watched        int    `json:"watched"`
	// Released lists the services whose submissions flow again while the
	// gate is still held for others (Config.ReconcileByService).
	Released []string `json:"released,omitempty"`
	// ValidUntil is when the coordinator's decision lapses (the deadline last
	// given to Extend); zero when it does not expire.
	ValidUntil time.Time `json:"valid_until,omitzero"`
	// Fence is the fence mode in force and what it does to resting orders
	// at the venue (Config.FenceMode).
	Fence FenceChoice `json:"fence"`
	// DeadMan is the dead-man timer as the last switch left it (nil before
	// the first arm, or without Config.DeadMan).
	DeadMan *DeadManStatus `json:"dead_man,omitempty"`
	// OpenOrders is the last open-order reconcile of each service, by
	// service name (Config.OpenOrders).
	OpenOrders []OpenOrderReport `json:"open_orders,omitempty"`
	// RestingCancelled counts the resting orders found cancelled by a switch
	// (EventRestingCancelled).
	RestingCancelled uint64 `json:"resting_cancelled"`
}

// maxSnapshotProvisional bounds Snapshot.Provisional.
const maxSnapshotProvisional = 256

// EndpointSnapshot is one endpoint in a Snapshot.
type EndpointSnapshot struct {
	Endpoint
	State                engine.HealthState `json:"state"`
	Active               bool               `json:"active"`
	Eligible             bool               `json:"eligible"`
	Fenced               bool               `json:"fenced"`
	ConsecutiveFailures  int                `json:"consecutive_failures"`
	ConsecutiveSuccesses int                `json:"consecutive_successes"`
	LastProbeError       string             `json:"last_probe_error,omitempty"`
	LastSuccess          time.Time          `json:"last_success"`
	// LastSuccessAge is how long ago the last success was (-1 if never).
	LastSuccessAge time.Duration `json:"last_success_age"`
	LastLatency    time.Duration `json:"last_latency"`
	Conns          int           `json:"conns"`
	// Identity: verified (the last conclusive check matched), mismatch, and the
	// last check's error (a mismatch names the differences).
	Verified         bool      `json:"verified"`
	IdentityMismatch bool      `json:"identity_mismatch"`
	IdentityError    string    `json:"identity_error,omitempty"`
	VerifiedAt       time.Time `json:"verified_at"`
	// Evidence: probe and live-traffic evidence apart, broken probe, gray
	// failure, bounces (gray.go).
	EndpointEvidence
}

// MonitorSnapshot says whether the monitor itself is alive.
type MonitorSnapshot struct {
	Interval  time.Duration `json:"interval"`
	LastRound time.Time     `json:"last_round"`
	// Stale is true when no probe round completed for three intervals: the
	// monitor has stalled. It is reported, never acted on.
	Stale bool `json:"stale"`
}

// Snapshot returns the Path's current state.
func (p *Path) Snapshot() Snapshot {
	now := time.Now()
	v := p.gate.Load()
	a := p.active.Load()
	s := Snapshot{
		Time:           now,
		Active:         a.rt.ep.Name,
		Token:          a.gen,
		Gate:           v.state,
		GateSince:      v.since,
		InFlight:       p.inflightCount(),
		Switches:       p.eng.History(),
		Events:         p.events.recent(),
		DroppedReports: p.stats.droppedReports.Load(),
		Halts:          p.stats.halts.Load(),
	}
	if v.cause != nil {
		s.GateCause = safetext.BoundN(v.cause.Error(), safetext.FieldMax)
	}
	for i := range s.Switches { // History returns copies
		s.Switches[i].Notes, _ = boundStrings(s.Switches[i].Notes)
	}
	s.Provisional = p.provisional()
	s.LateLandings, s.LateAfterFinal, s.Watched = p.lateStats() // verdict.go
	s.ProvisionalCount = len(s.Provisional)
	if len(s.Provisional) > maxSnapshotProvisional {
		s.Provisional = s.Provisional[:maxSnapshotProvisional]
	}
	for i := range s.Provisional { // copies, made for this Snapshot
		s.Provisional[i].Detail = safetext.BoundN(s.Provisional[i].Detail, safetext.DetailMax)
		s.Provisional[i].OrderID = safetext.Bound(s.Provisional[i].OrderID)
	}
	if len(v.released) > 0 {
		s.Released = sortedKeys(v.released)
	}
	if dl := p.validNanos.Load(); dl != 0 {
		s.ValidUntil = p.epoch.Add(time.Duration(dl))
	}
	p.rest.snapshot(&s) // fencemode.go
	re, _ := p.ReadEndpoint()
	s.ReadEndpoint = re.Name
	p.unknownMu.Lock()
	s.Unknown = len(p.unknown)
	p.unknownMu.Unlock()
	eligible := map[string]bool{}
	for _, ep := range p.eng.Targets() {
		eligible[ep.Name] = true
	}
	for _, st := range p.eng.Statuses() {
		rt := p.eps[st.Endpoint.Name]
		es := EndpointSnapshot{
			Endpoint:             redactEndpoint(rt.ep),
			State:                st.State,
			Active:               rt == a.rt,
			Eligible:             eligible[rt.ep.Name],
			Fenced:               rt.isFenced(),
			ConsecutiveFailures:  st.ConsecutiveFailures,
			ConsecutiveSuccesses: st.ConsecutiveSuccesses,
			LastSuccess:          st.LastSuccess,
			LastSuccessAge:       -1,
			LastLatency:          st.LastLatency,
			Conns:                rt.connCount(),
			EndpointEvidence:     evidenceOf(st),
		}
		if st.LastProbeError != nil {
			es.LastProbeError = safetext.BoundN(st.LastProbeError.Error(), safetext.FieldMax)
		}
		es.Verified, es.IdentityMismatch, es.VerifiedAt = st.Verified, st.IdentityMismatch, st.VerifiedAt
		if st.IdentityError != nil {
			es.IdentityError = safetext.BoundN(st.IdentityError.Error(), safetext.FieldMax)
		}
		if !st.LastSuccess.IsZero() {
			es.LastSuccessAge = now.Sub(st.LastSuccess)
		}
		s.Endpoints = append(s.Endpoints, es)
	}
	s.Monitor.Interval = p.cfg.ProbeInterval
	if t := p.lastRound.Load(); t != nil {
		s.Monitor.LastRound = *t
		s.Monitor.Stale = now.Sub(*t) > 3*p.cfg.ProbeInterval
	}
	return s
}

// redactEndpoint returns ep with every URL address stripped of what may carry
// a credential: user information, query and fragment.
func redactEndpoint(ep Endpoint) Endpoint {
	svc := make(map[string]string, len(ep.Services))
	for name, addr := range ep.Services {
		svc[name] = redactAddress(addr)
	}
	ep.Services = svc
	return ep
}

func redactAddress(addr string) string {
	if !strings.Contains(addr, "://") {
		if i := strings.LastIndex(addr, "@"); i >= 0 {
			return "REDACTED@" + addr[i+1:]
		}
		return addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return "REDACTED"
	}
	s := safeURL(u)
	if u.RawQuery != "" || u.ForceQuery {
		s += "?REDACTED"
	}
	if u.User != nil {
		s = strings.Replace(s, "://", "://REDACTED@", 1)
	}
	return s
}
