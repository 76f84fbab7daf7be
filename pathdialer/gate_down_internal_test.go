package pathdialer

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/brokerpath/brokerpath/engine"
)

// The promise: once a Report that takes the active endpoint DOWN has
// returned, no order is granted a ticket on that endpoint while it stays
// DOWN — also when the controller was about to release flow onto it. The
// control loop takes a reconcile's result before a pending evaluation, so a
// switch whose reconcile succeeded just as live traffic on its target failed
// releases with the target already DOWN: the release must end held, and the
// evaluation the Report asked for then halts or switches.
//
// The test drives the controller itself (as the control loop would, one
// result at a time) and lands the Reports between the reconcile's result and
// the controller taking it: the interleaving a preempted controller gives.
func TestReleaseNeverOpensOnEndpointTrafficTookDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStalledPath(t, nil)
		p := s.p
		ctx := context.Background()
		p.probeRound(ctx)
		p.setGate(GateOpen, "eu", 0, nil)
		for range p.cfg.Engine.FailureThreshold {
			p.observe("eu", errors.New("connection refused"), 0, true)
		}
		c := newTestController(p)
		c.step(ctx, false) // failover: hold, fence eu, switch to us, reconcile
		for c.recRun == nil {
			if c.phase == phaseNormal {
				t.Fatalf("premise: no switch to us (gate %v)", p.gate.Load().state)
			}
			c.onBackground(ctx, <-c.bg)
		}
		res := <-c.bg // the switch's reconcile succeeded; the controller has not taken it yet
		a := p.active.Load()
		if a.rt.ep.Name != "us" || res.kind != bgSwitch || res.err != nil {
			t.Fatalf("premise: active %q, result %v (err %v); want the reconcile on us done", a.rt.ep.Name, res.kind, res.err)
		}

		// Live traffic on us fails FailureThreshold times: DOWN on its evidence.
		for range p.cfg.Engine.FailureThreshold {
			p.Report("us", a.gen, errors.New("connection reset by peer"), 0)
		}
		if st, _ := p.eng.Status("us"); st.State != engine.Down {
			t.Fatalf("premise: us %v after %d failed orders, want DOWN", st.State, p.cfg.Engine.FailureThreshold)
		}

		c.onBackground(ctx, res) // the release
		done, cancel := context.WithCancel(ctx)
		cancel() // an open gate grants at once; a held one refuses a done context
		if tk, err := p.Acquire(done, ServiceFIX, "o-after-down"); err == nil {
			st, _ := p.GateState()
			t.Fatalf("order granted on %q (token %d) after live traffic took it DOWN (gate %v): the release opened on a DOWN endpoint", tk.Endpoint, tk.Token, st)
		}
		if st, _ := p.GateState(); st == GateOpen {
			t.Fatalf("gate OPEN on %q, DOWN", p.gate.Load().endpoint)
		}

		// The evaluation the Report asked for: eu and us are both DOWN, so it
		// halts; flow never opens on us while it stays DOWN.
		c.stepSync(ctx)
		if st, _ := p.GateState(); st != GateHalted {
			t.Fatalf("gate %v after the evaluation, want HALTED (both endpoints DOWN)", st)
		}
		_ = p.Close()
	})
}
