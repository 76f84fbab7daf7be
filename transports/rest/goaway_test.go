package rest_test

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// drainingFrontEnd is an HTTP/2 front end (a load balancer retiring its
// connections) that answers no request: once a request has arrived whole on
// a connection it sends GOAWAY(NO_ERROR) with last stream ID 0, the graceful
// shutdown that tells the client nothing on the connection was processed.
// It speaks just enough HTTP/2 for that (its SETTINGS, the client's ACKed)
// and returns its https base URL.
func drainingFrontEnd(t *testing.T, cert tls.Certificate) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	frame := func(typ, flags byte, payload []byte) []byte {
		f := make([]byte, 9, 9+len(payload))
		f[0], f[1], f[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
		f[3], f[4] = typ, flags
		return append(f, payload...)
	}
	serve := func(c net.Conn) {
		defer c.Close()
		preface := make([]byte, len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
		if _, err := io.ReadFull(c, preface); err != nil {
			return
		}
		if _, err := c.Write(frame(0x4, 0, nil)); err != nil { // SETTINGS
			return
		}
		hdr := make([]byte, 9)
		for {
			if _, err := io.ReadFull(c, hdr); err != nil {
				return
			}
			n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
			if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
				return
			}
			typ, flags := hdr[3], hdr[4]
			switch {
			case typ == 0x4 && flags&0x1 == 0: // the client's SETTINGS
				if _, err := c.Write(frame(0x4, 0x1, nil)); err != nil {
					return
				}
			case (typ == 0x0 || typ == 0x1) && flags&0x1 != 0: // DATA or HEADERS ending a request
				goAway := make([]byte, 8) // last stream 0, NO_ERROR
				binary.BigEndian.PutUint32(goAway[4:], 0)
				if _, err := c.Write(frame(0x7, 0, goAway)); err != nil {
					return
				}
			}
		}
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { serve(c) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "https://" + ln.Addr().String()
}

// A load balancer that retires a connection gracefully (GOAWAY, NO_ERROR)
// with an order on it leaves that order's outcome unknown (the transport
// never lets net/http send it again), but it says the connection is going
// away, not the endpoint: new connections reach it. It is not a failure of
// the endpoint's, so a drain with many orders in flight cannot take a
// healthy endpoint DOWN and switch the account's order flow.
func TestAGracefulGoAwayIsNotEvidenceAgainstTheEndpoint(t *testing.T) {
	eu, us := newServer(t, "eu", true, nil), newServer(t, "us", true, nil)
	front := drainingFrontEnd(t, eu.TLS.Certificates[0])
	h := newHarness(t, front, us.URL, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 1 })
	c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})
	_, err := order(t, context.Background(), c, "o-drained")
	var unknown *rest.UnknownOutcomeError
	if !errors.As(err, &unknown) || unknown.OrderID != "o-drained" {
		t.Fatalf("order on a connection drained after it arrived: err = %v, want its outcome unknown", err)
	}
	if n := rt.Stats().Unknown.Load(); n != 1 {
		t.Fatalf("%d unknown outcomes counted, want 1", n)
	}
	st, _ := h.path.Engine().Status("eu")
	if st.ConsecutiveFailures != 0 || st.State != engine.Healthy {
		t.Fatalf("after a graceful GOAWAY the endpoint is %v with %d consecutive failures; want healthy, none (the drain is the connection's, not the endpoint's)", st.State, st.ConsecutiveFailures)
	}
	if ep, _ := h.path.Active(); ep.Name != "eu" {
		t.Fatalf("the active endpoint is %q after a drain, want eu", ep.Name)
	}
}
