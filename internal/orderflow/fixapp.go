package orderflow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/tag"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// FIXSeqStats is what the FIX application saw of incoming sequence numbers.
type FIXSeqStats struct {
	// Logons counts logons; Resets those that reset the numbers (141=Y).
	Logons, Resets int
	// LastIn is the last incoming MsgSeqNum.
	LastIn int
	// Messages counts incoming messages; PossDup those resent (43=Y);
	// GapFills sequence resets with GapFillFlag.
	Messages, PossDup, GapFills int
	// Gaps counts incoming numbers that skipped ahead (quickfix asks for a
	// resend); Backward those that went back without a reset: a broken model.
	Gaps, Backward int
	// ExecReports counts ExecutionReports received.
	ExecReports int
}

// fixApp is the quickfix Application: it counts ExecutionReports and checks
// incoming sequence numbers.
type fixApp struct {
	c *Client

	mu       sync.Mutex
	st       FIXSeqStats
	loggedOn bool
	failed   int    // connection attempts that ended without a logon since the last logon
	dropped  bool   // the session was logged on and ended since the last logon
	logonGen uint64 // the Path's generation at the last logon
}

func newFIXApp(c *Client) *fixApp { return &fixApp{c: c} }

func (a *fixApp) seqStats() FIXSeqStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.st
}

func (a *fixApp) OnCreate(quickfix.SessionID) {}

func (a *fixApp) OnLogon(quickfix.SessionID) {
	ep, gen := a.c.path.Active()
	a.mu.Lock()
	st, failed, dropped := a.st, a.failed, a.dropped && a.logonGen == gen
	a.loggedOn, a.failed, a.dropped, a.logonGen = true, 0, false, gen
	a.mu.Unlock()
	if dropped {
		// The session dropped since its last logon, with no switch since that
		// logon (a drop seen after a switch the same fault caused is that
		// switch's: its fence's open-order read reports the cancels):
		// the broker's cancel-on-disconnect may have cancelled resting
		// orders, and no fence means no open-order read by the Path (it
		// reads after fences), nor, without a hold, a release that the
		// client reconciles after. So the client reads them now.
		defer a.c.kickOpenReconcile(ep.Name)
	}
	extra := ""
	if st.Resets > 0 && st.LastIn == 1 {
		extra = ", numbers reset"
	}
	if failed > 0 {
		extra += fmt.Sprintf(", after %d connection(s) ended without a logon", failed)
	}
	a.c.rec.Note(Info, "fix", "FIX session logged on through %s (logon #%d, incoming MsgSeqNum %d%s)", ep.Name, st.Logons, st.LastIn, extra)
}

func (a *fixApp) OnLogout(quickfix.SessionID) {
	ep, _ := a.c.path.Active()
	a.mu.Lock()
	was := a.loggedOn
	a.loggedOn = false
	if !was {
		a.failed++
	} else {
		a.dropped = true
	}
	n := a.failed
	a.mu.Unlock()
	if was {
		a.c.rec.Note(Info, "fix", "FIX session logged out / disconnected")
		return
	}
	if n == 1 {
		a.c.rec.Note(Info, "fix", "FIX connection through %s ended without a logon (the broker refuses a second logon while it still holds the session through the old region: it lets go at its heartbeat timeout); quickfix retries every 100 ms", ep.Name)
		return
	}
	a.c.rec.Note(Debug, "fix", "FIX connection through %s ended without a logon (#%d)", ep.Name, n)
}

// ToAdmin adds Config.FIXLogon's fields to every Logon.
func (a *fixApp) ToAdmin(msg *quickfix.Message, _ quickfix.SessionID) {
	if len(a.c.cfg.FIXLogon) == 0 || !msg.IsMsgTypeOf("A") {
		return
	}
	for tag, v := range a.c.cfg.FIXLogon {
		msg.Body.SetField(quickfix.Tag(tag), quickfix.FIXString(v))
	}
}

func (a *fixApp) ToApp(*quickfix.Message, quickfix.SessionID) error { return nil }

func (a *fixApp) FromAdmin(msg *quickfix.Message, _ quickfix.SessionID) quickfix.MessageRejectError {
	a.seq(msg)
	return nil
}

func (a *fixApp) FromApp(msg *quickfix.Message, _ quickfix.SessionID) quickfix.MessageRejectError {
	a.seq(msg)
	mt, _ := msg.MsgType()
	switch mt {
	case "8":
		a.mu.Lock()
		a.st.ExecReports++
		a.mu.Unlock()
		id, _ := msg.Body.GetString(tag.ClOrdID)
		execType, _ := msg.Body.GetString(tag.ExecType)
		ordStatus, _ := msg.Body.GetString(tag.OrdStatus)
		a.c.fixAnswer(id, execType, ordStatus)
	case "j":
		id, _ := msg.Body.GetString(tag.BusinessRejectRefID)
		a.c.fixAnswer(id, "8", "8")
	}
	return nil
}

// seq checks one incoming message's MsgSeqNum.
func (a *fixApp) seq(msg *quickfix.Message) {
	n, err := msg.Header.GetInt(tag.MsgSeqNum)
	if err != nil {
		return
	}
	mt, _ := msg.MsgType()
	possDup, _ := msg.Header.GetBool(tag.PossDupFlag)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.st.Messages++
	if mt == "A" {
		a.st.Logons++
		if reset, _ := msg.Body.GetBool(tag.ResetSeqNumFlag); reset {
			a.st.Resets++
			a.st.LastIn = n
			return
		}
	}
	if mt == "4" {
		if gf, _ := msg.Body.GetBool(tag.GapFillFlag); gf {
			a.st.GapFills++
		}
		if nn, err := msg.Body.GetInt(tag.NewSeqNo); err == nil && nn-1 > a.st.LastIn {
			a.st.LastIn = nn - 1
		}
		return
	}
	if possDup {
		a.st.PossDup++
		if n > a.st.LastIn {
			a.st.LastIn = n
		}
		return
	}
	switch {
	case a.st.LastIn == 0 || n == a.st.LastIn+1:
	case n > a.st.LastIn+1:
		a.st.Gaps++
	default:
		a.st.Backward++
	}
	a.st.LastIn = n
}

// fixAnswer records an ExecutionReport (or a business reject) for an order.
// Order-status answers (ExecType I) are the reconciler's; they count as an
// answer only for an order this client re-sent.
func (c *Client) fixAnswer(id, execType, ordStatus string) {
	if id == "" {
		return
	}
	c.mu.Lock()
	r, ok := c.orders[id]
	resent := ok && r.Resent > 0
	c.mu.Unlock()
	if !ok || (execType == "I" && !resent) {
		return
	}
	if execType == "I" && ordStatus == "8" {
		// An order-status answer saying "unknown order" is the reconcile's
		// (possibly late) view, not the answer to the re-sent order: the re-send's
		// own ExecutionReport decides. Counting it would mark a booked order
		// rejected.
		return
	}
	// The answer came over the session, which is logged on through one
	// endpoint: that endpoint answered (and, for an acceptance, booked) it.
	ep, ok := "", false
	if c.in != nil {
		ep, ok = c.in.LoggedOn(c.sid)
	}
	if !ok {
		a, _ := c.path.Active()
		ep = a.Name
	}
	// An answer may come over another endpoint than the order (the broker
	// resends missed ExecutionReports after a logon through the new region):
	// the order is booked where it was sent.
	booked := ep
	c.mu.Lock()
	if r := c.orders[id]; r != nil {
		booked = bookedEndpoint(r, ep)
	}
	c.mu.Unlock()
	c.ack(id, FIX, ep, c.regionOfEndpoint(booked), ordStatus == "8")
}

// bookedEndpoint is the endpoint that booked r, answered over a session
// logged on through via: the endpoint of its latest attempt marked sent, or
// via when none is. A re-send on its way is answered through via: its
// ExecutionReport can arrive before placeFIX marks the attempt sent, and the
// earlier attempts were found NOT_RECEIVED (booked nowhere).
func bookedEndpoint(r *OrderRecord, via string) string {
	if n := len(r.Attempts); r.resending && n > 0 && r.Attempts[n-1].Resend && !r.Attempts[n-1].Sent {
		return via
	}
	for i := len(r.Attempts) - 1; i >= 0; i-- {
		if r.Attempts[i].Sent && r.Attempts[i].Endpoint != "" {
			return r.Attempts[i].Endpoint
		}
	}
	return via
}

func (c *Client) placeFIX(ctx context.Context, o OrderSpec) error {
	if c.in == nil {
		return fmt.Errorf("%w: %w", ErrNotSent, ErrNoFIX)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timing.OrderTimeout)
	defer cancel()
	msg := quickfix.NewMessage()
	msg.Header.SetString(tag.MsgType, "D")
	msg.Body.SetString(tag.ClOrdID, o.ClOrdID)
	msg.Body.SetString(tag.Symbol, o.Symbol)
	side := "1"
	if o.Side == "sell" {
		side = "2"
	}
	msg.Body.SetString(tag.Side, side)
	msg.Body.SetString(tag.OrderQty, o.Qty)
	if o.Limit != "" {
		msg.Body.SetString(tag.OrdType, "2")
		msg.Body.SetString(tag.Price, o.Limit)
	} else {
		msg.Body.SetString(tag.OrdType, "1")
	}
	msg.Body.SetString(tag.HandlInst, "1")
	msg.Body.SetField(tag.TransactTime, quickfix.FIXUTCTimestamp{Time: time.Now()})
	err := c.in.SendOrder(ctx, msg, c.sid)
	if err == nil {
		// The session is on one connection: the order goes (and, if booked,
		// is booked) through the endpoint it is logged on through now.
		ep, _ := c.in.LoggedOn(c.sid)
		c.update(o.ClOrdID, func(r *OrderRecord) {
			sentAttempt(r)
			if n := len(r.Attempts); n > 0 {
				r.Attempts[n-1].Endpoint = ep
			}
		})
		return nil
	}
	why := notSentWhy(err)
	if errors.Is(err, fix.ErrNotSent) && !errors.Is(err, pathdialer.ErrTradingHalted) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, pathdialer.ErrTicketExpired) {
		why = "session not logged on to the ticket's endpoint"
	}
	c.refused(FIX, o.ClOrdID, why)
	c.update(o.ClOrdID, func(r *OrderRecord) { r.NotSent = why })
	// Keep the cause in the chain (errors.Is finds pathdialer.ErrTradingHalted).
	return fmt.Errorf("%w: %s: %s: %w", ErrNotSent, o.ClOrdID, why, err)
}
