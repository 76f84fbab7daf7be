package rest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/pathdialer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is a real TLS server (HTTP/2 when h2 is true) that counts requests.
type server struct {
	*httptest.Server
	name   string
	mu     sync.Mutex
	count  map[string]int // method+path → requests
	orders map[string]int
}

func newServer(t *testing.T, name string, h2 bool, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{name: name, count: map[string]int{}, orders: map[string]int{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.count[r.Method+" "+r.URL.Path]++
		s.mu.Unlock()
		w.Header().Set("X-Region", name)
		if h != nil {
			h(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	s.EnableHTTP2 = h2
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *server) n(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count[key]
}

func rootsOf(servers ...*server) *tls.Config {
	pool := x509.NewCertPool()
	for _, s := range servers {
		pool.AddCert(s.Certificate())
	}
	return &tls.Config{RootCAs: pool}
}

// harness is a Path over two endpoints whose probe results the test controls.
type harness struct {
	path      *pathdialer.Path
	down      map[string]*atomic.Bool
	events    *pathtest.Events
	reconcile chan pathdialer.Reconciliation
	gate      chan struct{} // when non-nil, reconcile waits for it
}

func newHarness(t *testing.T, eu, us string, mutate func(*pathdialer.Config)) *harness {
	t.Helper()
	probes := pathtest.NewProbes("eu", "us")
	h := &harness{down: probes.Down, events: pathtest.NewEvents(), reconcile: make(chan pathdialer.Reconciliation, 16)}
	cfg := pathtest.FastConfig([]pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Priority: 0, Primary: true, Services: map[string]string{"rest": eu}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"rest": us}},
	}, probes)
	cfg.InflightGrace = 100 * time.Millisecond
	cfg.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
		h.reconcile <- r
		if h.gate != nil {
			select {
			case <-h.gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return nil, nil
	}
	cfg.OnEvent = h.events.Hook
	if mutate != nil {
		mutate(&cfg)
	}
	h.path = pathtest.Start(t, cfg)
	return h
}

// waitEvent waits (bounded) for an event of kind.
func (h *harness) waitEvent(t *testing.T, kind pathdialer.EventKind) pathdialer.Event {
	t.Helper()
	return h.events.Wait(t, h.path, kind)
}
