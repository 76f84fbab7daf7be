package pathdialer_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// The primary region stops answering its probe. The Path holds orders, fences the
// primary, switches, hands the in-flight order to reconciliation and releases flow
// on the backup.
func Example() {
	var euDown atomic.Bool
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Priority: 0, Primary: true, Services: map[string]string{"rest": "https://api-eu.broker.example"}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"rest": "https://api-us.broker.example"}},
	}
	// A real probe performs an authenticated request on the trade path.
	cfg.Probe = func(ctx context.Context, ep pathdialer.Endpoint) error {
		if ep.Name == "eu" && euDown.Load() {
			return errors.New("connection reset by peer")
		}
		return nil
	}
	cfg.ProbeInterval, cfg.ProbeTimeout, cfg.ProbeJitter = 20*time.Millisecond, 10*time.Millisecond, 0
	cfg.Engine.FailureThreshold = 2
	cfg.Engine.MaxHealthAge = 200 * time.Millisecond
	cfg.InflightGrace = 50 * time.Millisecond // how long to wait for in-flight orders after the fence
	cfg.Fencer = pathdialer.LocalFenceOnly    // this process is the only one trading the account
	cfg.Reconciler = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
		for _, t := range r.Tickets {
			fmt.Printf("reconcile %s→%s: order %s was %v\n", r.From, r.To, t.OrderID, t.State)
		}
		return nil, nil
	}
	released := make(chan struct{})
	cfg.OnEvent = func(e pathdialer.Event) {
		switch e.Kind {
		case pathdialer.EventDecision:
			if e.Decision.Failback {
				return // failback verdicts (COOLDOWN_ACTIVE once on us) are not shown
			}
			fmt.Println(e.Kind, e.From, "→", e.To, e.Decision.Outcome)
		case pathdialer.EventFenceSuccess:
			fmt.Println(e.Kind, e.Endpoint)
		case pathdialer.EventSwitch:
			fmt.Println(e.Kind, e.From, "→", e.To, "generation", e.Generation)
		case pathdialer.EventRelease:
			fmt.Println("release on", e.Endpoint)
			close(released)
		}
	}
	p, err := pathdialer.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	inflight, _ := p.Acquire(ctx, "rest", "order-1") // sent, never answered
	euDown.Store(true)
	<-released
	_ = inflight
	t, err := p.Acquire(ctx, "rest", "order-2")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("order-2 goes to", t.Endpoint, "generation", t.Generation)
	t.Done()
	// Output:
	// decision eu → us FENCE_REQUIRED
	// fence-ok eu
	// decision eu → us SWITCHED
	// switch eu → us generation 1
	// reconcile eu→us: order order-1 was IN_FLIGHT
	// release on us
	// order-2 goes to us generation 1
}
