// Command coordjepsen is the process-level test of brokerpath's shared decision
// on etcd: three etcd members, a broker that audits every order (and, in one
// of the two modes, rejects an order whose fencing token is lower than the
// highest it has seen), three observers, two deciders and two traders, each a
// separate process. A seeded schedule pauses traders (SIGSTOP) across their
// lease's expiry during switches, kills the etcd leader and the leading
// decider (SIGKILL, then restarts them), and takes etcd's quorum away and back;
// every iteration also fails the active region's health checks (it still
// books what reaches it, as in a gray failure or an observer partition), so
// each fault falls during a switch, and an iteration has recovered when both
// traders book through the new region.
// The verdict comes from the broker's audit, and a table is printed:
//
//	coordjepsen -iterations 20 -seed 1
//
// Checked, per token mode:
//
//   - tokens checked: no order booked through a region after an order under a
//     newer token was booked (the broker refuses the stale writer; refusals are
//     counted);
//   - tokens off: no booked order whose ticket was granted after its
//     decision's deadline (Ticket.ValidUntil, the lease minus the margin), and
//     every booked order from a writer whose token was already superseded is
//     reported (a write that left before the deadline and landed after it: only
//     a broker that checks tokens can refuse it).
//
// trader-2 writes each order 50 ms after its ticket's validity check (a slow
// write path), so a pause usually falls between the check and the write: the
// one case only a broker that checks tokens can refuse. With tokens checked it
// shows as refused, with tokens off as a stale booking, reported.
//
// Every process is this same binary in another -role; run only -role run by
// hand.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() { os.Exit(Main(os.Args[1:])) }

// Main runs one role and returns the exit code.
func Main(args []string) int {
	fs := flag.NewFlagSet("coordjepsen", flag.ContinueOnError)
	var o opts
	fs.StringVar(&o.role, "role", "run", "run | etcd | broker | observer | decider | trader")
	fs.StringVar(&o.name, "name", "", "process name")
	fs.StringVar(&o.etcd, "etcd", "", "comma-separated etcd client addresses")
	fs.StringVar(&o.cluster, "cluster", "", "etcd: initial cluster (name=http://host:port,...)")
	fs.StringVar(&o.client, "client", "", "etcd: client listen host:port")
	fs.StringVar(&o.peer, "peer", "", "etcd: peer listen host:port")
	fs.StringVar(&o.dir, "dir", "", "etcd: data directory")
	fs.StringVar(&o.eu, "eu", "", "broker: eu listen address; others: eu base URL")
	fs.StringVar(&o.us, "us", "", "broker: us listen address; others: us base URL")
	fs.StringVar(&o.admin, "admin", "", "broker: admin listen address")
	fs.BoolVar(&o.tokens, "tokens", false, "broker: reject orders under a token lower than the highest seen")
	fs.DurationVar(&o.stall, "stall", 0, "trader: wait this long between the ticket's validity check and the write (a slow write path, so a pause can fall in between)")
	fs.StringVar(&o.prefix, "prefix", "/brokerpath/jepsen/", "etcd key prefix")
	fs.DurationVar(&o.ttl, "ttl", 2*time.Second, "lease TTL of every role (whole seconds)")
	fs.IntVar(&o.iterations, "iterations", 20, "run: fault iterations per token mode")
	fs.Int64Var(&o.seed, "seed", 1, "run: seed of the fault schedule")
	fs.StringVar(&o.modes, "modes", "checked,off", "run: token modes to run (checked, off)")
	fs.StringVar(&o.workDir, "work", "", "run: directory for data and logs (default: a temporary one)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch o.role {
	case "run":
		var ok bool
		ok, err = run(ctx, o, os.Stdout)
		if err == nil && !ok {
			return 1
		}
	case "etcd":
		err = runEtcd(ctx, o)
	case "broker":
		err = runBroker(ctx, o)
	case "observer", "decider", "trader":
		err = runCoord(ctx, o)
	default:
		err = fmt.Errorf("unknown -role %q", o.role)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "coordjepsen %s %s: %v\n", o.role, o.name, err)
		return 1
	}
	return 0
}

type opts struct {
	role, name, etcd, cluster, client, peer, dir string
	eu, us, admin                                string
	tokens                                       bool
	stall                                        time.Duration
	prefix                                       string
	ttl                                          time.Duration
	iterations                                   int
	seed                                         int64
	modes, workDir                               string
}
