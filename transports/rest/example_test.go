package rest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// A broker with two regions (two local TLS servers sharing one book), an
// order sent through the REST transport with its fencing token, and the REST
// reconciler settling orders by client order ID.
func Example() {
	var mu sync.Mutex
	book := map[string]string{} // client order ID → status: one book for both regions
	region := func(name string) *httptest.Server {
		return httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Region", name)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.Method == http.MethodPost && r.URL.Path == "/v1/orders":
				var o struct {
					ID string `json:"client_order_id"`
				}
				_ = json.NewDecoder(r.Body).Decode(&o)
				book[o.ID] = "filled"
				fmt.Printf("broker: order %s booked in %s under token %s\n", o.ID, name, r.Header.Get("X-Fencing-Token"))
				w.WriteHeader(http.StatusCreated)
			case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/orders/"):
				id := strings.TrimPrefix(r.URL.Path, "/v1/orders/")
				st, ok := book[id]
				if !ok {
					http.Error(w, `{"error":"no such order"}`, http.StatusNotFound)
					return
				}
				_ = json.NewEncoder(w).Encode(map[string]string{"client_order_id": id, "status": st})
			default:
				w.WriteHeader(http.StatusOK)
			}
		}))
	}
	eu, us := region("eu"), region("us")
	defer eu.Close()
	defer us.Close()
	roots := x509.NewCertPool()
	roots.AddCert(eu.Certificate())
	roots.AddCert(us.Certificate())

	// The reconciler is created before the Path and bound to the transport after.
	rec, err := rest.NewReconciler(rest.ReconcileOptions{
		URL:     "https://broker.example/v1/orders/" + rest.OrderIDPlaceholder,
		IDField: "client_order_id",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{"rest": eu.URL}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"rest": us.URL}},
	}
	cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil } // use rest.Probe in production
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = rec.Reconcile
	path, err := pathdialer.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := path.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	defer path.Close()

	rt, err := rest.NewTransport(path, rest.Options{
		TLSConfig:   &tls.Config{RootCAs: roots},
		Hosts:       []string{"broker.example"}, // the name the application writes for the broker
		TokenHeader: "X-Fencing-Token",          // only if your broker or gateway checks tokens
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.CloseIdleConnections()
	rec.SendLookupsVia(rt)
	client := &http.Client{Transport: rt}

	// The application writes the broker's name: the transport sends it to the active region.
	resp, err := client.Post("https://broker.example/v1/orders", "application/json",
		strings.NewReader(`{"client_order_id":"ex-1","symbol":"EURUSD","side":"buy","qty":"1","type":"market"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	fmt.Println("client:", resp.Status, "from", resp.Header.Get("X-Region"))

	// What a switch hands the reconciler: orders whose fate is unknown.
	settled, err := rec.Reconcile(context.Background(), pathdialer.Reconciliation{From: "eu", To: "us", Tickets: []pathdialer.TicketInfo{
		{OrderID: "ex-1", Service: "rest", Endpoint: "eu", State: pathdialer.TicketUnknown},
		{OrderID: "ex-2", Service: "rest", Endpoint: "eu", State: pathdialer.TicketUnknown},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range settled {
		fmt.Println("reconciled:", s.OrderID, s.Fate)
	}
	// Output:
	// broker: order ex-1 booked in eu under token 0
	// client: 201 Created from eu
	// reconciled: ex-1 FILLED
	// reconciled: ex-2 NOT_RECEIVED
}

// What identifies a request the venue's SDK sends: go-binance cancels with
// DELETE /api/v3/order and the order in the form body, here by Binance's own
// orderId. The cancel is tracked under that ID, and its outcome is the
// order's state, looked up by it (ReconcileOptions.VenueURL).
func ExampleBinanceSpotRules() {
	req, _ := http.NewRequest(http.MethodDelete, "https://api.binance.com/api/v3/order?signature=5f2c",
		strings.NewReader("orderId=28457&symbol=BTCUSDT&timestamp=1700000000000"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, r := range rest.BinanceSpotRules().Orders {
		if r.Method == req.Method && r.Path == req.URL.Path {
			id, _ := r.OrderID(req)
			venueID, ok := rest.ParseVenueOrderID(id)
			fmt.Println(id, venueID, ok)
		}
	}
	// Output: venue-order-id:28457 28457 true
}
