package rest_test

import (
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
