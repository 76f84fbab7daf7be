//go:build dstyield

package dst

import (
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// YieldPoints is true in builds with the dstyield tag: the Path's yield
// points (pathdialer's lock and atomic boundaries of the gate, the
// controller and the monitor) then yield the processor as the seed decides.
const YieldPoints = true

// yielder decides, from the seed alone, whether a goroutine at a yield point
// yields (runtime.Gosched: every other goroutine runnable at this virtual
// instant runs first, as if this one had been preempted there). A seed draws
// how often its points yield: one in two, four or eight hits, or at every
// hit. On one P the points are reached in the same order in every run, so
// the draws, and the trace, replay.
type yielder struct {
	mu    sync.Mutex
	r     *rand.Rand
	every uint64
	n     int
}

func newYielder(seed uint64) *yielder {
	r := rand.New(rand.NewPCG(seed, 0x91e1d))
	return &yielder{r: r, every: []uint64{1, 2, 4, 8}[r.IntN(4)]}
}

func (y *yielder) at(string) {
	y.mu.Lock()
	yield := y.r.Uint64N(y.every) == 0
	if yield {
		y.n++
	}
	y.mu.Unlock()
	if yield {
		runtime.Gosched()
	}
}

// installYield puts the seed's yielder on the Path, before it starts.
func (w *world) installYield() {
	w.yield = newYielder(w.s.Seed)
	pathdialer.SetYieldHook(w.path, w.yield.at)
}

// removeYield takes it off, once the Path is closed.
func (w *world) removeYield() {
	if w.path != nil {
		pathdialer.SetYieldHook(w.path, nil)
	}
}

// yields counts the yields taken.
func (w *world) yields() int {
	if w.yield == nil {
		return 0
	}
	w.yield.mu.Lock()
	defer w.yield.mu.Unlock()
	return w.yield.n
}
