package rest

import (
	"fmt"
	"net/http"
	"path"
	"strings"
)

// Rule matches requests by method and path.
type Rule struct {
	// Method is the HTTP method ("POST", "DELETE", ...); empty matches any.
	Method string
	// Path is a pattern for the request's path as the application writes it
	// (for an endpoint's own URL, without the endpoint's base path), with
	// path.Match syntax: "/v2/orders" matches that path only, "/v2/orders/*"
	// one segment below it. It must start with "/".
	Path string
}

// Rules say once which requests are orders, instead of marking each request
// with WithSubmission. Start from a preset (AlpacaRules, BinanceSpotRules) or
// write your broker's.
//
// A request is classified by the first of: its context's mark (WithSubmission,
// WithReconcile); a match in Orders (an order, whatever NotOrders says, so that
// an order is never sent as a read by mistake); a match in NotOrders (a read:
// no ticket, no order ID, never held by the gate); else every method but
// GET, HEAD and OPTIONS is an order.
type Rules struct {
	// Orders lists the requests that place, change or cancel one order:
	// each takes a ticket from the gate and needs a client order ID.
	Orders []Rule
	// NotOrders lists writes that are not orders: cancel-all, a login, a
	// stream token request. They go to the active endpoint like reads.
	NotOrders []Rule
}

// AlpacaRules returns the Rules of Alpaca's Trading API
// (https://docs.alpaca.markets/reference/orders): POST /v2/orders places an
// order, PATCH /v2/orders/{id} replaces one and DELETE /v2/orders/{id}
// cancels one (orders); DELETE /v2/orders cancels all open orders (not an
// order: it names none).
func AlpacaRules() Rules {
	return Rules{
		Orders: []Rule{
			{Method: http.MethodPost, Path: "/v2/orders"},
			{Method: http.MethodPatch, Path: "/v2/orders/*"},
			{Method: http.MethodDelete, Path: "/v2/orders/*"},
		},
		NotOrders: []Rule{
			{Method: http.MethodDelete, Path: "/v2/orders"},
		},
	}
}

// BinanceSpotRules returns the Rules of Binance's Spot REST API
// (https://developers.binance.com/docs/binance-spot-api-docs): POST and
// DELETE /api/v3/order and POST /api/v3/order/cancelReplace are orders; the
// test order (POST /api/v3/order/test), cancel-all of a symbol (DELETE
// /api/v3/openOrders) and the user data stream's listen key (POST, PUT and
// DELETE /api/v3/userDataStream) are not.
func BinanceSpotRules() Rules {
	return Rules{
		Orders: []Rule{
			{Method: http.MethodPost, Path: "/api/v3/order"},
			{Method: http.MethodDelete, Path: "/api/v3/order"},
			{Method: http.MethodPost, Path: "/api/v3/order/cancelReplace"},
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

// classify returns kindSubmission or kindRead when a rule decides, else 0.
func (rs Rules) classify(method, p string) reqKind {
	for _, r := range rs.Orders {
		if r.match(method, p) {
			return kindSubmission
		}
	}
	for _, r := range rs.NotOrders {
		if r.match(method, p) {
			return kindRead
		}
	}
	return 0
}
