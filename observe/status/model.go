package status

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// report is the status in one unit and one key style: what the JSON carries
// (snake_case keys, durations in milliseconds with an _ms suffix, times in
// RFC 3339, unset times omitted) and what the HTML view is made from.
type report struct {
	Time           string           `json:"time"`
	Active         string           `json:"active"`
	Primary        string           `json:"primary"`
	Switches       uint64           `json:"switches"`
	OrderFlow      string           `json:"order_flow"` // OPEN, HELD, HALTED, NOT_STARTED, CLOSED
	OrderFlowWhy   string           `json:"order_flow_cause,omitempty"`
	OrderFlowSince string           `json:"order_flow_since,omitempty"`
	OrderFlowForMS *float64         `json:"order_flow_for_ms,omitempty"`
	Failback       failbackReport   `json:"failback"`
	Worst          *worstReport     `json:"worst_since_start,omitempty"`
	LastSwitch     *incidentReport  `json:"last_switch,omitempty"`
	Incidents      []incidentReport `json:"recent_switches,omitempty"`
	Orders         []ordersReport   `json:"orders"`
	Stream         *streamReport    `json:"stream,omitempty"`
	// Provisional lists the NOT_RECEIVED verdicts that are not final yet
	// (at most 50; ProvisionalCount counts them all).
	Provisional      []provisionalReport `json:"provisional,omitempty"`
	ProvisionalCount int                 `json:"provisional_count"`
	InFlight         int                 `json:"orders_in_flight"`
	Unknown          int                 `json:"orders_unknown"`
	Halts            uint64              `json:"halts"`
	DroppedReports   uint64              `json:"dropped_reports"`
	Monitor          monitorReport       `json:"monitor"`
	Endpoints        []endpointReport    `json:"endpoints"`
	Events           []eventReport       `json:"events"`
	Links            map[string]string   `json:"links,omitempty"`

	// FenceMode is how a switch leaves the old path and what that does to
	// resting orders; RestingCancelled counts the orders switches cancelled.
	FenceMode        string `json:"fence_mode"`
	RestingCancelled uint64 `json:"resting_cancelled"`
}

type failbackReport struct {
	// State: none (on the primary), waiting_for_recovery, waiting_for_stability,
	// cooldown, suppressed (a human should look), in_progress.
	State string `json:"state"`
	Text  string `json:"text"`
}

type incidentReport struct {
	From         string   `json:"from"`
	To           string   `json:"to,omitempty"`
	Kind         string   `json:"kind"` // failover, failback, halt
	InProgress   bool     `json:"in_progress"`
	TroubleAt    string   `json:"first_failed_probe_at,omitempty"`
	DownAt       string   `json:"declared_down_at,omitempty"`
	HeldAt       string   `json:"held_at,omitempty"`
	SwitchedAt   string   `json:"switched_at,omitempty"`
	ReleasedAt   string   `json:"released_at,omitempty"`
	TimeToDetect *float64 `json:"time_to_detect_ms,omitempty"`
	TimeToSwitch *float64 `json:"time_to_switch_ms,omitempty"`
	Held         *float64 `json:"held_ms,omitempty"`
	HeldWhy      []string `json:"held_because,omitempty"`
	// FenceMS and ReconcileMS split the hold: cutting the old path off, and
	// checking the orders of unknown fate with the broker.
	FenceMS     *float64 `json:"fence_ms,omitempty"`
	ReconcileMS *float64 `json:"reconcile_ms,omitempty"`
	// HeldByService is each service's own hold when services are released
	// one by one.
	HeldByService []serviceHeldReport       `json:"held_by_service,omitempty"`
	Halted        bool                      `json:"halted"`
	Reconciled    map[string]int            `json:"reconciled,omitempty"`
	Settled       map[string]map[string]int `json:"settled,omitempty"`
}

// worstReport is the worst since the Recorder started (needs a Recorder).
type worstReport struct {
	Halts          int      `json:"halts"`
	HaltedMS       float64  `json:"halted_ms"`
	LongestHaltMS  float64  `json:"longest_halt_ms"`
	LastHaltAt     string   `json:"last_halt_at,omitempty"`
	HaltedNow      bool     `json:"halted_now"`
	LongestHoldMS  *float64 `json:"longest_hold_ms,omitempty"`
	LongestHoldWas string   `json:"longest_hold_was,omitempty"`
}

type serviceHeldReport struct {
	Service string  `json:"service"`
	HeldMS  float64 `json:"held_ms"`
}

// provisionalReport is one NOT_RECEIVED verdict not yet final.
type provisionalReport struct {
	OrderID     string   `json:"order_id,omitempty"` // only with Options.ShowOrderIDs
	Service     string   `json:"service"`
	Endpoint    string   `json:"endpoint"`
	FoundAt     string   `json:"found_at,omitempty"`
	RequeryAt   string   `json:"requery_at,omitempty"`
	RequeryInMS *float64 `json:"requery_in_ms,omitempty"`
}

type ordersReport struct {
	Transport  string         `json:"transport"`
	Sent       *uint64        `json:"sent,omitempty"`
	Answered   *uint64        `json:"answered,omitempty"`
	Refused    *uint64        `json:"refused,omitempty"` // not sent: trading halted, ticket expired, no connection
	UnknownNow int            `json:"unknown_now"`
	Reconciled int            `json:"reconciled"`
	Settled    map[string]int `json:"settled,omitempty"`
}

type streamReport struct {
	Endpoint         string   `json:"endpoint,omitempty"`
	Messages         uint64   `json:"messages"`
	TicksMissed      *uint64  `json:"ticks_missed,omitempty"`
	LongestSilenceMS *float64 `json:"longest_silence_ms,omitempty"`
	Reconnects       uint64   `json:"reconnects"`
	Resumes          uint64   `json:"resumes"`
	Snapshots        uint64   `json:"snapshots"`
	DisconnectedMS   float64  `json:"disconnected_ms"`
}

type monitorReport struct {
	IntervalMS float64 `json:"interval_ms"`
	LastRound  string  `json:"last_round,omitempty"`
	Stale      bool    `json:"stale"`
}

type endpointReport struct {
	Name                 string   `json:"name"`
	Region               string   `json:"region"`
	Priority             int      `json:"priority"`
	Primary              bool     `json:"primary"`
	Active               bool     `json:"active"`
	State                string   `json:"state"`
	Eligible             bool     `json:"eligible"`
	Fenced               bool     `json:"fenced"`
	ConsecutiveFailures  int      `json:"consecutive_failures"`
	ConsecutiveSuccesses int      `json:"consecutive_successes"`
	LastProbeError       string   `json:"last_probe_error,omitempty"`
	LastSuccess          string   `json:"last_success,omitempty"`
	LastSuccessAgeMS     *float64 `json:"last_success_age_ms,omitempty"`
	LastLatencyMS        float64  `json:"last_latency_ms"`
	Connections          int      `json:"connections"`
	Services             []string `json:"services"`
	Verified             bool     `json:"verified"`
	VerifiedAt           string   `json:"verified_at,omitempty"`
	IdentityMismatch     bool     `json:"identity_mismatch"`
	IdentityError        string   `json:"identity_error,omitempty"`
}

type eventReport struct {
	Time     string                  `json:"time"`
	Kind     string                  `json:"kind"`
	Endpoint string                  `json:"endpoint,omitempty"`
	From     string                  `json:"from,omitempty"`
	To       string                  `json:"to,omitempty"`
	Text     string                  `json:"text"`
	Orders   []pathdialer.TicketInfo `json:"orders,omitempty"`
	Settled  []pathdialer.Settlement `json:"settled,omitempty"`
}

// ms renders a duration in milliseconds, to 0.1 ms.
func ms(d time.Duration) float64 {
	return float64(d.Round(100*time.Microsecond)) / float64(time.Millisecond)
}

func msp(d time.Duration) *float64 { v := ms(d); return &v }

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func u64(v uint64) *uint64 { return &v }

// sources is everything a report is made from.
type sources struct {
	snap    pathdialer.Snapshot
	unknown []pathdialer.TicketInfo
	engine  engine.Config
	opts    Options
	rec     *Recorder
}

func build(src sources) report {
	s, opts := src.snap, src.opts
	r := report{
		Time: stamp(s.Time), Active: s.Active, Switches: s.Token, OrderFlow: s.Gate.String(),
		OrderFlowWhy: s.GateCause, InFlight: s.InFlight, Unknown: s.Unknown, Halts: s.Halts,
		DroppedReports: s.DroppedReports,
		Monitor:        monitorReport{IntervalMS: ms(s.Monitor.Interval), LastRound: stamp(s.Monitor.LastRound), Stale: s.Monitor.Stale},
		Links:          map[string]string{"json": opts.JSONURL},
	}
	r.FenceMode = fmt.Sprintf("%s (%s): %s", s.Fence.Mode, s.Fence.Chosen, s.Fence.Effect)
	r.RestingCancelled = s.RestingCancelled
	if opts.MetricsURL != "" {
		r.Links["metrics"] = opts.MetricsURL
	}
	if s.Gate != pathdialer.GateOpen && !s.GateSince.IsZero() {
		r.OrderFlowSince = stamp(s.GateSince)
		r.OrderFlowForMS = msp(s.Time.Sub(s.GateSince))
	}
	var primary *pathdialer.EndpointSnapshot
	for i, e := range s.Endpoints {
		if e.Primary {
			primary = &s.Endpoints[i]
			r.Primary = e.Name
		}
		er := endpointReport{
			Name: e.Name, Region: e.Region, Priority: e.Priority, Primary: e.Primary, Active: e.Active,
			State: e.State.String(), Eligible: e.Eligible, Fenced: e.Fenced,
			ConsecutiveFailures: e.ConsecutiveFailures, ConsecutiveSuccesses: e.ConsecutiveSuccesses,
			LastProbeError: e.LastProbeError, LastSuccess: stamp(e.LastSuccess), LastLatencyMS: ms(e.LastLatency),
			Connections: e.Conns, Services: slices.Sorted(maps.Keys(e.Services)),
			Verified: e.Verified, VerifiedAt: stamp(e.VerifiedAt), IdentityMismatch: e.IdentityMismatch, IdentityError: e.IdentityError,
		}
		if !e.LastSuccess.IsZero() && e.LastSuccessAge >= 0 {
			er.LastSuccessAgeMS = msp(e.LastSuccessAge)
		}
		r.Endpoints = append(r.Endpoints, er)
	}

	var (
		incidents []incident
		open      *incident
		handed    = map[string]int{}
		settled   = map[string]map[string]int{}
		fbDec     *engine.Decision
	)
	if src.rec != nil {
		incidents, open, handed, settled, fbDec = src.rec.view()
	}
	if fbDec == nil {
		// Without a Recorder, the last failback verdict among the recent events.
		for i := len(s.Events) - 1; i >= 0; i-- {
			if d := s.Events[i].Decision; d != nil && d.Failback {
				fbDec = d
				break
			}
		}
	}
	r.Failback = failback(s, primary, fbDec, src.engine)
	if src.rec != nil {
		w := src.rec.worstView()
		if w.Halts > 0 || w.LongestHold > 0 {
			wr := &worstReport{Halts: w.Halts, HaltedMS: ms(w.Halted), LongestHaltMS: ms(w.LongestHalt), LastHaltAt: stamp(w.LastHaltAt),
				HaltedNow: !w.HaltOpen.IsZero(), LongestHoldWas: w.LongestHoldWhat}
			if !w.HaltOpen.IsZero() { // the halt in progress counts up to now
				d := max(s.Time.Sub(w.HaltOpen), 0)
				wr.HaltedMS, wr.LongestHaltMS = ms(w.Halted+d), ms(max(w.LongestHalt, d))
			}
			if w.LongestHold > 0 {
				wr.LongestHoldMS = msp(w.LongestHold)
			}
			r.Worst = wr
		}
	}

	if open != nil {
		ir := incidentOf(*open, true)
		r.LastSwitch = &ir
	}
	for i := len(incidents) - 1; i >= 0 && len(r.Incidents) < 10; i-- {
		ir := incidentOf(incidents[i], false)
		if r.LastSwitch == nil {
			r.LastSwitch = &ir
		}
		r.Incidents = append(r.Incidents, ir)
	}

	r.ProvisionalCount = s.ProvisionalCount
	for _, v := range s.Provisional {
		if len(r.Provisional) == maxProvisionalShown {
			break
		}
		pr := provisionalReport{Service: v.Service, Endpoint: v.Endpoint, FoundAt: stamp(v.FoundAt), RequeryAt: stamp(v.RequeryAt)}
		if opts.ShowOrderIDs {
			pr.OrderID = v.OrderID
		}
		if !v.RequeryAt.IsZero() {
			pr.RequeryInMS = msp(max(v.RequeryAt.Sub(s.Time), 0))
		}
		r.Provisional = append(r.Provisional, pr)
	}

	// Orders per transport: the transports' counters, the orders unknown now,
	// and what reconciliation found.
	unknownNow := map[string]int{}
	for _, t := range src.unknown {
		unknownNow[t.Service]++
	}
	row := func(name string) ordersReport {
		return ordersReport{Transport: name, UnknownNow: unknownNow[name], Reconciled: handed[name], Settled: settled[name]}
	}
	seen := map[string]bool{}
	if opts.REST != nil {
		st := opts.REST.Stats()
		o := row(pathdialer.ServiceREST)
		o.Sent, o.Answered = u64(st.Submissions.Load()), u64(st.Acknowledged.Load())
		o.Refused = u64(st.NotSent.Load() + st.Halted.Load())
		r.Orders, seen[o.Transport] = append(r.Orders, o), true
	}
	if opts.FIX != nil {
		st := opts.FIX.Stats()
		o := row(pathdialer.ServiceFIX)
		o.Sent, o.Answered, o.Refused = u64(st.Orders.Load()), u64(st.Answered.Load()), u64(st.NotSent.Load())
		r.Orders, seen[o.Transport] = append(r.Orders, o), true
	}
	var others []string
	for _, m := range []map[string]int{unknownNow, handed} {
		for k := range m {
			others = append(others, k)
		}
	}
	for k := range settled {
		others = append(others, k)
	}
	slices.Sort(others)
	for _, k := range slices.Compact(others) {
		if !seen[k] {
			r.Orders = append(r.Orders, row(k))
		}
	}

	if opts.Stream != nil || opts.Ticks != nil {
		sr := &streamReport{}
		if opts.Stream != nil {
			st := opts.Stream.Stats()
			sr.Endpoint, sr.Messages, sr.Reconnects = st.Endpoint, st.Messages, st.Reconnects
			sr.Resumes, sr.Snapshots, sr.DisconnectedMS = st.Resumes, st.Snapshots, ms(st.Disconnected)
		}
		if opts.Ticks != nil {
			c := opts.Ticks.Counts()
			sr.TicksMissed, sr.LongestSilenceMS = u64(c.Missed), msp(c.LongestSilence)
			if opts.Stream == nil {
				sr.Messages = c.Messages
			}
		}
		r.Stream = sr
	}

	for i := len(s.Events) - 1; i >= 0; i-- {
		e := s.Events[i]
		er := eventReport{Time: stamp(e.Time), Kind: e.Kind.String(), Endpoint: e.Endpoint, From: e.From, To: e.To, Text: describe(e)}
		if opts.ShowOrderIDs {
			er.Orders, er.Settled = e.Tickets, e.Settlements
		}
		r.Events = append(r.Events, er)
	}
	return r
}

// maxProvisionalShown bounds the provisional verdicts on the page and in
// the JSON.
const maxProvisionalShown = 50

func incidentOf(in incident, inProgress bool) incidentReport {
	ir := incidentReport{
		From: in.From, To: in.To, Kind: "failover", InProgress: inProgress,
		TroubleAt: stamp(in.TroubleAt), DownAt: stamp(in.DownAt), HeldAt: stamp(in.HeldAt),
		SwitchedAt: stamp(in.SwitchedAt), ReleasedAt: stamp(in.ReleasedAt),
		HeldWhy: slices.Clone(in.Causes), Halted: in.Halted, Reconciled: in.Handed, Settled: in.Settled,
	}
	if in.FenceTook > 0 {
		ir.FenceMS = msp(in.FenceTook)
	}
	if in.RecTook > 0 {
		ir.ReconcileMS = msp(in.RecTook)
	}
	for _, h := range in.ServiceHeld {
		ir.HeldByService = append(ir.HeldByService, serviceHeldReport{Service: h.Service, HeldMS: ms(h.Held)})
	}
	// Where the held time went.
	if in.FenceTook > 0 {
		ir.HeldWhy = append(ir.HeldWhy, fmt.Sprintf("cutting %s off took %s", in.From, human(in.FenceTook)))
	}
	if in.RecSlowestTook > 0 {
		what := "order(s)"
		if in.RecSlowest != "" {
			what = in.RecSlowest + " order(s)"
		}
		why := fmt.Sprintf("checking %d %s with the broker took %s", in.RecSlowestOrders, what, human(in.RecSlowestTook))
		if in.RecFailed > 0 {
			why += fmt.Sprintf(" (%d failed attempt(s): %s)", in.RecFailed, strings.Join(in.RecErrors, "; "))
		}
		ir.HeldWhy = append(ir.HeldWhy, why)
	}
	switch {
	case in.Failback:
		ir.Kind = "failback"
	case in.To == "" || in.To == in.From:
		ir.Kind = "halt"
	}
	if !in.TroubleAt.IsZero() && !in.DownAt.IsZero() {
		ir.TimeToDetect = msp(in.DownAt.Sub(in.TroubleAt))
	}
	if !in.SwitchedAt.IsZero() {
		from := in.DownAt
		if from.IsZero() {
			from = in.DecidedAt
		}
		if !from.IsZero() {
			ir.TimeToSwitch = msp(in.SwitchedAt.Sub(from))
		}
	}
	if !in.ReleasedAt.IsZero() {
		ir.Held = msp(in.Held)
	}
	return ir
}

// failback says, in words, where the way back to the primary stands.
func failback(s pathdialer.Snapshot, primary *pathdialer.EndpointSnapshot, d *engine.Decision, cfg engine.Config) failbackReport {
	if primary == nil || primary.Active {
		return failbackReport{State: "none", Text: "on the primary: nothing to fail back"}
	}
	name := primary.Name
	if s.Gate == pathdialer.GateHeld && len(s.Switches) > 0 && s.Switches[len(s.Switches)-1].Failback {
		return failbackReport{State: "in_progress", Text: "failing back to " + name}
	}
	if primary.State != engine.Healthy {
		return failbackReport{State: "waiting_for_recovery", Text: fmt.Sprintf("waiting for %s to recover (%s)", name, primary.State)}
	}
	if d != nil && d.Outcome == engine.FlapSuppressed {
		return failbackReport{State: "suppressed", Text: fmt.Sprintf("failback to %s suppressed: too many switches recently; a human should look at %s", name, name)}
	}
	if need := cfg.FailbackSuccessThreshold; primary.ConsecutiveSuccesses < need {
		return failbackReport{State: "waiting_for_stability", Text: fmt.Sprintf("%s is healthy again: %d of %d probes in a row so far", name, primary.ConsecutiveSuccesses, need)}
	}
	if d != nil && d.Outcome == engine.CooldownActive {
		return failbackReport{State: "cooldown", Text: fmt.Sprintf("%s is healthy again; failing back once %s have passed since the last switch", name, human(cfg.Cooldown))}
	}
	return failbackReport{State: "waiting_for_stability", Text: fmt.Sprintf("%s is healthy again; failing back at the next evaluation", name)}
}

// describe says what an event means, in plain words.
func describe(e pathdialer.Event) string {
	why := func(s string) string {
		if e.Cause != "" {
			s += ": " + e.Cause
		}
		if e.Error != "" {
			s += ": " + e.Error
		}
		return s
	}
	attempt := ""
	if e.Attempt > 1 {
		attempt = fmt.Sprintf(" (attempt %d)", e.Attempt)
	}
	switch e.Kind {
	case pathdialer.EventProbe:
		if e.Error != "" {
			return why(e.Endpoint + " probe failed")
		}
		return e.Endpoint + " probe answered in " + human(e.Duration)
	case pathdialer.EventStateChange:
		return fmt.Sprintf("%s went from %s to %s", e.Endpoint, e.PrevState, e.State)
	case pathdialer.EventDecision:
		if e.Decision == nil {
			return "decision"
		}
		return decisionText(*e.Decision)
	case pathdialer.EventHold:
		return why("orders held")
	case pathdialer.EventFenceStart:
		return fmt.Sprintf("cutting %s off%s", e.Endpoint, attempt)
	case pathdialer.EventFenceSuccess:
		return fmt.Sprintf("%s cut off (its connections closed, new ones refused) in %s", e.Endpoint, human(e.Duration))
	case pathdialer.EventFenceFailure:
		return why(fmt.Sprintf("cutting %s off failed%s", e.Endpoint, attempt))
	case pathdialer.EventSwitch:
		return fmt.Sprintf("orders now go to %s instead of %s (switch #%d)", e.To, e.From, e.Token)
	case pathdialer.EventReconcileStart:
		return fmt.Sprintf("asking the broker about %d order(s) whose outcome is unknown%s", len(e.Tickets), attempt)
	case pathdialer.EventReconcileSuccess:
		fates := map[string]int{}
		for _, st := range e.Settlements {
			fates[st.Service+" "+strings.ReplaceAll(strings.ToLower(st.Fate.String()), "_", " ")]++
		}
		parts := []string{}
		for _, k := range slices.Sorted(maps.Keys(fates)) {
			parts = append(parts, fmt.Sprintf("%d %s", fates[k], k))
		}
		s := fmt.Sprintf("broker's answer in %s", human(e.Duration))
		if len(parts) > 0 {
			s += ": " + strings.Join(parts, ", ")
		} else {
			s += ": nothing to settle"
		}
		return s
	case pathdialer.EventReconcileFailure:
		return why("asking the broker about unknown orders failed" + attempt)
	case pathdialer.EventRelease:
		return fmt.Sprintf("orders flow again on %s after %s held", e.Endpoint, human(e.Duration))
	case pathdialer.EventHalt:
		return why("trading halted: orders are refused at once")
	case pathdialer.EventResume:
		return why("leaving the halt")
	case pathdialer.EventFlapSuppressed:
		return why("failback suppressed: too many switches recently; a human should look at the primary")
	case pathdialer.EventMonitorStale:
		return why("health of the active endpoint is stale")
	case pathdialer.EventUnfence:
		return e.Endpoint + " is no longer cut off"
	case pathdialer.EventLateTicket:
		return why("an order on " + e.Endpoint + " was answered after it was handed to the broker check")
	case pathdialer.EventIdentity:
		if e.Error != "" {
			return why(e.Endpoint + " fronts a different account")
		}
		return e.Endpoint + " verified: it fronts the expected account"
	case pathdialer.EventDegraded:
		return why("read-only mode")
	}
	return e.String()
}

func decisionText(d engine.Decision) string {
	switch d.Outcome {
	case engine.FenceRequired:
		return fmt.Sprintf("decided to move orders from %s to %s; cutting %s off first", d.From, d.To, d.From)
	case engine.Switched:
		return fmt.Sprintf("switched from %s to %s", d.From, d.To)
	case engine.NoTargetAvailable:
		return fmt.Sprintf("%s is down and no other endpoint is healthy: trading halted", d.From)
	case engine.CooldownActive:
		return fmt.Sprintf("not failing back to %s yet: too soon after the last switch", d.To)
	case engine.PrimaryNotStable:
		return fmt.Sprintf("not failing back to %s yet: not healthy for long enough", d.To)
	case engine.FlapSuppressed:
		return fmt.Sprintf("not failing back to %s: too many switches recently; a human should look", d.To)
	}
	return d.Outcome.String()
}

// human renders a duration for people: "0.4 ms", "68 ms", "1.2 s", "12 s",
// "1 m", "2 m 5 s", "1 h 3 m".
func human(d time.Duration) string {
	switch {
	case d <= 0:
		return "0 ms"
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Round(time.Millisecond)/time.Millisecond)
	case d < 10*time.Second:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", d.Seconds()), ".0") + " s"
	case d < time.Minute:
		return fmt.Sprintf("%d s", d.Round(time.Second)/time.Second)
	case d < time.Hour:
		d = d.Round(time.Second)
		m, s := d/time.Minute, d%time.Minute/time.Second
		if s == 0 {
			return fmt.Sprintf("%d m", m)
		}
		return fmt.Sprintf("%d m %d s", m, s)
	}
	d = d.Round(time.Minute)
	h, m := d/time.Hour, d%time.Hour/time.Minute
	if m == 0 {
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d m", h, m)
}
