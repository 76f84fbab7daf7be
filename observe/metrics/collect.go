package metrics

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// descs are the scrape-time metrics' descriptors.
type descs struct {
	epState, epActive, epEligible, epFenced, epFailures, epSuccesses, epAge, epConns *prometheus.Desc
	token, gateState, gateAge, halts, inFlight, unknown                              *prometheus.Desc
	monitorStale, monitorAge, droppedReports                                         *prometheus.Desc
	restingCancelled                                                                 *prometheus.Desc

	restRequests, restOutcomes, restBreaker *prometheus.Desc

	wsCounters  []wsCounter
	wsConnected *prometheus.Desc
	wsHealth    *prometheus.Desc

	fixCounters []fixCounter
}

// wsCounter is one ws.Stats counter exported as a Prometheus counter.
type wsCounter struct {
	desc *prometheus.Desc
	val  func(ws.Stats) float64
}

// fixCounter is one fix.Stats counter exported as a Prometheus counter.
type fixCounter struct {
	desc *prometheus.Desc
	val  func(FIXSource) float64
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
}

func newDescs() descs {
	ep := []string{"endpoint", "region"}
	wsc := func(name, help string, val func(ws.Stats) float64) wsCounter {
		return wsCounter{desc(name, help), val}
	}
	fixc := func(name, help string, val func(FIXSource) float64) fixCounter {
		return fixCounter{desc(name, help), val}
	}
	return descs{
		epState:     desc("endpoint_state", "Health state of an endpoint as the engine believes it: 1 for the current state (unknown, healthy, degraded, down), 0 for the others.", "endpoint", "region", "state"),
		epActive:    desc("endpoint_active", "1 for the endpoint order flow goes to, 0 for the others.", ep...),
		epEligible:  desc("endpoint_eligible", "1 when the endpoint is a failover target now (healthy with a fresh success).", ep...),
		epFenced:    desc("endpoint_fenced", "1 when the endpoint is fenced: switched away from, its connections closed and new dials refused.", ep...),
		epFailures:  desc("endpoint_consecutive_failures", "Consecutive failed probes or passive results of an endpoint.", ep...),
		epSuccesses: desc("endpoint_consecutive_successes", "Consecutive successful probes or passive results of an endpoint.", ep...),
		epAge:       desc("endpoint_last_success_age_seconds", "Seconds since the endpoint's last success (+Inf if never): health-check staleness.", ep...),
		epConns:     desc("endpoint_connections", "Connections the Path tracks to an endpoint.", ep...),

		token:          desc("generation", "Fencing token of the active path (Snapshot.Token): the number of switches since the Path was created."),
		gateState:      desc("gate_state", "State of the submission gate: 1 for the current state (not_started, open, held, halted, closed), 0 for the others.", "state"),
		gateAge:        desc("gate_state_age_seconds", "Seconds the gate has been in its current state: how long submissions have been held or halted, when they are."),
		halts:          desc("halts_total", "Times trading was halted (no eligible target, or fence or reconcile kept failing)."),
		inFlight:       desc("tickets_in_flight", "Submissions granted a ticket and not yet finished."),
		unknown:        desc("tickets_unknown_outcome", "Submissions finished with an unknown outcome, waiting for reconciliation."),
		monitorStale:   desc("monitor_stale", "1 when no probe round completed for three intervals: the monitor itself has stalled."),
		monitorAge:     desc("monitor_last_round_age_seconds", "Seconds since the last completed probe round (+Inf before the first)."),
		droppedReports: desc("dropped_reports_total", "Passive results dropped as stale (older token or fenced endpoint)."),

		restingCancelled: desc("resting_orders_cancelled_by_switch_total", "Resting orders the open-order reconcile after a switch found cancelled by it (cancel-on-disconnect of the path left); each was reported to the application."),

		restRequests: desc("rest_requests_total", "REST requests started through the transport, by kind (read or submission).", "kind"),
		restOutcomes: desc("rest_request_outcomes_total",
			"Finished REST requests by kind and outcome: reads failure or breaker_open (successful reads are requests minus these); "+
				"submissions acknowledged, unknown (handed to reconciliation), not_sent or halted.", "kind", "outcome"),
		restBreaker: desc("rest_breaker_state", "State of an endpoint's REST read breaker: 1 for the current state (closed, half_open, open), 0 for the others.", "endpoint", "region", "state"),

		wsCounters: []wsCounter{
			wsc("ws_connects_total", "Successful WebSocket connections.", func(s ws.Stats) float64 { return float64(s.Connects) }),
			wsc("ws_reconnects_total", "Successful WebSocket connections after the first of each stream.", func(s ws.Stats) float64 { return float64(s.Reconnects) }),
			wsc("ws_dial_failures_total", "Failed WebSocket connects.", func(s ws.Stats) float64 { return float64(s.DialFailures) }),
			wsc("ws_fallbacks_total", "Moves to a non-active endpoint after repeated connect failures.", func(s ws.Stats) float64 { return float64(s.Fallbacks) }),
			wsc("ws_migrations_total", "Make-before-break moves to the active endpoint after a switch.", func(s ws.Stats) float64 { return float64(s.Migrations) }),
			wsc("ws_subscribes_total", "Streams attached fresh.", func(s ws.Stats) float64 { return float64(s.Subscribes) }),
			wsc("ws_resumes_total", "Streams resumed from their last sequence (snapshots included).", func(s ws.Stats) float64 { return float64(s.Resumes) }),
			wsc("ws_snapshots_total", "Resumes the server answered with a snapshot instead of a replay.", func(s ws.Stats) float64 { return float64(s.Snapshots) }),
			wsc("ws_messages_total", "Messages handed to the handler.", func(s ws.Stats) float64 { return float64(s.Messages) }),
			wsc("ws_duplicates_total", "Messages dropped as duplicates (sequence not above the last).", func(s ws.Stats) float64 { return float64(s.Duplicates) }),
			wsc("ws_gaps_total", "Sequence gaps detected.", func(s ws.Stats) float64 { return float64(s.Gaps) }),
			wsc("ws_gaps_repaired_total", "Sequence gaps repaired by replay or snapshot.", func(s ws.Stats) float64 { return float64(s.GapsRepaired) }),
			wsc("ws_server_errors_total", "Error messages from the WebSocket server.", func(s ws.Stats) float64 { return float64(s.ServerErrors) }),
			wsc("ws_disconnected_seconds_total", "Total time streams spent without a live connection.", func(s ws.Stats) float64 { return s.Disconnected.Seconds() }),
			wsc("ws_restarts_total", "Streams whose server restarted its numbering (a new epoch, or sequence far below the last); each delivered a restart snapshot.", func(s ws.Stats) float64 { return float64(s.Restarts) }),
			wsc("ws_escalations_total", "Repair rungs climbed after a stream's first repair request (a resume again, a snapshot asked for, a reconnect).", func(s ws.Stats) float64 { return float64(s.Escalations) }),
			wsc("ws_snapshot_requests_total", "Snapshots the client asked for because a repair was not done in time.", func(s ws.Stats) float64 { return float64(s.SnapshotRequests) }),
			wsc("ws_stall_reconnects_total", "Connections dropped because a stream's repair was not done in time.", func(s ws.Stats) float64 { return float64(s.StallReconnects) }),
			wsc("ws_oversized_frames_total", "Server messages over the read limit; each replaced its connection.", func(s ws.Stats) float64 { return float64(s.OversizedFrames) }),
			wsc("ws_bad_frames_total", "Server messages the protocol could not parse; each replaced its connection.", func(s ws.Stats) float64 { return float64(s.BadFrames) }),
			wsc("ws_short_lived_connections_total", "Connections that died soon after their handshake (counted as failed reconnect rounds).", func(s ws.Stats) float64 { return float64(s.ShortLived) }),
			wsc("ws_held_messages_total", "Messages dropped while a gap or restart was being repaired (the repair brings them, or a snapshot supersedes them).", func(s ws.Stats) float64 { return float64(s.Held) }),
		},
		wsConnected: desc("ws_streams_connected", "WebSocket streams connected to an endpoint now.", ep...),
		wsHealth:    desc("ws_streams_health", "Watched WebSocket streams in each health state now (connecting, live, recovering, suspended, closed).", "state"),

		fixCounters: []fixCounter{
			fixc("fix_logons_total", "Successful FIX logons.", func(f FIXSource) float64 { return float64(f.Stats().Logons.Load()) }),
			fixc("fix_sequence_resets_total", "FIX logons sent with ResetSeqNumFlag=Y because the endpoint changed.", func(f FIXSource) float64 { return float64(f.Stats().Resets.Load()) }),
			fixc("fix_orders_total", "Orders submitted through the FIX initiator (not_sent included).", func(f FIXSource) float64 { return float64(f.Stats().Orders.Load()) }),
			fixc("fix_orders_not_sent_total", "FIX orders that never left the process.", func(f FIXSource) float64 { return float64(f.Stats().NotSent.Load()) }),
			fixc("fix_orders_answered_total", "FIX orders settled by an ExecutionReport, OrderCancelReject or BusinessMessageReject.", func(f FIXSource) float64 { return float64(f.Stats().Answered.Load()) }),
			fixc("fix_refused_resends_total", "FIX orders the counterparty asked for again that were gap-filled instead of resent.", func(f FIXSource) float64 { return float64(f.Stats().RefusedResends.Load()) }),
			fixc("fix_ungated_refused_total", "FIX orders refused because they did not come through the submission gate.", func(f FIXSource) float64 { return float64(f.Stats().UngatedRefused.Load()) }),
		},
	}
}

func (d *descs) all() []*prometheus.Desc {
	out := []*prometheus.Desc{
		d.epState, d.epActive, d.epEligible, d.epFenced, d.epFailures, d.epSuccesses, d.epAge, d.epConns,
		d.token, d.gateState, d.gateAge, d.halts, d.inFlight, d.unknown,
		d.monitorStale, d.monitorAge, d.droppedReports, d.restingCancelled,
		d.restRequests, d.restOutcomes, d.restBreaker, d.wsConnected, d.wsHealth,
	}
	for _, c := range d.wsCounters {
		out = append(out, c.desc)
	}
	for _, c := range d.fixCounters {
		out = append(out, c.desc)
	}
	return out
}

// Describe sends every descriptor Metrics can emit, whatever is watched.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range m.d.all() {
		ch <- d
	}
	m.eventCollectors(func(c prometheus.Collector) { c.Describe(ch) })
}

// Collect reads the watched Path and transports and sends their current values,
// then the event-fed metrics.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	path, rests, streams, fixes := m.sources()
	if path != nil {
		m.collectPath(ch, path.Snapshot())
	}
	if len(rests) > 0 && path != nil {
		m.collectREST(ch, path, rests)
	}
	if len(streams) > 0 {
		m.collectStreams(ch, path, streams)
	}
	if len(fixes) > 0 {
		for _, c := range m.d.fixCounters {
			var v float64
			for _, f := range fixes {
				v += c.val(f)
			}
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, v)
		}
	}
	m.eventCollectors(func(c prometheus.Collector) { c.Collect(ch) })
}

func (m *Metrics) eventCollectors(f func(prometheus.Collector)) {
	for _, c := range []prometheus.Collector{
		m.probeDuration, m.stateChanges, m.decisions, m.switches,
		m.fenceDuration, m.reconcileDuration, m.holdDuration, m.events,
	} {
		f(c)
	}
}

var healthStates = []engine.HealthState{engine.Unknown, engine.Healthy, engine.Degraded, engine.Down}

var wsHealths = []ws.Health{ws.HealthConnecting, ws.HealthLive, ws.HealthRecovering, ws.HealthSuspended, ws.HealthClosed}

var gateStates = []pathdialer.GateState{
	pathdialer.GateNotStarted, pathdialer.GateOpen, pathdialer.GateHeld, pathdialer.GateHalted, pathdialer.GateClosed,
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ageSeconds turns a Snapshot age (-1 or negative: never) into seconds, +Inf for never.
func ageSeconds(d time.Duration) float64 {
	if d < 0 {
		return math.Inf(1)
	}
	return d.Seconds()
}

func (m *Metrics) collectPath(ch chan<- prometheus.Metric, s pathdialer.Snapshot) {
	g := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	c := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lv...)
	}
	for _, e := range s.Endpoints {
		for _, st := range healthStates {
			g(m.d.epState, b2f(e.State == st), e.Name, e.Region, label(st.String()))
		}
		g(m.d.epActive, b2f(e.Active), e.Name, e.Region)
		g(m.d.epEligible, b2f(e.Eligible), e.Name, e.Region)
		g(m.d.epFenced, b2f(e.Fenced), e.Name, e.Region)
		g(m.d.epFailures, float64(e.ConsecutiveFailures), e.Name, e.Region)
		g(m.d.epSuccesses, float64(e.ConsecutiveSuccesses), e.Name, e.Region)
		age := e.LastSuccessAge
		if e.LastSuccess.IsZero() {
			age = -1
		}
		g(m.d.epAge, ageSeconds(age), e.Name, e.Region)
		g(m.d.epConns, float64(e.Conns), e.Name, e.Region)
	}
	g(m.d.token, float64(s.Token))
	for _, st := range gateStates {
		g(m.d.gateState, b2f(s.Gate == st), label(st.String()))
	}
	gateAge := time.Duration(0)
	if !s.GateSince.IsZero() {
		gateAge = s.Time.Sub(s.GateSince)
	}
	g(m.d.gateAge, max(gateAge, 0).Seconds())
	c(m.d.halts, float64(s.Halts))
	c(m.d.restingCancelled, float64(s.RestingCancelled))
	g(m.d.inFlight, float64(s.InFlight))
	g(m.d.unknown, float64(s.Unknown))
	g(m.d.monitorStale, b2f(s.Monitor.Stale))
	roundAge := time.Duration(-1)
	if !s.Monitor.LastRound.IsZero() {
		roundAge = max(s.Time.Sub(s.Monitor.LastRound), 0)
	}
	g(m.d.monitorAge, ageSeconds(roundAge))
	c(m.d.droppedReports, float64(s.DroppedReports))
}

var breakerStates = []gobreaker.State{gobreaker.StateClosed, gobreaker.StateHalfOpen, gobreaker.StateOpen}

// breakerRank orders breaker states from best to worst, to report the worst of
// several transports' breakers for one endpoint.
func breakerRank(s gobreaker.State) int {
	switch s {
	case gobreaker.StateOpen:
		return 2
	case gobreaker.StateHalfOpen:
		return 1
	}
	return 0
}

func (m *Metrics) collectREST(ch chan<- prometheus.Metric, path *pathdialer.Path, rests []RESTSource) {
	var reads, readOK, readFail, breakerRej, subs, acked, unknown, notSent, halted float64
	for _, t := range rests {
		st := t.Stats()
		reads += float64(st.Reads.Load())
		readOK += float64(st.ReadSuccesses.Load())
		readFail += float64(st.ReadFailures.Load())
		breakerRej += float64(st.BreakerRejections.Load())
		subs += float64(st.Submissions.Load())
		acked += float64(st.Acknowledged.Load())
		unknown += float64(st.Unknown.Load())
		notSent += float64(st.NotSent.Load())
		halted += float64(st.Halted.Load())
	}
	c := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lv...)
	}
	c(m.d.restRequests, reads, "read")
	c(m.d.restRequests, subs, "submission")
	c(m.d.restOutcomes, readOK, "read", "success")
	c(m.d.restOutcomes, readFail, "read", "failure")
	c(m.d.restOutcomes, breakerRej, "read", "breaker_open")
	c(m.d.restOutcomes, acked, "submission", "acknowledged")
	c(m.d.restOutcomes, unknown, "submission", "unknown")
	c(m.d.restOutcomes, notSent, "submission", "not_sent")
	c(m.d.restOutcomes, halted, "submission", "halted")
	for _, ep := range path.Endpoints() {
		worst, found := gobreaker.StateClosed, false
		for _, t := range rests {
			if st, ok := t.BreakerState(ep.Name); ok {
				found = true
				if breakerRank(st) > breakerRank(worst) {
					worst = st
				}
			}
		}
		if !found {
			continue
		}
		for _, st := range breakerStates {
			ch <- prometheus.MustNewConstMetric(m.d.restBreaker, prometheus.GaugeValue, b2f(worst == st), ep.Name, ep.Region, label(st.String()))
		}
	}
}

func (m *Metrics) collectStreams(ch chan<- prometheus.Metric, path *pathdialer.Path, streams []StreamSource) {
	stats := make([]ws.Stats, len(streams))
	for i, s := range streams {
		stats[i] = s.Stats()
	}
	for _, c := range m.d.wsCounters {
		var v float64
		for _, st := range stats {
			v += c.val(st)
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, v)
	}
	for _, h := range wsHealths {
		n := 0
		for _, st := range stats {
			if st.Health == h {
				n++
			}
		}
		ch <- prometheus.MustNewConstMetric(m.d.wsHealth, prometheus.GaugeValue, float64(n), label(h.String()))
	}
	if path == nil {
		return
	}
	for _, ep := range path.Endpoints() {
		n := 0
		for _, st := range stats {
			if st.Endpoint == ep.Name {
				n++
			}
		}
		ch <- prometheus.MustNewConstMetric(m.d.wsConnected, prometheus.GaugeValue, float64(n), ep.Name, ep.Region)
	}
}
