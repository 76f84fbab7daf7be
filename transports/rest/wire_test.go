package rest_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// countingConn counts the writes that reach the TCP connection (one TLS record
// or more each).
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// Over HTTP/1.1 an order's headers and body leave in one write (one TLS record,
// one syscall), as with a bare net/http Transport given an in-memory body: the
// transport must not hide the body from net/http behind a type of its own.
func TestH1OrderHeadersAndBodyLeaveInOneWrite(t *testing.T) {
	eu := newServer(t, "eu", false, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	})
	us := newServer(t, "us", false, nil)
	var writes atomic.Int64
	h := newHarness(t, eu.URL, us.URL, func(c *pathdialer.Config) {
		d := &net.Dialer{}
		c.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{conn, &writes}, nil
		}
	})
	c, _ := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})
	resp, err := c.Get("https://broker.invalid/v1/account") // handshake and a warm connection
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	bodies := map[string]func(string) io.Reader{
		"strings.Reader": func(s string) io.Reader { return strings.NewReader(s) },
		"opaque reader":  func(s string) io.Reader { return &opaqueReader{strings.NewReader(s)} },
	}
	for name, mk := range bodies {
		body := `{"client_order_id":"o-` + strings.ReplaceAll(name, " ", "-") + `","symbol":"EURUSD","qty":1}`
		req, _ := http.NewRequest(http.MethodPost, "https://broker.invalid/v1/orders", mk(body))
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/json")
		before := writes.Load()
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || resp.Proto != "HTTP/1.1" {
			t.Fatalf("%s: %s %d", name, resp.Proto, resp.StatusCode)
		}
		if n := writes.Load() - before; n != 1 {
			t.Errorf("%s body: the order took %d writes, want 1 (headers and body together)", name, n)
		}
	}
}
