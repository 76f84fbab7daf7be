package faultnet

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MemNetwork is an in-memory network of listeners and connections with the
// fault kinds of a Relay, for simulations run under testing/synctest: every
// wait is on a channel or a timer, so a goroutine blocked on a MemNetwork
// connection is durably blocked and virtual time can advance past it.
//
// A fault is set per listening address (as a Relay fronts one service) and
// acts on every connection to that address, in both directions:
//
//	None       bytes arrive after the network's base latency
//	Down       dials are refused; live connections are reset (each side
//	           after its own one-way delay)
//	Blackhole  dials succeed; bytes (and closes) are held, not dropped, and
//	           delivered in order when the fault is cleared
//	Latency    every chunk is delayed by Delay + a drawn extra in [0, Jitter]
//	Reset      live connections are reset once; then None
//
// Writes never block (the network buffers without bound: no backpressure,
// no window, no kernel buffer is modelled). Bytes written before a Close are
// still delivered, then the peer reads io.EOF: an order written just before
// a local fence can land after it. Jitter is drawn from a hash of the seed,
// the connection and the chunk, not from a shared stream, so one
// connection's delays do not depend on the order other goroutines write in.
type MemNetwork struct {
	seed uint64
	base time.Duration

	jitter    time.Duration          // extra one-way delay in [0, jitter], always
	byContent func(addr string) bool // key that draw by the chunk's bytes
	byTime    func(addr string) bool // key that draw by the chunk's instant

	mu        sync.Mutex
	listeners map[string]*memListener
	faults    map[string]Fault
	conns     map[string]map[*memConn]struct{} // by listening address: server sides
	dials     map[string]uint64                // dial count per address
	hist      []*connLog                       // every connection dialled, in dial order
}

// NewMemNetwork returns an empty network. base is the one-way latency every
// chunk has without a fault (0 is allowed; a small base keeps the events of
// a simulation apart in virtual time); seed feeds the jitter draws.
func NewMemNetwork(seed uint64, base time.Duration) *MemNetwork {
	return &MemNetwork{seed: seed, base: base, listeners: map[string]*memListener{},
		faults: map[string]Fault{}, conns: map[string]map[*memConn]struct{}{}, dials: map[string]uint64{}}
}

// SetBaseJitter adds to every chunk a drawn delay in [0, j] on top of the
// base latency, so that events of a simulation do not meet at one virtual
// instant. For addresses where byContent returns true the draw is keyed by
// the chunk's bytes (and the seed), not by the connection: two goroutines
// that write different bytes at one instant then see the same delays
// whichever dials or writes first. Use it only where the bytes are
// deterministic (plain HTTP; not TLS, not masked WebSocket client frames).
// Call it before any connection exists.
func (n *MemNetwork) SetBaseJitter(j time.Duration, byContent func(addr string) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.jitter, n.byContent = j, byContent
}

// SetTimeKeyed keys the draws of SetBaseJitter, for addresses where byTime
// returns true (and byContent does not), by the connection, its direction
// and the virtual instant of the chunk instead of the chunk's number on the
// connection: for protocols whose writes at one instant are split or merged
// differently from run to run (HTTP/2, whose goroutines select among ready
// channels at random). Chunks of one direction written at one instant then
// arrive together however they were split. Call it before any connection
// exists.
func (n *MemNetwork) SetTimeKeyed(byTime func(addr string) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.byTime = byTime
}

// Listen returns a listener on addr (any string of the form host:port,
// unique in the network). The listener exists until closed, across Down.
func (n *MemNetwork) Listen(addr string) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("faultnet: memnet listen %q: %w", addr, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.listeners[addr]; ok {
		return nil, fmt.Errorf("faultnet: memnet listen %q: address in use", addr)
	}
	l := &memListener{n: n, addr: memAddr(addr), notify: make(chan struct{}, 1), done: make(chan struct{})}
	n.listeners[addr] = l
	return l, nil
}

// SetFault applies f to every connection to addr, now and later, replacing
// the fault in force. Clearing a Blackhole releases what it held.
func (n *MemNetwork) SetFault(addr string, f Fault) error {
	if err := f.Validate(); err != nil {
		return err
	}
	n.mu.Lock()
	prev := n.faults[addr]
	conns := make([]*memConn, 0, len(n.conns[addr]))
	for c := range n.conns[addr] {
		conns = append(conns, c)
	}
	sort.Slice(conns, func(i, j int) bool { return conns[i].id < conns[j].id })
	if f.Kind == KindReset {
		n.faults[addr] = None()
	} else {
		n.faults[addr] = f
	}
	n.mu.Unlock()
	now := time.Now()
	for _, c := range conns {
		switch f.Kind {
		case KindDown, KindReset:
			n.resetLater(c)
		case KindBlackhole:
			c.in.hold()
			c.peer.in.hold()
		default:
			if prev.Kind == KindBlackhole {
				c.in.release(now, func(b []byte) time.Duration { return n.delay(f, addr, c.id*2+1, 0, b) })
				c.peer.in.release(now, func(b []byte) time.Duration { return n.delay(f, addr, c.id*2, 0, b) })
			}
		}
	}
	return nil
}

// Fault returns the fault in force on addr.
func (n *MemNetwork) Fault(addr string) Fault {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.faults[addr]
}

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

// Dial connects to addr. It fails at once (connection refused) when nothing
// listens there or the address is Down; it takes one round trip of the
// address's latency otherwise (a Blackhole accepts: the dial succeeds and
// then nothing moves). It honours ctx.
func (n *MemNetwork) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	l, ok := n.listeners[addr]
	f := n.faults[addr]
	if !ok || f.Kind == KindDown || l.isClosed() {
		n.mu.Unlock()
		e := *errRefused
		e.Addr = memAddr(addr)
		return nil, &e
	}
	n.dials[addr]++
	id := n.dials[addr]
	n.mu.Unlock()
	rtt := 2 * n.delay(f, addr, id, 0, []byte("dial"))
	if f.Kind != KindBlackhole && rtt > 0 {
		t := time.NewTimer(rtt)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, &net.OpError{Op: "dial", Net: network, Addr: memAddr(addr), Err: ctx.Err()}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Addr: memAddr(addr), Err: err}
	}
	client, server := n.pair(addr, id)
	n.mu.Lock()
	l2, ok := n.listeners[addr]
	if !ok || l2 != l || l.isClosed() || n.faults[addr].Kind == KindDown {
		n.mu.Unlock()
		e := *errRefused
		e.Addr = memAddr(addr)
		return nil, &e
	}
	n.hist = append(n.hist, client.log)
	if n.conns[addr] == nil {
		n.conns[addr] = map[*memConn]struct{}{}
	}
	n.conns[addr][server] = struct{}{}
	if n.faults[addr].Kind == KindBlackhole {
		client.in.hold()
		server.in.hold()
	}
	n.mu.Unlock()
	l.push(server)
	return client, nil
}

// delay is the one-way delay of chunk k of connection id to addr under f;
// data is the chunk (nil for a dial or a close).
func (n *MemNetwork) delay(f Fault, addr string, id, k uint64, data ...[]byte) time.Duration {
	key := func(salt string) uint64 {
		h := fnv.New64a()
		if len(data) > 0 && data[0] != nil && n.byContent != nil && n.byContent(addr) {
			fmt.Fprintf(h, "%d/%s/%s/", n.seed, addr, salt)
			_, _ = h.Write(data[0])
		} else if n.byTime != nil && n.byTime(addr) {
			fmt.Fprintf(h, "%d/%s/%d/t%d/%s", n.seed, addr, id, time.Now().UnixNano(), salt)
		} else {
			fmt.Fprintf(h, "%d/%s/%d/%d/%s", n.seed, addr, id, k, salt)
		}
		return h.Sum64()
	}
	d := n.base
	if n.jitter > 0 {
		d += time.Duration(key("base") % uint64(n.jitter+1))
	}
	if f.Kind == KindLatency {
		d += f.Delay
		if f.Jitter > 0 {
			d += time.Duration(key("latency") % uint64(f.Jitter+1))
		}
	}
	return d
}

func (n *MemNetwork) forget(addr string, server *memConn) {
	n.mu.Lock()
	delete(n.conns[addr], server)
	n.mu.Unlock()
}

func (n *MemNetwork) pair(addr string, id uint64) (client, server *memConn) {
	local := memAddr(fmt.Sprintf("client-%d.%s", id, addr))
	log := newConnLog(id, addr, time.Now())
	client = &memConn{n: n, addr: addr, id: id, local: local, remote: memAddr(addr), in: newHalf(), closed: make(chan struct{}), log: log}
	server = &memConn{n: n, addr: addr, id: id, server: true, local: memAddr(addr), remote: local, in: newHalf(), closed: make(chan struct{}), log: log}
	client.peer, server.peer = server, client
	return client, server
}

type memAddr string

func (a memAddr) Network() string { return "tcp" }
func (a memAddr) String() string  { return string(a) }

type memListener struct {
	n      *MemNetwork
	addr   memAddr
	mu     sync.Mutex
	queue  []*memConn
	notify chan struct{}
	done   chan struct{}
	once   sync.Once
}

func (l *memListener) isClosed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *memListener) push(c *memConn) {
	l.mu.Lock()
	l.queue = append(l.queue, c)
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

func (l *memListener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		if len(l.queue) > 0 {
			c := l.queue[0]
			l.queue = l.queue[1:]
			l.mu.Unlock()
			return c, nil
		}
		l.mu.Unlock()
		select {
		case <-l.notify:
		case <-l.done:
			return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
		}
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.n.mu.Lock()
		if l.n.listeners[string(l.addr)] == l {
			delete(l.n.listeners, string(l.addr))
		}
		l.n.mu.Unlock()
		l.mu.Lock()
		q := l.queue
		l.queue = nil
		l.mu.Unlock()
		for _, c := range q {
			c.resetPair()
		}
	})
	return nil
}

func (l *memListener) Addr() net.Addr { return l.addr }

// memChunk is bytes (or an end of stream) on their way to a reader.
type memChunk struct {
	data []byte
	eof  bool
	at   time.Time
	held bool
	// idx is the chunk's index in the connection's record (client→server
	// data only; -1 otherwise), marked arrived when the server first reads it.
	idx int
}

// half is one direction of a connection: what its reader will read.
type half struct {
	mu     sync.Mutex
	q      []memChunk
	last   time.Time // delivery time of the last chunk: order is kept
	reset  bool
	dl     time.Time // read deadline
	held   bool      // new chunks are held (blackhole)
	notify chan struct{}
}

func newHalf() *half { return &half{notify: make(chan struct{}, 1)} }

func (h *half) wake() {
	select {
	case h.notify <- struct{}{}:
	default:
	}
}

func (h *half) push(c memChunk) {
	h.mu.Lock()
	if h.reset {
		h.mu.Unlock()
		return
	}
	if c.at.Before(h.last) {
		c.at = h.last
	}
	h.last = c.at
	c.held = h.held
	h.q = append(h.q, c)
	h.mu.Unlock()
	h.wake()
}

func (h *half) hold() {
	h.mu.Lock()
	h.held = true
	now := time.Now()
	for i := range h.q {
		if h.q[i].at.After(now) {
			h.q[i].held = true
		}
	}
	h.mu.Unlock()
	h.wake()
}

// release delivers what a blackhole held: each chunk after its own delay
// from now (d), in order.
func (h *half) release(now time.Time, d func(data []byte) time.Duration) {
	h.mu.Lock()
	h.held = false
	var prev time.Time
	for i := range h.q {
		c := &h.q[i]
		if c.held {
			c.held = false
			if at := now.Add(d(c.data)); c.at.Before(at) {
				c.at = at
			}
		}
		if c.at.Before(prev) {
			c.at = prev
		}
		prev = c.at
	}
	if h.last.Before(prev) {
		h.last = prev
	}
	h.mu.Unlock()
	h.wake()
}

func (h *half) doReset() {
	h.mu.Lock()
	h.reset = true
	h.q = nil
	h.mu.Unlock()
	h.wake()
}

func (h *half) setDeadline(t time.Time) {
	h.mu.Lock()
	h.dl = t
	h.mu.Unlock()
	h.wake()
}

type memConn struct {
	n      *MemNetwork
	addr   string
	id     uint64
	server bool
	local  memAddr
	remote memAddr
	in     *half // what this side reads
	peer   *memConn

	wmu    sync.Mutex
	wdl    time.Time
	chunks uint64
	wh     atomic.Uint64 // hash of every byte written: keys the delay of the close
	once   sync.Once
	closed chan struct{}
	log    *connLog // the network's record of the connection (shared by both sides)
}

var errReset = os.NewSyscallError("read", syscall.ECONNRESET)

func (c *memConn) op(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.local, Addr: c.remote, Err: err}
}

func (c *memConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

func (c *memConn) Read(p []byte) (int, error) {
	h := c.in
	for {
		if c.isClosed() {
			return 0, c.op("read", net.ErrClosed)
		}
		now := time.Now()
		h.mu.Lock()
		if h.reset {
			h.mu.Unlock()
			return 0, c.op("read", errReset)
		}
		var wait time.Duration = -1
		if len(h.q) > 0 && !h.q[0].held {
			head := &h.q[0]
			if !head.at.After(now) {
				if head.eof {
					h.mu.Unlock()
					return 0, io.EOF
				}
				if head.idx >= 0 {
					c.log.arrived(head.idx, now)
					head.idx = -1
				}
				n := copy(p, head.data)
				head.data = head.data[n:]
				if len(head.data) == 0 {
					h.q = h.q[1:]
				}
				h.mu.Unlock()
				return n, nil
			}
			wait = head.at.Sub(now)
		}
		dl := h.dl
		h.mu.Unlock()
		if !dl.IsZero() {
			if !dl.After(now) {
				return 0, c.op("read", os.ErrDeadlineExceeded)
			}
			if wait < 0 || dl.Sub(now) < wait {
				wait = dl.Sub(now)
			}
		}
		var timer <-chan time.Time
		var t *time.Timer
		if wait >= 0 {
			t = time.NewTimer(wait)
			timer = t.C
		}
		select {
		case <-h.notify:
		case <-timer:
		case <-c.closed:
		}
		if t != nil {
			t.Stop()
		}
	}
}

func (c *memConn) Write(p []byte) (int, error) {
	if c.isClosed() {
		return 0, c.op("write", net.ErrClosed)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.wdl.IsZero() && !c.wdl.After(time.Now()) {
		return 0, c.op("write", os.ErrDeadlineExceeded)
	}
	c.peer.in.mu.Lock()
	reset := c.peer.in.reset
	c.peer.in.mu.Unlock()
	if reset {
		return 0, c.op("write", os.NewSyscallError("write", syscall.ECONNRESET))
	}
	if c.peer.isClosed() {
		return len(p), nil // the peer is gone; its kernel would answer RST later
	}
	c.chunks++
	d := c.n.delay(c.n.Fault(c.addr), c.addr, c.id*2+b2u(c.server), c.chunks, p)
	h := fnv.New64a()
	fmt.Fprintf(h, "%x/", c.wh.Load())
	_, _ = h.Write(p)
	c.wh.Store(h.Sum64())
	now := time.Now()
	idx := -1
	if !c.server && len(p) > 0 {
		idx = c.log.sentAfter(len(p), now, now, time.Time{})
	}
	c.peer.in.push(memChunk{data: append([]byte(nil), p...), at: now.Add(d), idx: idx})
	return len(p), nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// Close ends this side: reads and writes fail with net.ErrClosed; what was
// written is still delivered, then the peer reads io.EOF.
func (c *memConn) Close() error {
	c.once.Do(func() {
		c.wmu.Lock()
		c.chunks++
		key := fmt.Appendf(nil, "eof/%t/%x/%x", c.server, c.wh.Load(), c.peer.wh.Load())
		d := c.n.delay(c.n.Fault(c.addr), c.addr, c.id*2+b2u(c.server), c.chunks, key)
		by := ClosedByClient
		if c.server {
			by = ClosedByServer
		}
		c.log.closed(time.Now(), by)
		c.peer.in.push(memChunk{eof: true, at: time.Now().Add(d), idx: -1})
		c.wmu.Unlock()
		close(c.closed)
		c.in.wake()
		if c.server {
			c.n.forget(c.addr, c)
		} else {
			c.n.forget(c.addr, c.peer)
		}
	})
	return nil
}

// resetLater resets each side of c after its own one-way delay, drawn as a
// chunk's is (by what the connection carried, where chunks draw by content;
// by connection otherwise): the readers of connections reset by one fault
// then wake one after another, at instants the seed decides, not all at one
// instant in an order the scheduler picks. Bytes written before it arrives
// are still delivered.
func (n *MemNetwork) resetLater(c *memConn) {
	c.log.closed(time.Now(), ClosedByFault)
	for _, side := range []*memConn{c, c.peer} {
		key := fmt.Appendf(nil, "rst/%t/%x/%x", side.server, side.wh.Load(), side.peer.wh.Load())
		d := n.delay(None(), side.addr, side.id*2+b2u(side.server), ^uint64(0), key)
		time.AfterFunc(d, func() {
			side.in.doReset()
			n.forget(side.addr, side)
			n.forget(side.addr, side.peer)
		})
	}
}

// resetPair resets both sides: reads fail with ECONNRESET.
func (c *memConn) resetPair() {
	c.log.closed(time.Now(), ClosedByRelay)
	c.in.doReset()
	c.peer.in.doReset()
	c.n.forget(c.addr, c)
	c.n.forget(c.addr, c.peer)
}

// NetProgress is the network's record of the connection so far (Traced).
func (c *memConn) NetProgress() (opened time.Time, delivered uint64, lastLeft time.Time) {
	d, l, _ := c.log.progress() // in memory, a chunk leaves when written: no earlier bound is needed
	return c.log.opened(), d, l
}

// History returns the record of every connection dialled through the
// network, open or closed, in dial order: when it was opened, every chunk
// the client wrote with when it was written and when the server first read
// it, and when and by whom it was closed.
func (n *MemNetwork) History() []ConnRecord {
	n.mu.Lock()
	logs := append([]*connLog(nil), n.hist...)
	n.mu.Unlock()
	out := make([]ConnRecord, len(logs))
	for i, l := range logs {
		out[i] = l.snapshot()
	}
	return out
}

func (c *memConn) LocalAddr() net.Addr  { return c.local }
func (c *memConn) RemoteAddr() net.Addr { return c.remote }

func (c *memConn) SetDeadline(t time.Time) error {
	_ = c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *memConn) SetReadDeadline(t time.Time) error {
	c.in.setDeadline(t)
	return nil
}

func (c *memConn) SetWriteDeadline(t time.Time) error {
	c.wmu.Lock()
	c.wdl = t
	c.wmu.Unlock()
	return nil
}
