package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Late landings. An order written to the old path just before a fence can sit
// in a stalled connection, a proxy or the broker's gateway and be booked after
// reconciliation asked the broker and was told "not received". So a
// NOT_RECEIVED found while the old path could still deliver is provisional: the
// Path says so (Settlement.Provisional, the reconcile events, Snapshot) and
// never lets MayResend answer yes for it. It becomes final only on evidence:
//
//   - the broker fenced the old path: Config.FenceAtBroker is set and the
//     Fencer's nil return for the order's endpoint is still in force when the
//     verdict is found (the endpoint was not unfenced since); or
//   - Config.Quarantine passed since the verdict was first found and a
//     re-query (the Path calls the Reconciler again by itself, without holding
//     submissions, Reason ReasonRequery) still finds nothing.
//
// A provisional NOT_RECEIVED that a re-query finds booked is a late landing:
// EventLateLanding names the order, the endpoint and region it was sent
// through, and the fate found.

// DefaultQuarantine is Config.Quarantine's default: 10 s, twice the longest
// bound the transports put by default on getting an order's bytes to the
// broker and an answer back (5 s: the FIX relay's DialTimeout, the REST read
// breaker's Timeout), so a copy delayed by up to one such bound on the way out
// and one in the broker's gateway has landed before the re-query. The local
// fence also aborts connections (unsent bytes are discarded, not flushed).
// Raise it when your broker's gateway can queue longer, or when you set the
// transports' timeouts higher.
const DefaultQuarantine = 10 * time.Second

// ReasonRequery is Reconciliation.Reason for the Path's own re-query of
// provisional NOT_RECEIVED verdicts. With Config.Reconcilers each service's
// function is re-queried on its own, with only its service's orders and
// Reconciliation.Service set, and with its own backoff: one that fails keeps
// only its own verdicts provisional. The re-query also runs while a switch's
// reconcile is still retrying, for the services whose own reconcile succeeded.
const ReasonRequery = "re-query provisional not-received"

// ErrOrderNotTracked: MayResend was asked about an order the Path holds no
// record of (never acquired on this Path, answered definitively by the broker
// while in flight, or its verdict is older than the Path keeps).
var ErrOrderNotTracked = errors.New("pathdialer: no record of the order")

// Verdict is what the Path knows about one order handed to reconciliation.
type Verdict struct {
	OrderID    string `json:"order_id"`
	Service    string `json:"service"`
	Endpoint   string `json:"endpoint"` // the endpoint the order was sent through
	Region     string `json:"region"`
	Generation uint64 `json:"generation"`
	Fate       Fate   `json:"fate"`
	// Final: no later evidence can change the fate.
	Final bool `json:"final"`
	// FoundAt is when the fate was first found.
	FoundAt time.Time `json:"found_at"`
	// RequeryAt (provisional NOT_RECEIVED only) is when the quarantine ends and
	// the re-query that can make the verdict final is due.
	RequeryAt time.Time `json:"requery_at,omitzero"`
	// LateLanding: provisional NOT_RECEIVED first, found booked later.
	LateLanding bool `json:"late_landing,omitempty"`
	// ResentAt is when MayResend granted the one resend of a final
	// NOT_RECEIVED (zero before).
	ResentAt time.Time `json:"resent_at,omitzero"`
	Detail   string    `json:"detail,omitempty"`
}

// Resend answers "may I resend this order now, and under which ID?".
type Resend struct {
	// Allowed is true only for a final NOT_RECEIVED (see Path.MayResend for
	// what "final" relies on), and only once per order: the first yes is the
	// grant, later calls answer no. Never while the verdict is provisional,
	// the order is in flight or awaiting reconciliation, or it was booked,
	// canceled or rejected.
	Allowed bool `json:"allowed"`
	// OrderID is the client order ID to resend under when Allowed: always the
	// original one, so that a broker that deduplicates client order IDs still
	// turns any copy nobody could foresee into one order.
	OrderID string `json:"order_id"`
	// Verdict is what the Path knows (zero Fate and Final false when the order
	// is not settled yet).
	Verdict Verdict `json:"verdict"`
	// Reason says why, in words for a log line.
	Reason string `json:"reason"`
}

// maxVerdicts bounds the verdicts a Path keeps for MayResend (oldest dropped
// first; provisional ones are never dropped).
const maxVerdicts = 1 << 16

// verdicts is the Path's record of settled orders.
type verdicts struct {
	mu      sync.Mutex
	byID    map[string]*Verdict
	order   []string // insertion order of byID's keys, for eviction
	pending []TicketInfo
}

func (vs *verdicts) put(v *Verdict) {
	if vs.byID == nil {
		vs.byID = make(map[string]*Verdict)
	}
	if _, ok := vs.byID[v.OrderID]; !ok {
		vs.order = append(vs.order, v.OrderID)
	}
	vs.byID[v.OrderID] = v
	for len(vs.order) > maxVerdicts {
		old := vs.order[0]
		if ov := vs.byID[old]; ov != nil && !ov.Final {
			break
		}
		vs.order = vs.order[1:]
		delete(vs.byID, old)
	}
}

// setPending publishes the tickets of the reconcile in progress (MayResend
// says "awaiting reconciliation" for them). The slice's elements are never
// written after this.
func (p *Path) setPending(ts []TicketInfo) {
	p.verdicts.mu.Lock()
	p.verdicts.pending = ts
	p.verdicts.mu.Unlock()
}

// judge annotates a successful reconcile's settlements with Final and
// Provisional, records them, and returns the annotated copy. now is when the
// reconcile returned.
func (p *Path) judge(r Reconciliation, settled []Settlement, now time.Time) []Settlement {
	if len(settled) == 0 {
		return settled
	}
	out := slices.Clone(settled)
	idx := make(map[string]int, len(r.Tickets))
	for i, t := range r.Tickets {
		idx[t.OrderID] = i
	}
	p.verdicts.mu.Lock()
	defer p.verdicts.mu.Unlock()
	for i := range out {
		s := &out[i]
		v := &Verdict{OrderID: s.OrderID, Service: s.Service, Fate: s.Fate, FoundAt: now, Detail: s.Detail}
		if j, ok := idx[s.OrderID]; ok {
			t := r.Tickets[j]
			v.Endpoint, v.Generation = t.Endpoint, t.Generation
			if v.Service == "" {
				v.Service = t.Service
			}
		}
		if rt, ok := p.eps[v.Endpoint]; ok {
			v.Region = rt.ep.Region
		}
		switch s.Fate {
		case FateUndetermined:
			s.Final, s.Provisional = false, false
		case FateNotReceived:
			if p.brokerFenced(v.Endpoint) {
				v.Final = true
				s.Detail = appendDetail(s.Detail, "final: the broker fenced "+v.Endpoint)
			} else {
				v.RequeryAt = now.Add(p.cfg.Quarantine)
				s.Detail = appendDetail(s.Detail, fmt.Sprintf("provisional: %s could still deliver; re-query after %v", orDefault(v.Endpoint, "the old path"), p.cfg.Quarantine))
			}
			s.Final, s.Provisional = v.Final, !v.Final
		default:
			v.Final = true
			s.Final, s.Provisional = true, false
		}
		v.Detail = s.Detail
		if s.Fate != FateUndetermined {
			p.verdicts.put(v)
		}
	}
	return out
}

func appendDetail(d, more string) string {
	if d == "" {
		return more
	}
	return d + "; " + more
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// brokerFenced: the broker itself confirmed that endpoint can no longer book
// this account's orders, and the endpoint was not unfenced since.
func (p *Path) brokerFenced(endpoint string) bool {
	rt, ok := p.eps[endpoint]
	return ok && p.cfg.FenceAtBroker && rt.brokerFenced.Load()
}

// dueRequeries returns the provisional verdicts whose quarantine has ended, as
// tickets for the Reconciler.
func (p *Path) dueRequeries(now time.Time) []TicketInfo {
	p.verdicts.mu.Lock()
	defer p.verdicts.mu.Unlock()
	var out []TicketInfo
	for _, id := range p.verdicts.order {
		v := p.verdicts.byID[id]
		if v == nil || v.Final || v.Fate != FateNotReceived || now.Before(v.RequeryAt) {
			continue
		}
		out = append(out, TicketInfo{OrderID: v.OrderID, Service: v.Service, Endpoint: v.Endpoint, Generation: v.Generation, State: TicketHanded})
	}
	return out
}

// provisional returns the provisional verdicts, oldest first.
func (p *Path) provisional() []Verdict {
	p.verdicts.mu.Lock()
	defer p.verdicts.mu.Unlock()
	var out []Verdict
	for _, id := range p.verdicts.order {
		if v := p.verdicts.byID[id]; v != nil && !v.Final && v.Fate == FateNotReceived {
			out = append(out, *v)
		}
	}
	return out
}

// requeried records a re-query's findings and returns the annotated
// settlements and the late landings found.
func (p *Path) requeried(settled []Settlement, now time.Time) ([]Settlement, []Verdict) {
	out := slices.Clone(settled)
	var late []Verdict
	p.verdicts.mu.Lock()
	defer p.verdicts.mu.Unlock()
	for i := range out {
		s := &out[i]
		v := p.verdicts.byID[s.OrderID]
		if v == nil || v.Final {
			s.Final = v != nil
			continue
		}
		switch s.Fate {
		case FateUndetermined:
			s.Provisional = true
		case FateNotReceived:
			if now.Before(v.RequeryAt) {
				s.Provisional = true
				continue
			}
			v.Final = true
			v.RequeryAt = time.Time{}
			s.Final = true
			s.Detail = appendDetail(s.Detail, fmt.Sprintf("final: still not received %v after it was first found missing", now.Sub(v.FoundAt).Round(time.Millisecond)))
			v.Detail = s.Detail
		default:
			v.Fate, v.Final, v.LateLanding, v.RequeryAt = s.Fate, true, true, time.Time{}
			s.Final = true
			s.Detail = appendDetail(s.Detail, fmt.Sprintf("late landing: %s through %s, first found not received at %s", s.Fate, orDefault(v.Endpoint, "the old path"), v.FoundAt.Format(time.RFC3339Nano)))
			v.Detail = s.Detail
			late = append(late, *v)
		}
	}
	return out, late
}

// MayResend answers whether orderID may be sent again now, and under which
// client order ID. It answers yes (Allowed) only for a final NOT_RECEIVED:
// the broker fenced the path the order went out on (Config.FenceAtBroker), or
// the quarantine passed and a re-query still found nothing. While the verdict
// is provisional, the order is in flight or awaiting reconciliation, or the
// broker booked, canceled or rejected it, the answer is no, with the reason.
// An order the Path holds no record of is a no with ErrOrderNotTracked. A yes
// is given once per order (safe for concurrent callers: one of them gets it),
// so an order is never resent twice on the Path's word.
//
// A yes relies on the broker's book answering the reconciler truthfully, and
// for the quarantine path on no copy of the order being delayed longer than
// Config.Quarantine; see the package documentation's table.
func (p *Path) MayResend(orderID string) (Resend, error) {
	r := Resend{OrderID: orderID}
	p.verdicts.mu.Lock()
	v, ok := p.verdicts.byID[orderID]
	grant := ok && v.Fate == FateNotReceived && v.Final && v.ResentAt.IsZero()
	if grant {
		v.ResentAt = time.Now()
	}
	if ok {
		r.Verdict = *v
	}
	pending := p.verdicts.pending
	p.verdicts.mu.Unlock()
	if ok {
		v := r.Verdict
		switch {
		case grant:
			r.Allowed = true
			r.Reason = "final NOT_RECEIVED: " + v.Detail + "; resend under the same client order ID"
		case v.Fate == FateNotReceived && v.Final:
			r.Reason = fmt.Sprintf("a resend was already granted at %s", v.ResentAt.Format(time.RFC3339Nano))
		case v.Fate == FateNotReceived:
			r.Reason = fmt.Sprintf("provisional NOT_RECEIVED: the order may still land through %s; the re-query is due at %s", orDefault(v.Endpoint, "the old path"), v.RequeryAt.Format(time.RFC3339Nano))
		case v.LateLanding:
			r.Reason = fmt.Sprintf("the order landed late (%s): do not resend", v.Fate)
		default:
			r.Reason = fmt.Sprintf("the broker reports it %s: do not resend (a new order is a new decision, under a new ID)", v.Fate)
		}
		return r, nil
	}
	for _, t := range pending {
		if t.OrderID == orderID {
			r.Verdict = Verdict{OrderID: orderID, Service: t.Service, Endpoint: t.Endpoint, Generation: t.Generation}
			r.Reason = "awaiting reconciliation"
			return r, nil
		}
	}
	if t, st, ok := p.findTicket(orderID); ok {
		r.Verdict = Verdict{OrderID: orderID, Service: t.Service, Endpoint: t.Endpoint, Generation: t.Generation}
		r.Reason = "the order is " + st
		return r, nil
	}
	r.Reason = "no record of the order"
	return r, fmt.Errorf("%w %q (never acquired on this Path, answered definitively, or too old)", ErrOrderNotTracked, orderID)
}

// findTicket looks for an order in flight or finished unknown (linear: not a
// hot path).
func (p *Path) findTicket(orderID string) (TicketInfo, string, bool) {
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		for i := range s.infos {
			if s.infos[i].orderID == orderID {
				ti := s.infos[i].info()
				s.mu.Unlock()
				return ti, "in flight", true
			}
		}
		s.mu.Unlock()
	}
	p.unknownMu.Lock()
	defer p.unknownMu.Unlock()
	for _, t := range p.unknown {
		if t.OrderID == orderID {
			return t.info(TicketUnknown), "of unknown fate, awaiting reconciliation", true
		}
	}
	return TicketInfo{}, "", false
}

// requeryState is one reconciler's re-query backoff (key as in
// Config.Reconcilers; "" for Config.Reconciler).
type requeryState struct {
	attempt int
	retryAt time.Time
}

// reconcilerKey names the reconciler that settles service's orders: the
// service itself when Config.Reconcilers has it, else "" (Config.Reconciler).
func (p *Path) reconcilerKey(service string) string {
	if _, ok := p.cfg.Reconcilers[service]; ok {
		return service
	}
	return ""
}

// maybeRequery re-queries the provisional NOT_RECEIVED verdicts whose
// quarantine ended, without holding submissions, each reconciler on its own
// (with Config.Reconcilers, one service's failing re-query neither delays nor
// undoes another's) with its own backoff. It runs in the normal phase and,
// with Config.Reconcilers, while a switch's reconcile is still under way, for
// the services whose own reconcile already succeeded. The re-queries run in
// their own goroutines (background.go); this only starts the due ones.
func (c *controller) maybeRequery(ctx context.Context) {
	p := c.p
	if ctx.Err() != nil {
		return
	}
	if c.phase != phaseNormal && (c.phase != phaseReconciling || c.multi == nil) {
		return
	}
	now := time.Now()
	tickets := p.dueRequeries(now)
	if len(tickets) == 0 {
		clear(c.requery)
		return
	}
	groups := map[string][]TicketInfo{}
	for _, t := range tickets {
		k := p.reconcilerKey(t.Service)
		groups[k] = append(groups[k], t)
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		if c.multi != nil {
			if g := c.multi.groups[key]; g == nil || !g.done {
				continue // its own reconcile is still under way
			}
		}
		if c.requery == nil {
			c.requery = map[string]*requeryState{}
		}
		st := c.requery[key]
		if st == nil {
			st = &requeryState{}
			c.requery[key] = st
		}
		if now.Before(st.retryAt) || c.requeryRuns[key] != nil {
			continue // not due yet, or its re-query is still running
		}
		c.requeryGroup(ctx, key, groups[key], st)
	}
}
