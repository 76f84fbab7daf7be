package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/brokerpath/brokerpath/internal/venuepace"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// ErrReconcileIncomplete: the fate of some orders could not be learned (the
// broker answered something other than the order or a not-found, or did not
// answer). The Path keeps holding submissions and retries the reconcile.
var ErrReconcileIncomplete = errors.New("rest: reconcile incomplete")

// OrderIDPlaceholder is where a lookup URL template takes the client order ID.
const OrderIDPlaceholder = "{client_order_id}"

// VenueIDPlaceholder is where ReconcileOptions.VenueURL takes the venue's
// own order ID (an order tracked as VenueOrderID).
const VenueIDPlaceholder = "{order_id}"

// ReconcileOptions configures a Reconciler: one GET per order, by client order
// ID, through a URL template; the broker's status field mapped to a Fate.
// Start from AlpacaOrderLookup, BinanceSpotOrderLookup or fill it for your
// broker's shape.
type ReconcileOptions struct {
	// URL is the lookup template, an absolute http(s) URL containing
	// OrderIDPlaceholder once, in the path or the query, e.g.
	// "https://broker.example/v1/orders/{client_order_id}". The ID is escaped
	// for where it stands. Sent through a rest.Transport (see SendLookupsVia), the host
	// is rewritten to the endpoint the Path releases flow on. Required unless
	// ListURLs is set.
	URL string
	// Header is sent with every lookup (the credentials). Never logged.
	Header http.Header
	// Sign, optional, prepares each lookup before it is sent: signs it
	// (HMAC-style APIs) or adds parameters the broker needs that only the
	// application knows, such as the order's symbol.
	Sign func(req *http.Request, order pathdialer.TicketInfo) error
	// StatusField is the top-level JSON field holding the order's status.
	// Default "status".
	StatusField string
	// IDField, optional, is the top-level JSON field holding the client order
	// ID; when set, an answer naming another order is not trusted.
	IDField string
	// Fates maps the broker's status values (compared case-insensitively) to
	// fates. Nil means DefaultFates(). A status not in the map leaves the
	// order's fate undetermined.
	Fates map[string]pathdialer.Fate
	// NotFound tells a not-found answer (the broker has no record of the
	// order) from other failures; nil means HTTP 404. Such an order is
	// settled as pathdialer.FateNotReceived, which is provisional: a copy may
	// still arrive, so it may be sent again only under the same client order ID.
	NotFound func(status int, body []byte) bool
	// Service: the reconciler settles the tickets of this service only (so it
	// combines with others in pathdialer.ReconcileAll). Default "rest".
	Service string
	// Parallel bounds the lookups in flight at once. Default 8.
	Parallel int
	// AcceptUndetermined releases flow even when some orders' fate could not
	// be learned (they are reported as FateUndetermined). Default false: the
	// reconcile fails with ErrReconcileIncomplete, the Path keeps holding,
	// retries, and halts after pathdialer.Config.ReconcileAttempts.
	AcceptUndetermined bool

	// Venue, optional, is the venue's profile (the presets set it): lookups
	// are spaced within its lookup budget (venue.Profile.LookupInterval,
	// as many at once as one window of the budget allows), shared by every
	// reconcile, and a "not found" names its false-negative horizon. The
	// zero value leaves lookups unpaced.
	Venue venue.Profile
	// StatusField and IDField may be dotted paths ("order.state").
	// ListField, optional, names the field (a dotted path; alternatives
	// separated by '|') of an answer that lists orders, as an array or an
	// object keyed by the venue's own IDs: the listed order whose IDField is
	// the order's settles it, and none is "not found".
	ListField string
	// ListURLs, instead of URL, are listings (absolute http(s) URLs without
	// the placeholder) read once per reconcile for every order, for a venue
	// without a lookup by client order ID. ListField is then required.
	ListURLs []string
	// ListLimit, optional, is a listing's page size: an order missing from a
	// listing that returned that many is undetermined, not "not found".
	ListLimit int
	// Method is the HTTP method of lookups and listings: GET (default) or
	// POST (signed listings; Sign sets the body).
	Method string

	// VenueURL, optional, is the lookup template for an order tracked by
	// the venue's own order ID (VenueOrderID: a cancel that names the order
	// the venue's way), an absolute http(s) URL containing
	// VenueIDPlaceholder once. The answer is read as URL's (StatusField,
	// Fates, NotFound), with VenueIDField in place of IDField. Without it,
	// such an order stays undetermined. Lookups by ID only (not with
	// ListURLs).
	VenueURL string
	// VenueIDField, optional, is the field of VenueURL's answer holding the
	// venue's order ID; when set, an answer naming another order is not
	// trusted.
	VenueIDField string
}

// DefaultFates maps the status words common to broker REST APIs (and the
// simulated broker's new, filled, canceled) to fates: new, open, accepted,
// pending_new and partially_filled are resting; filled is filled; canceled,
// cancelled and expired are canceled; rejected is rejected.
func DefaultFates() map[string]pathdialer.Fate {
	return map[string]pathdialer.Fate{
		"new": pathdialer.FateResting, "open": pathdialer.FateResting, "accepted": pathdialer.FateResting,
		"pending_new": pathdialer.FateResting, "partially_filled": pathdialer.FateResting,
		"filled":   pathdialer.FateFilled,
		"canceled": pathdialer.FateCanceled, "cancelled": pathdialer.FateCanceled, "expired": pathdialer.FateCanceled,
		"rejected": pathdialer.FateRejected,
	}
}

// AlpacaOrderLookup returns ReconcileOptions for Alpaca's Trading API, whose
// Orders reference (https://docs.alpaca.markets/reference/orders) says an
// order "can be queried using the client-side order ID": the "Get Order by
// Client Order ID" call, GET {base}/v2/orders:by_client_order_id?client_order_id=…,
// answers the order object (its "client_order_id" and "status") or 404 when
// there is no such order. An order named by its UUID (a cancel, tracked as
// VenueOrderID) is looked up with "Get Order by ID"
// (https://docs.alpaca.markets/reference/getorderbyorderid,
// GET {base}/v2/orders/{order_id}), its "id" checked. Set Header to the
// APCA-API-KEY-ID and APCA-API-SECRET-KEY headers.
//
// Mapping: filled → filled; new, accepted, pending_new, accepted_for_bidding,
// partially_filled, done_for_day, pending_cancel, pending_replace, stopped,
// suspended, calculated, held → resting (the broker has the order);
// canceled, expired, replaced → canceled; rejected → rejected.
func AlpacaOrderLookup(base string) ReconcileOptions {
	f := map[string]pathdialer.Fate{"filled": pathdialer.FateFilled, "rejected": pathdialer.FateRejected}
	for _, s := range []string{"new", "accepted", "pending_new", "accepted_for_bidding", "partially_filled", "done_for_day",
		"pending_cancel", "pending_replace", "stopped", "suspended", "calculated", "held"} {
		f[s] = pathdialer.FateResting
	}
	for _, s := range []string{"canceled", "expired", "replaced"} {
		f[s] = pathdialer.FateCanceled
	}
	return ReconcileOptions{
		URL:          strings.TrimSuffix(base, "/") + "/v2/orders:by_client_order_id?client_order_id=" + OrderIDPlaceholder,
		VenueURL:     strings.TrimSuffix(base, "/") + "/v2/orders/" + VenueIDPlaceholder,
		StatusField:  "status",
		IDField:      "client_order_id",
		VenueIDField: "id",
		Fates:        f,
		Venue:        venue.Alpaca(),
	}
}

// BinanceSpotOrderLookup returns ReconcileOptions for Binance's Spot API
// "Query order (USER_DATA)" (https://developers.binance.com/docs/binance-spot-api-docs,
// REST API, trading endpoints: GET /api/v3/order, "Check an order's status",
// with symbol and either orderId or origClientOrderId; error codes in the
// same documentation):
// GET {base}/api/v3/order?symbol=SYMBOL&origClientOrderId=… (an order
// tracked by the venue's orderId, VenueOrderID: &orderId=…); an unknown order
// is HTTP 400 with {"code":-2013,"msg":"Order does not exist."}. The endpoint
// is SIGNED: set Header to X-MBX-APIKEY and Sign to add timestamp and
// signature (Sign may also replace symbol when the account trades several).
//
// Mapping: FILLED → filled; NEW, PENDING_NEW, PARTIALLY_FILLED,
// PENDING_CANCEL → resting; CANCELED, EXPIRED, EXPIRED_IN_MATCH → canceled;
// REJECTED → rejected. Any other 400 (a bad signature, a missing parameter)
// is not a not-found: the fate stays undetermined.
func BinanceSpotOrderLookup(base, symbol string) ReconcileOptions {
	return ReconcileOptions{
		URL:          strings.TrimSuffix(base, "/") + "/api/v3/order?symbol=" + url.QueryEscape(symbol) + "&origClientOrderId=" + OrderIDPlaceholder,
		VenueURL:     strings.TrimSuffix(base, "/") + "/api/v3/order?symbol=" + url.QueryEscape(symbol) + "&orderId=" + VenueIDPlaceholder,
		StatusField:  "status",
		IDField:      "clientOrderId",
		VenueIDField: "orderId",
		Fates: map[string]pathdialer.Fate{
			"FILLED": pathdialer.FateFilled,
			"NEW":    pathdialer.FateResting, "PENDING_NEW": pathdialer.FateResting, "PARTIALLY_FILLED": pathdialer.FateResting, "PENDING_CANCEL": pathdialer.FateResting,
			"CANCELED": pathdialer.FateCanceled, "EXPIRED": pathdialer.FateCanceled, "EXPIRED_IN_MATCH": pathdialer.FateCanceled,
			"REJECTED": pathdialer.FateRejected,
		},
		Venue: venue.BinanceSpot(),
		NotFound: func(status int, body []byte) bool {
			if status != http.StatusBadRequest {
				return false
			}
			var e struct {
				Code int `json:"code"`
			}
			return json.Unmarshal(body, &e) == nil && e.Code == -2013
		},
	}
}

// Reconciler is a ready pathdialer.ReconcileFunc for REST orders: it looks up
// every in-flight or unknown order of its service by client order ID and
// reports each one's fate. Create it before the Path (pass its Reconcile
// method as pathdialer.Config.Reconcile, or inside pathdialer.ReconcileAll),
// then give it the rest.Transport built on that Path with SendLookupsVia:
// lookups are reads, never held
// by the gate, and go to the endpoint flow is about to be released on. They
// are marked WithReconcile: the Transport's read breaker neither refuses nor
// counts them, so a breaker opened during an outage does not keep flow held
// once the broker answers again.
type Reconciler struct {
	opts   ReconcileOptions
	fates  map[string]pathdialer.Fate // keys lower-cased
	prefix string                     // template before the placeholder
	suffix string                     // after it
	query  bool                       // the placeholder is in the query

	limit *venuepace.Bucket // Venue's budget; nil: unpaced

	mu     sync.Mutex
	client *http.Client
}

// NewReconciler validates opts and returns a Reconciler that has no transport yet (see SendLookupsVia).
func NewReconciler(opts ReconcileOptions) (*Reconciler, error) {
	if err := checkVenueOptions(opts); err != nil {
		return nil, err
	}
	if len(opts.ListURLs) == 0 {
		if strings.Count(opts.URL, OrderIDPlaceholder) != 1 {
			return nil, optionsError("ReconcileOptions.URL", "", "ReconcileOptions.URL must contain %s exactly once", OrderIDPlaceholder)
		}
		u, err := url.Parse(strings.Replace(opts.URL, OrderIDPlaceholder, "x", 1))
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, optionsError("ReconcileOptions.URL", "", "ReconcileOptions.URL must be an absolute http(s) URL")
		}
	}
	if opts.VenueURL != "" {
		if len(opts.ListURLs) > 0 {
			return nil, optionsError("ReconcileOptions.VenueURL", "", "ReconcileOptions.VenueURL is for lookups by ID, not with ListURLs")
		}
		if strings.Count(opts.VenueURL, VenueIDPlaceholder) != 1 {
			return nil, optionsError("ReconcileOptions.VenueURL", "", "ReconcileOptions.VenueURL must contain %s exactly once", VenueIDPlaceholder)
		}
		u, err := url.Parse(strings.Replace(opts.VenueURL, VenueIDPlaceholder, "x", 1))
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, optionsError("ReconcileOptions.VenueURL", "", "ReconcileOptions.VenueURL must be an absolute http(s) URL")
		}
	}
	if opts.Parallel < 0 {
		return nil, optionsError("ReconcileOptions.Parallel", "", "ReconcileOptions.Parallel is negative")
	}
	if opts.Parallel == 0 {
		opts.Parallel = 8
	}
	if opts.StatusField == "" {
		opts.StatusField = "status"
	}
	if opts.Service == "" {
		opts.Service = pathdialer.ServiceREST
	}
	if opts.Fates == nil {
		opts.Fates = DefaultFates()
	}
	if opts.NotFound == nil {
		opts.NotFound = func(status int, _ []byte) bool { return status == http.StatusNotFound }
	}
	r := &Reconciler{opts: opts, fates: make(map[string]pathdialer.Fate, len(opts.Fates)), limit: venuepace.New(opts.Venue)}
	for k, v := range opts.Fates {
		r.fates[strings.ToLower(k)] = v
	}
	if i := strings.Index(opts.URL, OrderIDPlaceholder); i >= 0 {
		r.prefix, r.suffix = opts.URL[:i], opts.URL[i+len(OrderIDPlaceholder):]
		r.query = strings.Contains(r.prefix, "?")
	}
	return r, nil
}

// ListingRequests is how many requests one Reconcile makes whatever the
// number of orders it settles: the number of ListURLs, for a Reconciler
// that reads the venue's order listings; 0 for one that looks orders up one
// by one. Give it to the Path (pathdialer.Config.ReconcileListings, under
// the key the Reconcile method is set under: "" for Config.Reconcile, the
// service for Config.ReconcileByService) so that its re-queries of
// provisional verdicts ask about every order in one call, paced by the
// listing's requests instead of one lookup interval per order:
//
//	cfg.ReconcileListings = map[string]int{"": rec.ListingRequests()}
func (r *Reconciler) ListingRequests() int {
	return len(r.opts.ListURLs)
}

// SendLookupsVia sets the RoundTripper the order lookups are sent with: the
// rest.Transport on the Path this Reconciler settles for (or any
// RoundTripper that reaches the broker). The Path needs the Reconcile method
// at pathdialer.New and the Transport needs the Path, so this link is made
// last: call it right after NewTransport, before Path.Start.
//
// Until it is called, every Reconcile fails, whether or not it has orders
// to settle, with an error naming SendLookupsVia: the first switch (or
// resume after a halt) holds submissions, reports EventReconcileFailure
// with that error, and after Config.ReconcileAttempts failures in a row
// halts trading, until it is called (the attempts continue meanwhile and
// the next one succeeds). So a forgotten call shows at the first switch,
// loudly, never as orders settled without a lookup.
//
// Given a *rest.Transport, it also offers the Transport's Path a trade-path
// check (pathdialer.Path.OfferTradePathCheck; an application's own
// pathdialer.Config.TradePathCheck takes precedence): the lookup of an
// order ID never sent (TradePathOrderID), sent to the endpoint checked
// whichever is active, on a fresh connection. Any answer that settles it —
// the broker's "not found" (ReconcileOptions.NotFound), or an order — is a
// success; a 5xx, a refusal (401, 403) or no answer is a failure. With
// ListURLs, the check reads the first listing. Why: a failed reconcile
// lookup is live-traffic evidence against its endpoint (it is an
// authenticated read through the path orders take), so FailureThreshold of
// them in a row while the probe passes take the endpoint out as a gray
// failure, and a probe success cannot bring it back. The same lookup,
// answered, does, at the first probe round after the lookups heal: a burst
// of failed lookups costs its own length and a probe round or two, not
// engine.Config.GrayFailbackWait.
func (r *Reconciler) SendLookupsVia(rt http.RoundTripper) {
	r.mu.Lock()
	r.client = &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r.mu.Unlock()
	if t, ok := rt.(*Transport); ok {
		t.path.OfferTradePathCheck("rest.Reconciler", r.tradePathCheck(t))
	}
}

// TradePathOrderID is the client order ID the Reconciler's trade-path check
// looks up (see SendLookupsVia). No order is ever sent under it; it fits
// the client order ID formats of the venues this package knows (letters,
// digits and hyphens, 27 characters).
const TradePathOrderID = "brokerpath-trade-path-check"

// tradePathCheck is the check SendLookupsVia offers: one lookup of
// TradePathOrderID (or one listing) through t to the endpoint checked,
// paced by the venue's lookup budget like every lookup. When the budget
// leaves no room for it within the check's time the check fails: the
// endpoint stays out a round longer, never comes back unchecked.
func (r *Reconciler) tradePathCheck(t *Transport) pathdialer.ProbeFunc {
	return func(ctx context.Context, ep pathdialer.Endpoint) error {
		client, ok := t.checkClient(ep.Name)
		if !ok {
			return fmt.Errorf("rest: trade-path check: the transport has no endpoint %q", ep.Name)
		}
		if err := r.limit.Wait(ctx); err != nil {
			// No evidence either way; kept out one more round (never let
			// back on a lookup that was not made).
			return fmt.Errorf("rest: trade-path check on %q: the venue's lookup budget leaves no room for it within the probe timeout: %w", ep.Name, err)
		}
		if len(r.opts.ListURLs) > 0 {
			if _, err := r.list(ctx, client, r.opts.ListURLs[0]); err != nil {
				return fmt.Errorf("rest: trade-path check on %q: %w", ep.Name, err)
			}
			return nil
		}
		s := r.lookup(ctx, client, pathdialer.TicketInfo{OrderID: TradePathOrderID, Service: r.opts.Service})
		if s.Fate == pathdialer.FateUndetermined {
			return fmt.Errorf("rest: trade-path check on %q: the lookup of an order never sent did not settle: %s", ep.Name, s.Detail)
		}
		return nil
	}
}

// lookupURL fills the template for one order: URL's for a client order
// ID, VenueURL's for a venue order ID (ok false when there is none).
func (r *Reconciler) lookupURL(orderID string) (u string, ok bool) {
	if id, venueID := ParseVenueOrderID(orderID); venueID {
		if r.opts.VenueURL == "" {
			return "", false
		}
		i := strings.Index(r.opts.VenueURL, VenueIDPlaceholder)
		prefix, suffix := r.opts.VenueURL[:i], r.opts.VenueURL[i+len(VenueIDPlaceholder):]
		esc := url.PathEscape(id)
		if strings.Contains(prefix, "?") {
			esc = url.QueryEscape(id)
		}
		return prefix + esc + suffix, true
	}
	esc := url.PathEscape(orderID)
	if r.query {
		esc = url.QueryEscape(orderID)
	}
	return r.prefix + esc + r.suffix, true
}

// Reconcile is the pathdialer.ReconcileFunc. Every order of the service gets a
// settlement; an order the broker has no record of is FateNotReceived
// (provisional). When some fates stay undetermined it returns them with
// ErrReconcileIncomplete, unless AcceptUndetermined.
func (r *Reconciler) Reconcile(ctx context.Context, rec pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	r.mu.Lock()
	client := r.client
	r.mu.Unlock()
	if client == nil {
		// Even with nothing to settle: a Reconciler never wired must show at
		// the first switch, not at the first one with an order at stake.
		return nil, errors.New("rest: the reconciler has no transport to send lookups with: call Reconciler.SendLookupsVia with the rest.Transport right after NewTransport")
	}
	var tickets []pathdialer.TicketInfo
	for _, t := range rec.Tickets {
		if t.Service == r.opts.Service {
			tickets = append(tickets, t)
		}
	}
	if len(tickets) == 0 {
		return nil, nil
	}
	if len(r.opts.ListURLs) > 0 {
		return r.reconcileListing(ctx, client, tickets)
	}
	out := make([]pathdialer.Settlement, len(tickets))
	sem := make(chan struct{}, r.opts.Parallel)
	var wg sync.WaitGroup
	for i, t := range tickets {
		if err := r.limit.Wait(ctx); err != nil {
			wg.Wait()
			return nil, err
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return nil, ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i] = r.lookup(ctx, client, t)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var missing []string
	for _, s := range out {
		if s.Fate == pathdialer.FateUndetermined {
			missing = append(missing, fmt.Sprintf("%q (%s)", s.OrderID, s.Detail))
		}
	}
	if len(missing) > 0 && !r.opts.AcceptUndetermined {
		return out, fmt.Errorf("%w: fate unknown for %s", ErrReconcileIncomplete, strings.Join(missing, ", "))
	}
	return out, nil
}

// lookup asks the broker for one order.
func (r *Reconciler) lookup(ctx context.Context, client *http.Client, t pathdialer.TicketInfo) pathdialer.Settlement {
	s := pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: pathdialer.FateUndetermined}
	u, ok := r.lookupURL(t.OrderID)
	if !ok {
		s.Detail = "the order is named by the venue's own ID and ReconcileOptions.VenueURL is not set"
		return s
	}
	req, err := http.NewRequestWithContext(WithReconcile(ctx), r.method(), u, nil)
	if err != nil {
		s.Detail = "building the lookup: " + RedactError(err).Error()
		return s
	}
	for k, v := range r.opts.Header {
		req.Header[k] = v
	}
	if r.opts.Sign != nil {
		if err := r.opts.Sign(req, t); err != nil {
			s.Detail = "signing the lookup: " + err.Error()
			return s
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		s.Detail = "lookup failed: " + RedactError(err).Error()
		return s
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	if err != nil {
		s.Detail = "reading the answer: " + err.Error()
		return s
	}
	return r.settle(s, resp.StatusCode, body)
}

// settle reads the broker's answer (status and body) to the lookup of s's
// order. Whatever the bytes, the result is s with a fate, and a Detail
// whose broker-supplied text is bounded and escaped.
func (r *Reconciler) settle(s pathdialer.Settlement, status int, body []byte) pathdialer.Settlement {
	if r.opts.NotFound(status, body) {
		s.Fate = pathdialer.FateNotReceived
		s.Detail = fmt.Sprintf("the broker has no record of it (HTTP %d; %s)", status, r.horizonNote())
		return s
	}
	if r.opts.ListField != "" {
		return r.settleList(s, status, body)
	}
	if status != http.StatusOK {
		s.Detail = fmt.Sprintf("lookup answered HTTP %d", status)
		return s
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		s.Detail = "the answer is not a JSON object"
		return s
	}
	idField, want := r.opts.IDField, s.OrderID
	if v, ok := ParseVenueOrderID(s.OrderID); ok {
		idField, want = r.opts.VenueIDField, v
	}
	if idField != "" {
		if id := jsonString(field(m, idField)); id != want {
			s.Detail = fmt.Sprintf("the answer names order %s in %q, not this one", quoteBounded(id), idField)
			return s
		}
	}
	st := jsonString(field(m, r.opts.StatusField))
	fate, ok := r.fates[strings.ToLower(st)]
	if !ok {
		s.Detail = fmt.Sprintf("status %s in %q is not mapped to a fate", quoteBounded(st), r.opts.StatusField)
		return s
	}
	s.Fate, s.Detail = fate, "broker status "+st // a key of Fates: the user's own words
	return s
}

// maxQuoted bounds the broker-supplied text quoted in a Detail.
const maxQuoted = 128

// quoteBounded quotes counterparty text for a message: control characters
// escaped, and at most maxQuoted bytes of it, with its full length noted.
func quoteBounded(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// jsonString renders a raw JSON string or scalar as text ("" when absent).
func jsonString(raw json.RawMessage) string {
	if raw == nil {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.Trim(string(raw), `"`)
}
