package dst

import (
	"flag"
	"os"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

var flagProcs = flag.Int("sim.procs", 1, "GOMAXPROCS of the simulation's test process (see the package documentation: with more than one, goroutines runnable at one virtual instant run in parallel and a seed's trace can vary)")

// TestMain runs the package on one P (-sim.procs): goroutines runnable at
// one virtual instant then run one after another, in the run queue's order,
// not in parallel, which is what makes a seed's trace the same in every run.
// Throughput comes from running several test processes (make sim shards the
// seeds, -sim.shard=i/n).
func TestMain(m *testing.M) {
	flag.Parse()
	if *flagProcs < 1 {
		os.Stderr.WriteString("dst: -sim.procs must be at least 1\n")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*flagProcs)
	goleak.VerifyTestMain(m)
}
