package faultnet_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
)

// The relay's record says when the client's bytes left and arrived, and who
// closed each connection.
func TestRelayHistoryRecordsBytesAndWhoClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 2)
	accepted := make(chan struct{}, 2) // the relay dialed the target: it tracks the conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			go func() { b, _ := io.ReadAll(c); got <- b; c.Close() }()
		}
	}()
	r, err := faultnet.Listen(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before := time.Now()
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("order-1")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if b := <-got; string(b) != "order-1" {
		t.Fatalf("target read %q", b)
	}
	c2, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	// No polling: the relay registers a connection before it dials the
	// target, records a client's close before passing it on (so the target
	// read "order-1" to EOF only after conn 1's record was complete), and
	// ResetConn records its close before it returns.
	<-accepted // conn 1
	<-accepted // conn 2
	if _, ok := r.Info(2); !ok {
		t.Fatal("second connection never tracked")
	}
	r.ResetConn(2)
	h := r.History()
	if len(h) != 2 || h[0].Closed.IsZero() || h[1].Closed.IsZero() {
		t.Fatalf("history %+v", h)
	}
	if h[0].ClosedBy != faultnet.ClosedByClient || h[1].ClosedBy != faultnet.ClosedByFault {
		t.Fatalf("closed by %q and %q, want client and fault", h[0].ClosedBy, h[1].ClosedBy)
	}
	if len(h[0].Sent) == 0 || h[0].Sent[0].Left.Before(before) || h[0].Sent[0].Arrived.Before(h[0].Sent[0].Left) || h[0].Sent[0].After.IsZero() || h[0].Sent[0].After.After(h[0].Sent[0].Left) {
		t.Fatalf("chunks %+v", h[0].Sent)
	}
	n, _ := h[0].Delivered(time.Now())
	if n != 7 || h[0].Opened.Before(before) {
		t.Fatalf("delivered %d bytes, opened %v", n, h[0].Opened)
	}
}
