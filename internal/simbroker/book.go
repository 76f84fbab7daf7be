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
	OrderID       string `json:"order_id"`
	ClientOrderID string `json:"client_order_id"`
	Symbol        string `json:"symbol"`
	Side          string `json:"side"` // buy | sell
	Type          string `json:"type"` // market | limit
	Qty           string `json:"qty"`
	Price         string `json:"price,omitempty"` // limit price
	Status        string `json:"status"`          // new | filled | canceled
	FilledQty     string `json:"filled_qty"`
	AvgPrice      string `json:"avg_price,omitempty"`
	Region        string `json:"region"`  // region that booked it
	Service       string `json:"service"` // rest | probe | fix: path that booked it
	// FencingToken is the token the booking submission carried (0: none).
	FencingToken uint64    `json:"fencing_token,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
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

// book is the one account book shared by every region. Whether a repeated
// client order ID books a new order is the DedupPolicy's call.
type book struct {
	mu     sync.Mutex
	dedup  DedupPolicy
	window time.Duration       // DedupAcrossRegions: how long an ID stays refused (0: for ever)
	byCID  map[string][]*Order // every booking of a client order ID, oldest first
	all    []*Order            // booking order
	nextID uint64
}

func newBook(dedup DedupPolicy) *book { return &book{dedup: dedup, byCID: make(map[string][]*Order)} }

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

// existingLocked returns the order a repeat of clientOrderID maps to under
// the dedup policy, or nil when the submission must book.
func (b *book) existingLocked(clientOrderID string, now time.Time) *Order {
	prev := b.byCID[clientOrderID]
	if len(prev) == 0 {
		return nil
	}
	last := prev[len(prev)-1]
	switch b.dedup {
	case DedupAcrossRegions:
		if b.window > 0 {
			if now.Sub(last.CreatedAt) < b.window {
				return last
			}
			return nil
		}
		return prev[0]
	case DedupOpenOnly:
		if last.Open() {
			return last
		}
	}
	return nil
}

// place books req unless the dedup policy maps it to an existing order,
// which is then returned with created false. Market orders fill at once at
// fillPrice(symbol) (or the request's price, or 100 if neither).
func (b *book) place(req orderRequest, region, service string, token uint64, fillPrice func(symbol string) string, now time.Time) (o Order, created bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if req.ClientOrderID != "" {
		if ex := b.existingLocked(req.ClientOrderID, now); ex != nil {
			return *ex, false, nil
		}
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
		FencingToken:  token,
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
	b.byCID[ord.ClientOrderID] = append(b.byCID[ord.ClientOrderID], ord)
	b.all = append(b.all, ord)
	return *ord, true, nil
}

// get returns the latest booking of clientOrderID.
func (b *book) get(clientOrderID string) (Order, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	prev := b.byCID[clientOrderID]
	if len(prev) == 0 {
		return Order{}, false
	}
	return *prev[len(prev)-1], true
}

// bookings returns every booking of clientOrderID, oldest first.
func (b *book) bookings(clientOrderID string) []Order {
	b.mu.Lock()
	defer b.mu.Unlock()
	prev := b.byCID[clientOrderID]
	out := make([]Order, len(prev))
	for i, o := range prev {
		out[i] = *o
	}
	return out
}

// list returns orders in booking order; openOnly keeps status new only.
func (b *book) list(openOnly bool) []Order {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Order, 0, len(b.all))
	for _, o := range b.all {
		if openOnly && !o.Open() {
			continue
		}
		out = append(out, *o)
	}
	return out
}

// cancel cancels the latest open booking of clientOrderID (the latest
// booking when none is open, which yields errNotOpen).
func (b *book) cancel(clientOrderID string, now time.Time) (Order, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	prev := b.byCID[clientOrderID]
	if len(prev) == 0 {
		return Order{}, errUnknownOrder
	}
	o := prev[len(prev)-1]
	for i := len(prev) - 1; i >= 0; i-- {
		if prev[i].Open() {
			o = prev[i]
			break
		}
	}
	if !o.Open() {
		return *o, errNotOpen
	}
	o.Status = StatusCanceled
	o.UpdatedAt = now
	return *o, nil
}
