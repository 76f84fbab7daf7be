package simbroker

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shopspring/decimal"
)

// Record kinds of a resting order's life after it is booked: fills, and the
// cancels the broker makes by itself. A cancel the client asked for is a
// KindCancel record (REST DELETE, FIX OrderCancelRequest, WebSocket cancel).
const (
	// KindFill: an open limit order filled (FillResting, FillCrossing).
	// ClientOrderID and OrderID name it, Detail the price.
	KindFill RecordKind = "fill"
	// KindCODCancel: cancel-on-disconnect cancelled an open order. ConnID is
	// the connection (or session) whose end fired it; Detail names the scope
	// and the order's own connection ("cod connection: placed on eu/fix/3",
	// "cod profile: placed on us/rest/7").
	KindCODCancel RecordKind = "cod-cancel"
	// KindCODKept: a connection with cancel-on-disconnect on ended the way
	// the venue keeps orders (FIX Logout with 9003=Y, WebSocket logout);
	// nothing was cancelled. Detail says how it left.
	KindCODKept RecordKind = "cod-kept"
	// KindCODSet: a connection chose its cancel-on-disconnect scope (a FIX
	// Logon tag, a WebSocket message); Detail is the scope.
	KindCODSet RecordKind = "cod-set"
	// KindDeadMan: the account's dead-man timer was armed or refreshed
	// (Detail "arm timeout=60s": it fires at Time+60s unless refreshed),
	// disarmed (Detail "disarm") or fired (Detail "fired", Outcome OK).
	// ConnID is the connection that armed it (empty when fired or armed
	// through the Go API).
	KindDeadMan RecordKind = "deadman"
	// KindDeadManCancel: the dead-man timer's firing cancelled an open order.
	KindDeadManCancel RecordKind = "deadman-cancel"
)

// CancelCause is why an order was cancelled.
type CancelCause string

// Cancel causes.
const (
	CauseUser    CancelCause = "user"     // the client asked (KindCancel)
	CauseCOD     CancelCause = "cod"      // cancel-on-disconnect (KindCODCancel)
	CauseDeadMan CancelCause = "dead-man" // the dead-man timer fired (KindDeadManCancel)
)

// Cancel is one cancel of an open order, as the audit recorded it.
type Cancel struct {
	Seq           uint64      `json:"seq"`
	Time          time.Time   `json:"time"`
	ClientOrderID string      `json:"client_order_id"`
	OrderID       string      `json:"order_id,omitempty"`
	Cause         CancelCause `json:"cause"`
	// ConnID: for CauseCOD the connection whose end fired it; for CauseUser
	// the connection the request came through.
	ConnID string `json:"conn_id,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Cancels returns every successful cancel of an order with its cause, in
// audit order.
func (l AuditLog) Cancels() []Cancel {
	var out []Cancel
	for _, r := range l {
		var c CancelCause
		switch {
		case r.Kind == KindCancel && r.Outcome == OutcomeOK:
			c = CauseUser
		case r.Kind == KindCODCancel:
			c = CauseCOD
		case r.Kind == KindDeadManCancel:
			c = CauseDeadMan
		default:
			continue
		}
		out = append(out, Cancel{Seq: r.Seq, Time: r.Time, ClientOrderID: r.ClientOrderID, OrderID: r.OrderID,
			Cause: c, ConnID: r.ConnID, Detail: r.Detail})
	}
	return out
}

// Fills returns the fills of resting orders, in audit order.
func (l AuditLog) Fills() AuditLog {
	return l.Filter(func(r Record) bool { return r.Kind == KindFill })
}

// OpenOrders returns the open (resting) orders of the account, in booking
// order: what GET /v1/orders?status=open answers.
func (b *Broker) OpenOrders() []Order { return b.book.list(true) }

// ErrNotResting is returned by FillResting for an order that is unknown or
// not open.
var ErrNotResting = errors.New("simbroker: no open order with that client order ID")

// FillResting fills the latest open booking of clientOrderID in full at
// price (empty: the order's limit price), audits a KindFill and returns the
// filled order. It is how a test decides exactly when a resting order fills.
func (b *Broker) FillResting(clientOrderID, price string) (Order, error) {
	if price != "" {
		if p, err := decimal.NewFromString(price); err != nil || !p.IsPositive() {
			return Order{}, fmt.Errorf("%w: fill price %q must be a positive decimal", errInvalidOrder, price)
		}
	}
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	now := time.Now()
	var target string
	for _, o := range b.book.bookings(clientOrderID) {
		if o.Open() {
			target = o.OrderID
		}
	}
	if target == "" {
		return Order{}, fmt.Errorf("%w: %q", ErrNotResting, clientOrderID)
	}
	filled := b.book.fillWhere(func(o *Order) bool { return o.OrderID == target }, func(o *Order) string {
		if price != "" {
			return price
		}
		return o.Price
	}, now)
	b.auditFills(filled, now)
	return filled[0], nil
}

// FillCrossing fills, at price, every open limit order on symbol that the
// price reaches (a buy limit at or above it, a sell limit at or below it),
// audits each as a KindFill and returns them in booking order: a
// deterministic market for resting orders.
func (b *Broker) FillCrossing(symbol, price string) ([]Order, error) {
	px, err := decimal.NewFromString(price)
	if err != nil || !px.IsPositive() {
		return nil, fmt.Errorf("%w: fill price %q must be a positive decimal", errInvalidOrder, price)
	}
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	now := time.Now()
	filled := b.book.fillWhere(func(o *Order) bool {
		if o.Symbol != symbol || o.Type != "limit" {
			return false
		}
		lim, err := decimal.NewFromString(o.Price)
		if err != nil {
			return false
		}
		if o.Side == "buy" {
			return lim.GreaterThanOrEqual(px)
		}
		return lim.LessThanOrEqual(px)
	}, func(*Order) string { return px.String() }, now)
	b.auditFills(filled, now)
	return filled, nil
}

func (b *Broker) auditFills(filled []Order, now time.Time) {
	for _, o := range filled {
		b.audit.add(Record{Time: now, Kind: KindFill, Region: o.Region, Service: o.Service, ClientOrderID: o.ClientOrderID,
			OrderID: o.OrderID, Outcome: OutcomeOK, Detail: "price " + o.AvgPrice})
	}
}

// fillWhere fills every open order keep selects, at the price priceOf
// gives it, and returns them in booking order.
func (bk *book) fillWhere(keep func(*Order) bool, priceOf func(*Order) string, now time.Time) []Order {
	bk.mu.Lock()
	defer bk.mu.Unlock()
	var out []Order
	for _, o := range bk.all {
		if !o.Open() || !keep(o) {
			continue
		}
		o.Status, o.FilledQty, o.AvgPrice, o.UpdatedAt = StatusFilled, o.Qty, priceOf(o), now
		out = append(out, *o)
	}
	return out
}

// cancelWhere cancels every open order keep selects and returns them in
// booking order.
func (bk *book) cancelWhere(keep func(*Order) bool, now time.Time) []Order {
	bk.mu.Lock()
	defer bk.mu.Unlock()
	var out []Order
	for _, o := range bk.all {
		if !o.Open() || !keep(o) {
			continue
		}
		o.Status, o.UpdatedAt = StatusCanceled, now
		out = append(out, *o)
	}
	return out
}

// resting is the broker's state for resting orders beyond the book: the
// cancel-on-disconnect scope of each connection and the dead-man timer.
type resting struct {
	mu sync.Mutex
	// codDefault: the scope a connection of a service gets when it chooses
	// none itself.
	codDefault map[Service]CODScope
	// cod: the scope each connection chose (by ConnID); keep: connections
	// that left the way the venue keeps orders.
	cod  map[string]CODScope
	keep map[string]string
	dm   deadMan
	// codDelay: how long after a connection of a service ends its
	// cancel-on-disconnect fires (a venue that detects the drop by missed
	// heartbeats: SetCODDelay).
	codDelay map[Service]time.Duration
}

func (r *resting) init() {
	if r.codDefault == nil {
		r.codDefault = map[Service]CODScope{}
		r.cod = map[string]CODScope{}
		r.keep = map[string]string{}
		r.codDelay = map[Service]time.Duration{}
	}
}

// placedOn returns the IDs of the orders booked through connection connID,
// from the audit (dedup hits book nothing and are not counted).
func (b *Broker) placedOn(connID string) map[string]bool {
	out := map[string]bool{}
	for _, r := range b.audit.snapshot().Booked() {
		if r.ConnID == connID && r.OrderID != "" {
			out[r.OrderID] = true
		}
	}
	return out
}

// bookedConn maps every booked order ID to the connection it came through.
func (b *Broker) bookedConn() map[string]string {
	out := map[string]string{}
	for _, r := range b.audit.snapshot().Booked() {
		out[r.OrderID] = r.ConnID
	}
	return out
}
