package qfnet

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// A dial to a Pipe listener's address is accepted there, inside a bubble
// (every wait is durably blocking: virtual time passes); a closed listener
// refuses, and a dial that nobody accepts ends with its context.
func TestPipeDialAccept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := Pipe("relay.test")
		done := make(chan string)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				done <- err.Error()
				return
			}
			b := make([]byte, 5)
			_, _ = io.ReadFull(c, b)
			_ = c.Close()
			done <- string(b)
		}()
		c, err := Dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got != "hello" {
			t.Fatalf("accepted side read %q, want hello", got)
		}
		_ = c.Close()

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		if _, err := Dial(ctx, "tcp", ln.Addr().String()); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Fatalf("dial nobody accepts: %v after %v, want the deadline after 1s", err, time.Since(start))
		}
		_ = ln.Close()
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v", err)
		}
		if l2 := Pipe("relay.test"); l2.Addr().String() == ln.Addr().String() {
			t.Fatalf("two Pipe listeners share %s", ln.Addr())
		} else {
			_ = l2.Close()
		}
	})
}

// Serve hands quickfix's acceptor the listener registered at its address,
// once; release frees the address.
func TestServeRegistry(t *testing.T) {
	ln := Pipe("acceptor.test")
	defer ln.Close()
	release, err := Serve("fix.test:1", ln)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Serve("fix.test:1", ln); err == nil {
		t.Fatal("a second Serve at one address was accepted")
	}
	if got, err := Listen("fix.test:1"); err != nil || got != ln {
		t.Fatalf("Listen = %v, %v; want the served listener", got, err)
	}
	release()
	release, err = Serve("fix.test:1", ln)
	if err != nil {
		t.Fatalf("Serve after release: %v", err)
	}
	release()
}
