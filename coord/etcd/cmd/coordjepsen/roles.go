package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
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

// --- observers, deciders, traders ---

// The simulated broker's REST API (cmd/simbroker): the header its token mode
// reads, and the credentials header.
const (
	tokenHeader  = "X-Fencing-Token"
	apiKeyHeader = "X-API-Key"
	// APIKeyEnv passes the simulator's API key to every process (never a flag:
	// command lines are visible to every user of the machine).
	APIKeyEnv = "COORDJEPSEN_API_KEY"
	// serviceProbe is the endpoint service that monitors probe: the broker's
	// probe relay, in front of the same REST server as trading.
	serviceProbe = "probe"
)

func endpoints(o opts) []pathdialer.Endpoint {
	return []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{pathdialer.ServiceREST: o.eu, serviceProbe: o.euProbe}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{pathdialer.ServiceREST: o.us, serviceProbe: o.usProbe}},
	}
}

// brokerTLS trusts the simulated broker's throw-away CA.
func brokerTLS(caFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-ca %s: no certificate", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

func runCoord(ctx context.Context, o opts) error {
	tlsCfg, err := brokerTLS(o.ca)
	if err != nil {
		return err
	}
	key := os.Getenv(APIKeyEnv)
	// The probe is an authenticated GET /v1/account on the probe relay: a
	// monitor-only partition (the harness blackholes the relay) fails it while
	// the region still books what reaches it.
	probe, err := rest.Probe(rest.ProbeOptions{Path: "/v1/account", Header: http.Header{apiKeyHeader: {key}},
		TLSConfig: tlsCfg, Service: serviceProbe, KeepAlive: true})
	if err != nil {
		return err
	}
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
		cfg.Client, cfg.Prefix, cfg.Name, cfg.Region, cfg.Endpoints, cfg.Probe, cfg.Logger = cli, o.prefix, o.name, o.name, eps, probe, log
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
	pc.Endpoints, pc.Probe, pc.Logger = eps, probe, log
	pc.Fencer, pc.Reconcile = pathdialer.LocalFenceOnly, pathdialer.NoReconcile
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
	// Orders go through the REST transport, which acquires the ticket, checks
	// its validity right before the request is handed to net/http, and writes
	// the ticket's token into the header the broker's token mode reads.
	tr, err := rest.NewTransport(p, rest.Options{TLSConfig: tlsCfg, TokenHeader: tokenHeader,
		OrderID: orderID, Logger: log})
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	dt := newDeadlineTarget(p)
	fc := etcdcoord.DefaultFollowerConfig()
	fc.Client, fc.Prefix, fc.Name, fc.Target, fc.Logger = cli, o.prefix, o.name, dt, log
	fc.TTL, fc.Margin = o.ttl, 400*time.Millisecond
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		trade(ctx, &http.Client{Transport: tr, Timeout: 2 * time.Second}, dt, o, key)
	}()
	err = f.Run(ctx)
	<-done
	return err
}

// deadlineTarget is the trader's Path as its follower drives it, remembering
// the latest lease deadline given to Extend (the lease's expiry as this
// process measures it, minus the margin) so every order can carry it to the
// broker's audit. It keeps the latest of the instants given, not the last:
// when the follower cannot prove its session alive it cuts the Path's
// validity at once with Extend(now), which is earlier than the lease's
// expiry, and a ticket checked just before that cut is one granted before
// the lease expired.
//
// Every instant is recorded on the clock the Path enforces validity on, the
// monotonic one (see stamp): a time.Time's wall and monotonic readings are
// two reads of two clocks, and a thread descheduled between them (a loaded
// host) gives a deadline whose wall reading is milliseconds earlier than the
// instant the Path holds it to.
type deadlineTarget struct {
	*pathdialer.Path
	base  time.Time    // the origin of stamp's clock
	until atomic.Int64 // Unix microseconds (see stamp); 0: no deadline yet
}

func newDeadlineTarget(p *pathdialer.Path) *deadlineTarget {
	return &deadlineTarget{Path: p, base: time.Now()}
}

// stamp is t in Unix microseconds as every instant in an order's ID is
// recorded: the wall reading of one instant (base) plus the monotonic time
// from it to t, so that two stamps compare as the Path compares the
// instants (an order granted before its deadline is stamped before it).
func (d *deadlineTarget) stamp(t time.Time) int64 {
	return d.base.UnixMicro() + t.Sub(d.base).Microseconds()
}

// note records until if it is later than the deadline recorded.
func (d *deadlineTarget) note(until time.Time) {
	u := d.stamp(until)
	for {
		old := d.until.Load()
		if u <= old || d.until.CompareAndSwap(old, u) {
			return
		}
	}
}

func (d *deadlineTarget) Extend(until time.Time) error {
	d.note(until)
	return d.Path.Extend(until)
}

// orderBody is a place-order body whose client order ID carries timestamps
// for the broker's audit: when the transport asked for the order's ID (right
// before it acquires the ticket), when net/http first read the body (after the
// ticket's validity was checked), and the trader's lease deadline at that
// read, which is never earlier than the deadline the ticket was granted
// under. So the audit shows whether an order's ticket was acquired after its
// lease had expired (asked after that deadline), and which writes landed late
// (written after it). With a stall it then waits before handing over the
// bytes: a slow write path, so a pause falls between the check and the write.
type orderBody struct {
	id    string
	dt    *deadlineTarget
	stall time.Duration
	asked int64 // Unix microseconds
	r     *strings.Reader
}

// orderID is the transport's OrderIDFunc: it stamps the body.
func orderID(r *http.Request) (string, error) {
	b, ok := r.Body.(*orderBody)
	if !ok {
		return "", fmt.Errorf("coordjepsen: not a trader's order")
	}
	if b.asked == 0 {
		b.asked = b.dt.stamp(time.Now())
	}
	return b.id, nil
}

func (b *orderBody) Read(p []byte) (int, error) {
	if b.r == nil {
		coid := orderCOID(b.id, b.asked, b.dt.stamp(time.Now()), b.dt.until.Load())
		b.r = strings.NewReader(`{"client_order_id":"` + coid + `","symbol":"EURUSD","side":"buy","qty":"1","type":"market"}`)
		if b.stall > 0 {
			time.Sleep(b.stall) // a pause here is one only a token-checking broker can catch
		}
	}
	return b.r.Read(p)
}

func (b *orderBody) Close() error { return nil }

// orderCOID is the client order ID of order id asked, written and under the
// deadline until (Unix microseconds; until 0: none). At most 64 characters
// (the broker's limit): the instant asked in base 36, the others as offsets
// from it in µs (deadline "n": none).
func orderCOID(id string, asked, written, until int64) string {
	dl := "n"
	if until != 0 {
		dl = strconv.FormatInt(until-asked, 10)
	}
	return fmt.Sprintf("%s.a%s.w%d.d%s", id, strconv.FormatInt(asked, 36), written-asked, dl)
}

// trade submits an order every 10 ms through the REST transport.
func trade(ctx context.Context, client *http.Client, dt *deadlineTarget, o opts, key string) {
	defer client.CloseIdleConnections()
	for n := 0; ctx.Err() == nil; n++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
		id := fmt.Sprintf("%s-%d", o.name, n) // traders are paused, never restarted
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.eu+"/v1/orders", &orderBody{id: id, dt: dt, stall: o.stall})
		if err != nil {
			return
		}
		req.Header.Set(apiKeyHeader, key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			continue // not sent, halted, or unknown: the transport settled the ticket
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}
