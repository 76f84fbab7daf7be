// Package venuestub serves venue-shaped REST APIs (Binance Spot, Alpaca
// Trading) for the SDK examples' tests: two TLS regions, each behind a
// fault-injecting relay, sharing one account book that never deduplicates
// client order IDs (the worst a venue can do: an order sent twice is booked
// twice). Request and answer shapes follow the venues' public docs:
// https://developers.binance.com/docs/binance-spot-api-docs/rest-api/trading-endpoints
// and https://docs.alpaca.markets/reference/orders.
package venuestub

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
)

// Flavor is the venue a Stub plays.
type Flavor int

const (
	Binance Flavor = iota
	Alpaca
)

// Credentials the stub accepts.
const (
	Key    = "stub-key"
	Secret = "stub-secret"
)

// Order is one booked order.
type Order struct {
	ID            int64 // the venue's order ID (Alpaca renders it as a UUID)
	ClientOrderID string
	Symbol, Side  string
	Type          string
	Qty, Price    string
	Status        string // the venue's word
	Region        string // where it was booked
	At            time.Time
}

// Mode is how a region answers order requests.
type Mode int

const (
	// Normal: book and answer.
	Normal Mode = iota
	// Fail5xx: book, then answer 503 with a non-JSON body (the outcome is
	// unknown to the client; the book has it).
	Fail5xx
	// DropAnswer: book, then cut the connection without answering.
	DropAnswer
	// HoldOrders: order requests are held unbooked until Release; the
	// connection is then cut, and the order booked (a late landing).
	HoldOrders
)

// Region is one of the stub's two regions.
type Region struct {
	Name  string
	Relay *faultnet.Relay // clients dial Relay.Addr(); SetFault to cut the path
	srv   *httptest.Server
	stub  *Stub

	mu      sync.Mutex
	mode    Mode
	release chan struct{}
	held    int
}

// Stub is the two-region venue.
type Stub struct {
	Flavor Flavor
	EU, US *Region
	// RootCAs verify the regions' certificates (for 127.0.0.1).
	RootCAs *x509.CertPool

	mu     sync.Mutex
	orders []*Order
	nextID int64
}

// New starts a stub of the flavor; Close stops it.
func New(f Flavor) (*Stub, error) {
	s := &Stub{Flavor: f, RootCAs: x509.NewCertPool(), nextID: 1000}
	for _, name := range []string{"eu", "us"} {
		r := &Region{Name: name, stub: s}
		r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
		r.srv.EnableHTTP2 = true
		r.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // cut connections are the point, not news
		r.srv.StartTLS()
		s.RootCAs.AddCert(r.srv.Certificate())
		relay, err := faultnet.New(faultnet.Config{Target: r.srv.Listener.Addr().String(), Name: name})
		if err != nil {
			s.Close()
			return nil, err
		}
		r.Relay = relay
		if name == "eu" {
			s.EU = r
		} else {
			s.US = r
		}
	}
	return s, nil
}

// URL is the region's base URL as clients dial it (through its relay).
func (r *Region) URL() string { return "https://" + r.Relay.Addr() }

// SetMode sets how the region answers order requests from now on.
func (r *Region) SetMode(m Mode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mode = m
	if m == HoldOrders && r.release == nil {
		r.release = make(chan struct{})
	}
}

// Held is how many order requests the region holds (HoldOrders).
func (r *Region) Held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}

// Release books the held orders and returns the region to Normal.
func (r *Region) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.release != nil {
		close(r.release)
		r.release = nil
	}
	r.mode = Normal
}

// Close stops both regions.
func (s *Stub) Close() {
	for _, r := range []*Region{s.EU, s.US} {
		if r == nil {
			continue
		}
		r.Release()
		if r.Relay != nil {
			_ = r.Relay.Close()
		}
		r.srv.CloseClientConnections()
		r.srv.Close()
	}
}

// TLS returns a client TLS configuration that trusts the stub.
func (s *Stub) TLS() *tls.Config {
	return &tls.Config{RootCAs: s.RootCAs, MinVersion: tls.VersionTLS12}
}

// Orders returns a copy of the book.
func (s *Stub) Orders() []Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Order, len(s.orders))
	for i, o := range s.orders {
		out[i] = *o
	}
	return out
}

// Booked returns how many times each client order ID was booked.
func (s *Stub) Booked() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[string]int{}
	for _, o := range s.orders {
		n[o.ClientOrderID]++
	}
	return n
}

func (s *Stub) book(o *Order) *Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	o.ID, o.At = s.nextID, time.Now()
	s.orders = append(s.orders, o)
	return o
}

// find returns the latest order with the client ID, or with the venue ID.
func (s *Stub) find(clientID string, id int64) *Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.orders) - 1; i >= 0; i-- {
		o := s.orders[i]
		if (clientID != "" && o.ClientOrderID == clientID) || (id != 0 && o.ID == id) {
			return o
		}
	}
	return nil
}

func (s *Stub) setStatus(o *Order, st string) {
	s.mu.Lock()
	o.Status = st
	s.mu.Unlock()
}

func (s *Stub) status(o *Order) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return o.Status
}

// uuidOf renders a venue order ID as Alpaca's UUID, and back.
func uuidOf(id int64) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", id) }

func idOfUUID(u string) int64 {
	if !strings.HasPrefix(u, "00000000-0000-4000-8000-") {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimPrefix(u, "00000000-0000-4000-8000-"), 10, 64)
	return n
}

// placing is called by an order handler before it books: it applies the
// region's mode. It returns false when the request is not to be booked now
// (the handler returns); after, the answer is given by answer.
func (r *Region) placing(w http.ResponseWriter) (after func(w http.ResponseWriter, ok func()), proceed bool) {
	r.mu.Lock()
	mode, rel := r.mode, r.release
	if mode == HoldOrders {
		r.held++
	}
	r.mu.Unlock()
	switch mode {
	case HoldOrders:
		<-rel // booked late: the client has long given up
		r.mu.Lock()
		r.held--
		r.mu.Unlock()
		return func(w http.ResponseWriter, _ func()) { cut(w) }, true
	case Fail5xx:
		return func(w http.ResponseWriter, _ func()) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "<html><body>503 Service Temporarily Unavailable</body></html>")
		}, true
	case DropAnswer:
		return func(w http.ResponseWriter, _ func()) { cut(w) }, true
	}
	return func(_ http.ResponseWriter, ok func()) { ok() }, true
}

// cut closes the connection without an answer (HTTP/2: the stream is reset).
func cut(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			if tc, ok := c.(*tls.Conn); ok {
				if nc, ok := tc.NetConn().(*net.TCPConn); ok {
					_ = nc.SetLinger(0)
				}
			}
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // HTTP/2: reset the stream
}

func (r *Region) serve(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("X-Region", r.Name)
	if r.stub.Flavor == Binance {
		r.binance(w, req)
		return
	}
	r.alpaca(w, req)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// ---- Binance Spot ----

func binErr(w http.ResponseWriter, code int, c int, msg string) {
	writeJSON(w, code, map[string]any{"code": c, "msg": msg})
}

// binanceParams checks the API key and the HMAC-SHA256 signature over the
// query (without signature) followed by the body, as the docs' SIGNED
// endpoints require, and returns the parameters.
func binanceParams(req *http.Request) (url.Values, bool) {
	if req.Header.Get("X-MBX-APIKEY") != Key {
		return nil, false
	}
	body, _ := io.ReadAll(req.Body)
	raw := req.URL.RawQuery
	sig := ""
	if i := strings.Index(raw, "signature="); i >= 0 {
		sig = raw[i+len("signature="):]
		raw = strings.TrimSuffix(raw[:i], "&")
	}
	mac := hmac.New(sha256.New, []byte(Secret))
	mac.Write([]byte(raw + string(body)))
	if sig == "" || !hmac.Equal([]byte(sig), []byte(hex.EncodeToString(mac.Sum(nil)))) {
		return nil, false
	}
	q, _ := url.ParseQuery(raw)
	f, _ := url.ParseQuery(string(body))
	for k, v := range f {
		q[k] = v
	}
	return q, true
}

func (s *Stub) binanceOrder(o *Order) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]any{"symbol": o.Symbol, "orderId": o.ID, "orderListId": -1, "clientOrderId": o.ClientOrderID,
		"transactTime": o.At.UnixMilli(), "time": o.At.UnixMilli(), "updateTime": o.At.UnixMilli(),
		"price": o.Price, "origQty": o.Qty, "executedQty": "0", "cummulativeQuoteQty": "0",
		"status": o.Status, "timeInForce": "GTC", "type": o.Type, "side": o.Side, "isWorking": true}
}

func (r *Region) binance(w http.ResponseWriter, req *http.Request) {
	s := r.stub
	if req.URL.Path == "/api/v3/ping" {
		writeJSON(w, 200, map[string]any{})
		return
	}
	p, ok := binanceParams(req)
	if !ok {
		binErr(w, http.StatusUnauthorized, -1022, "Signature for this request is not valid.")
		return
	}
	target := func() *Order {
		id, _ := strconv.ParseInt(p.Get("orderId"), 10, 64)
		return s.find(p.Get("origClientOrderId"), id)
	}
	switch req.Method + " " + req.URL.Path {
	case "GET /api/v3/account":
		writeJSON(w, 200, map[string]any{"makerCommission": 10, "canTrade": true, "accountType": "SPOT",
			"balances": []map[string]string{{"asset": "USDT", "free": "1000.0", "locked": "0.0"}}})
	case "GET /api/v3/order":
		o := target()
		if o == nil {
			binErr(w, 400, -2013, "Order does not exist.")
			return
		}
		writeJSON(w, 200, s.binanceOrder(o))
	case "POST /api/v3/order":
		if q, err := strconv.ParseFloat(p.Get("quantity"), 64); err != nil || q <= 0 {
			binErr(w, 400, -1013, "Invalid quantity.")
			return
		}
		after, _ := r.placing(w)
		st := "NEW"
		if p.Get("type") == "MARKET" {
			st = "FILLED"
		}
		o := s.book(&Order{ClientOrderID: p.Get("newClientOrderId"), Symbol: p.Get("symbol"), Side: p.Get("side"), Type: p.Get("type"),
			Qty: p.Get("quantity"), Price: p.Get("price"), Status: st, Region: r.Name})
		after(w, func() { writeJSON(w, 200, s.binanceOrder(o)) })
	case "DELETE /api/v3/order":
		o := target()
		if o == nil || s.status(o) != "NEW" {
			binErr(w, 400, -2011, "Unknown order sent.")
			return
		}
		after, _ := r.placing(w)
		s.setStatus(o, "CANCELED")
		after(w, func() { writeJSON(w, 200, s.binanceOrder(o)) })
	case "POST /api/v3/order/cancelReplace":
		id, _ := strconv.ParseInt(p.Get("cancelOrderId"), 10, 64)
		old := s.find(p.Get("cancelOrigClientOrderId"), id)
		if old == nil || s.status(old) != "NEW" {
			binErr(w, 400, -2022, "Order cancel-replace failed.")
			return
		}
		after, _ := r.placing(w)
		s.setStatus(old, "CANCELED")
		o := s.book(&Order{ClientOrderID: p.Get("newClientOrderId"), Symbol: p.Get("symbol"), Side: p.Get("side"), Type: p.Get("type"),
			Qty: p.Get("quantity"), Price: p.Get("price"), Status: "NEW", Region: r.Name})
		after(w, func() {
			writeJSON(w, 200, map[string]any{"cancelResult": "SUCCESS", "newOrderResult": "SUCCESS",
				"cancelResponse": s.binanceOrder(old), "newOrderResponse": s.binanceOrder(o)})
		})
	default:
		binErr(w, 404, -1000, "no such endpoint in the stub: "+req.Method+" "+req.URL.Path)
	}
}

// ---- Alpaca Trading ----

func (s *Stub) alpacaOrder(o *Order) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]any{"id": uuidOf(o.ID), "client_order_id": o.ClientOrderID, "symbol": o.Symbol, "qty": o.Qty,
		"side": o.Side, "type": o.Type, "time_in_force": "day", "status": o.Status,
		"created_at": o.At.UTC().Format(time.RFC3339Nano), "updated_at": o.At.UTC().Format(time.RFC3339Nano),
		"submitted_at": o.At.UTC().Format(time.RFC3339Nano), "filled_qty": "0", "asset_class": "us_equity"}
	if o.Price != "" {
		m["limit_price"] = o.Price
	}
	return m
}

func (r *Region) alpaca(w http.ResponseWriter, req *http.Request) {
	s := r.stub
	if req.Header.Get("APCA-API-KEY-ID") != Key || req.Header.Get("APCA-API-SECRET-KEY") != Secret {
		writeJSON(w, 401, map[string]any{"code": 40110000, "message": "request is not authorized"})
		return
	}
	notFound := func() { writeJSON(w, 404, map[string]any{"code": 40410000, "message": "order not found"}) }
	var body struct {
		ClientOrderID string `json:"client_order_id"`
		Symbol        string `json:"symbol"`
		Qty           string `json:"qty"`
		Side          string `json:"side"`
		Type          string `json:"type"`
		LimitPrice    string `json:"limit_price"`
	}
	if req.Body != nil {
		_ = json.NewDecoder(req.Body).Decode(&body)
	}
	path := req.URL.Path
	switch {
	case req.Method == "GET" && path == "/v2/account":
		writeJSON(w, 200, map[string]any{"id": "acct-1", "status": "ACTIVE", "currency": "USD", "cash": "1000", "buying_power": "1000"})
	case req.Method == "GET" && path == "/v2/orders:by_client_order_id":
		o := s.find(req.URL.Query().Get("client_order_id"), 0)
		if o == nil {
			notFound()
			return
		}
		writeJSON(w, 200, s.alpacaOrder(o))
	case req.Method == "GET" && strings.HasPrefix(path, "/v2/orders/"):
		o := s.find("", idOfUUID(strings.TrimPrefix(path, "/v2/orders/")))
		if o == nil {
			notFound()
			return
		}
		writeJSON(w, 200, s.alpacaOrder(o))
	case req.Method == "POST" && path == "/v2/orders":
		if q, err := strconv.ParseFloat(body.Qty, 64); err != nil || q <= 0 {
			writeJSON(w, 422, map[string]any{"code": 40010001, "message": "qty must be > 0"})
			return
		}
		after, _ := r.placing(w)
		st := "accepted"
		if body.Type == "market" {
			st = "filled"
		}
		cid := body.ClientOrderID
		if cid == "" {
			cid = fmt.Sprintf("venue-assigned-%d", time.Now().UnixNano())
		}
		o := s.book(&Order{ClientOrderID: cid, Symbol: body.Symbol, Side: body.Side, Type: body.Type, Qty: body.Qty, Price: body.LimitPrice, Status: st, Region: r.Name})
		after(w, func() { writeJSON(w, 200, s.alpacaOrder(o)) })
	case req.Method == "PATCH" && strings.HasPrefix(path, "/v2/orders/"):
		old := s.find("", idOfUUID(strings.TrimPrefix(path, "/v2/orders/")))
		if old == nil || s.status(old) != "accepted" {
			writeJSON(w, 422, map[string]any{"code": 42210000, "message": "order is not open"})
			return
		}
		after, _ := r.placing(w)
		s.setStatus(old, "replaced")
		cid := body.ClientOrderID
		if cid == "" {
			cid = fmt.Sprintf("venue-assigned-%d", time.Now().UnixNano())
		}
		o := s.book(&Order{ClientOrderID: cid, Symbol: old.Symbol, Side: old.Side, Type: old.Type, Qty: body.Qty, Price: body.LimitPrice, Status: "accepted", Region: r.Name})
		after(w, func() { writeJSON(w, 200, s.alpacaOrder(o)) })
	case req.Method == "DELETE" && strings.HasPrefix(path, "/v2/orders/"):
		o := s.find("", idOfUUID(strings.TrimPrefix(path, "/v2/orders/")))
		if o == nil {
			notFound()
			return
		}
		if s.status(o) != "accepted" {
			writeJSON(w, 422, map[string]any{"code": 42210000, "message": "order is not cancelable"})
			return
		}
		after, _ := r.placing(w)
		s.setStatus(o, "canceled")
		after(w, func() { w.WriteHeader(http.StatusNoContent) })
	default:
		writeJSON(w, 404, map[string]any{"code": 40410000, "message": "no such endpoint in the stub: " + req.Method + " " + path})
	}
}
