package fix

import (
	"context"
	"fmt"
	"strings"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// settlements turns what the attempt learned into one settlement a ticket,
// in the tickets' order.
func (in *Initiator) settlements(tickets []pathdialer.TicketInfo, to string, ask map[string]*order, got map[string]*quickfix.Message,
	unsupported, absent map[string]string, opts ReconcileOptions) []pathdialer.Settlement {
	settled := make([]pathdialer.Settlement, 0, len(tickets))
	for _, t := range tickets {
		s := pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: pathdialer.FateUndetermined}
		switch msg := got[t.OrderID]; {
		case unsupported[t.OrderID] != "":
			s.Detail = unsupported[t.OrderID]
		case msg != nil || absent[t.OrderID] != "":
			s.Fate, s.Detail = in.fateOfAnswer(t, to, msg, absent[t.OrderID], opts)
		case ask[t.OrderID] == nil && in.wasWithdrawn(t.OrderID):
			s.Fate, s.Detail = pathdialer.FateNotReceived, "never sent: this process gave the order up before it was written (SendOrder returned ErrNotSent)"
		case ask[t.OrderID] == nil:
			s.Detail = "no record of the order in this process (symbol and side unknown): cannot ask"
		default:
			s.Detail = "no answer to OrderStatusRequest before the deadline"
		}
		settled = append(settled, s)
	}
	return settled
}

// wasWithdrawn: SendOrder gave the order up before it was written.
func (in *Initiator) wasWithdrawn(id string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.withdrawn.get(id) != nil
}

// fateOfAnswer classifies the answer about t's order that came from to (msg;
// nil when the order was absent from a complete mass status, absent saying
// so). An "unknown order" from a session that may not see the order's own
// session is no verdict.
func (in *Initiator) fateOfAnswer(t pathdialer.TicketInfo, to string, msg *quickfix.Message, absent string, opts ReconcileOptions) (pathdialer.Fate, string) {
	var fate pathdialer.Fate
	var detail string
	ok := false
	if msg == nil {
		fate, detail, ok = pathdialer.FateNotReceived, absent, true
	}
	if !ok && opts.Classify != nil {
		fate, detail, ok = opts.Classify(msg)
	}
	if !ok {
		fate, detail = FateOf(msg)
	}
	if fate == pathdialer.FateNotReceived && !opts.SharedBook && in.opts.Sequence != SequenceContinue && t.Endpoint != "" && t.Endpoint != to {
		return pathdialer.FateUndetermined, fmt.Sprintf("no verdict: %q answered %q, but the order was sent through %q, another session it may not see (%s); set ReconcileOptions.SharedBook if the broker's book is visible from every region",
			to, detail, t.Endpoint, in.opts.Sequence)
	}
	return fate, detail
}

// undetermined returns the indexes of the undetermined settlements.
func undetermined(settled []pathdialer.Settlement) []int {
	var open []int
	for i, s := range settled {
		if s.Fate == pathdialer.FateUndetermined {
			open = append(open, i)
		}
	}
	return open
}

// settleByFallback hands the tickets of the undetermined settlements (open)
// to fallback and puts its settlements in their place.
func settleByFallback(ctx context.Context, rec pathdialer.Reconciliation, tickets []pathdialer.TicketInfo, settled []pathdialer.Settlement,
	open []int, fallback pathdialer.ReconcileFunc) error {
	sub := rec
	sub.Tickets = nil
	byID := map[string]int{}
	for _, i := range open {
		byID[settled[i].OrderID] = i
	}
	for _, t := range tickets {
		if _, ok := byID[t.OrderID]; ok {
			sub.Tickets = append(sub.Tickets, t)
		}
	}
	fs, err := fallback(ctx, sub)
	if err != nil {
		return fmt.Errorf("%w: fallback reconciler: %w", ErrReconcileIncomplete, err)
	}
	for _, f := range fs {
		if i, ok := byID[f.OrderID]; ok {
			f.Detail = strings.TrimSpace("by fallback: " + f.Detail)
			settled[i] = f
		}
	}
	return nil
}

// incompleteErr is the error of an attempt that left the settlements open
// undetermined: ErrStatusUnsupported when some of them could not be asked
// over FIX at all (it says what to configure), else ErrReconcileIncomplete.
func incompleteErr(settled []pathdialer.Settlement, open []int, unsupported map[string]string, to string) error {
	var ids, unsup []string
	for _, i := range open {
		ids = append(ids, fmt.Sprintf("%s (%s)", settled[i].OrderID, settled[i].Detail))
		if unsupported[settled[i].OrderID] != "" {
			unsup = append(unsup, settled[i].OrderID)
		}
	}
	if len(unsup) > 0 {
		return fmt.Errorf("%w: the fate of orders %s cannot be learned over FIX on %q (it answers OrderStatusRequest with \"unsupported message type\"): set ReconcileOptions.Fallback (for example a REST reconciler by client order ID), ReconcileOptions.MassStatus if it answers OrderMassStatusRequest, or ReconcileOptions.AcceptUndetermined to release flow with them reported undetermined",
			ErrStatusUnsupported, strings.Join(unsup, ", "), to)
	}
	return fmt.Errorf("%w: fate unknown for %s", ErrReconcileIncomplete, strings.Join(ids, ", "))
}

// recordSettled forgets the orders the attempt settled, keeping those
// settled NOT_RECEIVED (not re-queried) for the Path's re-query.
func (in *Initiator) recordSettled(settled []pathdialer.Settlement, requery bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, s := range settled {
		if s.Fate == pathdialer.FateUndetermined {
			continue
		}
		o := in.orders[s.OrderID]
		delete(in.orders, s.OrderID)
		switch {
		case s.Fate == pathdialer.FateNotReceived && !requery && o != nil:
			// The Path may hold this verdict provisional and re-query it
			// after its quarantine: keep what asking again needs.
			in.provisional.put(o)
		case s.Fate != pathdialer.FateNotReceived || requery:
			// Booked (a late landing, when re-queried) or, re-queried after
			// the quarantine, still not received: the verdict is final.
			in.provisional.drop(s.OrderID)
		}
	}
}
