package fix_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// The venue's orders listed over FIX (OrderMassStatusRequest), as an
// open-order reconcile reads them: a resting order is open, a filled one
// filled; a session not logged on at the endpoint lists nothing and says so.
func TestOpenOrdersOverFIX(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, o := range []struct{ id, sym string }{{"rest-1", "REST"}, {"fill-1", "FILL"}} {
		if err := h.in.SendOrder(ctx, order(o.id, o.sym), h.sid); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 5*time.Second, "both answered", func() bool { return h.in.Stats().Answered.Load() == 2 })
	eu, _ := h.path.Endpoint("eu")
	got, err := h.in.OpenOrders(ctx, pathdialer.OpenOrderQuery{Service: pathdialer.ServiceFIX, Endpoint: eu})
	if err != nil {
		t.Fatalf("OpenOrders on eu: %v", err)
	}
	want := []pathdialer.VenueOrder{
		{OrderID: "fill-1", Symbol: "X", State: pathdialer.VenueFilled},
		{OrderID: "rest-1", Symbol: "X", State: pathdialer.VenueOpen},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("OpenOrders = %+v, want %+v", got, want)
	}
	us, _ := h.path.Endpoint("us")
	if _, err := h.in.OpenOrders(ctx, pathdialer.OpenOrderQuery{Service: pathdialer.ServiceFIX, Endpoint: us}); !errors.Is(err, fix.ErrNoOpenOrderList) {
		t.Fatalf("OpenOrders on us, where no session is logged on: %v, want ErrNoOpenOrderList", err)
	}
}
