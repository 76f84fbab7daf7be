package pathdialer_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// benchPath is a started Path whose probes always succeed; dial, when set, is
// its Config.Dial.
func benchPath(b *testing.B, fixAddr string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *pathdialer.Path {
	b.Helper()
	cfg := validConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Primary: true, Services: map[string]string{"rest": "https://api-eu.broker.example", "fix": fixAddr}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"rest": "https://api-us.broker.example", "fix": fixAddr}},
	}
	cfg.Dial = dial
	p, err := pathdialer.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	return p
}

// Acquire and Done on the open gate, from every P at once: the cost every order
// pays.
func BenchmarkAcquireDoneParallel(b *testing.B) {
	p := benchPath(b, "fix-eu.broker.example:9878", nil)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t, err := p.Acquire(ctx, pathdialer.ServiceREST, "order-1")
			if err != nil {
				b.Error(err)
				return
			}
			t.Done()
		}
	})
}

// The same, from one goroutine.
func BenchmarkAcquireDone(b *testing.B) {
	p := benchPath(b, "fix-eu.broker.example:9878", nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		t, err := p.Acquire(ctx, pathdialer.ServiceREST, "order-1")
		if err != nil {
			b.Fatal(err)
		}
		t.Done()
	}
}

// loopback is a TCP listener on 127.0.0.1 that accepts and closes every
// connection, until its cleanup.
func loopback(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	b.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// closeNow closes without TIME_WAIT, so a long benchmark does not run out of
// ephemeral ports.
func closeNow(c net.Conn) {
	if pc, ok := c.(*pathdialer.Conn); ok {
		if tc, ok := pc.Conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
	} else if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// DialContext over loopback against a bare net.Dialer configured like the
// Path's default, in the same run: the ratio of the two is the Path's overhead
// (active endpoint lookup, fence check, tracking, switch re-check).
func BenchmarkDialContext(b *testing.B) {
	addr := loopback(b)
	ctx := context.Background()
	b.Run("bare-net.Dialer", func(b *testing.B) {
		d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 15 * time.Second}
		b.ReportAllocs()
		for b.Loop() {
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			closeNow(c)
		}
	})
	b.Run("Path", func(b *testing.B) {
		p := benchPath(b, addr, nil)
		b.ReportAllocs()
		for b.Loop() {
			c, err := p.Dial(ctx, pathdialer.ServiceFIX)
			if err != nil {
				b.Fatal(err)
			}
			closeNow(c)
		}
	})
}

// The Path's own cost per dial, with a dialer that costs nothing.
func BenchmarkDialOverhead(b *testing.B) {
	a, peer := net.Pipe()
	defer a.Close()
	defer peer.Close()
	p := benchPath(b, "fix-eu.broker.example:9878", func(context.Context, string, string) (net.Conn, error) { return nopConn{a}, nil })
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, err := p.Dial(ctx, pathdialer.ServiceFIX)
		if err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}

// nopConn is a net.Conn whose Close does nothing, so one pipe serves every dial.
type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }

// Acquire and Done with a caller-owned Ticket: the zero-allocation form.
func BenchmarkAcquireIntoDone(b *testing.B) {
	p := benchPath(b, "fix-eu.broker.example:9878", nil)
	ctx := context.Background()
	var t pathdialer.Ticket
	b.ReportAllocs()
	for b.Loop() {
		if err := p.AcquireInto(ctx, &t, pathdialer.ServiceREST, "order-1"); err != nil {
			b.Fatal(err)
		}
		t.Done()
	}
}

// The same from 64 submitters per P-count (b.SetParallelism), each with its
// own Ticket: per-operation cost under contention.
func BenchmarkAcquireIntoDoneParallel64(b *testing.B) {
	p := benchPath(b, "fix-eu.broker.example:9878", nil)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(64)
	b.RunParallel(func(pb *testing.PB) {
		// Each submitter's Ticket on cache lines of its own, as a transport's
		// per-connection or pooled tickets would be.
		padded := new(struct {
			_ [64]byte
			t pathdialer.Ticket
			_ [64]byte
		})
		t := &padded.t
		for pb.Next() {
			if err := p.AcquireInto(ctx, t, pathdialer.ServiceREST, "order-1"); err != nil {
				b.Error(err)
				return
			}
			t.Done()
		}
	})
}

// The same on a coordinated Path whose decision has a deadline (Extend): the
// validity check adds one reading of the monotonic clock, no allocation.
func BenchmarkAcquireIntoDoneWithDeadline(b *testing.B) {
	cfg := validConfig()
	cfg.ExternalDecisions = true
	p, err := pathdialer.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	if err := p.Assign(ctx, cfg.Endpoints[0].Name, 1); err != nil {
		b.Fatal(err)
	}
	if err := p.Extend(time.Now().Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	var t pathdialer.Ticket
	b.ReportAllocs()
	for b.Loop() {
		if err := p.AcquireInto(ctx, &t, pathdialer.ServiceREST, "order-1"); err != nil {
			b.Fatal(err)
		}
		t.Done()
	}
}
