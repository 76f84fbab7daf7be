// Command statusdemo serves the status page (/) and Prometheus metrics
// (/metrics) for a Path on the embedded simulated broker, optionally after a
// region outage, so the page can be looked at (or screenshotted by
// `make status-screenshot`) with real content.
//
//	go run ./internal/statusdemo -addr 127.0.0.1:8080 -outage 2s
//
// It writes its base URL to -url-file once it is listening, and exits after
// -for (0: on SIGINT/SIGTERM).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/observe"
	"github.com/brokerpath/brokerpath/observe/metrics"
	"github.com/brokerpath/brokerpath/observe/status"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
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
	outage := flag.Duration("outage", 2*time.Second, "take region eu down (REST and probe) after this long; 0: never")
	lifetime := flag.Duration("for", 0, "exit after this long; 0: on SIGINT/SIGTERM")
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

	tlsCfg := &tls.Config{RootCAs: b.CertPool()}
	probe, err := rest.Probe(rest.ProbeOptions{
		Path:      "/v1/account",
		Header:    http.Header{"X-API-Key": {b.APIKey()}},
		TLSConfig: tlsCfg,
		Service:   "probe",
	})
	if err != nil {
		return err
	}
	m := metrics.New()
	cfg := pathdialer.DefaultConfig()
	for i, rg := range b.Regions() {
		cfg.Endpoints = append(cfg.Endpoints, pathdialer.Endpoint{
			Name: rg.Name(), Region: rg.Name(), Priority: 10 * i, Primary: i == 0,
			Services: map[string]string{"rest": rg.RESTURL(), "probe": rg.ProbeURL()},
		})
	}
	cfg.Probe = probe
	cfg.ProbeInterval, cfg.ProbeTimeout, cfg.ProbeJitter = 250*time.Millisecond, 200*time.Millisecond, 20*time.Millisecond
	cfg.Engine.FailureThreshold = 2
	cfg.Engine.MaxHealthAge = 2 * time.Second
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconciler = pathdialer.NoReconcile
	cfg.Logger = log
	cfg.OnEvent = observe.Tee(m.OnEvent)
	path, err := pathdialer.New(cfg)
	if err != nil {
		return err
	}
	m.Watch(path)
	if err := path.Start(ctx); err != nil {
		return err
	}
	defer path.Close()
	rt, err := rest.NewTransport(path, rest.Options{TLSConfig: tlsCfg, Logger: log})
	if err != nil {
		return err
	}
	defer rt.CloseIdleConnections()
	m.WatchREST(rt)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", status.Handler(path, status.Options{Title: "brokerpath · simulated account", Refresh: 2 * time.Second}))
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

	// Some read traffic, so the REST metrics move.
	client := &http.Client{Transport: rt, Timeout: time.Second}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var outageC <-chan time.Time
	if *outage > 0 {
		outageC = time.After(*outage)
	}
	for {
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
			for _, svc := range []simbroker.Service{simbroker.REST, simbroker.Probe} {
				if err := b.SetFault("eu", svc, simbroker.Down{}); err != nil {
					return err
				}
			}
			fmt.Println("statusdemo: region eu is down")
		case <-tick.C:
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://broker.invalid/v1/account", nil)
			req.Header.Set("X-API-Key", b.APIKey())
			if resp, err := client.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}
	}
}
