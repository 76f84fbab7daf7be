package ws_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// A Stream over a two-region Path: the handler gets the snapshot, then ticks in
// order, and the stream reports itself LIVE; after Close it is CLOSED.
func Example() {
	// A tiny server speaking the JSON protocol: a snapshot at 0, then ticks 1..3.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		if _, _, err := c.ReadMessage(); err != nil { // the subscribe
			return
		}
		_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"snapshot","stream":"px.EURUSD","seq":0}`))
		for seq := 1; seq <= 3; seq++ {
			_ = c.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`{"type":"tick","stream":"px.EURUSD","seq":%d}`, seq)))
		}
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	url := "ws://" + strings.TrimPrefix(srv.URL, "http://") + "/ws"

	pcfg := pathdialer.DefaultConfig()
	pcfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Priority: 0, Primary: true, Services: map[string]string{"ws": url}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"ws": url}},
	}
	pcfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
	pcfg.Fencer, pcfg.Reconcile = pathdialer.LocalFenceOnly, pathdialer.NoReconcile
	path, err := pathdialer.New(pcfg)
	if err != nil {
		panic(err)
	}
	_ = path.Start(context.Background())
	defer path.Close()

	got := make(chan ws.Message, 8)
	cfg := ws.DefaultStreamConfig()
	cfg.Streams = []string{"px.EURUSD"}
	cfg.Handler = func(m ws.Message) { got <- m }
	s, err := ws.NewStream(path, cfg)
	if err != nil {
		panic(err)
	}
	if err := s.Start(context.Background()); err != nil {
		panic(err)
	}
	for range 4 {
		select {
		case m := <-got:
			fmt.Println(m.Stream, m.Seq, m.Snapshot, m.Endpoint)
		case <-time.After(5 * time.Second):
			panic(errors.New("timed out"))
		}
	}
	fmt.Println(s.Health())
	_ = s.Close()
	fmt.Println(s.Health())
	// Output:
	// px.EURUSD 0 true eu
	// px.EURUSD 1 false eu
	// px.EURUSD 2 false eu
	// px.EURUSD 3 false eu
	// LIVE
	// CLOSED
}

// DefaultStreamConfig alone is not valid: the error says what to set.
func ExampleStreamConfig_Validate() {
	cfg := ws.DefaultStreamConfig()
	fmt.Println(cfg.Validate())

	cfg.Streams = []string{"px.EURUSD"}
	cfg.Handler = func(m ws.Message) {}
	fmt.Println(cfg.Validate())
	// Output:
	// ws: invalid stream config: Streams and Handler are not set: set Streams to the stream names to subscribe to (e.g. []string{"px.EURUSD"}) and Handler to a func(ws.Message) that receives them
	// <nil>
}

// Addresses are printed without their credentials.
func ExampleRedactURL() {
	fmt.Println(ws.RedactURL("wss://md.example.com/v1/stream?apiKey=k-123&depth=5"))
	fmt.Println(ws.RedactURL("wss://trader:hunter2@md.example.com/v1/stream"))
	// Output:
	// wss://md.example.com/v1/stream?apiKey=REDACTED&depth=REDACTED
	// wss://md.example.com/v1/stream
}
