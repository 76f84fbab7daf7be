package ws_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// epoch is the common time base of every region's event log, so that events
// of two regions can be ordered.
var epoch = time.Now()

// region is a gorilla WebSocket server speaking the JSON protocol, with a replay
// buffer per stream, behind a faultnet relay. Ticks come from a shared source.
type region struct {
	name   string
	srv    *httptest.Server
	relay  *faultnet.Relay
	replay uint64 // ticks kept for resume

	mu     sync.Mutex
	head   map[string]uint64
	frozen bool     // replication lag: ticks queued, not applied
	queued [][2]any // (stream, seq)
	conns  map[*sconn]map[string]bool
	refuse int // next handshakes answered 503 with Retry-After
	retryS int
	log    []string // "attach <stream> <mode> <µs>", "close <µs>" since epoch

	handshakes atomic.Int64
	attempts   atomic.Int64
}

type sconn struct {
	ws *websocket.Conn
	mu sync.Mutex
}

func (c *sconn) write(v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(2 * time.Second))
	_ = c.ws.WriteJSON(v)
}

type tickMsg struct {
	Type   string `json:"type"`
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	Price  string `json:"price"`
}

func newRegion(t *testing.T, name string, replay uint64) *region {
	t.Helper()
	r := &region{name: name, replay: replay, head: map[string]uint64{}, conns: map[*sconn]map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	relay, err := faultnet.Listen(strings.TrimPrefix(r.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	r.relay = relay
	t.Cleanup(func() { _ = relay.Close() })
	return r
}

// setRefuse answers the next n handshakes 503 with Retry-After: 0.
func (r *region) setRefuse(n int) {
	r.mu.Lock()
	r.refuse, r.retryS = n, 0
	r.mu.Unlock()
}

func (r *region) url() string { return "ws://" + r.relay.Addr() + "/ws" }

func (r *region) event(s string) {
	r.log = append(r.log, fmt.Sprintf("%s %d", s, time.Since(epoch).Microseconds()))
}

func (r *region) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

func (r *region) serve(w http.ResponseWriter, req *http.Request) {
	r.attempts.Add(1)
	r.mu.Lock()
	if r.refuse > 0 {
		r.refuse--
		ra := r.retryS
		r.mu.Unlock()
		w.Header().Set("Retry-After", fmt.Sprint(ra))
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	r.mu.Unlock()
	up := websocket.Upgrader{}
	wc, err := up.Upgrade(w, req, nil)
	if err != nil {
		return
	}
	r.handshakes.Add(1)
	c := &sconn{ws: wc}
	r.mu.Lock()
	r.conns[c] = map[string]bool{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.conns, c)
		r.event("close")
		r.mu.Unlock()
		_ = wc.Close()
	}()
	for {
		_, data, err := wc.ReadMessage()
		if err != nil {
			return
		}
		var in struct {
			Type    string          `json:"type"`
			Streams json.RawMessage `json:"streams"`
		}
		if json.Unmarshal(data, &in) != nil {
			continue
		}
		r.mu.Lock()
		switch in.Type {
		case "subscribe":
			var names []string
			_ = json.Unmarshal(in.Streams, &names)
			for _, s := range names {
				r.event("attach " + s + " subscribe") // before the client can see the answer
				c.write(tickMsg{Type: "snapshot", Stream: s, Seq: r.head[s]})
				r.conns[c][s] = true
			}
		case "resume":
			var after map[string]uint64
			_ = json.Unmarshal(in.Streams, &after)
			for s, a := range after {
				h := r.head[s]
				// Events are logged before the client can see the answer.
				if a <= h && h-a <= r.replay {
					r.event("attach " + s + " resume")
					for q := a + 1; q <= h; q++ {
						c.write(tickMsg{Type: "tick", Stream: s, Seq: q})
					}
				} else {
					r.event("attach " + s + " snapshot")
					c.write(tickMsg{Type: "snapshot", Stream: s, Seq: h})
				}
				r.conns[c][s] = true
			}
		}
		r.mu.Unlock()
	}
}

// apply records tick seq of stream and sends it to attached connections.
func (r *region) apply(stream string, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frozen {
		r.queued = append(r.queued, [2]any{stream, seq})
		return
	}
	r.applyLocked(stream, seq)
}

func (r *region) applyLocked(stream string, seq uint64) {
	r.head[stream] = seq
	for c, subs := range r.conns {
		if subs[stream] {
			c.write(tickMsg{Type: "tick", Stream: stream, Seq: seq, Price: "1.0843"})
		}
	}
}

func (r *region) setFrozen(f bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frozen = f
	if !f {
		for _, q := range r.queued {
			r.applyLocked(q[0].(string), q[1].(uint64))
		}
		r.queued = nil
	}
}

// source publishes ticks of one stream to every region (instant replication).
type source struct {
	mu      sync.Mutex
	seq     uint64
	regions []*region
}

func (s *source) publish(stream string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	for _, r := range s.regions {
		r.apply(stream, s.seq)
	}
	return s.seq
}

// harness is a Path over regions whose probe results the test controls.
type harness struct {
	path *pathdialer.Path
	down map[string]*atomic.Bool
}

func newHarness(t *testing.T, regions []*region, mutate func(*pathdialer.Config)) *harness {
	t.Helper()
	var eps []pathdialer.Endpoint
	for _, r := range regions {
		eps = append(eps, pathdialer.Endpoint{Name: r.name, Region: r.name, Services: map[string]string{"ws": r.url()}})
	}
	return newPathHarness(t, eps, mutate)
}

// newPathHarness builds and starts a Path over eps (the first is the primary;
// priorities follow the order) with fast, test-controlled probes.
func newPathHarness(t *testing.T, eps []pathdialer.Endpoint, mutate func(*pathdialer.Config)) *harness {
	t.Helper()
	var names []string
	var ordered []pathdialer.Endpoint
	for i, ep := range eps {
		ep.Priority, ep.Primary = i, i == 0
		ordered = append(ordered, ep)
		names = append(names, ep.Name)
	}
	probes := pathtest.NewProbes(names...)
	cfg := pathtest.FastConfig(ordered, probes)
	cfg.InflightGrace = 10 * time.Millisecond
	if mutate != nil {
		mutate(&cfg)
	}
	return &harness{down: probes.Down, path: pathtest.Start(t, cfg)}
}

// recorder is a Handler that keeps what it saw.
type recorder struct {
	mu   sync.Mutex
	msgs []ws.Message
}

func (r *recorder) handle(m ws.Message) {
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []ws.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ws.Message(nil), r.msgs...)
}

func (r *recorder) lastSeq() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.msgs) == 0 {
		return 0
	}
	return r.msgs[len(r.msgs)-1].Seq
}

// fastConfig is a stream config with test-sized timers.
func fastConfig(rec *recorder, streams ...string) ws.StreamConfig {
	cfg := ws.DefaultStreamConfig()
	cfg.Streams = streams
	cfg.Handler = rec.handle
	cfg.Backoff = ws.Backoff{Base: 10 * time.Millisecond, Cap: 100 * time.Millisecond}
	cfg.PingInterval = 50 * time.Millisecond
	cfg.PongTimeout = 100 * time.Millisecond
	cfg.DialTimeout = 300 * time.Millisecond
	cfg.MigrateTimeout = time.Second
	return cfg
}

func startStream(t *testing.T, path *pathdialer.Path, cfg ws.StreamConfig) *ws.Stream {
	t.Helper()
	s, err := ws.NewStream(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// eventually polls cond (bounded) until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-time.After(5 * time.Millisecond)
	}
}

// publishUntil publishes a tick every ms on stream until stop returns true.
func publishUntil(t *testing.T, src *source, stream string, stop func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !stop() {
		if time.Now().After(deadline) {
			t.Fatal("timed out publishing")
		}
		src.publish(stream)
		<-time.After(time.Millisecond)
	}
}

// checkExactlyOnce checks that the messages are an initial snapshot at some k,
// then k+1..want, each once, in order, with no other snapshot.
func checkExactlyOnce(t *testing.T, msgs []ws.Message, want uint64) {
	t.Helper()
	if len(msgs) == 0 || !msgs[0].Snapshot {
		t.Fatalf("first message %+v, want the initial snapshot", msgs[:min(1, len(msgs))])
	}
	k := msgs[0].Seq
	for i, m := range msgs {
		if m.Seq != k+uint64(i) {
			t.Fatalf("message %d has seq %d (snapshot=%v from %s), want %d: not every sequence once, in order", i, m.Seq, m.Snapshot, m.Endpoint, k+uint64(i))
		}
		if i > 0 && m.Snapshot {
			t.Fatalf("unexpected snapshot at %d", m.Seq)
		}
	}
	if got := msgs[len(msgs)-1].Seq; got < want {
		t.Fatalf("last seq %d, want >= %d", got, want)
	}
}
