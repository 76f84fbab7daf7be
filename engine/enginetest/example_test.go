package enginetest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/engine/enginetest"
)

// The backup's health is fresh, then stale once the fake clock has moved past
// MaxHealthAge: the engine will not fail over to it on old evidence. No test
// sleeps for it.
func Example() {
	clk := enginetest.NewFakeClock(time.Date(2025, 3, 3, 8, 0, 0, 0, time.UTC))
	cfg := engine.DefaultConfig()
	cfg.Clock = clk
	cfg.FailureThreshold = 1
	failing := map[string]error{}
	cfg.Probe = func(ctx context.Context, ep engine.Endpoint) error { return failing[ep.Name] }
	m, err := engine.New(cfg)
	if err != nil {
		panic(err)
	}
	for _, ep := range []engine.Endpoint{
		{Name: "eu", Address: "https://eu.broker.example", Region: "eu-west-1", Priority: 0, Primary: true},
		{Name: "us", Address: "https://us.broker.example", Region: "us-east-1", Priority: 1},
	} {
		if err := m.Register(ep); err != nil {
			panic(err)
		}
	}
	if err := m.Validate(); err != nil {
		panic(err)
	}
	ctx := context.Background()
	m.Probe(ctx, "eu")
	m.Probe(ctx, "us")

	clk.Advance(cfg.MaxHealthAge + time.Second)
	failing["eu"] = errors.New("connection refused")
	st, _ := m.Probe(ctx, "eu")
	fmt.Println("eu:", st.State)
	d, _ := m.EvaluateFailover(false)
	fmt.Println(d.Outcome, "stale:", d.Stale)

	m.Probe(ctx, "us") // fresh evidence again
	d, _ = m.EvaluateFailover(false)
	fmt.Println(d.Outcome, d.From, "->", d.To)
	// Output:
	// eu: DOWN
	// NO_TARGET_AVAILABLE stale: [us]
	// FENCE_REQUIRED eu -> us
}
