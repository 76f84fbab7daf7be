package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// Late landings. An order written to the old path just before a fence can sit
// in a stalled connection, a proxy or the broker's gateway and be booked after
// reconciliation asked the broker and was told "not received"; and a venue's
// lookup can itself answer "not found" for a while after booking an order. So
// a NOT_RECEIVED is provisional until the venue's own guarantees (Config.Venue)
// make it final: the Path says so (Settlement.Provisional, the reconcile
// events, Snapshot) and never lets MayResend answer yes for it. It becomes
// final only on evidence the venue can give (venue.Profile.FinalNotReceived):
//
//   - the broker fenced the old path: Config.BrokerFencesViaFencer is set, the
//     Fencer's nil return for the order's endpoint is still in force (the
//     endpoint was not unfenced since), the venue can fence or check fencing
//     tokens (Profile.CanFence, CanCheckTokens), and the lookup came at least
//     the venue's false-negative horizon after the fence; or
//   - Config.Quarantine (at least the venue's false-negative horizon plus
//     Config.MaxCopyHold) passed since the verdict was first found and a
//     re-query (the Path calls the reconcile function again by itself, without holding
//     submissions, Reason ReasonRequery) still finds nothing.
//
// A lookup that finds the order is proof at any time; only "not found" needs
// the quarantine. So a provisional NOT_RECEIVED is looked up again early:
// every MaxCopyHold (at least the venue's LookupInterval) until it is final,
// and one LookupInterval after the endpoint it was sent through recovers
// (its probe takes it from DOWN to HEALTHY: copies that path held are
// delivered then). A re-query also asks about the provisional verdicts that
// would fall due while it keeps the reconciler paused for the venue's
// budget. An early look that finds nothing changes nothing: the verdict
// becomes final only as above. A copy booked while the verdict is
// provisional is thus reported within MaxCopyHold plus one LookupInterval
// (one listing's LookupIntervals through a function that reads the venue's
// order listings, Config.ReconcileListings: such a call asks about every
// due order) of the moment the venue's lookups show it: its booking, or up
// to the venue's lookup false-negative horizon later where its lookups lag.
// This holds as long as the re-queries succeed, the budget allows a lookup
// of every provisional order every MaxCopyHold, and no switch holds the
// gate meanwhile.
//
// A final NOT_RECEIVED stays watched: the Path looks it up again at growing
// intervals (Profile.RequerySchedule: 1 s, then doubling gaps, each at least
// the venue's LookupInterval and at most its retention) until
// Profile.LateLandingHorizon (at least 15 min) after the verdict, in the same
// re-queries (one call per reconciler, at most a budget's worth of orders per
// call, spaced so that lookups stay within the venue's budget). The watch of
// an order ends when MayResend grants its resend (its booking is then the
// resend's) or when it is found booked.
//
// An order found booked after it was found NOT_RECEIVED is a late landing:
// EventLateLanding names the order, the endpoint and region it was sent
// through, and the fate found; Snapshot.LateLandings counts them. One found
// after the verdict was final is an alarm (Verdict.AfterFinal, the event's
// Cause begins with "ALARM", Snapshot.LateAfterFinal): the venue or
// MaxCopyHold did not hold what the verdict relied on.

// ReasonRequery is Reconciliation.Reason for the Path's own re-query of
// provisional NOT_RECEIVED verdicts. With Config.ReconcileByService each service's
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
	OrderID  string `json:"order_id"`
	Service  string `json:"service"`
	Endpoint string `json:"endpoint"` // the endpoint the order was sent through
	Region   string `json:"region"`
	Token    uint64 `json:"token"`
	Fate     Fate   `json:"fate"`
	// Final: no later evidence can change the fate.
	Final bool `json:"final"`
	// FoundAt is when the fate was first found.
	FoundAt time.Time `json:"found_at"`
	// RequeryAt is when the next re-query of a NOT_RECEIVED is due: while it
	// is provisional, the next early look (at most MaxCopyHold after the
	// last) or the quarantine's end, whichever comes first; once it is
	// final, the late-landing watch's next look (zero when the order is no
	// longer watched).
	RequeryAt time.Time `json:"requery_at,omitzero"`
	// FinalAt is when a NOT_RECEIVED became final.
	FinalAt time.Time `json:"final_at,omitzero"`
	// WatchUntil (final NOT_RECEIVED) is when the late-landing watch ends:
	// the venue's LateLandingHorizon after FinalAt.
	WatchUntil time.Time `json:"watch_until,omitzero"`
	// LateLanding: NOT_RECEIVED first, found booked later.
	LateLanding bool `json:"late_landing,omitempty"`
	// AfterFinal (with LateLanding): found booked after the NOT_RECEIVED was
	// final. An alarm: the venue or Config.MaxCopyHold did not hold what the
	// verdict relied on.
	AfterFinal bool `json:"after_final,omitempty"`
	// ResentAt is when MayResend granted the one resend of a final
	// NOT_RECEIVED (zero before).
	ResentAt time.Time `json:"resent_at,omitzero"`
	Detail   string    `json:"detail,omitempty"`

	watchStep int // the late-landing watch's next look (index in its schedule)
}

// Resend answers "may I resend this order now, and under which ID?".
type Resend struct {
	// Allowed is true only for a final NOT_RECEIVED at a venue where a
	// resend under the same client order ID cannot book a second order (see
	// Path.MayResend), and only once per order: the first yes is the grant,
	// later calls answer no. Never while the verdict is provisional, the
	// order is in flight or awaiting reconciliation, or it was booked,
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
// first; provisional and watched ones are never dropped).
const maxVerdicts = 1 << 16

// verdicts is the Path's record of settled orders.
type verdicts struct {
	mu      sync.Mutex
	byID    map[string]*Verdict
	order   []string // insertion order of byID's keys, for eviction
	pending []TicketInfo

	// The late-landing watch (venue.go): offsets of its looks from FinalAt,
	// and its horizon.
	schedule []time.Duration
	horizon  time.Duration
	// late counts late landings, afterFinal those found after a final
	// verdict.
	late, afterFinal uint64
}

// open: a NOT_RECEIVED still to be looked up again (provisional, or final
// and watched).
func (v *Verdict) open() bool { return v.Fate == FateNotReceived && !v.RequeryAt.IsZero() }

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
		if ov := vs.byID[old]; ov != nil && ov.open() {
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
			v.Endpoint, v.Token = t.Endpoint, t.Token
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
			if ok, why := p.cfg.Venue.FinalNotReceived(p.evidence(v, now)); ok {
				p.finalize(v, now)
				s.Detail = appendDetail(s.Detail, "final: "+why)
			} else {
				v.RequeryAt = p.requeryAt(v, now)
				s.Detail = appendDetail(s.Detail, fmt.Sprintf("provisional: %s could still deliver, or the venue's lookup not see it yet; re-query after %v (%s)", orDefault(v.Endpoint, "the old path"), v.RequeryAt.Sub(now), why))
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

// finalize makes v a final NOT_RECEIVED at now and starts its late-landing
// watch.
func (p *Path) finalize(v *Verdict, now time.Time) {
	v.Final, v.FinalAt = true, now
	v.WatchUntil = now.Add(p.verdicts.horizon)
	v.watchStep = 0
	v.RequeryAt = now.Add(p.verdicts.schedule[0])
}

// requeryAt is when a provisional NOT_RECEIVED looked up at now is looked up
// again: one early look (earlyLookGap) later, since a lookup that finds the
// order is proof at any time, or sooner when the verdict may become final
// then (the quarantine's end, or the venue's false-negative horizon after a
// broker fence the venue can make).
func (p *Path) requeryAt(v *Verdict, now time.Time) time.Time {
	t := v.FoundAt.Add(p.cfg.Quarantine)
	if at, ok := p.brokerFencedAt(v.Endpoint); ok && (p.cfg.Venue.CanFence() || p.cfg.Venue.CanCheckTokens()) {
		if f := at.Add(p.cfg.Venue.FalseNegative()); f.Before(t) {
			t = f
		}
	}
	// plant:late-watch-quarantine-only begin
	if early := now.Add(p.earlyLookGap()); early.Before(t) {
		t = early
	}
	// plant:late-watch-quarantine-only end
	if !t.After(now) {
		t = now.Add(p.cfg.Venue.LookupInterval())
	}
	return t
}

// earlyLookGap is the longest gap between two lookups of a provisional
// NOT_RECEIVED: MaxCopyHold (at least the venue's LookupInterval), so that a
// copy booked while the verdict is provisional is found within MaxCopyHold
// plus the venue's pacing of its booking.
func (p *Path) earlyLookGap() time.Duration {
	return max(p.cfg.MaxCopyHold, p.cfg.Venue.LookupInterval())
}

// endpointRecovered brings the next look of the provisional NOT_RECEIVED
// verdicts of orders sent through endpoint forward to one LookupInterval
// after now: the endpoint's probe passes again, and whatever copies its path
// held are delivered then. It reports whether any look was brought forward.
func (p *Path) endpointRecovered(endpoint string, now time.Time) bool {
	at := now.Add(p.cfg.Venue.LookupInterval())
	p.verdicts.mu.Lock()
	defer p.verdicts.mu.Unlock()
	moved := false
	for _, id := range p.verdicts.order {
		if v := p.verdicts.byID[id]; v != nil && !v.Final && v.open() && v.Endpoint == endpoint && v.RequeryAt.After(at) {
			v.RequeryAt, moved = at, true
		}
	}
	return moved
}

// dueRequeries returns the NOT_RECEIVED verdicts due to be looked up again
// (provisional ones whose quarantine ended, watched ones whose next look is
// due), as tickets for the reconcile function, provisional ones first.
// next is when the earliest verdict not yet due is (zero when none is open).
func (p *Path) dueRequeries(now time.Time) (due []TicketInfo, next time.Time) {
	p.verdicts.mu.Lock()
	defer p.verdicts.mu.Unlock()
	var out, watched []TicketInfo
	for _, id := range p.verdicts.order {
		v := p.verdicts.byID[id]
		if v == nil || !v.open() {
			continue
		}
		if now.Before(v.RequeryAt) {
			if next.IsZero() || v.RequeryAt.Before(next) {
				next = v.RequeryAt
			}
			continue
		}
		t := TicketInfo{OrderID: v.OrderID, Service: v.Service, Endpoint: v.Endpoint, Token: v.Token, State: TicketHanded}
		if v.Final {
			watched = append(watched, t)
		} else {
			out = append(out, t)
		}
	}
	return append(out, watched...), next
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

// lateStats returns the late landings found, those after a final verdict,
// and the orders the late-landing watch still looks up.
func (p *Path) lateStats() (late, afterFinal uint64, watched int) {
	p.verdicts.mu.Lock()
	defer p.verdicts.mu.Unlock()
	for _, v := range p.verdicts.byID {
		if v.Final && v.open() {
			watched++
		}
	}
	return p.verdicts.late, p.verdicts.afterFinal, watched
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
		if v == nil || !v.open() {
			// Settled since (booked, or a resend granted: its booking is the
			// resend's), or no longer kept.
			s.Final = v != nil && v.Final
			continue
		}
		switch s.Fate {
		case FateUndetermined:
			// Nothing learnt: looked up again at the next re-query.
			s.Final, s.Provisional = v.Final, !v.Final
		case FateNotReceived:
			s.Final, s.Provisional = v.Final, !v.Final
			if v.Final {
				p.watched(v, s, now)
				continue
			}
			if now.Before(v.RequeryAt) {
				// Asked about ahead of its time (venue.go: requeryAhead): the
				// next look is MaxCopyHold after this one, or at the
				// quarantine's end.
				v.RequeryAt = p.requeryAt(v, now)
				continue
			}
			e := p.evidence(v, now)
			early := now.Sub(v.FoundAt) < p.cfg.Quarantine
			if early {
				// An early look (a positive answer is proof at any time): only
				// a broker fence makes the verdict final before the
				// quarantine ends.
				e.LookupAfterSend = 0
			}
			ok, why := p.cfg.Venue.FinalNotReceived(e)
			if !ok && early {
				why = fmt.Sprintf("an early look, %v after it was first found missing; final no sooner than the quarantine's end (%v)", now.Sub(v.FoundAt).Round(time.Millisecond), p.cfg.Quarantine)
			}
			if !ok {
				v.RequeryAt = p.requeryAt(v, now)
				s.Detail = appendDetail(s.Detail, fmt.Sprintf("provisional: %s; re-query after %v", why, v.RequeryAt.Sub(now)))
				continue
			}
			p.finalize(v, now)
			s.Final, s.Provisional = true, false
			s.Detail = appendDetail(s.Detail, fmt.Sprintf("final: still not received %v after it was first found missing (%s); watched for a late landing until %s", now.Sub(v.FoundAt).Round(time.Millisecond), why, v.WatchUntil.Format(time.RFC3339)))
			v.Detail = s.Detail
		default:
			afterFinal := v.Final
			v.Fate, v.Final, v.LateLanding, v.AfterFinal, v.RequeryAt = s.Fate, true, true, afterFinal, time.Time{}
			s.Final, s.Provisional = true, false
			p.verdicts.late++
			if afterFinal {
				p.verdicts.afterFinal++
				s.Detail = appendDetail(s.Detail, fmt.Sprintf("LATE LANDING AFTER A FINAL VERDICT: %s through %s, final NOT_RECEIVED since %s (%v before)", s.Fate, orDefault(v.Endpoint, "the old path"), v.FinalAt.Format(time.RFC3339Nano), now.Sub(v.FinalAt).Round(time.Millisecond)))
			} else {
				s.Detail = appendDetail(s.Detail, fmt.Sprintf("late landing: %s through %s, first found not received at %s", s.Fate, orDefault(v.Endpoint, "the old path"), v.FoundAt.Format(time.RFC3339Nano)))
			}
			v.Detail = s.Detail
			late = append(late, *v)
		}
	}
	return out, late
}

// watched moves a final NOT_RECEIVED that a look of the late-landing watch
// still found missing to its next look, or ends its watch at the horizon.
func (p *Path) watched(v *Verdict, s *Settlement, now time.Time) {
	sched := p.verdicts.schedule
	for v.watchStep < len(sched) && !v.FinalAt.Add(sched[v.watchStep]).After(now) {
		v.watchStep++
	}
	if v.watchStep >= len(sched) {
		v.RequeryAt = time.Time{}
		s.Detail = appendDetail(s.Detail, fmt.Sprintf("late-landing watch ended: still not received %v after the final verdict", now.Sub(v.FinalAt).Round(time.Millisecond)))
		return
	}
	v.RequeryAt = v.FinalAt.Add(sched[v.watchStep])
}

// Verdict returns the Path's verdict on orderID, without asking for a
// resend (MayResend grants one; this only reads). ok is false when no
// reconcile has settled the order (or its record was evicted).
func (p *Path) Verdict(orderID string) (v Verdict, ok bool) {
	p.verdicts.mu.Lock()
	defer p.verdicts.mu.Unlock()
	if pv, found := p.verdicts.byID[orderID]; found {
		return *pv, true
	}
	return Verdict{}, false
}

// MayResend answers whether orderID may be sent again now, and under which
// client order ID. It answers yes (Allowed) only for a final NOT_RECEIVED
// (see the package documentation's late landings: a broker fence the venue
// can make, or a quarantine covering the venue's false-negative horizon and
// Config.MaxCopyHold, then a re-query that found nothing), and only where the
// venue itself cannot book the resend as a second order (Config.Venue's
// ResendSafe): it refuses a duplicate client order ID in every state for long
// enough, or the verdict rests on a broker fence or a fencing-token check. A
// quarantine alone never allows a resend: a copy held longer than any
// quarantine is booked as a second order wherever the venue's deduplication
// does not cover it. The answer is then no, naming the venue fact, and the
// order stays watched for a late landing (EventLateLanding).
//
// While the verdict is provisional, the order is in flight or awaiting
// reconciliation, or the broker booked, canceled or rejected it, the answer
// is no, with the reason. An order the Path holds no record of is a no with
// ErrOrderNotTracked. A yes is given once per order (safe for concurrent
// callers: one of them gets it), so an order is never resent twice on the
// Path's word; it ends the order's late-landing watch (a booking found later
// would be the resend's own).
//
// A yes relies on the broker's book answering the reconciler truthfully and
// on the facts of Config.Venue; see the package documentation's table.
//
// It is not rest.Verdict.MayResend, which a transport gives at once for one
// attempt that cannot have been booked (nothing was sent, or the broker
// refused it). This one answers for an order whose attempt may have reached
// the broker (an unknown outcome, or in flight at a switch), after
// reconciliation settled it, and grants one resend: ask it only for orders
// the transport handed to reconciliation.
func (p *Path) MayResend(orderID string) (Resend, error) {
	r := Resend{OrderID: orderID}
	now := time.Now()
	p.verdicts.mu.Lock()
	v, ok := p.verdicts.byID[orderID]
	finalNR := ok && v.Fate == FateNotReceived && v.Final
	var safe bool
	var why string
	if finalNR && v.ResentAt.IsZero() {
		e := p.evidence(v, v.FinalAt)
		e.SinceFirstSend = now.Sub(v.FoundAt)
		safe, why = p.cfg.Venue.ResendSafe(e)
		if safe {
			v.ResentAt = now
			v.RequeryAt = time.Time{} // the watch ends: a booking is now the resend's
		}
	}
	if ok {
		r.Verdict = *v
	}
	pending := p.verdicts.pending
	p.verdicts.mu.Unlock()
	if ok {
		v := r.Verdict
		switch {
		case finalNR && safe:
			r.Allowed = true
			r.Reason = "final NOT_RECEIVED: " + v.Detail + "; a resend cannot book twice: " + why + "; resend under the same client order ID"
		case finalNR && !v.ResentAt.IsZero():
			r.Reason = fmt.Sprintf("a resend was already granted at %s", v.ResentAt.Format(time.RFC3339Nano))
		case finalNR:
			watch := fmt.Sprintf("the order stays watched for a late landing until %s", v.WatchUntil.Format(time.RFC3339))
			if v.RequeryAt.IsZero() {
				watch = fmt.Sprintf("its late-landing watch ended at %s", v.WatchUntil.Format(time.RFC3339))
			}
			r.Reason = "final NOT_RECEIVED, but a resend could book a second order: " + why + "; " + watch + " (a new order is a new decision, under a new ID)"
		case v.Fate == FateNotReceived:
			r.Reason = fmt.Sprintf("provisional NOT_RECEIVED: the order may still land through %s; the re-query is due at %s", orDefault(v.Endpoint, "the old path"), v.RequeryAt.Format(time.RFC3339Nano))
		case v.AfterFinal:
			r.Reason = fmt.Sprintf("the order landed late (%s), after its NOT_RECEIVED was final: do not resend", v.Fate)
		case v.LateLanding:
			r.Reason = fmt.Sprintf("the order landed late (%s): do not resend", v.Fate)
		default:
			r.Reason = fmt.Sprintf("the broker reports it %s: do not resend (a new order is a new decision, under a new ID)", v.Fate)
		}
		return r, nil
	}
	for _, t := range pending {
		if t.OrderID == orderID {
			r.Verdict = Verdict{OrderID: orderID, Service: t.Service, Endpoint: t.Endpoint, Token: t.Token}
			r.Reason = "awaiting reconciliation"
			return r, nil
		}
	}
	if t, st, ok := p.findTicket(orderID); ok {
		r.Verdict = Verdict{OrderID: orderID, Service: t.Service, Endpoint: t.Endpoint, Token: t.Token}
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
// Config.ReconcileByService; "" for Config.Reconcile).
type requeryState struct {
	attempt int
	retryAt time.Time
}

// reconcilerKey names the reconciler that settles service's orders: the
// service itself when Config.ReconcileByService has it, else "" (Config.Reconcile).
func (p *Path) reconcilerKey(service string) string {
	if _, ok := p.cfg.ReconcileByService[service]; ok {
		return service
	}
	return ""
}

// maybeRequery re-queries the provisional NOT_RECEIVED verdicts whose
// quarantine ended, without holding submissions, each reconciler on its own
// (with Config.ReconcileByService, one service's failing re-query neither delays nor
// undoes another's) with its own backoff. It runs in the normal phase and,
// with Config.ReconcileByService, while a switch's reconcile is still under way, for
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
	if a := p.active.Load(); a.rt != nil && engine.HealthState(a.rt.state.Load()) == engine.Down {
		// Lookups go through the active endpoint: none while it is DOWN
		// (the next evaluation tries again).
		c.requeryWake = time.Time{}
		return
	}
	now := time.Now()
	tickets, next := p.dueRequeries(now)
	c.requeryWake = next
	for k, st := range c.requery {
		if st.attempt == 0 && !now.Before(st.retryAt) && c.requeryRuns[k] == nil {
			delete(c.requery, k) // its pause for the venue's budget is over (a failing one keeps its count: its backoff grows)
		}
	}
	if len(tickets) == 0 {
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
		if now.Before(st.retryAt) {
			c.wakeRequeryAt(st.retryAt) // its pause for the venue's budget ends
			continue
		}
		if c.requeryRuns[key] != nil {
			continue // its re-query is still running: its result kicks the next
		}
		// At most a budget's worth (the rest at the next re-query), with the
		// provisional verdicts that would fall due during its pause (venue.go).
		ts := p.requeryAhead(key, groups[key], now)
		c.requeryGroup(ctx, key, ts, st)
	}
}

// wakeRequeryAt makes the controller run maybeRequery at at (or sooner, if
// already due sooner), not only at the next probe round.
func (c *controller) wakeRequeryAt(at time.Time) {
	if c.requeryWake.IsZero() || at.Before(c.requeryWake) {
		c.requeryWake = at
	}
}

// lateCause is EventLateLanding's Cause: an alarm when the order landed after
// its NOT_RECEIVED was final.
func lateCause(v Verdict) string {
	c := fmt.Sprintf("order %q, found not received at %s, was booked (%s) through %s (%s)", v.OrderID, v.FoundAt.Format(time.RFC3339Nano), v.Fate, orDefault(v.Endpoint, "?"), orDefault(v.Region, "?"))
	if v.AfterFinal {
		c = fmt.Sprintf("ALARM: booked after a final verdict: %s, final NOT_RECEIVED since %s", c, v.FinalAt.Format(time.RFC3339Nano))
	}
	return c
}
