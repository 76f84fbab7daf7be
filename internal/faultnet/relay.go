package faultnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sort"
	"sync"
	"time"
)

// Config configures a Relay. Only Target is required.
type Config struct {
	// Target is the host:port every accepted connection is forwarded to.
	Target string
	// ListenAddr is where the relay listens; default "127.0.0.1:0" (a port
	// chosen by the OS). The address actually bound is kept for the life of
	// the relay, across Down and back.
	ListenAddr string
	// Name labels the relay in logs (e.g. "eu/rest").
	Name string
	// Seed seeds the jitter generator so latency runs are reproducible.
	Seed uint64
	// DialTimeout bounds the dial to Target; default 5s.
	DialTimeout time.Duration
	// Logger receives debug events; default discards.
	Logger *slog.Logger
}

// Stats counts what a Relay has done since it started.
type Stats struct {
	Accepted   uint64 // connections accepted
	Active     int    // connections currently tracked
	Resets     uint64 // connections reset by a fault, ResetConn or ResetAll
	DialErrors uint64 // dials to Target that failed
}

// ConnInfo describes one relayed connection.
type ConnInfo struct {
	// ID is unique within the relay, assigned in accept order from 1.
	ID uint64
	// Client is the remote address of the accepted (client-side) connection.
	Client string
	// Upstream is the local address of the relay's connection to Target,
	// which is what the target sees as the peer's address. Empty while the
	// connection has not been dialled yet (for example during a Blackhole).
	Upstream string
	// Opened is when the relay accepted the connection.
	Opened time.Time
	// Delivered counts the client's bytes the relay has written to Target so
	// far; LastLeft is when the last of them left the client (the relay read
	// them). A server that looks its connection up after reading a request
	// learns the latest instant the request's bytes can have left the client.
	Delivered uint64
	LastLeft  time.Time
	// LastAfter is the earliest instant those last bytes can have left the
	// client (Chunk.After): the relay stops reading while a fault holds the
	// connection, so LastLeft may be long after the client wrote them.
	LastAfter time.Time
}

// Relay is a TCP relay with switchable faults. All methods are safe for
// concurrent use. Every goroutine a Relay starts has returned when Close returns.
type Relay struct {
	cfg  Config
	addr string
	log  *slog.Logger

	mu       sync.Mutex
	fault    Fault
	changed  chan struct{} // closed and replaced on every fault change
	ln       net.Listener  // nil while Down or closed
	closed   bool
	conns    map[uint64]*conn
	byUp     map[string]*conn
	hist     []*connLog // every connection accepted, in accept order
	nextID   uint64
	rng      *rand.Rand
	accepted uint64
	resets   uint64
	dialErrs uint64

	done chan struct{} // closed by Close
	wg   sync.WaitGroup
}

// Listen starts a relay on 127.0.0.1 (port chosen by the OS) that forwards to target.
func Listen(target string) (*Relay, error) {
	return New(Config{Target: target})
}

// New starts a relay as configured. The relay accepts connections before New returns.
func New(cfg Config) (*Relay, error) {
	if cfg.Target == "" {
		return nil, fmt.Errorf("%w: Target is empty", ErrInvalidConfig)
	}
	if _, _, err := net.SplitHostPort(cfg.Target); err != nil {
		return nil, fmt.Errorf("%w: Target %q: %v", ErrInvalidConfig, cfg.Target, err)
	}
	if cfg.ListenAddr == "" {
		cfg.ListenAddr = "127.0.0.1:0"
	}
	if cfg.DialTimeout < 0 {
		return nil, fmt.Errorf("%w: DialTimeout %v is negative", ErrInvalidConfig, cfg.DialTimeout)
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("faultnet: listen %s: %w", cfg.ListenAddr, err)
	}
	r := &Relay{
		cfg:     cfg,
		addr:    ln.Addr().String(),
		log:     log.With("relay", cfg.Name),
		changed: make(chan struct{}),
		ln:      ln,
		conns:   make(map[uint64]*conn),
		byUp:    make(map[string]*conn),
		rng:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		done:    make(chan struct{}),
	}
	r.wg.Add(1)
	go r.acceptLoop(ln)
	return r, nil
}

// Addr returns the host:port clients dial. It does not change for the life of the relay.
func (r *Relay) Addr() string { return r.addr }

// Target returns the address the relay forwards to.
func (r *Relay) Target() string { return r.cfg.Target }

// Name returns the configured name.
func (r *Relay) Name() string { return r.cfg.Name }

// Fault returns the fault in force.
func (r *Relay) Fault() Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fault
}

// SetFault switches the relay to f, effective for live connections at their
// next chunk and for new connections at once. Leaving Down re-listens on
// Addr; if that fails the relay stays Down and the error is returned.
// SetFault after Close returns ErrClosed.
func (r *Relay) SetFault(f Fault) error {
	if err := f.Validate(); err != nil {
		return err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	prev := r.fault
	var toKill []*conn
	switch {
	case f.Kind == KindDown:
		if r.ln != nil {
			_ = r.ln.Close()
			r.ln = nil
		}
		toKill = r.allConnsLocked()
	case prev.Kind == KindDown:
		ln, err := net.Listen("tcp", r.addr)
		if err != nil {
			r.mu.Unlock()
			return fmt.Errorf("faultnet: re-listen on %s leaving Down: %w", r.addr, err)
		}
		r.ln = ln
		r.wg.Add(1)
		go r.acceptLoop(ln)
	}
	if f.Kind == KindReset {
		toKill = r.allConnsLocked()
		f = None()
	}
	r.fault = f
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()

	for _, c := range toKill {
		c.kill(true, ClosedByFault)
	}
	r.log.Debug("fault set", "fault", f.String(), "previous", prev.String(), "reset", len(toKill))
	return nil
}

// Conns returns the live connections, ordered by ID.
func (r *Relay) Conns() []ConnInfo {
	r.mu.Lock()
	out := make([]ConnInfo, 0, len(r.conns))
	for _, c := range r.conns {
		out = append(out, c.info())
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// LookupUpstream finds the live connection whose upstream local address is
// addr, i.e. the connection a server behind the relay sees as remote address
// addr. The entry exists before the first byte is forwarded to Target, so a
// server that looks it up after reading anything always finds it.
func (r *Relay) LookupUpstream(addr string) (ConnInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.byUp[addr]
	if !ok {
		return ConnInfo{}, false
	}
	return c.info(), true
}

// Info returns the live connection with the given ID, if any.
func (r *Relay) Info(id uint64) (ConnInfo, bool) {
	r.mu.Lock()
	c, ok := r.conns[id]
	r.mu.Unlock()
	if !ok {
		return ConnInfo{}, false
	}
	return c.info(), true
}

// ResetConn resets (RST to both sides) the live connection with the given ID
// and reports whether it existed.
func (r *Relay) ResetConn(id uint64) bool {
	r.mu.Lock()
	c, ok := r.conns[id]
	r.mu.Unlock()
	if ok {
		c.kill(true, ClosedByFault)
	}
	return ok
}

// ResetAll resets every live connection, leaves the fault unchanged, and
// returns how many were reset.
func (r *Relay) ResetAll() int {
	r.mu.Lock()
	cs := r.allConnsLocked()
	r.mu.Unlock()
	n := 0
	for _, c := range cs {
		if c.kill(true, ClosedByFault) { // one killed already (dead, not yet forgotten) is not counted
			n++
		}
	}
	return n
}

// History returns the record of every connection the relay accepted, open
// or closed, in accept order: when it was opened, every chunk the client
// sent with when it left the client and when it reached Target, and when
// and by whom it was closed.
func (r *Relay) History() []ConnRecord {
	r.mu.Lock()
	logs := append([]*connLog(nil), r.hist...)
	r.mu.Unlock()
	out := make([]ConnRecord, len(logs))
	for i, l := range logs {
		out[i] = l.snapshot()
	}
	return out
}

// Record returns the record of the connection with the given ID (open or
// closed) and whether the relay accepted one with that ID.
func (r *Relay) Record(id uint64) (ConnRecord, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id == 0 || id > uint64(len(r.hist)) {
		return ConnRecord{}, false
	}
	return r.hist[id-1].snapshot(), true
}

// Stats returns the relay's counters.
func (r *Relay) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Stats{Accepted: r.accepted, Active: len(r.conns), Resets: r.resets, DialErrors: r.dialErrs}
}

// Close stops listening, resets every live connection and waits until every
// goroutine of the relay has returned. It is idempotent.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.wg.Wait()
		return nil
	}
	r.closed = true
	if r.ln != nil {
		_ = r.ln.Close()
		r.ln = nil
	}
	cs := r.allConnsLocked()
	close(r.done)
	r.mu.Unlock()
	for _, c := range cs {
		c.kill(true, ClosedByRelay)
	}
	r.wg.Wait()
	return nil
}

// allConnsLocked returns the tracked connections and counts them as reset.
func (r *Relay) allConnsLocked() []*conn {
	cs := make([]*conn, 0, len(r.conns))
	for _, c := range r.conns {
		cs = append(cs, c)
	}
	r.resets += uint64(len(cs))
	return cs
}

// state returns the fault in force and the channel closed at its next change.
func (r *Relay) state() (Fault, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fault, r.changed
}

// delay draws the latency for one chunk under f.
func (r *Relay) delay(f Fault) time.Duration {
	d := f.Delay
	if f.Jitter > 0 {
		r.mu.Lock()
		d += time.Duration(r.rng.Int64N(int64(f.Jitter) + 1))
		r.mu.Unlock()
	}
	return d
}

func (r *Relay) acceptLoop(ln net.Listener) {
	defer r.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient (e.g. EMFILE): back off briefly, unless closing.
			select {
			case <-r.done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		r.mu.Lock()
		if r.closed || r.fault.Kind == KindDown {
			r.mu.Unlock()
			resetConn(c)
			continue
		}
		r.nextID++
		r.accepted++
		pc := newConn(r.nextID, c, r.addr)
		r.conns[pc.id] = pc
		r.hist = append(r.hist, pc.log)
		r.wg.Add(1)
		r.mu.Unlock()
		go r.serve(pc)
	}
}

func (r *Relay) serve(pc *conn) {
	defer r.wg.Done()
	defer r.forget(pc)

	// The client's side is read from the accept on, whatever the fault: a
	// connection accepted under a blackhole is held (not dialed through)
	// until it lifts, but the bytes the client writes and its close are in
	// the record when they happen, not at the heal.
	fromClient := r.read(pc, pc.client, true)

	// Accept, then silence: hold a new connection while blackholed.
	for {
		f, changed := r.state()
		if f.Kind != KindBlackhole {
			break
		}
		select {
		case <-changed:
		case <-pc.killed:
			fromClient.stop()
			return
		}
	}

	ctx, cancel := context.WithTimeout(pc.ctx, r.cfg.DialTimeout)
	var d net.Dialer
	up, err := d.DialContext(ctx, "tcp", r.cfg.Target)
	cancel()
	if err != nil {
		r.mu.Lock()
		r.dialErrs++
		r.mu.Unlock()
		r.log.Debug("dial target failed", "conn", pc.id, "err", err)
		pc.kill(true, ClosedByRelay)
		fromClient.stop()
		return
	}
	key := up.LocalAddr().String()
	if !pc.setUpstream(up, key) {
		resetConn(up)
		fromClient.stop()
		return
	}
	r.mu.Lock()
	r.byUp[key] = pc
	r.mu.Unlock()

	var dirs sync.WaitGroup
	dirs.Add(2)
	go func() { defer dirs.Done(); r.forward(pc, fromClient, up, true) }()
	go func() { defer dirs.Done(); r.forward(pc, r.read(pc, up, false), pc.client, false) }()
	dirs.Wait()
	pc.kill(false, "")
}

func (r *Relay) forget(pc *conn) {
	r.mu.Lock()
	delete(r.conns, pc.id)
	if k := pc.key(); k != "" && r.byUp[k] == pc {
		delete(r.byUp, k)
	}
	r.mu.Unlock()
}

// chunk is one read from a source; err is set (io.EOF or another error) on the last.
type chunk struct {
	data  []byte
	at    time.Time
	after time.Time // the client's socket was empty then: the bytes left after it
	err   error
}

// maxHeld bounds the bytes a direction reads ahead of what it forwarded (a
// fault holding them): beyond it the relay stops reading the source, and the
// kernel's buffers hold the rest. Bounded by bytes, not reads, so a source
// writing small messages (orders) into a blackhole is read to its end, and
// its close is seen when it happens.
const maxHeld = 4 << 20

// reader is one direction's source being read into its queue.
type reader struct {
	q    *chunkQueue
	done chan struct{} // closed when the reading goroutine has returned
}

// stop drops what the reader holds and waits for it to return (the conn
// must be killed, or its source ended, for the read to return).
func (rd reader) stop() {
	rd.q.abandon()
	<-rd.done
}

// read starts reading src into a queue bounded by maxHeld, until src ends
// or the conn is killed. up: src is the client (the direction the
// connection's record logs chunk by chunk). The reader notes the end of src
// in the record (EndSeen) when it reads it, whatever a fault holds back.
func (r *Relay) read(pc *conn, src net.Conn, up bool) reader {
	rd := reader{q: newChunkQueue(maxHeld), done: make(chan struct{})}
	go func() {
		defer close(rd.done)
		defer rd.q.close()
		buf := make([]byte, 32*1024)
		// drained: when a read last left the client's socket empty (it
		// returned less than a full buffer). Bytes read later left the
		// client after it, however long the relay then stopped reading (a
		// blackhole holds the chunks, and the kernel holds the rest).
		drained := pc.opened
		for {
			n, err := src.Read(buf)
			if n > 0 {
				ch := chunk{data: append([]byte(nil), buf[:n]...), at: time.Now(), after: drained}
				if n < len(buf) {
					drained = ch.at
				}
				if !rd.q.push(ch, pc.killed) {
					return
				}
			}
			if err != nil {
				at := time.Now()
				if !pc.isDead() {
					// The side closed (or reset) by now: noted at once, though
					// a fault may hold the end back from the other side.
					pc.log.endSeen(at)
				}
				rd.q.push(chunk{at: at, err: err}, pc.killed)
				return
			}
		}
	}()
	return rd
}

// forward passes what rd reads to dst through the fault gate until the
// source ends or the conn is killed. up: the source is the client.
func (r *Relay) forward(pc *conn, rd reader, dst net.Conn, up bool) {
	srcSide, dstSide := ClosedByServer, ClosedByClient
	if up {
		srcSide, dstSide = ClosedByClient, ClosedByServer
	}
	q := rd.q
	// Unblock the reader so it can exit.
	defer rd.stop()
	for {
		ch, ok := q.pop()
		if !ok {
			return
		}
		idx := -1
		if up && len(ch.data) > 0 {
			idx = pc.log.sentAfter(len(ch.data), ch.after, ch.at, time.Time{})
		}
		if !r.gate(pc, ch.at) {
			pc.kill(true, "")
			return
		}
		if ch.err != nil {
			if !pc.isDead() {
				pc.log.closed(ch.at, srcSide)
			}
			if errors.Is(ch.err, io.EOF) {
				if cw, ok := dst.(interface{ CloseWrite() error }); ok {
					_ = cw.CloseWrite()
				}
				return
			}
			select {
			case <-pc.killed:
			default:
				r.log.Debug("read error, resetting", "conn", pc.id, "err", ch.err)
			}
			pc.kill(true, "")
			return
		}
		if _, err := dst.Write(ch.data); err != nil {
			pc.kill(true, dstSide)
			return
		}
		if idx >= 0 {
			pc.log.arrived(idx, time.Now())
		}
	}
}

// chunkQueue carries one direction's reads from its reader to its forwarder:
// a FIFO bounded by the bytes it holds (one chunk is always let in), one
// producer, one consumer.
type chunkQueue struct {
	limit   int
	mu      sync.Mutex
	items   []chunk
	bytes   int
	done    bool          // the reader pushed its last chunk
	dropped bool          // the forwarder left: pushes are dropped
	wake    chan struct{} // a chunk was pushed or the queue closed
	room    chan struct{} // a chunk was popped or the forwarder left
}

func newChunkQueue(limit int) *chunkQueue {
	return &chunkQueue{limit: limit, wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// push appends ch, waiting while the queue is full; false when the
// forwarder left or the conn was killed (ch is dropped).
func (q *chunkQueue) push(ch chunk, killed <-chan struct{}) bool {
	for {
		q.mu.Lock()
		if q.dropped {
			q.mu.Unlock()
			return false
		}
		if q.bytes < q.limit || len(q.items) == 0 {
			q.items = append(q.items, ch)
			q.bytes += len(ch.data)
			q.mu.Unlock()
			signal(q.wake)
			return true
		}
		q.mu.Unlock()
		select {
		case <-q.room:
		case <-killed:
			return false
		}
	}
}

// pop removes the oldest chunk, waiting for one; false when the reader is
// done and everything it pushed was taken.
func (q *chunkQueue) pop() (chunk, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			ch := q.items[0]
			q.items[0] = chunk{}
			q.items = q.items[1:]
			q.bytes -= len(ch.data)
			q.mu.Unlock()
			signal(q.room)
			return ch, true
		}
		if q.done {
			q.mu.Unlock()
			return chunk{}, false
		}
		q.mu.Unlock()
		<-q.wake
	}
}

// close marks the reader done.
func (q *chunkQueue) close() {
	q.mu.Lock()
	q.done = true
	q.mu.Unlock()
	signal(q.wake)
}

// abandon drops whatever is pushed from now on and wakes a waiting push.
func (q *chunkQueue) abandon() {
	q.mu.Lock()
	q.dropped = true
	q.items = nil
	q.mu.Unlock()
	signal(q.room)
}

// gate blocks while the relay is blackholed and until the latency due for a
// chunk read at `at` has passed. It returns false if the conn was killed.
func (r *Relay) gate(pc *conn, at time.Time) bool {
	for {
		f, changed := r.state()
		switch f.Kind {
		case KindBlackhole, KindDown:
			select {
			case <-changed:
				continue
			case <-pc.killed:
				return false
			}
		case KindLatency:
			wait := time.Until(at.Add(r.delay(f)))
			if wait <= 0 {
				return true
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				return true
			case <-changed:
				t.Stop()
				continue
			case <-pc.killed:
				t.Stop()
				return false
			}
		default:
			select {
			case <-pc.killed:
				return false
			default:
				return true
			}
		}
	}
}

// resetConn closes c with SO_LINGER 0 so the peer sees a reset.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
