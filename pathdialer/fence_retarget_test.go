package pathdialer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// A failover whose fence fails while its target dies is not pinned to that
// target: a Fencer that acts through the endpoint the switch goes to (a
// broker's fence call, sent over the new path) cannot succeed through a dead
// one. When the target goes DOWN and the engine names another eligible
// endpoint, the switch moves there, fences the old path again toward it
// (confirmed before anything switches) and releases flow on it. Before, the
// fence was retried toward the dead target (held, then halted) for as long
// as it was dead, while another endpoint was healthy.
func TestFenceFailingThroughADeadTargetMovesToAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var fences []pathdialer.Fence
		fencer := func(ctx context.Context, f pathdialer.Fence) error {
			mu.Lock()
			defer mu.Unlock()
			fences = append(fences, f)
			if f.To == "us" {
				return errors.New("fence call through us: connection refused")
			}
			return nil
		}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Endpoints = append(c.Endpoints, epEU2)
			c.Fencer = fencer
			c.FenceAttempts = 3
		})
		defer h.close()
		h.start()
		h.probes.set("eu", probeFail)
		reportDown(h.p, "eu", 0)
		e := h.await(pathdialer.EventFenceFailure, nil)
		if e.Endpoint != "eu" || e.To != "us" {
			t.Fatalf("first fence failure %v: want eu fenced toward us", e)
		}
		// us dies: its probes fail until it is DOWN; eu2 stays healthy.
		h.probes.set("us", probeFail)
		sw := h.await(pathdialer.EventSwitch, nil)
		if sw.From != "eu" || sw.To != "eu2" {
			t.Fatalf("switch %v: want eu to eu2, the healthy endpoint", sw)
		}
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "eu2" })
		mu.Lock()
		defer mu.Unlock()
		last := fences[len(fences)-1]
		if last.Endpoint.Name != "eu" || last.To != "eu2" {
			t.Fatalf("fences %+v: want the last one of eu toward eu2, confirmed before the switch", fences)
		}
		for _, f := range fences {
			if f.Endpoint.Name != "eu" {
				t.Fatalf("fence %+v: only eu, the endpoint left, is fenced", f)
			}
		}
	})
}

// A fence that fails for the endpoint being left (whatever the target) is
// not a dead target: with the target healthy the switch stays on it and
// never switches before a confirmed fence.
func TestFenceFailingForTheEndpointLeftKeepsTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Endpoints = append(c.Endpoints, epEU2)
			c.FenceAttempts = 3
		})
		defer h.close()
		h.hooks.setFenceFails(5)
		h.start()
		h.probes.set("eu", probeFail)
		reportDown(h.p, "eu", 0)
		sw := h.await(pathdialer.EventSwitch, nil)
		if sw.From != "eu" || sw.To != "us" {
			t.Fatalf("switch %v: want eu to us, the target all along", sw)
		}
		fences := h.hooks.fenceCalls()
		if len(fences) != 6 {
			t.Fatalf("fences %+v: want 5 failed then 1 confirmed before the switch", fences)
		}
		for _, f := range fences {
			if f.Endpoint.Name != "eu" || f.To != "us" {
				t.Fatalf("fence %+v: want eu fenced toward us", f)
			}
		}
	})
}
