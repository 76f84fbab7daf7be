package fix

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/internal/safetext"
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
}

// unsupportedKey is a session on an endpoint whose counterparty does not
// support OrderStatusRequest.
type unsupportedKey struct {
	sid      quickfix.SessionID
	endpoint string
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
	ask := make(map[string]*order, len(tickets)) // unanswered, with what to ask
	ans := make(chan answer, 4*len(tickets)+16)
	requery := rec.Reason == pathdialer.ReasonRequery
	in.mu.Lock()
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
	unsupported := map[string]string{} // ClOrdID → why it was not asked
	absent := map[string]string{}      // ClOrdID → absent from a complete mass status
	if len(ask) > 0 {
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
				return nil, fmt.Errorf("%w: %w", ErrReconcileIncomplete, err)
			}
		}
		if err := in.awaitAnswers(ctx, to, ask, got, unsupported, ans, opts); err != nil {
			return nil, err
		}
		if opts.MassStatus && len(unsupported) > 0 {
			if err := in.massStatus(ctx, to, ask, got, unsupported, absent, opts); err != nil {
				return nil, err
			}
		}
	}
	settled := make([]pathdialer.Settlement, 0, len(tickets))
	var open []int // indexes of undetermined settlements
	for _, t := range tickets {
		s := pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: pathdialer.FateUndetermined}
		switch msg := got[t.OrderID]; {
		case unsupported[t.OrderID] != "":
			s.Detail = unsupported[t.OrderID]
		case msg != nil || absent[t.OrderID] != "":
			ok := false
			if msg == nil {
				s.Fate, s.Detail, ok = pathdialer.FateNotReceived, absent[t.OrderID], true
			}
			if !ok && opts.Classify != nil {
				s.Fate, s.Detail, ok = opts.Classify(msg)
			}
			if !ok {
				s.Fate, s.Detail = FateOf(msg)
			}
			if s.Fate == pathdialer.FateNotReceived && !opts.SharedBook && in.opts.Sequence != SequenceContinue && t.Endpoint != "" && t.Endpoint != to {
				s.Fate = pathdialer.FateUndetermined
				s.Detail = fmt.Sprintf("no verdict: %q answered %q, but the order was sent through %q, another session it may not see (%s); set ReconcileOptions.SharedBook if the broker's book is visible from every region",
					to, s.Detail, t.Endpoint, in.opts.Sequence)
			}
		case ask[t.OrderID] == nil:
			s.Detail = "no record of the order in this process (symbol and side unknown): cannot ask"
		default:
			s.Detail = "no answer to OrderStatusRequest before the deadline"
		}
		if s.Fate == pathdialer.FateUndetermined {
			open = append(open, len(settled))
		}
		settled = append(settled, s)
	}
	if len(open) > 0 && opts.Fallback != nil {
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
		fs, err := opts.Fallback(ctx, sub)
		if err != nil {
			return settled, fmt.Errorf("%w: fallback reconciler: %w", ErrReconcileIncomplete, err)
		}
		for _, f := range fs {
			if i, ok := byID[f.OrderID]; ok {
				f.Detail = strings.TrimSpace("by fallback: " + f.Detail)
				settled[i] = f
			}
		}
		open = open[:0]
		for i, s := range settled {
			if s.Fate == pathdialer.FateUndetermined {
				open = append(open, i)
			}
		}
	}
	if len(open) > 0 && !opts.AcceptUndetermined {
		var ids, unsup []string
		for _, i := range open {
			ids = append(ids, fmt.Sprintf("%s (%s)", settled[i].OrderID, settled[i].Detail))
			if unsupported[settled[i].OrderID] != "" {
				unsup = append(unsup, settled[i].OrderID)
			}
		}
		if len(unsup) > 0 {
			return settled, fmt.Errorf("%w: the fate of orders %s cannot be learned over FIX on %q (it answers OrderStatusRequest with \"unsupported message type\"): set ReconcileOptions.Fallback (for example a REST reconciler by client order ID), ReconcileOptions.MassStatus if it answers OrderMassStatusRequest, or ReconcileOptions.AcceptUndetermined to release flow with them reported undetermined",
				ErrStatusUnsupported, strings.Join(unsup, ", "), to)
		}
		return settled, fmt.Errorf("%w: fate unknown for %s", ErrReconcileIncomplete, strings.Join(ids, ", "))
	}
	in.mu.Lock()
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
	in.mu.Unlock()
	return settled, nil
}

// provisionalOrders keeps the orders a reconcile settled NOT_RECEIVED (the
// Path may re-query them after its quarantine: asking needs their session,
// symbol and side) until a re-query settles them, bounded (oldest dropped
// first) like the Path's own verdicts.
type provisionalOrders struct {
	m     map[string]*order
	queue []string // insertion order of m's keys (with dropped ones, compacted)
}

const provisionalMax = 1 << 16

func (p *provisionalOrders) get(id string) *order { return p.m[id] }

func (p *provisionalOrders) put(o *order) {
	if p.m == nil {
		p.m = make(map[string]*order)
	}
	ro := &order{clOrdID: o.clOrdID, msgType: o.msgType, sessionID: o.sessionID, symbol: o.symbol, side: o.side}
	if _, ok := p.m[o.clOrdID]; !ok {
		p.queue = append(p.queue, o.clOrdID)
	}
	p.m[o.clOrdID] = ro
	for len(p.m) > provisionalMax && len(p.queue) > 0 {
		delete(p.m, p.queue[0])
		p.queue = p.queue[1:]
	}
	p.compact()
}

func (p *provisionalOrders) drop(id string) {
	if _, ok := p.m[id]; ok {
		delete(p.m, id)
		p.compact()
	}
}

// compact drops the queue's entries no longer in m once they dominate it.
func (p *provisionalOrders) compact() {
	if len(p.queue) <= 2*len(p.m)+64 {
		return
	}
	q := make([]string, 0, len(p.m))
	seen := make(map[string]bool, len(p.m))
	for _, id := range p.queue {
		if _, ok := p.m[id]; ok && !seen[id] {
			seen[id] = true
			q = append(q, id)
		}
	}
	p.queue = q
}

// isUnsupported reports whether an answer to a status request says the
// counterparty does not support the message type: a BusinessMessageReject with
// BusinessRejectReason 3, or a session Reject with SessionRejectReason 11.
func isUnsupported(msg *quickfix.Message) bool {
	mt, _ := msg.Header.GetString(tagMsgType)
	switch mt {
	case msgTypeBusinessReject:
		r, _ := msg.Body.GetString(tagBusinessRejectRsn)
		return r == "3"
	case msgTypeReject:
		r, _ := msg.Body.GetString(tagSessionRejectRsn)
		return r == "11"
	}
	return false
}

// maxRetryBackoff bounds the growth of the wait between repeated status
// requests, in RetryIntervals.
const maxRetryBackoff = 8

// awaitAnswers sends an OrderStatusRequest for every order in ask and collects
// the answers into got until all are in or AnswerTimeout passes. Unanswered
// requests are repeated with a backoff from RetryInterval: a status request is a read, and a
// counterparty still repairing a sequence gap may hold requests it received
// out of order until the next message arrives. A session whose counterparty
// answers "unsupported message type" is not asked again (now or in later
// reconciles on that endpoint): its orders go to unsupported.
func (in *Initiator) awaitAnswers(ctx context.Context, to string, ask map[string]*order, got map[string]*quickfix.Message, unsupported map[string]string, ans chan answer, opts ReconcileOptions) error {
	pending := 0
	for id := range ask {
		if got[id] == nil {
			pending++
		}
	}
	markUnsupported := func(sid quickfix.SessionID) {
		in.mu.Lock()
		why := in.unsupported[unsupportedKey{sid, to}]
		in.mu.Unlock()
		for id, o := range ask {
			if o.sessionID == sid && got[id] == nil && unsupported[id] == "" {
				unsupported[id] = why
				pending--
			}
		}
	}
	isUnsup := func(sid quickfix.SessionID) bool {
		in.mu.Lock()
		defer in.mu.Unlock()
		return in.unsupported[unsupportedKey{sid, to}] != ""
	}
	send := func() error {
		for id, o := range ask {
			if got[id] != nil || unsupported[id] != "" {
				continue
			}
			if isUnsup(o.sessionID) {
				markUnsupported(o.sessionID)
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
	// Unanswered requests are repeated after RetryInterval, then after twice
	// as long each time up to maxRetryBackoff× RetryInterval (at most half of
	// AnswerTimeout): a slow counterparty asked about many orders is not sent
	// every request again each RetryInterval.
	wait := opts.RetryInterval
	maxWait := min(maxRetryBackoff*opts.RetryInterval, opts.AnswerTimeout/2)
	retry := time.NewTimer(wait)
	defer retry.Stop()
	for pending > 0 {
		select {
		case a := <-ans:
			o, ok := ask[a.clOrdID]
			if !ok || got[a.clOrdID] != nil || unsupported[a.clOrdID] != "" {
				continue
			}
			if isUnsupported(a.msg) {
				text, _ := a.msg.Body.GetString(tagText)
				why := fmt.Sprintf("%q does not support OrderStatusRequest (answered %s: %s)", to, describeReject(a.msg), text)
				in.mu.Lock()
				k := unsupportedKey{o.sessionID, to}
				first := in.unsupported[k] == ""
				if first {
					in.unsupported[k] = why
				}
				in.mu.Unlock()
				if first {
					fb := "none configured: reconcile fails and the Path halts; set ReconcileOptions.MassStatus, Fallback or AcceptUndetermined"
					switch {
					case opts.MassStatus:
						fb = "ReconcileOptions.MassStatus asks with OrderMassStatusRequest"
					case opts.Fallback != nil:
						fb = "ReconcileOptions.Fallback settles these orders"
					case opts.AcceptUndetermined:
						fb = "AcceptUndetermined: these orders are reported undetermined"
					}
					in.emit(Event{Kind: EventStatusUnsupported, Session: o.sessionID, Endpoint: to, Detail: why + "; not asked again; fallback: " + fb})
				}
				markUnsupported(o.sessionID)
				continue
			}
			got[a.clOrdID] = a.msg
			pending--
		case <-retry.C:
			if err := send(); err != nil {
				return err
			}
			if wait = min(2*wait, maxWait); wait < opts.RetryInterval {
				wait = opts.RetryInterval
			}
			retry.Reset(wait)
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrReconcileIncomplete, ctx.Err())
		}
	}
	return nil
}

// massStatus asks each session whose counterparty does not support
// OrderStatusRequest for an OrderMassStatusRequest and settles what it can:
// reports move orders from unsupported to got; a complete list moves the
// orders it lacks to absent. A counterparty that does not support mass status
// either leaves its orders in unsupported (with both reasons).
func (in *Initiator) massStatus(ctx context.Context, to string, ask map[string]*order, got map[string]*quickfix.Message, unsupported, absent map[string]string, opts ReconcileOptions) error {
	sessions := map[quickfix.SessionID]bool{}
	for id := range unsupported {
		if o := ask[id]; o != nil {
			sessions[o.sessionID] = true
		}
	}
	for sid := range sessions {
		reqID := fmt.Sprintf("bp-ms-%d", in.massSeq.Add(1))
		ch := make(chan *quickfix.Message, 4096)
		in.mu.Lock()
		in.mass[reqID] = ch
		in.mu.Unlock()
		complete, why, err := in.collectMass(ctx, sid, reqID, ch, ask, got, unsupported, opts)
		in.mu.Lock()
		delete(in.mass, reqID)
		in.mu.Unlock()
		if err != nil {
			return err
		}
		for id, o := range ask {
			if o.sessionID != sid || unsupported[id] == "" {
				continue
			}
			switch {
			case complete:
				delete(unsupported, id)
				absent[id] = fmt.Sprintf("absent from the complete OrderMassStatus answer of %q (unknown order)", to)
			case why != "":
				unsupported[id] += "; OrderMassStatusRequest: " + why
			}
		}
	}
	return nil
}

func (in *Initiator) collectMass(ctx context.Context, sid quickfix.SessionID, reqID string, ch chan *quickfix.Message, ask map[string]*order,
	got map[string]*quickfix.Message, unsupported map[string]string, opts ReconcileOptions) (complete bool, why string, err error) {
	m := quickfix.NewMessage()
	m.Header.SetString(tagMsgType, msgTypeMassStatusRequest)
	m.Body.SetString(tagMassStatusReqID, reqID)
	m.Body.SetString(tagMassStatusReqType, "7")
	if err := quickfix.SendToTarget(m, sid); err != nil {
		return false, "", fmt.Errorf("%w: mass status request: %w", ErrReconcileIncomplete, err)
	}
	deadline := time.NewTimer(opts.AnswerTimeout)
	defer deadline.Stop()
	for {
		select {
		case msg := <-ch:
			mt, _ := msg.Header.GetString(tagMsgType)
			if mt != msgTypeExecutionReport {
				text, _ := msg.Body.GetString(tagText)
				return false, describeReject(msg) + ": " + text, nil
			}
			if id, _ := msg.Body.GetString(tagClOrdID); id != "" {
				if o := ask[id]; o != nil && o.sessionID == sid && unsupported[id] != "" {
					got[id] = msg
					delete(unsupported, id)
				}
			}
			if last, err := msg.Body.GetBool(tagLastRptRequested); err == nil && last {
				return true, "", nil
			}
		case <-deadline.C:
			return false, "no complete answer before the deadline", nil
		case <-ctx.Done():
			return false, "", fmt.Errorf("%w: %w", ErrReconcileIncomplete, ctx.Err())
		}
	}
}

func describeReject(msg *quickfix.Message) string {
	mt, _ := msg.Header.GetString(tagMsgType)
	if mt == msgTypeBusinessReject {
		r, _ := msg.Body.GetString(tagBusinessRejectRsn)
		return "BusinessMessageReject 380=" + safetext.Bound(r)
	}
	r, _ := msg.Body.GetString(tagSessionRejectRsn)
	return "Reject 373=" + safetext.Bound(r)
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
// BusinessMessageReject is classified by BusinessRejectReason (380): 1
// (unknown ID: the broker does not know the ClOrdID) → FateNotReceived; any
// other reason (3 unsupported message type, 4 application not available, 0
// other, ...) says nothing about the order → FateUndetermined. A session
// Reject (35=3) is FateUndetermined. Anything else is FateUndetermined.
func FateOf(msg *quickfix.Message) (pathdialer.Fate, string) {
	// The counterparty's words reach a Settlement's Detail: escaped and cut.
	field := func(fm *quickfix.FieldMap, tag quickfix.Tag) string {
		v, _ := fm.GetString(tag)
		return safetext.Bound(v)
	}
	mt := field(&msg.Header.FieldMap, tagMsgType)
	text := field(&msg.Body.FieldMap, tagText)
	switch mt {
	case msgTypeBusinessReject:
		r := field(&msg.Body.FieldMap, tagBusinessRejectRsn)
		d := strings.TrimSpace("business reject 380=" + r + ": " + text)
		if r == "1" {
			return pathdialer.FateNotReceived, d + " (unknown ID)"
		}
		return pathdialer.FateUndetermined, d + " (no verdict on the order)"
	case msgTypeReject:
		r := field(&msg.Body.FieldMap, tagSessionRejectRsn)
		return pathdialer.FateUndetermined, strings.TrimSpace("session reject 373=" + r + ": " + text + " (no verdict on the order)")
	}
	if mt != msgTypeExecutionReport {
		return pathdialer.FateUndetermined, "unexpected answer MsgType " + mt
	}
	st, err := msg.Body.GetString(tagOrdStatus)
	if err != nil {
		return pathdialer.FateUndetermined, "ExecutionReport without OrdStatus"
	}
	detail := "OrdStatus=" + safetext.Bound(st)
	if id := field(&msg.Body.FieldMap, tagOrderID); id != "" {
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
