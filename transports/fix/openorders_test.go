package fix_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
	"github.com/brokerpath/brokerpath/venue"
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

// A venue that detects a cut session by its missed heartbeats cancels its
// orders about 2.4 × HeartBtInt after the last message: every session's
// connection declares 2.5 × HeartBtInt + 500 ms (3 s at HeartBtInt 1 s), so
// after a fence the venue's open orders are read once more when that has
// passed, not only CODSettle after the fence.
func TestOpenOrdersReadAgainAfterTheSessionsHeartbeatTimeout(t *testing.T) {
	var mu sync.Mutex
	var fencedAt time.Time
	var reads []time.Time
	h := newHarness(t, harnessOpts{
		settings: func(s *quickfix.SessionSettings) { s.Set("HeartBtInt", "1") },
		cfg: func(c *pathdialer.Config) {
			c.Venue = venue.Deribit()
			c.FenceMode = pathdialer.FenceFlatten
			c.CODSettle = 200 * time.Millisecond
			c.Fencer = func(ctx context.Context, f pathdialer.Fence) error {
				mu.Lock()
				if fencedAt.IsZero() {
					fencedAt = time.Now()
				}
				mu.Unlock()
				return nil
			}
			c.OpenOrders = map[string]pathdialer.OpenOrderCheck{pathdialer.ServiceFIX: {
				Ours: func(context.Context, string) ([]pathdialer.OpenOrder, error) {
					return []pathdialer.OpenOrder{{OrderID: "a", Endpoint: "eu"}}, nil
				},
				Venue: func(context.Context, pathdialer.OpenOrderQuery) ([]pathdialer.VenueOrder, error) {
					mu.Lock()
					reads = append(reads, time.Now())
					mu.Unlock()
					return []pathdialer.VenueOrder{{OrderID: "a", State: pathdialer.VenueOpen}}, nil
				},
			}}
		},
	})
	h.down["eu"].Store(true)
	if sw := h.waitEvent(t, pathdialer.EventSwitch); sw.To != "us" {
		t.Fatalf("switched to %q", sw.To)
	}
	eventually(t, 15*time.Second, "the venue read twice", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reads) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if got := reads[1].Sub(fencedAt); got < 3*time.Second {
		t.Fatalf("second read %v after the fence (reads %v): want at least 2.5 × HeartBtInt + 500 ms = 3 s", got, reads)
	}
}
