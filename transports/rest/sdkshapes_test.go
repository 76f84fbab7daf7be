package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// The requests below are built as the venues' SDKs build them:
// github.com/adshao/go-binance/v2 v2.8.7 (client.go parseRequest: the
// parameters form-encoded in the body, the signature appended to the
// query) and github.com/alpacahq/alpaca-trade-api-go/v3 v3.9.1 (rest.go:
// JSON bodies, the order's server ID in the path).

// binanceReq is a go-binance signed request: form body, signature in the query.
func binanceReq(t *testing.T, method, path, form string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, "https://broker.invalid"+path+"?signature=0f0f", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-MBX-APIKEY", "k")
	return req
}

// TestBinanceCancelIsKeyedByTheOrderItNames: go-binance's CancelOrderService
// sends DELETE /api/v3/order with origClientOrderId (and optionally a
// newClientOrderId for the cancel itself) in the form body: the order it
// acts on is origClientOrderId's, never the path's last segment.
func TestBinanceCancelIsKeyedByTheOrderItNames(t *testing.T) {
	req := binanceReq(t, http.MethodDelete, "/api/v3/order", "newClientOrderId=cxl-1&origClientOrderId=ord-7&symbol=BTCUSDT&timestamp=1")
	id, err := rest.DefaultOrderID(req)
	if err != nil {
		t.Fatal(err)
	}
	if id != "ord-7" {
		t.Fatalf("DefaultOrderID of a Binance cancel = %q, want the order it cancels, %q", id, "ord-7")
	}
	b, _ := io.ReadAll(req.Body)
	if !strings.Contains(string(b), "origClientOrderId=ord-7") {
		t.Fatalf("body not left readable: %q", b)
	}
}

// TestAlpacaOrderWithoutClientOrderIDIsAssignedOne: Alpaca's SDK sends
// "client_order_id": "" when the field is unset. The venue accepts a
// client-chosen ID, so the transport assigns one, sends the order with it,
// and the order is counted.
func TestAlpacaOrderWithoutClientOrderIDIsAssignedOne(t *testing.T) {
	got := make(chan string, 1)
	eu := newServer(t, "eu", true, func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		got <- m["client_order_id"].(string)
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "u-1", "client_order_id": m["client_order_id"], "status": "accepted"})
	})
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, nil)
	c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), Rules: rest.AlpacaRules()})
	body := `{"symbol":"AAPL","qty":"1","side":"buy","type":"market","time_in_force":"day","client_order_id":""}`
	resp, err := c.Post("https://broker.invalid/v2/orders", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("an Alpaca order without a client order ID was refused: %v", err)
	}
	resp.Body.Close()
	if id := <-got; id == "" {
		t.Fatal("the order reached the venue without a client order ID")
	}
	if n := rt.Stats().Submissions.Load(); n != 1 {
		t.Fatalf("Stats.Submissions = %d, want 1", n)
	}
}

// TestUnnamedWriteWithoutIDIsRefusedCountedAndNamesTheRule: a Binance
// withdrawal (POST /sapi/v1/capital/withdraw/apply) is a write no preset
// rule names and carries no client order ID: it is refused, counted as a
// submission not sent, and the error says which rule to add.
func TestUnnamedWriteWithoutIDIsRefusedCountedAndNamesTheRule(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, nil)
	c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), Rules: rest.BinanceSpotRules()})
	_, err := c.Do(binanceReq(t, http.MethodPost, "/sapi/v1/capital/withdraw/apply", "coin=BTC&address=x&amount=1&timestamp=1"))
	if !errors.Is(err, rest.ErrNoOrderID) {
		t.Fatalf("err = %v, want ErrNoOrderID", err)
	}
	if !strings.Contains(err.Error(), `Rules.NotOrders`) || !strings.Contains(err.Error(), `"/sapi/v1/capital/withdraw/apply"`) {
		t.Fatalf("the refusal does not name the rule to add: %v", err)
	}
	if s, n := rt.Stats().Submissions.Load(), rt.Stats().NotSent.Load(); s != 1 || n != 1 {
		t.Fatalf("Stats.Submissions = %d, NotSent = %d; want 1, 1", s, n)
	}
	if eu.n("POST /sapi/v1/capital/withdraw/apply") != 0 {
		t.Fatal("the refused write reached the venue")
	}
	if v := rest.Outcome(nil, err); v.Kind != rest.NotSent || !v.MayResend {
		t.Fatalf("Outcome = %+v, want not sent", v)
	}
}

// TestAlpacaCancelOutcomeIsTheOrderFoundByItsServerID: Alpaca's SDK cancels
// with DELETE /v2/orders/{id}, the server's order UUID. An unknown outcome
// (5xx) is settled by the order's state, looked up by that UUID
// (GET /v2/orders/{id}), not by a client order ID.
func TestAlpacaCancelOutcomeIsTheOrderFoundByItsServerID(t *testing.T) {
	const uuid = "61e69015-8549-4bfd-b9c3-01e75843f47d"
	handler := func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.Method == http.MethodGet && r.URL.Path == "/v2/orders/"+uuid:
			_ = json.NewEncoder(w).Encode(map[string]any{"id": uuid, "client_order_id": "mine-1", "status": "canceled"})
		default:
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": 40410000, "message": "order not found"})
		}
	}
	eu := newServer(t, "eu", true, handler)
	us := newServer(t, "us", true, handler)
	h := newHarness(t, eu.URL, us.URL, nil)
	c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), Rules: rest.AlpacaRules()})
	req, _ := http.NewRequest(http.MethodDelete, "https://broker.invalid/v2/orders/"+uuid, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	v := rest.Outcome(resp, nil)
	if v.Kind != rest.Unknown || v.Order == nil {
		t.Fatalf("Outcome = %+v, want unknown with the order", v)
	}
	rec, err := rest.NewReconciler(rest.AlpacaOrderLookup("https://broker.invalid"))
	if err != nil {
		t.Fatal(err)
	}
	rec.SendLookupsVia(rt)
	out, err := rec.Reconcile(context.Background(), pathdialer.Reconciliation{Tickets: []pathdialer.TicketInfo{
		{OrderID: v.Order.OrderID, Service: pathdialer.ServiceREST, Endpoint: v.Order.Endpoint, State: pathdialer.TicketUnknown},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Fate != pathdialer.FateCanceled {
		t.Fatalf("the cancel settled as %+v, want canceled (the order's state, found by its UUID)", out)
	}
}

// sdkShape is one request as a venue's SDK sends it, and what the preset
// must make of it.
type sdkShape struct {
	name         string
	method, path string
	form, json   string // body: form-encoded (go-binance) or JSON (Alpaca)
	query        string // go-binance puts some parameters in the query
	order        bool   // an order: takes a ticket
	id           string // the ID it is tracked under; "assigned": one the transport made
	refused      string // refused with ErrNoOrderID, the message containing this
	lookup       string // the reconcile lookup's path?query for that ID
}

// TestEverySDKShapeIsClassifiedKeyedAndLookedUp: every request shape
// go-binance v2.8.7 and alpaca-trade-api-go v3.9.1 send (order_service.go,
// withdraw_service.go, user_stream_service.go; alpaca/rest.go), through the
// presets: whether it is an order, the ID it is tracked under, and the
// lookup that settles its outcome.
func TestEverySDKShapeIsClassifiedKeyedAndLookedUp(t *testing.T) {
	const uuid = "61e69015-8549-4bfd-b9c3-01e75843f47d"
	venues := map[string]struct {
		rules  rest.Rules
		lookup rest.ReconcileOptions
		shapes []sdkShape
	}{
		"binance": {rest.BinanceSpotRules(), rest.BinanceSpotOrderLookup("https://broker.invalid", "BTCUSDT"), []sdkShape{
			{name: "order", method: "POST", path: "/api/v3/order", form: "newClientOrderId=x-AbC1&price=1&quantity=1&side=BUY&symbol=BTCUSDT&timeInForce=GTC&timestamp=1&type=LIMIT",
				order: true, id: "x-AbC1", lookup: "/api/v3/order?symbol=BTCUSDT&origClientOrderId=x-AbC1"},
			{name: "order without newClientOrderId", method: "POST", path: "/api/v3/order", form: "quantity=1&side=BUY&symbol=BTCUSDT&timestamp=1&type=MARKET",
				order: true, refused: "newClientOrderId"},
			{name: "cancel by origClientOrderId", method: "DELETE", path: "/api/v3/order", form: "origClientOrderId=x-AbC1&symbol=BTCUSDT&timestamp=1",
				order: true, id: "x-AbC1", lookup: "/api/v3/order?symbol=BTCUSDT&origClientOrderId=x-AbC1"},
			{name: "cancel with its own newClientOrderId", method: "DELETE", path: "/api/v3/order", form: "newClientOrderId=cxl-9&origClientOrderId=x-AbC1&symbol=BTCUSDT&timestamp=1",
				order: true, id: "x-AbC1", lookup: "/api/v3/order?symbol=BTCUSDT&origClientOrderId=x-AbC1"},
			{name: "cancel by orderId", method: "DELETE", path: "/api/v3/order", form: "orderId=28457&symbol=BTCUSDT&timestamp=1",
				order: true, id: rest.VenueOrderID("28457"), lookup: "/api/v3/order?symbol=BTCUSDT&orderId=28457"},
			{name: "cancel naming no order", method: "DELETE", path: "/api/v3/order", form: "symbol=BTCUSDT&timestamp=1",
				order: true, refused: "origClientOrderId or orderId"},
			{name: "cancel-replace", method: "POST", path: "/api/v3/order/cancelReplace", form: "cancelOrigClientOrderId=x-AbC1&cancelReplaceMode=STOP_ON_FAILURE&newClientOrderId=x-New2&price=2&quantity=1&side=BUY&symbol=BTCUSDT&timestamp=1&type=LIMIT",
				order: true, id: "x-New2", lookup: "/api/v3/order?symbol=BTCUSDT&origClientOrderId=x-New2"},
			{name: "test order", method: "POST", path: "/api/v3/order/test", form: "quantity=1&side=BUY&symbol=BTCUSDT&timestamp=1&type=MARKET"},
			{name: "cancel all of a symbol", method: "DELETE", path: "/api/v3/openOrders", query: "symbol=BTCUSDT&timestamp=1"},
			{name: "listen key", method: "POST", path: "/api/v3/userDataStream"},
			{name: "listen key keepalive", method: "PUT", path: "/api/v3/userDataStream", form: "listenKey=abc"},
			{name: "query order", method: "GET", path: "/api/v3/order", query: "origClientOrderId=x-AbC1&symbol=BTCUSDT&timestamp=1"},
			{name: "withdrawal", method: "POST", path: "/sapi/v1/capital/withdraw/apply", form: "address=x&amount=1&coin=BTC&timestamp=1",
				order: true, refused: "Rules.NotOrders"},
		}},
		"alpaca": {rest.AlpacaRules(), rest.AlpacaOrderLookup("https://broker.invalid"), []sdkShape{
			{name: "order", method: "POST", path: "/v2/orders", json: `{"symbol":"AAPL","qty":"1","side":"buy","type":"market","time_in_force":"day","client_order_id":"mine-1"}`,
				order: true, id: "mine-1", lookup: "/v2/orders:by_client_order_id?client_order_id=mine-1"},
			{name: "order with empty client_order_id", method: "POST", path: "/v2/orders", json: `{"symbol":"AAPL","qty":"1","side":"buy","type":"market","time_in_force":"day","client_order_id":""}`,
				order: true, id: "assigned", lookup: "/v2/orders:by_client_order_id?client_order_id="},
			{name: "replace with empty client_order_id", method: "PATCH", path: "/v2/orders/" + uuid, json: `{"qty":"2","limit_price":"10","stop_price":null,"trail":null,"time_in_force":"day","client_order_id":""}`,
				order: true, id: "assigned", lookup: "/v2/orders:by_client_order_id?client_order_id="},
			{name: "replace with client_order_id", method: "PATCH", path: "/v2/orders/" + uuid, json: `{"qty":"2","limit_price":"10","stop_price":null,"trail":null,"time_in_force":"day","client_order_id":"mine-2"}`,
				order: true, id: "mine-2", lookup: "/v2/orders:by_client_order_id?client_order_id=mine-2"},
			{name: "cancel", method: "DELETE", path: "/v2/orders/" + uuid,
				order: true, id: rest.VenueOrderID(uuid), lookup: "/v2/orders/" + uuid},
			{name: "cancel all", method: "DELETE", path: "/v2/orders"},
			{name: "close a position", method: "DELETE", path: "/v2/positions/AAPL", query: "qty=1", order: true, refused: "POST /v2/orders"},
			{name: "close all positions", method: "DELETE", path: "/v2/positions", query: "cancel_orders=true", order: true, refused: "POST /v2/orders"},
			{name: "get order", method: "GET", path: "/v2/orders/" + uuid},
			{name: "get order by client order ID", method: "GET", path: "/v2/orders:by_client_order_id", query: "client_order_id=mine-1"},
		}},
	}
	type seen struct{ method, uri, body string }
	got := make(chan seen, 4)
	handler := func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), string(b)}
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{}`)
	}
	eu := newServer(t, "eu", true, handler)
	us := newServer(t, "us", true, handler)
	h := newHarness(t, eu.URL, us.URL, nil)
	for vname, v := range venues {
		var ev rest.OrderEvent
		var events int
		c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), Rules: v.rules,
			OnOrder: func(e rest.OrderEvent) { ev = e; events++ }})
		rec, err := rest.NewReconciler(v.lookup)
		if err != nil {
			t.Fatal(err)
		}
		rec.SendLookupsVia(rt)
		for _, s := range v.shapes {
			t.Run(vname+"/"+s.name, func(t *testing.T) {
				ev, events = rest.OrderEvent{}, 0
				before := rt.Stats().Submissions.Load()
				u := "https://broker.invalid" + s.path
				if s.query != "" {
					u += "?" + s.query
				}
				var body io.Reader
				switch {
				case s.form != "":
					body = strings.NewReader(s.form)
				case s.json != "":
					body = strings.NewReader(s.json)
				}
				req, _ := http.NewRequest(s.method, u, body)
				switch {
				case s.form != "":
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				case s.json != "":
					req.Header.Set("Content-Type", "application/json")
				}
				resp, err := c.Do(req)
				if n := rt.Stats().Submissions.Load() - before; (n == 1) != s.order {
					t.Fatalf("counted as %d submissions; an order: %v", n, s.order)
				}
				if s.refused != "" {
					if !errors.Is(err, rest.ErrNoOrderID) || !strings.Contains(err.Error(), s.refused) {
						t.Fatalf("err = %v, want ErrNoOrderID naming %q", err, s.refused)
					}
					t.Log(err)
					if events != 1 || ev.Verdict.Kind != rest.NotSent {
						t.Fatalf("OnOrder: %d events, last %+v; want one, not sent", events, ev)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				sent := <-got
				if sent.method != s.method {
					t.Fatalf("venue saw %s, want %s", sent.method, s.method)
				}
				if !s.order {
					if events != 0 {
						t.Fatalf("a request that is not an order was reported as one: %+v", ev)
					}
					return
				}
				if events != 1 || ev.Verdict.Kind != rest.Accepted || ev.Method != s.method || ev.Path != s.path {
					t.Fatalf("OnOrder: %d events, last %+v", events, ev)
				}
				id := s.id
				if id == "assigned" {
					if !ev.Assigned || ev.OrderID == "" {
						t.Fatalf("no ID assigned: %+v", ev)
					}
					var m map[string]any
					if err := json.Unmarshal([]byte(sent.body), &m); err != nil || m["client_order_id"] != ev.OrderID {
						t.Fatalf("the venue got client_order_id %v, the transport reports %q", m["client_order_id"], ev.OrderID)
					}
					id = ev.OrderID
					s.lookup += id
				} else if ev.Assigned || ev.OrderID != id {
					t.Fatalf("tracked as %q (assigned %v), want %q", ev.OrderID, ev.Assigned, id)
				}
				// The stub answers {} (no status): the fate stays undetermined;
				// what is checked is the lookup that was asked.
				_, _ = rec.Reconcile(context.Background(), pathdialer.Reconciliation{Tickets: []pathdialer.TicketInfo{
					{OrderID: id, Service: pathdialer.ServiceREST, State: pathdialer.TicketUnknown}}})
				if look := <-got; look.method != http.MethodGet || look.uri != s.lookup {
					t.Fatalf("looked up with %s %s, want GET %s", look.method, look.uri, s.lookup)
				}
			})
		}
	}
}

// TestUnknownAsErrorSurvivesAnSDK: with UnknownAsError an order answered 5xx
// comes back as an *UnknownOutcomeError from http.Client.Do, which SDKs
// return as they got it (an SDK that reads the 5xx body itself would hide
// it), and OnOrder is told the same verdict.
func TestUnknownAsErrorSurvivesAnSDK(t *testing.T) {
	handler := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html>bad gateway</html>")
	}
	eu := newServer(t, "eu", true, handler)
	us := newServer(t, "us", true, handler)
	h := newHarness(t, eu.URL, us.URL, nil)
	var ev rest.OrderEvent
	c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), Rules: rest.AlpacaRules(), UnknownAsError: true,
		OnOrder: func(e rest.OrderEvent) { ev = e }})
	resp, err := c.Post("https://broker.invalid/v2/orders", "application/json", strings.NewReader(`{"symbol":"AAPL","client_order_id":"u-1"}`))
	if resp != nil {
		resp.Body.Close()
		t.Fatal("a response was returned with UnknownAsError")
	}
	var uo *rest.UnknownOutcomeError
	if !errors.As(err, &uo) || uo.OrderID != "u-1" || uo.StatusCode != http.StatusBadGateway || !errors.Is(err, pathdialer.ErrUnknownOutcome) {
		t.Fatalf("err = %v, want an *UnknownOutcomeError for u-1, HTTP 502", err)
	}
	if v := rest.Outcome(nil, err); v.Kind != rest.Unknown || v.MayResend {
		t.Fatalf("Outcome = %+v", v)
	}
	if ev.OrderID != "u-1" || ev.Verdict.Kind != rest.Unknown || ev.Endpoint != "eu" {
		t.Fatalf("OnOrder got %+v", ev)
	}
	if rt.Stats().Unknown.Load() != 1 || len(h.path.Unknown()) != 1 {
		t.Fatalf("unknown: stats %d, path %d; want 1, 1", rt.Stats().Unknown.Load(), len(h.path.Unknown()))
	}
}

// TestGateWaitBoundsAHeldOrderAndKeepsItTyped: an SDK that takes no context
// (Alpaca's) and an http.Client without Timeout: GateWait bounds the wait at
// a held gate, and the error stays ErrNotSent (net/http's Client.Timeout
// would have turned it into text).
func TestGateWaitBoundsAHeldOrderAndKeepsItTyped(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, nil)
	h.gate = make(chan struct{})
	defer close(h.gate)
	var ev rest.OrderEvent
	c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), GateWait: 50 * time.Millisecond,
		OnOrder: func(e rest.OrderEvent) { ev = e }})
	h.down["eu"].Store(true)
	<-h.reconcile // the switch is done; reconcile is blocked, the gate held
	_, err := order(t, context.Background(), c, "g-1")
	if !errors.Is(err, rest.ErrNotSent) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrNotSent wrapping context.DeadlineExceeded", err)
	}
	if v := rest.Outcome(nil, err); v.Kind != rest.NotSent || !v.MayResend || ev.Verdict.Kind != rest.NotSent || ev.OrderID != "g-1" {
		t.Fatalf("Outcome = %+v, OnOrder = %+v; want not sent", v, ev)
	}
	if n := eu.n("POST /v1/orders") + us.n("POST /v1/orders"); n != 0 {
		t.Fatalf("the order went out (%d)", n)
	}
	if s, n := rt.Stats().Submissions.Load(), rt.Stats().NotSent.Load(); s != 1 || n != 1 {
		t.Fatalf("Stats.Submissions = %d, NotSent = %d; want 1, 1 (every submission ends in one count)", s, n)
	}
}

// TestClientTimeoutAtTheGateIsStillNotSent: an SDK handed an http.Client
// with a Timeout (Alpaca's own default is 10 s): when it fires while the
// order waits at a held gate, net/http replaces the transport's ErrNotSent
// with a text error; Outcome still tells "not sent" from "unknown".
func TestClientTimeoutAtTheGateIsStillNotSent(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, nil)
	h.gate = make(chan struct{})
	defer close(h.gate)
	_, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})
	c := &http.Client{Transport: rt, Timeout: 50 * time.Millisecond}
	h.down["eu"].Store(true)
	<-h.reconcile // the gate is held
	_, err := order(t, context.Background(), c, "t-1")
	if err == nil {
		t.Fatal("the held order returned no error")
	}
	// Which of the two net/http returns depends on whether its timer or the
	// context's fired first: typed (ErrNotSent) or text. Outcome reads both;
	// the text form alone is checked in TestOutcomeReadsNotSentBehindClientTimeout.
	t.Logf("typed: %v; err: %v", errors.Is(err, rest.ErrNotSent), err)
	if v := rest.Outcome(nil, err); v.Kind != rest.NotSent || !v.MayResend {
		t.Fatalf("Outcome = %+v, want not sent (the order never left the gate)", v)
	}
}

// A request marked WithSubmission that matches an order rule is identified
// as the rule says; one marked that matches none uses Options.OrderID.
func TestMarkedSubmissionKeepsItsRulesID(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, nil)
	var ids []string
	c, _ := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), Rules: rest.AlpacaRules(),
		OnOrder: func(e rest.OrderEvent) { ids = append(ids, e.OrderID) }})
	ctx := rest.WithSubmission(context.Background(), true)
	for _, u := range []string{"https://broker.invalid/v2/orders/u-1", "https://broker.invalid/v2/other/x"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, u, nil)
		req.Header.Set("X-Client-Order-ID", "hdr-1")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(ids) != 2 || ids[0] != rest.VenueOrderID("u-1") || ids[1] != "hdr-1" {
		t.Fatalf("tracked as %q, want [%q hdr-1]", ids, rest.VenueOrderID("u-1"))
	}
}
