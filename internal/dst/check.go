package dst

import (
	"fmt"
	"sort"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// Invariant names, as they appear in violations.
const (
	InvDuplicate    = "no-duplicate-order"             // no client order ID booked twice (the client resends only what MayResend allows)
	InvLost         = "no-lost-order"                  // every order the broker acknowledged is in the book
	InvMismatch     = "client-matches-book"            // ...where the client recorded it
	InvPhantom      = "no-phantom-order"               // every booking is an order the client sent
	InvTwoPaths     = "no-order-through-fenced-path"   // nothing sent after the client fenced a region is booked there
	InvBrokerFence  = "broker-fence-holds"             // nothing booked through a region the broker had fenced
	InvUnknown      = "every-unknown-order-settled"    // each unknown outcome is settled by a reconcile made after the order ended
	InvSettlement   = "settlement-matches-book"        // a settled fate other than NOT_RECEIVED is in the book
	InvSettledFirst = "unknown-settled-before-release" // flow under a later generation only after the order is settled
	InvPending      = "nothing-pending-at-rest"        // after the quiet period the Path holds no unknown order
	InvStream       = "ws-every-tick-once-in-order"
	InvFlowResumes  = "flow-resumes-after-heal" // with every fault healed, the gate is open again
	InvOrdersFlow   = "orders-flow"             // some order was acknowledged (a run that books nothing proves nothing)
	// Coordinated scenarios (process pauses across a lease):
	InvLeaseLapsed = "no-order-after-lease-lapsed" // no order started after its token's lease lapsed reaches the broker
	InvStaleToken  = "stale-token-rejected"        // tokens checked: nothing booked below the broker's highest token
)

func (w *world) check() *Result {
	res := &Result{Scenario: w.s}
	viol := func(inv, format string, a ...any) {
		res.Violations = append(res.Violations, fmt.Sprintf("INVARIANT %s: %s", inv, fmt.Sprintf(format, a...)))
	}
	audit := w.b.Audit()
	pending, gate, gateErr := w.restState() // proc2.go: the live process's

	w.mu.Lock()
	defer w.mu.Unlock()
	bookedAt := map[string][]simbroker.Record{}
	for _, r := range audit.Booked() {
		bookedAt[r.ClientOrderID] = append(bookedAt[r.ClientOrderID], r)
		if w.orders[r.ClientOrderID] == nil && !w.co.proc2Sent(r.ClientOrderID) { // proc2.go: the second process's own
			viol(InvPhantom, "%s booked through %s but never sent", r.ClientOrderID, r.Region)
		}
	}
	w.checkOrders(res, bookedAt, viol)
	w.checkProc2Orders(res, bookedAt, viol) // proc2.go: the second process's, against its own record
	return w.checkRest(res, audit, pending, gate, gateErr, viol)
}

// checkOrders judges each order of this process's client record against the
// broker's bookings (w.mu is held).
func (w *world) checkOrders(res *Result, bookedAt map[string][]simbroker.Record, viol func(inv, format string, a ...any)) {
	ids := make([]string, 0, len(w.orders))
	for id := range w.orders {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		o := w.orders[id]
		res.Stats.Orders++
		bk := bookedAt[id]
		switch o.outcome {
		case "acked":
			res.Stats.Acked++
		case "rejected":
			res.Stats.Rejected++
		case "unknown":
			res.Stats.Unknown++
		case "halted":
			res.Stats.Halted++
		case "expired":
			res.Stats.Expired++
		default:
			res.Stats.NotSent++
		}
		if len(bk) > 0 {
			res.Stats.Booked++
		}
		if len(bk) > 1 {
			res.Stats.Duplicates++
			viol(InvDuplicate, "%s booked %d times (%s at %v, %s at %v)", id, len(bk), bk[0].Region, w.off(bk[0].Time), bk[1].Region, w.off(bk[1].Time))
		}
		if o.outcome == "acked" {
			if len(bk) == 0 {
				viol(InvLost, "%s acknowledged by %s (HTTP %d) but not in the book", id, o.region, o.code)
			} else if !bookedIn(bk, o.region) {
				viol(InvMismatch, "%s recorded as booked in %s, the book says %s", id, o.region, bk[0].Region)
			}
		}
		if o.outcome == "unknown" && len(o.settled) == 0 {
			viol(InvUnknown, "%s finished unknown at %v and no reconcile settled it", id, w.off(o.end))
		} else if o.outcome == "unknown" && !o.settledSinceEnd() {
			viol(InvUnknown, "%s finished unknown at %v and was settled only at %v, before it finished (a reconcile that took it in flight); nothing settled it after", id, w.off(o.finishedUnknownAt()), w.off(o.settleAt))
		}
		if o.outcome == "unknown" {
			// The switch hands every ticket of the old generation to its
			// reconcile, in flight or finished unknown: flow released under
			// a later generation finds the order already settled.
			for _, r := range w.releases {
				if r.gen > o.ticketGn && (o.settleSq == 0 || r.seq < o.settleSq) {
					viol(InvSettledFirst, "%s finished unknown on gen %d at %v; flow was released under gen %d at %v before any reconcile settled it", id, o.ticketGn, w.off(o.end), r.gen, w.off(r.at))
					break
				}
			}
		}
		for _, f := range o.settled {
			switch f {
			case pathdialer.FateNotReceived:
				// A late landing: the copy the reconcile did not find was
				// booked after all (not the resend's own booking).
				if (!o.resent && len(bk) > 0) || (o.resent && (len(bk) > 1 || (len(bk) == 1 && bk[0].Time.Before(o.start)))) {
					res.Stats.LateLandings++
					res.Notes = append(res.Notes, fmt.Sprintf("late landing: %s settled NOT_RECEIVED, booked through %s at %v", id, bk[0].Region, w.off(bk[0].Time)))
				}
			case pathdialer.FateUndetermined:
			default:
				if len(bk) == 0 {
					viol(InvSettlement, "%s settled %s but never booked", id, f)
				}
			}
			res.Stats.Settlements++
		}
		// Two live paths: booked through a region the client had fenced,
		// although it was sent after the fence began.
		for _, r := range bk {
			for _, f := range w.fences {
				if f.endpoint != r.Region || r.Time.Before(f.start) || (!f.end.IsZero() && !r.Time.Before(f.end)) {
					continue
				}
				if o.first.After(f.start) {
					viol(InvTwoPaths, "%s sent at %v, after %s was fenced at %v, booked there at %v", id, w.off(o.first), f.endpoint, w.off(f.start), w.off(r.Time))
				} else {
					res.Notes = append(res.Notes, fmt.Sprintf("late landing: %s sent at %v before the fence of %s at %v, booked there at %v", id, w.off(o.first), f.endpoint, w.off(f.start), w.off(r.Time)))
				}
			}
		}
	}
}

// checkRest judges the invariants beyond each order and writes the trace
// (w.mu is held).
func (w *world) checkRest(res *Result, audit simbroker.AuditLog, pending []pathdialer.TicketInfo, gate pathdialer.GateState, gateErr error, viol func(inv, format string, a ...any)) *Result {
	for _, r := range audit.BookedWhileFenced() {
		viol(InvBrokerFence, "%s booked through %s while the broker had it fenced", r.ClientOrderID, r.Region)
	}
	for _, t := range pending {
		viol(InvPending, "%s still unknown on %s (gen %d) after the quiet period", t.OrderID, t.Endpoint, t.Token)
	}
	for _, b := range w.wsBad {
		viol(InvStream, "%s", b)
	}
	if gate != pathdialer.GateOpen {
		viol(InvFlowResumes, "gate %v after every fault was healed and %v passed (%v)", gate, w.s.Quiet, gateErr)
	}
	if res.Stats.Acked == 0 {
		viol(InvOrdersFlow, "none of %d orders was acknowledged (%d rejected, %d halted, %d not sent)", res.Stats.Orders, res.Stats.Rejected, res.Stats.Halted, res.Stats.NotSent)
	}
	res.Stats.Switches, res.Stats.Ticks, res.Stats.Probes, res.Stats.Resends = w.switches, w.ticks, w.probes, w.resendN
	w.checkLease(res, audit, viol)
	res.Stats.NotSentJudged = w.checkNotSent(audit, viol) // notsent_check.go
	w.checkTokens(res, audit, viol)                       // tokens_check.go
	w.checkProc2(res, audit, viol)                        // proc2.go
	w.checkResting(res, audit, viol)                      // resting_sim.go
	w.noteLongRecon(res)                                  // longrecon.go
	w.checkProgress(res, viol)                            // progress_check.go
	w.checkFenceConns(viol)                               // fenceconn.go
	w.checkLate(res, audit)                               // late_check.go
	w.checkFinal(audit, viol)                             // final_check.go
	if len(w.s.Moves) > 0 {
		w.checkComposed(res, viol)
		w.checkGround(viol)
		w.checkGrayFailback(res, audit, viol) // grayback.go
		w.checkAvail(res, audit, viol)        // avail.go
		// Liveness moves' cuts after their move ended (movecuts.go).
		res.Stats.LateMoveCuts, res.Stats.DisarmedCuts, res.Stats.SkippedCuts = w.moveCutFigures(audit)
	}

	for _, r := range audit {
		switch r.Kind {
		case simbroker.KindOrder:
			w.trace = append(w.trace, tline{at: r.Time.Sub(w.start), text: fmt.Sprintf("broker %s %s via %s %s", r.ClientOrderID, r.Outcome, r.Region, r.Detail)})
		case simbroker.KindRegionFenced, simbroker.KindRegionUnfenced:
			w.trace = append(w.trace, tline{at: r.Time.Sub(w.start), text: fmt.Sprintf("broker %s %s: %s", r.Kind, r.Region, r.Detail)})
		}
	}
	w.h2.check(res, viol) // h2sim.go
	w.fx.check(res, audit, viol)
	sort.SliceStable(w.trace, func(i, j int) bool {
		if w.trace[i].at != w.trace[j].at {
			return w.trace[i].at < w.trace[j].at
		}
		return w.trace[i].text < w.trace[j].text
	})
	res.Trace = append(res.Trace, splitLines(w.s.String())...)
	for _, l := range w.trace {
		res.Trace = append(res.Trace, fmt.Sprintf("%12s %s", l.at, l.text))
	}
	res.Trace = append(res.Trace, fmt.Sprintf("stats %+v", res.Stats))
	sort.Strings(res.Notes)
	for _, v := range res.Violations {
		res.Trace = append(res.Trace, v)
	}
	return res
}

func bookedIn(bk []simbroker.Record, region string) bool {
	for _, r := range bk {
		if r.Region == region {
			return true
		}
	}
	return false
}

// finishedUnknownAt is when o finished unknown: the end of its latest send
// as the client recorded it, or, if earlier, when a reconcile was first
// handed its ticket as unknown since that send. A FIX order never answered
// has no end of its own (the run's end closes its record): it finished
// when its ticket was first handed over as unknown, or, if it never was,
// its ticket was reconciled in flight at a switch and any settlement
// counts (the zero time).
func (o *orderRec) finishedUnknownAt() time.Time {
	if !o.unknownAt.IsZero() && !o.unknownAt.Before(o.start) && o.unknownAt.Before(o.end) {
		return o.unknownAt
	}
	if o.runEnded {
		return time.Time{}
	}
	return o.end
}

// settledSinceEnd reports whether a settlement of o was made at or after it
// finished unknown (finishedUnknownAt): only such a settlement settles an
// unknown outcome. One made while the order was in flight answered for a
// call still running, which the broker may yet book; a settlement at the
// very instant it finished (one virtual instant) counts.
func (o *orderRec) settledSinceEnd() bool {
	return len(o.settled) > 0 && !o.settleAt.Before(o.finishedUnknownAt())
}

func (w *world) off(t time.Time) time.Duration { return t.Sub(w.start) }

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// checkLease checks the invariants of decision validity (w.mu is held):
//
//   - no-order-after-lease-lapsed (coordinated scenarios): an order that
//     reached the broker (booked or not) under a token of a session that
//     was lost must have started (the client's Do call) before the deadline
//     that session had given Path.Extend: one started later must have been
//     refused by the Path (ErrTicketExpired, or ErrTradingHalted after the
//     follower's Halt). An order started earlier and written after the
//     lapse (paused between Ticket.Valid and its write) is the next one's.
//   - stale-token-rejected (the broker checks tokens): replaying the audit
//     in order, with the tokens other processes took when this process's
//     lease expired, nothing is booked with a token below the highest seen
//     before it. With tokens unchecked such a booking is the documented
//     case the promise does not cover: reported in Notes ("booked on a
//     lapsed lease"), counted in Stats.LapsedBookings.
func (w *world) checkLease(res *Result, audit simbroker.AuditLog, viol func(inv, format string, a ...any)) {
	res.Stats.Pauses, res.Stats.Lapses = w.co.pauseStats()
	for _, r := range audit {
		if r.Kind == simbroker.KindOrder && r.Outcome == simbroker.OutcomeStaleToken {
			res.Stats.StaleRejected++
		}
	}
	if w.co != nil {
		for _, r := range audit {
			o := w.orders[r.ClientOrderID]
			if r.Kind != simbroker.KindOrder || o == nil {
				continue
			}
			sess := w.co.sessionOf(r.Token)
			if sess == nil || !sess.lost {
				continue
			}
			// The send this record is of: the latest that began before it.
			sent := o.first
			if o.resent && !r.Time.Before(o.start) {
				sent = o.start
			}
			if !sent.Before(sess.lostDL) {
				viol(InvLeaseLapsed, "%s started at %v under token %d, whose lease was valid until %v (expired at the coordinator at %v); it reached the broker through %s at %v (%s)",
					r.ClientOrderID, w.off(sent), r.Token, w.off(sess.lostDL), w.off(sess.lostAt), r.Region, w.off(r.Time), r.Outcome)
			}
		}
	}
	if w.co == nil && w.s.Tokens != simbroker.TokensChecked {
		return // no tokens are sent
	}
	raises := w.co.raisesByTime()
	var raised, seen uint64 // tokens taken by other processes; tokens booked
	for _, r := range audit {
		for len(raises) > 0 && raises[0].at.Before(r.Time) {
			raised = max(raised, raises[0].token)
			raises = raises[1:]
		}
		switch {
		case r.Kind == simbroker.KindToken:
			raised = max(raised, r.Token)
		case r.Kind == simbroker.KindOrder && (r.Outcome == simbroker.OutcomeNew || r.Outcome == simbroker.OutcomeCut):
			if h := max(raised, seen); w.s.Tokens == simbroker.TokensChecked && r.Token < h {
				viol(InvStaleToken, "%s booked through %s at %v with token %d; the account had seen token %d", r.ClientOrderID, r.Region, w.off(r.Time), r.Token, h)
			} else if r.Token < raised {
				// Tokens not checked: the documented case the promise does
				// not cover (a write paused past its check, or an order
				// under a lapsed decision). Our own older tokens booked
				// late are late landings, reported above.
				res.Stats.LapsedBookings++
				res.Notes = append(res.Notes, fmt.Sprintf("booked on a lapsed lease: %s through %s at %v with token %d after another process took token %d (the broker does not check tokens)", r.ClientOrderID, r.Region, w.off(r.Time), r.Token, raised))
			}
			seen = max(seen, r.Token)
		}
	}
}
