package ws_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// orderDesk places REST orders on the simulated broker the way a transport
// does: a ticket from the Path, the POST over the ticket's endpoint, the
// outcome reported to the Path as live-traffic evidence.
type orderDesk struct {
	b       *simbroker.Broker
	path    *pathdialer.Path
	clients map[string]*http.Client
	n       int
}

func newOrderDesk(t *testing.T, b *simbroker.Broker, path *pathdialer.Path) *orderDesk {
	d := &orderDesk{b: b, path: path, clients: map[string]*http.Client{}}
	for _, rg := range b.Regions() {
		tr := &http.Transport{DialContext: path.EndpointDialer(rg.Name()), TLSClientConfig: b.ClientTLSConfig()}
		t.Cleanup(tr.CloseIdleConnections)
		d.clients[rg.Name()] = &http.Client{Transport: tr, Timeout: 5 * time.Second}
	}
	return d
}

// place submits one order and returns the endpoint it was submitted on.
func (d *orderDesk) place(ctx context.Context) (string, error) {
	d.n++
	id := fmt.Sprintf("ord-%d", d.n)
	actx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	tk, err := d.path.Acquire(actx, "rest", id)
	if err != nil {
		return "", err
	}
	start := time.Now()
	body := fmt.Sprintf(`{"client_order_id":%q,"symbol":"EURUSD","side":"buy","qty":"1","type":"market"}`, id)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.b.Region(tk.Endpoint).RESTURL()+"/v1/orders", strings.NewReader(body))
	if err != nil {
		tk.Done()
		return "", err
	}
	req.Header.Set("X-API-Key", d.b.APIKey())
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.clients[tk.Endpoint].Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			err = fmt.Errorf("order %s: HTTP %d", id, resp.StatusCode)
		}
	}
	d.path.Report(tk.Endpoint, tk.Token, err, time.Since(start))
	if err != nil {
		tk.Unknown(err)
		return tk.Endpoint, err
	}
	tk.Done()
	return tk.Endpoint, nil
}

// The rule: a stream's failures move the stream, never the orders. On the
// simulated broker, eu's market data server goes down (live connections cut,
// handshakes refused) while eu's probes and REST orders succeed. The stream
// loses its connection, fails its handshake on eu and falls back to us on its
// own; the Path keeps eu active (no switch, no gray failure, no halt) and
// every order is booked through eu. When us is down too, the stream has
// nowhere to go and keeps retrying eu: trading is not halted.
func TestStreamFailuresDoNotMoveOrders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		usDown bool // us's probes fail: no backup, the stream cannot fall back
	}{
		{"backup healthy: the stream falls back, orders stay", false},
		{"no backup: the stream retries, orders are not halted", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bcfg := simbroker.DefaultConfig()
			bcfg.TickInterval = 0
			bcfg.Streams = []string{px}
			bcfg.PingInterval = 50 * time.Millisecond
			b, err := simbroker.Start(context.Background(), bcfg)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			var eps []pathdialer.Endpoint
			for _, rg := range b.Regions() {
				eps = append(eps, pathdialer.Endpoint{Name: rg.Name(), Region: rg.Name(),
					Services: map[string]string{"ws": rg.WSURL(), "rest": rg.RESTURL()}})
			}
			// FailureThreshold 2: a lost connection and one failed handshake
			// would be enough to take eu DOWN if they counted.
			h := newPathHarness(t, eps, nil)
			desk := newOrderDesk(t, b, h.path)
			ctx := context.Background()
			if tc.usDown {
				h.down["us"].Store(true)
				eventually(t, "us DOWN", func() bool { return stateOf(h.path, "us") == "DOWN" })
			}
			rec := &recorder{}
			var mu sync.Mutex
			var dialFailed []string
			scfg := fastConfig(rec, px)
			scfg.Dialer = &websocket.Dialer{TLSClientConfig: b.ClientTLSConfig(), HandshakeTimeout: time.Second}
			scfg.Header = http.Header{"X-API-Key": {b.APIKey()}}
			scfg.OnEvent = func(e ws.StreamEvent) {
				if e.Kind == ws.StreamEventDialFailed {
					mu.Lock()
					dialFailed = append(dialFailed, e.Endpoint)
					mu.Unlock()
				}
			}
			s := startStream(t, h.path, scfg)
			publish := func(until func() bool) {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for !until() {
					if time.Now().After(deadline) {
						t.Fatalf("timed out; stream %+v; path %+v", s.Stats(), h.path.Snapshot().Endpoints)
					}
					if _, err := b.PublishTick(px); err != nil {
						t.Fatal(err)
					}
					<-time.After(time.Millisecond)
				}
			}
			publish(func() bool { return s.Stats().Endpoint == "eu" && rec.lastSeq() >= 10 })
			if ep, err := desk.place(ctx); err != nil || ep != "eu" {
				t.Fatalf("order before the fault: on %q, %v", ep, err)
			}

			if err := b.SetFault("eu", simbroker.WS, simbroker.Down{}); err != nil {
				t.Fatal(err)
			}
			if tc.usDown {
				// Nowhere to fall back to: let the stream lose eu and fail
				// several rounds there.
				eventually(t, "the stream's failed rounds on eu", func() bool { return s.Stats().DialFailures >= 4 })
			} else {
				publish(func() bool { return s.Stats().Endpoint == "us" && s.Stats().Fallbacks >= 1 })
			}
			for range 5 {
				if ep, err := desk.place(ctx); err != nil || ep != "eu" {
					t.Fatalf("order after the stream's failures: on %q, %v; path %+v", ep, err, h.path.Snapshot().Endpoints)
				}
			}
			snap := h.path.Snapshot()
			if snap.Active != "eu" || snap.Token != 0 || len(snap.Switches) != 0 || snap.Halts != 0 || snap.Gate != pathdialer.GateOpen {
				t.Fatalf("active %s gen %d switches %d halts %d gate %v (%s): the stream's failures moved the orders",
					snap.Active, snap.Token, len(snap.Switches), snap.Halts, snap.Gate, snap.GateCause)
			}
			for _, e := range snap.Endpoints {
				if e.Name == "eu" && (e.State.String() != "HEALTHY" || e.GrayFailures != 0) {
					t.Fatalf("eu %v %+v: stream failures counted against the orders' endpoint", e.State, e.EndpointEvidence)
				}
			}
			if got := len(b.Audit().Booked().AcceptedThrough("eu", time.Time{})); got != 6 {
				t.Fatalf("%d orders booked through eu, want 6", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(dialFailed) == 0 || dialFailed[0] != "eu" {
				t.Fatalf("dial-failed events %v: want the stream's failures on eu shown as its own evidence", dialFailed)
			}
			if !tc.usDown {
				tk, err := b.PublishTick(px)
				if err != nil {
					t.Fatal(err)
				}
				eventually(t, "the last tick", func() bool { return rec.lastSeq() == tk.Seq })
				checkExactlyOnce(t, rec.snapshot(), tk.Seq)
			}
		})
	}
}

func stateOf(p *pathdialer.Path, name string) string {
	for _, e := range p.Snapshot().Endpoints {
		if e.Name == name {
			return e.State.String()
		}
	}
	return ""
}

// starvedNet is a two-endpoint in-memory network for synctest bubbles whose
// dials to eu's market data address do not complete within the handshake
// timeout, as on a host too starved to schedule them: the dial returns only
// when its context (DialTimeout) ends. Everything else answers at once.
func starvedNet(t *testing.T, mutate func(*pathdialer.Config, *pathtest.Probes, *pathtest.Events)) *pathdialer.Path {
	t.Helper()
	pn := &pipeNet{ch: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			_, data, err := c.ReadMessage()
			if err != nil {
				return
			}
			if strings.Contains(string(data), `"subscribe"`) {
				writeTick(c, "snapshot", 0)
			}
		}
	})}
	go func() { _ = srv.Serve(pn) }()
	t.Cleanup(func() { _ = srv.Close() })
	eps := []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{"ws": "ws://eu.md.test/ws", "rest": "https://eu.api.test"}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"ws": "ws://us.md.test/ws", "rest": "https://us.api.test"}},
	}
	probes := pathtest.NewProbes("eu", "us")
	cfg := pathtest.FastConfig(eps, probes)
	cfg.AllowPlaintext = true // ws:// over an in-memory network
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == "eu.md.test:80" {
			<-ctx.Done() // starved: the handshake timeout passes first
			return nil, fmt.Errorf("dial %s: i/o timeout (%w)", addr, ctx.Err())
		}
		return pn.Dial(ctx, network, addr)
	}
	ev := pathtest.NewEvents()
	cfg.OnEvent = ev.Hook
	mutate(&cfg, probes, ev)
	return pathtest.Start(t, cfg)
}

// Under a starved host (deterministic: the stream's dials to eu outlast the
// handshake timeout, on the bubble's clock), an application starts its market
// data first and places orders once it has prices. The stream's dial
// timeouts on eu, round after round, are its own evidence: it falls back to
// us after FailuresBeforeFallback rounds (or keeps retrying eu when us is
// down), while eu, whose probes pass, stays HEALTHY and active: no hold, no
// switch, no halt, and every order is granted on eu.
func TestStarvedHostStreamTimeoutsDoNotHaltOrders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		usDown bool
	}{
		{"backup healthy", false},
		{"no backup", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var events *pathtest.Events
				path := starvedNet(t, func(_ *pathdialer.Config, probes *pathtest.Probes, ev *pathtest.Events) {
					probes.Down["us"].Store(tc.usDown)
					events = ev
				})
				time.Sleep(200 * time.Millisecond) // us DOWN when its probes fail
				synctest.Wait()
				rec := &recorder{}
				var dialFailed []string
				cfg := fastConfig(rec, px)
				cfg.OnEvent = func(e ws.StreamEvent) {
					if e.Kind == ws.StreamEventDialFailed {
						dialFailed = append(dialFailed, e.Endpoint)
					}
				}
				s := startStream(t, path, cfg)
				// FailuresBeforeFallback (3) rounds on eu alone, each a
				// DialTimeout (300 ms) and a backoff wait (<= 100 ms), then a
				// round that tries us first (eu failed the last round).
				time.Sleep(3 * time.Second)
				synctest.Wait()

				for i := range 5 {
					tk, err := path.Acquire(t.Context(), "rest", fmt.Sprintf("o%d", i))
					if err != nil {
						t.Fatalf("order %d refused: %v", i, err)
					}
					if tk.Endpoint != "eu" || tk.Token != 0 {
						t.Fatalf("order %d granted on %s gen %d, want eu gen 0", i, tk.Endpoint, tk.Token)
					}
					path.Report(tk.Endpoint, tk.Token, nil, time.Millisecond)
					tk.Done()
				}
				snap := path.Snapshot()
				if snap.Active != "eu" || snap.Token != 0 || snap.Halts != 0 || snap.Gate != pathdialer.GateOpen {
					t.Fatalf("active %s gen %d halts %d gate %v (%s): stream timeouts moved the orders", snap.Active, snap.Token, snap.Halts, snap.Gate, snap.GateCause)
				}
				for _, e := range snap.Endpoints {
					if e.Name == "eu" && (e.State.String() != "HEALTHY" || e.TrafficFailures != 0 || e.GrayFailures != 0) {
						t.Fatalf("eu %v %+v: the stream's timeouts counted as live-traffic evidence", e.State, e.EndpointEvidence)
					}
				}
				for {
					select {
					case e := <-events.C():
						switch {
						case e.Kind == pathdialer.EventHold, e.Kind == pathdialer.EventHalt, e.Kind == pathdialer.EventSwitch,
							e.Kind == pathdialer.EventStateChange && e.Endpoint == "eu" && e.PrevState.String() != "UNKNOWN":
							t.Fatalf("path event %v: the stream's timeouts moved the orders", e)
						}
						continue
					default:
					}
					break
				}
				st := s.Stats()
				euFails := 0
				for _, ep := range dialFailed {
					if ep == "eu" {
						euFails++
					}
				}
				if uint64(len(dialFailed)) != st.DialFailures || len(dialFailed) != euFails {
					t.Fatalf("dial-failed events %v, stats %+v: want every failed connect an event, all on eu", dialFailed, st)
				}
				if tc.usDown {
					if st.Connects != 0 || euFails < 4 {
						t.Fatalf("stats %+v: want the stream still trying eu (eu starved, us down)", st)
					}
				} else if st.Endpoint != "us" || st.Fallbacks != 1 || euFails != 3 {
					t.Fatalf("stats %+v: want the stream fallen back to us after 3 timeouts on eu", st)
				}
			})
		})
	}
}

// A stream that connects proves that the endpoint's market data server
// answers, not that orders go through: it must not end a gray failure. eu's
// orders fail while its probes pass (a gray failure) and us is down, so
// trading is halted; a stream then connects to eu (reads may use it) and
// trading stays halted, eu still in its gray failure.
func TestStreamConnectDoesNotVouchForOrders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := serveSyncWith(t, func(_ *pathdialer.Config, probes *pathtest.Probes) {
			probes.Down["us"].Store(true)
		}, func(c *websocket.Conn, n int, in <-chan clientMsg) {
			for m := range in {
				if m.Type == "subscribe" {
					writeTick(c, "snapshot", 0)
				}
			}
		})
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		_, gen := path.Active()
		for range 2 { // FailureThreshold: orders on eu fail, its probes pass
			path.Report("eu", gen, errors.New("order: HTTP 503"), time.Millisecond)
		}
		synctest.Wait()
		if st, err := path.GateState(); st != pathdialer.GateHalted {
			t.Fatalf("gate %v (%v) after eu's orders failed with us down; want halted", st, err)
		}
		rec := &recorder{}
		s := startStream(t, path, fastConfig(rec, px))
		time.Sleep(time.Second)
		synctest.Wait()
		if st := s.Stats(); st.Endpoint != "eu" || rec.lastSeq() != 0 || len(rec.snapshot()) != 1 {
			t.Fatalf("stream %+v: want it connected to eu with the snapshot", st)
		}
		if st, err := path.GateState(); st != pathdialer.GateHalted {
			t.Fatalf("gate %v (%v): the stream's connect to eu ended the halt although eu's orders fail", st, err)
		}
		for _, e := range path.Snapshot().Endpoints {
			if e.Name == "eu" && !e.GrayFailure {
				t.Fatalf("eu %v %+v: the stream's connect ended its gray failure", e.State, e.EndpointEvidence)
			}
		}
	})
}

// The Dialer's failed dials are returned to the caller, not reported to the
// Path: eu's market data server refusing every dial, read-only or not, moves
// no order flow even at FailureThreshold 2.
func TestDialerFailuresDoNotMoveOrders(t *testing.T) {
	eu, us := newRegion(t, "eu", 10), newRegion(t, "us", 10)
	h := newHarness(t, []*region{eu, us}, nil)
	d, err := ws.NewDialer(h.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := eu.relay.SetFault(faultnet.Down()); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for range 3 {
		if c, _, err := d.Dial(ctx, nil); err == nil {
			_ = c.Close()
			t.Fatal("dial to a refusing eu succeeded")
		}
		if c, _, err := d.DialReadOnly(ctx, "eu", nil); err == nil {
			_ = c.Close()
			t.Fatal("read-only dial to a refusing eu succeeded")
		}
	}
	snap := h.path.Snapshot()
	if snap.Active != "eu" || snap.Token != 0 || snap.Gate != pathdialer.GateOpen {
		t.Fatalf("active %s gen %d gate %v: the Dialer's failures moved the orders", snap.Active, snap.Token, snap.Gate)
	}
	for _, e := range snap.Endpoints {
		if e.Name == "eu" && (e.State.String() != "HEALTHY" || e.TrafficFailures != 0) {
			t.Fatalf("eu %v %+v: the Dialer's failures counted as live-traffic evidence", e.State, e.EndpointEvidence)
		}
	}
}
