// Command coorddrill is a hand-run drill of brokerpath's shared decision on
// etcd: run one process per role (a region's monitor, the decider, a trader)
// against an existing etcd cluster and watch them agree. See ../../README.md.
//
//	coorddrill -role monitor -region eu -etcd 10.0.0.1:2379 -sim
//	coorddrill -role decider -region eu -etcd 10.0.0.1:2379
//	coorddrill -role trader  -region us -etcd 10.0.0.1:2379 -sim
//
// Endpoints are eu (primary) and us. With -sim each process starts an embedded
// simulated broker (internal/simbroker) and probes its regions; -partition
// REGION makes this process's monitor unable to reach that region (seed 000's
// split case) after -partition-after. Without -sim, -eu and -us give
// host:port addresses probed over TCP.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

func main() {
	role := flag.String("role", "", "monitor | decider | trader")
	region := flag.String("region", "", "region this process runs in (also its name unless -name)")
	name := flag.String("name", "", "unique name of this process (default ROLE-REGION)")
	etcdEPs := flag.String("etcd", "127.0.0.1:2379", "comma-separated etcd endpoints")
	prefix := flag.String("prefix", "/brokerpath/drill/", "key prefix of the account")
	quorum := flag.Int("quorum", 2, "observers that must agree (decider)")
	sim := flag.Bool("sim", false, "start an embedded simulated broker and probe it")
	euAddr := flag.String("eu", "", "host:port of endpoint eu (without -sim)")
	usAddr := flag.String("us", "", "host:port of endpoint us (without -sim)")
	partition := flag.String("partition", "", "with -sim: partition this monitor from REGION (probe relay blackholed)")
	partitionAfter := flag.Duration("partition-after", 10*time.Second, "when to apply -partition")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log, *role, *region, *name, *etcdEPs, *prefix, *quorum, *sim, *euAddr, *usAddr, *partition, *partitionAfter); err != nil && err != context.Canceled {
		log.Error("coorddrill", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, role, region, name, etcdEPs, prefix string, quorum int, sim bool, euAddr, usAddr, partition string, partitionAfter time.Duration) error {
	if region == "" {
		return fmt.Errorf("-region is required")
	}
	if name == "" {
		name = role + "-" + region
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(etcdEPs, ","), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()

	var eps []pathdialer.Endpoint
	probe := pathdialer.TCPProbe("rest")
	if sim {
		b, err := simbroker.Start(ctx, simbroker.DefaultConfig())
		if err != nil {
			return fmt.Errorf("simbroker: %w", err)
		}
		defer b.Close()
		for i, rn := range []string{"eu", "us"} {
			rg := b.Region(rn)
			if rg == nil {
				return fmt.Errorf("simbroker has no region %q", rn)
			}
			eps = append(eps, pathdialer.Endpoint{Name: rn, Region: rn, Priority: i, Primary: i == 0, Services: map[string]string{"rest": rg.ProbeURL()}})
		}
		if partition != "" {
			time.AfterFunc(partitionAfter, func() {
				log.Warn("coorddrill: partitioning this monitor from a region", "region", partition)
				_ = b.PartitionMonitor(partition)
			})
		}
	} else {
		if euAddr == "" || usAddr == "" {
			return fmt.Errorf("-eu and -us are required without -sim")
		}
		eps = []pathdialer.Endpoint{
			{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{"rest": euAddr}},
			{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"rest": usAddr}},
		}
	}

	switch role {
	case "monitor":
		cfg := etcdcoord.DefaultObserverConfig()
		cfg.Client, cfg.Prefix, cfg.Name, cfg.Region, cfg.Endpoints, cfg.Probe, cfg.Logger = cli, prefix, name, region, eps, probe, log
		o, err := etcdcoord.NewObserver(cfg)
		if err != nil {
			return err
		}
		go report(ctx, log, func() any { return o.Observations() })
		return o.Run(ctx)
	case "decider":
		cfg := etcdcoord.DefaultDeciderConfig()
		cfg.Client, cfg.Prefix, cfg.Name, cfg.Endpoints, cfg.Quorum, cfg.Logger = cli, prefix, name, eps, quorum, log
		d, err := etcdcoord.NewDecider(cfg)
		if err != nil {
			return err
		}
		go report(ctx, log, func() any { return map[string]any{"leading": d.Leading(), "verdicts": d.Aggregator().Verdicts()} })
		return d.Run(ctx)
	case "trader":
		pc := pathdialer.DefaultConfig()
		pc.Endpoints, pc.Probe, pc.Logger = eps, probe, log
		pc.Fencer, pc.Reconciler = pathdialer.LocalFenceOnly, pathdialer.NoReconcile
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
		fc.Client, fc.Prefix, fc.Name, fc.Target, fc.Logger = cli, prefix, name, p, log
		f, err := etcdcoord.NewFollower(fc)
		if err != nil {
			return err
		}
		go report(ctx, log, func() any {
			st, cause := p.GateState()
			a, gen := p.Active()
			c := ""
			if cause != nil {
				c = cause.Error()
			}
			return map[string]any{"gate": st, "active": a.Name, "generation": gen, "cause": c, "follower": f.State()}
		})
		return f.Run(ctx)
	default:
		return fmt.Errorf("-role must be monitor, decider or trader (got %q)", role)
	}
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
