//go:build dstyield

package dst

import (
	"math/rand/v2"
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
		requeue()
	}
}

// requeue puts the calling goroutine at the tail of its processor's local
// run queue, behind every goroutine runnable now, and switches to the next.
// It does the work of runtime.Gosched, which the simulation cannot use:
// Gosched puts the goroutine on the global run queue, which the scheduler
// also takes from on every 61st scheduling round of the processor, and that
// count goes on from everything the process ran before (earlier seeds,
// earlier runs of this one), so where a yielded goroutine ran again depended
// on the process's history, not on the seed.
//
// Only the local queue is used: a goroutine made ready (or started) goes to
// the processor's "run next" slot, and the one there before goes to the tail
// of the queue. The caller starts a helper and blocks; the helper (run next)
// makes the caller ready (run next), then starts an empty goroutine, which
// takes that slot and sends the caller to the tail; it runs and ends, and the
// queue's head runs.
func requeue() {
	woken := make(chan struct{})
	go func() {
		close(woken)
		go func() {}()
	}()
	<-woken
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
