package fix

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/internal/venuepace"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// ReconcileOptions configures a Reconciler.
type ReconcileOptions struct {
	// Service: the reconciler settles the tickets of this service only (so it
	// can be combined with others by pathdialer.ReconcileAll). Default "fix".
	Service string
	// AnswerTimeout bounds the wait for the status answers after the requests
	// are sent (the Path's ReconcileTimeout bounds the whole call). Default 2 s.
	AnswerTimeout time.Duration
	// RetryInterval: unanswered status requests are sent again after this
	// long (they are reads), then after twice as long each time, up to 8×
	// RetryInterval or AnswerTimeout/2, whichever is shorter. Default 250 ms.
	RetryInterval time.Duration
	// AcceptUndetermined releases flow even when some orders' fate could not be
	// learned (they are reported as FateUndetermined). Default false: the
	// reconcile fails with ErrReconcileIncomplete, the Path keeps holding,
	// retries, and halts after pathdialer.Config.ReconcileAttempts.
	AcceptUndetermined bool
	// Classify, optional, maps an answer (an ExecutionReport or
	// BusinessMessageReject for the ClOrdID) to a fate; ok false falls back to
	// the default classification (FateOf).
	Classify func(msg *quickfix.Message) (fate pathdialer.Fate, detail string, ok bool)
	// MassStatus: when the counterparty does not support OrderStatusRequest,
	// ask it with one OrderMassStatusRequest (35=AF, MassStatusReqType 7: all
	// orders) per session and settle the orders from the ExecutionReports it
	// sends back (MassStatusReqID 584). An order absent from a list that the
	// counterparty marks complete (LastRptRequested 912=Y) is FateNotReceived
	// (subject to SharedBook, as for any "unknown order" answer). What the mass
	// status does not settle goes to Fallback. FIX 4.3 and later.
	MassStatus bool
	// Fallback, optional, settles the orders FIX could not: the counterparty
	// does not support OrderStatusRequest (it answers "unsupported message
	// type", as an acceptor that implements NewOrderSingle only does), or its
	// answers gave no verdict before the deadline. It is called with those
	// tickets only (their Service is the FIX service: a REST reconciler used
	// here must accept it), typically one that asks the broker's REST API by
	// client order ID. Its settlements replace FIX's; its error fails the
	// reconcile.
	Fallback pathdialer.ReconcileFunc
	// SharedBook says that a status request sent through one region's session
	// is answered from the book of every region (the broker keeps one book
	// visible from all its sessions). Without it, under SequenceResetOnSwitch
	// or SequenceResetOnLogon, an "unknown order" answer from a region other
	// than the one the order was sent to is no verdict (the order was sent
	// through another session that region may not see): the order stays
	// undetermined. Under SequenceContinue there is one session, and an
	// answer from any region is a verdict.
	SharedBook bool
	// Venue, optional, is the venue's profile: status requests (each
	// OrderStatusRequest, its repeats, and each OrderMassStatusRequest) are
	// spaced within its lookup budget (venue.Profile.LookupInterval, as many
	// at once as one window of the budget allows), shared by every reconcile
	// of the Reconciler. A request the budget does not allow before
	// AnswerTimeout is not sent: its order is left to Fallback, or
	// undetermined. The zero value leaves status requests unpaced.
	Venue venue.Profile

	pace *venuepace.Bucket // Venue's budget, shared by every reconcile; nil: unpaced
}

// Reconciler is a ready pathdialer.ReconcileFunc for FIX orders: after the
// session has logged on over the new path it sends an OrderStatusRequest for
// every in-flight or unknown order of its service, waits for the answers with a
// deadline, and reports each order's fate. Create it with NewReconciler before
// the Path (pass Reconcile as pathdialer.Config.Reconcile, or inside
// pathdialer.ReconcileAll), then bind it with Options.Reconciler.
type Reconciler struct {
	opts ReconcileOptions
	mu   sync.Mutex
	in   *Initiator
	// kept: the booked or rejected answers a failed attempt got, by the
	// endpoint asked and whether it was a re-query, for the next attempt.
	kept map[keptKey]map[string]*quickfix.Message
}

type keptKey struct {
	to      string
	requery bool
}

// NewReconciler validates opts and returns an unbound Reconciler.
func NewReconciler(opts ReconcileOptions) (*Reconciler, error) {
	if opts.Service == "" {
		opts.Service = pathdialer.ServiceFIX
	}
	if opts.AnswerTimeout < 0 || opts.RetryInterval < 0 {
		return nil, fmt.Errorf("%w: negative AnswerTimeout or RetryInterval", ErrInvalidOptions)
	}
	if opts.RetryInterval == 0 {
		opts.RetryInterval = 250 * time.Millisecond
	}
	if opts.AnswerTimeout == 0 {
		opts.AnswerTimeout = 2 * time.Second
	}
	opts.pace = venuepace.New(opts.Venue)
	return &Reconciler{opts: opts}, nil
}

func (r *Reconciler) bind(in *Initiator) {
	r.mu.Lock()
	r.in = in
	r.mu.Unlock()
	in.rec = r
}

func (r *Reconciler) unbind(in *Initiator) {
	r.mu.Lock()
	if r.in == in {
		r.in = nil
	}
	r.mu.Unlock()
}

// Reconcile settles the tickets of its service in rec. It returns at once with
// nothing settled when there are none. Otherwise it fails (so the Path keeps
// holding and retries) while no Initiator is bound, while a session is not yet
// logged on to rec.To, or, unless AcceptUndetermined, while any order's fate
// is still unknown at the deadline. Status requests are sent directly: they are
// never held by the gate.
//
// Re-queries: the orders it settles NOT_RECEIVED are remembered (their
// session, symbol and side; at most 65536, oldest forgotten first) so that
// the Path's own re-query of a provisional verdict after Config.Quarantine
// (rec.Reason pathdialer.ReasonRequery) asks the broker about them again and
// finds a late booking. A re-query forgets the orders it settles (the Path's
// verdict is then final), and waits at most AnswerTimeout for the session to
// be logged on to rec.To: it runs while flow is open, and the Path retries a
// failed one later.
//
// Retries: an attempt that fails keeps the answers that found an order
// booked or rejected; the next attempt through the same endpoint (and of the
// same kind, settle or re-query) settles those orders from them without
// asking again. "Unknown order" answers are not kept: they are asked again.
func (r *Reconciler) Reconcile(ctx context.Context, rec pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	var tickets []pathdialer.TicketInfo
	for _, t := range rec.Tickets {
		if t.Service == r.opts.Service {
			tickets = append(tickets, t)
		}
	}
	if len(tickets) == 0 {
		return nil, nil
	}
	key := keptKey{to: rec.To, requery: rec.Reason == pathdialer.ReasonRequery}
	r.mu.Lock()
	in, kept := r.in, r.kept[key]
	r.mu.Unlock()
	if in == nil {
		return nil, fmt.Errorf("%w: no Initiator bound to the reconciler (Options.Reconciler)", ErrReconcileIncomplete)
	}
	got := make(map[string]*quickfix.Message, len(tickets))
	settled, err := in.reconcile(ctx, rec, tickets, r.opts, kept, got)
	// A failed attempt keeps the answers that booked or rejected an order
	// (facts that do not change) for the next attempt on the same endpoint,
	// so that a retry asks only about the rest: an attempt that ends at its
	// deadline before every answer is in does not start over. An "unknown
	// order" answer is asked again: a copy may land meanwhile.
	r.mu.Lock()
	if err == nil {
		r.kept = nil
	} else {
		keep := make(map[string]*quickfix.Message)
		for id, msg := range got {
			if keepable(msg, r.opts) {
				keep[id] = msg
			}
		}
		if r.kept == nil {
			r.kept = make(map[keptKey]map[string]*quickfix.Message)
		}
		if len(keep) > 0 {
			r.kept[key] = keep
		} else {
			delete(r.kept, key)
		}
	}
	r.mu.Unlock()
	return settled, err
}

// keepable reports whether an answer may settle its order in a later
// attempt: it books or rejects the order.
func keepable(msg *quickfix.Message, opts ReconcileOptions) bool {
	if msg == nil || isUnsupported(msg) {
		return false
	}
	fate, ok := pathdialer.FateUndetermined, false
	if opts.Classify != nil {
		fate, _, ok = opts.Classify(msg)
	}
	if !ok {
		fate, _ = FateOf(msg)
	}
	return fate != pathdialer.FateUndetermined && fate != pathdialer.FateNotReceived
}

// reconcile settles tickets into got (kept: answers a failed attempt on the
// same endpoint got, used instead of asking again).
func (in *Initiator) reconcile(ctx context.Context, rec pathdialer.Reconciliation, tickets []pathdialer.TicketInfo, opts ReconcileOptions,
	kept, got map[string]*quickfix.Message) ([]pathdialer.Settlement, error) {
	to := rec.To
	requery := rec.Reason == pathdialer.ReasonRequery
	ans := make(chan answer, 4*len(tickets)+16)
	ask := in.registerAsks(tickets, to, kept, got, ans) // unanswered, with what to ask
	defer in.unregisterAsks(ask, ans)
	unsupported := map[string]string{} // ClOrdID → why it was not asked
	absent := map[string]string{}      // ClOrdID → absent from a complete mass status
	unasked := map[string]string{}     // ClOrdID → never asked: the venue's budget allowed no request
	if len(ask) > 0 {
		if err := in.askStatus(ctx, to, requery, ask, got, unsupported, absent, unasked, ans, opts); err != nil {
			return nil, err
		}
	}
	settled := in.settlements(tickets, to, ask, got, unsupported, absent, opts)
	for i, s := range settled {
		if why := unasked[s.OrderID]; why != "" && got[s.OrderID] == nil && unsupported[s.OrderID] == "" {
			settled[i].Detail = why
		}
	}
	open := undetermined(settled)
	if len(open) > 0 && opts.Fallback != nil {
		if err := settleByFallback(ctx, rec, tickets, settled, open, opts.Fallback); err != nil {
			return settled, err
		}
		open = undetermined(settled)
	}
	if len(open) > 0 && !opts.AcceptUndetermined {
		return settled, incompleteErr(settled, open, unsupported, to)
	}
	in.recordSettled(settled, requery)
	return settled, nil
}

// registerAsks finds, for every ticket, what asking about its order needs
// (an order in flight, or one settled NOT_RECEIVED before and now
// re-queried) and registers ans to receive the answers. An order with an
// answer already (kept from a failed attempt, or one that arrived after the
// order was handed over) goes to got instead and is not waited for.
func (in *Initiator) registerAsks(tickets []pathdialer.TicketInfo, to string, kept, got map[string]*quickfix.Message, ans chan answer) map[string]*order {
	ask := make(map[string]*order, len(tickets))
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, t := range tickets {
		if o := in.orders[t.OrderID]; o != nil {
			ask[t.OrderID] = in.askOn(o, to)
			if m := kept[t.OrderID]; m != nil {
				got[t.OrderID] = m // answered to a failed attempt: not asked again
				continue
			}
			in.waiters[t.OrderID] = ans
		} else if m := in.recent.m[t.OrderID]; m != nil {
			got[t.OrderID] = m // answered after it was handed over (or landed late)
		} else if o := in.provisional.get(t.OrderID); o != nil {
			ask[t.OrderID] = in.askOn(o, to) // settled NOT_RECEIVED before: asked again
			if m := kept[t.OrderID]; m != nil {
				got[t.OrderID] = m
				continue
			}
			in.waiters[t.OrderID] = ans
		}
	}
	return ask
}

// unregisterAsks removes the waiters registerAsks left for ans.
func (in *Initiator) unregisterAsks(ask map[string]*order, ans chan answer) {
	in.mu.Lock()
	for id := range ask {
		if in.waiters[id] == ans {
			delete(in.waiters, id)
		}
	}
	in.mu.Unlock()
}

// askStatus waits for every session of the orders in ask to be logged on to
// to, then asks about the orders (awaitAnswers) and, with MassStatus, asks
// the sessions that do not support OrderStatusRequest for a mass status.
func (in *Initiator) askStatus(ctx context.Context, to string, requery bool, ask map[string]*order, got map[string]*quickfix.Message,
	unsupported, absent, unasked map[string]string, ans chan answer, opts ReconcileOptions) error {
	// Log on over the new path first: requests queued before logon would
	// be dropped by quickfix's logon.
	sessions := map[quickfix.SessionID]bool{}
	for _, o := range ask {
		sessions[o.sessionID] = true
	}
	lctx := ctx
	if requery {
		// A re-query is not urgent (the Path calls it again later) and
		// runs while flow is open: never wait long for a logon.
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, opts.AnswerTimeout)
		defer cancel()
	}
	for sid := range sessions {
		if err := in.WaitLoggedOn(lctx, sid, to); err != nil {
			return fmt.Errorf("%w: %w", ErrReconcileIncomplete, err)
		}
	}
	if err := in.awaitAnswers(ctx, to, ask, got, unsupported, unasked, ans, opts); err != nil {
		return err
	}
	if opts.MassStatus && len(unsupported) > 0 {
		return in.massStatus(ctx, to, ask, got, unsupported, absent, opts)
	}
	return nil
}
