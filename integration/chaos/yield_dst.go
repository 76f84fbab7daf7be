//go:build dstyield

package main

import (
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// yieldPoints: built with -tags dstyield (make mutants), the Path's yield
// points (pathdialer's hand-over boundaries) yield the processor half the
// time, as a thread preempted there on a loaded host would; at the hand-over
// of an unknown outcome (rare: only orders whose fate is unknown pass it) the
// thread loses up to 2 ms, a time slice on a loaded host. A window of a few
// instructions between two steps of a hand-over is then open often enough
// for a short run to meet it.
const yieldPoints = true

func installYield(p *pathdialer.Path) {
	pathdialer.SetYieldHook(p, func(site string) {
		switch {
		case site == "gate: shard -> unknown" && rand.IntN(2) == 0:
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		case rand.IntN(2) == 0:
			runtime.Gosched()
		}
	})
}

func removeYield(p *pathdialer.Path) { pathdialer.SetYieldHook(p, nil) }
