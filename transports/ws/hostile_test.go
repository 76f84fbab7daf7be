package ws_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// hostile is a real gorilla WebSocket server (httptest) whose behaviour a test
// scripts per connection: serve runs once per connection, n counting from 1,
// and returns when it is done with it (the server then closes it).
type hostile struct {
	srv   *httptest.Server
	conns atomic.Int64
	serve func(c *hconn, n int64)
}

// hconn is one server-side connection: in carries the client's messages and
// is closed when the client's side ends.
type hconn struct {
	ws *websocket.Conn
	in chan clientMsg
	mu sync.Mutex
}

type clientMsg struct {
	Type    string
	Streams json.RawMessage
	Epochs  map[string]string
	At      time.Time
}

func (m clientMsg) resumeFrom(stream string) (uint64, bool) {
	var after map[string]uint64
	if m.Type != "resume" || json.Unmarshal(m.Streams, &after) != nil {
		return 0, false
	}
	a, ok := after[stream]
	return a, ok
}

func (c *hconn) send(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(v)
}

// tick sends a tick (or snapshot) of px, with an epoch when epoch != "".
func (c *hconn) tick(kind string, seq uint64, epoch string) error {
	m := map[string]any{"type": kind, "stream": px, "seq": seq}
	if epoch != "" {
		m["epoch"] = epoch
	}
	return c.send(m)
}

// next returns the client's next message, or false when the connection ended.
func (c *hconn) next() (clientMsg, bool) {
	m, ok := <-c.in
	return m, ok
}

// drain waits for the client to go away, answering nothing.
func (c *hconn) drain() {
	for range c.in {
	}
}

func newHostile(t *testing.T, serve func(c *hconn, n int64)) *hostile {
	t.Helper()
	h := &hostile{serve: serve}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wc, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		c := &hconn{ws: wc, in: make(chan clientMsg, 64)}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer close(c.in)
			for {
				_, data, err := wc.ReadMessage()
				if err != nil {
					return
				}
				var m clientMsg
				_ = json.Unmarshal(data, &m)
				m.At = time.Now()
				select {
				case c.in <- m:
				default: // a client flooding us: drop
				}
			}
		}()
		h.serve(c, h.conns.Add(1))
		_ = wc.Close()
		<-done
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hostile) url(query string) string {
	return "ws://" + strings.TrimPrefix(h.srv.URL, "http://") + "/ws" + query
}

// hostilePath is a Path whose two endpoints both lead to h.
func hostilePath(t *testing.T, h *hostile, query string) *pathdialer.Path {
	t.Helper()
	eps := []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Services: map[string]string{"ws": h.url(query)}},
		{Name: "us", Region: "us", Services: map[string]string{"ws": h.url(query)}},
	}
	return newPathHarness(t, eps, nil).path
}

// events records a Stream's events.
type events struct {
	mu sync.Mutex
	ev []ws.StreamEvent
}

func (e *events) hook(ev ws.StreamEvent) {
	e.mu.Lock()
	e.ev = append(e.ev, ev)
	e.mu.Unlock()
}

func (e *events) all() []ws.StreamEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ws.StreamEvent(nil), e.ev...)
}

// healths returns the health transitions seen, in order.
func (e *events) healths() []ws.Health {
	var out []ws.Health
	for _, ev := range e.all() {
		if ev.Kind == ws.StreamEventHealth {
			out = append(out, ev.To)
		}
	}
	return out
}

// count counts the events of kind k whose Step or Trouble is label ("" for
// any).
func (e *events) count(k ws.StreamEventKind, label string) int {
	n := 0
	for _, ev := range e.all() {
		if ev.Kind == k && (label == "" || ev.Step == label || ev.Trouble == label) {
			n++
		}
	}
	return n
}

func seqs(msgs []ws.Message) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case m.Restart:
			fmt.Fprintf(&b, "R%d", m.Seq)
		case m.Snapshot:
			fmt.Fprintf(&b, "S%d", m.Seq)
		default:
			fmt.Fprintf(&b, "%d", m.Seq)
		}
	}
	return b.String()
}

// A gap the server never fills by replay: the Stream resumes at once, again
// at 1/8, 3/8 and 7/8 of GapTimeout, then asks for a snapshot, which repairs
// it. Health goes LIVE → RECOVERING → LIVE and every step is an event.
func TestGapNotReplayedEscalatesToSnapshot(t *testing.T) {
	var mu sync.Mutex
	var resumes []time.Time
	var snapAsked time.Time
	h := newHostile(t, func(c *hconn, n int64) {
		if m, ok := c.next(); !ok || m.Type != "subscribe" {
			return
		}
		_ = c.tick("snapshot", 0, "")
		_ = c.tick("tick", 1, "")
		_ = c.tick("tick", 2, "")
		_ = c.tick("tick", 5, "") // 3 and 4 are lost, and never replayed
		_ = c.tick("tick", 6, "")
		for m, ok := c.next(); ok; m, ok = c.next() {
			mu.Lock()
			switch m.Type {
			case "resume":
				resumes = append(resumes, m.At)
			case "subscribe":
				snapAsked = m.At
				_ = c.tick("snapshot", 6, "")
				_ = c.tick("tick", 7, "")
			}
			mu.Unlock()
		}
	})
	rec, ev := &recorder{}, &events{}
	cfg := fastConfig(rec, px)
	cfg.GapTimeout = 400 * time.Millisecond
	cfg.OnEvent = ev.hook
	s := startStream(t, hostilePath(t, h, ""), cfg)
	eventually(t, "tick 7", func() bool { return rec.lastSeq() == 7 })
	if got := seqs(rec.snapshot()); got != "S0 1 2 S6 7" {
		t.Fatalf("delivered %s, want S0 1 2 S6 7", got)
	}
	st := s.Stats()
	if st.Gaps != 1 || st.GapsRepaired != 1 || st.SnapshotRequests != 1 || st.Reconnects != 0 || st.Held != 2 {
		t.Fatalf("stats %+v: want one gap repaired by one snapshot, two held (5, 6), no reconnect", st)
	}
	mu.Lock()
	if len(resumes) != 4 {
		t.Fatalf("server saw %d resumes, want 4 (at once, 1/8, 3/8, 7/8)", len(resumes))
	}
	if d := snapAsked.Sub(resumes[0]); d < cfg.GapTimeout*9/10 {
		t.Fatalf("snapshot asked %v after the gap, want >= GapTimeout %v", d, cfg.GapTimeout)
	}
	mu.Unlock()
	if n := ev.count(ws.StreamEventEscalation, "resume"); n != 3 {
		t.Fatalf("%d resume escalations, want 3", n)
	}
	if ev.count(ws.StreamEventGap, "") != 1 || ev.count(ws.StreamEventEscalation, "snapshot") != 1 || ev.count(ws.StreamEventRepaired, "gap") != 1 || ev.count(ws.StreamEventRepaired, "") != 1 {
		t.Fatalf("events %v", ev.all())
	}
	eventually(t, "LIVE", func() bool { return s.Health() == ws.HealthLive })
	if got := fmt.Sprint(ev.healths()); got != "[LIVE RECOVERING LIVE]" {
		t.Fatalf("health transitions %s, want [LIVE RECOVERING LIVE]", got)
	}
	_ = s.Close()
	if s.Health() != ws.HealthClosed {
		t.Fatalf("health after Close: %v", s.Health())
	}
}

// A server that never repairs anything (no replay, no snapshot): at twice
// GapTimeout the Stream drops the connection as a failure and reconnects; the
// health turns SUSPENDED after SuspendAfter. Never a silent stall.
func TestGapNeverRepairedReconnectsAndSuspends(t *testing.T) {
	var resumedFrom atomic.Int64
	resumedFrom.Store(-1)
	h := newHostile(t, func(c *hconn, n int64) {
		subscribed := false
		for m, ok := c.next(); ok; m, ok = c.next() {
			switch {
			case m.Type == "subscribe" && n == 1 && !subscribed:
				subscribed = true
				_ = c.tick("snapshot", 0, "")
				_ = c.tick("tick", 1, "")
				_ = c.tick("tick", 3, "")
			case m.Type == "resume" && n > 1:
				if a, ok := m.resumeFrom(px); ok {
					resumedFrom.Store(int64(a))
				}
				_ = c.tick("tick", 3, "") // still no 2
			}
		}
	})
	rec, ev := &recorder{}, &events{}
	cfg := fastConfig(rec, px)
	cfg.GapTimeout = 200 * time.Millisecond
	cfg.SuspendAfter = 700 * time.Millisecond
	cfg.OnEvent = ev.hook
	s := startStream(t, hostilePath(t, h, ""), cfg)
	eventually(t, "a stall reconnect and a resume on the new connection", func() bool {
		return s.Stats().StallReconnects >= 1 && resumedFrom.Load() == 1
	})
	eventually(t, "SUSPENDED", func() bool { return s.Health() == ws.HealthSuspended })
	if got := seqs(rec.snapshot()); got != "S0 1" {
		t.Fatalf("delivered %s, want S0 1", got)
	}
	st := s.Stats()
	if st.Reconnects < 1 || st.Gaps != 1 || st.GapsRepaired != 0 || st.Health != ws.HealthSuspended {
		t.Fatalf("stats %+v", st)
	}
	var lost bool
	for _, e := range ev.all() {
		if e.Kind == ws.StreamEventConnectionLost && errors.Is(e.Err, ws.ErrStall) {
			lost = true
		}
	}
	if !lost || ev.count(ws.StreamEventEscalation, "reconnect") < 1 {
		t.Fatalf("no stall reconnect event: %v", ev.all())
	}
	eventually(t, "the SUSPENDED event", func() bool {
		hs := ev.healths()
		return len(hs) > 0 && hs[len(hs)-1] == ws.HealthSuspended
	})
	if err := s.Err(); err != nil {
		t.Fatalf("Err %v: the stream must keep trying", err)
	}
}

// A server that restarts with a new epoch: whether its new numbering is below
// or above the client's, nothing of the new epoch is dropped as a duplicate
// or delivered as if contiguous; a snapshot of the new epoch is delivered
// flagged Restart, and ticks continue from it.
func TestServerRestartWithNewEpoch(t *testing.T) {
	for _, tc := range []struct {
		name string
		head uint64 // the restarted server's head
		want string
	}{
		{"numbering below", 5, "R5 6 7 8"},
		{"numbering above", 150, "R150 151 152 153"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resumedEpoch atomic.Value
			h := newHostile(t, func(c *hconn, n int64) {
				m, ok := c.next()
				if !ok {
					return
				}
				if n == 2 && m.Type == "resume" {
					resumedEpoch.Store(m.Epochs[px])
				}
				if n == 1 {
					_ = c.tick("snapshot", 0, "e1")
					for q := uint64(1); q <= 20; q++ {
						_ = c.tick("tick", q, "e1")
					}
					return // the server restarts
				}
				answer := func() {
					_ = c.tick("snapshot", tc.head, "e2")
					for q := tc.head + 1; q <= tc.head+3; q++ {
						_ = c.tick("tick", q, "e2")
					}
				}
				if a, ok := m.resumeFrom(px); ok && a < tc.head {
					// A server that does not check epochs replays from
					// its own numbering.
					for q := a + 1; q <= tc.head; q++ {
						_ = c.tick("tick", q, "e2")
					}
				} else {
					answer()
				}
				for m, ok := c.next(); ok; m, ok = c.next() {
					if m.Type == "subscribe" {
						answer()
					}
				}
			})
			rec, ev := &recorder{}, &events{}
			cfg := fastConfig(rec, px)
			cfg.OnEvent = ev.hook
			s := startStream(t, hostilePath(t, h, ""), cfg)
			eventually(t, "the new epoch's ticks", func() bool { return rec.lastSeq() == tc.head+3 })
			msgs := rec.snapshot()
			if len(msgs) < 21 || seqs(msgs[21:]) != tc.want {
				t.Fatalf("after 20: %s, want %s", seqs(msgs[min(21, len(msgs)):]), tc.want)
			}
			if m := msgs[21]; !m.Snapshot || !m.Restart || m.Epoch != "e2" {
				t.Fatalf("restart message %+v", m)
			}
			if st := s.Stats(); st.Restarts != 1 {
				t.Fatalf("stats %+v: want one restart", st)
			}
			if e, _ := resumedEpoch.Load().(string); e != "e1" {
				t.Fatalf("the resume named epoch %q, want e1 (the client's)", e)
			}
			if ev.count(ws.StreamEventRestart, "") != 1 {
				t.Fatalf("events %v", ev.all())
			}
		})
	}
}

// A server without epochs that restarts its numbering: a message far below the
// last (more than ReplayWindow) is a restart at once; one within the window is
// taken for a lagging server until GapTimeout, then the snapshot asked for,
// still below, is delivered as a restart. New data is never dropped for good.
func TestServerRestartWithoutEpoch(t *testing.T) {
	for _, tc := range []struct {
		name string
		head uint64
		want string
	}{
		{"beyond the replay window", 5, "R5 6 7 8"},
		{"within the replay window", 90, "R93 94 95 96"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostile(t, func(c *hconn, n int64) {
				if _, ok := c.next(); !ok {
					return
				}
				if n == 1 {
					_ = c.tick("snapshot", 0, "")
					for q := uint64(1); q <= 100; q++ {
						_ = c.tick("tick", q, "")
					}
					return // the server restarts
				}
				head := tc.head
				answer := func() { // a snapshot, then three new ticks
					_ = c.tick("snapshot", head, "")
					for q := head + 1; q <= head+3; q++ {
						_ = c.tick("tick", q, "")
					}
					head += 3
				}
				answer() // the resume of 100 is answered with a snapshot
				for m, ok := c.next(); ok; m, ok = c.next() {
					if m.Type == "subscribe" {
						answer()
					}
				}
			})
			rec := &recorder{}
			cfg := fastConfig(rec, px)
			cfg.GapTimeout = 300 * time.Millisecond
			s := startStream(t, hostilePath(t, h, ""), cfg)
			eventually(t, "the restart", func() bool { return s.Stats().Restarts == 1 })
			eventually(t, "three ticks after it", func() bool {
				msgs := rec.snapshot()
				return len(msgs) >= 105
			})
			if got := seqs(rec.snapshot()[101:]); got != tc.want {
				t.Fatalf("after 100: %s, want %s", got, tc.want)
			}
		})
	}
}

// A frame over the read limit is an error: counted, the connection replaced,
// the stream resumed; the 64 MiB is never read into memory.
func TestOversizedFrameReplacesConnection(t *testing.T) {
	h := newHostile(t, func(c *hconn, n int64) {
		m, ok := c.next()
		if !ok {
			return
		}
		if n == 1 {
			_ = c.tick("snapshot", 0, "")
			_ = c.tick("tick", 1, "")
			c.mu.Lock()
			w, err := c.ws.NextWriter(websocket.TextMessage)
			if err == nil {
				chunk := bytes.Repeat([]byte{' '}, 1<<20)
				for range 64 {
					if _, err := w.Write(chunk); err != nil {
						break
					}
				}
				_ = w.Close()
			}
			c.mu.Unlock()
			c.drain()
			return
		}
		if a, ok := m.resumeFrom(px); ok {
			for q := a + 1; q <= 3; q++ {
				_ = c.tick("tick", q, "")
			}
		}
		c.drain()
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rec := &recorder{}
	s := startStream(t, hostilePath(t, h, ""), fastConfig(rec, px))
	eventually(t, "tick 3", func() bool { return rec.lastSeq() == 3 })
	runtime.ReadMemStats(&after)
	if got := seqs(rec.snapshot()); got != "S0 1 2 3" {
		t.Fatalf("delivered %s", got)
	}
	st := s.Stats()
	if st.OversizedFrames != 1 || st.Reconnects != 1 || st.Resumes != 1 {
		t.Fatalf("stats %+v: want one oversized frame, one reconnect, one resume", st)
	}
	// The server streams its frame in 1 MiB chunks; the client must not have
	// allocated anything near 64 MiB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Fatalf("allocated %d MiB while refusing a 64 MiB frame", alloc>>20)
	}
}

// A server that accepts the handshake and drops the connection at once meets
// the full-jitter backoff, not a reconnect loop: each short-lived connection
// counts as a failed round.
func TestShortLivedConnectionsBackOff(t *testing.T) {
	h := newHostile(t, func(c *hconn, n int64) {
		if _, ok := c.next(); !ok {
			return
		}
		c.mu.Lock()
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "go away"), time.Now().Add(time.Second))
		c.mu.Unlock()
	})
	rec := &recorder{}
	cfg := fastConfig(rec, px)
	cfg.Backoff = ws.Backoff{Base: 10 * time.Millisecond, Cap: 160 * time.Millisecond}
	cfg.HealthyAfter = time.Second
	start := time.Now()
	s := startStream(t, hostilePath(t, h, ""), cfg)
	eventually(t, "a second of it", func() bool { return time.Since(start) >= time.Second })
	n := h.conns.Load()
	st := s.Stats()
	// Without backoff (10 ms windows) a second holds ~200 handshakes; with
	// it (windows 20, 40, 80, 160 ms, ...) about 14.
	if n > 40 || st.ShortLived < 3 {
		t.Fatalf("%d handshakes in %v, stats %+v: want at most 40 and >= 3 short-lived", n, time.Since(start), st)
	}
	if h := s.Health(); h == ws.HealthLive {
		t.Fatalf("health %v", h)
	}
	t.Logf("%d handshakes in %v", n, time.Since(start))
}

// Nothing the server writes (error messages, close reasons) and no credential
// in the ws address reaches the logs, the events, the Stats or the Path's
// Snapshot.
func TestRedactsServerTextAndAddressCredentials(t *testing.T) {
	const secret = "SECRET-7f3a"
	h := newHostile(t, func(c *hconn, n int64) {
		m, ok := c.next()
		if !ok {
			return
		}
		if n == 1 {
			_ = c.tick("snapshot", 0, "")
			_ = c.send(map[string]any{"type": "error", "message": "bad token " + secret})
			_ = c.tick("tick", 1, "")
			c.mu.Lock()
			_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "token "+secret+" revoked"), time.Now().Add(time.Second))
			c.mu.Unlock()
			c.drain()
			return
		}
		if _, ok := m.resumeFrom(px); ok && n == 2 {
			_ = c.tick("tick", 2, "")
			c.mu.Lock()
			_ = c.ws.WriteMessage(websocket.TextMessage, []byte("not json "+secret)) // a bad frame
			c.mu.Unlock()
		}
		c.drain()
	})
	var logs bytes.Buffer
	var logMu sync.Mutex
	rec, ev := &recorder{}, &events{}
	cfg := fastConfig(rec, px)
	cfg.OnEvent = ev.hook
	cfg.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	path := hostilePath(t, h, "?token="+secret)
	s := startStream(t, path, cfg)
	// The count comes before the event that drops the connection: wait for both.
	eventually(t, "the bad frame", func() bool {
		if s.Stats().BadFrames < 1 || rec.lastSeq() != 2 {
			return false
		}
		for _, e := range ev.all() {
			if e.Err != nil && errors.Is(e.Err, ws.ErrBadFrame) {
				return true
			}
		}
		return false
	})

	st := s.Stats()
	if st.ServerErrors != 1 {
		t.Fatalf("stats %+v: want one server error", st)
	}
	var closed, bad bool
	var texts []string
	for _, e := range ev.all() {
		texts = append(texts, e.String())
		if e.Err != nil {
			texts = append(texts, e.Err.Error())
			closed = closed || errors.Is(e.Err, ws.ErrServerClosed) && strings.Contains(e.Err.Error(), "close code 1008")
			bad = bad || errors.Is(e.Err, ws.ErrBadFrame)
		}
	}
	if !closed || !bad {
		t.Fatalf("events %v: want a close (code 1008) and a bad frame, matched with errors.Is", texts)
	}
	snap, err := json.Marshal(path.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	// The configured addresses themselves are shown by the Path as written;
	// what the Stream reported must hold no secret.
	snapText := strings.ReplaceAll(string(snap), h.url("?token="+secret), "")
	logMu.Lock()
	logText := logs.String()
	logMu.Unlock()
	for what, text := range map[string]string{
		"logs": logText, "events": strings.Join(texts, "\n"), "stats": fmt.Sprintf("%+v", st), "snapshot": snapText,
	} {
		if strings.Contains(text, secret) {
			t.Errorf("%s hold the secret:\n%s", what, text)
		}
	}
	if !strings.Contains(logText, "bytes redacted") {
		t.Errorf("logs do not say the server's text was redacted:\n%s", logText)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"wss://md.example.com/ws?token=abc&x=1": "wss://md.example.com/ws?token=REDACTED&x=REDACTED",
		"ws://user:pass@10.0.0.1:8080/stream":   "ws://10.0.0.1:8080/stream",
		"wss://md.example.com/ws#frag":          "wss://md.example.com/ws",
		"wss://md.example.com/ws":               "wss://md.example.com/ws",
		"wss://h/ws?%zz=1":                      "wss://h/ws?REDACTED",
		"not a url token=abc":                   "REDACTED(unparseable address)",
	} {
		if got := ws.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// DefaultStreamConfig alone is invalid, and the error says what to fill in.
func TestDefaultStreamConfigAloneSaysWhatToSet(t *testing.T) {
	err := ws.DefaultStreamConfig().Validate()
	if !errors.Is(err, ws.ErrInvalidConfig) {
		t.Fatalf("err %v", err)
	}
	for _, want := range []string{"ws: ", "Streams", "Handler", `[]string{"px.EURUSD"}`, "func(ws.Message)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "pathdialer") {
		t.Errorf("error %q is labelled with another package", err)
	}
	cfg := ws.DefaultStreamConfig()
	cfg.Handler = func(ws.Message) {}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Streams is empty") {
		t.Errorf("no streams: %v", err)
	}
}

// A server that answers the handshake with garbage quoting a secret: the
// dial error, the Stream's logs and the Path's Snapshot hold its type, not
// its text.
func TestRedactsGarbageHandshakeResponse(t *testing.T) {
	const secret = "SECRET-91c2"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 4096)
				_, _ = c.Read(buf)
				_, _ = c.Write([]byte("XTTP/1.1 " + secret + "\r\n\r\n"))
			}()
		}
	}()
	u := "ws://" + ln.Addr().String() + "/ws"
	eps := []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Services: map[string]string{"ws": u}},
		{Name: "us", Region: "us", Services: map[string]string{"ws": u}},
	}
	path := newPathHarness(t, eps, nil).path
	d, err := ws.NewDialer(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = d.DialEndpoint(t.Context(), "eu", nil)
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), `ws: dial endpoint "eu"`) {
		t.Fatalf("dial error %v: want it labelled, without the server's text", err)
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	rec := &recorder{}
	cfg := fastConfig(rec, px)
	cfg.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := startStream(t, path, cfg)
	eventually(t, "failed dials", func() bool { return s.Stats().DialFailures >= 2 })
	snap, _ := json.Marshal(path.Snapshot())
	logMu.Lock()
	defer logMu.Unlock()
	if strings.Contains(logs.String(), secret) || strings.Contains(string(snap), secret) {
		t.Fatalf("the server's text leaked:\nlogs %s\nsnapshot %s", logs.String(), snap)
	}
	if !strings.Contains(logs.String(), "handshake failed") {
		t.Fatalf("logs do not name the failure:\n%s", logs.String())
	}
}

// lineProtocol is a minimal text protocol ("S <seq>", "T <seq> <padding>")
// whose Parse reads only the head of a message, so a flood test measures the
// Stream's buffering, not JSON decoding.
type lineProtocol struct{}

func (lineProtocol) Subscribe([]string) ([]byte, error)       { return []byte("sub"), nil }
func (lineProtocol) Resume(map[string]uint64) ([]byte, error) { return []byte("resume"), nil }
func (lineProtocol) Parse(data []byte) (ws.Frame, error) {
	var kind byte
	var seq uint64
	head := data[:min(len(data), 32)]
	if _, err := fmt.Sscanf(string(head), "%c %d", &kind, &seq); err != nil {
		return ws.Frame{}, err
	}
	k := ws.FrameTick
	if kind == 'S' {
		k = ws.FrameSnapshot
	}
	return ws.Frame{Kind: k, Stream: px, Seq: seq}, nil
}

// A server that floods messages just under the read limit while the Handler
// is stuck: the Stream holds at most (QueueLength+3) of them (doc.go's worst
// case), then stops reading; nothing is lost when the Handler resumes.
func TestMemoryBoundedUnderFloodWithSlowHandler(t *testing.T) {
	const frames = 40 // 40 MiB if nothing stopped reading
	pad := bytes.Repeat([]byte{'x'}, (1<<20)-64)
	var sent atomic.Int64
	h := newHostile(t, func(c *hconn, n int64) {
		if _, ok := c.next(); !ok || n > 1 {
			c.drain()
			return
		}
		write := func(b []byte) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			_ = c.ws.SetWriteDeadline(time.Now().Add(time.Minute))
			return c.ws.WriteMessage(websocket.TextMessage, b)
		}
		_ = write([]byte("S 0"))
		for q := 1; q <= frames; q++ {
			if write(append([]byte(fmt.Sprintf("T %d ", q)), pad...)) != nil {
				break
			}
			sent.Add(1)
		}
		c.drain()
	})
	release := make(chan struct{})
	var last atomic.Uint64
	var bad atomic.Bool
	cfg := fastConfig(&recorder{}, px)
	cfg.Protocol = lineProtocol{}
	cfg.QueueLength = 4
	cfg.PingInterval, cfg.PongTimeout = time.Minute, time.Minute // the flood may hold pongs back
	cfg.Handler = func(m ws.Message) {
		if m.Seq != 0 && m.Seq != last.Load()+1 {
			bad.Store(true)
		}
		last.Store(m.Seq)
		if m.Seq == 1 {
			<-release
		}
	}
	s := startStream(t, hostilePath(t, h, ""), cfg)
	defer close(release)
	// Wait until the server cannot write any more: the client stopped reading.
	prev, still := int64(-1), 0
	eventually(t, "the server to block", func() bool {
		n := sent.Load()
		if n == prev && n > 0 {
			still++
		} else {
			prev, still = n, 0
		}
		return still >= 100 // 500 ms without progress
	})
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	bound := uint64(cfg.QueueLength+3) * uint64(cfg.ReadLimit) * 5 / 4
	const slack = 12 << 20 // the server's buffers and the test binary's own heap
	if ms.HeapInuse > bound+slack {
		t.Fatalf("heap in use %d MiB with the Handler stuck (server sent %d MiB), want <= %d MiB + %d MiB", ms.HeapInuse>>20, sent.Load(), bound>>20, slack>>20)
	}
	if sent.Load() >= frames {
		t.Fatalf("the server wrote all %d frames: the client did not stop reading", frames)
	}
	t.Logf("server blocked after %d frames of 1 MiB; heap in use %d MiB (bound %d MiB + %d MiB)", sent.Load(), ms.HeapInuse>>20, bound>>20, slack>>20)
	release <- struct{}{}
	deadline := time.Now().Add(time.Minute) // 1 MiB frames on a loaded machine
	for last.Load() != frames {
		if time.Now().After(deadline) {
			t.Fatalf("delivered up to %d of %d; stats %+v", last.Load(), frames, s.Stats())
		}
		<-time.After(5 * time.Millisecond)
	}
	if bad.Load() {
		t.Fatal("messages out of order or missing")
	}
	if st := s.Stats(); st.OversizedFrames != 0 || st.Reconnects != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A region whose server never repairs a gap is given up on at twice
// GapTimeout, and the next round tries the other region first: the stream
// falls back there, resumes, and is repaired.
func TestStallFallsBackToAnotherRegion(t *testing.T) {
	bad := newHostile(t, func(c *hconn, n int64) {
		subscribed := false
		for m, ok := c.next(); ok; m, ok = c.next() {
			if m.Type == "subscribe" && n == 1 && !subscribed {
				subscribed = true
				_ = c.tick("snapshot", 0, "")
				_ = c.tick("tick", 1, "")
				_ = c.tick("tick", 3, "") // 2 is never replayed
			}
		}
	})
	good := newHostile(t, func(c *hconn, n int64) {
		for m, ok := c.next(); ok; m, ok = c.next() {
			if a, ok := m.resumeFrom(px); ok {
				for q := a + 1; q <= 4; q++ {
					_ = c.tick("tick", q, "")
				}
			}
		}
	})
	eps := []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Services: map[string]string{"ws": bad.url("")}},
		{Name: "us", Region: "us", Services: map[string]string{"ws": good.url("")}},
	}
	path := newPathHarness(t, eps, nil).path
	rec := &recorder{}
	cfg := fastConfig(rec, px)
	cfg.GapTimeout = 200 * time.Millisecond
	s := startStream(t, path, cfg)
	deadline := time.Now().Add(10 * time.Second)
	for rec.lastSeq() != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: delivered %s, stats %+v", seqs(rec.snapshot()), s.Stats())
		}
		<-time.After(5 * time.Millisecond)
	}
	if got := seqs(rec.snapshot()); got != "S0 1 2 3 4" {
		t.Fatalf("delivered %s", got)
	}
	st := s.Stats()
	if st.StallReconnects != 1 || st.Fallbacks != 1 || st.Endpoint != "us" || st.GapsRepaired != 1 || bad.conns.Load() != 1 {
		t.Fatalf("stats %+v, %d connections to eu: want one stall, then us first", st, bad.conns.Load())
	}
	if h := s.Health(); h != ws.HealthLive {
		t.Fatalf("health %v", h)
	}
}
