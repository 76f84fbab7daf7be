package rest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// A ticket whose decision lapsed between Acquire and the send (a process
// paused past its lease) never writes the order: RoundTrip returns ErrNotSent
// wrapping pathdialer.ErrTicketExpired, the server sees nothing, and the
// ticket is finished (nothing in flight, nothing unknown).
func TestLapsedTicketIsNotSent(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	probes := pathtest.NewProbes("eu", "us")
	path := pathtest.Start(t, pathtest.FastConfig([]pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{"rest": srv.URL}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"rest": srv.URL}},
	}, probes))
	tr, err := NewTransport(path, Options{TLSConfig: &tls.Config{RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	var lapse atomic.Bool
	tr.acquire = func(ctx context.Context, tk *pathdialer.Ticket, service, orderID string) error {
		err := path.AcquireInto(ctx, tk, service, orderID)
		if err == nil && lapse.Load() {
			tk.ValidUntil = time.Now().Add(-time.Millisecond) // lapsed while we waited
		}
		return err
	}
	c := &http.Client{Transport: tr}
	send := func(id string) error {
		resp, err := c.Post(srv.URL+"/v1/orders", "application/json", strings.NewReader(`{"client_order_id":"`+id+`"}`))
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := send("ok-1"); err != nil || posts.Load() != 1 {
		t.Fatalf("valid ticket: err %v, posts %d", err, posts.Load())
	}
	lapse.Store(true)
	err = send("late-1")
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, pathdialer.ErrTicketExpired) {
		t.Fatalf("err = %v, want ErrNotSent wrapping pathdialer.ErrTicketExpired", err)
	}
	if posts.Load() != 1 {
		t.Fatalf("the lapsed order reached the server (%d posts)", posts.Load())
	}
	if u := path.Unknown(); len(u) != 0 {
		t.Fatalf("a lapsed order is not an unknown outcome: %+v", u)
	}
	if st := tr.Stats(); st.NotSent.Load() != 1 || st.Acknowledged.Load() != 1 {
		t.Fatalf("stats: not sent %d, acknowledged %d", st.NotSent.Load(), st.Acknowledged.Load())
	}
}
