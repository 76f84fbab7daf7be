package simbroker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
)

// Region is one region of the broker: a REST server reached through two
// relays (rest for trading, probe for monitors), a WebSocket server behind
// the ws relay, and a relay to the shared FIX acceptor. Endpoint addresses
// never change for the life of the broker, across Down and back.
type Region struct {
	b    *Broker
	name string

	relays map[Service]*faultnet.Relay
	urls   map[Service]string // injected listeners (Config.Listen) only
	addrs  map[Service]string
	app    *appFaults
	feed   *feed
	budget *tokenBucket
	ws     wsCounters

	restSrv *http.Server
	wsSrv   *http.Server
	servers sync.WaitGroup // Serve loops
	inFlt   sync.WaitGroup // handler invocations
	fltMu   sync.Mutex     // orders inFlt.Add against closeServers' Wait
	fltDone bool

	wsMu    sync.Mutex
	wsConns map[*wsConn]struct{}
	wsDone  bool
}

func startRegion(b *Broker, name string, idx int, initial map[string]Tick) (*Region, error) {
	rg := &Region{
		b:       b,
		name:    name,
		relays:  map[Service]*faultnet.Relay{},
		app:     newAppFaults(),
		budget:  newTokenBucket(b.cfg.HandshakesPerSecond, b.cfg.HandshakeBurst, time.Now()),
		wsConns: map[*wsConn]struct{}{},
	}
	rg.feed = newFeed(initial, b.cfg.ReplayBuffer, b.cfg.ReplicationLag[name], &rg.ws)

	if b.cfg.Listen != nil {
		return rg, rg.startInjected()
	}
	restLn, err := listenLoopback()
	if err != nil {
		return rg, fmt.Errorf("simbroker: region %s: rest listener: %w", name, err)
	}
	wsLn, err := listenLoopback()
	if err != nil {
		_ = restLn.Close()
		return rg, fmt.Errorf("simbroker: region %s: ws listener: %w", name, err)
	}

	targets := map[Service]string{
		REST:  restLn.Addr().String(),
		Probe: restLn.Addr().String(),
		WS:    wsLn.Addr().String(),
		FIX:   b.fix.addr,
	}
	for i, s := range Services {
		r, err := faultnet.New(faultnet.Config{
			Target: targets[s],
			Name:   name + "/" + string(s),
			Seed:   b.cfg.Seed + uint64(idx*len(Services)+i),
			Logger: b.log,
		})
		if err != nil {
			_ = restLn.Close()
			_ = wsLn.Close()
			return rg, fmt.Errorf("simbroker: region %s: %s relay: %w", name, s, err)
		}
		rg.relays[s] = r
	}
	// Serve only once the relays exist: handlers look connections up in them.
	rg.restSrv = newHTTPServer(b, rg.track(rg.restHandler()), true)
	rg.serve(rg.restSrv, restLn)
	rg.wsSrv = newHTTPServer(b, rg.track(rg.wsHandler()), false)
	rg.serve(rg.wsSrv, wsLn)
	return rg, nil
}

// newHTTPServer makes a TLS server; h2 enables HTTP/2 next to HTTP/1.1.
func newHTTPServer(b *Broker, h http.Handler, h2 bool) *http.Server {
	var p http.Protocols
	p.SetHTTP1(true)
	if h2 {
		p.SetHTTP2(true)
	}
	return &http.Server{
		Handler:           h,
		TLSConfig:         b.pki.serverTLS(),
		Protocols:         &p,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if tc, ok := c.(*tls.Conn); ok {
				c = tc.NetConn()
			}
			return context.WithValue(ctx, netConnKey{}, c)
		},
		ErrorLog: slog.NewLogLogger(b.log.Handler(), slog.LevelDebug),
	}
}

// startInjected serves on listeners from Config.Listen: no relays, no FIX.
func (rg *Region) startInjected() error {
	lns := map[Service]net.Listener{}
	for _, s := range []Service{REST, Probe, WS} {
		ln, err := rg.b.cfg.Listen(rg.name, s)
		if err == nil && ln == nil {
			err = errors.New("Listen returned no listener")
		}
		if err != nil {
			for _, l := range lns {
				_ = l.Close()
			}
			return fmt.Errorf("simbroker: region %s: %s listener: %w", rg.name, s, err)
		}
		lns[s] = ln
	}
	scheme, wsScheme := "https://", "wss://"
	if rg.b.cfg.PlainHTTP {
		scheme, wsScheme = "http://", "ws://"
	}
	rg.urls = map[Service]string{
		REST:  scheme + lns[REST].Addr().String(),
		Probe: scheme + lns[Probe].Addr().String(),
		WS:    wsScheme + lns[WS].Addr().String() + "/ws",
	}
	rg.addrs = map[Service]string{REST: lns[REST].Addr().String(), Probe: lns[Probe].Addr().String(), WS: lns[WS].Addr().String()}
	rg.restSrv = newHTTPServer(rg.b, rg.track(rg.restHandler()), !rg.b.cfg.PlainHTTP)
	rg.serve(rg.restSrv, lns[REST])
	rg.serve(rg.restSrv, lns[Probe])
	rg.wsSrv = newHTTPServer(rg.b, rg.track(rg.wsHandler()), false)
	rg.serve(rg.wsSrv, lns[WS])
	return nil
}

func (rg *Region) serve(srv *http.Server, ln net.Listener) {
	rg.servers.Add(1)
	go func() {
		defer rg.servers.Done()
		serve := func() error { return srv.ServeTLS(ln, "", "") }
		if rg.b.cfg.PlainHTTP {
			serve = func() error { return srv.Serve(ln) }
		}
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			rg.b.log.Error("server stopped", "region", rg.name, "err", err)
		}
	}()
}

// track counts handler invocations so Close can wait for them.
func (rg *Region) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A request may still start (an HTTP/2 stream on a live connection)
		// while closeServers waits: never Add to a WaitGroup being waited on.
		rg.fltMu.Lock()
		if rg.fltDone {
			rg.fltMu.Unlock()
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":"broker closing"}`, http.StatusServiceUnavailable)
			return
		}
		rg.inFlt.Add(1)
		rg.fltMu.Unlock()
		defer rg.inFlt.Done()
		h.ServeHTTP(w, r)
	})
}

func (rg *Region) closeRelays() error {
	var errs []error
	for _, s := range Services {
		if r := rg.relays[s]; r != nil {
			errs = append(errs, r.Close())
		}
	}
	return errors.Join(errs...)
}

func (rg *Region) closeServers() error {
	var errs []error
	for _, srv := range []*http.Server{rg.restSrv, rg.wsSrv} {
		if srv != nil {
			errs = append(errs, srv.Close())
		}
	}
	rg.wsMu.Lock()
	rg.wsDone = true
	conns := make([]*wsConn, 0, len(rg.wsConns))
	for c := range rg.wsConns {
		conns = append(conns, c)
	}
	rg.wsMu.Unlock()
	for _, c := range conns {
		c.close()
	}
	rg.servers.Wait()
	rg.fltMu.Lock()
	rg.fltDone = true
	rg.fltMu.Unlock()
	rg.inFlt.Wait()
	if rg.feed != nil {
		rg.feed.close()
	}
	return errors.Join(errs...)
}

// Name returns the region's name.
func (rg *Region) Name() string { return rg.name }

// RESTURL returns the trading base URL, "https://127.0.0.1:PORT" (rest relay).
func (rg *Region) RESTURL() string {
	if rg.urls != nil {
		return rg.urls[REST]
	}
	return "https://" + rg.relays[REST].Addr()
}

// ProbeURL returns the monitoring base URL, "https://127.0.0.1:PORT": the
// same REST server as RESTURL through the probe relay. Health monitors must
// probe ProbeURL + "/v1/account" so that a monitor-only partition
// (PartitionMonitor) reaches them and not the trading traffic.
func (rg *Region) ProbeURL() string {
	if rg.urls != nil {
		return rg.urls[Probe]
	}
	return "https://" + rg.relays[Probe].Addr()
}

// WSURL returns the market data URL, "wss://127.0.0.1:PORT/ws" (TLS with the broker's CA).
func (rg *Region) WSURL() string {
	if rg.urls != nil {
		return rg.urls[WS]
	}
	return "wss://" + rg.relays[WS].Addr() + "/ws"
}

// FIXAddr returns the host:port a FIX initiator connects to for this
// region; "" when the broker serves on injected listeners (no FIX).
func (rg *Region) FIXAddr() string {
	if r := rg.relays[FIX]; r != nil {
		return r.Addr()
	}
	return ""
}

// Addr returns the relay address (host:port) of svc, "" for an unknown service.
func (rg *Region) Addr(svc Service) string {
	if r, ok := rg.relays[svc]; ok {
		return r.Addr()
	}
	if a, ok := rg.addrs[svc]; ok {
		return a
	}
	return ""
}

// Relay returns the faultnet relay in front of svc (for its connection list
// and counters); nil for an unknown service. Prefer Broker.SetFault to
// switching its fault directly, which bypasses Flap bookkeeping.
func (rg *Region) Relay(svc Service) *faultnet.Relay { return rg.relays[svc] }

// StreamHead returns the latest sequence number the region holds for stream
// (behind the central one by the replication lag).
func (rg *Region) StreamHead(stream string) (uint64, error) {
	seq, ok := rg.feed.head(stream)
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrUnknownStream, stream)
	}
	return seq, nil
}

// WSStats returns the region's WebSocket counters (drill metrics).
func (rg *Region) WSStats() WSStats { return rg.ws.snapshot() }
