package pathdialer

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
)

// closeOrderConn records when it is closed.
type closeOrderConn struct {
	net.Conn
	id    int
	mu    *sync.Mutex
	order *[]int
}

func (c *closeOrderConn) Close() error {
	c.mu.Lock()
	*c.order = append(*c.order, c.id)
	c.mu.Unlock()
	return c.Conn.Close()
}

// The fence closes an endpoint's connections in the order they were dialed,
// not in a map's random order: which reader wakes first (and so which
// failure the Path hears first) is then the same in every run of a
// deterministic simulation.
func TestFenceClosesInDialOrder(t *testing.T) {
	var (
		mu    sync.Mutex
		order []int
		n     int
	)
	cfg := twoEndpointConfig()
	var peers []net.Conn
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		a, b := net.Pipe()
		mu.Lock()
		n++
		peers = append(peers, b)
		c := &closeOrderConn{Conn: a, id: n, mu: &mu, order: &order}
		mu.Unlock()
		return c, nil
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	defer func() {
		for _, b := range peers {
			_ = b.Close()
		}
	}()
	const conns = 64
	for range conns {
		if _, err := p.DialEndpoint(context.Background(), "eu", "tcp", "eu.example:1"); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.eps["eu"].fence(); got != conns {
		t.Fatalf("fence closed %d connections, want %d", got, conns)
	}
	mu.Lock()
	defer mu.Unlock()
	want := make([]int, conns)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(order, want) {
		t.Fatalf("fence closed the connections in the order %v, want the dial order %v", order, want)
	}
}
