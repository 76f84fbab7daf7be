package pathdialer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// armRecorder is a DeadMan hook that records the endpoint of every arm and
// fails those on the endpoints in refuse with err.
type armRecorder struct {
	mu     sync.Mutex
	refuse map[string]bool
	err    error
	armed  []string
}

func (r *armRecorder) arm(ctx context.Context, a pathdialer.DeadManArm) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed = append(r.armed, a.Endpoint.Name)
	if r.refuse[a.Endpoint.Name] {
		return r.err
	}
	return nil
}

func (r *armRecorder) arms() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.armed...)
}

// retargetHarness: eu, us and eu2, a dead-man timer armed through r,
// FenceAttempts 3; eu is taken DOWN once started.
func retargetHarness(t *testing.T, r *armRecorder) *harness {
	h := newHarness(t, func(c *pathdialer.Config) {
		c.Endpoints = append(c.Endpoints, epEU2)
		c.Venue = venue.KrakenSpot()
		c.DeadMan = r.arm
		c.FenceAttempts = 3
	})
	h.start()
	h.probes.set("eu", probeFail)
	reportDown(h.p, "eu", 0)
	return h
}

// A failover whose dead-man arm fails on its target is not pinned to that
// target: when the target goes DOWN and the engine names another eligible
// one, the switch moves there (the old path was not fenced yet, so nothing is
// undone), arms the timer through it, and releases flow on it. Before, the
// arm was retried on the dead target for as long as it failed (held, then
// halted) while another endpoint was healthy.
func TestDeadManArmFailingOnADeadTargetMovesToAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &armRecorder{refuse: map[string]bool{"us": true}, err: errors.New("cancel-all-after: connection refused")}
		h := retargetHarness(t, r)
		defer h.close()
		e := h.await(pathdialer.EventDeadManFailure, nil)
		if e.To != "us" {
			t.Fatalf("first arm failure %v: want the failover to us", e)
		}
		// us dies: its probes fail until it is DOWN; eu2 stays healthy.
		h.probes.set("us", probeFail)
		sw := h.await(pathdialer.EventSwitch, nil)
		if sw.To != "eu2" {
			t.Fatalf("switch %v: want to eu2, the healthy endpoint", sw)
		}
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "eu2" })
		for _, f := range h.hooks.fenceCalls() {
			if f.To != "eu2" {
				t.Fatalf("fence %+v: the old path was fenced toward %q, whose dead-man timer was never armed", f, f.To)
			}
		}
		if armed := r.arms(); len(armed) == 0 || armed[len(armed)-1] != "eu2" {
			t.Fatalf("arms %v: want the last one on eu2", armed)
		}
	})
}

// A failover whose dead-man arm is refused on its target FenceAttempts times
// in a row, the target's probe passing, passes that target over while
// another endpoint is eligible: it moves there, arms the timer through it,
// fences the old path toward it and releases flow on it. Before, the Path
// halted and retried the refused target for as long as it refused.
func TestDeadManArmRefusedOnTargetPassesItOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &armRecorder{refuse: map[string]bool{"us": true}, err: errors.New("cancel-all-after: 403 refused")}
		h := retargetHarness(t, r)
		defer h.close()
		sw := h.await(pathdialer.EventSwitch, nil)
		if sw.To != "eu2" {
			t.Fatalf("switch %v: want to eu2, us refusing every arm", sw)
		}
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "eu2" })
		fences := h.hooks.fenceCalls()
		if len(fences) == 0 {
			t.Fatal("no fence before the switch")
		}
		for _, f := range fences {
			if f.To != "eu2" {
				t.Fatalf("fence %+v: the old path was fenced toward %q, whose dead-man timer was never armed", f, f.To)
			}
		}
		armed := r.arms()
		n := 0
		for _, a := range armed {
			if a == "us" {
				n++
			}
		}
		if n != 3 || armed[len(armed)-1] != "eu2" {
			t.Fatalf("arms %v: want FenceAttempts (3) on us, then eu2", armed)
		}
	})
}
