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
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
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
	deadline := time.Now().Add(10 * time.Second)
	for len(r.Conns()) < 1 || r.Conns()[0].ID != 2 {
		if time.Now().After(deadline) {
			t.Fatal("second connection never tracked")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.ResetConn(2)
	for {
		h := r.History()
		if len(h) == 2 && !h[0].Closed.IsZero() && !h[1].Closed.IsZero() {
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
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("history %+v", h)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
