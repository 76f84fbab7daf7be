//go:build dstyield

package dst

import (
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// descheduleController stops the Path's controller for d at the next
// controller loop's yield point it reaches (virtual time passes meanwhile:
// every other goroutine runs), and makes it yield once at the one after (as
// a preempted goroutine resumes behind those made ready meanwhile); then the
// seed's yield points are back. asleep is closed as it stops; cancel puts
// the seed's yield points back if it has not stopped yet.
func (w *world) descheduleController(d time.Duration) (asleep <-chan struct{}, cancel func()) {
	ch := make(chan struct{})
	var mu sync.Mutex
	state := 0 // 0 armed, 1 slept (the next loop yields), 2 done
	restore := func() { pathdialer.SetYieldHook(w.path, w.yield.at) }
	pathdialer.SetYieldHook(w.path, func(site string) {
		if site != "controller: loop" {
			w.yield.at(site)
			return
		}
		mu.Lock()
		st := state
		if st < 2 {
			state++
		}
		mu.Unlock()
		switch st {
		case 0:
			close(ch)
			time.Sleep(d)
		case 1:
			restore()
			requeue()
		default:
			w.yield.at(site)
		}
	})
	return ch, func() {
		mu.Lock()
		defer mu.Unlock()
		if state == 0 {
			state = 2
			restore()
		}
	}
}
