package ws_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// A "ws" address with user information (ws://user:pass@host/ws) cannot be
// dialed (gorilla refuses it), and credentials in a URL end up in logs: the
// Path refuses such an address at New (so no Dialer or Stream can be built on
// it), naming the endpoint and where credentials go, never repeating the
// user or the password. (NewDialer and NewStream check again, for addresses
// that reach them some other way.)
func TestAddressWithCredentialsRefused(t *testing.T) {
	const user, pass = "alice-7f3a", "s3cret-91bc"
	for _, addr := range []string{
		"ws://" + user + ":" + pass + "@md.example.test/ws",
		"wss://" + user + ":" + pass + "@md.example.test:8443/ws?token=x",
		"https://" + user + "@md.example.test/ws",
		"ws://" + user + ":@md.example.test/ws",
	} {
		t.Run("", func(t *testing.T) {
			cfg := pathdialer.DefaultConfig()
			cfg.Endpoints = []pathdialer.Endpoint{
				{Name: "eu", Region: "eu", Primary: true, Services: map[string]string{"ws": "ws://eu.example.test/ws", "rest": "https://eu.example.test"}},
				{Name: "us", Region: "us", Priority: 10, Services: map[string]string{"ws": addr, "rest": "https://us.example.test"}},
			}
			cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
			cfg.Fencer = pathdialer.LocalFenceOnly
			cfg.Reconcile = pathdialer.NoReconcile
			cfg.AllowPlaintext = true // eu's ws:// is not what this test is about
			_, err := pathdialer.New(cfg)
			if !errors.Is(err, pathdialer.ErrInvalidConfig) {
				t.Fatalf("New accepted a ws address with user information: %v", err)
			}
			msg := err.Error()
			if strings.Contains(msg, pass) || strings.Contains(msg, user) {
				t.Fatalf("the error repeats the address's credentials: %s", msg)
			}
			for _, want := range []string{`"us"`, "credentials", "header"} {
				if !strings.Contains(msg, want) {
					t.Fatalf("%q does not say %s", msg, want)
				}
			}
		})
	}
}

// A stream whose every connect fails (eu's market data refuses the TCP
// connection, us's refuses the handshake) while the probes pass moves no
// order: for seconds of failing rounds (a reported failure would halt
// within 300 ms) the gate stays open, eu stays active and HEALTHY with no
// traffic failures, no hold, halt or switch happens, and orders are granted
// on eu.
func TestFailingStreamDoesNotTouchTheGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pn := &pipeNet{ch: make(chan net.Conn), done: make(chan struct{})}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", http.StatusForbidden)
		})}
		go func() { _ = srv.Serve(pn) }()
		t.Cleanup(func() { _ = srv.Close() })
		eps := []pathdialer.Endpoint{
			{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{"ws": "ws://eu.md.test/ws", "rest": "https://eu.api.test"}},
			{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"ws": "ws://us.md.test/ws", "rest": "https://us.api.test"}},
		}
		probes := pathtest.NewProbes("eu", "us")
		cfg := pathtest.FastConfig(eps, probes)
		cfg.AllowPlaintext = true // ws:// over an in-memory network
		cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == "eu.md.test:80" {
				return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
			}
			return pn.Dial(ctx, network, addr)
		}
		events := pathtest.NewEvents()
		cfg.OnEvent = events.Hook
		path := pathtest.Start(t, cfg)
		time.Sleep(200 * time.Millisecond) // both endpoints HEALTHY
		synctest.Wait()

		var refused, handshake int
		scfg := fastConfig(&recorder{}, px)
		scfg.Dialer = &websocket.Dialer{HandshakeTimeout: time.Second}
		scfg.OnEvent = func(e ws.StreamEvent) {
			if e.Kind != ws.StreamEventDialFailed {
				return
			}
			var he *ws.HandshakeError
			switch {
			case e.Endpoint == "eu" && errors.Is(e.Err, syscall.ECONNREFUSED):
				refused++
			case e.Endpoint == "us" && errors.As(e.Err, &he) && he.StatusCode == http.StatusForbidden:
				handshake++
			default:
				t.Errorf("unexpected dial failure on %s: %v", e.Endpoint, e.Err)
			}
		}
		s := startStream(t, path, scfg)
		for i := range 30 { // 3 s of failing rounds (backoff up to 100 ms)
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			if st, err := path.GateState(); st != pathdialer.GateOpen {
				t.Fatalf("after %v of failing stream connects the gate is %v (%v)", time.Duration(i+1)*100*time.Millisecond, st, err)
			}
		}
		for i := range 3 {
			tk, err := path.Acquire(t.Context(), "rest", fmt.Sprintf("o%d", i))
			if err != nil {
				t.Fatalf("order %d refused: %v", i, err)
			}
			if tk.Endpoint != "eu" || tk.Token != 0 {
				t.Fatalf("order %d granted on %s gen %d, want eu gen 0", i, tk.Endpoint, tk.Token)
			}
			tk.Done()
		}
		snap := path.Snapshot()
		if snap.Active != "eu" || snap.Token != 0 || snap.Halts != 0 {
			t.Fatalf("active %s gen %d halts %d: the stream's failures moved the orders", snap.Active, snap.Token, snap.Halts)
		}
		for _, e := range snap.Endpoints {
			if e.State.String() != "HEALTHY" || e.TrafficFailures != 0 || e.GrayFailures != 0 {
				t.Fatalf("%s %v %+v: the stream's failures counted as evidence", e.Name, e.State, e.EndpointEvidence)
			}
		}
		for {
			select {
			case e := <-events.C():
				switch {
				case e.Kind == pathdialer.EventHold, e.Kind == pathdialer.EventHalt, e.Kind == pathdialer.EventSwitch,
					e.Kind == pathdialer.EventStateChange && e.PrevState.String() != "UNKNOWN":
					t.Fatalf("path event %v: the stream's failures moved the orders", e)
				}
				continue
			default:
			}
			break
		}
		st := s.Stats()
		if refused < 3 || handshake < 1 || st.Connects != 0 || uint64(refused+handshake) != st.DialFailures {
			t.Fatalf("stats %+v, %d refused on eu, %d handshakes refused on us: want both kinds, every one counted", st, refused, handshake)
		}
	})
}
