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

// A client that closes its connection while a blackhole holds it has closed
// it then, not when the blackhole lifts: the record shows the end the relay
// read (EndSeen) while the fault still holds the close back from the
// server, and Closed (when the relay passed it on) only after the heal.
func TestRelayRecordsTheClientsCloseWhileABlackholeHoldsIt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c)
		got <- b
		c.Close()
	}()
	r, err := faultnet.Listen(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("order-1")); err != nil {
		t.Fatal(err)
	}
	record := func() faultnet.ConnRecord {
		if h := r.History(); len(h) == 1 {
			return h[0]
		}
		return faultnet.ConnRecord{}
	}
	poll := func(what string, cond func(faultnet.ConnRecord) bool) faultnet.ConnRecord {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			if rec := record(); cond(rec) {
				return rec
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: record %+v", what, record())
			}
			<-time.After(5 * time.Millisecond)
		}
	}
	poll("order-1 delivered", func(rec faultnet.ConnRecord) bool { n, _ := rec.Delivered(time.Now()); return n == 7 })
	if err := r.SetFault(faultnet.Blackhole()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("order-2")); err != nil {
		t.Fatal(err)
	}
	closedAt := time.Now()
	c.Close()
	held := poll("the client's close in the record", func(rec faultnet.ConnRecord) bool { return !rec.EndSeen.IsZero() })
	if held.EndSeen.Before(closedAt) || !held.Closed.IsZero() {
		t.Fatalf("under the blackhole: end seen %v (closed at %v), Closed %v (want zero: not passed on yet)", held.EndSeen, closedAt, held.Closed)
	}
	select {
	case b := <-got:
		t.Fatalf("the server read to EOF (%q) while the blackhole held the close", b)
	default:
	}
	if err := r.SetFault(faultnet.None()); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "order-1order-2" {
		t.Fatalf("server read %q", b)
	}
	healed := poll("Closed after the heal", func(rec faultnet.ConnRecord) bool { return !rec.Closed.IsZero() })
	if !healed.EndSeen.Equal(held.EndSeen) || healed.Closed.Before(healed.EndSeen) || healed.ClosedBy != faultnet.ClosedByClient {
		t.Fatalf("after the heal: end seen %v (was %v), closed %v by %q", healed.EndSeen, held.EndSeen, healed.Closed, healed.ClosedBy)
	}
}

// Many writes held by a blackhole do not stop the relay reading the
// client's socket: the client's close behind them is still seen while the
// blackhole holds (a client sending orders into a blackhole before its
// fence closes the connection).
func TestRelaySeesACloseBehindManyHeldWrites(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c)
		got <- len(b)
		c.Close()
	}()
	r, err := faultnet.Listen(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	// The connection is through to the server before the blackhole: a
	// connection the relay accepts while blackholed is held unread, its
	// upstream not dialed (a loaded host may not have dialed it yet when
	// the Write above returns).
	through := time.Now().Add(5 * time.Second)
	for h := r.History(); len(h) != 1 || len(h[0].Sent) == 0 || h[0].Sent[0].Arrived.IsZero(); h = r.History() {
		if time.Now().After(through) {
			t.Fatalf("the relay did not forward the first write within 5 s: %+v", h)
		}
		<-time.After(5 * time.Millisecond)
	}
	if err := r.SetFault(faultnet.Blackhole()); err != nil {
		t.Fatal(err)
	}
	// 1 MB: at least 32 reads of the relay's 32 KB buffer, whatever the
	// kernel coalesces.
	const n, size = 128, 8 << 10
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	for range n {
		if _, err := c.Write(make([]byte, size)); err != nil {
			t.Fatalf("write under the blackhole: %v", err)
		}
	}
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h := r.History()
		if len(h) == 1 && !h[0].EndSeen.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relay never read the client's close behind %d held writes", n)
		}
		<-time.After(5 * time.Millisecond)
	}
	healAt := time.Now()
	if err := r.SetFault(faultnet.None()); err != nil {
		t.Fatal(err)
	}
	if b := <-got; b != 5+n*size {
		t.Fatalf("server read %d bytes, want %d", b, 5+n*size)
	}
	// Every byte is recorded as leaving the client before the heal (what a
	// broker's SentBy is taken from), not when the relay got round to it.
	for _, ch := range r.History()[0].Sent {
		if !ch.Left.Before(healAt) {
			t.Fatalf("chunk at offset %d recorded as leaving at %v, after the heal at %v", ch.Offset, ch.Left, healAt)
		}
	}
}

// A connection the relay accepts while a blackhole holds the region is not
// dialed through until the heal, but the client's bytes and its close are
// the client's acts then: the record notes the close (EndSeen) while the
// blackhole holds, and the bytes as leaving the client (Sent[].Left) before
// the heal, though they arrive only after it. (A fence that closes such a
// connection during the blackhole closed it then.)
func TestRelayRecordsACloseOnAConnectionAcceptedDuringABlackhole(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c)
		got <- b
		c.Close()
	}()
	r, err := faultnet.Listen(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.SetFault(faultnet.Blackhole()); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("order-1")); err != nil {
		t.Fatal(err)
	}
	closedAt := time.Now()
	c.Close()
	var held faultnet.ConnRecord
	deadline := time.Now().Add(5 * time.Second)
	for {
		if h := r.History(); len(h) == 1 && !h[0].EndSeen.IsZero() {
			held = h[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client closed at %v under the blackhole; 5 s later the record still shows no end: %+v", closedAt, r.History())
		}
		<-time.After(5 * time.Millisecond)
	}
	if n, _ := held.Delivered(time.Now()); held.EndSeen.Before(closedAt) || !held.Closed.IsZero() || n != 0 {
		t.Fatalf("under the blackhole: end seen %v (closed at %v), Closed %v (want zero), %d bytes delivered (want 0)", held.EndSeen, closedAt, held.Closed, n)
	}
	select {
	case b := <-got:
		t.Fatalf("the server read %q while the blackhole held the connection", b)
	default:
	}
	healAt := time.Now()
	if err := r.SetFault(faultnet.None()); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "order-1" {
		t.Fatalf("server read %q after the heal, want order-1", b)
	}
	deadline = time.Now().Add(5 * time.Second)
	var healed faultnet.ConnRecord
	for {
		if h := r.History(); len(h) == 1 && !h[0].Closed.IsZero() {
			healed = h[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Closed in the record 5 s after the heal: %+v", r.History())
		}
		<-time.After(5 * time.Millisecond)
	}
	if !healed.EndSeen.Equal(held.EndSeen) || !healed.EndSeen.Before(healAt) || healed.ClosedBy != faultnet.ClosedByClient ||
		len(healed.Sent) != 1 || !healed.Sent[0].Left.Before(healAt) || healed.Sent[0].Arrived.Before(healAt) {
		t.Fatalf("after the heal at %v: end seen %v (was %v), closed %v by %q, chunks %+v", healAt, healed.EndSeen, held.EndSeen, healed.Closed, healed.ClosedBy, healed.Sent)
	}
}
