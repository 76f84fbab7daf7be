package rest

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

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
// "warm" runs requests back to back. "cold" evicts the CPU caches before each
// request (outside the timer), as the wait for the network and other processes
// do in a real client: there every cache line and instruction the transport
// touches costs a miss, which is most of its cost end to end.
func BenchmarkTransportOverhead(b *testing.B) {
	probes := pathtest.NewProbes("eu", "us")
	path := pathtest.Start(b, pathtest.FastConfig([]pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{"rest": "https://eu.broker.invalid"}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"rest": "https://us.broker.invalid"}},
	}, probes))
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
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
		post bool
	}{
		{"order/bare", bare, true}, {"order/brokerpath", tr, true},
		{"read/bare", bare, false}, {"read/brokerpath", tr, false},
	} {
		for _, cold := range []bool{false, true} {
			name := "warm/" + c.name
			if cold {
				name = "cold/" + c.name
			}
			b.Run(name, func(b *testing.B) {
				if cold && evict == nil {
					evict = make([]byte, 16<<20)
				}
				b.ReportAllocs()
				for b.Loop() {
					if !cold {
						req := newReq(c.post)
						resp, err := c.rt.RoundTrip(req)
						if err != nil {
							b.Fatal(err)
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
						continue
					}
					b.StopTimer()
					for i := 0; i < len(evict); i += 64 {
						evict[i]++
					}
					req := newReq(c.post) // as a caller would: just made, in the cache
					b.StartTimer()
					resp, err := c.rt.RoundTrip(req)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
			})
		}
	}
}
