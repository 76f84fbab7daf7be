package ws_test

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/transports/ws"
)

func TestBackoffFullJitter(t *testing.T) {
	b := ws.DefaultBackoff()
	for _, tc := range []struct {
		attempt int
		ceil    time.Duration
	}{{-1, time.Second}, {0, time.Second}, {1, 2 * time.Second}, {5, 32 * time.Second}, {6, time.Minute}, {1000, time.Minute}} {
		if got := ws.BackoffCeiling(b, tc.attempt); got != tc.ceil {
			t.Errorf("Ceiling(%d) = %v, want %v", tc.attempt, got, tc.ceil)
		}
		if got := ws.BackoffDelay(b, tc.attempt, 0); got != 0 {
			t.Errorf("Delay(%d, 0) = %v", tc.attempt, got)
		}
		if got := ws.BackoffDelay(b, tc.attempt, 0.5); got != tc.ceil/2 {
			t.Errorf("Delay(%d, 0.5) = %v, want %v", tc.attempt, got, tc.ceil/2)
		}
		if got := ws.BackoffDelay(b, tc.attempt, 1); got >= tc.ceil {
			t.Errorf("Delay(%d, 1) = %v, not below the ceiling", tc.attempt, got)
		}
	}
}

// A round with no candidate is followed by at least MinEmptyRoundWait, even
// with a 1 ns backoff and a zero jitter draw: no spinning.
func TestEmptyRoundWaitsAMinimum(t *testing.T) {
	p := ws.ReconnectPolicy{Backoff: ws.Backoff{Base: 1, Cap: 1}, FailuresBeforeFallback: 1}
	if got := p.Wait(3, 0, 0, true); got < ws.MinEmptyRoundWait {
		t.Fatalf("Wait after an empty round = %v, want >= %v", got, ws.MinEmptyRoundWait)
	}
	if got := p.Wait(3, 0, 0, false); got != 0 {
		t.Fatalf("Wait after a round that dialed = %v, want the jitter draw (0)", got)
	}
	if got := p.Wait(0, time.Second, 0, true); got != time.Second {
		t.Fatalf("Wait with a Retry-After of 1s = %v", got)
	}
}

func TestJSONProtocol(t *testing.T) {
	p := ws.JSONProtocol{}
	if m, _ := p.Subscribe([]string{"px.A"}); string(m) != `{"type":"subscribe","streams":["px.A"]}` {
		t.Errorf("subscribe %s", m)
	}
	if m, _ := p.Resume(map[string]uint64{"px.A": 41}); string(m) != `{"type":"resume","streams":{"px.A":41}}` {
		t.Errorf("resume %s", m)
	}
	if m, _ := p.ResumeEpochs(map[string]ws.Position{"px.A": {Seq: 41}}); string(m) != `{"type":"resume","streams":{"px.A":41}}` {
		t.Errorf("resume without epochs %s: want Resume's message", m)
	}
	if m, _ := p.ResumeEpochs(map[string]ws.Position{"px.A": {Seq: 41, Epoch: "e1"}, "px.B": {Seq: 3}}); string(m) != `{"type":"resume","streams":{"px.A":41,"px.B":3},"epochs":{"px.A":"e1"}}` {
		t.Errorf("resume with epochs %s", m)
	}
	if _, err := p.Subscribe(nil); err == nil {
		t.Error("empty subscribe accepted")
	}
	for _, tc := range []struct {
		in   string
		want ws.Frame
		err  bool
	}{
		{`{"type":"tick","stream":"px.A","seq":42,"price":"1.0843"}`, ws.Frame{Kind: ws.FrameTick, Stream: "px.A", Seq: 42}, false},
		{`{"type":"snapshot","stream":"px.A","seq":0}`, ws.Frame{Kind: ws.FrameSnapshot, Stream: "px.A", Seq: 0}, false},
		{`{"type":"tick","stream":"px.A","seq":1,"epoch":"7f3a"}`, ws.Frame{Kind: ws.FrameTick, Stream: "px.A", Seq: 1, Epoch: "7f3a"}, false},
		{`{"type":"tick","stream":"px.A","seq":1,"epoch":1700000000}`, ws.Frame{Kind: ws.FrameTick, Stream: "px.A", Seq: 1, Epoch: "1700000000"}, false},
		{`{"type":"tick","stream":"px.A","seq":1,"epoch":null}`, ws.Frame{Kind: ws.FrameTick, Stream: "px.A", Seq: 1}, false},
		{`{"type":"tick","stream":"px.A","seq":1,"epoch":true}`, ws.Frame{}, true},
		{`{"type":"error","message":"unknown stream"}`, ws.Frame{Kind: ws.FrameError, Err: "unknown stream"}, false},
		{`{"type":"pong"}`, ws.Frame{Kind: ws.FrameOther}, false},
		{`{"type":"tick","stream":"px.A"}`, ws.Frame{}, true},
		{`not json`, ws.Frame{}, true},
	} {
		got, err := p.Parse([]byte(tc.in))
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("Parse(%s) = %+v, %v", tc.in, got, err)
		}
	}
}

func TestStreamConfigValidate(t *testing.T) {
	ok := ws.DefaultStreamConfig()
	ok.Streams, ok.Handler = []string{"px.A"}, func(ws.Message) {}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*ws.StreamConfig){
		"no streams":   func(c *ws.StreamConfig) { c.Streams = nil },
		"duplicate":    func(c *ws.StreamConfig) { c.Streams = []string{"a", "a"} },
		"no handler":   func(c *ws.StreamConfig) { c.Handler = nil },
		"zero base":    func(c *ws.StreamConfig) { c.Backoff.Base = 0 },
		"cap < base":   func(c *ws.StreamConfig) { c.Backoff.Cap = time.Millisecond },
		"no fallback":  func(c *ws.StreamConfig) { c.FailuresBeforeFallback = 0 },
		"zero ping":    func(c *ws.StreamConfig) { c.PingInterval = 0 },
		"zero timeout": func(c *ws.StreamConfig) { c.PongTimeout = 0 },
		"zero gap":     func(c *ws.StreamConfig) { c.GapTimeout = 0 },
		"zero suspend": func(c *ws.StreamConfig) { c.SuspendAfter = 0 },
		"zero limit":   func(c *ws.StreamConfig) { c.ReadLimit = 0 },
		"zero queue":   func(c *ws.StreamConfig) { c.QueueLength = 0 },
		"huge queue":   func(c *ws.StreamConfig) { c.QueueLength = 1 << 20 },
		"zero window":  func(c *ws.StreamConfig) { c.ReplayWindow = 0 },
		"neg healthy":  func(c *ws.StreamConfig) { c.HealthyAfter = -1 },
		"insecure": func(c *ws.StreamConfig) {
			c.Dialer = &websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		},
	} {
		c := ok
		mut(&c)
		if err := c.Validate(); !errors.Is(err, ws.ErrInvalidConfig) || !strings.HasPrefix(err.Error(), "ws: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Close before Start, Close twice, and Start after Close are all safe.
func TestStreamLifecycle(t *testing.T) {
	eu, us := newRegion(t, "eu", 10), newRegion(t, "us", 10)
	h := newHarness(t, []*region{eu, us}, nil)
	rec := &recorder{}
	s, err := ws.NewStream(h.path, fastConfig(rec, px))
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	_ = s.Close()
	if err := s.Start(t.Context()); !errors.Is(err, ws.ErrStreamClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
	s2 := startStream(t, h.path, fastConfig(rec, px))
	eventually(t, "the connection", func() bool { return s2.Stats().Endpoint == "eu" })
	if err := s2.Start(t.Context()); !errors.Is(err, ws.ErrStreamClosed) {
		t.Fatalf("second Start: %v", err)
	}
	// A stream whose context ends closes its connection by itself.
	s3, _ := ws.NewStream(h.path, fastConfig(rec, px))
	ctx, cancel := context.WithCancel(context.Background())
	if err := s3.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "two connections", func() bool { return eu.handshakes.Load() == 2 && s3.Stats().Endpoint == "eu" })
	cancel()
	eventually(t, "the server to see the close", func() bool {
		eu.mu.Lock()
		defer eu.mu.Unlock()
		return len(eu.conns) == 1
	})
	_ = s3.Close()
}
