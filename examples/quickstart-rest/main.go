// Command quickstart-rest places one order over REST through the path brokerpath chooses.
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
	"github.com/brokerpath/brokerpath/venue"
)

func main() {
	ctx, name := context.Background(), "alpaca" // the venue by name: what it guarantees, how its orders are looked up
	auth := http.Header{"APCA-API-KEY-ID": {os.Getenv("APCA_API_KEY_ID")}, "APCA-API-SECRET-KEY": {os.Getenv("APCA_API_SECRET_KEY")}}
	cfg := pathdialer.DefaultConfig()
	for i, u := range strings.Fields(os.Getenv("BROKER_URLS")) { // the broker's base URLs, primary first
		n := fmt.Sprint("path", i)
		cfg.Endpoints = append(cfg.Endpoints, pathdialer.Endpoint{Name: n, Region: n, Priority: i, Primary: i == 0, Services: map[string]string{"rest": u}})
	}
	cfg.Venue = must(venue.ByName(name))
	cfg.Probe = must(rest.Probe(rest.ProbeOptions{Path: "/v2/account", Header: auth})) // health: an authenticated call on the trade path
	lookup := must(rest.VenueReconcileOptions(name, "https://broker", nil))
	lookup.Header = auth
	rec := must(rest.NewReconciler(lookup))
	cfg.Fencer, cfg.Reconcile = pathdialer.LocalFenceOnly, rec.Reconcile // this process alone trades the account
	path := must(pathdialer.New(cfg))
	defer path.Close()
	rt := must(rest.NewTransport(path, rest.Options{Hosts: []string{"broker"}})) // https://broker/… goes to the active path
	rec.SendLookupsVia(rt)
	id := fmt.Sprint("qs-", time.Now().UnixNano()) // a client order ID of its own: the broker books it once
	order := `{"client_order_id":"` + id + `","symbol":"AAPL","qty":"1","side":"buy","type":"market","time_in_force":"day"}`
	req := must(http.NewRequestWithContext(ctx, "POST", "https://broker/v2/orders", strings.NewReader(order)))
	req.Header = auth
	if err := path.Start(ctx); err != nil {
		log.Fatal(err)
	}
	resp := must((&http.Client{Transport: rt}).Do(req)) // never resent: an unknown outcome is looked up
	fmt.Println("order", id, resp.Status)
	resp.Body.Close()
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}
