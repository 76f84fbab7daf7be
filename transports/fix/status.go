package fix

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/internal/safetext"
)

// unsupportedKey is a session on an endpoint whose counterparty does not
// support OrderStatusRequest.
type unsupportedKey struct {
	sid      quickfix.SessionID
	endpoint string
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
// reconciles on that endpoint): its orders go to unsupported. With a venue
// budget (ReconcileOptions.Venue) every request waits for the budget, orders
// asked least often first; once the budget allows no request before the
// deadline, none is sent, and the orders never asked go to unasked.
func (in *Initiator) awaitAnswers(ctx context.Context, to string, ask map[string]*order, got map[string]*quickfix.Message, unsupported, unasked map[string]string, ans chan answer, opts ReconcileOptions) error {
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
	take := func(a answer) {
		o, ok := ask[a.clOrdID]
		if !ok || got[a.clOrdID] != nil || unsupported[a.clOrdID] != "" {
			return
		}
		if isUnsupported(a.msg) {
			in.recordUnsupported(o.sessionID, to, a.msg, opts)
			markUnsupported(o.sessionID)
			return
		}
		got[a.clOrdID] = a.msg
		pending--
	}
	// drain takes the answers already in: a paced request is not spent on
	// an order answered meanwhile.
	drain := func() {
		for {
			select {
			case a := <-ans:
				take(a)
			default:
				return
			}
		}
	}
	end := time.Now().Add(opts.AnswerTimeout)
	pctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	sent := make(map[string]int, len(ask)) // requests sent, by ClOrdID
	budgetSpent := false                   // the budget allows no request before the deadline
	send := func() error {
		if budgetSpent {
			return nil
		}
		ids := make([]string, 0, len(ask))
		for id := range ask {
			ids = append(ids, id)
		}
		// Least asked first: under a budget, an order never asked goes
		// before a repeat.
		slices.SortFunc(ids, func(a, b string) int { return cmp.Or(cmp.Compare(sent[a], sent[b]), cmp.Compare(a, b)) })
		for _, id := range ids {
			o := ask[id]
			drain()
			if got[id] != nil || unsupported[id] != "" {
				continue
			}
			if isUnsup(o.sessionID) {
				markUnsupported(o.sessionID)
				continue
			}
			if err := opts.pace.Wait(pctx); err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("%w: %w", ErrReconcileIncomplete, ctx.Err())
				}
				budgetSpent = true
				for _, id := range ids {
					if sent[id] == 0 && got[id] == nil && unsupported[id] == "" {
						unasked[id] = fmt.Sprintf("not asked: the lookup budget of %s (one status request every %v) allowed no OrderStatusRequest for it within AnswerTimeout %v",
							opts.Venue.Name, opts.Venue.LookupInterval(), opts.AnswerTimeout)
					}
				}
				return nil
			}
			drain()
			if got[id] != nil || unsupported[id] != "" {
				opts.pace.Refund()
				continue
			}
			if err := quickfix.SendToTarget(statusRequest(o), o.sessionID); err != nil {
				opts.pace.Refund()
				return fmt.Errorf("%w: status request for %q: %w", ErrReconcileIncomplete, id, err)
			}
			sent[id]++
		}
		return nil
	}
	if err := send(); err != nil {
		return err
	}
	deadline := time.NewTimer(time.Until(end))
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
			take(a)
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

// recordUnsupported remembers that the session's counterparty on endpoint to
// answered an OrderStatusRequest with msg, "unsupported message type" (it is
// not asked again), and reports it the first time with the fallback that
// settles its orders instead.
func (in *Initiator) recordUnsupported(sid quickfix.SessionID, to string, msg *quickfix.Message, opts ReconcileOptions) {
	text, _ := msg.Body.GetString(tagText)
	why := fmt.Sprintf("%q does not support OrderStatusRequest (answered %s: %s)", to, describeReject(msg), text)
	in.mu.Lock()
	k := unsupportedKey{sid, to}
	first := in.unsupported[k] == ""
	if first {
		in.unsupported[k] = why
	}
	in.mu.Unlock()
	if !first {
		return
	}
	fb := "none configured: reconcile fails and the Path halts; set ReconcileOptions.MassStatus, Fallback or AcceptUndetermined"
	switch {
	case opts.MassStatus:
		fb = "ReconcileOptions.MassStatus asks with OrderMassStatusRequest"
	case opts.Fallback != nil:
		fb = "ReconcileOptions.Fallback settles these orders"
	case opts.AcceptUndetermined:
		fb = "AcceptUndetermined: these orders are reported undetermined"
	}
	in.emit(Event{Kind: EventStatusUnsupported, Session: sid, Endpoint: to, Detail: why + "; not asked again; fallback: " + fb})
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
	pctx, cancel := context.WithTimeout(ctx, opts.AnswerTimeout)
	err = opts.pace.Wait(pctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return false, "", fmt.Errorf("%w: %w", ErrReconcileIncomplete, ctx.Err())
		}
		return false, fmt.Sprintf("not sent: the lookup budget of %s (one request every %v) allowed none within AnswerTimeout %v",
			opts.Venue.Name, opts.Venue.LookupInterval(), opts.AnswerTimeout), nil
	}
	if err := quickfix.SendToTarget(m, sid); err != nil {
		opts.pace.Refund()
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
