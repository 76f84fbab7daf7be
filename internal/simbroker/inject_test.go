package simbroker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/internal/faultnet"
)

// The broker serves on injected in-memory listeners inside a synctest
// bubble: orders, probes and the WebSocket feed work, virtual time runs the
// ticker, and Close leaves no goroutine behind (synctest.Test checks).
func TestInjectedListenersInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := faultnet.NewMemNetwork(1, 100*time.Microsecond)
		cfg := testConfig()
		cfg.PlainHTTP = true
		cfg.TickInterval = 100 * time.Millisecond
		cfg.Listen = func(region string, svc Service) (net.Listener, error) {
			return n.Listen(fmt.Sprintf("%s.%s.sim:80", region, svc))
		}
		b, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		eu := b.Region("eu")
		if eu.RESTURL() != "http://eu.rest.sim:80" || eu.ProbeURL() != "http://eu.probe.sim:80" || eu.WSURL() != "ws://eu.ws.sim:80/ws" || eu.FIXAddr() != "" {
			t.Fatalf("URLs %s %s %s %q", eu.RESTURL(), eu.ProbeURL(), eu.WSURL(), eu.FIXAddr())
		}
		if err := b.SetFault("eu", REST, Down{}); !errors.Is(err, ErrFaultNotSupported) {
			t.Fatalf("network fault on injected listeners: %v", err)
		}
		if err := b.SetFault("eu", REST, UnknownOutcome{N: 1}); err != nil {
			t.Fatalf("application fault: %v", err)
		}
		tr := &http.Transport{DialContext: n.Dial}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr}
		start := time.Now()
		if _, err := do(c, http.MethodPost, eu.RESTURL()+"/v1/orders", b.APIKey(), marketOrder("cut-1")); err == nil {
			t.Fatal("UnknownOutcome order answered")
		}
		r, err := do(c, http.MethodPost, eu.RESTURL()+"/v1/orders", b.APIKey(), marketOrder("m-1"))
		if err != nil || r.code != 201 {
			t.Fatalf("order: %v %d %s", err, r.code, r.body)
		}
		if elapsed := time.Since(start); elapsed <= 0 || elapsed > time.Second {
			t.Fatalf("virtual time for two orders: %v", elapsed)
		}
		if r, err := do(c, http.MethodGet, eu.ProbeURL()+"/v1/account", b.APIKey(), nil); err != nil || r.code != 200 {
			t.Fatalf("probe: %v %d", err, r.code)
		}
		if got := b.Audit().Booked(); len(got) != 2 || got[0].Outcome != OutcomeCut {
			t.Fatalf("booked %+v", got)
		}
		// None heals the application faults on injected listeners too (the
		// network's faults are the injected network's to heal).
		if err := b.SetFault("eu", REST, Partial{}); err != nil {
			t.Fatalf("partial: %v", err)
		}
		if r, err := do(c, http.MethodPost, eu.RESTURL()+"/v1/orders", b.APIKey(), marketOrder("p-1")); err != nil || r.code != 503 {
			t.Fatalf("order under Partial: %v %d", err, r.code)
		}
		if err := b.SetFault("eu", REST, None{}); err != nil {
			t.Fatalf("None on injected listeners: %v", err)
		}
		if r, err := do(c, http.MethodPost, eu.RESTURL()+"/v1/orders", b.APIKey(), marketOrder("p-2")); err != nil || r.code != 201 {
			t.Fatalf("order after None: %v %d %s", err, r.code, r.body)
		}
		d := websocket.Dialer{NetDialContext: n.Dial}
		ws, _, err := d.Dial(eu.WSURL(), http.Header{"X-API-Key": {b.APIKey()}})
		if err != nil {
			t.Fatalf("ws dial: %v", err)
		}
		defer ws.Close()
		if err := ws.WriteJSON(map[string]any{"type": "subscribe", "streams": []string{"px.EURUSD"}}); err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for len(seqs) < 4 {
			var m wsMarketMsg
			if err := ws.ReadJSON(&m); err != nil {
				t.Fatalf("ws read: %v", err)
			}
			seqs = append(seqs, m.Seq)
		}
		for i := 1; i < len(seqs); i++ {
			if seqs[i] != seqs[i-1]+1 {
				t.Fatalf("ws seqs %v", seqs)
			}
		}
	})
}

func TestPlainHTTPNeedsListen(t *testing.T) {
	cfg := testConfig()
	cfg.PlainHTTP = true
	if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Validate = %v", err)
	}
}
