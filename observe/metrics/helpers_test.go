package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/brokerpath/brokerpath/observe"
	"github.com/brokerpath/brokerpath/observe/metrics"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// secretKey and secretOrder must never appear in a label value.
const (
	secretKey   = "sk_live_3f9a7c1e0b"
	secretOrder = "ORD-7731-SECRET"
)

// harness is a Path on two endpoints whose probes the test switches with atomics,
// with a Metrics chained into OnEvent and registered in a pedantic registry
// (which checks that every collected metric was described).
type harness struct {
	path   *pathdialer.Path
	m      *metrics.Metrics
	reg    *prometheus.Registry
	down   map[string]*atomic.Bool
	events atomic.Int64
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{m: metrics.New(), reg: prometheus.NewPedanticRegistry(),
		down: map[string]*atomic.Bool{"eu": {}, "us": {}}}
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west-1", Primary: true, Priority: 0,
			Services: map[string]string{"rest": "https://api-eu.broker.example/?apikey=" + secretKey}},
		{Name: "us", Region: "us-east-1", Priority: 10,
			Services: map[string]string{"rest": "https://api-us.broker.example/?apikey=" + secretKey}},
	}
	cfg.Probe = func(ctx context.Context, ep pathdialer.Endpoint) error {
		if h.down[ep.Name].Load() {
			return fmt.Errorf("probe %s with key %s: %w", ep.Name, secretKey, errors.New("connection refused"))
		}
		return nil
	}
	cfg.ProbeInterval = 20 * time.Millisecond
	cfg.ProbeTimeout = 10 * time.Millisecond
	cfg.ProbeJitter = 0
	cfg.Engine.FailureThreshold = 2
	cfg.Engine.MaxHealthAge = time.Second
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	cfg.OnEvent = observe.Tee(h.m.OnEvent, func(pathdialer.Event) { h.events.Add(1) })
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.path = p
	h.m.Watch(p)
	h.reg.MustRegister(h.m)
	return h
}

// until lets fake time pass (inside a synctest bubble) one probe interval at a
// time until cond holds, for at most 5 s of fake time.
func (h *harness) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 250 {
		if cond() {
			return
		}
		<-time.After(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; snapshot %+v", what, h.path.Snapshot())
}

// value returns the value of the sample of family name whose labels include
// labels (counter, gauge, or a histogram's count).
func (h *harness) value(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := sample(t, h.reg, name, labels)
	if !ok {
		t.Fatalf("no sample %s%v", name, labels)
	}
	return v
}

func sample(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// labelValues returns every label name=value pair gathered, sorted.
func labelValues(t *testing.T, g prometheus.Gatherer) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				seen[lp.GetName()+"="+lp.GetValue()] = true
			}
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// lint fails the test on any promlint problem.
func lint(t *testing.T, c prometheus.Collector) {
	t.Helper()
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func families(t *testing.T, g prometheus.Gatherer) []*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func hasSecret(s string) bool {
	return strings.Contains(s, secretKey) || strings.Contains(s, secretOrder)
}
