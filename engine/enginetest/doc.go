// Package enginetest holds test helpers for code built on package engine. They are
// meant for users' tests as much as for the engine's own.
//
// # Start here
//
// Give the engine a FakeClock and move time yourself: cooldowns, health
// freshness and flap windows then pass in a test without sleeping.
//
//	clk := enginetest.NewFakeClock(time.Date(2025, 3, 3, 8, 0, 0, 0, time.UTC))
//	cfg := engine.DefaultConfig()
//	cfg.Clock = clk
//	m, err := engine.New(cfg)
//	clk.Advance(cfg.MaxHealthAge + time.Second)
//	d, _ := m.EvaluateFailover(false)
//	fmt.Println(d.Outcome, "stale:", d.Stale)
//
// The Example shows a healthy backup's evidence going stale when the clock
// moves past Config.MaxHealthAge: the engine halts rather than fail over on
// old evidence, and names the endpoint to probe at once. FakeClock is safe for concurrent use; Set
// installs any reading at all, including a stepped wall clock.
package enginetest
