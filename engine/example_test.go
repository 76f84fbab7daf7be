package engine_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/engine/enginetest"
)

// newExampleManager builds a Manager over a primary in eu-west-1 and a backup in
// us-east-1, on a fake clock, with a probe whose verdicts come from the failing map.
func newExampleManager(edit func(*engine.Config)) (*engine.Manager, *enginetest.FakeClock, map[string]error) {
	clk := enginetest.NewFakeClock(time.Date(2025, 3, 3, 8, 0, 0, 0, time.UTC))
	failing := map[string]error{} // endpoint name -> what its probe returns
	cfg := engine.DefaultConfig()
	cfg.FailureThreshold = 2
	cfg.Clock = clk
	cfg.Probe = func(ctx context.Context, ep engine.Endpoint) error { return failing[ep.Name] }
	if edit != nil {
		edit(&cfg)
	}
	m, err := engine.New(cfg)
	if err != nil {
		panic(err)
	}
	for _, ep := range []engine.Endpoint{
		{Name: "eu", Address: "https://eu.broker.example", Region: "eu-west-1", Priority: 0, Primary: true},
		{Name: "us", Address: "https://us.broker.example", Region: "us-east-1", Priority: 10},
	} {
		if err := m.Register(ep); err != nil {
			panic(err)
		}
	}
	if err := m.Validate(); err != nil { // before the probe loop starts
		panic(err)
	}
	return m, clk, failing
}

// The primary goes DOWN; the engine asks for a fence first, and switches once the
// caller confirms it.
func ExampleManager_failover() {
	m, _, failing := newExampleManager(nil)
	ctx := context.Background()
	m.Probe(ctx, "eu")
	m.Probe(ctx, "us")
	d, _ := m.EvaluateFailover(false)
	fmt.Println("healthy:", d.Outcome)

	failing["eu"] = errors.New("dial tcp 192.0.2.10:443: connection refused")
	for range 2 {
		st, _ := m.Probe(ctx, "eu")
		fmt.Println("eu:", st.State, st.ConsecutiveFailures)
	}
	m.Probe(ctx, "us") // the monitor keeps probing the backup: it stays fresh

	d, _ = m.EvaluateFailover(false)
	fmt.Println(d.Outcome, d.From, "->", d.To)
	fmt.Println(" ", d.Notes[1])
	active, _ := m.Active()
	fmt.Println("active:", active.Name)

	// ... make eu unable to submit (stop its sessions, revoke its credential) ...
	d, _ = m.EvaluateFailover(true)
	fmt.Println(d.Outcome, d.From, "->", d.To, "token", d.Token)
	active, _ = m.Active()
	fmt.Println("active:", active.Name, "switches:", len(m.History()))
	// ... reconcile in-flight orders with the broker before releasing flow ...

	// Output:
	// healthy: NO_ACTION
	// eu: DEGRADED 1
	// eu: DOWN 2
	// FENCE_REQUIRED eu -> us
	//   fence "eu" before switching to "us"
	// active: eu
	// SWITCHED eu -> us token 1
	// active: us switches: 1
}

// After a failover, flow returns to the primary only once the cooldown has passed,
// the primary has answered FailbackSuccessThreshold probes in a row, and the flap
// limiter is untripped.
func ExampleManager_failback() {
	m, clk, failing := newExampleManager(func(c *engine.Config) {
		c.Cooldown = time.Minute
		c.FailbackSuccessThreshold = 3
	})
	ctx := context.Background()
	m.Probe(ctx, "us")
	failing["eu"] = errors.New("i/o timeout")
	m.Probe(ctx, "eu")
	m.Probe(ctx, "eu")
	d, _ := m.EvaluateFailover(true)
	fmt.Println("failover:", d.Outcome, d.From, "->", d.To)

	delete(failing, "eu") // the primary recovers
	m.Probe(ctx, "eu")
	d, _ = m.EvaluateFailback(true)
	fmt.Printf("%v: %s\n", d.Outcome, d.Notes[0])

	clk.Advance(time.Minute)
	m.Probe(ctx, "eu")
	d, _ = m.EvaluateFailback(true)
	fmt.Printf("%v: %s\n", d.Outcome, d.Notes[0])

	m.Probe(ctx, "eu")
	d, _ = m.EvaluateFailback(false)
	fmt.Printf("%v: %s\n", d.Outcome, d.Notes[0])
	d, _ = m.EvaluateFailback(true)
	fmt.Println("failback:", d.Outcome, d.From, "->", d.To, "token", d.Token)

	// Output:
	// failover: SWITCHED eu -> us
	// COOLDOWN_ACTIVE: cooldown: 0s of 1m0s since the last switch
	// PRIMARY_NOT_STABLE: primary "eu" not yet stable: HEALTHY and fresh, 2 of 3 consecutive successes
	// FENCE_REQUIRED: fence "us" before failing back to "eu"
	// failback: SWITCHED us -> eu token 2
}

// The active path is DOWN and no other path has answered recently: that is not "no
// action" but a halt.
func ExampleManager_halt() {
	m, clk, failing := newExampleManager(nil)
	ctx := context.Background()
	m.Probe(ctx, "us")
	clk.Advance(10 * time.Second) // us's last success is now older than MaxHealthAge (5s)
	failing["eu"] = errors.New("connection reset by peer")
	m.Probe(ctx, "eu")
	m.Probe(ctx, "eu")

	d, _ := m.EvaluateFailover(true)
	fmt.Println(d.Outcome, "halt:", d.RequiresTradingHalt)
	for _, n := range d.Notes {
		fmt.Println(" ", n)
	}
	active, _ := m.Active()
	fmt.Println("active:", active.Name)

	// Output:
	// NO_TARGET_AVAILABLE halt: true
	//   active endpoint "eu" is DOWN after 2 consecutive failures (last: connection reset by peer)
	//   "us" not eligible: HEALTHY but last success 10s ago (max 5s)
	//   excluded only by stale or inconclusive evidence (not found DOWN): [us]; probe them at once before halting
	// active: eu
}
