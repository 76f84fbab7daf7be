package metrics_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/brokerpath/brokerpath/observe/metrics"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// The resting orders a switch cancelled (found by the open-order reconcile
// after it) are counted.
func TestRestingOrdersCancelledBySwitch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var euDown atomic.Bool
		m, reg := metrics.New(), prometheus.NewPedanticRegistry()
		cfg := pathdialer.DefaultConfig()
		cfg.Endpoints = []pathdialer.Endpoint{
			{Name: "eu", Region: "eu-west-1", Primary: true, Services: map[string]string{"rest": "https://api-eu.broker.example"}},
			{Name: "us", Region: "us-east-1", Priority: 10, Services: map[string]string{"rest": "https://api-us.broker.example"}},
		}
		cfg.Probe = func(ctx context.Context, ep pathdialer.Endpoint) error {
			if ep.Name == "eu" && euDown.Load() {
				return errors.New("connection refused")
			}
			return nil
		}
		cfg.ProbeInterval, cfg.ProbeTimeout, cfg.ProbeJitter = 20*time.Millisecond, 10*time.Millisecond, 0
		cfg.Engine.FailureThreshold = 2
		cfg.Engine.MaxHealthAge = time.Second
		cfg.Fencer = pathdialer.LocalFenceOnly
		cfg.Reconcile = pathdialer.NoReconcile
		cfg.FenceMode = pathdialer.FenceFlatten
		cfg.OnEvent = m.OnEvent
		cfg.OpenOrders = map[string]pathdialer.OpenOrderCheck{pathdialer.ServiceREST: {
			Ours: func(context.Context, string) ([]pathdialer.OpenOrder, error) {
				return []pathdialer.OpenOrder{{OrderID: "q-1", Endpoint: "eu"}, {OrderID: "q-2", Endpoint: "eu"}}, nil
			},
			Venue: func(context.Context, pathdialer.OpenOrderQuery) ([]pathdialer.VenueOrder, error) {
				return []pathdialer.VenueOrder{{OrderID: "q-1", State: pathdialer.VenueCancelled}, {OrderID: "q-2", State: pathdialer.VenueOpen}}, nil
			},
		}}
		p, err := pathdialer.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		m.Watch(p)
		reg.MustRegister(m)
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		const name = "brokerpath_resting_orders_cancelled_by_switch_total"
		if got, ok := sample(t, reg, name, nil); !ok || got != 0 {
			t.Fatalf("%s before a switch = %v (present %v), want 0", name, got, ok)
		}
		euDown.Store(true)
		for start := time.Now(); p.Snapshot().RestingCancelled == 0 && time.Since(start) < time.Minute; {
			time.Sleep(10 * time.Millisecond) // fake time
		}
		synctest.Wait()
		if got, _ := sample(t, reg, name, nil); got != 1 {
			t.Fatalf("%s = %v after a switch cancelled one order, want 1", name, got)
		}
	})
}
