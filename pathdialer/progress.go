package pathdialer

import (
	"slices"
	"time"
)

// A failed reconcile attempt keeps what it found. A ReconcileFunc may return
// settlements together with its error (it ran out of time or of the venue's
// lookup budget after answering some orders): those answers are the broker's,
// as good as a successful attempt's, so the Path judges them at once (they
// become verdicts, carried by the EventReconcileFailure) and the next attempt
// is asked only about the orders still open. A reconciler that can answer
// only part of the orders within ReconcileTimeout therefore still settles
// every one of them over a few attempts, instead of asking about the same
// first orders again each time. A failed re-query of provisional verdicts
// likewise judges the orders it did look up again (made final, or found
// booked: a late landing, reported), and the next re-query asks only about
// the others. An UNDETERMINED settlement, or one for an
// order the attempt was not asked about, is not an answer: that order stays
// open.

// A superseded reconcile keeps what it found too. A hold, a halt or a switch
// cuts short the settle or the switch's reconcile in progress (a halt for
// want of a target during a resume's reconcile abandons it); the orders go
// to the next reconcile, and the answers the cut-short run returned with its
// context's error are salvaged: judged, reported by an EventReconcileFailure
// (Err: the supersession) that carries them, and taken out of the reconcile
// that now holds those orders. So halts that come faster than one whole
// reconcile still settle every order, over as many resumes as the lookups
// need in all, instead of asking about the same first orders each time.

// salvage keeps the answers of a superseded run of r (settle or switch
// reconcile), on the controller.
func (c *controller) salvage(r Reconciliation, settled []Settlement) {
	p := c.p
	answers := answersTo(r, settled)
	if len(answers) == 0 {
		return
	}
	kept := p.judge(r, answers, time.Now())
	c.oweSettledResting(r, kept) // openorders.go
	p.events.emit(Event{Kind: EventReconcileFailure, From: r.From, To: r.To, Token: r.Token, Attempt: r.Attempt, Err: errSuperseded, Settlements: kept,
		Cause: r.Reason + ": answers found before it was superseded", Service: r.Service})
	type key struct {
		id, endpoint string
		token        uint64
	}
	done := make(map[key]bool, len(answers))
	answered := make(map[string]bool, len(answers))
	for _, s := range answers {
		answered[s.OrderID] = true
	}
	for _, t := range r.Tickets {
		if answered[t.OrderID] {
			done[key{t.OrderID, t.Endpoint, t.Token}] = true
		}
	}
	// A new slice each time: an event may share the old one.
	drop := func(ts []TicketInfo) []TicketInfo {
		return slices.DeleteFunc(slices.Clone(ts), func(t TicketInfo) bool { return done[key{t.OrderID, t.Endpoint, t.Token}] })
	}
	c.carry, c.settle = drop(c.carry), drop(c.settle)
	if c.rec != nil {
		c.rec.Tickets = drop(c.rec.Tickets)
		if c.multi == nil {
			p.setPending(c.rec.Tickets[:len(c.rec.Tickets):len(c.rec.Tickets)])
		}
	}
	if c.multi != nil {
		for _, g := range c.multi.groups {
			g.tickets = drop(g.tickets)
		}
	}
	if sr := c.settleRun; sr != nil {
		sr.tickets = drop(sr.tickets)
	}
}

// keepAnswers judges the answers of a failed attempt r and returns them
// (judged) with the tickets of r still open.
func (p *Path) keepAnswers(r Reconciliation, settled []Settlement, now time.Time) (kept []Settlement, open []TicketInfo) {
	answers := answersTo(r, settled)
	if len(answers) == 0 {
		return nil, r.Tickets
	}
	answered := make(map[string]bool, len(answers))
	for _, s := range answers {
		answered[s.OrderID] = true
	}
	open = make([]TicketInfo, 0, len(r.Tickets)-len(answers))
	for _, t := range r.Tickets {
		if !answered[t.OrderID] {
			open = append(open, t)
		}
	}
	return p.judge(r, answers, now), open
}

// answersTo returns the settlements that answer an order r asked about
// (the first for each order), without the UNDETERMINED ones.
func answersTo(r Reconciliation, settled []Settlement) []Settlement {
	asked := make(map[string]bool, len(r.Tickets))
	for _, t := range r.Tickets {
		asked[t.OrderID] = true
	}
	answered := map[string]bool{}
	var answers []Settlement
	for _, s := range settled {
		if s.Fate == FateUndetermined || !asked[s.OrderID] || answered[s.OrderID] {
			continue
		}
		answered[s.OrderID] = true
		answers = append(answers, s)
	}
	return answers
}
