package faultnet

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// memPair dials addr on n and accepts the server side.
func memPair(t *testing.T, n *MemNetwork, ln net.Listener, addr string) (client, server net.Conn) {
	t.Helper()
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		acc <- c
	}()
	c, err := n.Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return c, <-acc
}

// readAt reads len(want) bytes and returns the virtual time it took.
func readAt(t *testing.T, c net.Conn, want string) time.Duration {
	t.Helper()
	start := time.Now()
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
		t.Fatalf("read %q, %v; want %q", buf, err, want)
	}
	return time.Since(start)
}

func TestMemNetworkFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork(1, time.Millisecond)
		ln, err := n.Listen("eu.rest:443")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if _, err := n.Listen("eu.rest:443"); err == nil {
			t.Fatal("second listen on one address succeeded")
		}
		start := time.Now()
		c, s := memPair(t, n, ln, "eu.rest:443")
		if d := time.Since(start); d != 2*time.Millisecond {
			t.Fatalf("dial took %v, want one round trip (2ms)", d)
		}
		// None: base latency, both ways.
		_, _ = c.Write([]byte("ping"))
		if d := readAt(t, s, "ping"); d != time.Millisecond {
			t.Fatalf("delivery took %v, want 1ms", d)
		}
		// Latency: delay + jitter within bounds, order kept.
		if err := n.SetFault("eu.rest:443", Latency(50*time.Millisecond, 10*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		_, _ = s.Write([]byte("a"))
		_, _ = s.Write([]byte("b"))
		if d := readAt(t, c, "ab"); d < 51*time.Millisecond || d > 61*time.Millisecond {
			t.Fatalf("latency delivery took %v, want 51..61ms", d)
		}
		// Blackhole: held, not dropped; a read deadline still fires.
		_ = n.SetFault("eu.rest:443", Blackhole())
		_, _ = c.Write([]byte("held"))
		_ = s.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := s.Read(make([]byte, 4)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read under blackhole = %v, want deadline exceeded", err)
		}
		_ = s.SetReadDeadline(time.Time{})
		go func() {
			time.Sleep(5 * time.Second)
			_ = n.SetFault("eu.rest:443", None())
		}()
		if d := readAt(t, s, "held"); d != 5*time.Second+time.Millisecond {
			t.Fatalf("held bytes arrived after %v, want 5.001s (at the heal)", d)
		}
		// Close: what was written is delivered, then EOF.
		_, _ = c.Write([]byte("last"))
		_ = c.Close()
		readAt(t, s, "last")
		if _, err := s.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("after close: %v, want EOF", err)
		}
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read on closed conn: %v", err)
		}
		_ = s.Close()
		// Down: live connections reset, dials refused; None listens again.
		c2, s2 := memPair(t, n, ln, "eu.rest:443")
		_ = n.SetFault("eu.rest:443", Down())
		if _, err := s2.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("read after Down: %v, want ECONNRESET", err)
		}
		if _, err := c2.Write([]byte("x")); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("write after Down: %v, want ECONNRESET", err)
		}
		if _, err := n.Dial(context.Background(), "tcp", "eu.rest:443"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial while Down: %v, want ECONNREFUSED", err)
		}
		if _, err := n.Dial(context.Background(), "tcp", "us.rest:443"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial to nothing: %v, want ECONNREFUSED", err)
		}
		_ = n.SetFault("eu.rest:443", None())
		c3, s3 := memPair(t, n, ln, "eu.rest:443")
		// Reset: once, then None.
		_ = n.SetFault("eu.rest:443", Reset())
		if _, err := c3.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("read after Reset: %v", err)
		}
		if f := n.Fault("eu.rest:443"); f.Kind != KindNone {
			t.Fatalf("fault after Reset = %v, want none", f)
		}
		for _, x := range []net.Conn{c2, s2, c3, s3} {
			_ = x.Close()
		}
		// Closing the listener ends Accept.
		done := make(chan error)
		go func() { _, err := ln.Accept(); done <- err }()
		synctest.Wait()
		_ = ln.Close()
		if err := <-done; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v", err)
		}
	})
}

// Jitter depends on the seed, the connection and the chunk only.
func TestMemNetworkJitterIsSeeded(t *testing.T) {
	draw := func(seed uint64) []time.Duration {
		n := NewMemNetwork(seed, 0)
		f := Latency(time.Millisecond, time.Second)
		var out []time.Duration
		for k := uint64(0); k < 8; k++ {
			out = append(out, n.delay(f, "a:1", 1, k))
		}
		return out
	}
	a, b, c := draw(7), draw(7), draw(8)
	same, differ := true, false
	for i := range a {
		same = same && a[i] == b[i]
		differ = differ || a[i] != c[i]
		if a[i] < time.Millisecond || a[i] > time.Millisecond+time.Second {
			t.Fatalf("draw %v out of bounds", a[i])
		}
	}
	if !same || !differ {
		t.Fatalf("seed 7: %v / %v; seed 8: %v", a, b, c)
	}
}

// A reset reaches each side of each connection after its own one-way delay,
// drawn like a chunk's: the readers of several connections hit at once do
// not all wake at one virtual instant (where the scheduler, not the seed,
// would order them), and the instants are the same in every run.
func TestMemNetworkResetArrivesAfterOwnDelay(t *testing.T) {
	run := func() []time.Duration {
		var out []time.Duration
		synctest.Test(t, func(t *testing.T) {
			n := NewMemNetwork(3, time.Millisecond)
			n.SetBaseJitter(time.Millisecond, func(string) bool { return true })
			ln, err := n.Listen("eu.rest:443")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var conns []net.Conn
			for i := range 3 {
				c, s := memPair(t, n, ln, "eu.rest:443")
				// Different bytes on each: content-keyed draws differ.
				if _, err := c.Write([]byte{'a' + byte(i)}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Read(make([]byte, 1)); err != nil {
					t.Fatal(err)
				}
				conns = append(conns, c, s)
			}
			start := time.Now()
			out = make([]time.Duration, len(conns))
			done := make(chan struct{})
			for i, c := range conns {
				go func() {
					defer func() { done <- struct{}{} }()
					if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
						t.Errorf("conn %d: read after Reset = %v, want ECONNRESET", i, err)
					}
					out[i] = time.Since(start)
				}()
			}
			synctest.Wait()
			_ = n.SetFault("eu.rest:443", Reset())
			for range conns {
				<-done
			}
			for _, c := range conns {
				_ = c.Close()
			}
		})
		return out
	}
	a, b := run(), run()
	seen := map[time.Duration]bool{}
	for i, d := range a {
		if d < time.Millisecond || d > 2*time.Millisecond {
			t.Fatalf("side %d saw the reset after %v, want one one-way delay (1ms..2ms): %v", i, d, a)
		}
		if seen[d] {
			t.Fatalf("two sides saw the reset at one instant (%v): %v", d, a)
		}
		seen[d] = true
		if b[i] != d {
			t.Fatalf("run 1 %v, run 2 %v: not the same instants", a, b)
		}
	}
}

// SetTimeKeyed: chunks written at one instant on one connection get one
// draw, whatever their number on the connection; chunks at other instants
// draw anew.
func TestMemNetworkTimeKeyedDraws(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewMemNetwork(5, 0)
		n.SetBaseJitter(time.Millisecond, func(string) bool { return false })
		n.SetTimeKeyed(func(a string) bool { return a == "eu.h2:443" })
		f := None()
		a0, a7 := n.delay(f, "eu.h2:443", 1, 0, []byte("x")), n.delay(f, "eu.h2:443", 1, 7, []byte("yy"))
		if a0 != a7 {
			t.Fatalf("time-keyed: chunks 0 and 7 at one instant drew %v and %v", a0, a7)
		}
		var later []time.Duration
		for range 4 {
			time.Sleep(time.Microsecond)
			later = append(later, n.delay(f, "eu.h2:443", 1, 0, []byte("x")))
		}
		differ := false
		for _, d := range later {
			differ = differ || d != a0
		}
		if !differ {
			t.Fatalf("time-keyed: chunk 0 drew %v at five instants", a0)
		}
		// Other addresses keep the chunk-number key.
		b0, b7 := n.delay(f, "eu.rest:443", 1, 0, []byte("x")), n.delay(f, "eu.rest:443", 1, 7, []byte("x"))
		c7 := n.delay(f, "eu.rest:443", 1, 7, []byte("x"))
		if b7 != c7 || (b0 == b7 && n.delay(f, "eu.rest:443", 1, 3, nil) == b0 && n.delay(f, "eu.rest:443", 1, 5, nil) == b0) {
			t.Fatalf("chunk-keyed draws %v %v %v", b0, b7, c7)
		}
	})
}
