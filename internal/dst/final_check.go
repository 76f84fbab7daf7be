package dst

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// InvFinalVerdict: no final verdict is contradicted by the book. Judged at
// the run's end from the broker's book and audit, for every verdict the Path
// gave as final (Settlement.Final, in a reconcile's events or a late
// landing's):
//
//   - a final NOT_RECEIVED: no copy of that send is booked, before or after
//     the verdict. A booking is the resend's, not the send's, when the
//     client resent the order (under the same client order ID) and the
//     booking arrived at or after the resend and its bytes can have left the
//     client only at or after it (the audit's SentBy, when it can tell);
//   - a final FILLED, CANCELLED or RESTING: it was true of the book when
//     the broker last answered a lookup of the order before the verdict
//     (the verdict's own read; the verdict's time when there was none): a
//     booking in that state then, and still in it at the end or changed
//     only after that read. A RESTING order the book had cancelled before
//     that read is still excused when the Path reported the change after
//     the verdict (an EventRestingCancelled naming the order, or an
//     open-order reconcile that failed loudly). A change after the read (a
//     cancel-on-disconnect, a dead-man timer) does not contradict the
//     verdict; the switches' cancels are judged by resting-cancel-reported.
//
// A provisional verdict is not judged (it says it may change); nor is
// UNDETERMINED.
const InvFinalVerdict = "final-verdict-matches-book"

// verdictAt is one final verdict the Path gave.
type verdictAt struct {
	fate pathdialer.Fate
	at   time.Time
}

// finalRecord keeps the final verdicts and the reports of resting orders
// cancelled, from the Path's events. Safe for concurrent use.
type finalRecord struct {
	mu        sync.Mutex
	finals    map[string][]verdictAt
	cancelled map[string][]time.Time // EventRestingCancelled by order
	loud      []time.Time            // open-order reconciles that failed (not superseded)
}

// note records ev's final verdicts and resting-order reports.
func (r *finalRecord) note(ev pathdialer.Event) {
	switch ev.Kind {
	case pathdialer.EventReconcileSuccess, pathdialer.EventReconcileFailure, pathdialer.EventLateLanding:
		r.mu.Lock()
		for _, st := range ev.Settlements {
			if !st.Final || st.Fate == pathdialer.FateUndetermined {
				continue
			}
			if r.finals == nil {
				r.finals = map[string][]verdictAt{}
			}
			r.finals[st.OrderID] = append(r.finals[st.OrderID], verdictAt{fate: st.Fate, at: ev.Time})
		}
		r.mu.Unlock()
	case pathdialer.EventRestingCancelled:
		r.mu.Lock()
		if r.cancelled == nil {
			r.cancelled = map[string][]time.Time{}
		}
		r.cancelled[ev.OrderID] = append(r.cancelled[ev.OrderID], ev.Time)
		r.mu.Unlock()
	case pathdialer.EventOpenOrderDiff:
		if ev.Err != nil && !isSuperseded(ev) {
			r.mu.Lock()
			r.loud = append(r.loud, ev.Time)
			r.mu.Unlock()
		}
	}
}

// finalOrder is one order's ground for InvFinalVerdict.
type finalOrder struct {
	id       string
	finals   []verdictAt
	resentAt time.Time          // zero: never resent
	booked   []simbroker.Record // the audit's bookings of it (new or cut)
	book     []simbroker.Order  // the book's bookings of it at the end
	lookups  []time.Time        // the broker's answers to lookups of it (and of every order)
	reported []time.Time        // EventRestingCancelled naming it
}

// finalGround is what InvFinalVerdict is judged from.
type finalGround struct {
	start  time.Time
	loud   []time.Time
	orders []finalOrder
}

// resends reports whether booking r is the resend's own: made at or after
// the resend, by bytes that cannot have left before it.
func (o finalOrder) resends(r simbroker.Record) bool {
	if o.resentAt.IsZero() || r.Time.Before(o.resentAt) {
		return false
	}
	return r.SentBy.IsZero() || !r.SentBy.Before(o.resentAt)
}

// judgeFinal reports every violation of InvFinalVerdict.
func judgeFinal(g finalGround, viol func(inv, format string, a ...any)) {
	off := func(t time.Time) time.Duration { return t.Sub(g.start) }
	for _, o := range g.orders {
		for _, f := range o.finals {
			switch f.fate {
			case pathdialer.FateNotReceived:
				for _, r := range o.booked {
					if o.resends(r) {
						continue
					}
					viol(InvFinalVerdict, "%s settled NOT_RECEIVED as final at %v; the book has it booked through %s at %v (conn %s), not by a resend", o.id, off(f.at), r.Region, off(r.Time), r.ConnID)
					break
				}
			case pathdialer.FateFilled, pathdialer.FateCanceled, pathdialer.FateResting:
				want := map[pathdialer.Fate]string{pathdialer.FateFilled: simbroker.StatusFilled, pathdialer.FateCanceled: simbroker.StatusCanceled, pathdialer.FateResting: simbroker.StatusNew}[f.fate]
				if len(o.book) == 0 {
					viol(InvFinalVerdict, "%s settled %s as final at %v; the book has no booking of it", o.id, f.fate, off(f.at))
					continue
				}
				read := f.at // the verdict's read: the broker's last answer before it
				var last time.Time
				for _, l := range o.lookups {
					if !l.After(f.at) && l.After(last) {
						last = l
					}
				}
				if !last.IsZero() {
					read = last
				}
				// The booking's state as of the read: its state at the end
				// when it last changed at or before the read, else open
				// (a booking's only change is from open).
				var then []string
				for _, b := range o.book {
					switch {
					case b.CreatedAt.After(read):
					case !b.UpdatedAt.After(read) || b.Status == simbroker.StatusNew:
						then = append(then, b.Status)
					default:
						then = append(then, simbroker.StatusNew)
					}
				}
				ok := slices.Contains(then, want)
				if !ok && f.fate == pathdialer.FateResting {
					after := func(t time.Time) bool { return !t.Before(f.at) }
					ok = slices.ContainsFunc(o.reported, after) || slices.ContainsFunc(g.loud, after)
				}
				if !ok {
					var end []string
					for _, b := range o.book {
						end = append(end, fmt.Sprintf("%s since %v", b.Status, off(b.UpdatedAt)))
					}
					viol(InvFinalVerdict, "%s settled %s as final at %v (read at %v); the book says %v then (at the end: %s), and no later report of the change", o.id, f.fate, off(f.at), off(read), then, strings.Join(end, ", "))
				}
			}
		}
	}
}

// checkFinal judges InvFinalVerdict (w.mu is held).
func (w *world) checkFinal(audit simbroker.AuditLog, viol func(inv, format string, a ...any)) {
	judgeFinal(w.finalGroundOf(audit, w.b.Book()), viol)
}

// finalGroundOf collects the record (w.mu is held).
func (w *world) finalGroundOf(audit simbroker.AuditLog, book []simbroker.Order) finalGround {
	w.fv.mu.Lock()
	defer w.fv.mu.Unlock()
	g := finalGround{start: w.start, loud: slices.Clone(w.fv.loud)}
	booked := map[string][]simbroker.Record{}
	for _, r := range audit.Booked() {
		booked[r.ClientOrderID] = append(booked[r.ClientOrderID], r)
	}
	byID := map[string][]simbroker.Order{}
	for _, b := range book {
		byID[b.ClientOrderID] = append(byID[b.ClientOrderID], b)
	}
	lookups := map[string][]time.Time{}
	var mass []time.Time // a query of every order answers for each
	for _, r := range audit {
		switch {
		case r.Kind != simbroker.KindLookup:
		case r.ClientOrderID == "":
			mass = append(mass, r.Time)
		default:
			lookups[r.ClientOrderID] = append(lookups[r.ClientOrderID], r.Time)
		}
	}
	ids := make([]string, 0, len(w.fv.finals))
	for id := range w.fv.finals {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		o := w.orders[id]
		if o == nil {
			continue // the second process's (proc2.go): its own record
		}
		g.orders = append(g.orders, finalOrder{id: id, finals: w.fv.finals[id], resentAt: o.resentAt, booked: booked[id], book: byID[id], lookups: append(slices.Clone(lookups[id]), mass...), reported: w.fv.cancelled[id]})
	}
	return g
}
