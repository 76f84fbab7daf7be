package ws_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// pipeNet is an in-memory network for synctest bubbles: a net/http server
// with a gorilla upgrader serves connections dialed through Dial (net.Pipe),
// so the Stream, the Path and the server all run on the bubble's fake clock.
type pipeNet struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.ch:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error { p.once.Do(func() { close(p.done) }); return nil }

func (p *pipeNet) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }

func (p *pipeNet) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	a, b := net.Pipe()
	select {
	case p.ch <- b:
		return a, nil
	case <-p.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// serveSync starts an http.Server with a gorilla upgrader on an in-memory
// network and a Path over it (two endpoints, same server); serve runs per
// connection with the client's messages (closed when the client goes).
func serveSync(t *testing.T, serve func(c *websocket.Conn, n int, in <-chan clientMsg)) *pathdialer.Path {
	t.Helper()
	return serveSyncWith(t, nil, serve)
}

// serveSyncWith is serveSync with mutate applied to the Path's config (and
// its probe switches) before the Path starts.
func serveSyncWith(t *testing.T, mutate func(*pathdialer.Config, *pathtest.Probes), serve func(c *websocket.Conn, n int, in <-chan clientMsg)) *pathdialer.Path {
	t.Helper()
	pn := &pipeNet{ch: make(chan net.Conn), done: make(chan struct{})}
	n := 0
	var mu sync.Mutex
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		in := make(chan clientMsg, 64)
		go func() {
			defer close(in)
			for {
				_, data, err := c.ReadMessage()
				if err != nil {
					return
				}
				var m clientMsg
				_ = json.Unmarshal(data, &m)
				m.At = time.Now()
				in <- m
			}
		}()
		serve(c, k, in)
		for range in {
		}
	})}
	go func() { _ = srv.Serve(pn) }()
	t.Cleanup(func() { _ = srv.Close() })
	eps := []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{"ws": "ws://md.test/ws"}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"ws": "ws://md.test/ws"}},
	}
	probes := pathtest.NewProbes("eu", "us")
	cfg := pathtest.FastConfig(eps, probes)
	cfg.AllowPlaintext = true // ws:// over an in-memory network
	cfg.Dial = pn.Dial
	if mutate != nil {
		mutate(&cfg, probes)
	}
	return pathtest.Start(t, cfg)
}

func writeTick(c *websocket.Conn, kind string, seq uint64) {
	_ = c.WriteJSON(map[string]any{"type": kind, "stream": px, "seq": seq})
}

// The ladder on the clock: a gap the server never repairs is resumed at once
// and at exactly 1/8, 3/8 and 7/8 of GapTimeout, a snapshot is asked for at
// GapTimeout, the connection is dropped at twice GapTimeout and the next one
// comes within the backoff window; the health is SUSPENDED exactly
// SuspendAfter after the gap, and LIVE again once a server repairs it.
func TestLadderOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		type got struct {
			conn int
			typ  string
			at   time.Duration
		}
		var mu sync.Mutex
		var msgs []got
		var closedAt time.Duration
		repair := make(chan struct{})
		path := serveSync(t, func(c *websocket.Conn, n int, in <-chan clientMsg) {
			for m := range in {
				mu.Lock()
				msgs = append(msgs, got{n, m.Type, m.At.Sub(t0)})
				mu.Unlock()
				switch {
				case n == 1 && m.Type == "subscribe" && m.At.Equal(t0):
					writeTick(c, "snapshot", 0)
					writeTick(c, "tick", 1)
					writeTick(c, "tick", 3)
				case n > 1 && m.Type == "resume":
					select {
					case <-repair:
						writeTick(c, "tick", 2)
						writeTick(c, "tick", 3)
					default:
						writeTick(c, "tick", 3)
					}
				}
			}
			mu.Lock()
			if n == 1 {
				closedAt = time.Since(t0)
			}
			mu.Unlock()
		})
		rec, ev := &recorder{}, &events{}
		cfg := ws.DefaultStreamConfig()
		cfg.Streams, cfg.Handler, cfg.OnEvent = []string{px}, rec.handle, ev.hook
		cfg.GapTimeout = 800 * time.Millisecond
		cfg.SuspendAfter = 5 * time.Second
		cfg.Backoff = ws.Backoff{Base: time.Second, Cap: time.Second}
		s := startStream(t, path, cfg)

		time.Sleep(2*cfg.GapTimeout + time.Millisecond)
		synctest.Wait()
		mu.Lock()
		var first []got
		for _, m := range msgs {
			if m.conn == 1 {
				first = append(first, m)
			}
		}
		want := []got{{1, "subscribe", 0}, {1, "resume", 0}, {1, "resume", 100 * time.Millisecond},
			{1, "resume", 300 * time.Millisecond}, {1, "resume", 700 * time.Millisecond}, {1, "subscribe", 800 * time.Millisecond}}
		if len(first) != len(want) {
			t.Fatalf("first connection saw %v, want %v", first, want)
		}
		for i := range want {
			if first[i] != want[i] {
				t.Fatalf("first connection saw %v, want %v", first, want)
			}
		}
		if closedAt != 2*cfg.GapTimeout {
			t.Fatalf("first connection closed at %v, want %v", closedAt, 2*cfg.GapTimeout)
		}
		mu.Unlock()
		if h := s.Health(); h != ws.HealthRecovering {
			t.Fatalf("health %v at 2×GapTimeout", h)
		}

		// The next connection comes within one backoff window (failed = 1).
		time.Sleep(2 * time.Second)
		synctest.Wait()
		mu.Lock()
		var second *got
		for i := range msgs {
			if msgs[i].conn == 2 {
				second = &msgs[i]
				break
			}
		}
		mu.Unlock()
		if second == nil || second.typ != "resume" || second.at < 2*cfg.GapTimeout || second.at >= 2*cfg.GapTimeout+cfg.Backoff.Cap {
			t.Fatalf("second connection's first message %+v, want a resume within a backoff window after %v", second, 2*cfg.GapTimeout)
		}

		// SUSPENDED exactly SuspendAfter after the gap began.
		time.Sleep(cfg.SuspendAfter - time.Since(t0) - time.Nanosecond)
		synctest.Wait()
		if h := s.Health(); h == ws.HealthSuspended {
			t.Fatalf("SUSPENDED before SuspendAfter")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if h := s.Health(); h != ws.HealthSuspended {
			t.Fatalf("health %v at SuspendAfter", h)
		}
		var suspendedAt time.Duration
		for _, e := range ev.all() {
			if e.Kind == ws.StreamEventHealth && e.To == ws.HealthSuspended {
				suspendedAt = e.Time.Sub(t0)
			}
		}
		if suspendedAt != cfg.SuspendAfter {
			t.Fatalf("SUSPENDED event at %v, want %v", suspendedAt, cfg.SuspendAfter)
		}

		// A server that repairs: the next connection's resume is replayed.
		close(repair)
		for range 100 {
			time.Sleep(cfg.GapTimeout)
			synctest.Wait()
			if rec.lastSeq() == 3 {
				break
			}
		}
		if got := seqs(rec.snapshot()); got != "S0 1 2 3" {
			t.Fatalf("delivered %s, want S0 1 2 3", got)
		}
		if h := s.Health(); h != ws.HealthLive {
			t.Fatalf("health %v after the repair", h)
		}
		st := s.Stats()
		if st.Gaps < 1 || st.GapsRepaired != 1 || st.StallReconnects < 1 || st.SnapshotRequests < 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// A reconnect round with no candidate (the active endpoint fenced by a switch
// whose fence keeps failing, and no reason yet to look elsewhere) is not
// repeated at once, whatever the Backoff and the jitter draw: each empty round
// is followed by MinEmptyRoundWait. The stream connects to the other endpoint
// after FailuresBeforeFallback (3) empty rounds, 3×MinEmptyRoundWait after it
// started, and drew the jitter once per wait from StreamConfig.Rand.
func TestEmptyRoundsDoNotSpin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fenceFails := errors.New("fence refused")
		path := serveSyncWith(t, func(cfg *pathdialer.Config, probes *pathtest.Probes) {
			cfg.Fencer = func(context.Context, pathdialer.Fence) error { return fenceFails }
			probes.Down["eu"].Store(true)
		}, func(c *websocket.Conn, n int, in <-chan clientMsg) {
			for m := range in {
				if m.Type == "subscribe" {
					writeTick(c, "snapshot", 0)
				}
			}
		})
		for !path.Fenced("eu") {
			time.Sleep(10 * time.Millisecond)
		}
		if act, _ := path.Active(); act.Name != "eu" {
			t.Fatalf("active %s while the fence of eu fails; want eu (fenced)", act.Name)
		}
		rec := &recorder{}
		var draws atomic.Int64
		cfg := ws.DefaultStreamConfig()
		cfg.Streams, cfg.Handler = []string{px}, rec.handle
		cfg.Backoff = ws.Backoff{Base: time.Nanosecond, Cap: time.Nanosecond}
		cfg.Rand = func() float64 { draws.Add(1); return 0 }
		s := startStream(t, path, cfg)

		time.Sleep(3*ws.MinEmptyRoundWait - time.Millisecond)
		synctest.Wait()
		if st := s.Stats(); st.Connects != 0 || draws.Load() != 3 {
			t.Fatalf("just before 3 empty-round waits end: stats %+v, %d jitter draws; want no connect, 3 draws", st, draws.Load())
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if st := s.Stats(); st.Connects != 1 || st.Endpoint != "us" || draws.Load() != 3 {
			t.Fatalf("after 3 empty-round waits: stats %+v, %d jitter draws; want one connect to us, 3 draws", st, draws.Load())
		}
	})
}
