package rest

import (
	"fmt"
	"net/http"
	"path"
	"strings"
)

// Rule matches requests by method and path, and, for an order, says what
// identifies the order the request acts on.
type Rule struct {
	// Method is the HTTP method ("POST", "DELETE", ...); empty matches any.
	Method string
	// Path is a pattern for the request's path as the application writes it
	// (for an endpoint's own URL, without the endpoint's base path), with
	// path.Match syntax: "/v2/orders" matches that path only, "/v2/orders/*"
	// one segment below it. It must start with "/".
	Path string

	// The fields below are read for a rule in Rules.Orders only.

	// OrderID finds what identifies the order a matching request places,
	// changes or cancels: its client order ID, or the venue's own order ID
	// marked with VenueOrderID (an extractor from VenueID). The request's
	// outcome is that order's state, looked up by that ID: a client order ID
	// through ReconcileOptions.URL, a venue order ID through
	// ReconcileOptions.VenueURL. Nil: Options.OrderID.
	OrderID OrderIDFunc
	// AssignID, for a venue that accepts a client-chosen order ID where the
	// request does not sign over it, gives a request that carries none the
	// ID the transport made for it (AssignJSONOrderID). The order is then
	// sent and tracked under that ID, which Options.OnOrder and the errors
	// report. It may replace r.Body (the transport closes the body it
	// replaced). Nil: a request without an ID is refused with ErrNoOrderID.
	AssignID func(r *http.Request, id string) error
	// Want names, for the refusal of a matching request that carries no ID,
	// what should identify it ("newClientOrderId in the form body").
	Want string
}

// Rules say once which requests are orders, instead of marking each request
// with WithSubmission, and per request shape what identifies the order it
// acts on. Start from a preset (AlpacaRules, BinanceSpotRules) or write your
// broker's.
//
// A request is classified by the first of: its context's mark (WithSubmission,
// WithReconcile); a match in Orders (an order, whatever NotOrders says, so that
// an order is never sent as a read by mistake); a match in NotOrders (a read:
// no ticket, no order ID, never held by the gate); else every method but
// GET, HEAD and OPTIONS is an order, found by Options.OrderID. An order
// without an ID is refused (ErrNoOrderID, counted in Stats.NotSent) with a
// message naming the rule to add, unless its rule assigns one (AssignID).
type Rules struct {
	// Orders lists the requests that place, change or cancel one order:
	// each takes a ticket from the gate and needs an order ID.
	Orders []Rule
	// NotOrders lists writes that are not orders: cancel-all, a login, a
	// stream token request. They go to the active endpoint like reads.
	NotOrders []Rule
}

// AlpacaRules returns the Rules of Alpaca's Trading API
// (https://docs.alpaca.markets/reference/orders), as
// github.com/alpacahq/alpaca-trade-api-go/v3 sends them. Per shape, what
// identifies it and how its outcome is looked up (AlpacaOrderLookup):
//
//   - POST /v2/orders places an order: "client_order_id" in the JSON body
//     (https://docs.alpaca.markets/reference/postorder: "a unique identifier
//     for the order, automatically generated if not sent", up to 128
//     characters). The SDK sends "" when unset: the transport assigns one.
//     Looked up by client order ID.
//   - PATCH /v2/orders/{order_id} replaces an order
//     (https://docs.alpaca.markets/reference/patchorderbyorderid): the new
//     order's "client_order_id" in the body, assigned when empty. Its outcome
//     is the new order's state, looked up by that client order ID.
//   - DELETE /v2/orders/{order_id} cancels one order
//     (https://docs.alpaca.markets/reference/deleteorderbyorderid): the
//     venue's order UUID in the path. Its outcome is the order's state,
//     looked up by that UUID (GET /v2/orders/{order_id}).
//   - DELETE /v2/positions and /v2/positions/{symbol} close positions by
//     placing orders the venue names itself, which nothing can look up by an
//     ID the client knows: refused. Place the closing order with
//     POST /v2/orders instead.
//   - DELETE /v2/orders cancels all open orders: not an order (it names none).
func AlpacaRules() Rules {
	clientID := JSONOrderID("client_order_id")
	assign := AssignJSONOrderID("client_order_id")
	none := func(*http.Request) (string, error) { return "", nil }
	const closeWant = "a client order ID, which a position close cannot carry (the venue places an order it names itself, which cannot be reconciled): place the closing order with POST /v2/orders and a client_order_id"
	return Rules{
		Orders: []Rule{
			{Method: http.MethodPost, Path: "/v2/orders", OrderID: clientID, AssignID: assign, Want: `"client_order_id" in the JSON body`},
			{Method: http.MethodPatch, Path: "/v2/orders/*", OrderID: clientID, AssignID: assign, Want: `"client_order_id" (the new order's) in the JSON body`},
			{Method: http.MethodDelete, Path: "/v2/orders/*", OrderID: VenueID(PathOrderID(http.MethodDelete)), Want: "the order's ID in the path"},
			{Method: http.MethodDelete, Path: "/v2/positions", OrderID: none, Want: closeWant},
			{Method: http.MethodDelete, Path: "/v2/positions/*", OrderID: none, Want: closeWant},
		},
		NotOrders: []Rule{
			{Method: http.MethodDelete, Path: "/v2/orders"},
		},
	}
}

// BinanceSpotRules returns the Rules of Binance's Spot REST API
// (https://developers.binance.com/docs/binance-spot-api-docs/rest-api/trading-endpoints),
// as github.com/adshao/go-binance/v2 sends them: signed, the parameters
// form-encoded in the body (or the query), the signature over all of them,
// so the transport cannot add a parameter. Per shape, what identifies it and
// how its outcome is looked up (BinanceSpotOrderLookup):
//
//   - POST /api/v3/order places an order: "newClientOrderId" (go-binance
//     sets one on every order). An order without one is refused. Looked up
//     by client order ID.
//   - DELETE /api/v3/order cancels one order: "origClientOrderId", else
//     "orderId" (the venue's order ID); never the cancel's own
//     "newClientOrderId". Its outcome is the order's state, looked up by the
//     ID it names, client or venue.
//   - POST /api/v3/order/cancelReplace cancels an order and places a new
//     one: the new order's "newClientOrderId". Its outcome is the new
//     order's state (the cancelled order's is not settled by it).
//   - Not orders: the test order (POST /api/v3/order/test), cancel-all of a
//     symbol (DELETE /api/v3/openOrders) and the user data stream's listen
//     key (POST, PUT and DELETE /api/v3/userDataStream).
//
// Order lists (OCO, OTO) carry list IDs that no lookup preset reads: a
// request for one is refused unless you add a rule for it.
func BinanceSpotRules() Rules {
	newID := FormOrderID("newClientOrderId")
	return Rules{
		Orders: []Rule{
			{Method: http.MethodPost, Path: "/api/v3/order", OrderID: newID, Want: "newClientOrderId in the form body (the request is signed: set it in the SDK, which go-binance does by default)"},
			{Method: http.MethodDelete, Path: "/api/v3/order", OrderID: FirstOrderID(FormOrderID("origClientOrderId"), VenueID(FormOrderID("orderId"))), Want: "origClientOrderId or orderId in the form body"},
			{Method: http.MethodPost, Path: "/api/v3/order/cancelReplace", OrderID: newID, Want: "newClientOrderId (the new order's) in the form body"},
		},
		NotOrders: []Rule{
			{Method: http.MethodPost, Path: "/api/v3/order/test"},
			{Method: http.MethodDelete, Path: "/api/v3/openOrders"},
			{Method: "", Path: "/api/v3/userDataStream"},
		},
	}
}

// validate refuses a rule that cannot match as meant.
func (r Rule) validate(list string, i int) error {
	if r.Method != "" && (!validHeaderName(r.Method) || strings.ToUpper(r.Method) != r.Method) {
		return optionsError(fmt.Sprintf("Rules.%s[%d].Method", list, i), "", "Rules.%s[%d].Method %q is not an upper-case HTTP method", list, i, r.Method)
	}
	if !strings.HasPrefix(r.Path, "/") {
		return optionsError(fmt.Sprintf("Rules.%s[%d].Path", list, i), "", "Rules.%s[%d].Path %q must start with \"/\"", list, i, r.Path)
	}
	if _, err := path.Match(r.Path, "/"); err != nil {
		return optionsError(fmt.Sprintf("Rules.%s[%d].Path", list, i), "", "Rules.%s[%d].Path %q is not a valid pattern: %v", list, i, r.Path, err)
	}
	return nil
}

func (r Rule) match(method, p string) bool {
	if r.Method != "" && r.Method != method {
		return false
	}
	if r.Path == p {
		return true
	}
	ok, _ := path.Match(r.Path, p)
	return ok
}

func (rs Rules) validate() error {
	for i, r := range rs.Orders {
		if err := r.validate("Orders", i); err != nil {
			return err
		}
	}
	for i, r := range rs.NotOrders {
		if err := r.validate("NotOrders", i); err != nil {
			return err
		}
	}
	return nil
}

// classify returns kindSubmission and the Orders rule, or kindRead, when a
// rule decides, else 0.
func (rs *Rules) classify(method, p string) (reqKind, *Rule) {
	for i := range rs.Orders {
		if rs.Orders[i].match(method, p) {
			return kindSubmission, &rs.Orders[i]
		}
	}
	for _, r := range rs.NotOrders {
		if r.match(method, p) {
			return kindRead, nil
		}
	}
	return 0, nil
}
