package simbroker

import (
	"errors"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

type wsMsg struct {
	Type    string `json:"type"`
	Stream  string `json:"stream"`
	Seq     uint64 `json:"seq"`
	Price   string `json:"price"`
	Message string `json:"message"`
}

func wsDial(b *Broker, region, key string) (*websocket.Conn, *http.Response, error) {
	d := websocket.Dialer{TLSClientConfig: b.ClientTLSConfig(), HandshakeTimeout: 3 * time.Second}
	h := http.Header{}
	if key != "" {
		h.Set("X-API-Key", key)
	}
	return d.Dial(b.Region(region).WSURL(), h)
}

func mustWS(t *testing.T, b *Broker, region string) *websocket.Conn {
	t.Helper()
	c, resp, err := wsDial(b, region, b.APIKey())
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("ws dial %s: %v (HTTP %d)", region, err, code)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func send(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	if err := c.WriteJSON(v); err != nil {
		t.Fatalf("ws write: %v", err)
	}
}

func recv(t *testing.T, c *websocket.Conn) wsMsg {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	var m wsMsg
	if err := c.ReadJSON(&m); err != nil {
		t.Fatalf("ws read: %v", err)
	}
	return m
}

func expectMsg(t *testing.T, c *websocket.Conn, typ string, seq uint64) wsMsg {
	t.Helper()
	m := recv(t, c)
	if m.Type != typ || m.Seq != seq || m.Stream != "px.EURUSD" || m.Price == "" {
		t.Fatalf("got %+v; want %s seq %d on px.EURUSD", m, typ, seq)
	}
	return m
}

func publish(t *testing.T, b *Broker, n int) {
	t.Helper()
	for range n {
		if _, err := b.PublishTick("px.EURUSD"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWSSubscribeSnapshotThenLiveTicks(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	publish(t, b, 2)
	c := mustWS(t, b, "eu")
	send(t, c, map[string]any{"type": "subscribe", "streams": []string{"px.EURUSD"}})
	expectMsg(t, c, "snapshot", 2)
	tk, err := b.PublishTick("px.EURUSD")
	if err != nil {
		t.Fatal(err)
	}
	if m := expectMsg(t, c, "tick", 3); m.Price != tk.Price {
		t.Fatalf("tick price %s, published %s", m.Price, tk.Price)
	}
	send(t, c, map[string]any{"type": "subscribe", "streams": []string{"px.NOPE"}})
	if m := recv(t, c); m.Type != "error" || m.Message == "" {
		t.Fatalf("unknown stream answered %+v", m)
	}
	send(t, c, map[string]any{"type": "ping"})
	if m := recv(t, c); m.Type != "pong" {
		t.Fatalf("ping answered %+v", m)
	}
	if st := b.Region("eu").WSStats(); st.Handshakes != 1 || st.Subscribes != 1 || st.Active != 1 {
		t.Fatalf("WSStats = %+v", st)
	}
}

func TestWSResumeFromReplayBuffer(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	publish(t, b, 5)
	c := mustWS(t, b, "us")
	send(t, c, map[string]any{"type": "resume", "streams": map[string]uint64{"px.EURUSD": 2}})
	for seq := uint64(3); seq <= 5; seq++ {
		expectMsg(t, c, "tick", seq)
	}
	publish(t, b, 1)
	expectMsg(t, c, "tick", 6) // live continues without a gap or a repeat
	if st := b.Region("us").WSStats(); st.Resumes != 1 || st.Snapshots != 0 {
		t.Fatalf("WSStats = %+v", st)
	}
}

func TestWSResumeTooOldGetsSnapshot(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.ReplayBuffer = 3 })
	publish(t, b, 10)
	c := mustWS(t, b, "eu")
	send(t, c, map[string]any{"type": "resume", "streams": map[string]uint64{"px.EURUSD": 2}})
	expectMsg(t, c, "snapshot", 10)
	publish(t, b, 1)
	expectMsg(t, c, "tick", 11)
	if st := b.Region("eu").WSStats(); st.Snapshots != 1 || st.Resumes != 0 {
		t.Fatalf("WSStats = %+v", st)
	}
}

func TestWSClientAheadOfLaggingRegionGetsSnapshot(t *testing.T) {
	t.Parallel()
	// us receives ticks an hour late: a client that saw seq 3 in eu is ahead of us's copy.
	b := startBroker(t, func(c *Config) { c.ReplicationLag = map[string]time.Duration{"us": time.Hour} })
	publish(t, b, 3)
	if h, _ := b.Region("eu").StreamHead("px.EURUSD"); h != 3 {
		t.Fatalf("eu head %d, want 3", h)
	}
	if h, _ := b.Region("us").StreamHead("px.EURUSD"); h != 0 {
		t.Fatalf("us head %d, want 0 (lagging)", h)
	}
	c := mustWS(t, b, "us")
	send(t, c, map[string]any{"type": "resume", "streams": map[string]uint64{"px.EURUSD": 3}})
	expectMsg(t, c, "snapshot", 0)
	if st := b.Region("us").WSStats(); st.Snapshots != 1 {
		t.Fatalf("WSStats = %+v", st)
	}
	if err := b.SetReplicationLag("nowhere", 0); !errors.Is(err, ErrUnknownRegion) {
		t.Fatalf("SetReplicationLag(nowhere) = %v", err)
	}
}

func TestWSHandshakeBudgetAnswers503WithRetryAfter(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.HandshakesPerSecond = 0.5; c.HandshakeBurst = 1 })
	mustWS(t, b, "eu")
	_, resp, err := wsDial(b, "eu", b.APIKey())
	if !errors.Is(err, websocket.ErrBadHandshake) || resp == nil {
		t.Fatalf("second handshake: %v; want a refused handshake", err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("over budget: %d Retry-After %q; want 503 and 2", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// The budget is per region: us still admits.
	mustWS(t, b, "us")
	if st := b.Region("eu").WSStats(); st.OverBudget != 1 || st.Handshakes != 1 || st.Attempts != 2 {
		t.Fatalf("eu WSStats = %+v", st)
	}
}

func TestWSAuthAnd503Fault(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	if _, resp, err := wsDial(b, "eu", ""); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %v %v", err, resp)
	}
	if err := b.SetFault("eu", WS, Fault503{N: 1, RetryAfter: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	_, resp, err := wsDial(b, "eu", b.APIKey())
	if err == nil || resp == nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("503 fault: %v %+v", err, resp)
	}
	mustWS(t, b, "eu") // N=1 spent
	if st := b.Region("eu").WSStats(); st.Unavailable != 1 || st.Unauthorized != 1 {
		t.Fatalf("WSStats = %+v", st)
	}
}

func TestWSPartialConnectsButDeliversNothing(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	if err := b.SetFault("eu", WS, Partial{}); err != nil {
		t.Fatal(err)
	}
	c := mustWS(t, b, "eu")
	send(t, c, map[string]any{"type": "subscribe", "streams": []string{"px.EURUSD"}})
	publish(t, b, 2)
	send(t, c, map[string]any{"type": "ping"})
	// The pong (control traffic) arrives; the snapshot and ticks before it do not.
	if m := recv(t, c); m.Type != "pong" {
		t.Fatalf("under partial got %+v before the pong", m)
	}
	if err := b.SetFault("eu", WS, None{}); err != nil {
		t.Fatal(err)
	}
	publish(t, b, 1)
	expectMsg(t, c, "tick", 3)
}

func TestWSServerPingsAndAnswersPings(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.PingInterval = 30 * time.Millisecond })
	c := mustWS(t, b, "eu")
	var pings, pongs atomic.Int32
	c.SetPingHandler(func(string) error { pings.Add(1); return nil })
	c.SetPongHandler(func(string) error { pongs.Add(1); return nil })
	if err := c.WriteControl(websocket.PingMessage, []byte("hi"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	// Control frames are processed while reading; no data message comes.
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, _, err := c.ReadMessage()
	if err == nil {
		t.Fatal("unexpected data message")
	}
	if pings.Load() == 0 || pongs.Load() == 0 {
		t.Fatalf("server pings seen %d, pongs to our ping %d; want both > 0", pings.Load(), pongs.Load())
	}
}

func TestWSNetworkDownRefusesDial(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	live := mustWS(t, b, "eu")
	if err := b.SetFault("eu", WS, Down{}); err != nil {
		t.Fatal(err)
	}
	_ = live.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, _, err := live.ReadMessage(); err == nil {
		t.Fatal("live ws survived Down")
	}
	if _, _, err := wsDial(b, "eu", b.APIKey()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial while down: %v", err)
	}
	mustWS(t, b, "us")
}
