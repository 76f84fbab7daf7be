package simbroker

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shopspring/decimal"
)

// Order statuses as they appear in Order.Status and the REST API.
const (
	StatusNew      = "new"      // resting (limit), open
	StatusFilled   = "filled"   // market orders fill at once
	StatusCanceled = "canceled" // canceled while open
)

// Order is one order in the shared account book, as every region sees it.
// Decimal quantities and prices are strings, exactly as booked.
type Order struct {
	OrderID       string    `json:"order_id"`
	ClientOrderID string    `json:"client_order_id"`
	Symbol        string    `json:"symbol"`
	Side          string    `json:"side"` // buy | sell
	Type          string    `json:"type"` // market | limit
	Qty           string    `json:"qty"`
	Price         string    `json:"price,omitempty"` // limit price
	Status        string    `json:"status"`          // new | filled | canceled
	FilledQty     string    `json:"filled_qty"`
	AvgPrice      string    `json:"avg_price,omitempty"`
	Region        string    `json:"region"`  // region that booked it
	Service       string    `json:"service"` // rest | probe | fix: path that booked it
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// Open reports whether the order can still be canceled or filled.
func (o Order) Open() bool { return o.Status == StatusNew }

// orderRequest is a placement as received on any service.
type orderRequest struct {
	ClientOrderID string
	Symbol        string
	Side          string
	Type          string
	Qty           string
	Price         string
}

var (
	errInvalidOrder = errors.New("invalid order")
	errUnknownOrder = errors.New("unknown client order ID")
	errNotOpen      = errors.New("order is not open")
)

// book is the one account book shared by every region. Placement is
// idempotent on the client order ID.
type book struct {
	mu     sync.Mutex
	orders map[string]*Order
	order  []string // client order IDs in booking order
	nextID uint64
}

func newBook() *book { return &book{orders: make(map[string]*Order)} }

func (r orderRequest) validate() (qty, price decimal.Decimal, err error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errInvalidOrder}, a...)...)
	}
	if r.ClientOrderID == "" || len(r.ClientOrderID) > 64 {
		return qty, price, bad("client_order_id must be 1..64 characters")
	}
	if r.Symbol == "" || len(r.Symbol) > 32 {
		return qty, price, bad("symbol must be 1..32 characters")
	}
	if r.Side != "buy" && r.Side != "sell" {
		return qty, price, bad("side %q: want buy or sell", r.Side)
	}
	qty, e := decimal.NewFromString(r.Qty)
	if e != nil || !qty.IsPositive() {
		return qty, price, bad("qty %q must be a positive decimal", r.Qty)
	}
	switch r.Type {
	case "market":
		if r.Price != "" {
			if _, e := decimal.NewFromString(r.Price); e != nil {
				return qty, price, bad("price %q is not a decimal", r.Price)
			}
		}
	case "limit":
		price, e = decimal.NewFromString(r.Price)
		if e != nil || !price.IsPositive() {
			return qty, price, bad("price %q must be a positive decimal for a limit order", r.Price)
		}
	default:
		return qty, price, bad("type %q: want market or limit", r.Type)
	}
	return qty, price, nil
}

// place books req unless an order with the same client order ID exists, in
// which case that order is returned and created is false. Market orders fill
// at once at fillPrice(symbol) (or the request's price, or 100 if neither).
func (b *book) place(req orderRequest, region, service string, fillPrice func(symbol string) string, now time.Time) (o Order, created bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ex, ok := b.orders[req.ClientOrderID]; ok && req.ClientOrderID != "" {
		return *ex, false, nil
	}
	qty, price, err := req.validate()
	if err != nil {
		return Order{}, false, err
	}
	b.nextID++
	ord := &Order{
		OrderID:       fmt.Sprintf("O-%06d", b.nextID),
		ClientOrderID: req.ClientOrderID,
		Symbol:        req.Symbol,
		Side:          req.Side,
		Type:          req.Type,
		Qty:           qty.String(),
		Status:        StatusNew,
		FilledQty:     "0",
		Region:        region,
		Service:       service,
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	if req.Type == "limit" {
		ord.Price = price.String()
	} else {
		px := ""
		if fillPrice != nil {
			px = fillPrice(req.Symbol)
		}
		if px == "" {
			px = req.Price
		}
		if px == "" {
			px = "100"
		}
		ord.Status = StatusFilled
		ord.FilledQty = ord.Qty
		ord.AvgPrice = px
	}
	b.orders[ord.ClientOrderID] = ord
	b.order = append(b.order, ord.ClientOrderID)
	return *ord, true, nil
}

func (b *book) get(clientOrderID string) (Order, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.orders[clientOrderID]
	if !ok {
		return Order{}, false
	}
	return *o, true
}

// list returns orders in booking order; openOnly keeps status new only.
func (b *book) list(openOnly bool) []Order {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Order, 0, len(b.order))
	for _, id := range b.order {
		o := b.orders[id]
		if openOnly && !o.Open() {
			continue
		}
		out = append(out, *o)
	}
	return out
}

func (b *book) cancel(clientOrderID string, now time.Time) (Order, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.orders[clientOrderID]
	if !ok {
		return Order{}, errUnknownOrder
	}
	if !o.Open() {
		return *o, errNotOpen
	}
	o.Status = StatusCanceled
	o.UpdatedAt = now
	return *o, nil
}
