package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
	"github.com/brokerpath/brokerpath/venue"
)

// venueShape is what one venue's server answers: the request it expects and
// how it renders one order ("" status: not booked).
type venueShape struct {
	params map[string]string
	method string
	// path the lookup or listing must ask for; id returns the order ID a
	// per-order lookup names ("" for a listing).
	paths []string
	id    func(r *http.Request) string
	// one renders a booked order for a per-order lookup; list renders the
	// listing of every booked order; notFound answers an unknown order.
	one      func(w http.ResponseWriter, id, status string)
	list     func(w http.ResponseWriter, r *http.Request, book map[string]string)
	notFound func(w http.ResponseWriter, id string)
	filled   string // the venue's word for filled
	resting  string
}

func venueShapes() map[string]venueShape {
	js := func(w http.ResponseWriter, v any) { _ = json.NewEncoder(w).Encode(v) }
	return map[string]venueShape{
		"alpaca": {method: http.MethodGet, paths: []string{"/v2/orders:by_client_order_id"},
			id:       func(r *http.Request) string { return r.URL.Query().Get("client_order_id") },
			one:      func(w http.ResponseWriter, id, st string) { js(w, map[string]any{"client_order_id": id, "status": st}) },
			notFound: func(w http.ResponseWriter, _ string) { w.WriteHeader(404); js(w, map[string]any{"code": 40410000}) },
			filled:   "filled", resting: "accepted"},
		"binance-spot": {params: map[string]string{"symbol": "BTCUSDT"}, method: http.MethodGet, paths: []string{"/api/v3/order"},
			id:  func(r *http.Request) string { return r.URL.Query().Get("origClientOrderId") },
			one: func(w http.ResponseWriter, id, st string) { js(w, map[string]any{"clientOrderId": id, "status": st}) },
			notFound: func(w http.ResponseWriter, _ string) {
				w.WriteHeader(400)
				js(w, map[string]any{"code": -2013, "msg": "Order does not exist."})
			},
			filled: "FILLED", resting: "NEW"},
		"oanda-v20": {params: map[string]string{"account": "101-004-1"}, method: http.MethodGet, paths: []string{"/v3/accounts/101-004-1/orders/"},
			id: func(r *http.Request) string { return strings.TrimPrefix(r.URL.Path, "/v3/accounts/101-004-1/orders/@") },
			one: func(w http.ResponseWriter, id, st string) {
				js(w, map[string]any{"order": map[string]any{"id": "6372", "state": st, "clientExtensions": map[string]any{"id": id}}})
			},
			notFound: func(w http.ResponseWriter, _ string) {
				w.WriteHeader(404)
				js(w, map[string]any{"errorMessage": "no such order"})
			},
			filled: "FILLED", resting: "PENDING"},
		"deribit": {params: map[string]string{"currency": "BTC"}, method: http.MethodGet, paths: []string{"/api/v2/private/get_order_state_by_label"},
			id: func(r *http.Request) string { return r.URL.Query().Get("label") },
			one: func(w http.ResponseWriter, id, st string) {
				js(w, map[string]any{"jsonrpc": "2.0", "result": []any{map[string]any{"label": id, "order_state": st, "order_id": "ETH-1"}}})
			},
			notFound: func(w http.ResponseWriter, _ string) { js(w, map[string]any{"jsonrpc": "2.0", "result": []any{}}) },
			filled:   "filled", resting: "open"},
		"coinbase-advanced-trade": {method: http.MethodGet, paths: []string{"/api/v3/brokerage/orders/historical/batch"},
			list: func(w http.ResponseWriter, _ *http.Request, book map[string]string) {
				var os []any
				for id, st := range book {
					os = append(os, map[string]any{"client_order_id": id, "status": st})
				}
				js(w, map[string]any{"orders": os, "has_next": false})
			},
			filled: "FILLED", resting: "OPEN"},
		"ibkr-client-portal": {method: http.MethodGet, paths: []string{"/v1/api/iserver/account/orders"},
			list: func(w http.ResponseWriter, _ *http.Request, book map[string]string) {
				var os []any
				for id, st := range book {
					os = append(os, map[string]any{"order_ref": id, "status": st, "orderId": 1})
				}
				js(w, map[string]any{"orders": os, "snapshot": true})
			},
			filled: "Filled", resting: "Submitted"},
		"kraken-spot": {method: http.MethodPost, paths: []string{"/0/private/OpenOrders", "/0/private/ClosedOrders"},
			list: func(w http.ResponseWriter, r *http.Request, book map[string]string) {
				open := strings.HasSuffix(r.URL.Path, "OpenOrders")
				m := map[string]any{}
				for id, st := range book {
					if (st == "open") == open {
						m["TX-"+id] = map[string]any{"cl_ord_id": id, "status": st}
					}
				}
				key := "closed"
				if open {
					key = "open"
				}
				js(w, map[string]any{"error": []any{}, "result": map[string]any{key: m}})
			},
			filled: "closed", resting: "open"},
	}
}

// Every shipped profile with a REST lookup or listing has a preset that
// settles a filled, a resting and a missing order against the venue's
// shape, within its budget, and calls "not found" provisional, naming the
// venue's horizon.
func TestVenuePresetsSettleEveryShippedRESTVenue(t *testing.T) {
	shapes := venueShapes()
	for _, p := range venue.Shipped() {
		sh, ok := shapes[p.Name]
		if p.Name == "coinbase-exchange-fix" {
			if _, err := rest.VenueReconcileOptions(p.Name, "https://x.example", nil); !errors.Is(err, rest.ErrInvalidOptions) || !strings.Contains(err.Error(), "FIX") {
				t.Fatalf("%s: %v, want a refusal naming the FIX reconciler", p.Name, err)
			}
			continue
		}
		if !ok {
			t.Fatalf("no shape for shipped venue %s: add its preset and its test", p.Name)
		}
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel() // Kraken's Starter budget spaces its two listings 12 s apart
			book := map[string]string{"o-filled": sh.filled, "o-resting": sh.resting}
			var mu sync.Mutex
			var bad []string
			handler := func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				okPath := false
				for _, pth := range sh.paths {
					okPath = okPath || strings.HasPrefix(r.URL.Path, pth)
				}
				if r.Method != sh.method || !okPath {
					bad = append(bad, r.Method+" "+r.URL.String())
					http.Error(w, "unexpected", http.StatusTeapot)
					return
				}
				if sh.list != nil {
					sh.list(w, r, book)
					return
				}
				id := sh.id(r)
				if st, ok := book[id]; ok {
					sh.one(w, id, st)
					return
				}
				sh.notFound(w, id)
			}
			eu := newServer(t, "eu", true, handler)
			us := newServer(t, "us", true, handler)
			opts, err := rest.VenueReconcileOptions(p.Name, "https://venue.example", sh.params)
			if err != nil {
				t.Fatal(err)
			}
			if opts.Venue.Name != p.Name {
				t.Fatalf("preset's Venue is %q, want %q", opts.Venue.Name, p.Name)
			}
			rec, err := rest.NewReconciler(opts)
			if err != nil {
				t.Fatal(err)
			}
			bind(t, rec, eu, us)
			got, err := rec.Reconcile(context.Background(), tickets("o-filled", "o-resting", "o-missing"))
			if err != nil {
				t.Fatalf("Reconcile: %v (unexpected requests: %v)", err, bad)
			}
			f := fates(t, got)
			want := map[string]pathdialer.Fate{"o-filled": pathdialer.FateFilled, "o-resting": pathdialer.FateResting, "o-missing": pathdialer.FateNotReceived}
			for id, w := range want {
				if f[id] != w {
					t.Fatalf("%s settled %s, want %s (%+v)", id, f[id], w, got)
				}
			}
			for _, s := range got {
				if s.OrderID == "o-missing" && (!strings.Contains(s.Detail, "provisional") || !strings.Contains(s.Detail, p.Name)) {
					t.Fatalf("not-found detail %q: want provisional, naming %s's horizon", s.Detail, p.Name)
				}
			}
		})
	}
	if _, err := rest.VenueReconcileOptions("binance-spot", "https://x.example", nil); !errors.Is(err, rest.ErrInvalidOptions) || !strings.Contains(err.Error(), `"symbol"`) {
		t.Fatalf("binance-spot without a symbol: %v", err)
	}
	if _, err := rest.VenueReconcileOptions("nasdaq", "https://x.example", nil); !errors.Is(err, rest.ErrInvalidOptions) {
		t.Fatalf("unknown venue: %v", err)
	}
}

// Lookups stay within the venue's budget: with room for one lookup per
// 100 ms (a quarter of 4 per 100 ms) and a burst of one, five lookups take at
// least 400 ms and never overlap.
func TestVenueBudgetPacesLookups(t *testing.T) {
	var inFlight, most atomic.Int32
	handler := func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		http.NotFound(w, r)
	}
	eu := newServer(t, "eu", true, handler)
	us := newServer(t, "us", true, handler)
	p := venue.Conservative()
	p.Name = "paced"
	p.LookupBudget = venue.Documented(venue.Budget{Requests: 4, Per: 100 * time.Millisecond, LookupCost: 1, Scope: venue.PerAccount, Exceeded: venue.Throttled},
		"https://venue.example/limits", "4 requests per 100 ms")
	rec, err := rest.NewReconciler(rest.ReconcileOptions{URL: "https://venue.example/orders/" + rest.OrderIDPlaceholder, Venue: p})
	if err != nil {
		t.Fatal(err)
	}
	bind(t, rec, eu, us)
	began := time.Now()
	got, err := rec.Reconcile(context.Background(), tickets("a", "b", "c", "d", "e"))
	if err != nil || len(got) != 5 {
		t.Fatalf("Reconcile: %v, %d settlements", err, len(got))
	}
	if el := time.Since(began); el < 400*time.Millisecond {
		t.Fatalf("five lookups took %v: faster than the venue's budget allows (one per 100 ms)", el)
	}
	if m := most.Load(); m != 1 {
		t.Fatalf("%d lookups at once, want 1", m)
	}
}

// A listing that fills its page cannot prove an order absent: the order
// stays undetermined, and the reconcile incomplete.
func TestVenueListingFullPageIsNotANotFound(t *testing.T) {
	handler := func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"orders": []any{
			map[string]any{"client_order_id": "x-1", "status": "FILLED"}, map[string]any{"client_order_id": "x-2", "status": "OPEN"},
		}})
	}
	eu := newServer(t, "eu", true, handler)
	us := newServer(t, "us", true, handler)
	opts := rest.CoinbaseAdvancedTradeOrderListing("https://api.coinbase.com")
	opts.ListLimit = 2
	rec, err := rest.NewReconciler(opts)
	if err != nil {
		t.Fatal(err)
	}
	bind(t, rec, eu, us)
	got, err := rec.Reconcile(context.Background(), tickets("x-1", "x-9"))
	if !errors.Is(err, rest.ErrReconcileIncomplete) {
		t.Fatalf("Reconcile: %v, want ErrReconcileIncomplete", err)
	}
	if f := fates(t, got); f["x-1"] != pathdialer.FateFilled || f["x-9"] != pathdialer.FateUndetermined {
		t.Fatalf("fates %v", f)
	}
}

func TestVenueOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    rest.ReconcileOptions
		want string
	}{
		{"both", rest.ReconcileOptions{URL: "https://x.example/o/" + rest.OrderIDPlaceholder, ListURLs: []string{"https://x.example/o"}, ListField: "o", IDField: "id"}, "both set"},
		{"no list field", rest.ReconcileOptions{ListURLs: []string{"https://x.example/o"}, IDField: "id"}, "ListField is required"},
		{"placeholder in listing", rest.ReconcileOptions{ListURLs: []string{"https://x.example/" + rest.OrderIDPlaceholder}, ListField: "o", IDField: "id"}, "names no order"},
		{"method", rest.ReconcileOptions{URL: "https://x.example/o/" + rest.OrderIDPlaceholder, Method: "DELETE"}, "GET or POST"},
		{"invalid venue", rest.ReconcileOptions{URL: "https://x.example/o/" + rest.OrderIDPlaceholder, Venue: venue.Profile{Name: "x", LookupBudget: venue.Fact[venue.Budget]{Value: venue.Budget{Requests: 1}}}}, "Venue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := rest.NewReconciler(tc.o); !errors.Is(err, rest.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewReconciler = %v, want ErrInvalidOptions naming %q", err, tc.want)
			}
		})
	}
}

// ListingRequests tells the Path how a preset's Reconcile spends the
// venue's budget: a listing preset makes one request per listing whatever
// the number of orders (Kraken reads two), a lookup preset one per order
// (0: not a listing).
func TestVenuePresetListingRequests(t *testing.T) {
	want := map[string]int{"alpaca": 0, "binance-spot": 0, "oanda-v20": 0, "deribit": 0,
		"coinbase-advanced-trade": 1, "ibkr-client-portal": 1, "kraken-spot": 2}
	params := map[string]string{"symbol": "BTCUSDT", "account": "001-001-1-001", "currency": "BTC"}
	for _, p := range venue.Shipped() {
		opts, err := rest.VenueReconcileOptions(p.Name, "https://venue.example", params)
		if err != nil {
			if _, listed := want[p.Name]; listed {
				t.Errorf("%s: %v", p.Name, err)
			}
			continue
		}
		n, ok := want[p.Name]
		if !ok {
			t.Errorf("%s has a REST preset this test does not know", p.Name)
			continue
		}
		rec, err := rest.NewReconciler(opts)
		if err != nil {
			t.Fatalf("%s: NewReconciler: %v", p.Name, err)
		}
		if got := rec.ListingRequests(); got != n {
			t.Errorf("%s: ListingRequests = %d, want %d", p.Name, got, n)
		}
	}
}
