package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// Reconcilers for the shipped venue profiles (venue.Shipped). Each preset
// sets ReconcileOptions.Venue to the venue's profile, so its lookups stay
// within the venue's lookup budget and a "not found" names the venue's
// false-negative horizon (it is provisional: pathdialer keeps the order
// watched until its quarantine, at least that horizon, has passed). A venue
// that answers lookups by client order ID is asked one order at a time; one
// that does not is read through its order listings, once per reconcile for
// every order. Coinbase Exchange is FIX only here: use the fix package's
// reconciler (OrderStatusRequest).
//
// A Path reconciled through a listing preset should be told so
// (pathdialer.Config.ReconcileListings, Reconciler.ListingRequests): its
// re-queries of provisional verdicts then ask about every order in one
// listing. Otherwise they ask about one budget window's orders at a time
// (at Kraken's budget, one order), and a late landing among many orders is
// reported many lookup intervals after its booking instead of within
// MaxCopyHold plus one listing.
//
// Each preset cites the venue's page for the call it makes. Set Header (and
// Sign, for signed APIs) to the venue's credentials.

// VenueReconcileOptions returns the preset for a shipped profile's name, for
// the venue's REST base URL. params holds what some venues need besides the
// base URL: "symbol" (binance-spot), "account" (oanda-v20), "currency"
// (deribit). It fails for a venue without a REST preset (coinbase-exchange-fix)
// or an unknown name, and for a missing parameter.
func VenueReconcileOptions(name, base string, params map[string]string) (ReconcileOptions, error) {
	need := func(k string) (string, error) {
		v := params[k]
		if strings.TrimSpace(v) == "" {
			return "", fmt.Errorf("%w: the %s preset needs params[%q]", ErrInvalidOptions, name, k)
		}
		return v, nil
	}
	switch name {
	case "alpaca":
		return AlpacaOrderLookup(base), nil
	case "binance-spot":
		sym, err := need("symbol")
		if err != nil {
			return ReconcileOptions{}, err
		}
		return BinanceSpotOrderLookup(base, sym), nil
	case "oanda-v20":
		acct, err := need("account")
		if err != nil {
			return ReconcileOptions{}, err
		}
		return OandaV20OrderLookup(base, acct), nil
	case "deribit":
		cur, err := need("currency")
		if err != nil {
			return ReconcileOptions{}, err
		}
		return DeribitOrderLookup(base, cur), nil
	case "coinbase-advanced-trade":
		return CoinbaseAdvancedTradeOrderListing(base), nil
	case "ibkr-client-portal":
		return IBKRClientPortalOrderListing(base), nil
	case "kraken-spot":
		return KrakenSpotOrderListing(base), nil
	case "coinbase-exchange-fix":
		return ReconcileOptions{}, fmt.Errorf("%w: coinbase-exchange-fix is a FIX gateway: reconcile with the fix package's Reconciler (OrderStatusRequest)", ErrInvalidOptions)
	}
	if _, err := venue.ByName(name); err != nil {
		return ReconcileOptions{}, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return ReconcileOptions{}, fmt.Errorf("%w: no REST reconcile preset for venue %q", ErrInvalidOptions, name)
}

// OandaV20OrderLookup returns ReconcileOptions for OANDA's v20 REST API: the
// Get Order call (https://developer.oanda.com/rest-live-v20/order-ep/,
// GET /v3/accounts/{accountID}/orders/{orderSpecifier}) takes an order
// specifier "@" + the client ID (clientExtensions.id) and answers
// {"order": {..., "state", "clientExtensions": {"id"}}}, or 404 when the
// account has no such order. Set Header to the Authorization bearer token.
//
// Mapping: FILLED → filled; PENDING, TRIGGERED → resting; CANCELLED →
// canceled.
func OandaV20OrderLookup(base, accountID string) ReconcileOptions {
	return ReconcileOptions{
		URL:         strings.TrimSuffix(base, "/") + "/v3/accounts/" + url.PathEscape(accountID) + "/orders/@" + OrderIDPlaceholder,
		StatusField: "order.state",
		IDField:     "order.clientExtensions.id",
		Fates: map[string]pathdialer.Fate{
			"FILLED": pathdialer.FateFilled, "PENDING": pathdialer.FateResting, "TRIGGERED": pathdialer.FateResting,
			"CANCELLED": pathdialer.FateCanceled,
		},
		Venue: venue.OandaV20(),
	}
}

// DeribitOrderLookup returns ReconcileOptions for Deribit's API v2 over
// HTTP: private/get_order_state_by_label
// (https://docs.deribit.com/api-reference/trading/private-get_order_state_by_label)
// answers {"result": [orders with "label" and "order_state"]} for a currency
// and a label: send the client order ID as the order's label. An empty
// result is "not found". Set Header to the Authorization header.
//
// Mapping: filled → filled; open, untriggered → resting; cancelled →
// canceled; rejected → rejected.
func DeribitOrderLookup(base, currency string) ReconcileOptions {
	return ReconcileOptions{
		URL:         strings.TrimSuffix(base, "/") + "/api/v2/private/get_order_state_by_label?currency=" + url.QueryEscape(currency) + "&label=" + OrderIDPlaceholder,
		ListField:   "result",
		StatusField: "order_state",
		IDField:     "label",
		Fates: map[string]pathdialer.Fate{
			"filled": pathdialer.FateFilled, "open": pathdialer.FateResting, "untriggered": pathdialer.FateResting,
			"cancelled": pathdialer.FateCanceled, "rejected": pathdialer.FateRejected,
		},
		Venue: venue.Deribit(),
	}
}

// CoinbaseAdvancedTradeOrderListing returns ReconcileOptions for Coinbase
// Advanced Trade, whose order lookup by client_order_id is deprecated: the
// List Orders call
// (https://docs.cdp.coinbase.com/api-reference/advanced-trade-api/rest-api/orders/list-orders,
// GET /api/v3/brokerage/orders/historical/batch) answers {"orders": [...]}
// with each order's "client_order_id" and "status", newest first; one
// listing of the latest 1000 orders settles every order of a reconcile. An
// order missing from a full page is undetermined, not "not found". Set Sign
// to add the JWT Authorization header.
//
// Mapping: FILLED → filled; OPEN, PENDING, QUEUED, CANCEL_QUEUED → resting;
// CANCELLED, EXPIRED → canceled; FAILED → rejected.
func CoinbaseAdvancedTradeOrderListing(base string) ReconcileOptions {
	return ReconcileOptions{
		ListURLs:    []string{strings.TrimSuffix(base, "/") + "/api/v3/brokerage/orders/historical/batch?limit=1000"},
		ListField:   "orders",
		ListLimit:   1000,
		StatusField: "status",
		IDField:     "client_order_id",
		Fates: map[string]pathdialer.Fate{
			"FILLED": pathdialer.FateFilled, "OPEN": pathdialer.FateResting, "PENDING": pathdialer.FateResting,
			"QUEUED": pathdialer.FateResting, "CANCEL_QUEUED": pathdialer.FateResting,
			"CANCELLED": pathdialer.FateCanceled, "EXPIRED": pathdialer.FateCanceled, "FAILED": pathdialer.FateRejected,
		},
		Venue: venue.CoinbaseAdvancedTrade(),
	}
}

// IBKRClientPortalOrderListing returns ReconcileOptions for IBKR's Client
// Portal Web API, which has no lookup by cOID: the Live Orders call
// (https://www.interactivebrokers.com/campus/ibkr-api-page/web-api-trading/,
// GET /v1/api/iserver/account/orders) lists the brokerage session's orders
// with "order_ref" (the cOID) and "status". Set Header to the session's
// cookie or OAuth header.
//
// Mapping: Filled → filled; PendingSubmit, PreSubmitted, Submitted,
// PendingCancel → resting; Cancelled, Inactive → canceled.
func IBKRClientPortalOrderListing(base string) ReconcileOptions {
	return ReconcileOptions{
		ListURLs:    []string{strings.TrimSuffix(base, "/") + "/v1/api/iserver/account/orders"},
		ListField:   "orders",
		StatusField: "status",
		IDField:     "order_ref",
		Fates: map[string]pathdialer.Fate{
			"Filled": pathdialer.FateFilled, "PendingSubmit": pathdialer.FateResting, "PreSubmitted": pathdialer.FateResting,
			"Submitted": pathdialer.FateResting, "PendingCancel": pathdialer.FateResting,
			"Cancelled": pathdialer.FateCanceled, "Inactive": pathdialer.FateCanceled,
		},
		Venue: venue.IBKRClientPortal(),
	}
}

// KrakenSpotOrderListing returns ReconcileOptions for Kraken spot's REST
// API, whose order query takes Kraken's own transaction IDs, not cl_ord_id:
// Get Open Orders and Get Closed Orders
// (https://docs.kraken.com/api-reference/account-data/get-open-orders,
// https://docs.kraken.com/api-reference/account-data/get-closed-orders,
// POST /0/private/OpenOrders and /0/private/ClosedOrders) answer
// {"result": {"open" | "closed": {txid: {"cl_ord_id", "status"}}}}; both
// are read once per reconcile. The calls are signed POSTs: Sign must set the
// form body (nonce) and the API-Key and API-Sign headers. Closed Orders
// returns 50 orders a page: an order missing from a full page is
// undetermined, not "not found". At the budget of the shipped profile (the
// Starter tier's call counter, https://docs.kraken.com/api/docs/guides/spot-rest-ratelimits:
// every call adds 1 to a counter of at most 15 that decays by 0.33 a second,
// taken as one call per 3 s; the Path's lookups keep to a quarter of it) the
// two listings go 12 s apart: give pathdialer.Config.ReconcileTimeout more
// than that, set pathdialer.Config.ReconcileListings to 2
// (Reconciler.ListingRequests), or set Venue to a profile with your tier's
// budget.
//
// Mapping: closed → filled; pending, open → resting; canceled, expired →
// canceled.
func KrakenSpotOrderListing(base string) ReconcileOptions {
	b := strings.TrimSuffix(base, "/")
	return ReconcileOptions{
		Method:      http.MethodPost,
		ListURLs:    []string{b + "/0/private/OpenOrders", b + "/0/private/ClosedOrders"},
		ListField:   "result.open|result.closed",
		ListLimit:   50,
		StatusField: "status",
		IDField:     "cl_ord_id",
		Fates: map[string]pathdialer.Fate{
			"closed": pathdialer.FateFilled, "pending": pathdialer.FateResting, "open": pathdialer.FateResting,
			"canceled": pathdialer.FateCanceled, "expired": pathdialer.FateCanceled,
		},
		Venue: venue.KrakenSpot(),
	}
}

// horizonNote says, for a "not found", how long the venue may answer it
// for an order it booked.
func (r *Reconciler) horizonNote() string {
	p := r.opts.Venue
	if p == (venue.Profile{}) {
		return "provisional"
	}
	fn := p.FalseNegative()
	if !p.LookupFalseNegative.Known() {
		return fmt.Sprintf("provisional: %s does not document how long a lookup may miss a booked order (%v assumed)", p.Name, fn)
	}
	return fmt.Sprintf("provisional: %s lookups may miss a booked order for up to %v", p.Name, fn)
}

// field returns the value at a dotted path of a JSON object ("order.state").
func field(m map[string]json.RawMessage, path string) json.RawMessage {
	parts := strings.Split(path, ".")
	for i, k := range parts {
		raw, ok := m[k]
		if !ok {
			return nil
		}
		if i == len(parts)-1 {
			return raw
		}
		m = nil
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
	}
	return nil
}

// listItems returns the orders an answer lists under ListField: an array,
// or an object whose values are the orders (keyed by the venue's own IDs);
// alternatives are separated by '|', the first present is used. ok is false
// when none is present.
func (r *Reconciler) listItems(body []byte) (items []map[string]json.RawMessage, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil, false
	}
	for _, path := range strings.Split(r.opts.ListField, "|") {
		raw := field(m, path)
		if raw == nil {
			continue
		}
		var arr []map[string]json.RawMessage
		if json.Unmarshal(raw, &arr) == nil {
			return arr, true
		}
		var obj map[string]map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil {
			for _, o := range obj {
				items = append(items, o)
			}
			return items, true
		}
	}
	return nil, false
}

// settleItem settles s from one listed order (already matched by ID).
func (r *Reconciler) settleItem(s pathdialer.Settlement, item map[string]json.RawMessage) pathdialer.Settlement {
	st := jsonString(field(item, r.opts.StatusField))
	fate, ok := r.fates[strings.ToLower(st)]
	if !ok {
		s.Detail = fmt.Sprintf("status %s in %q is not mapped to a fate", quoteBounded(st), r.opts.StatusField)
		return s
	}
	s.Fate, s.Detail = fate, "broker status "+st
	return s
}

// settleList reads a per-order answer that lists orders (ListField with a
// lookup URL): the one whose IDField is the order's settles it; none is
// "not found".
func (r *Reconciler) settleList(s pathdialer.Settlement, status int, body []byte) pathdialer.Settlement {
	if status != http.StatusOK {
		s.Detail = fmt.Sprintf("lookup answered HTTP %d", status)
		return s
	}
	items, ok := r.listItems(body)
	if !ok {
		s.Detail = fmt.Sprintf("the answer has no order list in %q", r.opts.ListField)
		return s
	}
	idField, want := r.opts.IDField, s.OrderID
	if v, ok := ParseVenueOrderID(s.OrderID); ok {
		idField, want = r.opts.VenueIDField, v
		if idField == "" {
			s.Detail = "the order is named by the venue's own ID and ReconcileOptions.VenueIDField is not set: a listed order cannot be matched to it"
			return s
		}
	}
	for _, it := range items {
		if jsonString(field(it, idField)) == want {
			return r.settleItem(s, it)
		}
	}
	s.Fate = pathdialer.FateNotReceived
	s.Detail = "the broker lists no order with this ID (" + r.horizonNote() + ")"
	return s
}

// reconcileListing settles tickets from the venue's order listings
// (ListURLs): each listing read once, within the venue's budget; an order in
// none of them is "not found", unless a listing was a full page
// (ListLimit), which leaves it undetermined.
func (r *Reconciler) reconcileListing(ctx context.Context, client *http.Client, tickets []pathdialer.TicketInfo) ([]pathdialer.Settlement, error) {
	found := map[string]map[string]json.RawMessage{}
	full := false
	var failed []string
	for _, u := range r.opts.ListURLs {
		if err := r.limit.Wait(ctx); err != nil {
			return nil, err
		}
		items, err := r.list(ctx, client, u)
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		if r.opts.ListLimit > 0 && len(items) >= r.opts.ListLimit {
			full = true
		}
		for _, it := range items {
			if id := jsonString(field(it, r.opts.IDField)); id != "" {
				if _, dup := found[id]; !dup {
					found[id] = it
				}
			}
		}
	}
	out := make([]pathdialer.Settlement, len(tickets))
	var missing []string
	for i, t := range tickets {
		s := pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: pathdialer.FateUndetermined}
		_, venueID := ParseVenueOrderID(t.OrderID)
		switch it, ok := found[t.OrderID]; {
		case venueID:
			s.Detail = "the order is named by the venue's own ID, which listings are not matched by (IDField is the client order ID)"
		case ok:
			s = r.settleItem(s, it)
		case len(failed) > 0:
			s.Detail = "a listing failed: " + strings.Join(failed, "; ")
		case full:
			s.Detail = "not in the listing, which was a full page: older orders are not shown"
		default:
			s.Fate = pathdialer.FateNotReceived
			s.Detail = "the broker lists no order with this ID (" + r.horizonNote() + ")"
		}
		out[i] = s
		if s.Fate == pathdialer.FateUndetermined {
			missing = append(missing, fmt.Sprintf("%q (%s)", s.OrderID, s.Detail))
		}
	}
	if len(missing) > 0 && !r.opts.AcceptUndetermined {
		return out, fmt.Errorf("%w: fate unknown for %s", ErrReconcileIncomplete, strings.Join(missing, ", "))
	}
	return out, nil
}

// list reads one listing.
func (r *Reconciler) list(ctx context.Context, client *http.Client, u string) ([]map[string]json.RawMessage, error) {
	req, err := http.NewRequestWithContext(WithReconcile(ctx), r.method(), u, nil)
	if err != nil {
		return nil, fmt.Errorf("building the listing: %w", RedactError(err))
	}
	for k, v := range r.opts.Header {
		req.Header[k] = v
	}
	if r.opts.Sign != nil {
		if err := r.opts.Sign(req, pathdialer.TicketInfo{}); err != nil {
			return nil, fmt.Errorf("signing the listing: %w", err)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing failed: %w", RedactError(err))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the listing: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("listing answered HTTP %d", resp.StatusCode)
	}
	items, ok := r.listItems(body)
	if !ok {
		return nil, fmt.Errorf("the listing has no order list in %q", r.opts.ListField)
	}
	return items, nil
}

func (r *Reconciler) method() string {
	if r.opts.Method == "" {
		return http.MethodGet
	}
	return r.opts.Method
}

// checkVenueOptions checks the fields of ReconcileOptions this file reads.
func checkVenueOptions(o ReconcileOptions) error {
	bad := func(field, format string, a ...any) error {
		return optionsError("ReconcileOptions."+field, "", "ReconcileOptions."+format, a...)
	}
	if o.Venue != (venue.Profile{}) {
		if err := o.Venue.Validate(); err != nil {
			return bad("Venue", "Venue: %w", err)
		}
	}
	switch o.Method {
	case "", http.MethodGet, http.MethodPost:
	default:
		return bad("Method", "Method %q: want GET or POST", o.Method)
	}
	if o.ListLimit < 0 {
		return bad("ListLimit", "ListLimit %d is negative", o.ListLimit)
	}
	if len(o.ListURLs) == 0 {
		return nil
	}
	if o.URL != "" {
		return bad("URL and ReconcileOptions.ListURLs", "URL and ListURLs are both set: a lookup by ID, or listings, not both")
	}
	if o.ListField == "" {
		return bad("ListField", "ListField is required with ListURLs (the field holding the listed orders)")
	}
	if o.IDField == "" {
		return bad("IDField", "IDField is required with ListURLs (the field holding each order's client order ID)")
	}
	for i, u := range o.ListURLs {
		if strings.Contains(u, OrderIDPlaceholder) {
			return bad(fmt.Sprintf("ListURLs[%d]", i), "ListURLs[%d] contains %s: a listing names no order", i, OrderIDPlaceholder)
		}
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
			return bad(fmt.Sprintf("ListURLs[%d]", i), "ListURLs[%d] must be an absolute http(s) URL", i)
		}
	}
	return nil
}
