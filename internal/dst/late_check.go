package dst

import (
	"fmt"
	"sort"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// InvLateReported: every late landing is reported in time. An order the Path
// settled NOT_RECEIVED and the broker booked after its lookup answered "not
// found" (the book's booking, not the resend's) is reported
// (EventLateLanding) by a re-query begun at most lateBound after the later
// of its booking and the verdict: MaxCopyHold, plus the venue's
// LookupInterval, plus the Path's pause between two re-queries
// (ReconcileBackoff's longest, 500 ms here), plus the time the gate was held
// or halted in between (a switch's reconcile, not the re-query, runs then).
// Judged from the broker's book and lookups; a landing whose deadline falls
// after the run's end is counted in Notes (the run waits for them, see
// world.settleLate, so none is expected).
const InvLateReported = "late-landing-reported-in-time"

// InvResendAllowed: every resend the client made (under the same client
// order ID) is one the venue profile in force allows: the scenario's
// profile (simVenue) judges, with venue.Profile.ResendSafe, the evidence the
// world recorded, not the Path's: the time since the order's first send, the
// broker's last "not found" lookup of it before the resend, and whether the
// broker itself had fenced every region the order was sent through (its
// KindRegionFenced records) before that lookup and still at the resend.
const InvResendAllowed = "resend-allowed-by-venue"

// requeryPauseMax is the Path's longest pause between two re-queries in the
// simulation (its ReconcileBackoff.Max).
const requeryPauseMax = 500 * time.Millisecond

// lateOrder is one order's record for InvLateReported and InvResendAllowed.
type lateOrder struct {
	id        string
	first     time.Time   // first send
	nrAt      time.Time   // the Path's first NOT_RECEIVED verdict (its event), zero if none
	notFound  []time.Time // the broker's "not found" answers to lookups of it
	booked    []time.Time // the book's bookings of it after its first "not found", before any resend
	resentAt  time.Time   // zero: never resent
	regions   []string    // the regions it was sent through
	looks     []time.Time // re-queries begun with it among their tickets
	reportsAt time.Time   // its EventLateLanding, zero if none
	// settledAt: the first settlement after its NOT_RECEIVED saying it is
	// booked, from another reconcile (a switch's or a settle's, which took
	// it again: it was in flight at the first lookup and ended unknown);
	// that tells the client too. Zero if none.
	settledAt time.Time
}

// lateGround is what the two invariants are judged from.
type lateGround struct {
	profile        venue.Profile
	hold, interval time.Duration
	end            time.Time // when the run's record ends
	closed         []ival    // the gate held or halted
	fences         []simbroker.FenceSpan
	orders         []lateOrder
}

// lateBound is how long after a landing a re-query must have begun to
// report it, before the time the gate was closed is added.
func (g lateGround) lateBound() time.Duration { return g.hold + g.interval + requeryPauseMax }

// deadline is when a re-query must have begun to report a landing at t:
// lateBound later, lengthened by every stretch of it the gate was closed.
func (g lateGround) deadline(t time.Time) time.Time {
	d := t.Add(g.lateBound())
	for range 8 {
		var closed time.Duration
		for _, c := range g.closed {
			from, to := latest(c.from, t), c.to
			if to.IsZero() || to.After(d) {
				to = d
			}
			if to.After(from) {
				closed += to.Sub(from)
			}
		}
		nd := t.Add(g.lateBound() + closed)
		if nd.Equal(d) {
			break
		}
		d = nd
	}
	return d
}

// judgeLate judges InvLateReported and InvResendAllowed; notes are landings
// whose deadline is past the run's end.
func judgeLate(g lateGround) (viols, notes []string) {
	v := func(inv, format string, a ...any) {
		viols = append(viols, fmt.Sprintf("INVARIANT %s: %s", inv, fmt.Sprintf(format, a...)))
	}
	for _, o := range g.orders {
		if !o.resentAt.IsZero() {
			g.judgeResend(o, v)
		}
		if o.nrAt.IsZero() || len(o.booked) == 0 {
			continue
		}
		b := o.booked[0]
		from := latest(b, o.nrAt)
		dl := g.deadline(from)
		if o.reportsAt.IsZero() && (o.settledAt.IsZero() || o.settledAt.Before(b)) {
			if dl.After(g.end) {
				notes = append(notes, fmt.Sprintf("late landing of %s booked at %v not reported before the run ended (its deadline was later)", o.id, b))
				continue
			}
			v(InvLateReported, "%s settled NOT_RECEIVED at %v, booked at %v, never reported (a re-query was due by %v: %v after it)", o.id, o.nrAt, b, dl, dl.Sub(from))
			continue
		}
		var look time.Time // the re-query that reported it: the latest begun before the report
		for _, l := range o.looks {
			if !l.After(o.reportsAt) {
				look = l
			}
		}
		if !o.settledAt.IsZero() && !o.settledAt.Before(b) && (o.reportsAt.IsZero() || o.settledAt.Before(look)) {
			look = o.settledAt // another reconcile told the client first
		}
		if look.After(dl) || look.IsZero() {
			v(InvLateReported, "%s settled NOT_RECEIVED at %v, booked at %v, reported at %v by a re-query begun at %v: %v after it, the bound is %v",
				o.id, o.nrAt, b, o.reportsAt, look, look.Sub(from), dl.Sub(from))
		}
	}
	return viols, notes
}

// judgeResend judges one resend against the profile's facts, from the
// world's record. The rule is stated here from the facts themselves, not by
// calling venue.Profile.ResendSafe (the code under test): a resend under the
// same client order ID cannot book twice when the venue documents refusing a
// duplicate ID in every state for longer than the time since the first send
// plus the longest copy hold, or when the venue can fence (a kill switch or
// one session per identity, documented) and had fenced every region the
// order went through before the lookup that found it missing, at least the
// venue's lookup false-negative horizon before that lookup, and still at the
// resend. (A fencing-token check alone makes nothing final in the
// simulation: the Path counts one only with its Fencer's word, which the
// broker's fence gives.)
func (g lateGround) judgeResend(o lateOrder, v func(inv, format string, a ...any)) {
	p := g.profile
	since := o.resentAt.Sub(o.first)
	documented := func(b venue.Basis) bool { return b == venue.BasisDocumented || b == venue.BasisReported }
	if documented(p.DedupScope.Basis) && p.DedupScope.Value == venue.DedupAllStates &&
		documented(p.DedupWindow.Basis) && p.DedupWindow.Value >= since+g.hold {
		return
	}
	var lookup time.Time // the broker's last "not found" before the resend
	for _, t := range o.notFound {
		if t.Before(o.resentAt) {
			lookup = t
		}
	}
	canFence := documented(p.BrokerFence.Basis) && (p.BrokerFence.Value == venue.FenceKillSwitch || p.BrokerFence.Value == venue.FenceOneSession)
	fn := venue.UnknownFalseNegative
	if documented(p.LookupFalseNegative.Basis) {
		fn = p.LookupFalseNegative.Value
	}
	why := fmt.Sprintf("%s does not refuse a duplicate client order ID in every state for %v", p.Name, since+g.hold)
	switch {
	case lookup.IsZero():
		why += ", and no lookup found it missing before"
	case !canFence:
		why += fmt.Sprintf(", and cannot fence (%v)", p.BrokerFence.Value)
	default:
		cut, ok := g.fencedThrough(o.regions, lookup, o.resentAt)
		if ok && lookup.Sub(cut) >= fn {
			return
		}
		why += fmt.Sprintf(", and the broker had not fenced every region it went through (%v) %v before the lookup that found it missing, or lifted a fence before the resend", o.regions, fn)
	}
	v(InvResendAllowed, "%s resent at %v (first sent at %v, last found missing at %v): the venue does not allow it: %s",
		o.id, o.resentAt, o.first, lookup, why)
}

// fencedThrough reports whether the broker had fenced every one of regions
// at lookup, each fence still in force at resend, and when the last of them
// began.
func (g lateGround) fencedThrough(regions []string, lookup, resend time.Time) (time.Time, bool) {
	if len(regions) == 0 {
		return time.Time{}, false
	}
	var last time.Time
	for _, r := range regions {
		ok := false
		for _, f := range g.fences {
			if f.Region == r && !f.From.After(lookup) && (f.Until.IsZero() || f.Until.After(resend)) {
				ok, last = true, latest(last, f.From)
				break
			}
		}
		if !ok {
			return time.Time{}, false
		}
	}
	return last, true
}

// lateGroundOf collects the record (w.mu is held).
func (w *world) lateGroundOf(audit simbroker.AuditLog, end time.Time) lateGround {
	p := simVenue(w.s)
	g := lateGround{profile: p, hold: quarantine, interval: p.LookupInterval(), end: end, fences: audit.FenceSpans(), closed: w.gateClosed(end)}
	notFound := map[string][]time.Time{}
	firstNF := map[string]uint64{}
	for _, r := range audit {
		if r.Kind == simbroker.KindLookup && r.ClientOrderID != "" && r.Outcome == simbroker.OutcomeFailed {
			notFound[r.ClientOrderID] = append(notFound[r.ClientOrderID], r.Time)
			if _, ok := firstNF[r.ClientOrderID]; !ok {
				firstNF[r.ClientOrderID] = r.Seq
			}
		}
	}
	booked := map[string][]simbroker.Record{}
	for _, r := range audit.Booked() {
		booked[r.ClientOrderID] = append(booked[r.ClientOrderID], r)
	}
	ids := make([]string, 0, len(w.orders))
	for id := range w.orders {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		o := w.orders[id]
		lo := lateOrder{id: id, first: o.first, nrAt: o.nrAt, notFound: notFound[id], resentAt: o.resentAt, regions: o.regions,
			looks: w.looks[id], reportsAt: w.lateReported[id], settledAt: o.bookedAt}
		if seq, ok := firstNF[id]; ok {
			for _, r := range booked[id] {
				if r.Seq > seq && (o.resentAt.IsZero() || r.Time.Before(o.resentAt)) {
					lo.booked = append(lo.booked, r.Time)
				}
			}
		}
		g.orders = append(g.orders, lo)
	}
	return g
}

// gateClosed returns the stretches the gate was held or halted, from the
// Path's events (a hold, halt or fence until the next release or resume).
func (w *world) gateClosed(end time.Time) []ival {
	var out []ival
	var from time.Time
	for _, r := range w.cx.gates {
		switch r.kind {
		case pathdialer.EventHold, pathdialer.EventHalt, pathdialer.EventFenceStart, pathdialer.EventSwitch:
			if from.IsZero() {
				from = r.at
			}
		case pathdialer.EventRelease, pathdialer.EventResume:
			if !from.IsZero() && r.service == "" {
				out = append(out, ival{from: from, to: r.at})
				from = time.Time{}
			}
		}
	}
	if !from.IsZero() {
		out = append(out, ival{from: from, to: end})
	}
	return out
}

// checkLate judges InvLateReported and InvResendAllowed (w.mu is held).
func (w *world) checkLate(res *Result, audit simbroker.AuditLog) {
	vs, notes := judgeLate(w.lateGroundOf(audit, time.Now()))
	res.Violations = append(res.Violations, vs...)
	res.Notes = append(res.Notes, notes...)
}

// lateOutstanding reports whether the run should wait longer before its
// checks: a late landing the Path has not reported yet, or (resends on) a
// provisional verdict whose quarantine has not ended.
func (w *world) lateOutstanding() bool {
	if w.o.ResendNotReceived && w.path.Snapshot().ProvisionalCount > 0 {
		return true
	}
	audit := w.b.Audit()
	w.mu.Lock()
	defer w.mu.Unlock()
	g := w.lateGroundOf(audit, time.Now())
	for _, o := range g.orders {
		if !o.nrAt.IsZero() && len(o.booked) > 0 && o.reportsAt.IsZero() && (o.settledAt.IsZero() || o.settledAt.Before(o.booked[0])) {
			return true
		}
	}
	return false
}

// settleLate waits, after the quiet period, while lateOutstanding, at most
// the quarantine and MaxCopyHold and 2 s: the re-queries that report late
// landings, and the final verdicts that allow resends, are then judged
// instead of cut off by the run's end.
func (w *world) settleLate() {
	limit := time.Now().Add(simQuarantine + quarantine + 2*time.Second)
	for time.Now().Before(limit) && w.lateOutstanding() {
		time.Sleep(250 * time.Millisecond)
	}
}
