// Command detect measures how fast brokerpath's REST transport reaches the
// backup region after the primary fails (a blackhole with and without orders
// flowing, a refused and reset connection with orders flowing), and, with
// -soak, counts spurious failovers over a run with no fault at all.
// `make bench-detect` runs it; -h lists the settings.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/brokerpath/brokerpath/bench/compare"
)

func main() {
	s := compare.DefaultSettings()
	runs := flag.Int("runs", 7, "runs per scenario")
	soak := flag.Duration("soak", 0, "instead of the fault scenarios: orders against a healthy broker for this long, counting spurious failovers")
	idle := flag.Bool("idle", false, "with -soak: no orders at all, so only the probes decide")
	h1 := flag.Bool("h1", false, "HTTP/1.1 instead of HTTP/2")
	gap := flag.Duration("order-gap", 10*time.Millisecond, "pause between one order's answer and the next")
	flag.DurationVar(&s.ProbeInterval, "probe-interval", 100*time.Millisecond, "probe each endpoint this often")
	flag.DurationVar(&s.ProbeTimeout, "probe-timeout", 80*time.Millisecond, "one probe's limit")
	flag.IntVar(&s.FailureThreshold, "failures", 2, "failures in a row that make an endpoint DOWN")
	flag.DurationVar(&s.InflightGrace, "inflight-grace", s.InflightGrace, "InflightGrace")
	flag.DurationVar(&s.OrderTimeout, "order-timeout", s.OrderTimeout, "per-order context")
	suspect := flag.Duration("suspect-after", 0, "SuspectAfter: a late probe makes the endpoint suspect (0: ProbeTimeout/2; negative, e.g. -1ms: off)")
	only := flag.String("only", "", "run only the scenarios whose name contains this (e.g. \"no orders\")")
	trace := flag.Bool("trace", false, "print each run's timeline (the Path's events and the orders, ms from the fault) to stderr")
	flag.Parse()
	o := compare.DetectOptions{Only: *only, Runs: *runs, Settings: s, OrderGap: *gap, H1: *h1, SuspectAfter: *suspect, Trace: *trace,
		Progress: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }}
	proto := "HTTP/2"
	if *h1 {
		proto = "HTTP/1.1"
	}
	sus := "suspicion off"
	switch {
	case *suspect == 0:
		sus = fmt.Sprintf("SuspectAfter %v (default: ProbeTimeout/2)", s.ProbeTimeout/2)
	case *suspect > 0:
		sus = fmt.Sprintf("SuspectAfter %v", *suspect)
	}
	settings := fmt.Sprintf("probes every %v, timeout %v, DOWN after %d failures, %s; orders %v apart; rest.Transport over %s; %s, GOMAXPROCS %d",
		s.ProbeInterval, s.ProbeTimeout, s.FailureThreshold, sus, *gap, proto, runtime.Version(), runtime.GOMAXPROCS(0))
	start := compare.LoadAvg()
	if *soak > 0 {
		o.OnDown = func(recent string) { fmt.Fprintf(os.Stderr, "DOWN:\n%s\n", recent) }
		r, err := compare.Soak(o, *soak, *idle)
		if err != nil {
			fmt.Fprintln(os.Stderr, "detect:", err)
			os.Exit(1)
		}
		what := "Soak, no fault"
		if *idle {
			what = "Soak, no fault and no orders"
		}
		fmt.Printf("%s, %v: %s\nload average at the start %s, at the end %s\n\n", what, r.Duration, settings, start, compare.LoadAvg())
		fmt.Printf("| orders | failed | failovers (spurious) | DOWN | DEGRADED | failed probes |\n| --- | --- | --- | --- | --- | --- |\n| %d | %d | %d | %d | %d | %d |\n",
			r.Orders, r.Failed, r.Switches, r.Downs, r.Degraded, r.ProbeFails)
		return
	}
	rows, err := compare.Detect(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "detect:", err)
		os.Exit(1)
	}
	fmt.Printf("%s; %d runs per row\nload average at the start %s, at the end %s\n\n%s", settings, *runs, start, compare.LoadAvg(), compare.DetectTable(rows))
}
