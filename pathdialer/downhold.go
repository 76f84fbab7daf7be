package pathdialer

import (
	"fmt"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// The hold on DOWN. The controller decides every switch, but it must not be
// the one that stops the flow: between the Report (or probe) that takes the
// active endpoint DOWN and the controller's next step, any number of tickets
// could be granted on a dead endpoint. So the reporting goroutine itself holds the gate
// (an atomic swap of the gate's view, under the gate's lock) before Report
// returns, and kicks the controller, which then fences and switches, halts, or
// — when the evidence no longer warrants a switch — opens the gate again.
// Conversely the gate never opens on an endpoint that live traffic took DOWN
// and that has not left DOWN since: a release racing with such a Report ends
// held. On a Path with Config.ExternalDecisions the coordinator decides, and a
// Report only adds evidence.

// holdOnDown holds the gate if it grants on rt (open on it, or with services
// released on it).
func (p *Path) holdOnDown(rt *endpointRT) {
	if p.cfg.ExternalDecisions {
		return
	}
	p.gateMu.Lock()
	old := p.gate.Load()
	if old.endpoint != rt.ep.Name || !(old.state == GateOpen || old.state == GateHeld && len(old.released) > 0) {
		p.gateMu.Unlock()
		return
	}
	v := &gateView{state: GateHeld, endpoint: old.endpoint, gen: old.gen, cause: p.downCause(rt.ep.Name), since: time.Now(), changed: make(chan struct{}), downHold: true}
	p.gate.Store(v)
	close(old.changed)
	p.gateMu.Unlock()
	p.events.emit(Event{Kind: EventHold, Endpoint: rt.ep.Name, Token: old.gen, Cause: v.cause.Error()})
}

// downByTraffic: endpoint was taken DOWN by live traffic and has not left DOWN
// since (never on a coordinated Path: the coordinator decides).
func (p *Path) downByTraffic(endpoint string) bool {
	if p.cfg.ExternalDecisions {
		return false
	}
	rt, ok := p.eps[endpoint]
	return ok && rt.trafficDown.Load() && engine.HealthState(rt.state.Load()) == engine.Down
}

func (p *Path) downCause(endpoint string) error {
	return fmt.Errorf("%q is DOWN: held while the switch is decided", endpoint)
}

// reopenAfterDownHold opens the gate again when a hold on DOWN turned out not
// to warrant a switch (the endpoint answered again before the controller
// evaluated). It reports whether the gate was such a hold.
func (c *controller) reopenAfterDownHold() bool {
	p := c.p
	v := p.gate.Load()
	if !v.downHold || c.phase != phaseNormal || c.halted {
		return false
	}
	a := p.active.Load()
	nv := p.setGate(GateOpen, a.rt.ep.Name, a.gen, nil)
	if nv.state == GateOpen {
		p.events.emit(Event{Kind: EventRelease, Endpoint: a.rt.ep.Name, Token: a.gen, Duration: time.Since(v.since), Cause: "the endpoint answers again: no switch"})
	}
	return true
}
