package faultnet

import (
	"context"
	"net"
	"sync"
	"time"
)

// conn is one relayed connection: the accepted client side and, once
// dialled, the upstream side.
type conn struct {
	id     uint64
	client net.Conn
	opened time.Time

	ctx    context.Context // cancelled when the conn is killed
	cancel context.CancelFunc
	killed <-chan struct{}

	log *connLog // the network's record of the connection

	mu       sync.Mutex
	upstream net.Conn
	upKey    string
	dead     bool
}

func newConn(id uint64, c net.Conn, addr string) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Now()
	return &conn{id: id, client: c, opened: now, ctx: ctx, cancel: cancel, killed: ctx.Done(), log: newConnLog(id, addr, now)}
}

// info returns a description of the conn.
func (c *conn) info() ConnInfo {
	delivered, left, after := c.log.progress()
	c.mu.Lock()
	defer c.mu.Unlock()
	return ConnInfo{ID: c.id, Client: c.client.RemoteAddr().String(), Upstream: c.upKey, Opened: c.opened,
		Delivered: delivered, LastLeft: left, LastAfter: after}
}

// key returns the upstream local address, "" before the dial.
func (c *conn) key() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.upKey
}

// setUpstream records the dialled upstream conn; false if the conn was
// killed meanwhile (the caller then closes up).
func (c *conn) setUpstream(up net.Conn, key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.upKey = key
	if c.dead {
		return false
	}
	c.upstream = up
	return true
}

// kill closes both sides once; with reset the peers see RST instead of FIN.
// by says who ended the connection, for its record ("" if already recorded).
func (c *conn) kill(reset bool, by string) (killed bool) {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return false
	}
	if by != "" {
		c.log.closed(time.Now(), by)
	}
	c.dead = true
	up := c.upstream
	c.mu.Unlock()
	c.cancel()
	if reset {
		resetConn(c.client)
		if up != nil {
			resetConn(up)
		}
		return true
	}
	_ = c.client.Close()
	if up != nil {
		_ = up.Close()
	}
	return true
}

// isDead reports whether the conn was killed.
func (c *conn) isDead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}
