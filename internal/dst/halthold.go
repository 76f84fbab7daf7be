package dst

import (
	"net"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// heldAnswers is the halt-with-unknown move's hold on its own orders'
// cut answers (MoveHaltUnknown): the broker books each of them and cuts its
// answer, and the cut reaches the client only after the Path's first
// release following the halt (a return path that delivers the reset late),
// or when the order's own deadline closes the connection. An order the
// broker answers is not held. The resume's
// reconcile, which takes them in flight, then finds them booked and
// reports a final verdict before they finish unknown: the unknown outcome
// that follows must be settled again (every-unknown-order-settled counts
// only a settlement made after it).
type heldAnswers struct {
	ids  map[string]bool
	gate chan struct{} // closed at the first release after the orders were placed
	from time.Time     // when they were placed
	open bool
}

// holdAnswers arms the hold for ids from now (w.mu not held).
func (w *world) holdAnswers(ids []string) {
	h := &heldAnswers{ids: map[string]bool{}, gate: make(chan struct{}), from: time.Now()}
	for _, id := range ids {
		h.ids[id] = true
	}
	w.mu.Lock()
	w.held = h
	w.mu.Unlock()
}

// releaseHeld opens the hold at a release of the gate made after the held
// orders were placed (w.mu held).
func (w *world) releaseHeld(at time.Time) {
	if h := w.held; h != nil && !h.open && at.After(h.from) {
		h.open = true
		close(h.gate)
	}
}

// holdConn wraps order id's connection when its answer is held: a cut
// waits for the hold to open or the connection to be closed; an answer is
// not held (w.mu not held).
func (w *world) holdConn(c net.Conn, id string) net.Conn {
	w.mu.Lock()
	h := w.held
	w.mu.Unlock()
	if h == nil || !h.ids[id] {
		return c
	}
	return &heldConn{Conn: c, gate: h.gate, closed: make(chan struct{})}
}

type heldConn struct {
	net.Conn
	gate   <-chan struct{}
	closed chan struct{}
	once   sync.Once
}

// Read passes an answer at once; a cut (an error with no bytes) reaches
// the caller only once the hold opens, or when the connection is closed.
func (c *heldConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 || err == nil {
		return n, err
	}
	select {
	case <-c.gate:
	case <-c.closed:
	}
	return n, err
}

func (c *heldConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// slowReads is halt-with-unknown's slow reads: while armed, the sim's
// reconcile through region, once it has answered an order that had already
// finished unknown, takes d over its next read, and the move is told (the
// next halt then cuts that reconcile short with an answer found).
type slowReads struct {
	region   string
	d        time.Duration
	answered chan struct{} // closed at that first answer
	done     bool
}

// armSlowReads arms slow reads through region for d and returns the channel
// closed at the first answer (w.mu not held).
func (w *world) armSlowReads(region string, d time.Duration) <-chan struct{} {
	sr := &slowReads{region: region, d: d, answered: make(chan struct{})}
	w.mu.Lock()
	w.slow = sr
	w.mu.Unlock()
	return sr.answered
}

// disarmSlowReads ends them (w.mu not held).
func (w *world) disarmSlowReads() {
	w.mu.Lock()
	w.slow = nil
	w.mu.Unlock()
}

// slowAfter is called by the reconcile after it answered order t through
// region: it returns how long the next read takes (w.mu not held).
func (w *world) slowAfter(region string, t pathdialer.TicketInfo) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	sr := w.slow
	if sr == nil || sr.region != region || t.State != pathdialer.TicketUnknown {
		return 0
	}
	if !sr.done {
		sr.done = true
		close(sr.answered)
	}
	return sr.d
}
