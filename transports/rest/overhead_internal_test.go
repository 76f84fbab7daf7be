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
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
		post bool
	}{
		{"order/bare", bare, true}, {"order/brokerpath", tr, true},
		{"read/bare", bare, false}, {"read/brokerpath", tr, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var req *http.Request
				if c.post {
					id := strconv.FormatUint(seq.Add(1), 10)
					req, _ = http.NewRequestWithContext(context.Background(), http.MethodPost, "https://eu.broker.invalid/v1/orders",
						strings.NewReader(`{"client_order_id":"o-`+id+`","symbol":"EURUSD","side":"buy","type":"market","qty":"1"}`))
					req.Header.Set("Content-Type", "application/json")
				} else {
					req, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, "https://eu.broker.invalid/v1/account", nil)
				}
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
