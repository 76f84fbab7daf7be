package ws_test

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// bombSize is what the compression bomb decompresses to: 64 MiB of JSON,
// about 64 KiB on the wire at deflate's best compression. It is capped so
// that a client without a bound (io.ReadAll of it) stays under ~200 MiB.
const bombSize = 64 << 20

// countingListener counts the bytes the server writes, on the wire.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, n: l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// compressingServer is a real gorilla server that negotiates permessage-deflate
// (when the client offers it) and runs serve per connection, n counting from 1.
// wire counts the bytes it wrote.
func compressingServer(t *testing.T, serve func(c *websocket.Conn, n int64)) (url string, wire *atomic.Int64) {
	t.Helper()
	wire = &atomic.Int64{}
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{EnableCompression: true}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		// Read the client's messages (and notice when it goes away) while
		// serve writes; serve owns the writes.
		gone := make(chan struct{})
		in := make(chan []byte, 64)
		go func() {
			defer close(gone)
			defer close(in)
			for {
				_, data, err := c.ReadMessage()
				if err != nil {
					return
				}
				select {
				case in <- data:
				default:
				}
			}
		}()
		<-in // the client's subscribe or resume
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		serve(c, conns.Add(1))
		<-gone
	}))
	srv.Listener = countingListener{Listener: srv.Listener, n: wire}
	srv.Start()
	t.Cleanup(srv.Close)
	return "ws://" + strings.TrimPrefix(srv.URL, "http://") + "/ws", wire
}

// writeBomb sends one compressed message of size bytes, the start of a JSON
// object whose string never ends ({"pad":"aaaa...), streamed through the
// compressor in 64 KiB chunks (the server holds no more than that).
func writeBomb(c *websocket.Conn, size int) error {
	if err := c.SetCompressionLevel(flate.BestCompression); err != nil {
		return err
	}
	w, err := c.NextWriter(websocket.BinaryMessage)
	if err != nil {
		return err
	}
	head := []byte(`{"pad":"`)
	if _, err := w.Write(head); err != nil {
		return err
	}
	chunk := bytes.Repeat([]byte{'a'}, 64<<10)
	for left := size - len(head); left > 0; left -= len(chunk) {
		if _, err := w.Write(chunk[:min(len(chunk), left)]); err != nil {
			return err
		}
	}
	return w.Close()
}

// allocatedDuring returns the bytes the process allocated while f ran
// (runtime.MemStats.TotalAlloc): an upper bound on the heap growth f caused.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A compression bomb (64 MiB of JSON in ~64 KiB of deflate, far under the
// 1 MiB ReadLimit on the wire) is refused once its decompressed size passes
// ReadLimit: counted as oversized, the connection replaced, the stream
// resumed; the process allocates a few MiB, not the 64 MiB.
func TestCompressionBombRefusedByStream(t *testing.T) {
	url, wire := compressingServer(t, func(c *websocket.Conn, n int64) {
		if n == 1 {
			writeTick(c, "snapshot", 0)
			writeTick(c, "tick", 1)
			_ = writeBomb(c, bombSize)
			return
		}
		// The resume: ticks 2 and 3.
		writeTick(c, "tick", 2)
		writeTick(c, "tick", 3)
	})
	eps := []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Services: map[string]string{"ws": url}},
		{Name: "us", Region: "us", Services: map[string]string{"ws": url}},
	}
	path := newPathHarness(t, eps, nil).path
	rec := &recorder{}
	cfg := fastConfig(rec, px)
	cfg.Dialer = &websocket.Dialer{EnableCompression: true, HandshakeTimeout: time.Second}
	cfg.PingInterval, cfg.PongTimeout = time.Second, 5*time.Second // decompressing on a loaded host
	var s *ws.Stream
	alloc := allocatedDuring(func() {
		s = startStream(t, path, cfg)
		eventually(t, "tick 3", func() bool { return rec.lastSeq() == 3 })
	})
	st := s.Stats()
	t.Logf("bomb: %d MiB decompressed, server wrote %d KiB in all; client allocated %d KiB; stats %+v",
		bombSize>>20, wire.Load()>>10, alloc>>10, st)
	if got := seqs(rec.snapshot()); got != "S0 1 2 3" {
		t.Fatalf("delivered %s", got)
	}
	if st.OversizedFrames != 1 || st.BadFrames != 0 || st.Reconnects != 1 {
		t.Fatalf("stats %+v: want the bomb counted as one oversized frame and one reconnect", st)
	}
	// The bound: ReadLimit (1 MiB) read into a growing buffer (io.ReadAll:
	// at most ~3 × ReadLimit in all), the decompressor's state (~50 KiB per
	// message), the server's compressor (~1 MiB) and the Path's probes.
	const bound = 16 << 20
	if alloc > bound {
		t.Fatalf("allocated %d MiB while refusing a %d MiB compressed message; want <= %d MiB", alloc>>20, bombSize>>20, bound>>20)
	}
	if w := wire.Load(); w >= cfg.ReadLimit {
		t.Fatalf("the server wrote %d bytes: the bomb should be under ReadLimit on the wire", w)
	}
}

// A Conn from the Dialer holds a compressed message to its read limit as
// decompressed (NextReader, ReadMessage and ReadJSON alike): compressed
// messages under the limit are read whole, a bomb is an error wrapping
// websocket.ErrReadLimit, which stays for every later read.
func TestDialerConnBoundsDecompressedMessages(t *testing.T) {
	const limit = 1 << 20
	url, _ := compressingServer(t, func(c *websocket.Conn, n int64) {
		_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"tick","stream":"`+strings.Repeat("p", limit-64)+`","seq":1}`))
		_ = c.WriteJSON(map[string]any{"type": "tick", "seq": 2})
		_ = writeBomb(c, bombSize)
		_ = c.WriteJSON(map[string]any{"type": "tick", "seq": 3})
	})
	eps := []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Services: map[string]string{"ws": url}},
		{Name: "us", Region: "us", Services: map[string]string{"ws": url}},
	}
	path := newPathHarness(t, eps, nil).path
	d, err := ws.NewDialer(path, &websocket.Dialer{EnableCompression: true, HandshakeTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, read := range []string{"ReadMessage", "NextReader", "ReadJSON"} {
		t.Run(read, func(t *testing.T) {
			c, _, err := d.DialReadOnly(t.Context(), "eu", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetReadLimit(limit)
			if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"subscribe"}`)); err != nil {
				t.Fatal(err)
			}
			readOne := func() (int, error) {
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				switch read {
				case "ReadMessage":
					_, p, err := c.ReadMessage()
					return len(p), err
				case "NextReader":
					_, r, err := c.NextReader()
					if err != nil {
						return 0, err
					}
					n := 0
					buf := make([]byte, 32<<10)
					for {
						k, err := r.Read(buf)
						n += k
						if errors.Is(err, io.EOF) {
							return n, nil
						}
						if err != nil {
							return n, err
						}
					}
				default:
					var v struct{ Seq int }
					err := c.ReadJSON(&v)
					return v.Seq, err
				}
			}
			if n, err := readOne(); err != nil || n == 0 {
				t.Fatalf("a compressed message of %d bytes (under the limit): %d, %v", limit-30, n, err)
			}
			if _, err := readOne(); err != nil {
				t.Fatalf("a small compressed message: %v", err)
			}
			var n int
			alloc := allocatedDuring(func() { n, err = readOne() })
			if !errors.Is(err, websocket.ErrReadLimit) {
				t.Fatalf("the bomb read %d bytes with %v; want an error wrapping websocket.ErrReadLimit", n, err)
			}
			if alloc > 8<<20 {
				t.Fatalf("allocated %d MiB reading a %d MiB bomb with a %d MiB limit", alloc>>20, bombSize>>20, limit>>20)
			}
			if _, err := readOne(); !errors.Is(err, websocket.ErrReadLimit) {
				t.Fatalf("read after the bomb: %v; want the limit's error again", err)
			}
			t.Logf("%s: refused the bomb after allocating %d KiB: %v", read, alloc>>10, err)
		})
	}
}
