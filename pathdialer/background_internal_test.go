package pathdialer

import (
	"context"

	"github.com/brokerpath/brokerpath/engine"
)

// newTestController is a controller for tests that drive it step by step on
// their own goroutine, without the control loop.
func newTestController(p *Path) *controller {
	return &controller{p: p, lastFbOut: engine.NoAction, results: make(chan svcResult), bg: make(chan bgResult)}
}

// stepSync is one step of the controller and then, as the control loop would,
// the results of the background reconciles it started, until none is running.
func (c *controller) stepSync(ctx context.Context) {
	c.step(ctx, false)
	for c.recRun != nil || c.fenceRun != nil || c.drainRun != nil || c.settleRun != nil || len(c.requeryRuns) > 0 {
		c.onBackground(ctx, <-c.bg)
	}
}
