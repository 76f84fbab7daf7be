package pathdialer

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// GateState is the state of the submission gate.
type GateState int

const (
	// GateNotStarted: Start has not been called; Acquire returns ErrNotStarted.
	GateNotStarted GateState = iota
	// GateOpen: submissions get a ticket at once, on the active endpoint.
	GateOpen
	// GateHeld: a fence or reconcile is pending; Acquire waits for release or
	// for its context.
	GateHeld
	// GateHalted: Acquire returns ErrTradingHalted at once, with the cause.
	GateHalted
	// GateClosed: the Path is closed; Acquire returns ErrClosed.
	GateClosed
)

var gateNames = [...]string{"NOT_STARTED", "OPEN", "HELD", "HALTED", "CLOSED"}

// String returns the upper-case name.
func (s GateState) String() string {
	if s >= 0 && int(s) < len(gateNames) {
		return gateNames[s]
	}
	return fmt.Sprintf("GateState(%d)", int(s))
}

// MarshalText renders the state as its String form.
func (s GateState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// gateView is one immutable state of the gate. Every transition publishes a new
// view and closes the old one's changed channel, so a ticket granted under a view
// can be checked, after registration, against the view still in force.
type gateView struct {
	state    GateState
	endpoint string // GateOpen: where tickets go
	gen      uint64
	cause    error
	since    time.Time
	changed  chan struct{}
	// released (GateHeld only, with Config.ReconcileByService): services whose own
	// reconcile succeeded; their tickets are granted on endpoint while the
	// others still wait.
	released map[string]bool
	// downHold: held by a Report that took the endpoint DOWN (downhold.go),
	// not by the controller.
	downHold bool
}

// TicketState says where a ticket stands.
type TicketState int

const (
	// TicketInFlight: granted, not finished.
	TicketInFlight TicketState = iota
	// TicketUnknown: finished with an unknown outcome; waiting for reconciliation.
	TicketUnknown
	// TicketHanded: handed to reconciliation; a later finish is reported as late.
	TicketHanded
)

var ticketStateNames = [...]string{"IN_FLIGHT", "UNKNOWN", "HANDED"}

// String returns the upper-case name.
func (s TicketState) String() string {
	if s >= 0 && int(s) < len(ticketStateNames) {
		return ticketStateNames[s]
	}
	return fmt.Sprintf("TicketState(%d)", int(s))
}

// MarshalText renders the state as its String form.
func (s TicketState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Ticket is the permission to submit one order on one endpoint under one
// token. Submit on Endpoint only, then call Done or Unknown exactly once.
//
// A Ticket from Acquire is the caller's to keep. AcquireInto fills a Ticket the
// caller owns (no allocation); it may be filled again once it finished with
// Done, or after an Unknown was handed to reconciliation.
type Ticket struct {
	// OrderID is the client order ID the ticket was acquired for.
	OrderID string
	// Service is the transport's service ("rest", "fix").
	Service string
	// Endpoint is the endpoint to submit on: the active one when granted.
	Endpoint string
	// Token is the fencing token the ticket was granted under: on a
	// coordinated Path (ExternalDecisions) the token passed to Assign (for coord/etcd, the etcd revision of the assignment), on a
	// standalone Path the local switch count. Transports can write it into each
	// order (a header, a FIX tag) so a broker or gateway that checks tokens
	// rejects a stale writer.
	Token uint64
	// ValidUntil is the instant (monotonic reading) after which the decision
	// the ticket was granted under may have lapsed (a coordinated Path's lease
	// minus a safety margin, as last given to Path.Extend). The zero time means
	// the decision does not expire. Transports call Valid immediately before
	// the bytes of an order are written and do not send when it fails.
	ValidUntil time.Time

	p         *Path
	shard     *ticketShard
	idx       int          // position in the shard's lists of tickets in flight
	epoch     uint64       // the shard's epoch when granted: a later one means handed
	state     atomic.Int32 // a ticket* value
	cause     error
	unknownAt time.Time
	viewSince time.Time // when the gate view it was granted under began
}

// Internal ticket states; the zero value is a Ticket never acquired.
const (
	ticketFree int32 = iota
	ticketInFlight
	ticketDone
	ticketUnknown
	ticketHanded // handed to reconciliation while in flight (by service)
	// ticketUnknownHanded: finished unknown, then taken by a reconciliation.
	ticketUnknownHanded
	// ticketLate: finished after it was handed to reconciliation in flight;
	// later finishes are ignored.
	ticketLate
)

// TicketInfo is a ticket as handed to reconciliation.
type TicketInfo struct {
	OrderID  string      `json:"order_id"`
	Service  string      `json:"service"`
	Endpoint string      `json:"endpoint"`
	Token    uint64      `json:"token"`
	State    TicketState `json:"state"`
	// Cause is why the outcome is unknown (nil when it was still in flight).
	Cause error `json:"-"`
}

// Valid reports whether the decision the ticket was granted under is still
// known to be valid: nil while it is, else an error wrapping
// ErrTicketExpired. It is not once ValidUntil has passed (never, when
// ValidUntil is zero), nor once the ticket was handed to reconciliation while
// in flight (a switch, a resume after a halt: the reconcile looks the order up
// as possibly sent, and flow is released only after it, whatever the token).
// A transport that gets an error must not send the order: it returns its
// not-sent error and finishes the ticket with Done.
func (t *Ticket) Valid() error {
	if t.handedInFlight() {
		return fmt.Errorf("%w: order %q, granted under token %d, was handed to reconciliation before it was sent (the path was held and reconciled since)", ErrTicketExpired, t.OrderID, t.Token)
	}
	if t.ValidUntil.IsZero() {
		return nil
	}
	if now := time.Now(); now.Before(t.ValidUntil) {
		return nil
	} else {
		return fmt.Errorf("%w: order %q, granted under token %d, valid until %s ago", ErrTicketExpired, t.OrderID, t.Token, now.Sub(t.ValidUntil).Round(time.Millisecond))
	}
}

// handedInFlight: t was handed to reconciliation while in flight (with every
// ticket of its shard, or alone, by service).
func (t *Ticket) handedInFlight() bool {
	s := t.shard
	if t.p == nil || s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := t.state.Load()
	return st == ticketHanded || st == ticketInFlight && t.epoch != s.epoch
}

func (t *Ticket) info(st TicketState) TicketInfo {
	return TicketInfo{OrderID: t.OrderID, Service: t.Service, Endpoint: t.Endpoint, Token: t.Token, State: st, Cause: t.cause}
}

// Done records that the broker answered the order definitively (accepted, filled
// or rejected), or that it was not sent. Calls after the first finish are
// ignored, except that a finish after the ticket was handed to reconciliation
// emits EventLateTicket.
func (t *Ticket) Done() {
	if t.p == nil {
		return
	}
	s := t.shard
	s.mu.Lock()
	if s.holds(t) {
		t.state.Store(ticketDone)
		s.unlink(t)
		s.mu.Unlock()
		t.p.inflightFinished()
		return
	}
	handed, _ := s.finishHanded(t)
	s.mu.Unlock()
	if handed {
		t.late("done")
	}
}

// Unknown records that the order's fate is unknown (cause says why: a timeout, a
// connection cut after the request was written, a 5xx). The ticket is handed to the
// next reconciliation. An order that finishes unknown after a reconciliation
// took it in flight (a switch's or a resume's) is reported by EventLateTicket;
// when that reconciliation has already reported its verdict (it looked the
// order up while its request was still on the wire) the order is handed to
// reconciliation again, and Path.Unknown lists it until then. So every
// unknown outcome is followed by a settlement of its order: the one still
// pending, or a new one.
func (t *Ticket) Unknown(cause error) {
	if t.p == nil {
		return
	}
	if cause == nil {
		cause = ErrUnknownOutcome
	}
	t.p.orderUnknown(t.Endpoint, cause) // what failed was a submission (gray.go)
	// The move from "in flight" to "unknown" happens under the shard's lock,
	// which takeTickets holds while it takes the shard: a reconcile finds the
	// ticket either in flight or among the unknown ones, never in between, and
	// inflightCount never counts it out before it is among the unknown ones.
	s := t.shard
	s.mu.Lock()
	if s.holds(t) {
		t.state.Store(ticketUnknown)
		t.cause = cause
		t.unknownAt = time.Now()
		s.unlink(t)
		t.p.addUnknown(t)
		s.mu.Unlock()
		t.p.inflightFinished()
		return
	}
	handed, inFlight := s.finishHanded(t)
	s.mu.Unlock()
	if handed {
		t.late("unknown: " + cause.Error())
	}
	if inFlight && t.p.judgedSince(t.OrderID, t.viewSince) {
		// The reconcile that took it in flight already reported its
		// verdict, found before this outcome: settle it again. (One still
		// to report reports after this finish.)
		t.p.rehandUnknown(t, cause)
	}
}

// judgedSince: a reconcile judged the order since (its verdict was found at
// or after since).
func (p *Path) judgedSince(orderID string, since time.Time) bool {
	p.verdicts.mu.Lock()
	defer p.verdicts.mu.Unlock()
	v, ok := p.verdicts.byID[orderID]
	return ok && !v.FoundAt.Before(since)
}

// rehandUnknown puts an order that finished unknown after it was handed to
// reconciliation in flight back among the unknown ones, as a copy: the
// caller's Ticket stays free to be filled again.
func (p *Path) rehandUnknown(t *Ticket, cause error) {
	c := &Ticket{OrderID: t.OrderID, Service: t.Service, Endpoint: t.Endpoint, Token: t.Token, ValidUntil: t.ValidUntil,
		p: p, cause: cause, unknownAt: time.Now()}
	c.state.Store(ticketUnknown)
	p.unknownMu.Lock()
	p.unknown = append(p.unknown, c)
	p.unknownMu.Unlock()
}

// late reports a finish after the ticket was handed to reconciliation.
func (t *Ticket) late(what string) {
	t.p.events.emit(Event{Kind: EventLateTicket, Endpoint: t.Endpoint, Token: t.Token, OrderID: t.OrderID,
		Cause: fmt.Sprintf("order %q finished (%s) after it was handed to reconciliation", t.OrderID, what)})
}

// ticketShards spreads tickets in flight over independently locked lists, so
// submitters on different cores rarely meet on one lock.
const ticketShards = 64

// ticketShard holds its tickets in flight as values (what reconciliation
// needs of each) in one slice, beside their owners: handing them all over is
// one bulk copy and an epoch step, without touching a ticket; a ticket whose
// epoch is older than its shard's was handed. Removal swaps the last one in.
type ticketShard struct {
	mu     sync.Mutex
	epoch  uint64
	grants uint64 // tickets granted in this shard so far: numbers them (shardEntry.grant)
	infos  []shardEntry
	owners []*Ticket
	_      [128 - unsafe.Sizeof(sync.Mutex{}) - 2*unsafe.Sizeof(uint64(0)) - unsafe.Sizeof([]shardEntry(nil)) - unsafe.Sizeof([]*Ticket(nil))]byte // shards on separate cache lines
}

// shardEntry is what reconciliation needs of a ticket in flight, kept small:
// the endpoint and token come from the gate view it was granted under.
type shardEntry struct {
	orderID, service string
	view             *gateView
	grant            uint64 // the shard's grants when it was granted (late orders: suspicion.go)
}

func (e *shardEntry) info() TicketInfo {
	return TicketInfo{OrderID: e.orderID, Service: e.service, Endpoint: e.view.endpoint, Token: e.view.gen, State: TicketInFlight}
}

// The shard's lock is held for all of these. The slices keep their capacity,
// so a steady flow of orders allocates nothing.

func (s *ticketShard) link(t *Ticket, v *gateView) {
	t.idx, t.epoch = len(s.infos), s.epoch
	s.grants++
	s.infos = append(s.infos, shardEntry{orderID: t.OrderID, service: t.Service, view: v, grant: s.grants})
	s.owners = append(s.owners, t)
}

func (s *ticketShard) unlink(t *Ticket) {
	last := len(s.infos) - 1
	if i := t.idx; i != last {
		m := s.owners[last]
		s.infos[i], s.owners[i], m.idx = s.infos[last], m, i
	}
	s.infos[last], s.owners[last] = shardEntry{}, nil
	s.infos, s.owners = s.infos[:last], s.owners[:last]
}

// holds: t is in flight in this shard (granted, not finished, not handed).
func (s *ticketShard) holds(t *Ticket) bool {
	return t.state.Load() == ticketInFlight && t.epoch == s.epoch
}

// finishHanded is a finish of t that came after t was handed to
// reconciliation (with every ticket of its shard, or alone: by service, or
// after finishing unknown): handed reports whether it was, inFlight whether it
// was handed while still in flight (the first finish since; t then records
// it, and later finishes are ignored).
func (s *ticketShard) finishHanded(t *Ticket) (handed, inFlight bool) {
	switch st := t.state.Load(); {
	case st == ticketHanded || st == ticketInFlight && t.epoch != s.epoch:
		t.state.Store(ticketLate)
		return true, true
	case st == ticketUnknownHanded:
		return true, false
	}
	return false, false
}

// Acquire asks the gate for permission to submit one order (service names the
// transport, orderID the client order ID). When the gate is open it returns at once
// with a ticket for the active endpoint. While a fence or reconcile is pending it
// waits until flow is released (then returns a ticket for the new endpoint) or ctx
// ends. When trading is halted it returns ErrTradingHalted at once, wrapping the
// cause; after Close, ErrClosed. On a coordinated Path whose decision lapsed
// (the deadline last given to Extend passed) it returns ErrTicketExpired at
// once. Reads must not acquire tickets: they are never held.
func (p *Path) Acquire(ctx context.Context, service, orderID string) (*Ticket, error) {
	t := new(Ticket)
	if err := p.AcquireInto(ctx, t, service, orderID); err != nil {
		return nil, err
	}
	return t, nil
}

// AcquireInto is Acquire into a Ticket the caller owns: it allocates nothing on
// an open gate. t must be a zero Ticket, or one that finished with Done, or one
// finished with Unknown that a reconciliation has since taken; filling a ticket
// still in flight or still waiting for reconciliation returns ErrInvalidConfig
// and leaves it untouched. On error t is not a ticket (Done and Unknown on it
// do nothing).
func (p *Path) AcquireInto(ctx context.Context, t *Ticket, service, orderID string) error {
	if strings.TrimSpace(orderID) == "" {
		return fmt.Errorf("%w: Acquire needs a client order ID (reconciliation identifies orders by it)", ErrInvalidConfig)
	}
	if p.namedOnly {
		if _, ok := p.cfg.ReconcileByService[service]; !ok {
			return fmt.Errorf("%w: service %q has no reconciler (Config.ReconcileByService names %s and Reconcile is nil): its orders could not be settled after a switch", ErrInvalidConfig, service, p.reconcilerNames())
		}
	}
	switch t.state.Load() {
	case ticketInFlight:
		s := t.shard
		s.mu.Lock()
		inFlight := s.holds(t)
		s.mu.Unlock()
		if inFlight {
			return fmt.Errorf("%w: AcquireInto: the ticket for order %q is still in flight; use another Ticket", ErrInvalidConfig, t.OrderID)
		}
	case ticketUnknown:
		return fmt.Errorf("%w: AcquireInto: the ticket for order %q is still waiting for reconciliation; use another Ticket", ErrInvalidConfig, t.OrderID)
	}
	for {
		v := p.gate.Load()
		state := v.state
		if state == GateHeld && v.released[service] {
			state = GateOpen // this service's reconcile is done: its flow is released
		}
		switch state {
		case GateOpen:
			var until time.Time
			if dl := p.validNanos.Load(); dl != 0 {
				if now := int64(time.Since(p.epoch)); now >= dl {
					return fmt.Errorf("%w: the decision for %q under token %d lapsed %v ago (no extension from the coordinator); order %q not granted",
						ErrTicketExpired, v.endpoint, v.gen, time.Duration(now-dl).Round(time.Millisecond), orderID)
				}
				until = p.epoch.Add(time.Duration(dl))
			}
			// Any shard will do. A refilled ticket goes back to the shard it was
			// last in when that one is free (its memory is likely still in this
			// core's cache: it was probably pooled on this core); otherwise to a
			// random one, so submitters on different cores rarely meet.
			yieldPoint(p, "acquire: view -> shard")
			s := t.shard
			if t.p != p || s == nil || !s.mu.TryLock() {
				busy := s
				i := rand.Uint32() % ticketShards
				if s = &p.shards[i]; s == busy {
					s = &p.shards[(i+1)%ticketShards] // not the one found busy
				}
				s.mu.Lock()
			}
			// Register and re-check under the shard's lock. takeTickets locks every
			// shard after the gate left this view, so either it finds the ticket
			// (granted while the view was in force) or this re-check sees the new
			// view and no ticket exists: a ticket is never granted under a held
			// gate, and never handed to reconciliation unless it was granted.
			if p.gate.Load() == v {
				t.OrderID, t.Service, t.Endpoint, t.Token, t.ValidUntil = orderID, service, v.endpoint, v.gen, until
				t.p, t.shard, t.cause, t.unknownAt, t.viewSince = p, s, nil, time.Time{}, v.since
				t.state.Store(ticketInFlight)
				s.link(t, v)
				s.mu.Unlock()
				return nil
			}
			s.mu.Unlock()
		case GateHeld:
			select {
			case <-v.changed:
			case <-ctx.Done():
				return fmt.Errorf("pathdialer: order %q waited while submissions were held (%v): %w", orderID, v.cause, ctx.Err())
			}
		case GateHalted:
			return fmt.Errorf("%w: %w", ErrTradingHalted, v.cause)
		case GateClosed:
			return ErrClosed
		default:
			return ErrNotStarted
		}
	}
}

// setGate publishes a new gate view and wakes everyone waiting on the old one.
func (p *Path) setGate(state GateState, endpoint string, gen uint64, cause error) *gateView {
	return p.setGateReleased(state, endpoint, gen, cause, nil)
}

// setGateReleased is setGate with, for a held gate, the services already
// released on endpoint (the map is not modified afterwards).
func (p *Path) setGateReleased(state GateState, endpoint string, gen uint64, cause error, released map[string]bool) *gateView {
	p.gateMu.Lock()
	defer p.gateMu.Unlock()
	yieldPoint(p, "gate: new view")
	old := p.gate.Load()
	if old.state == GateClosed {
		return old
	}
	downHold := false
	if (state == GateOpen || len(released) > 0) && p.downByTraffic(endpoint) {
		// Live traffic took the endpoint DOWN after the controller decided to
		// open on it: stay held; the Report's kick makes it evaluate again.
		state, released, cause, downHold = GateHeld, nil, p.downCause(endpoint), true
	}
	v := &gateView{state: state, endpoint: endpoint, gen: gen, cause: cause, since: time.Now(), changed: make(chan struct{}), released: released, downHold: downHold}
	p.gate.Store(v)
	close(old.changed)
	return v
}

// GateState returns the gate's state and, when held or halted, why.
func (p *Path) GateState() (GateState, error) {
	v := p.gate.Load()
	return v.state, v.cause
}

// addUnknown: the ticket's shard lock is held (lock order: shard, then unknownMu).
func (p *Path) addUnknown(t *Ticket) {
	yieldPoint(p, "gate: shard -> unknown")
	p.unknownMu.Lock()
	p.unknown = append(p.unknown, t)
	p.unknownMu.Unlock()
}

func (p *Path) inflightFinished() {
	yieldPoint(p, "gate: finished")
	if !p.draining.Load() {
		return
	}
	select {
	case p.inflightWake <- struct{}{}:
	default:
	}
}

// inflightCount counts tickets granted and not finished.
func (p *Path) inflightCount() int {
	n := 0
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		n += len(s.infos)
		s.mu.Unlock()
	}
	return n
}

// waitInflight waits until no ticket is in flight or grace passes.
func (p *Path) waitInflight(ctx context.Context, grace time.Duration) {
	if grace <= 0 {
		return
	}
	// Announce the wait before counting: a ticket finishing after the count
	// then always wakes it.
	p.draining.Store(true)
	defer p.draining.Store(false)
	if p.inflightCount() == 0 {
		return
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for p.inflightCount() > 0 {
		select {
		case <-p.inflightWake:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// takeTickets hands every in-flight ticket and every unknown-outcome ticket to
// reconciliation. The gate is not open when this runs, so no new ticket appears.
// It runs in time linear in the number of tickets, with one allocation.
func (p *Path) takeTickets() []TicketInfo {
	return p.takeTicketsInto(nil)
}

func (p *Path) takeTicketsInto(out []TicketInfo) []TicketInfo {
	return p.takeServiceInto(out, "")
}

// takeServiceInto takes the tickets of one service only (every service when
// service is ""): with Config.ReconcileByService, a service still held must not take
// the tickets of one already released, which are ordinary flow.
func (p *Path) takeServiceInto(out []TicketInfo, service string) []TicketInfo {
	// Size the result once: the counts may only shrink (the gate is not open),
	// except that unknown tickets come from the shards.
	n := 0
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		n += len(s.infos)
		s.mu.Unlock()
	}
	p.unknownMu.Lock()
	n += len(p.unknown)
	p.unknownMu.Unlock()
	out = slices.Grow(out, n)
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		// Every ticket in the list is in flight: Done and Unknown take it out
		// under this lock before they change its state.
		if service == "" {
			// Every ticket at once: read the entries, step the epoch.
			for i := range s.infos {
				out = append(out, s.infos[i].info())
			}
			s.epoch++
			clear(s.infos)
			clear(s.owners)
			s.infos, s.owners = s.infos[:0], s.owners[:0]
		} else {
			for i := 0; i < len(s.infos); {
				if s.infos[i].service != service {
					i++
					continue
				}
				out = append(out, s.infos[i].info())
				t := s.owners[i]
				t.state.Store(ticketHanded)
				s.unlink(t) // swaps the last one into i
			}
		}
		s.mu.Unlock()
	}
	yieldPoint(p, "gate: take shards -> take unknown")
	return p.takeUnknownService(out, service)
}

// takeUnknown hands every unknown-outcome ticket to reconciliation.
func (p *Path) takeUnknown() []TicketInfo { return p.takeUnknownService(nil, "") }

func (p *Path) takeUnknownService(out []TicketInfo, service string) []TicketInfo {
	p.unknownMu.Lock()
	defer p.unknownMu.Unlock()
	unknown := p.unknown
	if service == "" {
		p.unknown = nil
	} else {
		p.unknown = nil
		var keep []*Ticket
		for _, t := range unknown {
			if t.Service != service {
				keep = append(keep, t)
			}
		}
		p.unknown = keep
	}
	out = slices.Grow(out, len(unknown))
	for _, t := range unknown {
		if service != "" && t.Service != service {
			continue
		}
		// Read first: once handed, the owner of a caller-owned Ticket may refill it.
		out = append(out, t.info(TicketUnknown))
		t.state.Store(ticketUnknownHanded)
	}
	return out
}

// oldestUnknown returns when the oldest pending unknown-outcome ticket finished
// (zero when there is none).
func (p *Path) oldestUnknown() time.Time {
	p.unknownMu.Lock()
	defer p.unknownMu.Unlock()
	if len(p.unknown) == 0 {
		return time.Time{}
	}
	return p.unknown[0].unknownAt
}

// Unknown returns the orders finished with an unknown outcome that no
// reconciliation has taken yet.
func (p *Path) Unknown() []TicketInfo {
	p.unknownMu.Lock()
	defer p.unknownMu.Unlock()
	out := make([]TicketInfo, len(p.unknown))
	for i, t := range p.unknown {
		out[i] = t.info(TicketUnknown)
	}
	return out
}

// reconcilerNames lists the services named in Config.ReconcileByService, sorted.
func (p *Path) reconcilerNames() string {
	names := slices.Sorted(maps.Keys(p.cfg.ReconcileByService))
	return "[" + strings.Join(names, " ") + "]"
}
