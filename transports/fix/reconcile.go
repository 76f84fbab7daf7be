package fix

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// ReconcileOptions configures a Reconciler.
type ReconcileOptions struct {
	// Service: the reconciler settles the tickets of this service only (so it
	// can be combined with others by pathdialer.ReconcileAll). Default "fix".
	Service string
	// AnswerTimeout bounds the wait for the status answers after the requests
	// are sent (the Path's ReconcileTimeout bounds the whole call). Default 2 s.
	AnswerTimeout time.Duration
	// RetryInterval: unanswered status requests are sent again this often
	// (they are reads). Default 250 ms.
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
}

// Reconciler is a ready pathdialer.ReconcileFunc for FIX orders: after the
// session has logged on over the new path it sends an OrderStatusRequest for
// every in-flight or unknown order of its service, waits for the answers with a
// deadline, and reports each order's fate. Create it with NewReconciler before
// the Path (pass Reconcile as pathdialer.Config.Reconciler, or inside
// pathdialer.ReconcileAll), then bind it with Options.Reconciler.
type Reconciler struct {
	opts ReconcileOptions
	mu   sync.Mutex
	in   *Initiator
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
	r.mu.Lock()
	in := r.in
	r.mu.Unlock()
	if in == nil {
		return nil, fmt.Errorf("%w: no Initiator bound to the reconciler (Options.Reconciler)", ErrReconcileIncomplete)
	}
	return in.reconcile(ctx, rec.To, tickets, r.opts)
}

func (in *Initiator) reconcile(ctx context.Context, to string, tickets []pathdialer.TicketInfo, opts ReconcileOptions) ([]pathdialer.Settlement, error) {
	got := make(map[string]*quickfix.Message, len(tickets))
	ask := make(map[string]*order, len(tickets)) // unanswered, with what to ask
	ans := make(chan answer, 4*len(tickets)+16)
	in.mu.Lock()
	for _, t := range tickets {
		if o := in.orders[t.OrderID]; o != nil {
			ask[t.OrderID] = o
			in.waiters[t.OrderID] = ans
		} else if m := in.recent.m[t.OrderID]; m != nil {
			got[t.OrderID] = m // answered after it was handed over
		}
	}
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		for id := range ask {
			if in.waiters[id] == ans {
				delete(in.waiters, id)
			}
		}
		in.mu.Unlock()
	}()
	if len(ask) > 0 {
		// Log on over the new path first: requests queued before logon would
		// be dropped by quickfix's logon.
		sessions := map[quickfix.SessionID]bool{}
		for _, o := range ask {
			sessions[o.sessionID] = true
		}
		for sid := range sessions {
			if err := in.WaitLoggedOn(ctx, sid, to); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrReconcileIncomplete, err)
			}
		}
		if err := in.awaitAnswers(ctx, ask, got, ans, opts); err != nil {
			return nil, err
		}
	}
	settled := make([]pathdialer.Settlement, 0, len(tickets))
	var missing []string
	for _, t := range tickets {
		s := pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: pathdialer.FateUndetermined}
		switch msg := got[t.OrderID]; {
		case msg != nil:
			ok := false
			if opts.Classify != nil {
				s.Fate, s.Detail, ok = opts.Classify(msg)
			}
			if !ok {
				s.Fate, s.Detail = FateOf(msg)
			}
		case ask[t.OrderID] == nil:
			s.Detail = "no record of the order in this process (symbol and side unknown): cannot ask"
		default:
			s.Detail = "no answer to OrderStatusRequest before the deadline"
		}
		if s.Fate == pathdialer.FateUndetermined {
			missing = append(missing, t.OrderID)
		}
		settled = append(settled, s)
	}
	if len(missing) > 0 && !opts.AcceptUndetermined {
		return settled, fmt.Errorf("%w: fate unknown for %s", ErrReconcileIncomplete, strings.Join(missing, ", "))
	}
	in.mu.Lock()
	for _, s := range settled {
		if s.Fate != pathdialer.FateUndetermined {
			delete(in.orders, s.OrderID)
		}
	}
	in.mu.Unlock()
	return settled, nil
}

// awaitAnswers sends an OrderStatusRequest for every order in ask and collects
// the answers into got until all are in or AnswerTimeout passes. Unanswered
// requests are repeated every RetryInterval: a status request is a read, and a
// counterparty still repairing a sequence gap may hold requests it received
// out of order until the next message arrives.
func (in *Initiator) awaitAnswers(ctx context.Context, ask map[string]*order, got map[string]*quickfix.Message, ans chan answer, opts ReconcileOptions) error {
	send := func() error {
		for id, o := range ask {
			if got[id] != nil {
				continue
			}
			if err := quickfix.SendToTarget(statusRequest(o), o.sessionID); err != nil {
				return fmt.Errorf("%w: status request for %q: %w", ErrReconcileIncomplete, id, err)
			}
		}
		return nil
	}
	if err := send(); err != nil {
		return err
	}
	deadline := time.NewTimer(opts.AnswerTimeout)
	defer deadline.Stop()
	retry := time.NewTicker(opts.RetryInterval)
	defer retry.Stop()
	for n := 0; n < len(ask); {
		select {
		case a := <-ans:
			if _, ok := ask[a.clOrdID]; ok && got[a.clOrdID] == nil {
				got[a.clOrdID] = a.msg
				n++
			}
		case <-retry.C:
			if err := send(); err != nil {
				return err
			}
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrReconcileIncomplete, ctx.Err())
		}
	}
	return nil
}

// statusRequest builds an OrderStatusRequest (35=H) for the order; the header
// is filled by quickfix for the session (FIX 4.2 and 4.4 alike).
func statusRequest(o *order) *quickfix.Message {
	m := quickfix.NewMessage()
	m.Header.SetString(tagMsgType, msgTypeOrderStatusRequest)
	m.Body.SetString(tagClOrdID, o.clOrdID)
	if o.symbol != "" {
		m.Body.SetString(tagSymbol, o.symbol)
	}
	if o.side != "" {
		m.Body.SetString(tagSide, o.side)
	}
	return m
}

// FateOf classifies an answer to an OrderStatusRequest by OrdStatus (39):
// New, PartiallyFilled, PendingNew, PendingReplace, PendingCancel, Replaced,
// Accepted for bidding, Suspended, Calculated → FateResting; Filled →
// FateFilled; Canceled, DoneForDay, Expired → FateCanceled; Rejected →
// FateRejected, except OrdRejReason=5 (unknown order) → FateNotReceived. A
// BusinessMessageReject (the broker does not know the ClOrdID) →
// FateNotReceived. Anything else is FateUndetermined.
func FateOf(msg *quickfix.Message) (pathdialer.Fate, string) {
	mt, _ := msg.Header.GetString(tagMsgType)
	text, _ := msg.Body.GetString(tagText)
	if mt == msgTypeBusinessReject {
		return pathdialer.FateNotReceived, strings.TrimSpace("business reject: " + text)
	}
	if mt != msgTypeExecutionReport {
		return pathdialer.FateUndetermined, "unexpected answer MsgType " + mt
	}
	st, err := msg.Body.GetString(tagOrdStatus)
	if err != nil {
		return pathdialer.FateUndetermined, "ExecutionReport without OrdStatus"
	}
	detail := "OrdStatus=" + st
	if id, _ := msg.Body.GetString(tagOrderID); id != "" {
		detail += " OrderID=" + id
	}
	switch st {
	case "0", "1", "A", "E", "6", "5", "D", "9", "B":
		return pathdialer.FateResting, detail
	case "2":
		return pathdialer.FateFilled, detail
	case "4", "3", "C":
		return pathdialer.FateCanceled, detail
	case "8":
		if r, _ := msg.Body.GetString(tagOrdRejReason); r == "5" {
			return pathdialer.FateNotReceived, detail + " OrdRejReason=5 (unknown order)"
		}
		return pathdialer.FateRejected, detail
	}
	return pathdialer.FateUndetermined, detail
}
