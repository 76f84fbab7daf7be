// Package qfnet gives quickfix in-memory connections in the simulation's
// builds (-tags dstfix with the overlay of internal/dst/qfhook): an acceptor
// listening on an address registered with Serve takes that listener, and a
// dial to an address of a Pipe listener is a net.Pipe handed to it.
// Addresses are unique per registration, so simulations running side by
// side in one process do not meet. An address nothing is registered at gets
// an operating-system socket, as without the registry (a drill or chaos run
// built with the tag still works). Without the build tag nothing installs
// it and quickfix uses the operating system's sockets.
package qfnet

import (
	"context"
	"fmt"
	"net"
	"sync"
)

var reg struct {
	sync.Mutex
	next   uint64
	served map[string]net.Listener
	pipes  map[string]*pipeListener
}

// Serve registers ln as the listener of the quickfix acceptor whose
// SocketAcceptHost:SocketAcceptPort is address; release unregisters it.
func Serve(address string, ln net.Listener) (release func(), err error) {
	reg.Lock()
	defer reg.Unlock()
	if reg.served == nil {
		reg.served = map[string]net.Listener{}
	}
	if _, dup := reg.served[address]; dup {
		return nil, fmt.Errorf("qfnet: %s is already served", address)
	}
	reg.served[address] = ln
	return func() {
		reg.Lock()
		delete(reg.served, address)
		reg.Unlock()
	}, nil
}

// Port returns a number no other caller of Port in this process got, for
// an address that must be unique.
func Port() int {
	reg.Lock()
	defer reg.Unlock()
	reg.next++
	return int(reg.next%60000) + 1024
}

// Listen is the acceptor's listener factory: the listener Serve registered
// at address, else a TCP listener on it.
func Listen(address string) (net.Listener, error) {
	reg.Lock()
	ln, ok := reg.served[address]
	reg.Unlock()
	if ok {
		return ln, nil
	}
	return net.Listen("tcp", address)
}

// Pipe returns a new listener at a unique address host:port; Dial to that
// address connects to it over net.Pipe (no delay, no fault: a connection
// inside one process). Closing it unregisters it.
func Pipe(host string) net.Listener {
	reg.Lock()
	defer reg.Unlock()
	if reg.pipes == nil {
		reg.pipes = map[string]*pipeListener{}
	}
	reg.next++
	a := net.JoinHostPort(host, fmt.Sprint(reg.next%60000+1024))
	for reg.pipes[a] != nil {
		reg.next++
		a = net.JoinHostPort(host, fmt.Sprint(reg.next%60000+1024))
	}
	l := &pipeListener{addr: pipeAddr(a), conns: make(chan net.Conn), done: make(chan struct{})}
	reg.pipes[a] = l
	return l
}

// Dial connects to the Pipe listener at address, else dials TCP.
func Dial(ctx context.Context, network, address string) (net.Conn, error) {
	reg.Lock()
	l := reg.pipes[address]
	reg.Unlock()
	if l == nil {
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		_ = client.Close()
		_ = server.Close()
		return nil, fmt.Errorf("qfnet: dial %s: %w", address, net.ErrClosed)
	case <-ctx.Done():
		_ = client.Close()
		_ = server.Close()
		return nil, ctx.Err()
	}
}

type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }

type pipeListener struct {
	addr  pipeAddr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		reg.Lock()
		if reg.pipes[string(l.addr)] == l {
			delete(reg.pipes, string(l.addr))
		}
		reg.Unlock()
	})
	return nil
}

func (l *pipeListener) Addr() net.Addr { return l.addr }
