// Command schedlag measures how long work waits for a CPU on this host: one
// goroutine sleeps 5 ms again and again and records how late each wake-up
// is, and another spins for a moment now and then and records what share of
// a CPU it got (the share a busy test goroutine gets). `make test` runs it to
// size the test timeouts from what it measures before the run, and beside
// the run to say, when a package times out, whether the host was too starved
// to judge it.
//
//	schedlag -for 3s              # measure, print the figures and a timeout factor
//	schedlag -out FILE            # measure until SIGTERM or SIGINT, then write the figures to FILE
//
// Printed figures: the wall time measured, the worst wake-up, the 90th
// percentile of each 100 ms window's worst wake-up, the time the sleeper lost
// waiting for a CPU, the median share of a CPU the spinning goroutine got, and
// factor=N: how many times longer than on an idle host busy work takes here
// (1/share rounded up, between 1 and 6).
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"syscall"
	"time"
)

const (
	tick   = 5 * time.Millisecond
	window = 100 * time.Millisecond
)

// figures are the measured delay.
type figures struct {
	wall, worst, p90, lost time.Duration
	shares                 []float64 // of a CPU, one per spin
}

// share is the median share of a CPU a spinning goroutine got (1 without a
// spin).
func (f figures) share() float64 {
	if len(f.shares) == 0 {
		return 1
	}
	s := slices.Clone(f.shares)
	slices.Sort(s)
	return s[len(s)/2]
}

// factor is how many times longer busy work takes than on an idle host,
// bounded to [1, 6]: a budget for an idle host times factor is one for this
// one.
func (f figures) factor() int {
	s := f.share()
	if s <= 0 {
		return 6
	}
	return int(math.Min(6, math.Max(1, math.Ceil(1/s-0.05))))
}

func (f figures) String() string {
	return fmt.Sprintf("scheduling delay over %s: worst wake-up %s late, p90 of 100 ms windows %s, %s lost by a sleeper; a busy goroutine got %.0f%% of a CPU (median of %d) factor=%d",
		f.wall.Round(100*time.Millisecond), f.worst.Round(time.Millisecond), f.p90.Round(time.Millisecond),
		f.lost.Round(100*time.Millisecond), 100*f.share(), len(f.shares), f.factor())
}

// spin keeps one OS thread busy for d of wall time and returns the share of
// a CPU it got (its thread's CPU time over d).
func spin(d time.Duration) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(rusageThread, &ru); err != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c0, w0 := cpu(), time.Now()
	x := 0
	for time.Since(w0) < d {
		for i := 0; i < 1000; i++ {
			x += i
		}
	}
	_ = x
	wall := time.Since(w0)
	return math.Min(1, (cpu()-c0).Seconds()/wall.Seconds())
}

// rusageThread is RUSAGE_THREAD (Linux): the calling thread's usage.
const rusageThread = 1

// spinner spins for spinFor every spinEvery until stop is closed, sending
// each share on out.
func spinner(spinFor, spinEvery time.Duration, stop <-chan struct{}, out chan<- float64) {
	defer close(out)
	t := time.NewTicker(spinEvery)
	defer t.Stop()
	for {
		out <- spin(spinFor)
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// measure sleeps tick after tick until stop is closed or d has passed (d >
// 0), while a spinner spins for spinFor every spinEvery.
func measure(d time.Duration, stop <-chan os.Signal, spinFor, spinEvery time.Duration) figures {
	quit, shares := make(chan struct{}), make(chan float64, 1<<16)
	go spinner(spinFor, spinEvery, quit, shares)
	f := sleeper(d, stop)
	close(quit)
	for s := range shares {
		f.shares = append(f.shares, s)
	}
	return f
}

func sleeper(d time.Duration, stop <-chan os.Signal) figures {
	began := time.Now()
	prev := began
	var f figures
	var worsts []time.Duration
	winStart, winWorst := began, time.Duration(0)
	t := time.NewTimer(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			f.wall = time.Since(began)
			return finish(f, worsts)
		case <-t.C:
		}
		now := time.Now()
		late := max(now.Sub(prev)-tick, 0)
		f.lost += late
		f.worst = max(f.worst, late)
		winWorst = max(winWorst, late)
		if now.Sub(winStart) >= window {
			worsts = append(worsts, winWorst)
			winStart, winWorst = now, 0
		}
		prev = now
		if d > 0 && now.Sub(began) >= d {
			f.wall = now.Sub(began)
			return finish(f, worsts)
		}
		t.Reset(tick)
	}
}

func finish(f figures, worsts []time.Duration) figures {
	if len(worsts) > 0 {
		slices.Sort(worsts)
		f.p90 = worsts[int(0.9*float64(len(worsts)-1))]
	}
	return f
}

func main() {
	dur := flag.Duration("for", 0, "measure this long, then print the figures")
	out := flag.String("out", "", "measure until SIGTERM or SIGINT, then write the figures to this file")
	flag.Parse()
	switch {
	case *dur > 0 && *out == "":
		fmt.Println(measure(*dur, nil, 100*time.Millisecond, 200*time.Millisecond))
	case *dur == 0 && *out != "":
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		f := measure(0, stop, 50*time.Millisecond, 2*time.Second)
		if err := os.WriteFile(*out, []byte(f.String()+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "schedlag:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "schedlag: give exactly one of -for DURATION and -out FILE")
		os.Exit(2)
	}
}
