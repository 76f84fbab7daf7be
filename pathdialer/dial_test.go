package pathdialer_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"testing/synctest"

	"github.com/brokerpath/brokerpath/pathdialer"
)

func TestDialErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		ctx := context.Background()
		if _, err := h.p.Dial(ctx, "smtp"); !errors.Is(err, pathdialer.ErrUnknownService) {
			t.Errorf("Dial(smtp): %v", err)
		}
		if _, err := h.p.DialEndpoint(ctx, "mars", "tcp", "x:1"); !errors.Is(err, pathdialer.ErrUnknownEndpoint) {
			t.Errorf("DialEndpoint(mars): %v", err)
		}
		if h.p.Fenced("mars") {
			t.Error("Fenced(mars)")
		}
		c, err := h.p.Dial(ctx, pathdialer.ServiceREST)
		if err != nil {
			t.Fatal(err)
		}
		if c.Endpoint() != "eu" {
			t.Errorf("Dial went to %q", c.Endpoint())
		}
		if n := h.net.count("eu"); n != 1 {
			t.Errorf("%d dials reached eu", n)
		}
		// Closing the Conn stops tracking it.
		_ = c.Close()
		_ = c.Close()
		if s := h.p.Snapshot(); s.Endpoints[0].Conns != 0 {
			t.Errorf("closed conn still tracked: %d", s.Endpoints[0].Conns)
		}
		failing := errors.New("connection refused")
		h2 := newHarness(t, func(c *pathdialer.Config) {
			c.Dial = func(context.Context, string, string) (net.Conn, error) { return nil, failing }
		})
		defer h2.close()
		h2.start()
		if _, err := h2.p.Dial(ctx, pathdialer.ServiceFIX); !errors.Is(err, failing) {
			t.Errorf("Dial with a failing dialer: %v", err)
		}
	})
}

// A dial to the active endpoint that is still in progress when the endpoint is
// switched away from: the connection is refused (the endpoint was fenced first)
// and the error says to dial again (ErrSwitched), which reaches the new endpoint.
func TestDialInProgressDuringSwitch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		proceed := make(chan struct{})
		var h *harness
		h = newHarness(t, func(c *pathdialer.Config) {
			c.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if endpointOfAddr(addr) == "eu" {
					<-proceed
				}
				return h.net.dial(ctx, network, addr)
			}
		})
		defer h.close()
		h.start()
		type result struct {
			c   *pathdialer.Conn
			err error
		}
		res := make(chan result, 1)
		go func() {
			c, err := h.p.Dial(context.Background(), pathdialer.ServiceFIX)
			res <- result{c, err}
		}()
		synctest.Wait()
		for range 3 {
			h.p.Report("eu", 0, errReset, 0)
		}
		h.await(pathdialer.EventRelease, nil)
		close(proceed)
		r := <-res
		if !errors.Is(r.err, pathdialer.ErrSwitched) || !errors.Is(r.err, pathdialer.ErrFenced) {
			t.Fatalf("dial in progress across the switch: %v, %v; want ErrSwitched wrapping ErrFenced", r.c, r.err)
		}
		if s := h.p.Snapshot(); s.Endpoints[0].Conns != 0 {
			t.Errorf("%d conns tracked on eu", s.Endpoints[0].Conns)
		}
		c, err := h.p.Dial(context.Background(), pathdialer.ServiceFIX)
		if err != nil || c.Endpoint() != "us" {
			t.Fatalf("dial again: %v", err)
		}
	})
}

func TestActiveChangedAndReadOnlyConnsSurviveTheFence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		ch := h.p.ActiveChanged()
		ro, err := h.p.DialReadOnly(context.Background(), "eu", "tcp", "eu:1")
		if err != nil {
			t.Fatal(err)
		}
		rw, err := h.p.Dial(context.Background(), pathdialer.ServiceFIX)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-ch:
			t.Fatal("ActiveChanged fired before any switch")
		default:
		}
		h.probes.set("eu", probeBlackhole)
		<-ch
		if a, gen := h.p.Active(); a.Name != "us" || gen != 1 {
			t.Fatalf("after ActiveChanged fired: active %s/%d", a.Name, gen)
		}
		h.await(pathdialer.EventRelease, nil)
		if _, err := rw.Write([]byte("x")); err == nil {
			t.Error("the fence left a read-write connection open")
		}
		if !h.p.Fenced("eu") {
			t.Fatal("eu not fenced")
		}
		if _, err := h.p.DialEndpoint(context.Background(), "eu", "tcp", "eu:1"); !errors.Is(err, pathdialer.ErrFenced) {
			t.Errorf("read-write dial to a fenced endpoint: %v", err)
		}
		ro2, err := h.p.DialReadOnly(context.Background(), "eu", "tcp", "eu:1")
		if err != nil {
			t.Fatalf("read-only dial to a fenced endpoint refused: %v", err)
		}
		next := h.p.ActiveChanged()
		h.close()
		select {
		case <-next:
		default:
			t.Error("Close did not wake ActiveChanged watchers")
		}
		for _, c := range []*pathdialer.Conn{ro, ro2} {
			if _, err := c.Write([]byte("x")); err == nil {
				t.Error("Close left a read-only connection open")
			}
		}
	})
}
