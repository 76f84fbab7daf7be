package status

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// view is what the HTML template renders: strings ready to print.
type view struct {
	Title          string
	RefreshSeconds int
	Now            string

	Active     string
	Generation uint64
	Gate       string
	GateClass  string
	GateCause  string
	GateAge    string
	InFlight   int
	Unknown    int
	Halts      uint64
	Dropped    uint64

	MonitorInterval string
	MonitorAge      string
	MonitorStale    bool
	MaxHealthAge    string

	Endpoints []endpointView
	Switches  []decisionView
	Decisions []decisionView
	Events    []eventView
}

type endpointView struct {
	Name, Region        string
	Priority            int
	Primary, Active     bool
	Eligible, Fenced    bool
	State, StateClass   string
	Failures, Successes int
	Age                 string
	Stale               bool
	Latency             string
	Conns               int
	Services            string
	LastError           string
}

type decisionView struct {
	At, Kind, Outcome, OutcomeClass, From, To, Notes string
	Generation                                       uint64
}

type eventView struct {
	Time, Kind, Class, Text string
}

const clock = "15:04:05.000"

func newView(opts Options, s pathdialer.Snapshot, maxHealthAge time.Duration, texts []string) view {
	v := view{
		Title:          opts.Title,
		RefreshSeconds: int(opts.Refresh.Round(time.Second) / time.Second),
		Now:            s.Time.UTC().Format("2006-01-02 15:04:05.000 UTC"),
		Active:         s.Active,
		Generation:     s.Generation,
		Gate:           s.Gate.String(),
		GateClass:      gateClass(s.Gate),
		GateCause:      s.GateCause,
		InFlight:       s.InFlight,
		Unknown:        s.Unknown,
		Halts:          s.Halts,
		Dropped:        s.DroppedReports,
		MonitorStale:   s.Monitor.Stale,
		MaxHealthAge:   age(maxHealthAge),
	}
	if opts.Refresh > 0 && v.RefreshSeconds == 0 {
		v.RefreshSeconds = 1
	}
	if !s.GateSince.IsZero() {
		v.GateAge = age(s.Time.Sub(s.GateSince))
	}
	v.MonitorInterval = age(s.Monitor.Interval)
	if s.Monitor.LastRound.IsZero() {
		v.MonitorAge = "never"
	} else {
		v.MonitorAge = age(s.Time.Sub(s.Monitor.LastRound)) + " ago"
	}
	for _, e := range s.Endpoints {
		ev := endpointView{
			Name: e.Name, Region: e.Region, Priority: e.Priority, Primary: e.Primary,
			Active: e.Active, Eligible: e.Eligible, Fenced: e.Fenced,
			State: e.State.String(), StateClass: strings.ToLower(e.State.String()),
			Failures: e.ConsecutiveFailures, Successes: e.ConsecutiveSuccesses,
			Latency: age(e.LastLatency), Conns: e.Conns, LastError: e.LastProbeError,
		}
		if e.LastSuccess.IsZero() || e.LastSuccessAge < 0 {
			ev.Age, ev.Stale = "never", true
		} else {
			ev.Age = age(e.LastSuccessAge) + " ago"
			ev.Stale = maxHealthAge > 0 && e.LastSuccessAge > maxHealthAge
		}
		names := make([]string, 0, len(e.Services))
		for name := range e.Services {
			names = append(names, name)
		}
		slices.Sort(names)
		ev.Services = strings.Join(names, ", ")
		v.Endpoints = append(v.Endpoints, ev)
	}
	for i := len(s.Switches) - 1; i >= 0 && len(v.Switches) < 10; i-- {
		d := s.Switches[i]
		v.Switches = append(v.Switches, decisionView{
			At: d.At.UTC().Format(clock), Kind: kind(d.Failback), Outcome: d.Outcome.String(), OutcomeClass: "switched",
			From: d.From, To: d.To, Notes: strings.Join(d.Notes, "; "), Generation: d.Generation,
		})
	}
	for i := len(s.Events) - 1; i >= 0; i-- {
		e := s.Events[i]
		if e.Kind == pathdialer.EventDecision && e.Decision != nil && len(v.Decisions) < 10 {
			d := e.Decision
			v.Decisions = append(v.Decisions, decisionView{
				At: e.Time.UTC().Format(clock), Kind: kind(d.Failback), Outcome: d.Outcome.String(),
				OutcomeClass: outcomeClass(d.RequiresTradingHalt, d.Outcome.String()),
				From:         d.From, To: d.To, Notes: strings.Join(d.Notes, "; "), Generation: d.Generation,
			})
		}
		v.Events = append(v.Events, eventView{Time: e.Time.UTC().Format(clock), Kind: e.Kind.String(), Class: eventClass(e.Kind), Text: texts[i]})
	}
	return v
}

func kind(failback bool) string {
	if failback {
		return "failback"
	}
	return "failover"
}

func gateClass(g pathdialer.GateState) string {
	switch g {
	case pathdialer.GateOpen:
		return "good"
	case pathdialer.GateHeld:
		return "warn"
	case pathdialer.GateHalted:
		return "bad"
	}
	return "muted"
}

func outcomeClass(halt bool, outcome string) string {
	switch {
	case halt:
		return "bad"
	case outcome == "SWITCHED":
		return "good"
	}
	return "warn"
}

func eventClass(k pathdialer.EventKind) string {
	switch k {
	case pathdialer.EventHalt, pathdialer.EventFenceFailure, pathdialer.EventReconcileFailure,
		pathdialer.EventFlapSuppressed, pathdialer.EventMonitorStale, pathdialer.EventLateTicket:
		return "bad"
	case pathdialer.EventHold, pathdialer.EventDecision, pathdialer.EventStateChange:
		return "warn"
	case pathdialer.EventSwitch, pathdialer.EventRelease, pathdialer.EventResume:
		return "good"
	}
	return "muted"
}

// age renders a duration for humans: 3ms, 1.25s, 2m05s.
func age(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return d.Round(time.Minute).String()
}
