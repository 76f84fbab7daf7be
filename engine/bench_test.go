package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// benchManager: the system clock (time.Now, as in production), a no-op probe, both
// endpoints probed healthy, and a MaxHealthAge long enough that nothing goes stale
// while the benchmark runs.
func benchManager(b *testing.B, edit func(*engine.Config)) *engine.Manager {
	b.Helper()
	cfg := engine.DefaultConfig()
	cfg.MaxHealthAge = time.Hour
	cfg.Probe = func(context.Context, engine.Endpoint) error { return nil }
	if edit != nil {
		edit(&cfg)
	}
	m, err := engine.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, ep := range []engine.Endpoint{epEU, epUS, epAP} {
		if err := m.Register(ep); err != nil {
			b.Fatal(err)
		}
		if _, err := m.Probe(context.Background(), ep.Name); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

// The monitor's steady state: evaluated every tick, nothing to do. Target: well
// under 1 µs and no allocation.
func BenchmarkEvaluateFailover_SteadyHealthy(b *testing.B) {
	m := benchManager(b, nil)
	b.ReportAllocs()
	for b.Loop() {
		d, err := m.EvaluateFailover(false)
		if err != nil || d.Outcome != engine.NoAction || d.Notes != nil {
			b.Fatalf("%+v, %v", d, err)
		}
	}
}

// The engine's share of a probe: locking, the clock, panic recovery, bookkeeping.
func BenchmarkProbe_Bookkeeping(b *testing.B) {
	m := benchManager(b, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Probe(ctx, "us"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkObserve(b *testing.B) {
	m := benchManager(b, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Observe("us", nil, time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvaluateFailback_PrimaryActive(b *testing.B) {
	m := benchManager(b, nil)
	b.ReportAllocs()
	for b.Loop() {
		d, err := m.EvaluateFailback(false)
		if err != nil || d.Outcome != engine.NoAction {
			b.Fatalf("%+v, %v", d, err)
		}
	}
}

// A monitor probing and observing from many goroutines while others evaluate.
func BenchmarkParallel_ProbeObserveEvaluate(b *testing.B) {
	m := benchManager(b, nil)
	names := [...]string{"eu", "us", "ap"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := 0
		for pb.Next() {
			var err error
			switch i % 4 {
			case 0:
				_, err = m.Probe(ctx, names[i%3])
			case 1:
				_, err = m.Observe(names[i%3], nil, time.Millisecond)
			case 2:
				_, err = m.EvaluateFailover(false)
			default:
				_, err = m.EvaluateFailback(false)
			}
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// A live-traffic report (what every order's outcome costs the engine when the
// runtime does not coalesce it). Target: no allocation.
func BenchmarkObserveTraffic(b *testing.B) {
	m := benchManager(b, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.ObserveTraffic("us", nil, time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
}
