package simbroker

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/venue"
)

// CODScope is what the end of a connection cancels when cancel-on-disconnect
// is on for it.
type CODScope uint8

const (
	// CODOff: the end of the connection cancels nothing.
	CODOff CODScope = iota
	// CODConnection: the open orders placed over the connection (Deribit).
	CODConnection
	// CODSession: the open orders placed in the session (Kraken FIX,
	// Coinbase 8013=S). A session lives on one connection here, so it
	// cancels what CODConnection does.
	CODSession
	// CODProfile: every open order of the account, whatever placed it —
	// REST, another region, the new path (Coinbase 8013=Y).
	CODProfile
)

// String returns "off", "connection", "session" or "profile".
func (s CODScope) String() string {
	switch s {
	case CODOff:
		return "off"
	case CODConnection:
		return "connection"
	case CODSession:
		return "session"
	case CODProfile:
		return "profile"
	}
	return fmt.Sprintf("CODScope(%d)", uint8(s))
}

// FIX tags the broker reads for cancel-on-disconnect, as the venues define
// them.
const (
	// TagCoinbaseCOD: Logon CancelOrdersOnDisconnect (Coinbase Exchange):
	// "S" the session's orders, "Y" every order of the profile, "N" none.
	TagCoinbaseCOD = 8013
	// TagKrakenCOD: Logon CancelOrdersOnDisconnect (Kraken): "0" the
	// session's orders, "1" none.
	TagKrakenCOD = 8674
	// TagDeribitCOD: Logon CancelOnDisconnect (Deribit): "Y" the
	// connection's orders, "N" none.
	TagDeribitCOD = 9001
	// TagDontCancelOnDisconnect: Logout DontCancelOnDisconnect (Deribit):
	// "Y" leaves without cancelling.
	TagDontCancelOnDisconnect = 9003
)

// CODFor returns the scope a connection of a venue gets by default (when
// the client says nothing at logon), from the venue profile: the profile's
// scope when cancel-on-disconnect is documented as on by default, else
// CODOff. A profile-wide or account-wide scope maps to CODProfile.
func CODFor(p venue.Profile) CODScope {
	c := p.CancelOnDisconnect
	if !c.Known() || !c.Value.OnByDefault {
		return CODOff
	}
	return codOf(c.Value.Scope)
}

// CODScopeOf maps a venue's cancel-on-disconnect scope to the broker's
// (CODOff for none or unknown).
func CODScopeOf(p venue.Profile) CODScope {
	if !p.CancelOnDisconnect.Known() {
		return CODOff
	}
	return codOf(p.CancelOnDisconnect.Value.Scope)
}

func codOf(s venue.CODScope) CODScope {
	switch s {
	case venue.CODConnection:
		return CODConnection
	case venue.CODSession:
		return CODSession
	case venue.CODProfile, venue.CODAccount:
		return CODProfile
	}
	return CODOff
}

// SetCancelOnDisconnect sets the scope connections of svc (FIX or WS) get
// when they choose none themselves, for connections opened from now on.
// REST and probe have no cancel-on-disconnect: they are refused with
// ErrUnknownService.
func (b *Broker) SetCancelOnDisconnect(svc Service, scope CODScope) error {
	if svc != FIX && svc != WS {
		return fmt.Errorf("%w: cancel-on-disconnect applies to fix and ws, not %q", ErrUnknownService, svc)
	}
	if scope > CODProfile {
		return fmt.Errorf("%w: cancel-on-disconnect scope %d is unknown", ErrInvalidConfig, scope)
	}
	b.rest.mu.Lock()
	defer b.rest.mu.Unlock()
	b.rest.init()
	b.rest.codDefault[svc] = scope
	return nil
}

// SetCODDelay makes the cancel-on-disconnect of the service's connections
// fire d after the connection ends, as at a venue that detects a drop only
// when it times the silent connection out (about 2.4 × HeartBtInt at
// quickfix acceptors); 0, the default, fires at once. A logout (the venue's
// way to keep orders) still keeps them.
func (b *Broker) SetCODDelay(svc Service, d time.Duration) error {
	if svc != FIX && svc != WS {
		return fmt.Errorf("%w: cancel-on-disconnect applies to fix and ws, not %q", ErrUnknownService, svc)
	}
	if d < 0 {
		return fmt.Errorf("%w: cancel-on-disconnect delay %v is negative", ErrInvalidConfig, d)
	}
	b.rest.mu.Lock()
	defer b.rest.mu.Unlock()
	b.rest.init()
	b.rest.codDelay[svc] = d
	return nil
}

// CancelOnDisconnect returns the scope in force for a connection (by its
// ConnID), and the service default when the connection chose none.
func (b *Broker) CancelOnDisconnect(svc Service, connID string) CODScope {
	b.rest.mu.Lock()
	defer b.rest.mu.Unlock()
	b.rest.init()
	if s, ok := b.rest.cod[connID]; ok {
		return s
	}
	return b.rest.codDefault[svc]
}

// chooseCOD records the scope a connection chose, and audits it.
func (b *Broker) chooseCOD(rg *Region, svc Service, connID string, scope CODScope, how string) {
	b.rest.mu.Lock()
	b.rest.init()
	b.rest.cod[connID] = scope
	b.rest.mu.Unlock()
	b.audit.add(Record{Kind: KindCODSet, Region: rg.name, Service: string(svc), ConnID: connID, Outcome: OutcomeOK,
		Detail: scope.String() + " (" + how + ")"})
}

// keepOrders marks a connection as leaving the way the venue keeps orders.
func (b *Broker) keepOrders(connID, how string) {
	b.rest.mu.Lock()
	b.rest.init()
	b.rest.keep[connID] = how
	b.rest.mu.Unlock()
}

// connEnded applies cancel-on-disconnect for a connection that ended, by
// logout or by a drop: unless it left the way the venue keeps orders, the
// open orders its scope covers are cancelled, each audited as a
// KindCODCancel naming this connection.
func (b *Broker) connEnded(rg *Region, svc Service, connID string) {
	if rg == nil || connID == "" {
		return
	}
	b.rest.mu.Lock()
	b.rest.init()
	scope, chosen := b.rest.cod[connID]
	if !chosen {
		scope = b.rest.codDefault[svc]
	}
	how, kept := b.rest.keep[connID]
	delete(b.rest.cod, connID)
	delete(b.rest.keep, connID)
	delay := b.rest.codDelay[svc]
	b.rest.mu.Unlock()
	if scope == CODOff {
		return
	}
	if kept {
		b.audit.add(Record{Kind: KindCODKept, Region: rg.name, Service: string(svc), ConnID: connID, Outcome: OutcomeOK,
			Detail: "cod " + scope.String() + " not fired: " + how})
		return
	}
	if delay > 0 {
		ended := time.Now()
		time.AfterFunc(delay, func() { b.codFire(rg, svc, connID, scope, ended) })
		return
	}
	b.codFire(rg, svc, connID, scope, time.Now())
}

// codFire cancels the open orders a connection's cancel-on-disconnect
// covers (the connection ended at ended).
func (b *Broker) codFire(rg *Region, svc Service, connID string, scope CODScope, ended time.Time) {
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	now := time.Now()
	origin := b.bookedConn()
	cancelled := b.book.cancelWhere(func(o *Order) bool {
		return scope == CODProfile || origin[o.OrderID] == connID
	}, now)
	for _, o := range cancelled {
		b.audit.add(Record{Time: now, Kind: KindCODCancel, Region: rg.name, Service: string(svc), ConnID: connID,
			ClientOrderID: o.ClientOrderID, OrderID: o.OrderID, Outcome: OutcomeOK,
			Detail: codDetail(scope, origin[o.OrderID], now.Sub(ended))})
	}
	if len(cancelled) > 0 {
		b.log.Info("cancel-on-disconnect", "conn", connID, "scope", scope.String(), "cancelled", len(cancelled))
	}
}

func codDetail(scope CODScope, placedOn string, late time.Duration) string {
	d := fmt.Sprintf("cod %s: placed on %s", scope, placedOn)
	if late > 0 {
		d += fmt.Sprintf(" (%v after the connection ended)", late)
	}
	return d
}

// cancelByClient cancels the latest open booking of clientOrderID for a
// client's request, under the order lock, and audits a KindCancel (cause
// user) either way.
func (b *Broker) cancelByClient(rg *Region, svc Service, connID, clientOrderID string) (Order, error) {
	rec := Record{Kind: KindCancel, Region: rg.name, Service: string(svc), ConnID: connID, ClientOrderID: clientOrderID}
	if err := b.cancelAllowed(rg); err != nil { // takes the order lock itself
		rec.Outcome, rec.Detail = OutcomeFailed, err.Error()
		b.audit.add(rec)
		return Order{}, err
	}
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	o, err := b.book.cancel(clientOrderID, time.Now())
	rec.OrderID = o.OrderID
	if err != nil {
		rec.Outcome, rec.Detail = OutcomeFailed, err.Error()
	} else {
		rec.Outcome, rec.Detail = OutcomeOK, "user"
	}
	b.audit.add(rec)
	return o, err
}

// fixAdmin reads the cancel-on-disconnect tags of a Logon (the scope the
// session asks for) and of a Logout (9003=Y: leave without cancelling).
func (fs *fixServer) fixAdmin(msg *quickfix.Message) {
	switch {
	case msg.IsMsgTypeOf(msgTypeLogon):
		scope, how, ok := logonCOD(msg)
		if !ok {
			return
		}
		fs.mu.Lock()
		c := fs.pending
		fs.mu.Unlock()
		if c != nil && c.rg != nil {
			fs.b.chooseCOD(c.rg, FIX, c.id, scope, how)
		}
	case msg.IsMsgTypeOf(msgTypeLogout):
		if v, err := msg.Body.GetString(TagDontCancelOnDisconnect); err == nil && v == "Y" {
			if c := fs.current(); c != nil {
				fs.b.keepOrders(c.id, "FIX Logout with DontCancelOnDisconnect (9003)=Y")
			}
		}
	}
}

// logonCOD returns the scope a Logon asks for, from the first of 8013,
// 8674 and 9001 it carries.
func logonCOD(msg *quickfix.Message) (CODScope, string, bool) {
	if v, err := msg.Body.GetString(TagCoinbaseCOD); err == nil {
		switch v {
		case "Y":
			return CODProfile, "Logon 8013=Y", true
		case "S":
			return CODSession, "Logon 8013=S", true
		case "N":
			return CODOff, "Logon 8013=N", true
		}
	}
	if v, err := msg.Body.GetString(TagKrakenCOD); err == nil {
		switch v {
		case "0":
			return CODSession, "Logon 8674=0", true
		case "1":
			return CODOff, "Logon 8674=1", true
		}
	}
	if v, err := msg.Body.GetString(TagDeribitCOD); err == nil {
		switch v {
		case "Y":
			return CODConnection, "Logon 9001=Y", true
		case "N":
			return CODOff, "Logon 9001=N", true
		}
	}
	return CODOff, "", false
}

// onCancel serves OrderCancelRequest (F): cancels OrigClOrdID and answers
// an ExecutionReport ExecType=CANCELED, or OrdStatus=REJECTED with Text.
func (fs *fixServer) onCancel(msg *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	fc := fs.current()
	if fc == nil || fc.rg == nil {
		return quickfix.NewBusinessMessageRejectError("no region attributed to this session", 0, nil)
	}
	orig, rerr := msg.Body.GetString(tagOrigClOrdID)
	if rerr != nil {
		return rerr
	}
	side, _ := msg.Body.GetString(tagSide)
	o, err := fs.b.cancelByClient(fc.rg, FIX, fc.id, orig)
	if err != nil {
		fs.send(fs.rejectReport(orig, side, execTypeCanceled, rejUnknownOrder, "cancel refused: "+err.Error()), sid)
		return nil
	}
	fs.send(fs.report(o, execTypeCanceled), sid)
	return nil
}

// WebSocket order entry messages (client → server).
type wsOrderMsg struct {
	Type          string    `json:"type"`
	ClientOrderID string    `json:"client_order_id"`
	Symbol        string    `json:"symbol"`
	Side          string    `json:"side"`
	Qty           decString `json:"qty"`
	OrdType       string    `json:"order_type"`
	Price         decString `json:"price"`
	Token         string    `json:"token"`
	// Scope: "connection" or "off" for enable_cancel_on_disconnect.
	Scope string `json:"scope"`
	// Timeout in seconds for cancel_all_after (0 disarms).
	Timeout float64 `json:"timeout"`
}

// wsOrderReply is the server's answer to an order entry message.
type wsOrderReply struct {
	Type          string `json:"type"` // order | canceled | rejected | cod | cancel_all_after
	ClientOrderID string `json:"client_order_id,omitempty"`
	Order         *Order `json:"order,omitempty"`
	Error         string `json:"error,omitempty"`
	Scope         string `json:"scope,omitempty"`
	// Expires is when the dead-man timer fires unless refreshed (zero: disarmed).
	Expires time.Time `json:"expires,omitzero"`
}

// codID is the ConnID the connection's orders and cancel-on-disconnect
// are keyed by.
func (c *wsConn) codID() string {
	if c.id != "" {
		return c.id
	}
	return fmt.Sprintf("%s/ws/direct-%p", c.rg.name, c)
}

// handleOrderEntry serves the WebSocket order entry messages; it reports
// false for a type it does not know.
func (c *wsConn) handleOrderEntry(typ string, data []byte) bool {
	switch typ {
	case "order", "cancel", "enable_cancel_on_disconnect", "logout", "cancel_all_after":
	default:
		return false
	}
	var in wsOrderMsg
	if err := json.Unmarshal(data, &in); err != nil {
		c.sendError(typ + ": bad message: " + err.Error())
		return true
	}
	rg, b, id := c.rg, c.rg.b, c.codID()
	switch typ {
	case "order":
		req := orderRequest{ClientOrderID: in.ClientOrderID, Symbol: in.Symbol, Side: in.Side, Type: in.OrdType,
			Qty: string(in.Qty), Price: string(in.Price)}
		o, out, _, err := b.placeOrder(rg, WS, source{connID: id}, req, false, parseToken(in.Token))
		if err != nil {
			c.enqueue(wsOrderReply{Type: "rejected", ClientOrderID: in.ClientOrderID, Error: string(out) + ": " + err.Error()})
			return true
		}
		c.enqueue(wsOrderReply{Type: "order", ClientOrderID: o.ClientOrderID, Order: &o})
	case "cancel":
		o, err := b.cancelByClient(rg, WS, id, in.ClientOrderID)
		if err != nil {
			c.enqueue(wsOrderReply{Type: "rejected", ClientOrderID: in.ClientOrderID, Error: "cancel refused: " + err.Error()})
			return true
		}
		c.enqueue(wsOrderReply{Type: "canceled", ClientOrderID: o.ClientOrderID, Order: &o})
	case "enable_cancel_on_disconnect":
		scope := CODConnection
		switch in.Scope {
		case "", "connection":
		case "profile": // every open order of the account (Coinbase 8013=Y)
			scope = CODProfile
		case "off":
			scope = CODOff
		default:
			c.sendError("enable_cancel_on_disconnect: scope " + strconv.Quote(in.Scope) + ": want connection, profile or off")
			return true
		}
		b.chooseCOD(rg, WS, id, scope, "ws enable_cancel_on_disconnect")
		c.enqueue(wsOrderReply{Type: "cod", Scope: scope.String()})
	case "logout":
		b.keepOrders(id, "WebSocket logout")
		c.close()
	case "cancel_all_after":
		if in.Timeout < 0 || in.Timeout > 86400 {
			c.sendError("cancel_all_after: timeout must be 0..86400 seconds")
			return true
		}
		exp, err := b.armDeadMan(time.Duration(in.Timeout*float64(time.Second)), rg.name, string(WS), id)
		if err != nil {
			c.sendError("cancel_all_after: " + err.Error())
			return true
		}
		c.enqueue(wsOrderReply{Type: "cancel_all_after", Expires: exp})
	}
	return true
}
