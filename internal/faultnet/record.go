package faultnet

import (
	"sort"
	"sync"
	"time"
)

// Who closed a connection, in ConnRecord.ClosedBy.
const (
	ClosedByClient = "client" // the client side closed or reset it
	ClosedByServer = "server" // the server side (the target) closed or reset it
	ClosedByFault  = "fault"  // a fault reset it (Down, Reset, ResetConn, ResetAll)
	ClosedByRelay  = "relay"  // the relay or the network was closed, or its dial to the target failed
)

// Chunk is one run of bytes the client wrote on a connection, as the network
// carried it towards the server.
type Chunk struct {
	// Offset is the position of the chunk's first byte in the client→server
	// stream; Len its length.
	Offset uint64
	Len    int
	// Left is when the bytes left the client: when the relay read them from
	// the client's socket (a Relay), when the client wrote them (a
	// MemNetwork): the latest they can have left.
	Left time.Time
	// After is the earliest they can have left: when the relay last found
	// the client's socket empty before reading them (a Relay, whose reads
	// stop while a fault holds the connection, so Left can be much later
	// than the client's write); the write itself (a MemNetwork).
	After time.Time
	// Arrived is when they reached the server: when the relay wrote them to
	// the target (a Relay), when they became readable by the server (a
	// MemNetwork; zero while held by a blackhole). Zero: never delivered.
	Arrived time.Time
}

// ConnRecord is the network's own record of one connection: what really
// happened on the wire, whatever the endpoints believe. A Relay keeps one
// for every connection it accepted (Relay.History), a MemNetwork one for
// every connection dialled through it (MemNetwork.History).
type ConnRecord struct {
	// ID identifies the connection: a Relay's ConnInfo.ID; in a MemNetwork
	// the dial count of Addr (the server sees the client's address as
	// "client-<ID>.<Addr>").
	ID uint64
	// Addr is where the client connected: the relay's address, or the
	// MemNetwork listening address.
	Addr string
	// Opened is when the connection was accepted (Relay) or dialled
	// (MemNetwork).
	Opened time.Time
	// Closed is when it ended (zero while open), ClosedBy who ended it
	// (ClosedByClient, ClosedByServer, ClosedByFault, ClosedByRelay). For a
	// Relay, Closed is when the relay saw the end, at or after the side that
	// ended it did.
	Closed   time.Time
	ClosedBy string
	// EndSeen is when a Relay first read the end (EOF or a reset) of either
	// side's stream: that side had closed by then, though a fault holding
	// the connection (a Blackhole) keeps the end from the other side, and
	// Closed, until it lifts. That holds for a connection accepted during
	// the blackhole too (not dialed through to the server until it lifts):
	// the relay reads the client's side from the accept on. Zero: no end
	// was read (the connection is
	// open, was killed, or belongs to a MemNetwork, whose Closed is already
	// the moment of the close).
	EndSeen time.Time
	// Sent are the client→server chunks, in stream order.
	Sent []Chunk
}

// LeftBy returns when the byte at offset n of the client→server stream
// left the client (false if the stream is not that long).
func (r ConnRecord) LeftBy(n uint64) (time.Time, bool) {
	i := sort.Search(len(r.Sent), func(i int) bool { return r.Sent[i].Offset+uint64(r.Sent[i].Len) > n })
	if i == len(r.Sent) {
		return time.Time{}, false
	}
	return r.Sent[i].Left, true
}

// Delivered returns how many bytes of the client→server stream had reached
// the server at t, and when the last of them left the client (zero if none).
func (r ConnRecord) Delivered(t time.Time) (n uint64, lastLeft time.Time) {
	for _, c := range r.Sent {
		if c.Arrived.IsZero() || c.Arrived.After(t) {
			break
		}
		n, lastLeft = c.Offset+uint64(c.Len), c.Left
	}
	return n, lastLeft
}

// connLog is a connection's record, kept by the network.
type connLog struct {
	mu  sync.Mutex
	rec ConnRecord
	// delivered and lastLeft: the bytes forwarded to the server so far and
	// when the last of them left the client.
	delivered uint64
	lastLeft  time.Time
	lastAfter time.Time
}

func newConnLog(id uint64, addr string, opened time.Time) *connLog {
	return &connLog{rec: ConnRecord{ID: id, Addr: addr, Opened: opened}}
}

// sentAfter appends a chunk that left the client between after and left and
// returns its index.
func (l *connLog) sentAfter(n int, after, left time.Time, arrived time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var off uint64
	if k := len(l.rec.Sent); k > 0 {
		last := l.rec.Sent[k-1]
		off = last.Offset + uint64(last.Len)
	}
	l.rec.Sent = append(l.rec.Sent, Chunk{Offset: off, Len: n, Left: left, After: after, Arrived: arrived})
	if !arrived.IsZero() {
		l.delivered, l.lastLeft, l.lastAfter = off+uint64(n), left, after
	}
	return len(l.rec.Sent) - 1
}

// arrived marks chunk i delivered at t.
func (l *connLog) arrived(i int, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &l.rec.Sent[i]
	c.Arrived = t
	if end := c.Offset + uint64(c.Len); end > l.delivered {
		l.delivered, l.lastLeft, l.lastAfter = end, c.Left, c.After
	}
}

// closed records the end of the connection, once.
func (l *connLog) closed(t time.Time, by string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rec.Closed.IsZero() {
		l.rec.Closed, l.rec.ClosedBy = t, by
	}
}

// endSeen notes the first time the end of a side's stream was read.
func (l *connLog) endSeen(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rec.EndSeen.IsZero() {
		l.rec.EndSeen = t
	}
}

func (l *connLog) snapshot() ConnRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.rec
	r.Sent = append([]Chunk(nil), l.rec.Sent...)
	return r
}

func (l *connLog) opened() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec.Opened
}

// Traced is implemented by the server side of a MemNetwork connection (the
// net.Conn a MemNetwork listener accepts): the network's record of it so
// far. opened is when it was dialled; delivered how many of the client's
// bytes the server has read; lastLeft when the last of those left the
// client. A server that asks after reading a request learns the latest
// instant the request's bytes can have left the client.
type Traced interface {
	NetProgress() (opened time.Time, delivered uint64, lastLeft time.Time)
}

func (l *connLog) progress() (uint64, time.Time, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delivered, l.lastLeft, l.lastAfter
}
