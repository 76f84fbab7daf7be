// Command statusdemo serves the status page (/) and Prometheus metrics
// (/metrics) for a Path on the embedded simulated broker, with an order every
// 100 ms, over REST and FIX in turn, and a price stream over WebSocket, and cuts region eu off
// (blackhole) after -outage, so the page can be looked at (or screenshotted by
// `make status-screenshot`) with real content. With -halt, us is cut off too
// once the failover is done, for that long: trading halts, then resumes.
//
//	go run ./internal/statusdemo -addr 127.0.0.1:8080 -outage 2s
//	go run ./internal/statusdemo -outage 2s -halt 4s     # a run with a halt
//
// It writes its base URL to -url-file once it is listening, and exits after
// -for (0: on SIGINT/SIGTERM).
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/config"
	"github.com/quickfixgo/tag"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/observe"
	"github.com/brokerpath/brokerpath/observe/metrics"
	"github.com/brokerpath/brokerpath/observe/status"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
	"github.com/brokerpath/brokerpath/transports/rest"
	"github.com/brokerpath/brokerpath/transports/ws"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "statusdemo:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	urlFile := flag.String("url-file", "", "write the base URL here once listening")
	outage := flag.Duration("outage", 2*time.Second, "cut region eu off (REST, probe and WebSocket blackholed) after this long; 0: never")
	lifetime := flag.Duration("for", 0, "exit after this long; 0: on SIGINT/SIGTERM")
	halt := flag.Duration("halt", 0, "after the failover (-outage + 3 s), cut us off too for this long: trading halts, then resumes on us; 0: no halt")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *lifetime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *lifetime)
		defer cancel()
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	bcfg := simbroker.DefaultConfig()
	b, err := simbroker.Start(ctx, bcfg)
	if err != nil {
		return err
	}
	defer b.Close()

	tlsCfg := &tls.Config{RootCAs: b.CertPool(), MinVersion: tls.VersionTLS12}
	auth := http.Header{"X-API-Key": {b.APIKey()}}
	probe, err := rest.Probe(rest.ProbeOptions{Path: "/v1/account", Header: auth, TLSConfig: tlsCfg, Service: "probe"})
	if err != nil {
		return err
	}
	m := metrics.New()
	rec := status.NewRecorder()
	var client *http.Client // the reconciler reads through it (set below)
	cfg := pathdialer.DefaultConfig()
	for i, rg := range b.Regions() {
		cfg.Endpoints = append(cfg.Endpoints, pathdialer.Endpoint{
			Name: rg.Name(), Region: rg.Name(), Priority: 10 * i, Primary: i == 0,
			Services: map[string]string{"rest": rg.RESTURL(), "probe": rg.ProbeURL(), "ws": rg.WSURL(), "fix": rg.FIXAddr()},
		})
	}
	cfg.Probe = probe
	cfg.ProbeInterval, cfg.ProbeTimeout, cfg.ProbeJitter = 250*time.Millisecond, 200*time.Millisecond, 20*time.Millisecond
	cfg.Engine.FailureThreshold = 2
	cfg.Engine.MaxHealthAge = 2 * time.Second
	cfg.InflightGrace = 200 * time.Millisecond
	cfg.Fencer = pathdialer.LocalFenceOnly
	fixRec, err := fix.NewReconciler(fix.ReconcileOptions{AnswerTimeout: time.Second, RetryInterval: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	cfg.Reconcile = pathdialer.ReconcileAll(func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
		return reconcile(ctx, client, auth, r)
	}, fixRec.Reconcile)
	cfg.ReconcileTimeout = 5 * time.Second
	cfg.Logger = log
	cfg.OnEvent = observe.Tee(m.OnEvent, rec.OnEvent)
	path, err := pathdialer.New(cfg)
	if err != nil {
		return err
	}
	m.Watch(path)
	rt, err := rest.NewTransport(path, rest.Options{TLSConfig: tlsCfg, Logger: log, ResponseHeaderTimeout: time.Second, Hosts: []string{"broker.invalid"}})
	if err != nil {
		return err
	}
	defer rt.CloseIdleConnections()
	client = &http.Client{Transport: rt}
	m.WatchREST(rt)
	if err := path.Start(ctx); err != nil {
		return err
	}
	defer path.Close()

	ticks := status.NewTicks()
	sc := ws.DefaultStreamConfig()
	sc.Streams = []string{"px.EURUSD"}
	sc.Handler = ticks.Wrap(func(ws.Message) {})
	sc.Dialer = &websocket.Dialer{TLSClientConfig: tlsCfg}
	sc.Header = auth
	sc.Backoff = ws.Backoff{Base: 200 * time.Millisecond, Cap: 2 * time.Second}
	sc.PingInterval, sc.PongTimeout = 500*time.Millisecond, 500*time.Millisecond
	sc.Logger = log
	stream, err := ws.NewStream(path, sc)
	if err != nil {
		return err
	}
	if err := stream.Start(ctx); err != nil {
		return err
	}
	defer stream.Close()
	m.WatchStream(stream)

	settings := quickfix.NewSettings()
	ss := quickfix.NewSessionSettings()
	sid := b.FIXSessionID()
	ss.Set(config.BeginString, sid.BeginString)
	ss.Set(config.SenderCompID, sid.SenderCompID)
	ss.Set(config.TargetCompID, sid.TargetCompID)
	ss.Set(config.HeartBtInt, "1")
	if sid, err = settings.AddSession(ss); err != nil {
		return err
	}
	in, err := fix.NewInitiator(fixApp{}, quickfix.NewMemoryStoreFactory(), settings, quickfix.NewNullLogFactory(), path,
		fix.Options{Sequence: fix.SequenceContinue, Reconciler: fixRec, Logger: log})
	if err != nil {
		return err
	}
	defer in.Close()
	m.WatchFIX(in)
	lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
	err = in.WaitLoggedOn(lctx, sid, "")
	lcancel()
	if err != nil {
		return fmt.Errorf("FIX logon: %w", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(m)

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", status.Handler(path, status.Options{Title: "brokerpath · simulated account", Refresh: 2 * time.Second,
		Recorder: rec, REST: rt, FIX: in, Stream: stream, Ticks: ticks, MetricsURL: "/metrics"}))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String() + "/"
	if *urlFile != "" {
		if err := os.WriteFile(*urlFile, []byte(base+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Println("statusdemo: serving", base)

	// An order every 100 ms, so the page has orders to count: some are on the
	// wire when eu is cut off (outcome unknown, then checked with the broker),
	// some wait while the switch is held.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var outageC, haltC, resumeC <-chan time.Time
	if *outage > 0 {
		outageC = time.After(*outage)
		if *halt > 0 {
			haltC = time.After(*outage + 3*time.Second)
		}
	}
	var orders sync.WaitGroup
	defer orders.Wait()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(shut)
			if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		case err := <-served:
			return err
		case <-outageC:
			for _, svc := range []simbroker.Service{simbroker.REST, simbroker.Probe, simbroker.WS, simbroker.FIX} {
				if err := b.SetFault("eu", svc, simbroker.Blackhole{}); err != nil {
					return err
				}
			}
			fmt.Println("statusdemo: region eu is cut off (blackhole)")
		case <-haltC:
			for _, svc := range []simbroker.Service{simbroker.REST, simbroker.Probe, simbroker.WS, simbroker.FIX} {
				if err := b.SetFault("us", svc, simbroker.Blackhole{}); err != nil {
					return err
				}
			}
			resumeC = time.After(*halt)
			fmt.Println("statusdemo: region us is cut off too (blackhole): nowhere to go")
		case <-resumeC:
			for _, svc := range []simbroker.Service{simbroker.REST, simbroker.Probe, simbroker.WS, simbroker.FIX} {
				if err := b.SetFault("us", svc, simbroker.None{}); err != nil {
					return err
				}
			}
			fmt.Println("statusdemo: region us answers again")
		case <-tick.C:
			orders.Add(1)
			go func(id string) {
				defer orders.Done()
				if n%2 == 0 {
					place(ctx, client, auth, id)
					return
				}
				placeFIX(ctx, in, sid, id)
			}(fmt.Sprintf("statusdemo-%d", n))
		}
	}
}

// place sends one market order; its outcome is counted by the transport.
func place(ctx context.Context, client *http.Client, auth http.Header, id string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	body := fmt.Sprintf(`{"client_order_id":%q,"symbol":"EURUSD","side":"buy","qty":"1","type":"market"}`, id)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://broker.invalid/v1/orders", strings.NewReader(body))
	if err != nil {
		return
	}
	req.Header = auth.Clone()
	req.Header.Set("Content-Type", "application/json")
	if resp, err := client.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

// placeFIX sends one market order over FIX; the initiator counts it.
func placeFIX(ctx context.Context, in *fix.Initiator, sid quickfix.SessionID, id string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	nos := quickfix.NewMessage()
	nos.Header.SetString(tag.MsgType, "D")
	nos.Body.SetString(tag.ClOrdID, id)
	nos.Body.SetString(tag.Symbol, "EURUSD")
	nos.Body.SetString(tag.Side, "1")
	nos.Body.SetString(tag.OrdType, "1")
	nos.Body.SetString(tag.OrderQty, "1")
	nos.Body.SetString(tag.HandlInst, "1")
	_ = in.SendOrder(ctx, nos, sid)
}

// fixApp is a quickfix Application that needs nothing from the messages:
// the initiator finishes each order's ticket on its answer.
type fixApp struct{}

func (fixApp) OnCreate(quickfix.SessionID)                       {}
func (fixApp) OnLogon(quickfix.SessionID)                        {}
func (fixApp) OnLogout(quickfix.SessionID)                       {}
func (fixApp) ToAdmin(*quickfix.Message, quickfix.SessionID)     {}
func (fixApp) ToApp(*quickfix.Message, quickfix.SessionID) error { return nil }
func (fixApp) FromAdmin(*quickfix.Message, quickfix.SessionID) quickfix.MessageRejectError {
	return nil
}
func (fixApp) FromApp(*quickfix.Message, quickfix.SessionID) quickfix.MessageRejectError { return nil }

// reconcile settles REST orders by looking each up by client order ID
// through the new path.
func reconcile(ctx context.Context, client *http.Client, auth http.Header, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	var out []pathdialer.Settlement
	for _, t := range r.Tickets {
		if t.Service != pathdialer.ServiceREST {
			continue // FIX orders: the FIX reconciler
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://broker.invalid/v1/orders/"+url.PathEscape(t.OrderID), nil)
		if err != nil {
			return out, err
		}
		req.Header = auth.Clone()
		resp, err := client.Do(req)
		if err != nil {
			return out, err
		}
		var o struct{ Status string }
		err = json.NewDecoder(resp.Body).Decode(&o)
		_ = resp.Body.Close()
		fate, ok := map[string]pathdialer.Fate{"filled": pathdialer.FateFilled, "new": pathdialer.FateResting, "canceled": pathdialer.FateCanceled}[o.Status]
		switch {
		case resp.StatusCode == http.StatusNotFound:
			fate = pathdialer.FateNotReceived
		case resp.StatusCode != http.StatusOK || err != nil || !ok:
			return out, fmt.Errorf("statusdemo: reconcile %s: HTTP %d, status %q", t.OrderID, resp.StatusCode, o.Status)
		}
		out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: fate})
	}
	return out, nil
}
