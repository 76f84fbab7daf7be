// Package etcdtest starts a real, single-member etcd server (embed) on loopback
// for tests: a temporary data directory, OS-chosen ports, fast heartbeats so
// elections and lease expiry take about a second, and clients that can be cut
// off from it through a fault-injecting relay.
package etcdtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/brokerpath/brokerpath/internal/faultnet"
)

// Server is one embedded etcd member.
type Server struct {
	e        *embed.Etcd
	Endpoint string // host:port of the client listener
}

// IgnoredGoroutines are the goroutines of etcd's packages that goleak must
// ignore. With etcd v3.7.3, a closed embed.Etcd and closed clients leave none
// behind (checked without any ignore), so the list is empty; add a goroutine
// here by its top function name only if a future etcd version needs it.
var IgnoredGoroutines []goleak.Option

// freePort returns a loopback address whose port was free a moment ago.
func freePort(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("etcdtest: pick a port: %v", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// Start starts a member and registers its shutdown with tb.Cleanup. The
// heartbeat is 10 ms and the election timeout 100 ms, so the minimum lease TTL
// the server grants is one second.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return StartWith(tb)
}

// StartWith is Start with each of opts applied to the member's configuration
// before it starts (for example a request size limit).
func StartWith(tb testing.TB, opts ...func(*embed.Config)) *Server {
	tb.Helper()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := start(tb, opts)
		if err == nil {
			tb.Cleanup(s.Close)
			return s
		}
		lastErr = err
	}
	tb.Fatalf("etcdtest: start embedded etcd: %v", lastErr)
	return nil
}

func start(tb testing.TB, opts []func(*embed.Config)) (*Server, error) {
	cfg := embed.NewConfig()
	cfg.Name = "etcdtest"
	cfg.Dir = tb.TempDir()
	cfg.LogLevel = "error"
	cfg.Logger = "zap"
	cfg.LogOutputs = []string{"/dev/null"}
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	cfg.UnsafeNoFsync = true
	cfg.BcryptCost = 4 // bcrypt.MinCost: test passwords need no strength
	cu, _ := url.Parse("http://" + freePort(tb))
	pu, _ := url.Parse("http://" + freePort(tb))
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	for _, o := range opts {
		o(cfg)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(20 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcdtest: server not ready after 20s")
	case err := <-e.Err():
		e.Close()
		return nil, err
	}
	return &Server{e: e, Endpoint: cu.Host}, nil
}

// Close stops the member.
func (s *Server) Close() {
	s.e.Close()
	<-s.e.Server.StopNotify()
}

// Client returns a client connected to the member directly; closed at cleanup.
func (s *Server) Client(tb testing.TB) *clientv3.Client {
	tb.Helper()
	return NewClient(tb, s.Endpoint)
}

// NewClient returns a client of the given endpoint; closed at cleanup.
func NewClient(tb testing.TB, endpoint string) *clientv3.Client {
	tb.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            []string{endpoint},
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		tb.Fatalf("etcdtest: client: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Cuttable is a client whose every byte to the member goes through a relay, so
// a test can partition it from etcd (Cut) and heal it (Heal).
type Cuttable struct {
	*clientv3.Client
	relay *faultnet.Relay
}

// CuttableClient returns a client connected through a fault-injecting relay.
func (s *Server) CuttableClient(tb testing.TB) *Cuttable {
	tb.Helper()
	r, err := faultnet.New(faultnet.Config{Target: s.Endpoint, Name: "etcd"})
	if err != nil {
		tb.Fatalf("etcdtest: relay: %v", err)
	}
	tb.Cleanup(func() { _ = r.Close() })
	c := NewClient(tb, r.Addr())
	return &Cuttable{Client: c, relay: r}
}

// Cut silences the client's connection to etcd in both directions (a partition).
func (c *Cuttable) Cut(tb testing.TB) {
	tb.Helper()
	if err := c.relay.SetFault(faultnet.Blackhole()); err != nil {
		tb.Fatalf("etcdtest: cut: %v", err)
	}
}

// Heal ends the partition.
func (c *Cuttable) Heal(tb testing.TB) {
	tb.Helper()
	if err := c.relay.SetFault(faultnet.None()); err != nil {
		tb.Fatalf("etcdtest: heal: %v", err)
	}
}

// Eventually polls cond every 20 ms until it holds or d passes.
func Eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for: %s", d, what)
		}
		<-time.After(20 * time.Millisecond)
	}
}

// Ctx returns a context cancelled at cleanup.
func Ctx(tb testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	return ctx
}

// NewClientAuth returns a client of the given endpoint that authenticates as
// user; closed at cleanup.
func NewClientAuth(tb testing.TB, endpoint, user, password string) *clientv3.Client {
	tb.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            []string{endpoint},
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Username:             user,
		Password:             password,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		tb.Fatalf("etcdtest: client for %s: %v", user, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
