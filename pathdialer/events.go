package pathdialer

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/safetext"
)

// EventKind says what happened.
type EventKind int

const (
	// EventProbe: one probe result (Endpoint, Err, Duration = latency).
	EventProbe EventKind = iota
	// EventStateChange: an endpoint's health state changed (PrevState → State).
	EventStateChange
	// EventDecision: an evaluation other than NoAction (Decision).
	EventDecision
	// EventHold: submissions are held (Cause).
	EventHold
	// EventFenceStart, EventFenceSuccess, EventFenceFailure: the fence of
	// Endpoint (Attempt, Err, Duration).
	EventFenceStart
	EventFenceSuccess
	EventFenceFailure
	// EventSwitch: the active endpoint changed From → To (Token).
	EventSwitch
	// EventReconcileStart, EventReconcileSuccess, EventReconcileFailure:
	// reconciliation (Tickets, Settlements, Attempt, Err, Duration).
	EventReconcileStart
	EventReconcileSuccess
	EventReconcileFailure
	// EventRelease: submissions flow again on Endpoint (Duration = time held).
	EventRelease
	// EventHalt: submissions refused at once (Cause).
	EventHalt
	// EventResume: leaving a halt (reconcile follows before release).
	EventResume
	// EventFlapSuppressed: failback suppressed by the flap limiter; a human
	// should look at the primary.
	EventFlapSuppressed
	// EventMonitorStale: the active endpoint's health is stale (Cause); not
	// acted on.
	EventMonitorStale
	// EventUnfence: a fenced endpoint became active again and its fence was lifted.
	EventUnfence
	// EventLateTicket: a ticket finished after it was handed to reconciliation.
	EventLateTicket
	// EventIdentity: an endpoint's identity verdict changed (verified, or
	// mismatch: Err wraps engine.ErrIdentityMismatch and names the differences).
	EventIdentity
	// EventDegraded: the degraded read-only mode began (Endpoint = where reads
	// go) or ended (Endpoint empty).
	EventDegraded
	// EventLateLanding: an order reconciliation had found NOT_RECEIVED
	// (provisionally) was found booked by the re-query: OrderID, Endpoint and
	// Region it was sent through, Settlements[0] the fate found; Time is when
	// it was found.
	EventLateLanding
	// EventOnDemand: candidates excluded only by stale evidence were probed
	// (and re-checked) at once before a halt or switch was decided (Cause
	// names them, what was found, and the outcome).
	EventOnDemand
	// EventBrokenProbe: an endpoint's probe has never succeeded, or fails
	// while live traffic on it succeeds (Cause); or it works again (Cause
	// says so). The probe, not the endpoint, is suspect.
	EventBrokenProbe
	// EventGray: an endpoint was taken DOWN by live-traffic evidence while its
	// probe passed (a gray failure), or came back (Cause says how).
	EventGray
	// EventDeadManArmed: the DeadMan hook armed the venue's dead-man timer
	// on To (the endpoint the switch goes to), before the fence of From.
	EventDeadManArmed
	// EventDeadManFailure: the DeadMan hook failed or timed out (Err wraps
	// ErrDeadManNotArmed); the switch holds, the old path is not fenced.
	EventDeadManFailure
	// EventOpenOrderDiff: one service's open-order reconcile after a switch
	// (Service, From → To): Diffs lists every difference with its cause
	// (none when the books agree); Err when it could not be done.
	EventOpenOrderDiff
	// EventRestingCancelled: a resting order the application held open was
	// cancelled by a switch (OrderID, Service, Cause; Diffs[0] the
	// difference; From, To and Token name the switch whose fence cut it,
	// which may be earlier than the reconcile that found it): re-quote it
	// if it is still wanted.
	EventRestingCancelled
	// EventFailbackAbandoned: a failback From → To was given up before it
	// held flow for longer than its fence: its preparation (the dead-man arm
	// on To, the identity re-proof of To) or its fence failed (Err, Cause).
	// Flow stays on From. Attempt counts the failbacks abandoned in a row;
	// the next is not tried for Duration (Config.FailbackBackoff), and Cause
	// says when.
	EventFailbackAbandoned
)

var eventNames = [...]string{
	EventProbe: "probe", EventStateChange: "state", EventDecision: "decision", EventHold: "hold",
	EventFenceStart: "fence-start", EventFenceSuccess: "fence-ok", EventFenceFailure: "fence-failed",
	EventSwitch: "switch", EventReconcileStart: "reconcile-start", EventReconcileSuccess: "reconcile-ok",
	EventReconcileFailure: "reconcile-failed", EventRelease: "release", EventHalt: "halt",
	EventResume: "resume", EventFlapSuppressed: "flap-suppressed", EventMonitorStale: "monitor-stale",
	EventUnfence: "unfence", EventLateTicket: "late-ticket", EventIdentity: "identity", EventDegraded: "degraded",
	EventLateLanding: "late-landing",
	EventOnDemand:    "on-demand", EventBrokenProbe: "broken-probe", EventGray: "gray",
	EventDeadManArmed: "dead-man-armed", EventDeadManFailure: "dead-man-failed",
	EventOpenOrderDiff: "open-orders", EventRestingCancelled: "resting-cancelled",
	EventFailbackAbandoned: "failback-abandoned",
}

// String returns a short lower-case name such as "fence-ok".
func (k EventKind) String() string {
	if k >= 0 && int(k) < len(eventNames) {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// MarshalText renders the kind as its String form.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Event is one thing that happened on a Path. Fields not relevant to the Kind are
// zero.
//
// Text that may come from outside the process is escaped (control
// characters as Go escapes, so it stays on one line) and cut, with a note of
// its length such as "…(1048576 bytes)": Err and Error, Cause and the
// Decision's notes at 2 KiB each, a ticket's Cause and a settlement's Detail
// at 512 bytes, order IDs at 256. Err still unwraps to the error the hook returned (errors.Is and
// errors.As see through the cut). The values given to the Path are not
// changed: the event holds copies.
//
// Events are numbered and delivered in the order they happened: Seq counts from
// 1 with no gap, Time never goes backwards from one event to the next, and for
// each endpoint the state-change events chain (one's PrevState is the previous
// one's State).
type Event struct {
	// Seq numbers the Path's events from 1, strictly increasing, none skipped.
	Seq       uint64             `json:"seq"`
	Kind      EventKind          `json:"kind"`
	Time      time.Time          `json:"time"`
	Endpoint  string             `json:"endpoint,omitempty"`
	From      string             `json:"from,omitempty"`
	To        string             `json:"to,omitempty"`
	Token     uint64             `json:"token"`
	State     engine.HealthState `json:"state"`
	PrevState engine.HealthState `json:"prev_state"`
	Decision  *engine.Decision   `json:"decision,omitempty"`
	Attempt   int                `json:"attempt,omitempty"`
	Duration  time.Duration      `json:"duration,omitempty"`
	Err       error              `json:"-"`
	// Error is Err's text (for JSON).
	Error string `json:"error,omitempty"`
	Cause string `json:"cause,omitempty"`
	// OrderID is the order concerned (EventLateTicket, EventLateLanding).
	OrderID string `json:"order_id,omitempty"`
	// Region of Endpoint (EventLateLanding).
	Region string `json:"region,omitempty"`
	// Service concerned, with Config.ReconcileByService: the reconcile events of one
	// service ("" for the services without their own), and EventRelease of one
	// service released while others are still held ("" when the whole gate
	// opens).
	Service string `json:"service,omitempty"`
	// Tickets handed to reconciliation (EventReconcileStart).
	Tickets []TicketInfo `json:"tickets,omitempty"`
	// Settlements found (EventReconcileSuccess), or the answers a failed
	// attempt did give, judged and kept (EventReconcileFailure; also one
	// with Err wrapping the supersession, for the answers a settle or switch
	// reconcile had found before a hold, halt or switch cut it short).
	Settlements []Settlement `json:"settlements,omitempty"`
	// Diffs found by an open-order reconcile (EventOpenOrderDiff,
	// EventRestingCancelled).
	Diffs []OrderDiff `json:"diffs,omitempty"`
}

// String renders the event on one line for logs and timelines.
func (e Event) String() string {
	s := e.Kind.String()
	if e.Endpoint != "" {
		s += " " + e.Endpoint
	}
	if e.From != "" || e.To != "" {
		s += fmt.Sprintf(" %s→%s", e.From, e.To)
	}
	switch e.Kind {
	case EventStateChange:
		s += fmt.Sprintf(" %v→%v", e.PrevState, e.State)
	case EventDecision:
		if e.Decision != nil {
			s += " " + e.Decision.Outcome.String()
		}
	case EventSwitch, EventRelease:
		s += fmt.Sprintf(" gen=%d", e.Token)
	}
	if e.Attempt > 0 {
		s += fmt.Sprintf(" attempt=%d", e.Attempt)
	}
	if e.Duration > 0 {
		s += " " + e.Duration.String()
	}
	if e.OrderID != "" {
		s += " order=" + e.OrderID
	}
	if len(e.Tickets) > 0 {
		s += fmt.Sprintf(" tickets=%d", len(e.Tickets))
	}
	if e.Service != "" && (e.Kind == EventOpenOrderDiff || e.Kind == EventRestingCancelled) {
		s += " service=" + e.Service
	}
	if e.Kind == EventOpenOrderDiff && len(e.Diffs) > 0 {
		s += " diffs:"
		for i, d := range e.Diffs {
			if i == maxSettlementsShown {
				s += fmt.Sprintf(" (+%d more)", len(e.Diffs)-i)
				break
			}
			s += " " + d.OrderID + "=" + d.Cause.String()
		}
	}
	if len(e.Settlements) > 0 {
		s += " settled:"
		for i, st := range e.Settlements {
			if i == maxSettlementsShown {
				s += fmt.Sprintf(" (+%d more)", len(e.Settlements)-i)
				break
			}
			s += " " + st.OrderID + "=" + st.Fate.String()
			switch {
			case st.Final:
				s += "(final)"
			case st.Provisional:
				s += "(provisional)"
			}
		}
	}
	if e.Cause != "" {
		s += ": " + e.Cause
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// dispatcher delivers events in order from one goroutine, outside every lock of
// the Path. The queue is unbounded: no event is dropped.
type dispatcher struct {
	log  *slog.Logger
	hook func(Event)

	mu      sync.Mutex
	seq     uint64
	queue   []Event
	wake    chan struct{}
	history []Event // the last historyLen events, for Snapshot
}

const historyLen = 64

// maxSettlementsShown bounds the settlements Event.String lists.
const maxSettlementsShown = 20

func newDispatcher(log *slog.Logger, hook func(Event)) *dispatcher {
	return &dispatcher{log: log, hook: hook, wake: make(chan struct{}, 1)}
}

// emit numbers, stamps and queues one event. The number and the time are
// taken under one lock, so the order of Seq is the order of Time and of
// delivery; callers that must order events among themselves (the state changes
// of one endpoint) emit under their own lock.
func (d *dispatcher) emit(e Event) {
	e = boundEvent(e)
	if e.Err != nil && e.Error == "" {
		e.Error = e.Err.Error()
	}
	d.mu.Lock()
	d.seq++
	e.Seq = d.seq
	e.Time = time.Now()
	d.queue = append(d.queue, e)
	if e.Kind != EventProbe {
		if len(d.history) == historyLen {
			copy(d.history, d.history[1:])
			d.history = d.history[:historyLen-1]
		}
		d.history = append(d.history, e)
	}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// boundEvent returns e with every text that may come from a counterparty
// bounded and escaped (safetext). Slices and the Decision are copied when
// anything in them changes, never written through: they may be the caller's.
func boundEvent(e Event) Event {
	e.Err = safetext.Error(e.Err, safetext.FieldMax)
	e.Error = safetext.BoundN(e.Error, safetext.FieldMax)
	e.Cause = safetext.BoundN(e.Cause, safetext.FieldMax)
	e.OrderID = safetext.Bound(e.OrderID)
	if e.Decision != nil {
		if notes, changed := boundStrings(e.Decision.Notes); changed {
			d := *e.Decision
			d.Notes = notes
			e.Decision = &d
		}
	}
	for i := range e.Tickets {
		t := e.Tickets[i]
		if (t.Cause != nil && !safetext.SafeN(t.Cause.Error(), safetext.DetailMax)) || !safetext.Safe(t.OrderID) {
			e.Tickets = boundTickets(e.Tickets)
			break
		}
	}
	for _, st := range e.Settlements {
		if !safetext.SafeN(st.Detail, safetext.DetailMax) || !safetext.Safe(st.OrderID) {
			e.Settlements = boundSettlements(e.Settlements)
			break
		}
	}
	return e
}

func boundTickets(in []TicketInfo) []TicketInfo {
	out := make([]TicketInfo, len(in))
	for i, t := range in {
		t.Cause = safetext.Error(t.Cause, safetext.DetailMax)
		t.OrderID = safetext.Bound(t.OrderID)
		out[i] = t
	}
	return out
}

func boundSettlements(in []Settlement) []Settlement {
	out := make([]Settlement, len(in))
	for i, st := range in {
		st.Detail = safetext.BoundN(st.Detail, safetext.DetailMax)
		st.OrderID = safetext.Bound(st.OrderID)
		out[i] = st
	}
	return out
}

// boundStrings returns ss bounded, copied only when something changed.
func boundStrings(ss []string) ([]string, bool) {
	for _, s := range ss {
		if !safetext.SafeN(s, safetext.FieldMax) {
			out := make([]string, len(ss))
			for j, x := range ss {
				out[j] = safetext.BoundN(x, safetext.FieldMax)
			}
			return out, true
		}
	}
	return ss, false
}

func (d *dispatcher) recent() []Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Event(nil), d.history...)
}

// run delivers until ctx ends, then delivers what is queued and returns.
func (d *dispatcher) run(ctx context.Context) {
	for {
		d.mu.Lock()
		batch := d.queue
		d.queue = nil
		d.mu.Unlock()
		for _, e := range batch {
			d.deliver(e)
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-d.wake:
		case <-ctx.Done():
			d.mu.Lock()
			batch = d.queue
			d.queue = nil
			d.mu.Unlock()
			for _, e := range batch {
				d.deliver(e)
			}
			return
		}
	}
}

func (d *dispatcher) deliver(e Event) {
	level := slog.LevelInfo
	switch e.Kind {
	case EventProbe:
		level = slog.LevelDebug
	case EventHalt, EventFenceFailure, EventReconcileFailure, EventFlapSuppressed, EventMonitorStale, EventIdentity, EventDegraded, EventLateLanding, EventBrokenProbe, EventGray,
		EventDeadManFailure, EventRestingCancelled, EventFailbackAbandoned:
		level = slog.LevelWarn
	case EventOpenOrderDiff:
		if e.Err != nil || len(e.Diffs) > 0 {
			level = slog.LevelWarn
		}
	}
	if d.log.Enabled(context.Background(), level) {
		d.log.Log(context.Background(), level, "pathdialer: "+e.Kind.String(), "event", e.String())
	}
	if d.hook != nil {
		d.hook(e)
	}
}
