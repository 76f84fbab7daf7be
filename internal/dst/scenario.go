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

	// Coordinated runs the Path with Config.ExternalDecisions, driven by a
	// simulated coordinator (see coord.go): a lease of LeaseTTL renewed by a
	// keep-alive every KeepAlive while the process runs, Path.Extend to the
	// lease's expiry minus Margin after each, and Pauses of the process.
	Coordinated bool
	LeaseTTL    time.Duration
	KeepAlive   time.Duration
	Margin      time.Duration
	Pauses      []Pause
	// FollowerLast: after a pause the follower resumes after the traders
	// (not first), so the orders they start meet a lapsed decision before
	// any goroutine halted the Path: only the Path's own deadline check
	// (ErrTicketExpired) stands between them and the broker.
	FollowerLast bool
}

// Pause is one process pause of a coordinated Scenario: from At (or, with
// InWrite, from the first order that reaches its dial at or after At, at
// most a second later) the process's goroutines stop at their hook points
// for For (see the package documentation).
type Pause struct {
	At      time.Duration
	For     time.Duration
	InWrite bool // between Ticket.Valid and the order's bytes
}

func (p Pause) String() string {
	s := fmt.Sprintf("pause at %v for %v", p.At, p.For)
	if p.InWrite {
		s += " (in an order's write)"
	}
	return s
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
	// Drawn after everything above, so that adding them left every earlier
	// field of every seed as it was.
	s.Coordinated = r.IntN(3) == 0
	if s.Coordinated {
		s.LeaseTTL = dur(300*time.Millisecond, time.Second)
		s.KeepAlive = s.LeaseTTL / 3
		s.Margin = s.LeaseTTL / 10
		n := r.IntN(4)
		for i := 0; i < n; i++ {
			p := Pause{InWrite: r.IntN(2) == 0}
			switch r.IntN(3) {
			case 0: // shorter than the lease
				p.For = dur(s.LeaseTTL/10, s.LeaseTTL/2)
			case 1: // about the lease
				p.For = dur(s.LeaseTTL*8/10, s.LeaseTTL*12/10)
			default: // far beyond it
				p.For = dur(2*s.LeaseTTL, 4*s.LeaseTTL)
			}
			p.At = dur(500*time.Millisecond, s.Duration-500*time.Millisecond)
			// End by Duration + 1 s (an InWrite pause begins at most a
			// second later): the quiet period keeps at least 4 s to settle.
			if p.At+p.For > s.Duration+time.Second {
				p.At = s.Duration + time.Second - p.For
			}
			s.Pauses = append(s.Pauses, p)
		}
		s.FollowerLast = r.IntN(2) == 0
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
	if s.Coordinated {
		resume := "first"
		if s.FollowerLast {
			resume = "after the traders"
		}
		fmt.Fprintf(&b, "  coordinated: lease %v, keep-alive every %v, margin %v, %d pause(s), the follower resumes %s\n", s.LeaseTTL, s.KeepAlive, s.Margin, len(s.Pauses), resume)
		for _, p := range s.Pauses {
			fmt.Fprintf(&b, "  %s\n", p)
		}
	}
	return b.String()
}
