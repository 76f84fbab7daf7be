package metrics

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
	"github.com/brokerpath/brokerpath/transports/rest"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// namespace prefixes every metric name.
const namespace = "brokerpath"

// RESTSource is what Metrics reads from a REST transport at scrape time;
// *rest.Transport implements it.
type RESTSource interface {
	Stats() *rest.Stats
	BreakerState(endpoint string) (gobreaker.State, bool)
}

// StreamSource is what Metrics reads from a WebSocket stream at scrape time;
// *ws.Stream implements it.
type StreamSource interface {
	Stats() ws.Stats
}

// FIXSource is what Metrics reads from a FIX initiator at scrape time;
// *fix.Initiator implements it.
type FIXSource interface {
	Stats() *fix.Stats
}

var (
	_ RESTSource           = (*rest.Transport)(nil)
	_ StreamSource         = (*ws.Stream)(nil)
	_ FIXSource            = (*fix.Initiator)(nil)
	_ prometheus.Collector = (*Metrics)(nil)
)

// Metrics is a prometheus.Collector for one Path and the transports built on
// it. Create it with New, chain OnEvent into the Path's Config.OnEvent, call
// Watch with the Path, and register it. All methods are safe for concurrent
// use.
type Metrics struct {
	mu      sync.Mutex
	path    *pathdialer.Path
	rest    []RESTSource
	streams []StreamSource
	fix     []FIXSource

	// Fed by events.
	probeDuration     *prometheus.HistogramVec // endpoint, region, outcome
	stateChanges      *prometheus.CounterVec   // endpoint, region, state
	decisions         *prometheus.CounterVec   // kind, outcome
	switches          *prometheus.CounterVec   // kind
	fenceDuration     *prometheus.HistogramVec // endpoint, region, outcome
	reconcileDuration *prometheus.HistogramVec // outcome
	holdDuration      *prometheus.HistogramVec // endpoint, region
	events            *prometheus.CounterVec   // kind

	// Read at scrape time.
	d descs
}

// probeBuckets cover a probe on the order path, from a LAN hop to a timeout.
var probeBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// hookBuckets cover fence, reconcile and hold durations: a local close in a
// millisecond up to a reconciliation that queries the broker for a minute.
var hookBuckets = []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New returns a Metrics watching nothing yet. Event-fed metrics count from the
// first event passed to OnEvent; scrape-time metrics appear once Watch is called.
func New() *Metrics {
	epLabels := []string{"endpoint", "region"}
	m := &Metrics{
		probeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "probe_duration_seconds",
			Help:    "Latency of health probes by endpoint and outcome (success or failure; a timeout is a failure).",
			Buckets: probeBuckets,
		}, append(epLabels, "outcome")),
		stateChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "endpoint_state_changes_total",
			Help: "Health state transitions of an endpoint, by the state entered. Frequent transitions mean misconfigured thresholds.",
		}, append(epLabels, "state")),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "decisions_total",
			Help: "Engine evaluations other than no_action, by kind (failover or failback) and outcome.",
		}, []string{"kind", "outcome"}),
		switches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "switches_total",
			Help: "Switches of the active endpoint, by kind (failover or failback).",
		}, []string{"kind"}),
		fenceDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "fence_duration_seconds",
			Help:    "Duration of fence attempts of the endpoint being left, by outcome (success or failure); _count{outcome=\"failure\"} counts failed fences.",
			Buckets: hookBuckets,
		}, append(epLabels, "outcome")),
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "reconcile_duration_seconds",
			Help:    "Duration of reconcile attempts (after a switch, or before leaving a halt), by outcome (success or failure); _count{outcome=\"failure\"} counts failed reconciles.",
			Buckets: hookBuckets,
		}, []string{"outcome"}),
		holdDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "gate_hold_duration_seconds",
			Help:    "How long submissions were held (or halted) before flow was released, by the endpoint released on.",
			Buckets: hookBuckets,
		}, epLabels),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "events_total",
			Help: "Every event of the Path, by kind (probe, state, decision, hold, fence-start, ..., late-ticket).",
		}, []string{"kind"}),
		d: newDescs(),
	}
	return m
}

// Watch makes the scrape-time metrics read path: endpoint states, staleness,
// gate, in-flight tickets, halts. A later call replaces the Path (one Metrics
// describes one Path); nil stops them.
func (m *Metrics) Watch(path *pathdialer.Path) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.path = path
}

// WatchREST adds REST transports (their request counters are summed) and
// their per-endpoint read breakers.
func (m *Metrics) WatchREST(ts ...RESTSource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range ts {
		if t != nil {
			m.rest = append(m.rest, t)
		}
	}
}

// WatchStream adds WebSocket streams (their counters are summed).
func (m *Metrics) WatchStream(ss ...StreamSource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range ss {
		if s != nil {
			m.streams = append(m.streams, s)
		}
	}
}

// WatchFIX adds FIX initiators (their counters are summed).
func (m *Metrics) WatchFIX(fs ...FIXSource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range fs {
		if f != nil {
			m.fix = append(m.fix, f)
		}
	}
}

// sources returns what is watched, for one scrape.
func (m *Metrics) sources() (*pathdialer.Path, []RESTSource, []StreamSource, []FIXSource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.path, m.rest, m.streams, m.fix
}

// regionOf returns the configured region of an endpoint ("" when no Path is
// watched or the name is unknown).
func (m *Metrics) regionOf(endpoint string) string {
	m.mu.Lock()
	p := m.path
	m.mu.Unlock()
	if p == nil {
		return ""
	}
	ep, _ := p.Endpoint(endpoint)
	return ep.Region
}

// OnEvent feeds the event-fed metrics. Chain it into pathdialer.Config.OnEvent
// (with observe.Tee when there are other hooks). It never blocks and never
// calls back into the Path beyond reading an endpoint's region.
func (m *Metrics) OnEvent(e pathdialer.Event) {
	m.events.WithLabelValues(e.Kind.String()).Inc()
	switch e.Kind {
	case pathdialer.EventProbe:
		m.probeDuration.WithLabelValues(e.Endpoint, m.regionOf(e.Endpoint), successOrFailure(e.Err == nil)).
			Observe(e.Duration.Seconds())
	case pathdialer.EventStateChange:
		m.stateChanges.WithLabelValues(e.Endpoint, m.regionOf(e.Endpoint), label(e.State.String())).Inc()
	case pathdialer.EventDecision:
		if e.Decision != nil {
			kind := "failover"
			if e.Decision.Failback {
				kind = "failback"
			}
			m.decisions.WithLabelValues(kind, label(e.Decision.Outcome.String())).Inc()
		}
	case pathdialer.EventSwitch:
		m.switches.WithLabelValues(switchKind(e.Cause)).Inc()
	case pathdialer.EventFenceSuccess, pathdialer.EventFenceFailure:
		m.fenceDuration.WithLabelValues(e.Endpoint, m.regionOf(e.Endpoint), successOrFailure(e.Kind == pathdialer.EventFenceSuccess)).
			Observe(e.Duration.Seconds())
	case pathdialer.EventReconcileSuccess, pathdialer.EventReconcileFailure:
		m.reconcileDuration.WithLabelValues(successOrFailure(e.Kind == pathdialer.EventReconcileSuccess)).
			Observe(e.Duration.Seconds())
	case pathdialer.EventRelease:
		m.holdDuration.WithLabelValues(e.Endpoint, m.regionOf(e.Endpoint)).Observe(e.Duration.Seconds())
	}
}

func successOrFailure(ok bool) string {
	if ok {
		return "success"
	}
	return "failure"
}

// switchKind maps an EventSwitch's cause to a fixed label value.
func switchKind(cause string) string {
	if cause == "failback" {
		return "failback"
	}
	return "failover"
}

// label turns an enum's String form (NO_TARGET_AVAILABLE, half-open) into a
// label value (no_target_available, half_open).
func label(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "-", "_")
}
