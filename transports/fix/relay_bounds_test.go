package fix

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// fakeListener returns errs accept errors first (EMFILE, as accept4 does when
// the process is out of file descriptors), then the connections sent on conns.
type fakeListener struct {
	errs     int64
	conns    chan net.Conn
	closed   chan struct{}
	once     sync.Once
	calls    atomic.Int64 // Accept calls
	accepted atomic.Int64 // connections returned
}

func newFakeListener(errs int64) *fakeListener {
	return &fakeListener{errs: errs, conns: make(chan net.Conn, 64), closed: make(chan struct{})}
}

func (l *fakeListener) Accept() (net.Conn, error) {
	if l.calls.Add(1) <= l.errs {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	select {
	case c := <-l.conns:
		l.accepted.Add(1)
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *fakeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *fakeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// lineCounter counts the lines logged to it.
type lineCounter struct {
	mu sync.Mutex
	n  int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.n += bytes.Count(p, []byte("\n"))
	c.mu.Unlock()
	return len(p), nil
}

func (c *lineCounter) lines() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// When accept keeps failing (out of file descriptors), the relay backs off as
// net/http's server does (5 ms doubling to 1 s) instead of spinning, logs
// each failure once, and accepts again when the failures stop.
func TestRelayBacksOffOnAcceptErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := newFakeListener(100_000)
		var logs lineCounter
		r, err := newRelayOn(ln, nil, "fix", nil, time.Second, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		r.start()
		defer r.close()
		time.Sleep(time.Second)
		calls, lines := ln.calls.Load(), logs.lines()
		t.Logf("first second: %d accept calls, %d log lines", calls, lines)
		// 0, 5, 15, 35, 75, 155, 315, 635 ms: 8 calls.
		if calls > 10 || lines > 10 {
			t.Errorf("first second: %d accept calls and %d log lines; want at most 10 of each", calls, lines)
		}
		time.Sleep(10 * time.Second)
		calls, lines = ln.calls.Load(), logs.lines()
		t.Logf("first 11 seconds: %d accept calls, %d log lines", calls, lines)
		if calls > 21 || lines > 21 {
			t.Errorf("first 11 seconds: %d accept calls and %d log lines; want at most 21 (one a second once backed off)", calls, lines)
		}
	})
}

// Unauthenticated handshakes in progress are capped: a local process opening
// many connections that never speak holds at most relayMaxHandshakes of them,
// each for at most relayHandshakeTimeout; the rest wait in the listener.
func TestRelayCapsHandshakesInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := newFakeListener(0)
		r, err := newRelayOn(ln, nil, "fix", nil, time.Second, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		r.start()
		defer r.close()
		const silent = 40
		var clients []net.Conn
		defer func() {
			for _, c := range clients {
				_ = c.Close()
			}
		}()
		for range silent {
			c, s := net.Pipe()
			clients = append(clients, c)
			ln.conns <- s
		}
		synctest.Wait()
		if got := ln.accepted.Load(); got != relayMaxHandshakes {
			t.Fatalf("%d silent connections accepted at once; want the cap, %d", got, relayMaxHandshakes)
		}
		start := time.Now()
		time.Sleep(relayHandshakeTimeout)
		synctest.Wait()
		if got, ref := ln.accepted.Load(), r.refused.Load(); got != 2*relayMaxHandshakes || ref != relayMaxHandshakes {
			t.Fatalf("after %v: %d accepted and %d refused; want %d and %d",
				time.Since(start), got, ref, 2*relayMaxHandshakes, relayMaxHandshakes)
		}
	})
}
