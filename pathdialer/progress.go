package pathdialer

import "time"

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
