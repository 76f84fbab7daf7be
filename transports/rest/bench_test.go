package rest_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brokerpath/brokerpath/transports/rest"
)

// Requests per second through rest.Transport against a bare http.Transport to the
// same local HTTP/2 server, in the same run. Compare ns/op of the bare and
// brokerpath sub-benchmarks (ratio = bare ns/op ÷ brokerpath ns/op; target ≥ 0.95).
func BenchmarkRoundTrip(b *testing.B) {
	t := &testing.T{}
	eu := newServer(t, "eu", true, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	})
	defer eu.Close()
	us := newServer(t, "us", true, nil)
	defer us.Close()
	h := newHarness(t, eu.URL, us.URL, nil)
	defer h.path.Close()
	tr, err := rest.NewTransport(h.path, rest.Options{TLSConfig: rootsOf(eu, us), Hosts: []string{"broker.invalid"}})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	bare := &http.Transport{TLSClientConfig: rootsOf(eu), ForceAttemptHTTP2: true}
	defer bare.CloseIdleConnections()
	var seq atomic.Uint64

	run := func(b *testing.B, rt http.RoundTripper, base string, submit bool) {
		c := &http.Client{Transport: rt}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				var req *http.Request
				if submit {
					id := strconv.FormatUint(seq.Add(1), 10)
					req, _ = http.NewRequestWithContext(context.Background(), http.MethodPost, base+"/v1/orders", strings.NewReader(`{"client_order_id":"`+id+`","qty":1}`))
				} else {
					req, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, base+"/v1/account", nil)
				}
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	// Alternate the two so neither always runs on a warmer (or more loaded) machine.
	for i := range 2 {
		if i%2 == 0 {
			b.Run("read/bare", func(b *testing.B) { run(b, bare, eu.URL, false) })
			b.Run("read/brokerpath", func(b *testing.B) { run(b, tr, "https://broker.invalid", false) })
			b.Run("submit/bare", func(b *testing.B) { run(b, bare, eu.URL, true) })
			b.Run("submit/brokerpath", func(b *testing.B) { run(b, tr, "https://broker.invalid", true) })
		} else {
			b.Run("read/brokerpath", func(b *testing.B) { run(b, tr, "https://broker.invalid", false) })
			b.Run("read/bare", func(b *testing.B) { run(b, bare, eu.URL, false) })
			b.Run("submit/brokerpath", func(b *testing.B) { run(b, tr, "https://broker.invalid", true) })
			b.Run("submit/bare", func(b *testing.B) { run(b, bare, eu.URL, true) })
		}
	}
}

// The default order-ID lookup on the body an application typically sends (an
// in-memory JSON object, as http.NewRequest wraps it): it runs on every
// submission, so it should cost well under a microsecond and, for a string
// body, allocate nothing (the ID is a substring of the body).
func BenchmarkDefaultOrderID(b *testing.B) {
	const body = `{"client_order_id":"o-123456","symbol":"EURUSD","side":"buy","type":"market","qty":"1"}`
	for _, c := range []struct {
		name string
		mk   func() io.Reader
	}{
		{"strings.Reader", func() io.Reader { return strings.NewReader(body) }},
		{"bytes.Reader", func() io.Reader { return bytes.NewReader([]byte(body)) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			req, err := http.NewRequest(http.MethodPost, "https://broker.invalid/v1/orders", c.mk())
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			b.ReportAllocs()
			for b.Loop() {
				id, err := rest.DefaultOrderID(req)
				if err != nil || id != "o-123456" {
					b.Fatalf("DefaultOrderID = %q, %v", id, err)
				}
			}
		})
	}
}
