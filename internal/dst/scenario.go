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
	// BookAfter (reset, drawBooking): the broker takes this long to book
	// each order on the region from BookAfter before the reset until it, so
	// the orders it is booking when the connections reset are booked after
	// the reset, their answers lost.
	BookAfter time.Duration
}

func (f ScheduledFault) String() string {
	s := fmt.Sprintf("%s on %s at %v", f.Kind, f.Region, f.At)
	switch f.Kind {
	case FaultLatency:
		s += fmt.Sprintf(" (%v±%v)", f.Delay, f.Jitter)
	case FaultUnknown:
		s += fmt.Sprintf(" (n=%d)", f.N)
	case FaultReset:
		if f.BookAfter > 0 {
			s += fmt.Sprintf(" (the broker still booking for %v)", f.BookAfter)
		}
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
	// H2: orders go over TLS and pooled HTTP/2 through a front end of
	// each region (h2sim.go).
	H2 bool
	// FIX: one trader sends its orders over FIX through transports/fix's
	// Initiator on the same Path (fixsim.go).
	FIX bool
	// LibToken: the orders carry the library's own fencing token (the
	// REST transport's TokenHeader), in half of the standalone seeds whose
	// broker checks tokens (tokens_check.go).
	LibToken  bool
	LeaseTTL  time.Duration
	KeepAlive time.Duration
	Margin    time.Duration
	Pauses    []Pause
	// FollowerLast: after a pause the follower resumes after the traders
	// (not first), so the orders they start meet a lapsed decision before
	// any goroutine halted the Path: only the Path's own deadline check
	// (ErrTicketExpired) stands between them and the broker.
	FollowerLast bool
	// Proc2 (coordinated seeds, proc2.go): a second process stands by and
	// takes over when this process's lease lapses.
	Proc2 bool

	// Composed moves (NewComposedScenario only; NewScenario leaves them
	// empty): Moves, identities checked (Config.Identity, with the
	// IdentityInterval drawn), and the Reconciler's timeout (0: 2 s).
	Moves            []Move
	Identity         bool
	IdentityInterval time.Duration
	ReconcileTimeout time.Duration

	// Resting: resting orders across switches (resting_sim.go), drawn for
	// every seed from a source of its own.
	Resting RestingSim
	// LongRecon: a switch's reconcile is FIX-like (longrecon.go), drawn in
	// half of the resting seeds from a source of its own.
	LongRecon LongRecon
	// LateRest: a limit order's late landing, then a fence of the session
	// (lateresting.go), in half of the flatten-mode resting seeds.
	LateRest LateRest

	// NoTradePathCheck (NewLiveScenario): the Path is given no
	// Config.TradePathCheck; it runs the check a quick start's
	// rest.Reconciler offers instead (world.offeredTradePathCheck).
	NoTradePathCheck bool
	// NoCheckAtAll (NewLiveScenario, with NoTradePathCheck): nothing offers
	// a trade-path check either (an application that reconciles by itself).
	// Drawn only in seeds with an order burst where nothing but outages
	// takes an endpoint out (onlyOutages): a failure the probe cannot see
	// would wait Engine.GrayFailbackWait there, by design; and in seeds
	// without a burst given an unchecked gray failure of the primary
	// (grayUncheckable), which must keep flow off it.
	NoCheckAtAll bool
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
	drawResting(&s)
	drawH2(&s)       // h2sim.go
	drawProc2(&s)    // proc2.go
	drawFIX(&s)      // fixsim.go
	drawLibToken(&s) // tokens_check.go
	drawBooking(&s)
	drawLongRecon(&s) // longrecon.go
	drawLateRest(&s)  // lateresting.go
	return s
}

// drawBooking gives half of the resets a broker still booking (BookAfter,
// 10–60 ms), from a source of its own, so every other field of every seed is
// as it was.
func drawBooking(s *Scenario) {
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x626f6f6b696e6721))
	for i := range s.Faults {
		if s.Faults[i].Kind == FaultReset && r.IntN(2) == 0 {
			s.Faults[i].BookAfter = 10*time.Millisecond + time.Duration(r.Int64N(int64(50*time.Millisecond)+1))
		}
	}
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
		if s.Proc2 {
			fmt.Fprintf(&b, "  a second process stands by and takes over at the first lapse of the lease\n")
		}
	}
	for _, m := range s.Moves {
		fmt.Fprintf(&b, "  move: %s\n", m)
	}
	if s.Identity {
		fmt.Fprintf(&b, "  identities checked every %v\n", s.IdentityInterval)
	}
	if s.ReconcileTimeout > 0 {
		fmt.Fprintf(&b, "  reconcile timeout %v\n", s.ReconcileTimeout)
	}
	if s.NoTradePathCheck {
		if s.NoCheckAtAll {
			fmt.Fprintf(&b, "  no trade-path check at all (Config.TradePathCheck nil, none offered)\n")
		} else {
			fmt.Fprintf(&b, "  no trade-path check (Config.TradePathCheck nil; rest.Reconciler's offered lookup runs)\n")
		}
	}
	if s.Resting.On {
		fmt.Fprintf(&b, "  resting orders: %s\n", s.Resting)
	}
	if s.LongRecon.On {
		fmt.Fprintf(&b, "  long reconcile: %s\n", s.LongRecon)
	}
	if s.LateRest.On {
		fmt.Fprintf(&b, "  late resting landing: %s\n", s.LateRest)
	}
	if s.H2 {
		fmt.Fprintf(&b, "  orders over TLS and pooled HTTP/2 through a front end of each region\n")
	}
	if s.FIX {
		fmt.Fprintf(&b, "  trader 0 sends its orders over FIX\n")
	}
	if s.LibToken {
		fmt.Fprintf(&b, "  orders carry the library's fencing token\n")
	}
	return b.String()
}

// MoveKind is one kind of composed move (NewComposedScenario): faults that
// make the runtime's mechanisms meet one another (gray failures, on-demand
// probes, settles and stream evidence), each drawn by the seed.
type MoveKind string

// Composed moves.
const (
	// MoveProbeLate: the probe answers of Region (every region when Region
	// is "*": a starved host) come back past ProbeTimeout for Rounds probe
	// rounds, while the endpoint itself is fine; with "*" (one round), the
	// next round is slow but in time, and the active endpoint goes down
	// Lead after At (during that round), for Down.
	MoveProbeLate MoveKind = "probe-late"
	// MoveStartCut: the first probe round is slow (its probes finish
	// although their context ends, and answer just before ProbeTimeout);
	// Start's context is cancelled For after Start began, during that
	// round, and the primary goes down Lead after Start returned, while
	// those probes are still running; N orders are then placed one after
	// another through it (their failures take it DOWN while the backups'
	// only probes are the cut round's, still running).
	MoveStartCut MoveKind = "start-cut"
	// MoveSettleHang: the next N orders through Region are booked and their
	// answer cut (unknown outcomes); from then, for For, reconcile reads
	// through Region hang until the Reconciler's context ends (a dying
	// region), and Lead after At the region goes down (refused) for Down.
	MoveSettleHang MoveKind = "settle-hang"
	// MoveStreamDial: Region's WebSocket address goes silent for For: the
	// stream's connection stalls and its dials there time out, while REST
	// and the probe are fine.
	MoveStreamDial MoveKind = "stream-dial"
	// MoveGray: Region's order path fails for For (orders answer 503 and the
	// trade-path check fails) while its probe passes; Lead after At its probe
	// answers late for Rounds rounds (a blip), then passes again.
	MoveGray MoveKind = "gray"
	// MoveIdentity: the backup Region answers for another account from At
	// for For; the primary goes down Lead later, for Down.
	MoveIdentity MoveKind = "identity-flip"
	// MoveHaltSettle (coordinated seeds): the coordinator halts the Path at
	// the first settle of unknown outcomes that begins after At (which a
	// MoveSettleHang on the same region makes hang), and assigns the active
	// endpoint again For later.
	MoveHaltSettle MoveKind = "halt-in-settle"
	// MoveHaltSwitch (coordinated seeds): from At the active endpoint's
	// region dies: its probe, REST and WebSocket addresses refuse, order
	// dials to it hang until the order's deadline (lost SYNs: the orders
	// stay in flight, and a switch waits InflightGrace for them), and the
	// broker's kill switch for it (the Fencer) hangs for Lead, for Down.
	// The coordinator halts the Path at the switch away from it: at its
	// fence's start (Rounds 0) or at the switch itself, during the wait
	// for orders in flight (Rounds 1); and assigns the active endpoint
	// again For later.
	MoveHaltSwitch MoveKind = "halt-in-switch"

	// The liveness moves (NewLiveScenario; judged by gate-open-while-usable).

	// MoveOrderBurst: Lead after a probe round began (At), the active
	// endpoint's order addresses (REST, and the TLS front end) refuse, and N
	// orders are placed through it at once (they fail before any probe
	// does); Lead later its probe and WebSocket addresses refuse too (a real
	// outage the orders noticed first), and Down after At all heal. Rounds
	// after the heal (Rounds probe intervals) every other region goes down
	// for For, leaving the healed endpoint the only usable one.
	MoveOrderBurst MoveKind = "order-burst"
	// MoveLookup5xx: from At, the order lookups (the reconcile's reads, and
	// only those) through every region but the active one answer 503 for
	// For; Lead after At the broker cuts the answer of the next N orders
	// through the active endpoint (they end unknown, for the switch's
	// reconcile to look up), and just after, the active endpoint's region
	// goes down for Down.
	MoveLookup5xx MoveKind = "lookup-5xx"
	// MoveArmFail (seeds with a dead-man timer): from At the primary's
	// region goes down for Down; from its heal, the broker refuses every
	// dead-man arm through it for For (a failback to it cannot complete).
	MoveArmFail MoveKind = "deadman-arm-fail"
	// MoveStall: the whole client process stalls for For from At: every
	// probe, trade-path check, identity check, reconcile, order and dial
	// that reaches its hook point in that time waits for the stall's end.
	MoveStall MoveKind = "process-stall"
	// MoveHaltUnknown: from At every region's probe is blackholed for Down
	// (the Path halts for want of a target); the broker cuts the answer of
	// the next N orders through the active endpoint, placed Lead after At,
	// as the probes fail, over its REST address slowed by a probe interval
	// and a probe timeout (in flight at the halt, they end unknown after
	// it); then the probes heal and flow must resume with those orders
	// settled. The move's own orders are placed with a deadline that
	// outlasts the halt, and their answers (cut) reach the client only
	// after the first release after the halt (halthold.go): the resume's
	// reconcile finds them in flight, booked, and they end unknown after
	// its verdict, so they must be settled again. Once a reconcile through
	// the region has answered an order already unknown, its next read is
	// slow and every probe fails again for Down: the next halt cuts that
	// reconcile short with an answer found, which must not be asked again.
	MoveHaltUnknown MoveKind = "halt-with-unknown"
)

// Move is one composed move of a Scenario (see MoveKind for each field's
// meaning per kind).
type Move struct {
	Kind   MoveKind
	Region string
	At     time.Duration
	For    time.Duration
	Lead   time.Duration
	Down   time.Duration
	Rounds int
	N      int
}

func (m Move) String() string {
	s := fmt.Sprintf("%s on %s at %v for %v", m.Kind, m.Region, m.At, m.For)
	if m.Lead > 0 {
		s += fmt.Sprintf(", lead %v", m.Lead)
	}
	if m.Down > 0 {
		s += fmt.Sprintf(", down %v", m.Down)
	}
	if m.Rounds > 0 {
		s += fmt.Sprintf(", %d round(s)", m.Rounds)
	}
	if m.N > 0 {
		s += fmt.Sprintf(", n=%d", m.N)
	}
	return s
}

// Has reports whether the scenario has a move of kind k.
func (s Scenario) Has(k MoveKind) bool {
	for _, m := range s.Moves {
		if m.Kind == k {
			return true
		}
	}
	return false
}

var moveKinds = []MoveKind{MoveProbeLate, MoveStartCut, MoveSettleHang, MoveStreamDial, MoveGray, MoveIdentity, MoveHaltSettle}

// NewComposedScenario is NewScenario(seed) with one to three composed moves
// (Scenario.Moves), drawn from a source of their own: every field
// NewScenario draws is as it was. A seed with a MoveIdentity checks
// identities (Scenario.Identity); ReconcileTimeout is drawn from 1–5 s.
func NewComposedScenario(seed uint64) Scenario {
	s := NewScenario(seed)
	r := rand.New(rand.NewPCG(seed, seed^0x28c0ffee28c0ffee))
	dur := func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
	}
	s.ReconcileTimeout = dur(time.Second, 5*time.Second)
	backup := func() string { return s.Regions[1+r.IntN(len(s.Regions)-1)] }
	region := func() string {
		if r.IntN(3) > 0 {
			return s.Regions[0]
		}
		return s.Regions[r.IntN(len(s.Regions))]
	}
	late := s.Duration - 500*time.Millisecond
	n := 1 + r.IntN(3)
	for i := 0; i < n; i++ {
		// An odd offset per move keeps its instants apart from the probes',
		// orders' and faults' (see the documentation's "Determinism").
		odd := time.Duration(2*i+1) * 19 * time.Microsecond
		m := Move{Kind: moveKinds[r.IntN(len(moveKinds))], Region: region()}
		m.At = dur(500*time.Millisecond, late) + odd
		switch m.Kind {
		case MoveProbeLate:
			m.Rounds = 1 + r.IntN(2)
			m.For = time.Duration(m.Rounds) * s.ProbeInterval
			if r.IntN(2) == 0 {
				// A starved host: every probe late; then the primary fails
				// as the first probes on time are in flight.
				m.Region = "*"
				m.Rounds = 1
				m.For = s.ProbeInterval
				m.Lead = m.For + dur(s.ProbeInterval/10, s.ProbeInterval) + odd
				m.Down = dur(500*time.Millisecond, 3*time.Second)
			}
		case MoveStartCut:
			m.Region = s.Regions[0]
			m.At = 0
			m.For = dur(time.Millisecond, s.ProbeTimeout/5) + odd
			m.Lead = dur(s.ProbeTimeout/5, s.ProbeTimeout/2) + odd
			m.Down = dur(time.Second, 4*time.Second)
		case MoveSettleHang, MoveHaltSettle:
			if m.Kind == MoveHaltSettle && !s.Coordinated {
				m.Kind = MoveSettleHang
			}
			m.N = 1 + r.IntN(3)
			m.For = dur(s.ReconcileTimeout, 3*s.ReconcileTimeout)
			m.Lead = dur(s.OrderEvery, s.OrderEvery+s.SettleUnknown) + odd
			m.Down = dur(500*time.Millisecond, 4*time.Second)
			if m.Kind == MoveHaltSettle {
				// The settle it halts during hangs: a settle-hang on the
				// same region at the same instant, and the re-assignment
				// after the halt.
				h := m
				h.Kind = MoveSettleHang
				s.Moves = append(s.Moves, h)
				m.N, m.Lead, m.Down = 0, 0, 0
				m.At += time.Microsecond
				m.For = dur(300*time.Millisecond, 1500*time.Millisecond)
			}
		case MoveStreamDial:
			m.For = dur(time.Second, 5*time.Second)
		case MoveGray:
			m.For = dur(2*time.Second, 6*time.Second)
			m.Lead = dur(2*s.ProbeInterval, m.For/2) + odd
			m.Rounds = 1 + r.IntN(4)
		case MoveIdentity:
			m.Region = backup()
			m.For = dur(2*time.Second, 10*time.Second)
			m.Lead = dur(100*time.Millisecond, 3*time.Second) + odd
			m.Down = dur(time.Second, 4*time.Second)
			s.Identity = true
			s.IdentityInterval = dur(3*time.Second, 20*time.Second)
		}
		s.Moves = append(s.Moves, m)
	}
	// What was added to the moves later draws from a source of its own, so
	// that every move above is as it was drawn.
	r2 := rand.New(rand.NewPCG(seed, seed^0x5eed2e2e5eed2e2e))
	dur2 := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r2.Int64N(int64(hi-lo)+1)) }
	for i := range s.Moves {
		if m := &s.Moves[i]; m.Kind == MoveStartCut {
			m.N = s.FailureThreshold + r2.IntN(2)
			if r2.IntN(2) == 0 {
				// A later cut, and the primary failing sooner after it.
				m.For, m.Lead = m.For+m.Lead, m.For
			}
		}
	}
	if s.Coordinated && r2.IntN(2) == 0 {
		m := Move{Kind: MoveHaltSwitch, Region: "active"}
		m.At = dur2(500*time.Millisecond, late) + 23*time.Microsecond
		m.For = dur2(300*time.Millisecond, 1500*time.Millisecond)
		m.Lead = dur2(50*time.Millisecond, 900*time.Millisecond) + 29*time.Microsecond
		m.Down = dur2(time.Second, 4*time.Second)
		m.Rounds = r2.IntN(2)
		s.Moves = append(s.Moves, m)
	}
	return s
}

var liveKinds = []MoveKind{MoveOrderBurst, MoveLookup5xx, MoveArmFail, MoveStall, MoveHaltUnknown}

// NewLiveScenario is NewComposedScenario(seed) with one or two liveness
// moves (MoveOrderBurst, MoveLookup5xx, MoveArmFail, MoveStall,
// MoveHaltUnknown), drawn from a source of their own, so that every field
// NewComposedScenario draws is as it was; in half of those seeds the Path
// has no trade-path check. The quiet period is lengthened to the bound of
// gate-open-while-usable plus 3 s, so that a closure after the last heal is
// judged.
func NewLiveScenario(seed uint64) Scenario {
	s := NewComposedScenario(seed)
	r := rand.New(rand.NewPCG(seed, seed^0x11fe11fe11fe11fe))
	dur := func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
	}
	late := s.Duration - 500*time.Millisecond
	s.NoTradePathCheck = r.IntN(2) == 0
	n := 1 + r.IntN(2)
	var moves []Move
	for i := 0; i < n; i++ {
		odd := time.Duration(2*i+1) * 41 * time.Microsecond
		m := Move{Kind: liveKinds[r.IntN(len(liveKinds))], Region: "active"}
		m.At = dur(500*time.Millisecond, late) + odd
		switch m.Kind {
		case MoveOrderBurst:
			// Just after a probe round began (rounds run every
			// ProbeInterval from the start).
			m.At = m.At.Truncate(s.ProbeInterval) + s.ProbeInterval/10 + odd
			m.N = s.FailureThreshold + 1
			m.Lead = dur(s.ProbeInterval/10, s.ProbeInterval/2) + odd
			m.Down = dur(time.Second, 4*time.Second)
			m.Rounds = r.IntN(3)
		case MoveLookup5xx:
			m.For = dur(2*time.Second, 15*time.Second)
			m.Lead = dur(0, time.Second) + odd
			m.N = 1 + r.IntN(3)
		case MoveArmFail:
			if !s.Resting.On || !s.Resting.DeadMan {
				m.Kind = MoveStall // no dead-man timer to arm
				m.Region = "*"
				m.For = dur(50*time.Millisecond, 800*time.Millisecond)
				break
			}
			m.Region = s.Regions[0]
			m.Down = dur(time.Second, 3*time.Second)
		case MoveStall:
			m.Region = "*"
			m.For = dur(50*time.Millisecond, 800*time.Millisecond)
		case MoveHaltUnknown:
			m.N = 1 + r.IntN(3)
			m.Down = time.Duration(s.FailureThreshold+1)*s.ProbeInterval + s.ProbeTimeout + dur(0, 2*time.Second)
			m.Lead = time.Duration(s.FailureThreshold-1)*s.ProbeInterval + s.ProbeTimeout/2 + odd
		}
		moves = append(moves, m)
	}
	s.Moves = append(s.Moves, moves...)
	// The durations that outlast the bound: drawn after it.
	b, _ := availBound(s)
	for i := range s.Moves {
		m := &s.Moves[i]
		switch m.Kind {
		case MoveOrderBurst:
			m.For = b + dur(time.Second, 3*time.Second)
		case MoveLookup5xx:
			m.Down = m.For + b + dur(time.Second, 3*time.Second)
		case MoveArmFail:
			m.For = b + dur(2*time.Second, 5*time.Second)
		}
	}
	s.Quiet = max(s.Quiet, b+3*time.Second)
	addReleaseRace(&s, seed) // releaserace.go
	s.NoCheckAtAll = s.NoTradePathCheck && s.Has(MoveOrderBurst) && onlyOutages(s)
	// A gray failure that nothing checks (drawn from a source of its own,
	// in the seeds of a Path deciding by itself with rest.Reconciler's
	// offered check whose moves all fail the probe with the orders, and with
	// no unknown-outcome fault and no order burst, which with no check at
	// all can itself pass for a gray failure): the primary's orders are refused while its probe passes, from
	// early in the run to the end of trading, and nothing offers a
	// trade-path check. Only Engine.GrayFailbackWait, which outlasts every
	// run, can end it for the Path: flow must stay off the primary
	// (no-failback-onto-failing-orders).
	if s.NoTradePathCheck && !s.Has(MoveOrderBurst) && !s.Coordinated && grayUncheckable(s) {
		g := rand.New(rand.NewPCG(seed, seed^0x6a4e6a4e6a4e6a4e))
		at := 500*time.Millisecond + time.Duration(g.Int64N(int64(s.Duration/3))) + 7*41*time.Microsecond
		s.Moves = append(s.Moves, Move{Kind: MoveGray, Region: s.Regions[0], At: at, For: s.Duration - at})
		s.NoCheckAtAll = true
	}
	addFIXHanded(&s, seed) // fixhanded.go
	return s
}

// grayUncheckable: no move of s fails what the probe cannot see, and no
// fault of s cuts orders' answers (see onlyOutages; latency and reset faults
// are allowed).
func grayUncheckable(s Scenario) bool {
	for _, f := range s.Faults {
		if f.Kind == FaultUnknown {
			return false
		}
	}
	for _, m := range s.Moves {
		switch m.Kind {
		case MoveOrderBurst, MoveProbeLate, MoveStreamDial, MoveStall, MoveStartCut, MoveArmFail:
		default:
			return false
		}
	}
	return true
}

// onlyOutages reports whether nothing in s but outages takes an endpoint
// out: no fault or move whose failure the probe cannot see (orders cut,
// reset or slowed while the probe passes, lookups failing or hanging,
// another account), only down, blackhole and probe-only faults and moves
// that fail the probe with the orders or stall the client.
func onlyOutages(s Scenario) bool {
	for _, f := range s.Faults {
		switch f.Kind {
		case FaultDown, FaultBlackhole, FaultPartition:
		default:
			return false
		}
	}
	for _, m := range s.Moves {
		switch m.Kind {
		case MoveOrderBurst, MoveProbeLate, MoveStreamDial, MoveStall, MoveStartCut, MoveArmFail:
		default:
			return false
		}
	}
	return true
}
