package pathdialer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// Close fails a waiting Acquire with ErrClosed, closes every tracked connection,
// stops every goroutine (the bubble would not end otherwise; goleak checks the
// package), is idempotent, and refuses everything afterwards.
func TestCloseStopsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.net.close()
		h.hooks.setFenceFails(-1) // hold for ever
		h.start()
		ctx := context.Background()
		onEU, err := h.p.Dial(ctx, pathdialer.ServiceFIX)
		if err != nil {
			t.Fatal(err)
		}
		onUS, err := h.p.DialEndpoint(ctx, "us", "tcp", "fix-us.broker.example:9878")
		if err != nil {
			t.Fatal(err)
		}
		h.probes.set("eu", probeFail)
		h.await(pathdialer.EventHold, nil)
		waiting := acquireAsync(ctx, h.p, pathdialer.ServiceREST, "o-held")
		synctest.Wait()

		if err := h.p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if r := <-waiting; !errors.Is(r.err, pathdialer.ErrClosed) {
			t.Errorf("waiting Acquire after Close: %v, want ErrClosed", r.err)
		}
		for name, c := range map[string]*pathdialer.Conn{"eu": onEU, "us": onUS} {
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Errorf("tracked connection to %s open after Close", name)
			}
		}
		if err := h.p.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if err := h.p.Start(ctx); !errors.Is(err, pathdialer.ErrClosed) {
			t.Errorf("Start after Close: %v, want ErrClosed", err)
		}
		if _, err := h.p.Acquire(ctx, pathdialer.ServiceREST, "o-after"); !errors.Is(err, pathdialer.ErrClosed) {
			t.Errorf("Acquire after Close: %v", err)
		}
		if _, err := h.p.Dial(ctx, pathdialer.ServiceREST); !errors.Is(err, pathdialer.ErrClosed) {
			t.Errorf("Dial after Close: %v", err)
		}
		if st := gateState(h.p); st != pathdialer.GateClosed {
			t.Errorf("gate after Close = %v", st)
		}
		h.p.Report("us", 0, errReset, 0) // ignored, no panic
		n := len(h.rec.all())
		<-time.After(time.Minute)
		if m := len(h.rec.all()); m != n {
			t.Errorf("%d events after Close returned", m-n)
		}
	})
}

// Close waits for a probe that ignores its context, and returns once it does.
func TestCloseWaitsForHungProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.start()
		h.probes.set("eu", probeHang)
		<-time.After(1200 * time.Millisecond) // the round at 1 s is stuck in the probe
		closed := make(chan struct{})
		go func() { _ = h.p.Close(); close(closed) }()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while a probe goroutine still ran")
		default:
		}
		close(h.probes.release)
		<-closed
	})
}

func TestBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-1"); !errors.Is(err, pathdialer.ErrNotStarted) {
			t.Errorf("Acquire before Start: %v", err)
		}
		if st := gateState(h.p); st != pathdialer.GateNotStarted {
			t.Errorf("gate before Start = %v", st)
		}
		if err := h.p.Close(); err != nil {
			t.Fatal(err)
		}
		if err := h.p.Start(context.Background()); !errors.Is(err, pathdialer.ErrClosed) {
			t.Errorf("Start after Close: %v", err)
		}
	})
}

func TestStartTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		if err := h.p.Start(context.Background()); err == nil {
			t.Error("second Start succeeded")
		}
	})
}

// Start and Close called at the same time, in every order the scheduler picks:
// whatever happens, Close leaves no goroutine behind (the bubble checks it).
func TestCloseRacesStart(t *testing.T) {
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, nil)
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				if err := h.p.Start(context.Background()); err != nil && !errors.Is(err, pathdialer.ErrClosed) {
					t.Errorf("Start: %v", err)
				}
			}()
			go func() { defer wg.Done(); _ = h.p.Close() }()
			wg.Wait()
			if st := gateState(h.p); st != pathdialer.GateClosed {
				t.Errorf("gate = %v after Close", st)
			}
		})
	}
}

// Close while the controller is in the middle of a switch (a reconcile that
// honours its context and never finishes).
func TestCloseDuringReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			c.ReconcileTimeout = time.Hour
		})
		h.start()
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventReconcileStart, nil)
		waiting := acquireAsync(context.Background(), h.p, pathdialer.ServiceREST, "o-1")
		if err := h.p.Close(); err != nil {
			t.Fatal(err)
		}
		if r := <-waiting; !errors.Is(r.err, pathdialer.ErrClosed) {
			t.Errorf("Acquire: %v", r.err)
		}
		for _, e := range h.rec.all() {
			if e.Kind == pathdialer.EventReconcileFailure || e.Kind == pathdialer.EventHalt || e.Kind == pathdialer.EventRelease {
				t.Errorf("event after Close cancelled the reconcile: %v", e)
			}
		}
	})
}
