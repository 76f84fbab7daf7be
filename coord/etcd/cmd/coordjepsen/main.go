// Command coordjepsen is the process-level test of brokerpath's shared decision
// on etcd. Eleven processes: three etcd members, the simulated broker
// (cmd/simbroker, built from the brokerpath module, with one shared book and
// fencing tokens checked in one mode and off in the other), three observers,
// two deciders and two traders. A seeded schedule pauses traders (SIGSTOP)
// across their lease's expiry during switches, kills the etcd leader and the
// leading decider (SIGKILL, then restarts them), and takes etcd's quorum away
// and back; every iteration also partitions the monitors from the active
// region (the broker's probe relay blackholed: the region still books what
// reaches it, as in a gray failure), so each fault falls during a switch, and
// an iteration has recovered when both traders book through the new region.
// The verdict comes from the broker's audit (GET /audit on its admin API),
// and a table is printed:
//
//	coordjepsen -iterations 20 -seed 1
//
// Traders submit through transports/rest, which acquires the ticket, checks
// its validity right before the request is handed to net/http and writes the
// ticket's token in X-Fencing-Token. Each order's client order ID records when
// the transport asked for it (right before acquiring the ticket), when its
// body was first read (after the validity check), and the trader's lease
// deadline at that read (the latest given to Path.Extend: the lease's expiry
// minus the margin, never earlier than the deadline the ticket carried), so
// the broker's audit carries all three. All three are on the trader's
// monotonic clock (from one wall-clock reading), the clock its Path enforces
// the deadline on: a wall-clock reading can lag the monotonic reading taken
// with it by milliseconds on a loaded host.
// Checked, per token mode:
//
//   - tokens checked: no order booked through a region after an order under a
//     newer token was booked (the broker refuses the stale writer:
//     rejected-stale-token, counted);
//   - tokens off: no booked order whose ticket was acquired after its lease
//     deadline; every booked order written after it, and every booked order
//     from a writer whose token was already superseded, is reported (writes
//     that left before the deadline and landed late: only a broker that
//     checks tokens can refuse them).
//
// trader-2 hands over each order's bytes 50 ms after its body is first read (a
// slow write path), so a pause usually falls between the validity check and
// the write: the one case only a broker that checks tokens can refuse. With
// tokens checked it shows as refused, with tokens off as a stale booking,
// reported.
//
// Every process but the broker is this same binary in another -role; run only
// -role run by hand (-simbroker PATH to use an already built cmd/simbroker).
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
	fs.StringVar(&o.role, "role", "run", "run | etcd | observer | decider | trader")
	fs.StringVar(&o.name, "name", "", "process name")
	fs.StringVar(&o.etcd, "etcd", "", "comma-separated etcd client addresses")
	fs.StringVar(&o.cluster, "cluster", "", "etcd: initial cluster (name=http://host:port,...)")
	fs.StringVar(&o.client, "client", "", "etcd: client listen host:port")
	fs.StringVar(&o.peer, "peer", "", "etcd: peer listen host:port")
	fs.StringVar(&o.dir, "dir", "", "etcd: data directory")
	fs.StringVar(&o.eu, "eu", "", "eu REST base URL")
	fs.StringVar(&o.us, "us", "", "us REST base URL")
	fs.StringVar(&o.euProbe, "eu-probe", "", "eu probe base URL (the broker's probe relay)")
	fs.StringVar(&o.usProbe, "us-probe", "", "us probe base URL (the broker's probe relay)")
	fs.StringVar(&o.ca, "ca", "", "CA file the broker's certificate is verified against")
	fs.StringVar(&o.simbroker, "simbroker", "", "run: a built cmd/simbroker (default: go build it from the brokerpath module)")
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
	eu, us, euProbe, usProbe, ca, simbroker      string
	stall                                        time.Duration
	prefix                                       string
	ttl                                          time.Duration
	iterations                                   int
	seed                                         int64
	modes, workDir                               string
}
