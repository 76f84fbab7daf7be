package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

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
