package simbroker

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// WSStats counts a region's WebSocket activity, for drill metrics (seed
// 002: handshakes per second against the budget, resume vs snapshot ratio).
type WSStats struct {
	Attempts     uint64 // handshake requests received
	Handshakes   uint64 // upgrades completed
	OverBudget   uint64 // refused with 503: handshake budget exceeded
	Unavailable  uint64 // refused with 503: Fault503 on ws
	Unauthorized uint64 // refused with 401
	Subscribes   uint64 // streams attached by "subscribe" (snapshot first)
	Resumes      uint64 // streams resumed from the replay buffer
	Snapshots    uint64 // resumes answered with a snapshot (too old, ahead, unknown)
	Active       int64  // connections open now
}

type wsCounters struct {
	attempts, handshakes, overBudget, unavailable, unauthorized atomic.Uint64
	subscribes, resumes, snapshots                              atomic.Uint64
	active                                                      atomic.Int64
}

func (c *wsCounters) count(m attachMode) {
	switch m {
	case attachSubscribe:
		c.subscribes.Add(1)
	case attachResumed:
		c.resumes.Add(1)
	case attachSnapshot:
		c.snapshots.Add(1)
	}
}

func (c *wsCounters) snapshot() WSStats {
	return WSStats{
		Attempts: c.attempts.Load(), Handshakes: c.handshakes.Load(), OverBudget: c.overBudget.Load(),
		Unavailable: c.unavailable.Load(), Unauthorized: c.unauthorized.Load(),
		Subscribes: c.subscribes.Load(), Resumes: c.resumes.Load(), Snapshots: c.snapshots.Load(),
		Active: c.active.Load(),
	}
}

// Server → client messages.
type wsMarketMsg struct {
	Type   string    `json:"type"` // tick | snapshot
	Stream string    `json:"stream"`
	Seq    uint64    `json:"seq"`
	Price  string    `json:"price"`
	Time   time.Time `json:"time"`
	// Epoch names the sequence space Seq belongs to: it changes when the
	// region's feed restarts its numbering (Region.RestartFeed).
	Epoch string `json:"epoch,omitempty"`
}

type wsErrorMsg struct {
	Type    string `json:"type"` // error
	Message string `json:"message"`
}

type wsPongMsg struct {
	Type string `json:"type"` // pong
}

func tickMsg(typ string, t Tick) wsMarketMsg {
	return wsMarketMsg{Type: typ, Stream: t.Stream, Seq: t.Seq, Price: t.Price, Time: t.Time, Epoch: t.epoch}
}

// Client → server message.
type wsInMsg struct {
	Type    string          `json:"type"`
	Streams json.RawMessage `json:"streams"`
	// Epochs, on a resume, names the epoch of each stream's seq; a stream
	// whose epoch is not the feed's is answered with a snapshot.
	Epochs map[string]string `json:"epochs"`
}

func (rg *Region) wsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws", rg.serveWS)
	return mux
}

func (rg *Region) serveWS(w http.ResponseWriter, r *http.Request) {
	rg.ws.attempts.Add(1)
	now := time.Now()
	w.Header().Set("X-Region", rg.name)
	if ok, ra := rg.app.take503(WS, now); ok {
		rg.ws.unavailable.Add(1)
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(ra)))
		writeError(w, http.StatusServiceUnavailable, "service unavailable")
		return
	}
	if ok, wait := rg.budget.take(now); !ok {
		rg.ws.overBudget.Add(1)
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(wait)))
		writeError(w, http.StatusServiceUnavailable, "handshake budget exceeded")
		return
	}
	if !rg.b.authorized(r) {
		rg.ws.unauthorized.Add(1)
		writeError(w, http.StatusUnauthorized, msgUnauthorized)
		return
	}
	_, id, _ := rg.lookupConn(r.RemoteAddr, WS)
	up := websocket.Upgrader{
		HandshakeTimeout: 5 * time.Second,
		CheckOrigin:      func(*http.Request) bool { return true },
	}
	rg.ws.handshakes.Add(1) // counted before the 101 goes out, so a client never sees it uncounted
	ws, err := up.Upgrade(w, r, http.Header{"X-Region": {rg.name}})
	if err != nil {
		rg.ws.handshakes.Add(^uint64(0))
		return // the upgrader has answered
	}
	c := &wsConn{
		rg:     rg,
		ws:     ws,
		id:     id,
		max:    rg.b.cfg.ReplayBuffer*len(rg.b.cfg.Streams) + 1024,
		notify: make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	if !rg.addWS(c) {
		_ = ws.Close()
		return
	}
	defer rg.removeWS(c)
	c.run()
}

func (rg *Region) addWS(c *wsConn) bool {
	rg.wsMu.Lock()
	defer rg.wsMu.Unlock()
	if rg.wsDone {
		return false
	}
	rg.wsConns[c] = struct{}{}
	rg.ws.active.Add(1)
	return true
}

func (rg *Region) removeWS(c *wsConn) {
	rg.wsMu.Lock()
	defer rg.wsMu.Unlock()
	if _, ok := rg.wsConns[c]; ok {
		delete(rg.wsConns, c)
		rg.ws.active.Add(-1)
	}
}

// wsConn is one market data connection: the handler goroutine reads, a
// writer goroutine drains the queue and pings.
type wsConn struct {
	rg  *Region
	ws  *websocket.Conn
	id  string
	max int

	mu     sync.Mutex
	queue  []any
	closed bool

	notify    chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// enqueue never blocks (it runs under the feed lock); a client too slow to
// drain max messages is disconnected.
func (c *wsConn) enqueue(msg any) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if len(c.queue) >= c.max {
		c.mu.Unlock()
		c.rg.b.log.Warn("ws client too slow, disconnecting", "conn", c.id)
		c.close()
		return
	}
	c.queue = append(c.queue, msg)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func (c *wsConn) close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.queue = nil
		c.mu.Unlock()
		close(c.done)
		_ = c.ws.Close()
	})
}

func (c *wsConn) run() {
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writer()
	}()
	c.reader()
	c.close()
	<-writerDone
	c.rg.feed.detachAll(c)
	c.rg.b.connEnded(c.rg, WS, c.codID())
}

func (c *wsConn) readTimeout() time.Duration {
	d := 3 * c.rg.b.cfg.PingInterval
	if d < time.Second {
		d = time.Second
	}
	return d
}

func (c *wsConn) reader() {
	c.ws.SetReadLimit(64 << 10)
	_ = c.ws.SetReadDeadline(time.Now().Add(c.readTimeout()))
	c.ws.SetPongHandler(func(string) error {
		return c.ws.SetReadDeadline(time.Now().Add(c.readTimeout()))
	})
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		_ = c.ws.SetReadDeadline(time.Now().Add(c.readTimeout()))
		c.handle(data)
	}
}

func (c *wsConn) sendError(msg string) { c.enqueue(wsErrorMsg{Type: "error", Message: msg}) }

func (c *wsConn) handle(data []byte) {
	var in wsInMsg
	if err := json.Unmarshal(data, &in); err != nil {
		c.sendError("bad message: not a JSON object")
		return
	}
	feed := c.rg.feed
	switch in.Type {
	case "subscribe", "unsubscribe":
		var streams []string
		if err := json.Unmarshal(in.Streams, &streams); err != nil || len(streams) == 0 {
			c.sendError(in.Type + ": streams must be a non-empty array of stream names")
			return
		}
		for _, s := range streams {
			if in.Type == "unsubscribe" {
				feed.detach(c, s)
				continue
			}
			if _, err := feed.attach(c, s, nil); err != nil {
				c.sendError("unknown stream " + strconv.Quote(s))
			}
		}
	case "resume":
		var from map[string]uint64
		if err := json.Unmarshal(in.Streams, &from); err != nil || len(from) == 0 {
			c.sendError("resume: streams must be a non-empty object of stream name to last seq")
			return
		}
		names := make([]string, 0, len(from))
		for s := range from {
			names = append(names, s)
		}
		sort.Strings(names)
		for _, s := range names {
			seq := from[s]
			if _, err := feed.attachEpoch(c, s, &seq, in.Epochs[s]); err != nil {
				c.sendError("unknown stream " + strconv.Quote(s))
			}
		}
	case "ping":
		c.enqueue(wsPongMsg{Type: "pong"})
	default:
		if !c.handleOrderEntry(in.Type, data) {
			c.sendError("unknown message type " + strconv.Quote(in.Type))
		}
	}
}

func (c *wsConn) writer() {
	t := time.NewTicker(c.rg.b.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(5*time.Second)); err != nil {
				c.close()
				return
			}
		case <-c.notify:
			c.mu.Lock()
			q := c.queue
			c.queue = nil
			c.mu.Unlock()
			partial := c.rg.app.isPartial(WS)
			for _, msg := range q {
				if _, market := msg.(wsMarketMsg); market && partial {
					continue // Partial: connected, subscribed, and fed nothing
				}
				_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if err := c.ws.WriteJSON(msg); err != nil {
					c.close()
					return
				}
			}
		}
	}
}
