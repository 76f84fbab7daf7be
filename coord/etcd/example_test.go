package etcdcoord_test

import (
	"context"
	"errors"
	"log"
	"os"
	"os/signal"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// The account's endpoints: the same list in every process.
var accountEndpoints = []pathdialer.Endpoint{
	{Name: "eu", Region: "eu-west", Priority: 0, Primary: true, Services: map[string]string{"rest": "https://eu.broker.example"}},
	{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"rest": "https://us.broker.example"}},
}

// A trading process: its Path takes every switch from the account's
// Assignment in etcd, and trades only while it can prove its lease alive.
// Monitors run Observers and one or more processes run Deciders (see the
// other Examples).
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{"https://etcd-1.internal:2379"},
		Username:  "trader-us", Password: os.Getenv("ETCD_PASSWORD"), // only its own keys
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()

	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = accountEndpoints
	cfg.Probe = probeOrders
	cfg.Fencer, cfg.Reconcile = pathdialer.LocalFenceOnly, reconcileOrders
	cfg.ExternalDecisions = true // the elected Decider makes the switches
	path, err := pathdialer.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer path.Close()
	if err := path.Start(ctx); err != nil {
		log.Fatal(err)
	}

	fc := etcdcoord.DefaultFollowerConfig()
	fc.Client, fc.Prefix, fc.Name, fc.Target = cli, "/brokerpath/acct-1/", "trader-us", path
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		log.Fatal(err)
	}
	// Hand path to the transports (transports/rest, ws, fix); Run blocks
	// until ctx ends.
	if err := f.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

// A monitor in one region: it probes every endpoint and publishes what it
// sees under its own lease.
func ExampleNewObserver() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://etcd-1.internal:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	cfg := etcdcoord.DefaultObserverConfig()
	cfg.Client, cfg.Prefix, cfg.Name, cfg.Region = cli, "/brokerpath/acct-1/", "mon-eu", "eu-west"
	cfg.Endpoints, cfg.Probe = accountEndpoints, probeOrders
	o, err := etcdcoord.NewObserver(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := o.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

// A decider candidate: one is elected; it aggregates the observers by
// quorum and writes the account's Assignment.
func ExampleNewDecider() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://etcd-1.internal:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	cfg := etcdcoord.DefaultDeciderConfig()
	cfg.Client, cfg.Prefix, cfg.Name = cli, "/brokerpath/acct-1/", "decider-eu"
	cfg.Endpoints, cfg.Quorum = accountEndpoints, 2 // a majority of three observers
	d, err := etcdcoord.NewDecider(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := d.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

// probeOrders asks each endpoint's order service (rest.Probe, fix.Probe).
func probeOrders(ctx context.Context, ep pathdialer.Endpoint) error {
	return errors.New("use rest.Probe or fix.Probe")
}

// reconcileOrders settles orders of unknown fate from the broker's book
// (rest.NewReconciler, fix.NewReconciler).
func reconcileOrders(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	return nil, errors.New("use rest.NewReconciler or fix.NewReconciler")
}
