package pathdialer

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// fillThenEnd opens a real loopback TCP connection tracked under eu, writes
// until neither the peer's receive buffer nor this side's send buffer takes
// more (the peer does not read: a stalled gateway), ends it (with the fence,
// or a plain Close for comparison), then reads on the peer what arrives.
func fillThenEnd(t *testing.T, fence bool) (written, received int, readErr error) {
	t.Helper()
	p, err := New(twoEndpointConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	_ = peer.(*net.TCPConn).SetReadBuffer(64 << 10)
	_ = raw.(*net.TCPConn).SetWriteBuffer(64 << 10)
	rt := p.eps["eu"]
	c := &Conn{Conn: raw, rt: rt}
	rt.mu.Lock()
	rt.conns[c] = struct{}{}
	rt.mu.Unlock()

	buf := make([]byte, 16<<10)
	for stuck := 0; stuck < 3; {
		_ = raw.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		n, err := raw.Write(buf)
		written += n
		switch {
		case err == nil:
			stuck = 0
		case errors.Is(err, os.ErrDeadlineExceeded):
			if n == 0 {
				stuck++ // nothing moved for a whole deadline: both buffers full
			}
		default:
			t.Fatalf("write: %v", err)
		}
	}
	if fence {
		if n := rt.fence(); n != 1 {
			t.Fatalf("fence closed %d connections, want 1", n)
		}
	} else {
		_ = c.Close()
	}
	// The gateway wakes up and reads what reached it.
	_ = peer.SetReadDeadline(time.Now().Add(30 * time.Second))
	rb := make([]byte, 64<<10)
	for {
		n, err := peer.Read(rb)
		received += n
		if err != nil {
			return written, received, err
		}
	}
}

// The local fence aborts a connection (SO_LINGER 0: the peer gets RST):
// bytes of an order still in this host's send buffer are discarded, not
// delivered after the fence. A plain Close would leave the kernel sending
// them to the peer until it takes them (graceful FIN after the data).
func TestFenceAbortsConnectionsLeavingNothingToDeliver(t *testing.T) {
	w, r, err := fillThenEnd(t, false)
	if err != io.EOF || r != w {
		t.Fatalf("closed gracefully: peer read %d of %d bytes, then %v; want all, then EOF", r, w, err)
	}
	t.Logf("graceful close: the peer still received %d of %d bytes after the close, then EOF", r, w)
	w, r, err = fillThenEnd(t, true)
	if !errors.Is(err, syscall.ECONNRESET) || r >= w {
		t.Fatalf("fenced: peer read %d of %d bytes, then %v; want fewer, then a reset", r, w, err)
	}
	t.Logf("fence (abort): the peer received %d of %d bytes, then RST; %d bytes still in the send buffer were discarded", r, w, w-r)
}
