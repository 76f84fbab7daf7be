package dst

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// InvKeptAnswers: a failed reconcile attempt keeps the answers it gave
// (pathdialer judges them, and its EventReconcileFailure carries them): an
// order it settled is never handed to a later reconcile attempt (a switch's,
// a resume's or a settle's; the re-query of provisional verdicts and the
// late-landing watch look again on purpose) unless it was sent again since,
// or finished unknown since (an order whose verdict was found while it was
// in flight is handed over again when it then ends unknown).
// Judged from the Path's events against the client's record of its sends;
// that the kept answers are true is settlement-matches-book's, and that
// every unknown order is settled, every-unknown-order-settled's (both count
// a failed attempt's kept answers).
const InvKeptAnswers = "kept-answers-not-asked-again"

// progressEvent is one reconcile event the invariant reads.
type progressEvent struct {
	at      time.Time
	kind    pathdialer.EventKind // EventReconcileStart or EventReconcileFailure
	attempt int
	cause   string
	orders  []string // Start: the tickets; Failure: the orders settled
	hook    bool     // Failure: the answers the reconcile hook returned (noteHookAnswers)
}

// progressGround is what InvKeptAnswers is judged from.
type progressGround struct {
	start  time.Time
	events []progressEvent
	sentAt map[string]time.Time // the latest send of each order
	// unknownAt: when each order that finished unknown did (its latest
	// send's end, as the client recorded it).
	unknownAt map[string]time.Time
}

// noteProgress records a reconcile event for InvKeptAnswers.
func (w *world) noteProgress(ev pathdialer.Event) {
	if ev.Cause == pathdialer.ReasonRequery {
		return
	}
	pe := progressEvent{at: ev.Time, kind: ev.Kind, attempt: ev.Attempt, cause: ev.Cause}
	switch ev.Kind {
	case pathdialer.EventReconcileStart:
		for _, t := range ev.Tickets {
			pe.orders = append(pe.orders, t.OrderID)
		}
	case pathdialer.EventReconcileFailure:
		for _, s := range ev.Settlements {
			if s.Fate != pathdialer.FateUndetermined {
				pe.orders = append(pe.orders, s.OrderID)
			}
		}
		if len(pe.orders) == 0 {
			return
		}
	default:
		return
	}
	w.mu.Lock()
	w.px = append(w.px, pe)
	w.mu.Unlock()
}

// noteHookAnswers records, for InvKeptAnswers, the answers the sim's
// reconcile hook returned from an attempt that ended in an error or was cut
// short (its context done: a timeout, or superseded by a hold, halt or
// switch): the Path keeps them (a failed attempt's, and a superseded one's,
// salvaged) whether or not it reports them, so they are judged from what
// the hook gave, not only from the Path's events. The re-query of
// provisional verdicts is left out (it looks again on purpose).
func (w *world) noteHookAnswers(ctx context.Context, r pathdialer.Reconciliation, out *[]pathdialer.Settlement, err *error) {
	if (*err == nil && ctx.Err() == nil) || r.Reason == pathdialer.ReasonRequery {
		return
	}
	pe := progressEvent{at: time.Now(), kind: pathdialer.EventReconcileFailure, attempt: r.Attempt, cause: r.Reason + ", the hook's answers", hook: true}
	for _, s := range *out {
		if s.Fate != pathdialer.FateUndetermined {
			pe.orders = append(pe.orders, s.OrderID)
		}
	}
	if len(pe.orders) == 0 {
		return
	}
	w.mu.Lock()
	w.px = append(w.px, pe)
	w.mu.Unlock()
}

// errLookupBudget ends a reconcile attempt over Options.ReconcileBudget.
var errLookupBudget = errors.New("reconcile: the venue's lookup budget is spent (HTTP 429)")

// overBudget reports whether a reconcile attempt that has answered n orders
// may look up no more (Options.ReconcileBudget).
func (w *world) overBudget(n int) bool {
	return w.o.ReconcileBudget > 0 && n >= w.o.ReconcileBudget
}

// checkProgress judges InvKeptAnswers (w.mu held) and notes how many
// answers failed attempts kept.
func (w *world) checkProgress(res *Result, viol func(inv, format string, a ...any)) {
	sent := make(map[string]time.Time, len(w.orders))
	unknown := map[string]time.Time{}
	for id, o := range w.orders {
		sent[id] = o.start
		if o.outcome == "unknown" && !o.runEnded {
			unknown[id] = o.end
		}
	}
	var failures, answers int
	for _, e := range w.px {
		if e.kind == pathdialer.EventReconcileFailure {
			failures++
			answers += len(e.orders)
		}
	}
	if failures > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("progress: %d failed reconcile attempt(s) kept %d answer(s)", failures, answers))
	}
	progressGround{start: w.start, events: slices.Clone(w.px), sentAt: sent, unknownAt: unknown}.judge(viol)
}

// judge reports every order asked about again after a failed attempt kept
// its answer, with no send in between.
func (g progressGround) judge(viol func(inv, format string, a ...any)) {
	kept := map[string]progressEvent{} // order → the failure that settled it
	for _, e := range g.events {
		switch e.kind {
		case pathdialer.EventReconcileFailure:
			for _, id := range e.orders {
				kept[id] = e
			}
		case pathdialer.EventReconcileStart:
			for _, id := range e.orders {
				k, ok := kept[id]
				if !ok {
					continue
				}
				if k.hook && !e.at.After(k.at) {
					// One virtual instant: the Path may have begun this
					// attempt before the hook's answers reached it.
					continue
				}
				delete(kept, id)
				if g.sentAt[id].After(k.at) {
					continue // sent again since: a new ticket
				}
				if u, ok := g.unknownAt[id]; ok && !u.Before(k.at) {
					continue // finished unknown since: re-handed on purpose
				}
				viol(InvKeptAnswers, "%s, settled by the failed attempt %d at %v (%s), was handed again to attempt %d at %v (%s) without being sent again",
					id, k.attempt, k.at.Sub(g.start), orCause(k.cause), e.attempt, e.at.Sub(g.start), orCause(e.cause))
			}
		}
	}
}

func orCause(c string) string {
	if c == "" {
		return "a switch's reconcile"
	}
	return fmt.Sprintf("%q", c)
}
