package dst

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// FaultKind is one kind of fault a Scenario schedules.
type FaultKind string

// Fault kinds: the network kinds of faultnet, on one region's trading
// services or on its probe only, and the broker's unknown-outcome fault.
const (
	FaultDown      FaultKind = "down"      // rest, probe and ws refuse and reset
	FaultBlackhole FaultKind = "blackhole" // rest, probe and ws go silent (held)
	FaultLatency   FaultKind = "latency"   // rest, probe and ws slow
	FaultReset     FaultKind = "reset"     // live rest, probe and ws connections reset once
	FaultPartition FaultKind = "partition" // the probe only is blackholed (monitor-only partition)
	FaultUnknown   FaultKind = "unknown"   // the next N REST orders are booked, then the answer is cut
)

var faultKinds = []FaultKind{FaultDown, FaultBlackhole, FaultLatency, FaultReset, FaultPartition, FaultUnknown}

// ScheduledFault is one fault of a Scenario.
type ScheduledFault struct {
	At     time.Duration // from the start of the run
	For    time.Duration // then healed (not for reset and unknown)
	Region string
	Kind   FaultKind
	Delay  time.Duration // latency
	Jitter time.Duration // latency
	N      int           // unknown
}

func (f ScheduledFault) String() string {
	s := fmt.Sprintf("%s on %s at %v", f.Kind, f.Region, f.At)
	switch f.Kind {
	case FaultLatency:
		s += fmt.Sprintf(" (%v±%v)", f.Delay, f.Jitter)
	case FaultUnknown:
		s += fmt.Sprintf(" (n=%d)", f.N)
	}
	if f.For > 0 {
		s += fmt.Sprintf(" for %v", f.For)
	}
	return s
}

// netFault is the faultnet fault for a network kind.
func (f ScheduledFault) netFault() faultnet.Fault {
	switch f.Kind {
	case FaultDown:
		return faultnet.Down()
	case FaultBlackhole, FaultPartition:
		return faultnet.Blackhole()
	case FaultLatency:
		return faultnet.Latency(f.Delay, f.Jitter)
	case FaultReset:
		return faultnet.Reset()
	}
	return faultnet.None()
}

// Scenario is everything one seed decides: the world, the client's
// settings, the load and the fault schedule. It is a pure function of the
// seed (NewScenario).
type Scenario struct {
	Seed    uint64
	Regions []string // the first is the primary

	Dedup  simbroker.DedupPolicy
	Fence  simbroker.FencePolicy
	Tokens simbroker.TokenPolicy

	BaseLatency time.Duration // one-way, every hop

	ProbeInterval    time.Duration
	ProbeTimeout     time.Duration
	FailureThreshold int
	MaxHealthAge     time.Duration
	Cooldown         time.Duration
	FailbackSuccess  int
	InflightGrace    time.Duration
	SettleUnknown    time.Duration
	OrderTimeout     time.Duration

	Traders     int
	OrderEvery  time.Duration // per trader
	LimitEvery  int           // every n-th order is a resting limit order
	Duration    time.Duration // traders stop, faults are healed
	Quiet       time.Duration // then this long to settle before the checks
	Faults      []ScheduledFault
	TickEvery   time.Duration
	StreamPaced time.Duration // the simulation's own pacing of WebSocket dials
}

// NewScenario draws the scenario of seed.
func NewScenario(seed uint64) Scenario {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	dur := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	s := Scenario{Seed: seed}
	s.Regions = []string{"eu", "us", "ap"}[:2+r.IntN(2)]
	s.Dedup = simbroker.DedupPolicy(r.IntN(3))
	s.Fence = simbroker.FencePolicy(r.IntN(2))
	s.Tokens = simbroker.TokenPolicy(r.IntN(2))
	s.BaseLatency = dur(50*time.Microsecond, 2*time.Millisecond)
	s.ProbeInterval = dur(100*time.Millisecond, 500*time.Millisecond)
	s.ProbeTimeout = s.ProbeInterval * time.Duration(40+r.IntN(40)) / 100
	s.FailureThreshold = 1 + r.IntN(3)
	s.MaxHealthAge = s.ProbeInterval * time.Duration(3+r.IntN(4))
	s.Cooldown = dur(500*time.Millisecond, 3*time.Second)
	s.FailbackSuccess = 1 + r.IntN(3)
	s.InflightGrace = dur(0, 300*time.Millisecond)
	s.SettleUnknown = dur(200*time.Millisecond, time.Second)
	s.OrderTimeout = dur(300*time.Millisecond, 1500*time.Millisecond)
	s.Traders = 1 + r.IntN(4)
	s.OrderEvery = dur(40*time.Millisecond, 250*time.Millisecond)
	s.LimitEvery = 2 + r.IntN(4)
	s.Duration = dur(4*time.Second, 15*time.Second)
	s.Quiet = 6 * time.Second
	s.TickEvery = dur(50*time.Millisecond, 300*time.Millisecond)
	s.StreamPaced = dur(100*time.Millisecond, 500*time.Millisecond)
	n := 1 + r.IntN(5)
	for i := 0; i < n; i++ {
		f := ScheduledFault{
			At:     dur(500*time.Millisecond, s.Duration-500*time.Millisecond),
			Region: s.Regions[r.IntN(len(s.Regions))],
			Kind:   faultKinds[r.IntN(len(faultKinds))],
		}
		if r.IntN(2) == 0 {
			f.Region = s.Regions[0] // the primary is hit more often
		}
		switch f.Kind {
		case FaultReset:
		case FaultUnknown:
			f.N = 1 + r.IntN(4)
		default:
			f.For = dur(200*time.Millisecond, 5*time.Second)
		}
		if f.Kind == FaultLatency {
			f.Delay = dur(10*time.Millisecond, 800*time.Millisecond)
			f.Jitter = dur(0, 200*time.Millisecond)
		}
		s.Faults = append(s.Faults, f)
	}
	return s
}

// String describes the scenario on a few lines (the head of a trace).
func (s Scenario) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: regions %v, broker dedup=%s fence=%s tokens=%s, base latency %v\n",
		s.Seed, s.Regions, s.Dedup, s.Fence, s.Tokens, s.BaseLatency)
	fmt.Fprintf(&b, "  probe every %v (timeout %v), down after %d, fresh %v, cooldown %v, failback after %d, grace %v, settle unknown %v\n",
		s.ProbeInterval, s.ProbeTimeout, s.FailureThreshold, s.MaxHealthAge, s.Cooldown, s.FailbackSuccess, s.InflightGrace, s.SettleUnknown)
	fmt.Fprintf(&b, "  %d trader(s), an order every %v each (timeout %v, every %d-th a limit), for %v, then %v quiet; ticks every %v\n",
		s.Traders, s.OrderEvery, s.OrderTimeout, s.LimitEvery, s.Duration, s.Quiet, s.TickEvery)
	for _, f := range s.Faults {
		fmt.Fprintf(&b, "  fault: %s\n", f)
	}
	return b.String()
}
