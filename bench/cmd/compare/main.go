// Command compare measures brokerpath against the peers a user would pick
// instead (quickfix multi-host failover, net/http, failsafe-go,
// go-retryablehttp, a seed-001 WebSocket reconnect loop) on the simulated
// broker and prints one markdown table. `make bench-compare` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/brokerpath/brokerpath/bench/compare"
)

func main() {
	compare.ChildMain()
	runs := flag.Int("runs", 5, "runs per row (median); at least 5 for the published table")
	out := flag.String("out", "", "also write the table to this file (e.g. RESULTS.md)")
	quick := flag.Bool("quick", false, "one short run per row, 30 s quickfix row skipped")
	flag.Parse()
	start := time.Now()
	rep, err := compare.Run(compare.Options{Runs: *runs, Quick: *quick, Progress: func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(f, a...))
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Print(rep.Markdown)
	if *out != "" {
		md := "# brokerpath vs the peers\n\nReproduce: `make bench-compare` (or `cd bench && go run ./cmd/compare -out RESULTS.md`).\n\n" + rep.Markdown
		if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if len(rep.Errors) > 0 {
		os.Exit(1)
	}
}
