package rest

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// instant answers every request at once, in memory: what remains of a round
// trip through it is the transport's own work.
type instant struct{}

var instantBody = http.NoBody

func (instant) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusCreated, ProtoMajor: 1, ProtoMinor: 1, Body: instantBody, Request: r, ContentLength: 0}, nil
}

// What rest.Transport adds to a request, without the network: each endpoint's
// http.Transport hands https requests to an in-memory responder (as a
// registered protocol), so "bare" is that http.Transport called directly and
// "brokerpath" the same call through RoundTrip (order: ID, ticket, gate, report;
// read: breaker, report). The difference is the transport's own cost per
// request (CPU and allocations), the part of the end-to-end comparison
// (make bench-rest) that brokerpath controls.
//
// "warm" runs requests back to back (ns/op includes making the request);
// "parallel" runs them from many goroutines on every core.
// "cold" evicts the CPU caches before each request, as the wait for the
// network and other processes do in a real client, and times the round trip
// alone: there every cache line and instruction the transport touches costs a
// miss, which is most of its cost end to end.
func BenchmarkTransportOverhead(b *testing.B) {
	// Default timings and a probe that always passes: nothing may move the
	// active endpoint while the samples run (checked at the end).
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{"rest": "https://eu.broker.invalid"}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"rest": "https://us.broker.invalid"}},
	}
	cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	path := pathtest.Start(b, cfg)
	defer func() {
		if ep, _ := path.ReadEndpoint(); ep.Name != "eu" {
			b.Fatalf("requests went to %q during the run: the figures mix two endpoints", ep.Name)
		}
	}()
	tr, err := NewTransport(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, ec := range tr.eps {
		ec.t1.RegisterProtocol("https", instant{})
	}
	bare := tr.eps["eu"].t1
	var seq atomic.Uint64
	var evict []byte // larger than the caches; allocated by the first cold run
	newReq := func(post bool) *http.Request {
		if !post {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "https://eu.broker.invalid/v1/account", nil)
			return req
		}
		id := strconv.FormatUint(seq.Add(1), 10)
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "https://eu.broker.invalid/v1/orders",
			strings.NewReader(`{"client_order_id":"o-`+id+`","symbol":"EURUSD","side":"buy","type":"market","qty":"1"}`))
		req.Header.Set("Content-Type", "application/json")
		return req
	}
	// roundTrip sends req and reads its answer to the end, as a caller does.
	roundTrip := func(rt http.RoundTripper, req *http.Request) error {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
		post bool
	}{
		{"order/bare", bare, true}, {"order/brokerpath", tr, true},
		{"read/bare", bare, false}, {"read/brokerpath", tr, false},
	} {
		b.Run("warm/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := roundTrip(c.rt, newReq(c.post)); err != nil {
					b.Fatal(err)
				}
			}
		})
		// Parallel: 16 requests at a time per core, as the 32-client cells of
		// make bench-rest run them: what the transport shares between
		// requests (counters, locks, clocks) costs most here. ns/op is wall
		// time per request over all cores.
		b.Run("parallel/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := roundTrip(c.rt, newReq(c.post)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		// Cold: a fixed number of samples, each after evicting the caches (which
		// takes far longer than the request, so it is not left to b.N), timed
		// one by one; ns/op is their mean.
		b.Run("cold/"+c.name, func(b *testing.B) {
			if evict == nil {
				evict = make([]byte, 16<<20) // half the last-level cache, 8 times the others
			}
			const samples = 400
			var total time.Duration
			for range samples {
				for i := 0; i < len(evict); i += 64 {
					evict[i]++
				}
				req := newReq(c.post) // as a caller would: just made, in the cache
				start := time.Now()
				resp, err := c.rt.RoundTrip(req) // timed alone: the answer is read after
				total += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			for b.Loop() { // the samples above are the measurement
			}
			b.ReportMetric(float64(total.Nanoseconds())/samples, "ns/op")
		})
	}
}
