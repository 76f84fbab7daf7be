package compare

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

const childEnv = "BROKERPATH_COMPARE_CHILD"

// ChildMain runs the simulated broker for the throughput runs when the
// process was started as the comparison's child, and then exits; otherwise it
// returns at once. Call it first in main (and in TestMain).
func ChildMain() {
	if os.Getenv(childEnv) != "broker" {
		return
	}
	b, err := startBroker(func(c *simbroker.Config) { c.TickInterval = 0 })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(addrsOf(b)); err != nil {
		os.Exit(1)
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // the parent closes stdin to stop us
	_ = b.Close()
	os.Exit(0)
}

// childBroker starts a simulated broker in a child process (this executable).
func childBroker() (brokerAddrs, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return brokerAddrs{}, nil, err
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=broker")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return brokerAddrs{}, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return brokerAddrs{}, nil, err
	}
	if err := cmd.Start(); err != nil {
		return brokerAddrs{}, nil, err
	}
	stop := func() { _ = stdin.Close(); _ = cmd.Wait() }
	var a brokerAddrs
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &a)
	}
	if err != nil || len(a.Regions) < 2 {
		stop()
		return brokerAddrs{}, nil, errors.Join(errors.New("child broker did not start"), err)
	}
	return a, stop, nil
}

// throughput places orders with Workers goroutines for d and returns
// orders/s, this process's CPU time per order (getrusage: the broker runs in
// another process), heap allocations per order (brokerpath's include its probe
// monitor) and the orders that failed (a peer's attempt timeout under load).
func throughput(c *restClient, prefix string, workers int, d time.Duration) (rps, cpuPerOrder, allocs float64, failed int, err error) {
	// warm up: connections, TLS, h2 settings
	for i := range workers {
		if _, err := c.order(context.Background(), fmt.Sprintf("%s-w%d", prefix, i)); err != nil {
			return 0, 0, 0, 0, fmt.Errorf("warm-up: %w", err)
		}
	}
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	var (
		n, bad atomic.Uint64
		wg     sync.WaitGroup
	)
	cpu0 := cpuTime()
	start := time.Now()
	end := start.Add(d)
	for w := range workers {
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				if _, err := c.order(context.Background(), fmt.Sprintf("%s-%d-%d", prefix, w, i)); err != nil {
					bad.Add(1)
					continue
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	cnt := float64(n.Load())
	if cnt == 0 {
		return 0, 0, 0, int(bad.Load()), errors.New("no order succeeded")
	}
	return cnt / el.Seconds(), float64(cpu.Microseconds()) / cnt, float64(ms1.Mallocs-ms0.Mallocs) / cnt, int(bad.Load()), nil
}

// cpuTime is this process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
