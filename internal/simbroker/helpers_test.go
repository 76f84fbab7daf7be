package simbroker

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Broker tests mostly wait: quickfix's session loop aligns to a whole
	// second before it can be stopped, so each Close may wait up to 1s.
	// Run more of them at once than GOMAXPROCS (an explicit -parallel wins).
	if f := flag.Lookup("test.parallel"); f != nil && f.Value.String() == f.DefValue {
		_ = flag.Set("test.parallel", "8")
	}
	goleak.VerifyTestMain(m)
}

var compSeq atomic.Int64

// testConfig returns a deterministic config (manual ticks) with CompIDs
// unique to the test, so brokers of parallel tests never share a FIX
// session ID in quickfix's process-wide registry.
func testConfig() Config {
	cfg := DefaultConfig()
	n := compSeq.Add(1)
	cfg.ClientCompID = fmt.Sprintf("CLIENT%d", n)
	cfg.BrokerCompID = fmt.Sprintf("BROKER%d", n)
	cfg.TickInterval = 0
	cfg.APIKey = "test-key-0123456789"
	return cfg
}

func startBroker(t *testing.T, mutate func(*Config)) *Broker {
	t.Helper()
	cfg := testConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	b, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// client returns an HTTP client trusting the broker; h2 selects HTTP/2
// (ALPN) or forces HTTP/1.1. Its idle connections are closed at cleanup.
func client(t *testing.T, b *Broker, h2 bool, timeout time.Duration) *http.Client {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: b.ClientTLSConfig(), ForceAttemptHTTP2: h2, DisableKeepAlives: false}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: timeout}
}

type resp struct {
	code   int
	header http.Header
	body   []byte
	proto  int
}

func (r resp) order(t *testing.T) Order {
	t.Helper()
	var o Order
	if err := json.Unmarshal(r.body, &o); err != nil {
		t.Fatalf("decode order from %s: %v", r.body, err)
	}
	return o
}

func do(c *http.Client, method, url, key string, body any) (resp, error) {
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return resp{}, err
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return resp{}, err
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	r, err := c.Do(req)
	if err != nil {
		return resp{}, err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	return resp{code: r.StatusCode, header: r.Header, body: b, proto: r.ProtoMajor}, err
}

func mustDo(t *testing.T, c *http.Client, method, url, key string, body any) resp {
	t.Helper()
	r, err := do(c, method, url, key, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

func marketOrder(id string) map[string]any {
	return map[string]any{"client_order_id": id, "symbol": "EURUSD", "side": "buy", "qty": "1000", "type": "market"}
}

func limitOrder(id string) map[string]any {
	return map[string]any{"client_order_id": id, "symbol": "EURUSD", "side": "sell", "qty": 5, "type": "limit", "price": "1.2"}
}

// waitFor polls cond until it holds or 5s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-time.After(5 * time.Millisecond)
	}
}
