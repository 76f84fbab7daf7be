package compare

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

const (
	wsStream = "px.EURUSD"
	wsTick   = 100 * time.Millisecond
	// ws.Stream's own liveness and connect limit, in both tables: it switches
	// when the Path does (probes), not on its own silence.
	wsStreamSilence   = 2 * time.Second
	wsStreamDialLimit = 2 * time.Second
)

// tickLog records what a client handed to the application.
type tickLog struct {
	mu        sync.Mutex
	seqs      []uint64 // ticks (not snapshots) in arrival order
	t0        time.Time
	firstSurv time.Time
	survivor  string
}

func (l *tickLog) record(endpoint string, seq uint64, snapshot bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !snapshot {
		l.seqs = append(l.seqs, seq)
	}
	if endpoint == l.survivor && !l.t0.IsZero() && l.firstSurv.IsZero() {
		l.firstSurv = time.Now()
	}
}

func (l *tickLog) arm(t0 time.Time, survivor string) {
	l.mu.Lock()
	l.t0, l.survivor = t0, survivor
	l.mu.Unlock()
}

func (l *tickLog) first() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.firstSurv
}

// missedDup: ticks in [first seen, last seen] never delivered, and ticks
// delivered more than once.
func (l *tickLog) missedDup() (missed, dup int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.seqs) == 0 {
		return 0, 0
	}
	seen := map[uint64]bool{}
	lo, hi := l.seqs[0], l.seqs[0]
	for _, s := range l.seqs {
		if seen[s] {
			dup++
		}
		seen[s] = true
		lo, hi = min(lo, s), max(hi, s)
	}
	return int(hi-lo+1) - len(seen), dup
}

type wsResult struct {
	firstFromSurvivor time.Duration // < 0: never
	missed, dup       int
}

// wsFailover runs one client, blackholes the primary region after 1 s of
// ticks, and waits for the first message from the survivor, then 1 s more.
func wsFailover(bp bool, s Settings, bound time.Duration) (wsResult, error) {
	b, err := startBroker(func(c *simbroker.Config) { c.TickInterval = wsTick; c.Streams = []string{wsStream} })
	if err != nil {
		return wsResult{}, err
	}
	defer b.Close()
	a := addrsOf(b)
	lg := &tickLog{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stop func()
	if bp {
		stop, err = startStream(ctx, a, s, lg)
	} else {
		stop, err = startLoopClient(ctx, a, s, lg)
	}
	if err != nil {
		return wsResult{}, err
	}
	defer stop()
	time.Sleep(time.Second)
	lg.mu.Lock()
	n := len(lg.seqs)
	lg.mu.Unlock()
	if n == 0 {
		return wsResult{}, errors.New("no tick before the fault")
	}
	t0 := time.Now()
	lg.arm(t0, a.Regions[1].Name)
	if err := blackholeRegion(b, a.Regions[0].Name); err != nil {
		return wsResult{}, err
	}
	res := wsResult{firstFromSurvivor: -1}
	for time.Since(t0) < bound {
		if f := lg.first(); !f.IsZero() {
			res.firstFromSurvivor = f.Sub(t0)
			time.Sleep(time.Second) // let replay or live ticks settle
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	stop()
	res.missed, res.dup = lg.missedDup()
	return res, nil
}

func startStream(ctx context.Context, a brokerAddrs, s Settings, lg *tickLog) (func(), error) {
	cfg, err := pathConfig(a, s, func(r regionAddrs) map[string]string { return map[string]string{"ws": r.WS} })
	if err != nil {
		return nil, err
	}
	cfg.Reconcile = pathdialer.NoReconcile // market data only: no orders in flight
	p, err := pathdialer.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	sc := ws.DefaultStreamConfig()
	sc.Streams = []string{wsStream}
	sc.Handler = func(m ws.Message) { lg.record(m.Endpoint, m.Seq, m.Snapshot) }
	sc.Dialer = &websocket.Dialer{TLSClientConfig: tlsConfig(a.CAPEM), HandshakeTimeout: wsStreamDialLimit}
	sc.Header = http.Header{"X-API-Key": {a.APIKey}}
	sc.PingInterval, sc.PongTimeout = wsStreamSilence/2, wsStreamSilence/2
	sc.DialTimeout = wsStreamDialLimit
	st, err := ws.NewStream(p, sc)
	if err != nil {
		_ = p.Close()
		return nil, err
	}
	if err := st.Start(ctx); err != nil {
		_ = p.Close()
		return nil, err
	}
	return func() { _ = st.Close(); _ = p.Close() }, nil
}

// startLoopClient is a typical exponential-backoff failover client: connect
// to the active source (primary first), resubscribe on every connect (no
// resume), after a lost connection reconnect to the SAME URL after
// base·2^failed + uniform(0, jitter) of it, and after s.WSSwitchAfter failed
// connects switch to the other source at once. Additions such loops usually
// lack, so that it can fail over at all: a read deadline (s.WSSilence) and a
// reconnect after the socket closes.
func startLoopClient(ctx context.Context, a brokerAddrs, s Settings, lg *tickLog) (func(), error) {
	urls := []string{a.Regions[0].WS, a.Regions[1].WS}
	names := []string{a.Regions[0].Name, a.Regions[1].Name}
	d := &websocket.Dialer{TLSClientConfig: tlsConfig(a.CAPEM), HandshakeTimeout: s.WSConnectTimeout}
	hdr := http.Header{"X-API-Key": {a.APIKey}}
	var (
		mu   sync.Mutex
		conn *websocket.Conn
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		active, attempts := 0, 0
		sleep := func(dur time.Duration) bool {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(dur):
				return true
			}
		}
		delay := func() time.Duration {
			dl := min(s.WSBackoffBase*time.Duration(1<<min(attempts, 30)), s.WSBackoffMax)
			return dl + time.Duration(rand.Float64()*s.WSJitter*float64(dl))
		}
		for ctx.Err() == nil {
			dctx, cancel := context.WithTimeout(ctx, s.WSConnectTimeout)
			c, _, err := d.DialContext(dctx, urls[active], hdr)
			cancel()
			if err != nil {
				attempts++
				if attempts >= s.WSSwitchAfter {
					active, attempts = 1-active, 0 // switch sources: connect at once
					continue
				}
				if !sleep(delay()) {
					return
				}
				continue
			}
			attempts = 0
			mu.Lock()
			conn = c
			mu.Unlock()
			sub, _ := json.Marshal(map[string]any{"type": "subscribe", "streams": []string{wsStream}})
			_ = c.WriteMessage(websocket.TextMessage, sub)
			c.SetPingHandler(func(data string) error {
				_ = c.SetReadDeadline(time.Now().Add(s.WSSilence))
				return c.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
			})
			for {
				_ = c.SetReadDeadline(time.Now().Add(s.WSSilence))
				_, data, err := c.ReadMessage()
				if err != nil {
					break
				}
				var m struct {
					Type string `json:"type"`
					Seq  uint64 `json:"seq"`
				}
				if json.Unmarshal(data, &m) == nil && (m.Type == "tick" || m.Type == "snapshot") {
					lg.record(names[active], m.Seq, m.Type == "snapshot")
				}
			}
			_ = c.Close()
			mu.Lock()
			conn = nil
			mu.Unlock()
			// closed: reconnect with attempts = 0, same URL.
			if !sleep(delay()) {
				return
			}
		}
	}()
	return func() {
		mu.Lock()
		if conn != nil {
			_ = conn.Close()
		}
		mu.Unlock()
		waitOrTimeout(done, 5*time.Second)
	}, nil
}
