package drill

import (
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// Input is everything a report is computed from. Times are wall-clock
// readings of one process; the report shows them relative to Start.
type Input struct {
	// Title heads the report ("game day: blackhole on eu").
	Title string
	// Start and End bound the run (End zero: the last event, note or sample).
	Start, End time.Time
	// Fault describes the fault ("eu: rest=blackhole ..."); FaultAt is when it
	// was injected and RecoverAt when it was cleared (zero: never).
	Fault              string
	FaultAt, RecoverAt time.Time
	// Primary is the endpoint the fault hit; Survivor the one flow should
	// land on. Empty Survivor: no landing figures.
	Primary, Survivor string
	// Endpoints are the lanes of the timeline, in order (empty: every endpoint
	// named by an event, sorted).
	Endpoints []string
	// Events are the Path's events (every one, not a Snapshot's last 64).
	Events []pathdialer.Event
	// Notes are the driver's own lines (order answered by X, stream resumed).
	Notes []Note
	// Orders are the orders placed during the run.
	Orders []Order
	// Samples are counters read during the run, in time order.
	Samples []Sample
	// Budget is the surviving region's handshake budget (zero: unknown).
	Budget Budget
	// Population is the final Stats of the drill's extra WebSocket clients
	// (nil: no population).
	Population []ws.Stats
	// Checked and Violations are the invariants the driver checked and those
	// that broke.
	Checked, Violations []string
	// Stream is what the market data consumer saw (nil: no stream).
	Stream *StreamSeen
	// Seed and Commit reproduce the run: the simulated broker's seed and the
	// source revision. Empty: not recorded (the report says so).
	Seed, Commit string
}

// StreamSeen is what the market data consumer saw over the run.
type StreamSeen struct {
	// Messages delivered; Missed: ticks never delivered (a snapshot stood in
	// for them); Snapshots after the first message.
	Messages  int
	Missed    uint64
	Snapshots int
	// LongestSilence between two messages of one stream.
	LongestSilence time.Duration
}

// Note is one line the driver recorded.
type Note struct {
	Time   time.Time
	Source string // "rest", "fix", "ws", "scenario", "client"
	Text   string
}

// Order is what the driver knows about one order. Its ID is never rendered.
type Order struct {
	ID        string
	Transport string
	PlacedAt  time.Time
	// NotSent: refused before leaving the process (halt, held past deadline).
	NotSent bool
	// Unknown: an attempt ended with an unknown outcome.
	Unknown bool
	// Acked: answered by the broker (AckEndpoint at AckedAt); Rejected: the
	// answer was a rejection.
	Acked, Rejected bool
	AckedAt         time.Time
	AckEndpoint     string
}

// Failed reports whether the caller saw an error for the order: refused,
// unknown outcome, rejected, or never answered.
func (o Order) Failed() bool { return o.NotSent || o.Unknown || o.Rejected || !o.Acked }

// Sample is a reading of the drill's counters at one instant. Cumulative
// counters only: rates are differences between samples.
type Sample struct {
	Time time.Time
	// Regions are the broker's WebSocket counters per region (nil: not
	// available, e.g. real endpoints).
	Regions map[string]RegionWS
	// Connected counts the population's streams connected per endpoint.
	// Nil without a population.
	Connected map[string]int
	// ReadsOK and ReadsFailed count the driver's reads so far (-1: unknown).
	ReadsOK, ReadsFailed int
}

// RegionWS is one region's cumulative WebSocket handshake counters.
type RegionWS struct {
	// Attempts: handshake requests; Handshakes: upgrades completed;
	// OverBudget: refused with 503 for the handshake budget; Unavailable:
	// refused with 503 for a fault.
	Attempts, Handshakes, OverBudget, Unavailable uint64
	// Resumes and Snapshots: streams resumed from the replay buffer, and
	// resumes answered with a snapshot.
	Resumes, Snapshots uint64
}

// Budget is a region's WebSocket handshake budget (a token bucket).
type Budget struct {
	PerSecond float64
	Burst     int
}
