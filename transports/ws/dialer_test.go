package ws_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// The URL is rebuilt from the endpoint's ws address: Host header and TLS server
// name are the endpoint's, the base dialer's TLS roots and subprotocols are kept,
// and the connection is tracked by the path (the fence closes it).
func TestDialerTLSServerNameHostAndTracking(t *testing.T) {
	var mu sync.Mutex
	var host, sni string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		host, sni = r.Host, r.TLS.ServerName
		mu.Unlock()
		up := websocket.Upgrader{Subprotocols: []string{"v1"}}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	h := newPathHarness(t, []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Services: map[string]string{"ws": "wss://example.com:" + port + "/ws"}},
		{Name: "us", Region: "us", Services: map[string]string{"ws": "wss://example.com:" + port + "/ws"}},
	}, func(c *pathdialer.Config) {
		c.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if !strings.HasPrefix(addr, "example.com:") {
				return nil, errors.New("unexpected address " + addr)
			}
			return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+port)
		}
	})
	d, err := ws.NewDialer(h.path, &websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, Subprotocols: []string{"v1"}, HandshakeTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := d.Dial(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mu.Lock()
	gotHost, gotSNI := host, sni
	mu.Unlock()
	if gotHost != "example.com:"+port || gotSNI != "example.com" || c.Subprotocol() != "v1" || c.Endpoint() != "eu" {
		t.Fatalf("host %q sni %q subprotocol %q endpoint %q", gotHost, gotSNI, c.Subprotocol(), c.Endpoint())
	}
	if n := h.path.Snapshot().Endpoints[0].Conns; n != 1 {
		t.Fatalf("path tracks %d connections to eu, want 1", n)
	}
	if _, err := ws.NewDialer(h.path, &websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}); err == nil {
		t.Fatal("InsecureSkipVerify accepted")
	}
}

// 503 and 429 handshakes carry Retry-After (seconds or HTTP date) in a
// *HandshakeError that wraps websocket.ErrBadHandshake.
func TestDialerRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		code  int
		after string
		want  time.Duration
	}{
		{503, "2", 2 * time.Second},
		{429, "7", 7 * time.Second},
		{503, "", 0},
		{403, "5", 0},
		{503, "soon", 0},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tc.after != "" {
				w.Header().Set("Retry-After", tc.after)
			}
			w.WriteHeader(tc.code)
		}))
		url := "ws://" + strings.TrimPrefix(srv.URL, "http://")
		h := newPathHarness(t, []pathdialer.Endpoint{
			{Name: "eu", Region: "eu", Services: map[string]string{"ws": url}},
			{Name: "us", Region: "us", Services: map[string]string{"ws": url}},
		}, nil)
		d, _ := ws.NewDialer(h.path, nil)
		_, resp, err := d.DialEndpoint(context.Background(), "us", nil)
		var he *ws.HandshakeError
		if !errors.As(err, &he) || !errors.Is(err, websocket.ErrBadHandshake) || resp == nil {
			t.Fatalf("%d: err %v", tc.code, err)
		}
		if he.StatusCode != tc.code || he.RetryAfter != tc.want || he.Endpoint != "us" {
			t.Fatalf("%d %q: %+v, want retry after %v", tc.code, tc.after, he, tc.want)
		}
		_ = h.path.Close()
		srv.Close()
	}
}

// The HTTP-date form of Retry-After is honoured too.
func TestDialerRetryAfterDate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	url := "ws://" + strings.TrimPrefix(srv.URL, "http://")
	h := newPathHarness(t, []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Services: map[string]string{"ws": url}},
		{Name: "us", Region: "us", Services: map[string]string{"ws": url}},
	}, nil)
	d, _ := ws.NewDialer(h.path, nil)
	_, _, err := d.Dial(context.Background(), nil)
	var he *ws.HandshakeError
	if !errors.As(err, &he) || he.RetryAfter < 80*time.Second || he.RetryAfter > 90*time.Second {
		t.Fatalf("err %v", err)
	}
}

// A fenced endpoint is refused with pathdialer.ErrFenced, and the fence closes
// the WebSocket.
func TestDialerFence(t *testing.T) {
	eu, us := newRegion(t, "eu", 10), newRegion(t, "us", 10)
	h := newHarness(t, []*region{eu, us}, nil)
	d, _ := ws.NewDialer(h.path, nil)
	c, _, err := d.Dial(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h.down["eu"].Store(true)
	eventually(t, "the switch", func() bool { a, _ := h.path.Active(); return a.Name == "us" })
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := c.ReadMessage(); err == nil {
		t.Fatal("read on a fenced connection succeeded")
	}
	if _, _, err := d.DialEndpoint(context.Background(), "eu", nil); !errors.Is(err, pathdialer.ErrFenced) {
		t.Fatalf("dial to fenced eu: %v", err)
	}
	c2, _, err := d.Dial(context.Background(), nil)
	if err != nil || c2.Endpoint() != "us" || c2.Token() != 1 {
		t.Fatalf("dial after switch: %v", err)
	}
	_ = c2.Close()
}

// The stream waits at least Retry-After before the next handshake.
func TestStreamHonoursRetryAfter(t *testing.T) {
	eu, us := newRegion(t, "eu", 100), newRegion(t, "us", 100)
	eu.mu.Lock()
	eu.refuse, eu.retryS = 1, 1
	eu.mu.Unlock()
	h := newHarness(t, []*region{eu, us}, nil)
	rec := &recorder{}
	start := time.Now()
	s := startStream(t, h.path, fastConfig(rec, px))
	eventually(t, "the connection", func() bool { return s.Stats().Endpoint == "eu" })
	if d := time.Since(start); d < time.Second {
		t.Fatalf("connected after %v, before the 1 s Retry-After", d)
	}
	if n := eu.attempts.Load(); n != 2 {
		t.Fatalf("%d handshake attempts, want 2", n)
	}
	if st := s.Stats(); st.DialFailures != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A read-only connection survives the fence of its endpoint, may be dialed to
// the fenced endpoint, and is closed by Path.Close; an ordinary one is refused.
func TestDialerReadOnlySurvivesFence(t *testing.T) {
	eu, us := newRegion(t, "eu", 10), newRegion(t, "us", 10)
	h := newHarness(t, []*region{eu, us}, nil)
	d, _ := ws.NewDialer(h.path, nil)
	ro, _, err := d.DialReadOnly(context.Background(), "eu", nil)
	if err != nil || ro.Endpoint() != "eu" {
		t.Fatalf("read-only dial: %v", err)
	}
	defer ro.Close()
	rw, _, err := d.DialEndpoint(context.Background(), "eu", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer rw.Close()
	h.down["eu"].Store(true)
	eventually(t, "the switch", func() bool { a, _ := h.path.Active(); return a.Name == "us" && h.path.Fenced("eu") })
	_ = rw.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := rw.ReadMessage(); err == nil {
		t.Fatal("read on a fenced ordinary connection succeeded")
	}
	// The read-only one still works: subscribe, get the snapshot.
	if err := ro.WriteMessage(websocket.TextMessage, []byte(`{"type":"subscribe","streams":["px.A"]}`)); err != nil {
		t.Fatal(err)
	}
	_ = ro.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, data, err := ro.ReadMessage(); err != nil || !strings.Contains(string(data), "snapshot") {
		t.Fatalf("read-only connection after the fence: %q, %v", data, err)
	}
	if _, _, err := d.DialEndpoint(context.Background(), "eu", nil); !errors.Is(err, pathdialer.ErrFenced) {
		t.Fatalf("ordinary dial to fenced eu: %v", err)
	}
	ro2, _, err := d.DialReadOnly(context.Background(), "eu", nil)
	if err != nil {
		t.Fatalf("read-only dial to fenced eu: %v", err)
	}
	defer ro2.Close()
	_ = h.path.Close()
	_ = ro2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := ro2.ReadMessage(); err == nil {
		t.Fatal("read-only connection still open after Path.Close")
	}
}
