package dst

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// LateRest is the late resting landing move (resting seeds in flatten
// mode, the broker not fencing, a Path deciding by itself): at At the active endpoint's region books orders Hold late (the
// broker's BookingDelay, for the bookWindow in which a limit order is placed
// through it at once: a server still booking, longer than the order's
// timeout). The order's answer never comes; the reconcile of its unknown
// outcome asks the book before the booking and settles it provisionally
// NOT_RECEIVED; the broker then books it, resting, and a re-query finds it
// (a late landing, RESTING). Lag after that late landing is reported, the
// endpoint then active loses its REST and probe addresses (refused) for
// Down, and application reads through the Path take it DOWN at once: the
// switch away fences it, closing the resting session, and the broker's
// cancel-on-disconnect cancels the late order. That cancel must be reported
// (resting-cancel-reported, judged from the broker's cancel audit), while
// the client's own record does not hold the order yet (lateLag): only the
// Path knows it then. Without a late landing RESTING by GiveUp, the outage
// is not played.
type LateRest struct {
	On        bool
	At, Hold  time.Duration
	Lag, Down time.Duration
	GiveUp    time.Duration // no late landing by then (from the start): the second outage is not played
}

func (l LateRest) String() string {
	if !l.On {
		return "off"
	}
	return fmt.Sprintf("at %v a limit order into the active region's silence (%v); %v after its late landing is reported RESTING, the active endpoint refuses orders and probes for %v", l.At, l.Hold, l.Lag, l.Down)
}

// drawLateRest gives half of the flatten-mode resting seeds whose broker
// does not fence the move, from a source of its own, so every other field of
// every seed is as it was. Not where the broker fences (its kill switch): the
// Path may then settle the order NOT_RECEIVED for good, resend it, and fail
// back, and the booking still under way lands after the region's unfence.
// Nor in coordinated seeds: a process pause delays the re-query that finds
// the landing beyond the bound late-landing-reported-in-time allows.
func drawLateRest(s *Scenario) {
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x6c61746572657374))
	if !s.Resting.On || s.Resting.Preserve || s.Fence != simbroker.FenceNone || s.Coordinated || r.IntN(2) != 0 {
		return
	}
	dur := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	l := LateRest{On: true}
	// The re-query's first early look comes MaxCopyHold (7 s) after the
	// provisional verdict; the session keeps its cancel-on-disconnect until
	// the run's end (then it logs out): the landing is to be found before.
	l.At = dur(500*time.Millisecond, max(500*time.Millisecond, s.Duration-11*time.Second)) + 37*time.Microsecond
	l.Hold = dur(max(time.Second, s.OrderTimeout+500*time.Millisecond), 4*time.Second)
	l.Lag = dur(0, 400*time.Millisecond)
	l.Down = dur(time.Second, 2*time.Second)
	l.GiveUp = max(s.Duration, l.At+l.Hold+time.Second)
	s.LateRest = l
}

// bookWindow is how long the move's region books late: the order placed at
// its start reaches the broker within it.
const bookWindow = 30 * time.Millisecond

// lateRest is a run's record of the move.
type lateRest struct {
	id     string
	landed chan struct{} // closed at the order's late landing, RESTING
	once   sync.Once
	played bool
}

// startLateRest starts the move (until it is played or given up).
func (w *world) startLateRest(wg *sync.WaitGroup) {
	if !w.s.LateRest.On {
		return
	}
	w.mu.Lock()
	w.lrest = &lateRest{id: fmt.Sprintf("lr%d", w.s.LateRest.At.Microseconds()), landed: make(chan struct{})}
	w.mu.Unlock()
	wg.Add(1)
	go func() { defer wg.Done(); w.playLateRest() }()
}

// lateRestLanded notes an EventLateLanding (onEvent, w.mu not held).
func (w *world) lateRestLanded(ev pathdialer.Event) {
	w.mu.Lock()
	lr := w.lrest
	w.mu.Unlock()
	if lr == nil || ev.OrderID != lr.id || len(ev.Settlements) == 0 || ev.Settlements[0].Fate != pathdialer.FateResting {
		return
	}
	lr.once.Do(func() { close(lr.landed) })
}

func (w *world) playLateRest() {
	m := w.s.LateRest
	lr := w.lrest
	time.Sleep(time.Until(w.start.Add(m.At)))
	a, _ := w.path.Active()
	w.tracef(time.Now(), "move late-rest: %s books orders %v late; limit order %s placed through it", a.Region, m.Hold, lr.id)
	_ = w.b.SetFault(a.Region, simbroker.REST, simbroker.BookingDelay{Delay: m.Hold})
	var placed sync.WaitGroup
	defer placed.Wait()
	placed.Add(1)
	go func() { defer placed.Done(); w.place(lr.id, true) }()
	// The order reaches the broker within a few round trips; those still
	// booking then go on.
	time.Sleep(bookWindow)
	_ = w.b.SetFault(a.Region, simbroker.REST, simbroker.BookingDelay{})
	t := time.NewTimer(time.Until(w.start.Add(m.GiveUp)))
	defer t.Stop()
	select {
	case <-lr.landed:
	case <-t.C:
		w.tracef(time.Now(), "move late-rest: %s not reported landed RESTING: the second outage is not played", lr.id)
		return
	}
	time.Sleep(m.Lag)
	b, _ := w.path.Active()
	w.tracef(time.Now(), "move late-rest: %s landed late, RESTING; %s refuses orders and probes for %v", lr.id, b.Region, m.Down)
	heal := w.silence(b.Region, faultnet.Down())
	defer heal()
	w.mu.Lock()
	lr.played = true
	w.mu.Unlock()
	// Application reads through the Path, all at once: their failures take
	// the endpoint DOWN now.
	w.failReads("lr", m.At)
	time.Sleep(m.Down)
}

// silence sets f on region's REST and probe addresses (and its HTTP/2 front
// end), recorded as a network outage, until the heal it returns.
func (w *world) silence(region string, f faultnet.Fault) (heal func()) {
	un := w.arm(region, spanNet)
	addrs := []string{addr(region, simbroker.REST), addr(region, simbroker.Probe)}
	if w.h2 != nil {
		addrs = append(addrs, h2Addr(region))
	}
	for _, a := range addrs {
		w.netFault(a, f)
	}
	return func() {
		for _, a := range addrs {
			w.netFault(a, faultnet.None())
		}
		un()
		w.tracef(time.Now(), "move late-rest: heal %s", region)
	}
}
