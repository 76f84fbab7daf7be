package fix

import (
	"context"
	"fmt"
	"strconv"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// Send sends a message that is not an order (a status request, a quote, a
// market-data request) at once, without the submission gate: it is never held.
// Orders are refused with ErrNotOrder: send them with SendOrder.
func (in *Initiator) Send(msg quickfix.Messagable, sessionID quickfix.SessionID) error {
	if in == nil {
		return ErrNoInitiator
	}
	m := msg.ToMessage()
	mt, _ := m.Header.GetString(tagMsgType)
	if IsOrder(mt) {
		return fmt.Errorf("%w: MsgType %s goes through SendOrder", ErrNotOrder, mt)
	}
	if in.sessions[sessionID] == nil {
		return fmt.Errorf("%w: %v", ErrUnknownSession, sessionID)
	}
	return quickfix.SendToTarget(m, sessionID)
}

// SendOrder submits one order (NewOrderSingle, OrderCancelRequest,
// OrderCancelReplaceRequest, or a multileg equivalent; typed fix44/fix42
// messages or raw) through the Path's submission gate. It waits while the path
// is held (a switch or reconcile under way) until flow is released or ctx ends,
// fails at once with pathdialer.ErrTradingHalted while halted, and records the
// ClOrdID on a ticket. It then waits (bounded by ctx) for the session to be
// logged on to the ticket's endpoint and hands the order to quickfix, which
// sends it there and nowhere else.
//
// A nil error means the order left for the broker; its ticket is finished when
// the ExecutionReport (or OrderCancelReject, BusinessMessageReject) for the
// ClOrdID arrives, or handed to reconciliation if the path switches first. An
// error wrapping ErrNotSent means the order did not leave: send it again with
// the same ClOrdID. The order is never resent by this package or by quickfix.
func (in *Initiator) SendOrder(ctx context.Context, msg quickfix.Messagable, sessionID quickfix.SessionID) error {
	if in == nil {
		return ErrNoInitiator
	}
	if in.closed.Load() {
		return ErrClosed
	}
	m := msg.ToMessage()
	o, s, err := in.newOrder(m, sessionID)
	if err != nil {
		return err
	}
	if err := s.haltErr(); err != nil {
		in.stats.Orders.Add(1)
		in.stats.NotSent.Add(1)
		return fmt.Errorf("fix: order %q: %w", o.clOrdID, err)
	}
	in.stats.Orders.Add(1)
	t := o.ticket
	if err := in.path.AcquireInto(ctx, t, in.opts.Service, o.clOrdID); err != nil {
		in.stats.NotSent.Add(1)
		return fmt.Errorf("fix: order %q: %w", o.clOrdID, err)
	}
	if in.onAcquire != nil {
		in.onAcquire(t)
	}
	if in.byEP != nil {
		// Hot standby: the ticket's endpoint has a session of its own.
		o.sessionID = in.byEP[t.Endpoint]
		s = in.sessions[o.sessionID]
	}
	if err := in.readyToSend(ctx, o, s, m); err != nil {
		return in.withdraw(o, err)
	}
	return in.submit(o, m)
}

// newOrder checks that m is an order with a ClOrdID not already pending, for
// a session of the Initiator, and returns its record (with its ticket, not
// yet acquired) and the session.
func (in *Initiator) newOrder(m *quickfix.Message, sessionID quickfix.SessionID) (*order, *sessionState, error) {
	mt, _ := m.Header.GetString(tagMsgType)
	if !IsOrder(mt) {
		return nil, nil, fmt.Errorf("%w: MsgType %q", ErrNotOrder, mt)
	}
	clOrdID, _ := m.Body.GetString(tagClOrdID)
	if clOrdID == "" {
		return nil, nil, ErrNoClOrdID
	}
	s := in.sessions[sessionID]
	if s == nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnknownSession, sessionID)
	}
	in.mu.Lock()
	_, dup := in.orders[clOrdID]
	if dup && in.resendGranted(clOrdID) {
		// Settled by another reconciler (a REST fallback of the
		// application's own, not this Initiator's): the record is stale, and
		// the Path granted this one resend.
		delete(in.orders, clOrdID)
		in.provisional.drop(clOrdID)
		dup = false
	}
	in.mu.Unlock()
	if dup {
		return nil, nil, fmt.Errorf("%w: %q", ErrDuplicateClOrdID, clOrdID)
	}
	in.mu.Lock()
	in.withdrawn.drop(clOrdID) // sent again: it may be written this time
	in.mu.Unlock()
	// The ticket lives in the order's record (one allocation for both: the
	// gate allocates nothing).
	o := &order{clOrdID: clOrdID, msgType: mt, sessionID: sessionID, submitting: true}
	o.ticket = &o.tk
	return o, s, nil
}

// readyToSend waits for session s to be logged on to the ticket's endpoint
// (giving up if the path switches or logons halt), stamps the fencing token
// when configured, and records the order as pending, provided the ticket's
// decision still holds. An error means the order must not be sent.
func (in *Initiator) readyToSend(ctx context.Context, o *order, s *sessionState, m *quickfix.Message) error {
	t := o.ticket
	switched := func() bool { _, gen := in.path.Active(); return gen != t.Token || s.haltErr() != nil }
	if err := in.waitLoggedOn(ctx, o.sessionID, t.Endpoint, switched); err != nil {
		if herr := s.haltErr(); herr != nil {
			err = herr
		}
		return err
	}
	if in.opts.TokenTag != 0 {
		m.Body.SetString(in.opts.TokenTag, strconv.FormatUint(t.Token, 10))
	}
	o.symbol, _ = m.Body.GetString(tagSymbol)
	o.side, _ = m.Body.GetString(tagSide)
	in.mu.Lock()
	if _, dup := in.orders[o.clOrdID]; dup {
		in.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrDuplicateClOrdID, o.clOrdID)
	}
	in.orders[o.clOrdID] = o
	in.mu.Unlock()
	// The decision the ticket was granted under must still hold when the
	// order is handed to the session (checked again in ToApp, the last point
	// before quickfix stores and writes it).
	if err := t.Valid(); err != nil {
		in.mu.Lock()
		delete(in.orders, o.clOrdID)
		in.mu.Unlock()
		return err
	}
	return nil
}

// submit hands the recorded order to quickfix. When its answer overtook
// SendToTarget's return, the ticket is finished here.
func (in *Initiator) submit(o *order, m *quickfix.Message) error {
	err := quickfix.SendToTarget(m, o.sessionID)
	in.mu.Lock()
	o.submitting = false
	early := o.early
	if o.expired != nil {
		err = o.expired
	}
	if err != nil || early {
		delete(in.orders, o.clOrdID)
	}
	in.mu.Unlock()
	if err != nil {
		return in.withdraw(o, err)
	}
	if early { // the answer overtook SendToTarget's return
		in.stats.Answered.Add(1)
		o.ticket.Done()
	}
	return nil
}

// withdraw finishes the ticket of an order that never left the process and
// returns the ErrNotSent error saying why. The order is remembered as never
// written: its ticket may have been handed to a reconcile already (the Path
// held while the order waited for the session's logon).
func (in *Initiator) withdraw(o *order, cause error) error {
	in.mu.Lock()
	in.withdrawn.put(o)
	in.mu.Unlock()
	in.stats.NotSent.Add(1)
	o.ticket.Done() // nothing left the process: withdraw the ticket
	return notSent(o.clOrdID, cause)
}

// resendGranted: the Path found clOrdID finally NOT_RECEIVED and granted its
// one resend (Path.MayResend), whichever reconciler settled it.
func (in *Initiator) resendGranted(clOrdID string) bool {
	v, ok := in.path.Verdict(clOrdID)
	return ok && v.Final && v.Fate == pathdialer.FateNotReceived && !v.ResentAt.IsZero()
}
