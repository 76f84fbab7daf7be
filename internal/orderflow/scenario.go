package orderflow

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// Expect says whether a scenario must, may or must not produce something.
type Expect int

// Expectations.
const (
	May Expect = iota
	Must
	MustNot
)

// ErrUnknownFault: a fault kind the Scenario does not know.
var ErrUnknownFault = errors.New("orderflow: unknown fault kind")

// Scenario is a scripted outage of the simulated broker: a fault on every
// service of the primary region (both regions for "both"), and its recovery.
type Scenario struct {
	// Kind is one of FaultKinds.
	Kind string
	// Primary is the region the fault hits; Backup the other one ("both" hits
	// it too).
	Primary, Backup string
	// Faults are applied by Inject, per region and service.
	Faults map[string]map[simbroker.Service]simbroker.Fault
	// Failover, Failback and Halt are what the scenario should produce.
	Failover, Failback, Halt Expect
	// Explain is a sentence for the timeline: what the fault does and what
	// should follow.
	Explain string
}

// FaultKinds lists the scenario kinds, the default first.
func FaultKinds() []string {
	return []string{"blackhole", "down", "503", "latency", "partial", "unknown-outcome", "flapping", "both"}
}

// LatencyFault is the delay the "latency" scenario adds each way. With
// Timing.DegradedLatency below the probe's resulting latency and
// MaxDegradedDuration set, it fails over (the latency-aware rule).
const LatencyFault = 40 * time.Millisecond

// NewScenario returns the scenario of a kind, hitting primary (and backup for
// "both").
func NewScenario(kind, primary, backup string) (Scenario, error) {
	all := func(f simbroker.Fault) map[simbroker.Service]simbroker.Fault {
		m := map[simbroker.Service]simbroker.Fault{}
		for _, svc := range simbroker.Services {
			m[svc] = f
		}
		return m
	}
	s := Scenario{Kind: kind, Primary: primary, Backup: backup, Failover: Must, Failback: Must, Halt: MustNot}
	switch kind {
	case "blackhole":
		s.Faults = map[string]map[simbroker.Service]simbroker.Fault{primary: all(simbroker.Blackhole{})}
		s.Explain = primary + " blackholed: connections accepted, nothing answered (the worst case: no error, only silence)"
	case "down":
		s.Faults = map[string]map[simbroker.Service]simbroker.Fault{primary: all(simbroker.Down{})}
		s.Explain = primary + " down: every dial refused, live connections reset"
	case "503":
		s.Faults = map[string]map[simbroker.Service]simbroker.Fault{primary: {
			simbroker.REST: simbroker.Fault503{Until: time.Now().Add(time.Hour), RetryAfter: time.Second},
			simbroker.WS:   simbroker.Fault503{Until: time.Now().Add(time.Hour), RetryAfter: time.Second},
		}}
		s.Explain = primary + " answers 503 to every /v1 request (probe included) and to WebSocket handshakes; FIX is untouched"
	case "latency":
		s.Faults = map[string]map[simbroker.Service]simbroker.Fault{primary: all(simbroker.Latency{Delay: LatencyFault})}
		s.Failover, s.Failback = May, May
		s.Explain = fmt.Sprintf("%s slow: +%s each way on every chunk; a probe (fresh TLS) then takes a few round trips. "+
			"It fails over only if the probe misses its timeout or, with DegradedLatency/MaxDegradedDuration set, stays DEGRADED too long", primary, LatencyFault)
	case "partial":
		s.Faults = map[string]map[simbroker.Service]simbroker.Fault{primary: {
			simbroker.REST: simbroker.Partial{}, simbroker.WS: simbroker.Partial{}, simbroker.FIX: simbroker.Partial{},
		}}
		s.Failover, s.Failback = May, May
		s.Explain = primary + " partial: health probes (GET /v1/account) still answer 200 while order entry answers 503 and FIX orders are rejected. " +
			"The probe cannot see this; only the REST transport's passive signals (each 503 on an order is reported to the Path) can take " + primary +
			" DOWN, when FailureThreshold of them arrive in a row. That is a gray failure: the probe that passed cannot say when " + primary +
			" works again, so failback waits for the trade-path check (a DELETE of an order that does not exist: 404 when order entry works, " +
			"503 while it is broken) to pass, or for Timing.GrayFailbackWait times the number of such failures; no order goes to " + primary +
			" while it is still broken, and the timeline says why failback waited"
	case "unknown-outcome":
		s.Faults = map[string]map[simbroker.Service]simbroker.Fault{primary: {
			simbroker.REST: simbroker.UnknownOutcome{N: 3}, simbroker.FIX: simbroker.UnknownOutcome{N: 2},
		}}
		s.Failover, s.Failback = May, May
		s.Explain = primary + " is armed to book up to the next 3 REST and 2 FIX orders and cut each connection before answering: the client cannot know. " +
			"Each cut is also a failure the transports report to the Path, so FailureThreshold of them in a row take " + primary +
			" DOWN and flow fails over, after which orders no longer reach the armed fault: fewer may be cut (the summary counts them). " +
			"Every cut order goes to reconcile (at the switch, or in place) and is found booked; none is sent again"
	case "flapping":
		s.Faults = map[string]map[simbroker.Service]simbroker.Fault{primary: all(simbroker.Flap{Period: 700 * time.Millisecond, Fault: simbroker.Down{}})}
		s.Failback = May
		s.Explain = primary + " flapping: down and up every 700 ms. Failover is never gated; failback needs the cooldown and FailbackSuccessThreshold " +
			"successes in a row (more than a flap's up phase holds), each bounce (a failover soon after a failback) doubles the cooldown, " +
			"and the flap limiter suppresses failback after too many switches or FlapBounces bounces"
	case "both":
		s.Faults = map[string]map[simbroker.Service]simbroker.Fault{primary: all(simbroker.Blackhole{}), backup: all(simbroker.Blackhole{})}
		s.Failover, s.Failback, s.Halt = May, May, Must
		s.Explain = "both regions blackholed: nowhere to go, trading must HALT loudly (orders refused at once), then resume through reconcile"
	default:
		return Scenario{}, fmt.Errorf("%w %q (one of %s)", ErrUnknownFault, kind, strings.Join(FaultKinds(), ", "))
	}
	return s, nil
}

// Regions returns the regions the scenario hits, sorted with the primary first.
func (s Scenario) Regions() []string {
	var out []string
	for r := range s.Faults {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] == s.Primary || (out[j] != s.Primary && out[i] < out[j]) })
	return out
}

// injectOrder is the order in which Inject sets a region's services: the
// session connections (FIX, WebSocket) first. A region that dies takes every
// connection at once, but the relays are set one after another; with the
// order path first, a client that notices the failed orders at once can
// fence and send its farewell (a preserve-mode Logout that keeps the
// session's orders) through a session relay not yet down, a race no real
// outage has (seen on a loaded host: the broker cancelled nothing).
var injectOrder = []simbroker.Service{simbroker.FIX, simbroker.WS, simbroker.REST, simbroker.Probe}

// Inject applies the scenario's faults.
func (s Scenario) Inject(b *simbroker.Broker) error {
	for _, region := range s.Regions() {
		for _, svc := range injectOrder {
			if f, ok := s.Faults[region][svc]; ok {
				if err := b.SetFault(region, svc, f); err != nil {
					return fmt.Errorf("orderflow: inject %s on %s/%s: %w", f, region, svc, err)
				}
			}
		}
	}
	return nil
}

// Describe renders the faults, "eu: rest=blackhole probe=blackhole ...".
func (s Scenario) Describe() string {
	var parts []string
	for _, region := range s.Regions() {
		var fs []string
		for _, svc := range simbroker.Services {
			if f, ok := s.Faults[region][svc]; ok {
				fs = append(fs, fmt.Sprintf("%s=%s", svc, describeFault(f)))
			}
		}
		parts = append(parts, region+": "+strings.Join(fs, " "))
	}
	return strings.Join(parts, "; ")
}

// Recover clears every fault of one region.
func (s Scenario) Recover(b *simbroker.Broker, region string) error {
	for _, svc := range simbroker.Services {
		if err := b.SetFault(region, svc, simbroker.None{}); err != nil {
			return fmt.Errorf("orderflow: recover %s/%s: %w", region, svc, err)
		}
	}
	return nil
}

// describeFault renders a fault for a reader: a 503 burst with its
// Retry-After and how long it lasts, not a raw timestamp.
func describeFault(f simbroker.Fault) string {
	if f, ok := f.(simbroker.Fault503); ok {
		var parts []string
		if f.N > 0 {
			parts = append(parts, fmt.Sprintf("the next %d requests", f.N))
		}
		switch left := time.Until(f.Until); {
		case f.Until.IsZero():
		case left > 10*time.Minute:
			parts = append(parts, "until recovered")
		default:
			parts = append(parts, "for "+human(left.Round(time.Second)))
		}
		if f.RetryAfter > 0 {
			parts = append(parts, "Retry-After "+human(f.RetryAfter))
		}
		return "503 (" + strings.Join(parts, ", ") + ")"
	}
	return fmt.Sprint(f)
}
