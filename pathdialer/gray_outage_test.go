package pathdialer_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// A region outage the orders notice before the probe does: the primary's
// orders fail in a burst between two probe rounds, and its probe fails too
// from then on. That is an ordinary outage, not a gray failure: once the
// region heals, the primary's probe successes make it a failover target
// again. When the backup dies 30 s after the heal (before the failback
// cooldown has run out), flow goes back to the healed primary within the
// backup's detection — FailureThreshold probe rounds, plus a ProbeTimeout and
// one round of slack — not after the gray failure's wait.
func TestOutageOrdersNoticeFirstHealsIntoAFailoverTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		cfg := baseConfig()
		h.start()
		<-time.After(3*cfg.ProbeInterval + cfg.ProbeInterval/2) // probes pass, between two rounds
		fault := time.Now()
		h.probes.set("eu", probeFail) // the region dies: probes fail from now on
		for range cfg.Engine.FailureThreshold {
			h.p.Report("eu", 0, errors.New("HTTP 503 on order"), time.Millisecond)
		}
		if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
			t.Fatalf("switch %v", sw)
		}
		<-time.After(10 * time.Second) // the outage lasts
		h.probes.set("eu", probeOK)    // the region heals
		<-time.After(30 * time.Second)
		synctest.Wait()
		eu := snapshotOf(h.p, "eu")
		if eu.GrayFailure || eu.State != engine.Healthy || !eu.Eligible {
			t.Errorf("eu 30 s after its region healed: want HEALTHY and eligible, not gray: %+v", eu)
		}
		if a, _ := h.p.Active(); a.Name != "us" {
			t.Fatalf("active %q, want us (the failback cooldown %v has not run out)", a.Name, cfg.Engine.Cooldown)
		}
		died := time.Now()
		h.probes.set("us", probeFail) // the backup dies
		bound := time.Duration(cfg.Engine.FailureThreshold+1)*cfg.ProbeInterval + cfg.ProbeTimeout
		sw := h.await(pathdialer.EventSwitch, nil)
		if sw.To != "eu" {
			t.Fatalf("switch %v, want to eu", sw)
		}
		took := sw.Time.Sub(died)
		t.Logf("flow back on eu %v after the backup died, %v after the fault (bound %v)", took, sw.Time.Sub(fault), bound)
		if took > bound {
			t.Fatalf("flow back on the healed primary %v after the backup died (%v after the fault), want within %v", took, sw.Time.Sub(fault), bound)
		}
		for _, e := range h.rec.all() {
			if e.Kind == pathdialer.EventHalt && !e.Time.Before(died) {
				t.Fatalf("halted after the backup died while the healed primary was usable: %v", e)
			}
		}
	})
}
