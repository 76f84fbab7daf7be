package pathdialer_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// Resting orders across a switch at Kraken spot: cancel-on-disconnect cancels
// the session's orders, and a cancel-all-after timer protects the account.
// The timer is armed on the new path before the old one is fenced, and after
// every switch the application's open orders are compared with the venue's,
// each order the switch cancelled reported with EventRestingCancelled.
func ExampleConfig_restingOrders() {
	// The application's own record of its open orders.
	myOpenOrders := func(ctx context.Context, service string) ([]pathdialer.OpenOrder, error) {
		return []pathdialer.OpenOrder{{OrderID: "bid-1", Symbol: "XBT/USD", Endpoint: "eu"}}, nil
	}
	// The venue's open orders, one GET through q.Endpoint.
	venueOpenOrders := func(ctx context.Context, q pathdialer.OpenOrderQuery) ([]pathdialer.VenueOrder, error) {
		return nil, errors.New("GET /0/private/OpenOrders through q.Endpoint here")
	}
	// The venue's dead-man call (cancelAllOrdersAfter), over the new path.
	cancelAllOrdersAfter := func(ctx context.Context, ep pathdialer.Endpoint, seconds int) error {
		return errors.New("POST /0/private/CancelAllOrdersAfter through ep here")
	}

	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Primary: true, Services: map[string]string{"rest": "https://api-eu.broker.example"}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"rest": "https://api-us.broker.example"}},
	}
	cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return errors.New("probe the order path here") }
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	cfg.Venue = venue.KrakenSpot()
	cfg.FenceMode = pathdialer.FenceFlatten // let cancel-on-disconnect fire, then confirm each cancel
	cfg.DeadMan = func(ctx context.Context, a pathdialer.DeadManArm) error {
		return cancelAllOrdersAfter(ctx, a.Endpoint, int(a.Timer.Timeout.Seconds()))
	}
	cfg.OpenOrders = map[string]pathdialer.OpenOrderCheck{
		pathdialer.ServiceREST: {Ours: myOpenOrders, Venue: venueOpenOrders},
	}
	cfg.OnEvent = func(e pathdialer.Event) {
		if e.Kind == pathdialer.EventRestingCancelled {
			fmt.Println("re-quote", e.OrderID, "if still wanted:", e.Cause)
		}
	}
	p, err := pathdialer.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	fc := p.Snapshot().Fence
	fmt.Println("fence mode:", fc.Mode, "("+fc.Chosen+"):", fc.Effect)
	// Output:
	// fence mode: flatten (configured): old path's orders cancelled
}
