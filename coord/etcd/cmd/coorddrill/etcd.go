package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/api/v3/version"
	"go.etcd.io/etcd/server/v3/embed"
)

// runEtcd runs a single-member etcd on loopback until ctx is done, so the
// drill needs nothing but Go. It is a drill convenience, not a deployment: one
// member, no TLS, and it refuses non-loopback addresses.
func runEtcd(ctx context.Context, log *slog.Logger, o options) error {
	for _, a := range []string{o.listen, o.peer} {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return fmt.Errorf("-listen/-peer %q: %w", a, err)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("-role etcd binds loopback only (got %q); use a real cluster otherwise", a)
		}
	}
	dir := o.dataDir
	if dir == "" {
		d, err := os.MkdirTemp("", "coorddrill-etcd-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	cfg := embed.NewConfig()
	cfg.Name = "coorddrill"
	cfg.Dir = dir
	cfg.Logger = "zap"
	cfg.LogLevel = "fatal" // its shutdown logs errors; failures come back through e.Err()
	cfg.LogOutputs = []string{"stderr"}
	cu := url.URL{Scheme: "http", Host: o.listen}
	pu := url.URL{Scheme: "http", Host: o.peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.ListenMetricsUrls = nil
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer func() {
		e.Close()
		<-e.Server.StopNotify()
	}()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("embedded etcd not ready after 30s")
	case <-ctx.Done():
		return ctx.Err()
	}
	log.Info("coorddrill: embedded etcd ready", "client", o.listen, "data_dir", dir, "version", embedVersion())
	select {
	case err := <-e.Err():
		return err
	case <-ctx.Done():
		log.Info("coorddrill: embedded etcd stopping")
		return nil
	}
}

func embedVersion() string { return version.Version }
