package status

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// view is what the HTML template renders: strings ready to print.
type view struct {
	Title          string
	RefreshSeconds int
	Now            string
	JSONURL        string
	MetricsURL     string

	Active      string
	Switches    uint64
	Flow        string // "orders flowing", "orders held", "trading halted"
	FlowClass   string
	FlowFor     string
	FlowCause   string
	Failback    string
	FailbackCls string

	Worst     []worstLine
	Last      *incidentView
	Incidents []incidentView
	Orders    []ordersView
	Stream    *streamView

	Provisional      []provisionalView
	ProvisionalCount int
	ProvisionalMore  int // listed beyond the page's bound
	// ProvisionalHidden: order IDs hidden (Options.ShowOrderIDs is off).
	ProvisionalHidden bool

	InFlight, Unknown int
	Halts, Dropped    uint64
	FenceMode         string
	RestingCancelled  uint64

	MonitorInterval string
	MonitorAge      string
	MonitorStale    bool
	MaxHealthAge    string

	Endpoints []endpointView
	Events    []eventView
}

type incidentView struct {
	Title, Kind, At      string
	InProgress, Halted   bool
	Detect, Switch, Held string
	DetectFrom           string
	Why                  []string
	Reconciled           string
	// Steps: first failed probe, declared down, switched, released, each
	// with its time. HeldSplit: where the hold went; HeldBy: each service's.
	Steps     []string
	HeldSplit string
	HeldBy    string
}

// worstLine is one line of the worst since start.
type worstLine struct {
	Text, Class string
}

type provisionalView struct {
	Order, Service, Endpoint, Found, Requery string
}

type ordersView struct {
	Transport                        string
	Sent, Answered, Refused, Unknown string
	Reconciled                       string
	Settled                          string
}

type streamView struct {
	Endpoint, Messages, Missed, Silence, Reconnects, Resumes, Snapshots, Disconnected string
}

type endpointView struct {
	Name, Region        string
	Active              bool
	State, StateClass   string
	Failures, Successes int
	Age                 string
	Stale               bool
	Latency             string
	Conns               int
	Notes               []string
	Fenced              bool
	LastError           string
}

type eventView struct {
	Time, Kind, Class, Text string
}

const clock = "15:04:05.000"

func newView(opts Options, r report, maxHealthAge time.Duration) view {
	v := view{
		Title: opts.Title, RefreshSeconds: int(opts.Refresh.Round(time.Second) / time.Second),
		JSONURL: r.Links["json"], MetricsURL: r.Links["metrics"],
		Active: r.Active, Switches: r.Switches, FlowCause: r.OrderFlowWhy,
		Failback: r.Failback.Text, FailbackCls: failbackClass(r.Failback.State),
		InFlight: r.InFlight, Unknown: r.Unknown, Halts: r.Halts, Dropped: r.DroppedReports,
		FenceMode: r.FenceMode, RestingCancelled: r.RestingCancelled,
		MonitorStale: r.Monitor.Stale, MonitorInterval: humanMS(r.Monitor.IntervalMS), MaxHealthAge: human(maxHealthAge),
	}
	now, _ := time.Parse(time.RFC3339Nano, r.Time)
	v.Now = now.Format("2006-01-02 15:04:05 UTC")
	if opts.Refresh > 0 && v.RefreshSeconds == 0 {
		v.RefreshSeconds = 1
	}
	switch r.OrderFlow {
	case "OPEN":
		v.Flow, v.FlowClass = "orders flowing", "good"
	case "HELD":
		v.Flow, v.FlowClass = "orders held", "warn"
	case "HALTED":
		v.Flow, v.FlowClass = "trading halted: orders refused", "bad"
	case "NOT_STARTED":
		v.Flow, v.FlowClass = "not started", "muted"
	default:
		v.Flow, v.FlowClass = "closed", "muted"
	}
	if r.OrderFlowForMS != nil {
		v.FlowFor = humanMS(*r.OrderFlowForMS)
	}
	if t, err := time.Parse(time.RFC3339Nano, r.Monitor.LastRound); err == nil {
		v.MonitorAge = human(now.Sub(t)) + " ago"
	} else {
		v.MonitorAge = "never"
	}
	if n := r.ProvisionalCount; n > 0 {
		// The real risk for a trader leads: orders that may yet be booked.
		l := fmt.Sprintf("%d order%s NOT_RECEIVED only provisionally: a copy sent through the old path may still be booked (listed below)", n, plural(n))
		v.Worst = append(v.Worst, worstLine{Text: l, Class: "bad"})
	}
	if w := r.Worst; w != nil {
		if w.Halts > 0 {
			l := fmt.Sprintf("trading halted %d× since start (orders refused at once) — %s in all, longest %s", w.Halts, humanMS(w.HaltedMS), humanMS(w.LongestHaltMS))
			if t, err := time.Parse(time.RFC3339Nano, w.LastHaltAt); err == nil {
				l += ", last at " + t.Format(clock) + " UTC"
			}
			if w.HaltedNow {
				l += " — HALTED NOW"
			}
			v.Worst = append(v.Worst, worstLine{Text: l, Class: "bad"})
		}
		if w.LongestHoldMS != nil {
			c := "good"
			if *w.LongestHoldMS >= 1000 {
				c = "warn"
			}
			v.Worst = append(v.Worst, worstLine{Text: fmt.Sprintf("longest hold: orders waited %s (%s)", humanMS(*w.LongestHoldMS), w.LongestHoldWas), Class: c})
		}
	}
	if r.LastSwitch != nil {
		iv := newIncidentView(*r.LastSwitch)
		v.Last = &iv
	}
	for _, in := range r.Incidents {
		v.Incidents = append(v.Incidents, newIncidentView(in))
	}
	for _, o := range r.Orders {
		ov := ordersView{Transport: o.Transport, Sent: count(o.Sent), Answered: count(o.Answered), Refused: count(o.Refused),
			Unknown: fmt.Sprint(o.UnknownNow), Reconciled: fmt.Sprint(o.Reconciled), Settled: fates(o.Settled)}
		v.Orders = append(v.Orders, ov)
	}
	if s := r.Stream; s != nil {
		sv := &streamView{Endpoint: s.Endpoint, Messages: fmt.Sprint(s.Messages), Missed: count(s.TicksMissed), Silence: "—",
			Reconnects: fmt.Sprint(s.Reconnects), Resumes: fmt.Sprint(s.Resumes), Snapshots: fmt.Sprint(s.Snapshots),
			Disconnected: humanMS(s.DisconnectedMS)}
		if s.LongestSilenceMS != nil {
			sv.Silence = humanMS(*s.LongestSilenceMS)
		}
		if sv.Endpoint == "" {
			sv.Endpoint = "not connected"
		}
		v.Stream = sv
	}
	for _, e := range r.Endpoints {
		ev := endpointView{
			Name: e.Name, Region: e.Region, Active: e.Active, State: e.State, StateClass: strings.ToLower(e.State),
			Failures: e.ConsecutiveFailures, Successes: e.ConsecutiveSuccesses, Latency: humanMS(e.LastLatencyMS),
			Conns: e.Connections, Fenced: e.Fenced, LastError: e.LastProbeError,
		}
		if e.LastSuccessAgeMS == nil {
			ev.Age, ev.Stale = "never", true
		} else {
			ev.Age = humanMS(*e.LastSuccessAgeMS) + " ago"
			ev.Stale = maxHealthAge > 0 && *e.LastSuccessAgeMS > ms(maxHealthAge)
		}
		if e.Primary {
			ev.Notes = append(ev.Notes, "primary")
		}
		if e.Eligible {
			ev.Notes = append(ev.Notes, "can take orders")
		}
		if e.Verified {
			ev.Notes = append(ev.Notes, "account verified")
		}
		if e.IdentityMismatch {
			ev.Notes = append(ev.Notes, "WRONG ACCOUNT")
		}
		v.Endpoints = append(v.Endpoints, ev)
	}
	v.ProvisionalCount = r.ProvisionalCount
	v.ProvisionalMore = r.ProvisionalCount - len(r.Provisional)
	for _, p := range r.Provisional {
		pv := provisionalView{Order: p.OrderID, Service: p.Service, Endpoint: p.Endpoint, Requery: "—"}
		if pv.Order == "" {
			pv.Order, v.ProvisionalHidden = "(hidden)", true
		}
		if t, err := time.Parse(time.RFC3339Nano, p.FoundAt); err == nil {
			pv.Found = t.Format(clock)
		}
		if p.RequeryInMS != nil {
			pv.Requery = "due in " + humanMS(*p.RequeryInMS)
		}
		v.Provisional = append(v.Provisional, pv)
	}
	for _, e := range r.Events {
		t, _ := time.Parse(time.RFC3339Nano, e.Time)
		v.Events = append(v.Events, eventView{Time: t.Format(clock), Kind: e.Kind, Class: eventClass(e.Kind), Text: e.Text})
	}
	return v
}

func newIncidentView(in incidentReport) incidentView {
	iv := incidentView{Kind: in.Kind, InProgress: in.InProgress, Halted: in.Halted, Why: in.HeldWhy,
		Detect: "—", Switch: "—", Held: "—"}
	switch in.Kind {
	case "halt":
		iv.Title = "trading halted on " + in.From
	default:
		iv.Title = fmt.Sprintf("%s from %s to %s", in.Kind, in.From, in.To)
	}
	// The incident's time is the switch's; until there is one (a halt, a
	// switch in progress), its first sign's.
	for _, at := range []string{in.SwitchedAt, in.TroubleAt, in.DownAt, in.HeldAt} {
		if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
			iv.At = t.Format(clock)
			break
		}
	}
	for _, st := range []struct{ name, at string }{
		{"first failed probe", in.TroubleAt}, {"declared down", in.DownAt}, {"orders held", in.HeldAt},
		{"switched", in.SwitchedAt}, {"orders released", in.ReleasedAt},
	} {
		if t, err := time.Parse(time.RFC3339Nano, st.at); err == nil {
			iv.Steps = append(iv.Steps, st.name+" "+t.Format(clock))
		}
	}
	var split []string
	if in.FenceMS != nil {
		split = append(split, fmt.Sprintf("cutting %s off %s", in.From, humanMS(*in.FenceMS)))
	}
	if in.ReconcileMS != nil {
		n := 0
		for _, c := range in.Reconciled {
			n += c
		}
		split = append(split, fmt.Sprintf("checking %d order(s) with the broker %s", n, humanMS(*in.ReconcileMS)))
	}
	iv.HeldSplit = strings.Join(split, " · ")
	var by []string
	for _, h := range in.HeldByService {
		by = append(by, h.Service+" "+humanMS(h.HeldMS))
	}
	iv.HeldBy = strings.Join(by, " · ")
	if in.TimeToDetect != nil {
		iv.Detect = humanMS(*in.TimeToDetect)
	} else if in.Kind == "failback" {
		iv.Detect = "not a fault"
	}
	if in.TimeToSwitch != nil {
		iv.Switch = humanMS(*in.TimeToSwitch)
	}
	switch {
	case in.Held != nil:
		iv.Held = humanMS(*in.Held)
	case in.InProgress:
		iv.Held = "still held"
	}
	var parts []string
	for _, svc := range slices.Sorted(maps.Keys(in.Reconciled)) {
		p := fmt.Sprintf("%s %d", svc, in.Reconciled[svc])
		if f := fates(in.Settled[svc]); f != "—" {
			p += " (" + f + ")"
		}
		parts = append(parts, p)
	}
	iv.Reconciled = strings.Join(parts, "; ")
	if iv.Reconciled == "" {
		iv.Reconciled = "none"
	}
	return iv
}

// fates renders {"FILLED": 2, "NOT_RECEIVED": 1} as "2 filled, 1 not received".
func fates(m map[string]int) string {
	if len(m) == 0 {
		return "—"
	}
	var parts []string
	for _, f := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[f], strings.ReplaceAll(strings.ToLower(f), "_", " ")))
	}
	return strings.Join(parts, ", ")
}

func count(p *uint64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprint(*p)
}

func humanMS(v float64) string { return human(time.Duration(v * float64(time.Millisecond))) }

func failbackClass(state string) string {
	switch state {
	case "none":
		return "good"
	case "suppressed":
		return "bad"
	}
	return "warn"
}

func eventClass(kind string) string {
	switch kind {
	case "halt", "fence-failed", "reconcile-failed", "flap-suppressed", "monitor-stale", "late-ticket":
		return "bad"
	case "hold", "decision", "state":
		return "warn"
	case "switch", "release", "resume":
		return "good"
	}
	return "muted"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
