package metrics_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/brokerpath/brokerpath/observe"
	"github.com/brokerpath/brokerpath/observe/metrics"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// A Path watched by Prometheus: the hook chained before pathdialer.New, the
// Path watched after, one registry, one handler.
func Example() {
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Priority: 0, Primary: true, Services: map[string]string{"rest": "https://eu.broker.example"}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"rest": "https://us.broker.example"}},
	}
	cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil } // use rest.Probe in production
	cfg.Fencer, cfg.Reconcile = pathdialer.LocalFenceOnly, pathdialer.NoReconcile

	m := metrics.New()
	cfg.OnEvent = observe.Tee(m.OnEvent)
	path, err := pathdialer.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer path.Close()
	m.Watch(path)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	// What a scrape shows: one line per endpoint, labelled by name and region.
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "brokerpath_endpoint_active{") {
			fmt.Println(line)
		}
	}
	// Output:
	// brokerpath_endpoint_active{endpoint="eu",region="eu-west"} 1
	// brokerpath_endpoint_active{endpoint="us",region="us-east"} 0
}
