package simbroker

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Alpaca's paths serve the same book with Alpaca's headers: an order placed
// under POST /v2/orders is found by the by-client-order-ID lookup in every
// region and under /v1; a wrong secret is 401; a lookup without an ID is
// 422; an unknown ID is 404.
func TestAlpacaPathsServeTheSameBook(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	c := client(t, b, true, 5*time.Second)
	alpaca := func(method, url, secret, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("APCA-API-KEY-ID", "me")
		req.Header.Set("APCA-API-SECRET-KEY", secret)
		r, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer r.Body.Close()
		got, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(got)
	}
	eu, us := b.Region("eu"), b.Region("us")
	order := `{"client_order_id":"a-1","symbol":"AAPL","qty":"1","side":"buy","type":"market","time_in_force":"day"}`
	if code, body := alpaca("POST", eu.RESTURL()+"/v2/orders", "wrong", order); code != http.StatusUnauthorized {
		t.Fatalf("POST /v2/orders with a wrong secret: %d %s, want 401", code, body)
	}
	if n := len(b.Book()); n != 0 {
		t.Fatalf("an unauthorized order was booked: %d orders", n)
	}
	if code, body := alpaca("POST", eu.RESTURL()+"/v2/orders", b.APIKey(), order); code != http.StatusCreated {
		t.Fatalf("POST /v2/orders: %d %s, want 201", code, body)
	}
	for _, rg := range []*Region{eu, us} {
		code, body := alpaca("GET", rg.RESTURL()+"/v2/orders:by_client_order_id?client_order_id=a-1", b.APIKey(), "")
		if code != http.StatusOK || !strings.Contains(body, `"client_order_id":"a-1"`) || !strings.Contains(body, `"status":"filled"`) {
			t.Fatalf("%s lookup of a-1: %d %s, want 200 with the filled order", rg.Name(), code, body)
		}
	}
	if r := mustDo(t, c, "GET", us.RESTURL()+"/v1/orders/a-1", b.APIKey(), nil); r.code != http.StatusOK {
		t.Fatalf("GET /v1/orders/a-1: %d %s, want the order placed under /v2", r.code, r.body)
	}
	if code, body := alpaca("GET", eu.RESTURL()+"/v2/orders:by_client_order_id", b.APIKey(), ""); code != http.StatusUnprocessableEntity || !strings.Contains(body, "client_order_id") {
		t.Fatalf("lookup without client_order_id: %d %s, want 422 naming it", code, body)
	}
	if code, body := alpaca("GET", eu.RESTURL()+"/v2/orders:by_client_order_id?client_order_id=nope", b.APIKey(), ""); code != http.StatusNotFound {
		t.Fatalf("lookup of an unknown ID: %d %s, want 404", code, body)
	}
	if code, body := alpaca("GET", eu.RESTURL()+"/v2/account", b.APIKey(), ""); code != http.StatusOK {
		t.Fatalf("GET /v2/account: %d %s, want 200", code, body)
	}
	if n := len(b.Book()); n != 1 {
		t.Fatalf("the book has %d orders, want 1", n)
	}
}
