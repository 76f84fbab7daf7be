package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// --- etcd member ---

func runEtcd(ctx context.Context, o opts) error {
	cfg := embed.NewConfig()
	cfg.Name = o.name
	cfg.Dir = o.dir
	cfg.Logger = "zap"
	cfg.LogLevel = "fatal"
	cfg.LogOutputs = []string{"stderr"}
	cu := url.URL{Scheme: "http", Host: o.client}
	pu := url.URL{Scheme: "http", Host: o.peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.ListenMetricsUrls = nil
	cfg.InitialCluster = o.cluster
	cfg.InitialClusterToken = "coordjepsen"
	cfg.TickMs, cfg.ElectionMs = 50, 500
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer func() {
		e.Close()
		<-e.Server.StopNotify()
	}()
	select {
	case err := <-e.Err():
		return err
	case <-ctx.Done():
		return nil
	}
}

// --- broker ---

// Record is one order as the broker saw it.
type Record struct {
	Seq        int       `json:"seq"`
	Time       time.Time `json:"time"`
	Region     string    `json:"region"`
	Trader     string    `json:"trader"`
	Order      string    `json:"order"`
	Token      uint64    `json:"token"`
	Granted    time.Time `json:"granted"`
	ValidUntil time.Time `json:"valid_until"`
	Accepted   bool      `json:"accepted"`
	Reason     string    `json:"reason,omitempty"`
}

type broker struct {
	tokens bool
	mu     sync.Mutex
	down   map[string]bool
	max    uint64
	audit  []Record
}

func (b *broker) region(name string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		down := b.down[name]
		b.mu.Unlock()
		if down {
			http.Error(w, "region down", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("POST /order", func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strconv.ParseUint(r.Header.Get("X-Fencing-Token"), 10, 64)
		rec := Record{Region: name, Trader: r.Header.Get("X-Trader"), Order: r.Header.Get("X-Order-ID"), Token: tok}
		rec.Granted, _ = time.Parse(time.RFC3339Nano, r.Header.Get("X-Granted"))
		rec.ValidUntil, _ = time.Parse(time.RFC3339Nano, r.Header.Get("X-Valid-Until"))
		b.mu.Lock()
		rec.Time = time.Now()
		rec.Seq = len(b.audit) + 1
		// A region "down" fails its health checks only: it still books orders
		// that reach it (a gray failure, or observers partitioned from it),
		// the case in which a stale writer does damage.
		switch {
		case b.tokens && tok < b.max:
			rec.Reason = fmt.Sprintf("stale token %d < %d", tok, b.max)
		default:
			rec.Accepted = true
			b.max = max(b.max, tok)
		}
		b.audit = append(b.audit, rec)
		b.mu.Unlock()
		switch {
		case rec.Accepted:
			w.WriteHeader(http.StatusCreated)
		default:
			http.Error(w, rec.Reason, http.StatusConflict)
		}
	})
	return mux
}

func (b *broker) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /down", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.down[r.URL.Query().Get("region")] = r.URL.Query().Get("v") == "1"
		b.mu.Unlock()
	})
	mux.HandleFunc("GET /audit", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		defer b.mu.Unlock()
		_ = json.NewEncoder(w).Encode(b.audit)
	})
	return mux
}

func runBroker(ctx context.Context, o opts) error {
	b := &broker{tokens: o.tokens, down: map[string]bool{}}
	var srvs []*http.Server
	errc := make(chan error, 3)
	for _, s := range []struct {
		addr string
		h    http.Handler
	}{{o.eu, b.region("eu")}, {o.us, b.region("us")}, {o.admin, b.adminHandler()}} {
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 5 * time.Second}
		srvs = append(srvs, srv)
		go func() { errc <- srv.Serve(ln) }()
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	for _, s := range srvs {
		_ = s.Close()
	}
	return nil
}

// --- observers, deciders, traders ---

func endpoints(o opts) []pathdialer.Endpoint {
	return []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{pathdialer.ServiceREST: o.eu}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{pathdialer.ServiceREST: o.us}},
	}
}

func healthProbe(ctx context.Context, ep pathdialer.Endpoint) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.Services[pathdialer.ServiceREST]+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: HTTP %d", resp.StatusCode)
	}
	return nil
}

func runCoord(ctx context.Context, o opts) error {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: strings.Split(o.etcd, ","), DialTimeout: 2 * time.Second,
		DialKeepAliveTime: 500 * time.Millisecond, DialKeepAliveTimeout: 500 * time.Millisecond,
		Logger: zap.NewNop(),
	})
	if err != nil {
		return err
	}
	defer cli.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("proc", o.name)
	eps := endpoints(o)
	switch o.role {
	case "observer":
		cfg := etcdcoord.DefaultObserverConfig()
		cfg.Client, cfg.Prefix, cfg.Name, cfg.Region, cfg.Endpoints, cfg.Probe, cfg.Logger = cli, o.prefix, o.name, o.name, eps, healthProbe, log
		cfg.Interval, cfg.ProbeTimeout, cfg.TTL = 200*time.Millisecond, 150*time.Millisecond, o.ttl
		cfg.Engine.FailureThreshold, cfg.Engine.MaxHealthAge = 2, time.Second
		ob, err := etcdcoord.NewObserver(cfg)
		if err != nil {
			return err
		}
		return ob.Run(ctx)
	case "decider":
		cfg := etcdcoord.DefaultDeciderConfig()
		cfg.Client, cfg.Prefix, cfg.Name, cfg.Endpoints, cfg.Quorum, cfg.Logger = cli, o.prefix, o.name, eps, 2, log
		cfg.Interval, cfg.TTL = 200*time.Millisecond, o.ttl
		cfg.Engine.MaxHealthAge = time.Second
		d, err := etcdcoord.NewDecider(cfg)
		if err != nil {
			return err
		}
		return d.Run(ctx)
	}
	// trader
	pc := pathdialer.DefaultConfig()
	pc.Endpoints, pc.Probe, pc.Logger = eps, healthProbe, log
	pc.Fencer, pc.Reconciler = pathdialer.LocalFenceOnly, pathdialer.NoReconcile
	pc.ExternalDecisions = true
	pc.ProbeInterval, pc.ProbeTimeout, pc.ProbeJitter = 200*time.Millisecond, 150*time.Millisecond, 0
	p, err := pathdialer.New(pc)
	if err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return err
	}
	defer p.Close()
	fc := etcdcoord.DefaultFollowerConfig()
	fc.Client, fc.Prefix, fc.Name, fc.Target, fc.Logger = cli, o.prefix, o.name, p, log
	fc.TTL, fc.Margin = o.ttl, 400*time.Millisecond
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		return err
	}
	go trade(ctx, p, o)
	return f.Run(ctx)
}

// trade submits an order every 10 ms through the gate: Acquire, check the
// ticket's validity right before writing, write the token with the order.
func trade(ctx context.Context, p *pathdialer.Path, o opts) {
	clients := map[string]*http.Client{}
	for _, ep := range p.Endpoints() {
		clients[ep.Name] = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: p.EndpointDialer(ep.Name), MaxIdleConnsPerHost: 2}}
	}
	for n := 0; ctx.Err() == nil; n++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
		id := fmt.Sprintf("%s-%d-%d", o.name, os.Getpid(), n)
		actx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		tk, err := p.Acquire(actx, pathdialer.ServiceREST, id)
		cancel()
		if err != nil {
			continue
		}
		granted := time.Now()
		ep, _ := p.Endpoint(tk.Endpoint)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ep.Services[pathdialer.ServiceREST]+"/order", nil)
		req.Header.Set("X-Fencing-Token", strconv.FormatUint(tk.Generation, 10))
		req.Header.Set("X-Trader", o.name)
		req.Header.Set("X-Order-ID", id)
		req.Header.Set("X-Granted", granted.Format(time.RFC3339Nano))
		if !tk.ValidUntil.IsZero() {
			req.Header.Set("X-Valid-Until", tk.ValidUntil.Format(time.RFC3339Nano))
		}
		if tk.Valid() != nil {
			tk.Done() // not sent
			continue
		}
		if o.stall > 0 {
			time.Sleep(o.stall) // a pause here is one only a token-checking broker can catch
		}
		resp, err := clients[tk.Endpoint].Do(req)
		if err != nil {
			if errors.Is(err, pathdialer.ErrFenced) || errors.Is(err, pathdialer.ErrSwitched) {
				tk.Done()
			} else {
				tk.Unknown(err)
			}
			continue
		}
		_ = resp.Body.Close()
		tk.Done()
	}
}
