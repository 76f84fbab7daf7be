package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

func tickets(ids ...string) pathdialer.Reconciliation {
	r := pathdialer.Reconciliation{From: "eu", To: "us", Reason: "failover", Attempt: 1}
	for _, id := range ids {
		r.Tickets = append(r.Tickets, pathdialer.TicketInfo{OrderID: id, Service: pathdialer.ServiceREST, Endpoint: "eu", State: pathdialer.TicketUnknown})
	}
	return r
}

func fates(t *testing.T, s []pathdialer.Settlement) map[string]pathdialer.Fate {
	t.Helper()
	m := map[string]pathdialer.Fate{}
	for _, x := range s {
		if x.Service != pathdialer.ServiceREST {
			t.Fatalf("settlement %+v has the wrong service", x)
		}
		m[x.OrderID] = x.Fate
	}
	return m
}

// bind builds a rest.Transport on a Path over eu (active) and us, and binds rec to it.
func bind(t *testing.T, rec *rest.Reconciler, eu, us *server) {
	t.Helper()
	h := newHarness(t, eu.URL, us.URL, nil)
	_, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})
	rec.SendLookupsVia(rt)
}

// An Alpaca-shaped broker: GET /v2/orders:by_client_order_id?client_order_id=…,
// 404 {"code":40410000,"message":"order not found"} for an unknown order.
func TestReconcilerAlpacaShape(t *testing.T) {
	book := map[string]string{"a-filled": "filled", "a/partial 1": "partially_filled", "a-replaced": "replaced", "a-rej": "rejected", "a-odd": "mystery"}
	var mu sync.Mutex
	var keys []string
	handler := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Apca-Api-Key-Id"))
		mu.Unlock()
		if r.URL.Path != "/v2/orders:by_client_order_id" {
			http.Error(w, `{"code":40410000,"message":"not found"}`, http.StatusNotFound)
			return
		}
		id := r.URL.Query().Get("client_order_id")
		st, ok := book[id]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":40410000,"message":"order not found for ` + id + `"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "904837e3", "client_order_id": id, "status": st, "symbol": "AAPL"})
	}
	eu := newServer(t, "eu", true, handler)
	us := newServer(t, "us", true, handler)
	opts := rest.AlpacaOrderLookup("https://paper-api.alpaca.markets")
	opts.Header = http.Header{"Apca-Api-Key-Id": {"key-id"}, "Apca-Api-Secret-Key": {"secret"}}
	rec, err := rest.NewReconciler(opts)
	if err != nil {
		t.Fatal(err)
	}
	bind(t, rec, eu, us)

	got, err := rec.Reconcile(context.Background(), tickets("a-filled", "a/partial 1", "a-replaced", "a-rej", "a-never"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]pathdialer.Fate{"a-filled": pathdialer.FateFilled, "a/partial 1": pathdialer.FateResting, "a-replaced": pathdialer.FateCanceled, "a-rej": pathdialer.FateRejected, "a-never": pathdialer.FateNotReceived}
	if g := fates(t, got); !equalFates(g, want) {
		t.Fatalf("fates %v, want %v", g, want)
	}
	mu.Lock()
	for _, k := range keys {
		if k != "key-id" {
			t.Fatalf("a lookup went without the credentials: %q", k)
		}
	}
	mu.Unlock()

	// A status the mapping does not know keeps the hold: the reconcile fails,
	// naming the order, unless undetermined fates are accepted.
	got, err = rec.Reconcile(context.Background(), tickets("a-filled", "a-odd"))
	if !errors.Is(err, rest.ErrReconcileIncomplete) || !strings.Contains(err.Error(), "a-odd") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("err = %v", err)
	}
	if g := fates(t, got); g["a-odd"] != pathdialer.FateUndetermined || g["a-filled"] != pathdialer.FateFilled {
		t.Fatalf("fates %v", g)
	}
	opts.AcceptUndetermined = true
	lenient, _ := rest.NewReconciler(opts)
	bind(t, lenient, eu, us)
	if _, err := lenient.Reconcile(context.Background(), tickets("a-odd")); err != nil {
		t.Fatalf("AcceptUndetermined: %v", err)
	}
}

// A Binance-shaped broker: GET /api/v3/order?symbol=…&origClientOrderId=…;
// unknown order = HTTP 400 {"code":-2013}; any other 400 is not a not-found.
func TestReconcilerBinanceShape(t *testing.T) {
	book := map[string]string{"b-1": "FILLED", "b-2": "NEW", "b-3": "EXPIRED_IN_MATCH"}
	handler := func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/api/v3/order" || q.Get("symbol") != "BTCUSDT" {
			http.Error(w, `{"code":-1102,"msg":"Mandatory parameter 'symbol' was not sent."}`, http.StatusBadRequest)
			return
		}
		if q.Get("signature") != "sig-"+q.Get("origClientOrderId") {
			http.Error(w, `{"code":-1022,"msg":"Signature for this request is not valid."}`, http.StatusBadRequest)
			return
		}
		id := q.Get("origClientOrderId")
		st, ok := book[id]
		if !ok {
			http.Error(w, `{"code":-2013,"msg":"Order does not exist."}`, http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"symbol": "BTCUSDT", "orderId": 28, "clientOrderId": id, "status": st})
	}
	eu := newServer(t, "eu", false, handler)
	us := newServer(t, "us", false, handler)
	opts := rest.BinanceSpotOrderLookup("https://api.binance.com", "BTCUSDT")
	opts.Header = http.Header{"X-Mbx-Apikey": {"k"}}
	opts.Sign = func(req *http.Request, o pathdialer.TicketInfo) error {
		q := req.URL.Query()
		if o.OrderID != "b-badsig" {
			q.Set("signature", "sig-"+o.OrderID)
		}
		req.URL.RawQuery = q.Encode()
		return nil
	}
	rec, err := rest.NewReconciler(opts)
	if err != nil {
		t.Fatal(err)
	}
	bind(t, rec, eu, us)
	got, err := rec.Reconcile(context.Background(), tickets("b-1", "b-2", "b-3", "b-never", "b-badsig"))
	if !errors.Is(err, rest.ErrReconcileIncomplete) || !strings.Contains(err.Error(), "b-badsig") {
		t.Fatalf("err = %v: a bad signature (HTTP 400, code -1022) must not read as not-found", err)
	}
	want := map[string]pathdialer.Fate{"b-1": pathdialer.FateFilled, "b-2": pathdialer.FateResting, "b-3": pathdialer.FateCanceled, "b-never": pathdialer.FateNotReceived, "b-badsig": pathdialer.FateUndetermined}
	if g := fates(t, got); !equalFates(g, want) {
		t.Fatalf("fates %v, want %v", g, want)
	}
}

func equalFates(a, b map[string]pathdialer.Fate) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestNewReconcilerRefusesWhatCannotWork(t *testing.T) {
	for _, o := range []rest.ReconcileOptions{
		{URL: "https://broker.example/v1/orders"},
		{URL: "https://broker.example/v1/orders/{client_order_id}/{client_order_id}"},
		{URL: "/v1/orders/{client_order_id}"},
		{URL: "https://broker.example/v1/orders/{client_order_id}", Parallel: -1},
	} {
		if _, err := rest.NewReconciler(o); !errors.Is(err, rest.ErrInvalidOptions) {
			t.Errorf("%+v: err = %v", o, err)
		}
	}
	rec, _ := rest.NewReconciler(rest.ReconcileOptions{URL: "https://broker.example/v1/orders/{client_order_id}"})
	if _, err := rec.Reconcile(context.Background(), tickets("x")); err == nil || !strings.Contains(err.Error(), "SendLookupsVia") {
		t.Fatalf("unbound reconcile: err = %v", err)
	}
}

// Against the simulated broker, wired as the Path's Reconciler: an order booked
// with its answer lost (an unknown outcome) is settled from the broker's book
// through the new region, and one never booked is NOT_RECEIVED.
func TestReconcilerOnTheSimulatedBroker(t *testing.T) {
	b, err := simbroker.Start(context.Background(), simbroker.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rec, err := rest.NewReconciler(rest.ReconcileOptions{
		URL:     "https://broker.invalid/v1/orders/" + rest.OrderIDPlaceholder,
		Header:  http.Header{"X-Api-Key": {b.APIKey()}},
		IDField: "client_order_id",
	})
	if err != nil {
		t.Fatal(err)
	}
	regions := b.Regions()
	probes := pathtest.NewProbes(regions[0].Name(), regions[1].Name())
	var eps []pathdialer.Endpoint
	for i, r := range regions[:2] {
		eps = append(eps, pathdialer.Endpoint{Name: r.Name(), Region: r.Name(), Priority: i, Primary: i == 0, Services: map[string]string{"rest": r.RESTURL()}})
	}
	cfg := pathtest.FastConfig(eps, probes)
	results := make(chan []pathdialer.Settlement, 4)
	cfg.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
		s, err := rec.Reconcile(ctx, r)
		if err == nil {
			results <- s
		}
		return s, err
	}
	events := pathtest.NewEvents()
	cfg.OnEvent = events.Hook
	path := pathtest.Start(t, cfg)
	rt, err := rest.NewTransport(path, rest.Options{TLSConfig: b.ClientTLSConfig(), Hosts: []string{"broker.invalid"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.CloseIdleConnections()
	rec.SendLookupsVia(rt)
	c := &http.Client{Transport: rt}

	place := func(id, typ string) error {
		req, _ := http.NewRequest(http.MethodPost, "https://broker.invalid/v1/orders",
			strings.NewReader(`{"client_order_id":"`+id+`","symbol":"EURUSD","side":"buy","qty":"1","type":"`+typ+`","price":"1.0"}`))
		req.Header.Set("X-API-Key", b.APIKey())
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := place("sim-rest", "limit"); err != nil {
		t.Fatal(err)
	}
	b.SetFault(regions[0].Name(), simbroker.REST, simbroker.UnknownOutcome{N: 1})
	if err := place("sim-lost", "market"); !errors.Is(err, pathdialer.ErrUnknownOutcome) {
		t.Fatalf("err = %v, want an unknown outcome", err)
	}
	got, err := rec.Reconcile(context.Background(), tickets("sim-rest", "sim-never"))
	if err != nil {
		t.Fatal(err)
	}
	if g := fates(t, got); g["sim-rest"] != pathdialer.FateResting || g["sim-never"] != pathdialer.FateNotReceived {
		t.Fatalf("fates %v", g)
	}

	probes.Down[regions[0].Name()].Store(true) // fail over: the switch reconciles sim-lost through the backup
	events.Wait(t, path, pathdialer.EventRelease)
	settled := <-results
	if g := fates(t, settled); g["sim-lost"] != pathdialer.FateFilled {
		t.Fatalf("the lost order settled as %v, want FILLED (the broker booked it)", g)
	}
	if u := path.Unknown(); len(u) != 0 {
		t.Fatalf("still unknown after reconcile: %+v", u)
	}
}

// Lookups run in parallel up to ReconcileOptions.Parallel, never more, and a
// lookup of another service's ticket is left to that service's reconciler.
func TestReconcilerBoundsParallelLookupsAndKeepsToItsService(t *testing.T) {
	var mu sync.Mutex
	inFlight, peak := 0, 0
	release := make(chan struct{})
	handler := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		n := inFlight
		mu.Unlock()
		if n == 2 {
			close(release) // the bound is reached: let everyone finish
		}
		<-release
		mu.Lock()
		inFlight--
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "filled"})
	}
	eu := newServer(t, "eu", true, handler)
	us := newServer(t, "us", true, nil)
	rec, err := rest.NewReconciler(rest.ReconcileOptions{URL: "https://b.example/v1/orders/{client_order_id}", Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	bind(t, rec, eu, us)
	r := tickets("p-1", "p-2", "p-3", "p-4", "p-5")
	r.Tickets = append(r.Tickets, pathdialer.TicketInfo{OrderID: "fix-1", Service: pathdialer.ServiceFIX})
	got, err := rec.Reconcile(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 5 || peak != 2 {
		t.Fatalf("%d settlements (want 5, none for the FIX ticket), peak parallel lookups %d (want 2)", len(got), peak)
	}
}

// A Reconciler never given its transport fails every reconcile, even one
// with no order of its service to settle: forgetting SendLookupsVia shows at
// the first switch, not at the first switch with an order at stake.
func TestReconcilerWithoutTransportFailsAtTheFirstReconcile(t *testing.T) {
	rec, err := rest.NewReconciler(rest.ReconcileOptions{URL: "https://broker.example/v1/orders/{client_order_id}"})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]pathdialer.Reconciliation{"no tickets": tickets(), "another service's tickets": {Tickets: []pathdialer.TicketInfo{{OrderID: "f1", Service: pathdialer.ServiceFIX}}}} {
		if _, err := rec.Reconcile(context.Background(), r); err == nil || !strings.Contains(err.Error(), "SendLookupsVia") || !strings.Contains(err.Error(), "NewTransport") {
			t.Fatalf("%s: unbound reconcile: err = %v, want an error naming SendLookupsVia and NewTransport", name, err)
		}
	}
}
