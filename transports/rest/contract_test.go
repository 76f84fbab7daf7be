package rest_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/transports/rest"
)

// protocols runs f over HTTP/1.1 and HTTP/2 (net/http's own servers on loopback).
func protocols(t *testing.T, f func(t *testing.T, h2 bool)) {
	for _, h2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "http1", true: "http2"}[h2], func(t *testing.T) { f(t, h2) })
	}
}

// The RoundTripper contract: a response obtained is returned with err == nil
// and its body intact, even a 5xx to an order; the order is still handed to
// reconciliation as unknown.
func TestContractOrderAnswered5xxKeepsItsBodyAndGoesToReconcile(t *testing.T) {
	const words = `{"code":"insufficient_funds","message":"insufficient funds for order o-5xx"}`
	protocols(t, func(t *testing.T, h2 bool) {
		eu := newServer(t, "eu", h2, func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, words)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		us := newServer(t, "us", h2, nil)
		h := newHarness(t, eu.URL, us.URL, nil)
		c, _ := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})
		resp, err := c.Do(orderRequest(t, eu.URL, "o-5xx"))
		if err != nil {
			t.Fatalf("RoundTrip obtained a response but returned err = %v", err)
		}
		got, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr != nil || string(got) != words || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("got HTTP %d body %q (%v), want 503 with the broker's words %q", resp.StatusCode, got, rerr, words)
		}
		if v := rest.Outcome(resp, err); v.Kind != rest.Unknown || v.MayResend || v.StatusCode != 503 || v.Order == nil || v.Order.OrderID != "o-5xx" || v.Order.Endpoint != "eu" {
			t.Fatalf("verdict %+v, want unknown (never resent) for order o-5xx on eu", v)
		}
		unknown := h.path.Unknown()
		if len(unknown) != 1 || unknown[0].OrderID != "o-5xx" {
			t.Fatalf("the order answered 5xx was not handed to reconciliation: unknown tickets %+v", unknown)
		}
	})
}

// A request to a host that is not the broker's never reaches the broker.
func TestContractForeignHostIsRefused(t *testing.T) {
	protocols(t, func(t *testing.T, h2 bool) {
		eu := newServer(t, "eu", h2, nil)
		us := newServer(t, "us", h2, nil)
		h := newHarness(t, eu.URL, us.URL, nil)
		c, _ := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			req, err := http.NewRequest(method, "https://api.example.com/v1/orders",
				strings.NewReader(`{"client_order_id":"o-foreign"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("%s to api.example.com answered HTTP %d from %q; want it refused", method, resp.StatusCode, resp.Header.Get("X-Region"))
			}
			if !strings.Contains(err.Error(), "api.example.com") {
				t.Errorf("the refusal does not name the host: %v", err)
			}
		}
		if n := eu.n("GET /v1/orders") + eu.n("POST /v1/orders"); n != 0 {
			t.Fatalf("the broker received %d requests meant for another host", n)
		}
	})
}

func orderRequest(t *testing.T, base, id string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/orders", strings.NewReader(`{"client_order_id":"`+id+`","qty":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// A host that is not the broker's goes, untouched, to the transport the user
// named; the broker never sees it.
func TestContractForeignHostGoesToOther(t *testing.T) {
	protocols(t, func(t *testing.T, h2 bool) {
		eu := newServer(t, "eu", h2, nil)
		us := newServer(t, "us", h2, nil)
		other := newServer(t, "other", h2, nil)
		h := newHarness(t, eu.URL, us.URL, nil)
		base := &http.Transport{TLSClientConfig: rootsOf(other), ForceAttemptHTTP2: h2}
		t.Cleanup(base.CloseIdleConnections)
		c, _ := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), Other: base})
		// A POST without a client order ID: not an order, it is not the broker's.
		resp, err := c.Post(other.URL+"/v1/login", "application/json", strings.NewReader(`{"user":"u"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Region"); got != "other" || other.n("POST /v1/login") != 1 {
			t.Fatalf("answered by %q, other saw %d; want the request passed to Other unchanged", got, other.n("POST /v1/login"))
		}
		if n := eu.n("POST /v1/login") + us.n("POST /v1/login"); n != 0 || len(h.path.Unknown()) != 0 {
			t.Fatalf("the broker saw %d requests meant for another host", n)
		}
	})
}

// Writes that are not orders pass by rule, stated once in Options; orders
// keep taking tickets.
func TestContractNonOrderPostPassesByRule(t *testing.T) {
	protocols(t, func(t *testing.T, h2 bool) {
		eu := newServer(t, "eu", h2, nil)
		us := newServer(t, "us", h2, nil)
		h := newHarness(t, eu.URL, us.URL, nil)
		rules := rest.AlpacaRules()
		rules.Orders = append(rules.Orders, rest.BinanceSpotRules().Orders[0])
		rules.NotOrders = append(rules.NotOrders,
			rest.Rule{Method: http.MethodPost, Path: "/v2/login"},
			rest.Rule{Method: http.MethodPost, Path: "/v2/stream/*"})
		c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), Hosts: []string{"broker"}, Rules: rules})
		for _, w := range []struct{ method, path string }{
			{http.MethodDelete, "/v2/orders"},     // cancel-all (preset)
			{http.MethodPost, "/v2/login"},        // a login
			{http.MethodPost, "/v2/stream/token"}, // a websocket token request
		} {
			req, _ := http.NewRequest(w.method, "https://broker"+w.path, strings.NewReader(`{}`))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", w.method, w.path, err)
			}
			resp.Body.Close()
			if v := rest.Outcome(resp, err); v.Kind != rest.Accepted || eu.n(w.method+" "+w.path) != 1 {
				t.Fatalf("%s %s: verdict %+v, broker saw %d", w.method, w.path, v, eu.n(w.method+" "+w.path))
			}
		}
		if n := rt.Stats().Submissions.Load(); n != 0 {
			t.Fatalf("%d non-orders were taken for orders", n)
		}
		// An order by rule still needs its ID (here a rule that assigns
		// none: the Binance preset's order) and takes a ticket.
		req, _ := http.NewRequest(http.MethodPost, "https://broker/api/v3/order", strings.NewReader(`qty=1`))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		_, err := c.Do(req)
		if !errors.Is(err, rest.ErrNoOrderID) {
			t.Fatalf("an order without ID: err = %v, want ErrNoOrderID", err)
		}
		if v := rest.Outcome(nil, err); v.Kind != rest.NotSent || !v.MayResend {
			t.Fatalf("verdict %+v, want not sent", v)
		}
		resp, err := c.Do(orderRequest(t, "https://broker/v2", "o-rule"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if v := rest.Outcome(resp, err); v.Kind != rest.Accepted || v.MayResend || rt.Stats().Acknowledged.Load() != 1 {
			t.Fatalf("order verdict %+v, acknowledged %d", v, rt.Stats().Acknowledged.Load())
		}
	})
}

func TestNewTransportRefusesBadHostsAndRules(t *testing.T) {
	eu := newServer(t, "eu", false, nil)
	us := newServer(t, "us", false, nil)
	h := newHarness(t, eu.URL, us.URL, nil)
	for _, o := range []rest.Options{
		{Hosts: []string{"https://broker"}},
		{Hosts: []string{""}},
		{Rules: rest.Rules{Orders: []rest.Rule{{Method: "POST", Path: "v2/orders"}}}},
		{Rules: rest.Rules{NotOrders: []rest.Rule{{Method: "post", Path: "/v2/orders"}}}},
		{Rules: rest.Rules{NotOrders: []rest.Rule{{Path: "/v2/[orders"}}}},
	} {
		if _, err := rest.NewTransport(h.path, o); !errors.Is(err, rest.ErrInvalidOptions) {
			t.Errorf("NewTransport(%+v) err = %v, want ErrInvalidOptions", o, err)
		}
	}
}
