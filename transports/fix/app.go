package fix

import (
	"fmt"
	"strings"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/internal/safetext"
)

// guardApp wraps the user's Application: it gates and guards orders, tracks
// logons and endpoints, applies the sequence model and routes answers.
type guardApp struct{ in *Initiator }

var _ quickfix.Application = (*guardApp)(nil)

func (a *guardApp) OnCreate(sid quickfix.SessionID) { a.in.user.OnCreate(sid) }

func (a *guardApp) OnLogon(sid quickfix.SessionID) {
	in := a.in
	if s := in.sessions[sid]; s != nil {
		ep, _, _ := in.relays[sid].current()
		s.mu.Lock()
		s.loggedOn, s.endpoint, s.lastEndpoint, s.lastLogonTime = true, ep, ep, time.Now()
		s.live.Store(true)
		s.lastHeard.Store(s.lastLogonTime.UnixNano())
		s.attempting, s.failures, s.cause, s.causeDetail = false, 0, 0, ""
		s.notify()
		s.mu.Unlock()
		in.stats.Logons.Add(1)
		in.log.Info("fix: logged on", "session", sid.String(), "endpoint", ep)
	}
	in.user.OnLogon(sid)
}

func (a *guardApp) OnLogout(sid quickfix.SessionID) {
	in := a.in
	if s := in.sessions[sid]; s != nil {
		s.mu.Lock()
		s.loggedOn, s.endpoint = false, ""
		s.live.Store(false)
		s.notify()
		s.mu.Unlock()
	}
	// Orders of this session still waiting for their answer may or may not have
	// reached the broker: hand them to reconciliation now, so they are settled
	// even when the session logs on again on the same endpoint (no switch). The
	// records stay: reconcile asks about them, and a late answer is recognised.
	// Each order is handed over once, however often the session drops.
	in.mu.Lock()
	var lost []*order
	for _, o := range in.orders {
		if o.sessionID == sid && !o.submitting && !o.unknown {
			o.unknown = true
			lost = append(lost, o)
		}
	}
	in.mu.Unlock()
	for _, o := range lost {
		o.ticket.Unknown(fmt.Errorf("%w: order %q", ErrSessionLost, o.clOrdID))
	}
	in.user.OnLogout(sid)
}

func (a *guardApp) ToAdmin(msg *quickfix.Message, sid quickfix.SessionID) {
	in := a.in
	mt, _ := msg.Header.GetString(tagMsgType)
	s := in.sessions[sid]
	switch {
	case s == nil:
	case mt == msgTypeLogon:
		reset := in.opts.Sequence == SequenceResetOnLogon
		if in.opts.Sequence == SequenceResetOnSwitch {
			target := in.target(sid)
			s.mu.Lock()
			reset = s.lastEndpoint != "" && s.lastEndpoint != target
			s.mu.Unlock()
		}
		if reset {
			// quickfix resets the store and renumbers this logon to 1.
			msg.Body.SetField(tagResetSeqNumFlag, quickfix.FIXBoolean(true))
			in.stats.Resets.Add(1)
			in.log.Info("fix: logon resets sequence numbers", "session", sid.String(), "model", in.opts.Sequence.String())
		}
		ep, _, _ := in.relays[sid].current()
		s.mu.Lock()
		s.attempting, s.attemptOn, s.cause, s.causeDetail = true, ep, 0, ""
		s.mu.Unlock()
	case mt == msgTypeLogout:
		// quickfix refuses the counterparty's Logon answer (e.g. "MsgSeqNum too
		// low, expecting 7 but received 1"): the counterparty restarted.
		text, _ := msg.Body.GetString(tagText)
		s.mu.Lock()
		if s.attempting && s.cause == 0 && strings.Contains(strings.ToLower(text), "msgseqnum too low") {
			s.cause, s.causeDetail = LogonSeqTooLow, "we logged out: "+safetext.Bound(text)
		}
		s.mu.Unlock()
	}
	in.user.ToAdmin(msg, sid)
}

// diagnoseLogout classifies the counterparty's Logout sent in answer to a Logon.
func diagnoseLogout(text string) LogonCause {
	l := strings.ToLower(text)
	switch {
	case strings.Contains(l, "msgseqnum") || strings.Contains(l, "sequence") || strings.Contains(l, "seqnum"):
		return LogonSeqTooHigh
	case strings.Contains(l, "passw") || strings.Contains(l, "credential") || strings.Contains(l, "auth") ||
		strings.Contains(l, "user") || strings.Contains(l, "login failed") || strings.Contains(l, "logon failed"):
		return LogonCredentials
	}
	return LogonRejected
}

func isPossDup(msg *quickfix.Message) bool {
	v, err := msg.Header.GetBool(tagPossDupFlag)
	return err == nil && v
}

func (a *guardApp) ToApp(msg *quickfix.Message, sid quickfix.SessionID) error {
	in := a.in
	mt, _ := msg.Header.GetString(tagMsgType)
	if IsOrder(mt) {
		clOrdID, _ := msg.Body.GetString(tagClOrdID)
		if isPossDup(msg) {
			// quickfix is answering a ResendRequest: never replay an order,
			// possibly into another region. Gap-fill it and reconcile.
			in.refuseResend(sid, clOrdID, mt)
			return quickfix.ErrDoNotSend
		}
		in.mu.Lock()
		o := in.orders[clOrdID]
		gated := o != nil && o.submitting
		in.mu.Unlock()
		if !gated {
			in.stats.UngatedRefused.Add(1)
			in.log.Warn("fix: order not sent through SendOrder refused", "session", sid.String(), "clordid", clOrdID)
			return quickfix.ErrDoNotSend
		}
		ep, _, _ := in.relays[sid].current()
		if ep != o.ticket.Endpoint {
			return fmt.Errorf("%w: session is on endpoint %q, ticket is for %q", quickfix.ErrDoNotSend, ep, o.ticket.Endpoint)
		}
		if err := o.ticket.Valid(); err != nil {
			in.mu.Lock()
			o.expired = err
			in.mu.Unlock()
			return fmt.Errorf("%w: %w", quickfix.ErrDoNotSend, err)
		}
	}
	if err := in.user.ToApp(msg, sid); err != nil {
		return err
	}
	if IsOrder(mt) || mt == msgTypeOrderStatusRequest || mt == msgTypeMassStatusRequest {
		if seq, err := msg.Header.GetInt(tagMsgSeqNum); err == nil {
			clOrdID, _ := msg.Body.GetString(tagClOrdID)
			if mt == msgTypeMassStatusRequest {
				clOrdID, _ = msg.Body.GetString(tagMassStatusReqID)
			}
			in.mu.Lock()
			in.refs.put(refKey{sid, seq}, refVal{clOrdID: clOrdID, msgType: mt})
			in.mu.Unlock()
		}
	}
	return nil
}

func (in *Initiator) refuseResend(sid quickfix.SessionID, clOrdID, mt string) {
	in.stats.RefusedResends.Add(1)
	// The record stays: reconcile needs its symbol and side to ask about it.
	in.mu.Lock()
	o := in.orders[clOrdID]
	hand := o != nil && !o.submitting && !o.unknown
	if hand {
		o.unknown = true
	}
	in.mu.Unlock()
	if hand {
		o.ticket.Unknown(resendRefused(clOrdID, mt))
	}
	in.log.Warn("fix: resend of an order refused; gap-filled and handed to reconciliation", "session", sid.String(), "clordid", clOrdID, "msgtype", mt)
	if in.opts.OnRefusedResend != nil {
		in.opts.OnRefusedResend(sid, clOrdID, mt)
	}
}

func (a *guardApp) FromAdmin(msg *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	in := a.in
	mt, _ := msg.Header.GetString(tagMsgType)
	switch mt {
	case msgTypeLogout:
		if s := in.sessions[sid]; s != nil {
			text, _ := msg.Body.GetString(tagText)
			s.mu.Lock()
			if s.attempting && s.cause == 0 {
				s.cause, s.causeDetail = diagnoseLogout(text), "counterparty logged out: "+safetext.Bound(text)
			}
			s.mu.Unlock()
		}
	case msgTypeReject:
		// A session-level Reject of one of our status requests or orders.
		if ref, ok := in.refOf(msg, sid); ok {
			in.deliverRef(ref, msg)
			if IsOrder(ref.msgType) {
				in.answered(ref.clOrdID, nil)
			}
		}
	}
	return in.user.FromAdmin(msg, sid)
}

func (a *guardApp) FromApp(msg *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	in := a.in
	mt, _ := msg.Header.GetString(tagMsgType)
	switch mt {
	case msgTypeExecutionReport:
		if id, _ := msg.Body.GetString(tagMassStatusReqID); id != "" {
			in.deliverMass(id, msg)
		}
		clOrdID, _ := msg.Body.GetString(tagClOrdID)
		if clOrdID != "" {
			in.deliver(clOrdID, msg)
			if !isStatusReport(msg) {
				in.answered(clOrdID, msg)
			}
		}
	case msgTypeOrderCancelReject:
		if clOrdID, _ := msg.Body.GetString(tagClOrdID); clOrdID != "" {
			in.answered(clOrdID, nil)
		}
	case msgTypeBusinessReject:
		// Match by RefSeqNum + RefMsgType (what every acceptor sends; quickfix
		// itself sends no BusinessRejectRefID), else by BusinessRejectRefID.
		refMT, _ := msg.Body.GetString(tagRefMsgType)
		if ref, ok := in.refOf(msg, sid); ok {
			in.deliverRef(ref, msg)
			if IsOrder(ref.msgType) { // the order itself was rejected
				in.answered(ref.clOrdID, msg)
			}
		} else if id, _ := msg.Body.GetString(tagBusinessRejectRefID); id != "" {
			in.deliver(id, msg)
			if refMT == "" || IsOrder(refMT) {
				in.answered(id, msg)
			}
		}
	}
	return in.user.FromApp(msg, sid)
}
