package pathdialer_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// deadMan is a DeadMan hook that records each arm and fails while fail is
// set; hang makes it block until its context ends.
type deadMan struct {
	mu    sync.Mutex
	arms  []pathdialer.DeadManArm
	fail  bool
	hang  bool
	fence func() int // fence calls so far, when the arm was asked
	seen  []int
}

var errArm = errors.New("cancelAllOrdersAfter: 503 service unavailable")

func (d *deadMan) arm(ctx context.Context, a pathdialer.DeadManArm) error {
	d.mu.Lock()
	d.arms = append(d.arms, a)
	if d.fence != nil {
		d.seen = append(d.seen, d.fence())
	}
	fail, hang := d.fail, d.hang
	d.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if fail {
		return errArm
	}
	return nil
}

func (d *deadMan) set(fail, hang bool) {
	d.mu.Lock()
	d.fail, d.hang = fail, hang
	d.mu.Unlock()
}

func (d *deadMan) calls() []pathdialer.DeadManArm {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]pathdialer.DeadManArm(nil), d.arms...)
}

// The dead-man timer moves first: it is armed on the endpoint the switch goes
// to before the old path is fenced, and the fence waits for it.
func TestDeadManArmedBeforeTheFence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dm := &deadMan{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue = venue.KrakenSpot()
			c.DeadMan = dm.arm
		})
		defer h.close()
		dm.fence = func() int { return len(h.hooks.fenceCalls()) }
		h.start()
		reportDown(h.p, "eu", 0)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		arms := dm.calls()
		if len(arms) != 1 || arms[0].Endpoint.Name != "us" || arms[0].From != "eu" || !arms[0].TimerKnown || arms[0].Timer.API == "" {
			t.Fatalf("arms = %+v, want one on us from eu with Kraken's timer", arms)
		}
		if dm.seen[0] != 0 {
			t.Fatalf("the arm was asked after %d fence call(s), want before the first", dm.seen[0])
		}
		ks := kindsSince(h.rec.all(), 0)
		ia, iff := indexKind(ks, pathdialer.EventDeadManArmed), indexKind(ks, pathdialer.EventFenceStart)
		if ia < 0 || iff < 0 || ia > iff {
			t.Fatalf("dead-man-armed at %d, fence-start at %d: want armed first; events %v", ia, iff, ks)
		}
		if s := h.p.Snapshot().DeadMan; s == nil || !s.Armed || s.Endpoint != "us" {
			t.Fatalf("Snapshot().DeadMan = %+v, want armed on us", s)
		}
	})
}

func indexKind(ks []pathdialer.EventKind, k pathdialer.EventKind) int {
	for i, x := range ks {
		if x == k {
			return i
		}
	}
	return -1
}

// A failed arm is a loud hold, not a silent gap: the old path is not fenced,
// the gate's cause and Snapshot name it, and after FenceAttempts failures in
// a row the Path halts; once the arm succeeds, the switch goes on.
func TestDeadManFailureIsALoudHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dm := &deadMan{fail: true}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue = venue.KrakenSpot()
			c.DeadMan = dm.arm
			c.FenceAttempts = 3
		})
		defer h.close()
		h.start()
		reportDown(h.p, "eu", 0)
		e := h.await(pathdialer.EventDeadManFailure, nil)
		if !errors.Is(e.Err, pathdialer.ErrDeadManNotArmed) || !errors.Is(e.Err, errArm) || e.To != "us" {
			t.Fatalf("failure event %v: want ErrDeadManNotArmed wrapping the hook's error, to us", e)
		}
		synctest.Wait()
		st, cause := h.p.GateState()
		if st != pathdialer.GateHeld || cause == nil || !strings.Contains(cause.Error(), "dead-man timer not armed") {
			t.Fatalf("gate %v (%v), want held naming the dead-man timer", st, cause)
		}
		if s := h.p.Snapshot().DeadMan; s == nil || s.Armed || !strings.Contains(s.Error, "503") {
			t.Fatalf("Snapshot().DeadMan = %+v, want not armed with the hook's error", s)
		}
		h.await(pathdialer.EventHalt, func(e pathdialer.Event) bool { return strings.Contains(e.Cause, "dead-man") })
		if n := len(h.hooks.fenceCalls()); n != 0 {
			t.Fatalf("%d fence call(s) while no dead-man timer was armed on the new path", n)
		}
		if tk, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-1"); !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Fatalf("Acquire during the halt = %v, %v; want ErrTradingHalted", tk, err)
		}
		dm.set(false, false)
		h.await(pathdialer.EventDeadManArmed, nil)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		if n := len(h.hooks.fenceCalls()); n == 0 {
			t.Fatal("no fence after the arm succeeded")
		}
	})
}

// An arm that does not return is bounded by DeadManTimeout; a switch
// abandoned while an arm runs reports it superseded.
func TestDeadManTimeoutAndSuperseded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dm := &deadMan{hang: true}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue = venue.KrakenSpot()
			c.DeadMan = dm.arm
			c.DeadManTimeout = 2 * time.Second
		})
		defer h.close()
		h.start()
		t0 := time.Now()
		reportDown(h.p, "eu", 0)
		e := h.await(pathdialer.EventDeadManFailure, nil)
		if !errors.Is(e.Err, context.DeadlineExceeded) || time.Since(t0) < 2*time.Second || time.Since(t0) > 3*time.Second {
			t.Fatalf("failure %v after %v: want a deadline after DeadManTimeout (2 s)", e, time.Since(t0))
		}
		// The old endpoint answers again while the next arm hangs: the switch
		// is abandoned, and the arm in progress is reported superseded.
		h.await(pathdialer.EventHold, func(e pathdialer.Event) bool { return strings.Contains(e.Cause, "dead-man") })
		for len(dm.calls()) < 2 {
			time.Sleep(10 * time.Millisecond)
		}
		h.p.Report("eu", 0, nil, time.Millisecond)
		h.probes.set("eu", probeOK)
		e = h.await(pathdialer.EventDeadManFailure, func(e pathdialer.Event) bool { return strings.Contains(e.Error, "superseded") })
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "eu" })
		if n := len(h.hooks.fenceCalls()); n != 0 {
			t.Fatalf("%d fence call(s): no arm ever succeeded", n)
		}
	})
}
