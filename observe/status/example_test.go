package status_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/brokerpath/brokerpath/observe"
	"github.com/brokerpath/brokerpath/observe/status"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// The status page of a Path, and what a script reads from its JSON.
func Example() {
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Priority: 0, Primary: true, Services: map[string]string{"rest": "https://eu.broker.example"}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"rest": "https://us.broker.example"}},
	}
	cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil } // use rest.Probe in production
	cfg.Fencer, cfg.Reconcile = pathdialer.LocalFenceOnly, pathdialer.NoReconcile

	rec := status.NewRecorder()
	cfg.OnEvent = observe.Tee(rec.OnEvent) // before pathdialer.New
	path, err := pathdialer.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer path.Close()
	if err := path.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/status/", http.StripPrefix("/status", status.Handler(path, status.Options{
		Recorder:   rec, // and REST, FIX, Stream, Ticks: each adds its part of the page
		MetricsURL: "/metrics",
	})))

	// On call opens /status/ in a browser; a script reads /status/status.json.
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/status/status.json", nil))
	var page struct {
		Active    string `json:"active"`
		Primary   string `json:"primary"`
		OrderFlow string `json:"order_flow"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil {
		log.Fatal(err)
	}
	fmt.Println(w.Code, w.Header().Get("Content-Type"))
	fmt.Println("orders go to", page.Active, "(primary "+page.Primary+"), flow", page.OrderFlow)
	// Output:
	// 200 application/json; charset=utf-8
	// orders go to eu (primary eu), flow OPEN
}
