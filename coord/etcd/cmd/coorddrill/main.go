// Command coorddrill is a hand-run drill of brokerpath's shared decision on
// etcd: run one process per role (a region's monitor, the decider, a trader)
// against one etcd cluster and one broker, and watch them agree. See
// ../../README.md ("The drill") for the full procedure.
//
//	coorddrill -role etcd                                  # optional: a single-node etcd on loopback
//	coorddrill -role monitor -region eu -etcd $ETCD -eu URL -us URL
//	coorddrill -role decider -region eu -etcd $ETCD -eu URL -us URL
//	coorddrill -role trader  -region us -etcd $ETCD -eu URL -us URL
//
// Every process is given the same two endpoints, eu (primary) and us, as the
// base URL through which it reaches them: monitors their probe address,
// traders their trade (REST) address. -sim-admin ADDR fills -eu, -us and -ca
// from a running cmd/simbroker (go run ./cmd/simbroker in the root module),
// the stand-in broker of the drill; with a real broker pass them by hand.
//
// Probes are authenticated requests (GET -probe-path with the API key read
// from the environment variable -api-key-env) unless -probe-path is empty,
// which falls back to a bare TCP connect (the weakest probe).
//
// -partition REGION: SIGUSR1 (kill -USR1 PID) toggles a partition between
// this monitor and REGION: its probes of REGION time out as if the network
// between them were blackholed (the split case). -partition-after D
// also turns it on D after the start.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

type options struct {
	role, region, name, etcd, prefix string
	quorum                           int
	eu, us, simAdmin, ca             string
	probePath, apiKeyEnv, apiHeader  string
	partition                        string
	partitionAfter                   time.Duration
	orderEvery                       time.Duration
	ttl                              time.Duration
	// -role etcd
	listen, peer, dataDir string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("coorddrill", flag.ContinueOnError)
	fs.StringVar(&o.role, "role", "", "monitor | decider | trader | etcd")
	fs.StringVar(&o.region, "region", "", "region this process runs in (also its name unless -name)")
	fs.StringVar(&o.name, "name", "", "unique name of this process (default ROLE-REGION)")
	fs.StringVar(&o.etcd, "etcd", "127.0.0.1:2379", "comma-separated etcd client endpoints")
	fs.StringVar(&o.prefix, "prefix", "/brokerpath/drill/", "key prefix of the account")
	fs.IntVar(&o.quorum, "quorum", 2, "observers that must agree (decider)")
	fs.StringVar(&o.eu, "eu", "", "base URL (https://host:port) of endpoint eu as this process reaches it: its probe address for a monitor, its trade address for a trader")
	fs.StringVar(&o.us, "us", "", "base URL of endpoint us (see -eu)")
	fs.StringVar(&o.simAdmin, "sim-admin", "", "admin address of a running cmd/simbroker: fills -eu, -us (probe URLs for monitors, REST URLs otherwise) and -ca")
	fs.StringVar(&o.ca, "ca", "", "PEM file of the CA that signs the broker's certificates (default: system roots)")
	fs.StringVar(&o.probePath, "probe-path", "/v1/account", "authenticated GET each probe performs (empty: TCP connect only)")
	fs.StringVar(&o.apiKeyEnv, "api-key-env", "BROKER_API_KEY", "environment variable holding the broker API key")
	fs.StringVar(&o.apiHeader, "api-key-header", "X-API-Key", "header that carries the API key")
	fs.StringVar(&o.partition, "partition", "", "monitor: region that SIGUSR1 partitions this monitor from (its probes of REGION time out); SIGUSR1 again heals")
	fs.DurationVar(&o.partitionAfter, "partition-after", 0, "also apply -partition this long after the start (0: only on SIGUSR1)")
	fs.DurationVar(&o.orderEvery, "order-every", time.Second, "trader: submit one small limit order this often through the Path (0: none)")
	fs.DurationVar(&o.ttl, "ttl", 5*time.Second, "lease/session TTL of every role")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:2379", "-role etcd: client listen address (loopback only)")
	fs.StringVar(&o.peer, "peer", "127.0.0.1:2380", "-role etcd: peer listen address (loopback only)")
	fs.StringVar(&o.dataDir, "data-dir", "", "-role etcd: data directory (default: a temporary one, removed on exit)")
	sim := fs.Bool("sim", false, "removed: every process must see the same broker; use -sim-admin (see README)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *sim {
		return o, errors.New("-sim is gone: it gave every process its own simulated broker, so monitors and traders did not watch the same endpoints; start one `go run ./cmd/simbroker` and pass -sim-admin ADDR to every process")
	}
	switch o.role {
	case "etcd":
		return o, nil
	case "monitor", "decider", "trader":
	default:
		return o, fmt.Errorf("-role must be monitor, decider, trader or etcd (got %q)", o.role)
	}
	if o.region == "" {
		return o, errors.New("-region is required")
	}
	if o.name == "" {
		o.name = o.role + "-" + o.region
	}
	if o.partition != "" && o.role != "monitor" {
		return o, errors.New("-partition only applies to -role monitor")
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "coorddrill:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("proc", o.name)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.role == "etcd" {
		err = runEtcd(ctx, log, o)
	} else {
		err = run(ctx, log, o)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Error("coorddrill", "err", err)
		os.Exit(1)
	}
}

// run connects to etcd and runs this process's role (-role: monitor,
// decider or trader) until ctx ends.
func run(ctx context.Context, log *slog.Logger, o options) error {
	if o.simAdmin != "" {
		if err := fromSimbroker(ctx, &o); err != nil {
			return err
		}
	}
	if o.eu == "" || o.us == "" {
		return errors.New("-eu and -us (or -sim-admin) are required")
	}
	eps := []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{pathdialer.ServiceREST: o.eu}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{pathdialer.ServiceREST: o.us}},
	}
	tlsCfg, err := tlsConfig(o.ca)
	if err != nil {
		return err
	}
	apiKey := os.Getenv(o.apiKeyEnv)
	var probe pathdialer.ProbeFunc
	if o.probePath == "" {
		probe = pathdialer.TCPProbe(pathdialer.ServiceREST)
	} else {
		if apiKey == "" && o.role != "decider" {
			return fmt.Errorf("$%s is empty: the probe %s needs the broker API key (or pass -probe-path '' for a TCP probe)", o.apiKeyEnv, o.probePath)
		}
		probe, err = rest.Probe(rest.ProbeOptions{Path: o.probePath, Header: http.Header{o.apiHeader: {apiKey}}, TLSConfig: tlsCfg})
		if err != nil {
			return err
		}
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: strings.Split(o.etcd, ","), DialTimeout: 5 * time.Second,
		DialKeepAliveTime: time.Second, DialKeepAliveTimeout: time.Second,
		Logger: zap.NewNop(),
	})
	if err != nil {
		return err
	}
	defer cli.Close()
	log.Info("coorddrill: start", "role", o.role, "etcd", o.etcd, "prefix", o.prefix, "eu", o.eu, "us", o.us)

	switch o.role {
	case "monitor":
		return runMonitor(ctx, log, o, cli, eps, probe)
	case "decider":
		return runDecider(ctx, log, o, cli, eps)
	default: // trader
		return runTrader(ctx, log, o, cli, eps, probe, tlsCfg, apiKey)
	}
}

// runMonitor runs an observer: it probes every endpoint and writes what it
// sees to etcd (with -partition, its probes fail from -partition-after on).
func runMonitor(ctx context.Context, log *slog.Logger, o options, cli *clientv3.Client, eps []pathdialer.Endpoint, probe pathdialer.ProbeFunc) error {
	if o.partition != "" {
		probe = partitionedProbe(ctx, log, probe, o.partition, o.partitionAfter)
	} else {
		ignoreUSR1(ctx, log)
	}
	cfg := etcdcoord.DefaultObserverConfig()
	cfg.Client, cfg.Prefix, cfg.Name, cfg.Region, cfg.Endpoints, cfg.Probe, cfg.Logger = cli, o.prefix, o.name, o.region, eps, probe, log
	cfg.TTL = o.ttl
	ob, err := etcdcoord.NewObserver(cfg)
	if err != nil {
		return err
	}
	go report(ctx, log, func() any {
		out := map[string]string{}
		for _, x := range ob.Observations() {
			out[x.Endpoint] = x.State.String()
		}
		return out
	})
	return ob.Run(ctx)
}

// runDecider runs a decider: elected, it turns the observers' quorum into the
// assignment every trader follows.
func runDecider(ctx context.Context, log *slog.Logger, o options, cli *clientv3.Client, eps []pathdialer.Endpoint) error {
	cfg := etcdcoord.DefaultDeciderConfig()
	cfg.Client, cfg.Prefix, cfg.Name, cfg.Endpoints, cfg.Quorum, cfg.Logger = cli, o.prefix, o.name, eps, o.quorum, log
	cfg.TTL = o.ttl
	d, err := etcdcoord.NewDecider(cfg)
	if err != nil {
		return err
	}
	go report(ctx, log, func() any {
		out := map[string]any{"leading": d.Leading()}
		for ep, v := range d.Aggregator().Verdicts() {
			out[ep] = fmt.Sprintf("%s (down %d/healthy %d of %d live)", v.State, v.Down, v.Healthy, v.Live)
		}
		return out
	})
	return d.Run(ctx)
}

// runTrader runs a trader: a Path that takes its decisions from etcd (a
// Follower), and, with -order-every, orders through it.
func runTrader(ctx context.Context, log *slog.Logger, o options, cli *clientv3.Client, eps []pathdialer.Endpoint,
	probe pathdialer.ProbeFunc, tlsCfg *tls.Config, apiKey string) error {
	pc := pathdialer.DefaultConfig()
	pc.Endpoints, pc.Probe, pc.Logger = eps, probe, log
	pc.Fencer, pc.Reconcile = pathdialer.LocalFenceOnly, pathdialer.NoReconcile
	pc.ExternalDecisions = true
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
	fc.TTL = o.ttl
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		return err
	}
	go report(ctx, log, func() any {
		st, cause := p.GateState()
		a, gen := p.Active()
		fs := f.State()
		out := map[string]any{"gate": st.String(), "active": a.Name, "generation": gen,
			"token": fs.Revision, "phase": fs.Assignment.Phase, "session": fs.Session}
		if cause != nil {
			out["cause"] = cause.Error()
		}
		return out
	})
	if o.orderEvery > 0 {
		rt, err := rest.NewTransport(p, rest.Options{TLSConfig: tlsCfg, Logger: log})
		if err != nil {
			return err
		}
		go trade(ctx, log, &http.Client{Transport: rt, Timeout: 5 * time.Second}, o, apiKey, f)
	}
	return f.Run(ctx)
}

// fromSimbroker reads the endpoints of a running cmd/simbroker from its admin
// API: monitors probe the probe relay (which /fault?kind=partition cuts),
// everyone else uses the REST relay.
func fromSimbroker(ctx context.Context, o *options) error {
	admin := o.simAdmin
	if !strings.Contains(admin, "://") {
		admin = "http://" + admin
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(admin, "/")+"/endpoints", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("-sim-admin: %w", err)
	}
	defer resp.Body.Close()
	var body struct {
		Regions map[string]struct{ REST, Probe string } `json:"regions"`
		CAFile  string                                  `json:"ca_file"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("-sim-admin: /endpoints: %w", err)
	}
	pick := func(region string, dst *string) error {
		rg, ok := body.Regions[region]
		if !ok {
			return fmt.Errorf("-sim-admin: simbroker has no region %q", region)
		}
		if *dst != "" {
			return nil
		}
		*dst = rg.REST
		if o.role == "monitor" {
			*dst = rg.Probe
		}
		return nil
	}
	if err := pick("eu", &o.eu); err != nil {
		return err
	}
	if err := pick("us", &o.us); err != nil {
		return err
	}
	if o.ca == "" {
		o.ca = body.CAFile
	}
	return nil
}

func tlsConfig(caFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-ca %s: no PEM certificate", caFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// report prints the process's view every second.
func report(ctx context.Context, log *slog.Logger, view func() any) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b, _ := json.Marshal(view())
			log.Info("coorddrill: view", "state", string(b))
		}
	}
}
