package pathdialer_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// orderTimeout is how long the application in these tests waits for an
// answer before it reports the order failed (its own order timeout).
const orderTimeout = 2 * time.Second

var errOrderTimeout = errors.New("order timed out: no answer within 2s")

// sendOrder sends one order on the active endpoint the way an application
// does: answered after answer (it reports the success and finishes the
// ticket), or, when answer is negative, never — it reports a failure after
// orderTimeout. It returns when the order is finished.
func sendOrder(t *testing.T, h *harness, id string, answer time.Duration) {
	tk := mustAcquire(t, h.p, id)
	if answer < 0 {
		time.Sleep(orderTimeout)
		h.p.Report(tk.Endpoint, tk.Token, errOrderTimeout, orderTimeout)
		tk.Unknown(errOrderTimeout)
		return
	}
	time.Sleep(answer)
	h.p.Report(tk.Endpoint, tk.Token, nil, answer)
	tk.Done()
}

// A probe that failed once while an order succeeded (a blip on a loaded
// host) vouches for nothing later: when the endpoint then goes dark — probes
// time out, orders hang — it is DOWN and the flow on the backup within the
// probes' budget (2 × ProbeInterval + ProbeTimeout), not when the
// application's order timeout reports the hung order failed.
func TestVouchBlipThenBlackhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &scriptedProbe{}
		h := suspicionHarness(t, sp) // returns at 150 ms; rounds every 100 ms
		defer h.close()
		t0 := time.Now() // 150 ms
		sp.mu.Lock()
		sp.refused = true // the round at 200 ms fails at once: the blip
		sp.mu.Unlock()
		for i := range 4 { // orders at 150–230 ms succeed, one after the blip
			sendOrder(t, h, "o-ok-"+string(rune('a'+i)), time.Millisecond)
			time.Sleep(19 * time.Millisecond)
		}
		time.Sleep(time.Until(t0.Add(100 * time.Millisecond)))
		// Now 250 ms: the endpoint goes dark before the next round.
		sp.mu.Lock()
		sp.refused, sp.blackhole = false, true
		sp.mu.Unlock()
		fault := time.Now()
		hung := make(chan struct{})
		go func() {
			defer close(hung)
			sendOrder(t, h, "o-hung", -1)
		}()
		defer func() { <-hung }() // the hung order finishes (at its timeout)
		h.await(pathdialer.EventStateChange, func(e pathdialer.Event) bool {
			return e.Endpoint == "eu" && e.State == engine.Down
		})
		down := time.Since(fault)
		h.await(pathdialer.EventSwitch, nil)
		switched := time.Since(fault)
		t.Logf("eu DOWN %v, switch %v after the blackhole", down, switched)
		budget := 2*100*time.Millisecond + 80*time.Millisecond
		if down > budget || switched > budget {
			t.Fatalf("eu DOWN %v and the switch %v after the blackhole that followed a probe blip; want both ≤ %v (2 × ProbeInterval + ProbeTimeout):\n%s",
				down, switched, budget, timeline(h.rec.all()))
		}
	})
}

// brokenProbeHarness: eu's probe fails at once every round (a broken probe)
// while an order every 20 ms succeeds, for 400 ms: eu is DEGRADED with a
// broken probe and keeps the flow.
func brokenProbeHarness(t *testing.T) (*harness, int) {
	sp := &scriptedProbe{}
	h := suspicionHarness(t, sp)
	from := len(h.rec.all())
	sp.mu.Lock()
	sp.refused = true
	sp.mu.Unlock()
	for i := range 20 {
		sendOrder(t, h, "o-ok-"+string(rune('a'+i)), time.Millisecond)
		time.Sleep(19 * time.Millisecond)
	}
	if eu := snapshotOf(h.p, "eu"); !eu.BrokenProbe {
		t.Fatalf("eu not a broken probe while orders succeed: %+v\n%s", eu, timeline(h.rec.all()))
	}
	return h, from
}

// With a broken probe, one slow order — late, and answered before a probe
// started for it could time out — vouches again when answered: no failover,
// though it was the only order in flight.
func TestVouchSlowOrderNoFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, from := brokenProbeHarness(t)
		defer h.close()
		sendOrder(t, h, "o-slow", 90*time.Millisecond) // found late 20–40 ms after it was sent; hung only 80 ms after that
		for i := range 25 {
			sendOrder(t, h, "o-after-"+string(rune('a'+i)), time.Millisecond)
			time.Sleep(19 * time.Millisecond)
		}
		evs := h.rec.all()[from:]
		if n := countKind(evs, pathdialer.EventSwitch); n != 0 {
			t.Fatalf("%d switches on one slow order with a broken probe:\n%s", n, timeline(evs))
		}
		if eu := snapshotOf(h.p, "eu"); !eu.BrokenProbe || eu.State != engine.Degraded {
			t.Fatalf("eu after the slow order was answered: %+v", eu)
		}
	})
}

// With a broken probe, one order stuck while the others keep succeeding is
// that order's trouble, not the endpoint's: they vouch, nothing switches
// until the application reports the stuck order failed.
func TestVouchStuckOrderAmongAnsweredNoFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, from := brokenProbeHarness(t)
		defer h.close()
		stuck := make(chan struct{})
		go func() {
			defer close(stuck)
			sendOrder(t, h, "o-stuck", -1)
		}()
		for i := range 50 { // 1 s of orders answered beside it
			sendOrder(t, h, "o-beside-"+string(rune('a'+i)), time.Millisecond)
			time.Sleep(19 * time.Millisecond)
		}
		evs := h.rec.all()[from:]
		if n := countKind(evs, pathdialer.EventSwitch); n != 0 {
			t.Fatalf("%d switches on one stuck order among answered ones, broken probe:\n%s", n, timeline(evs))
		}
		<-stuck // its timeout: a failed order, which ends the vouching
		h.await(pathdialer.EventSwitch, nil)
	})
}
