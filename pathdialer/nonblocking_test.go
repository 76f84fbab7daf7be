package pathdialer_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// The controller is never blocked by a reconcile: a settle of unknown
// outcomes or a re-query of provisional verdicts that hangs (its reads go
// through the region that is dying) runs beside the controller, so the Report
// that takes the active endpoint DOWN holds the gate at once and the switch
// begins within one evaluation; a coordinator's Halt is taken at once.

var errCut = errors.New("connection cut after the write")

// hangingReconciler returns a Config edit whose Reconcile blocks, until its
// context ends, every reconcile whose Reason is one of reasons (its reads go to
// a blackholed region), and passes the others to the harness's hooks; entered
// receives the reason of each hanging reconcile as it begins.
func hangingReconciler(h **harness, reasons ...string) (func(*pathdialer.Config), <-chan string) {
	entered := make(chan string, 8)
	fn := func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
		for _, reason := range reasons {
			if r.Reason == reason {
				select {
				case entered <- r.Reason:
				default:
				}
				<-ctx.Done()
				return nil, ctx.Err()
			}
		}
		return (*h).hooks.reconcile(ctx, r)
	}
	return func(c *pathdialer.Config) { c.Reconcile = fn }, entered
}

// reportDown reports live-traffic failures on endpoint until the engine's
// FailureThreshold (3 in baseConfig) takes it DOWN.
func reportDown(p *pathdialer.Path, endpoint string, gen uint64) {
	for range 3 {
		p.Report(endpoint, gen, errors.New("order: connection refused"), time.Millisecond)
	}
}

func TestReportDownHoldsAtOnceWhileASettleHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h *harness
		hang, entered := hangingReconciler(&h, "settle unknown outcomes")
		h = newHarness(t, func(c *pathdialer.Config) {
			c.SettleUnknown = 200 * time.Millisecond
			hang(c)
		})
		defer h.close()
		h.start()
		mustAcquire(t, h.p, "o-unknown").Unknown(errCut)
		<-entered // the settle is under way and will not return by itself
		time.Sleep(10 * time.Millisecond)

		reportDown(h.p, "eu", 0)
		// The Report's own goroutine stops the gate granting on eu at once (the
		// controller may already have switched to us: the hooks here are instant).
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if tk, err := h.p.Acquire(ctx, pathdialer.ServiceREST, "o-after-down"); err == nil && tk.Endpoint == "eu" {
			t.Fatalf("ticket granted on %q after the Report that took it DOWN:\n%s", tk.Endpoint, timeline(h.rec.all()))
		}
		// The switch begins within one evaluation, not after ReconcileTimeout.
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := len(h.hooks.fenceCalls()); n == 0 {
			t.Fatalf("no fence 1 ms after the active endpoint went DOWN while a settle hung:\n%s", timeline(h.rec.all()))
		}
		// And flow is released on the backup, with the unknown order settled
		// by the switch's reconcile.
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		if tk := mustAcquire(t, h.p, "o-on-us"); tk.Endpoint != "us" {
			t.Fatalf("ticket on %q, want us", tk.Endpoint)
		}
		var settledByswitch bool
		for _, r := range h.hooks.reconciliations() {
			if r.To == "us" && r.Reason != "settle unknown outcomes" && slicesContainsOrder(r.Tickets, "o-unknown") {
				settledByswitch = true
			}
		}
		if !settledByswitch {
			t.Fatalf("the order the hung settle held did not reach the switch's reconcile: %v", h.hooks.reconciliations())
		}
	})
}

func slicesContainsOrder(ts []pathdialer.TicketInfo, id string) bool {
	for _, t := range ts {
		if t.OrderID == id {
			return true
		}
	}
	return false
}

func TestReportDownHoldsAtOnceWhileARequeryHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h *harness
		hang, entered := hangingReconciler(&h, pathdialer.ReasonRequery)
		h = newHarness(t, func(c *pathdialer.Config) {
			c.Venue, c.MaxCopyHold = labVenue(), 2*time.Second // exact lookups, copies held at most 2 s
			c.Quarantine = 2 * time.Second
			hang(c)
		})
		defer h.close()
		h.start()
		tk := mustAcquire(t, h.p, "o-1")
		// A switch settles o-1 NOT_RECEIVED (provisional: no broker fence).
		h.probes.set("eu", probeFail)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		tk.Done()
		h.probes.set("eu", probeOK)
		<-entered // the re-query after the quarantine hangs
		time.Sleep(10 * time.Millisecond)
		_, gen := h.p.Active()
		reportDown(h.p, "us", gen)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if tk, err := h.p.Acquire(ctx, pathdialer.ServiceREST, "o-after-down"); err == nil && tk.Endpoint == "us" {
			t.Fatalf("ticket granted on us after the Report that took it DOWN:\n%s", timeline(h.rec.all()))
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		var fencedUS bool
		for _, f := range h.hooks.fenceCalls() {
			if f.Endpoint.Name == "us" {
				fencedUS = true
			}
		}
		if !fencedUS {
			t.Fatalf("no fence of us 1 ms after it went DOWN while a re-query hung:\n%s", timeline(h.rec.all()))
		}
	})
}

func TestCoordinatorHaltIsTakenAtOnceWhileASettleHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h *harness
		hang, entered := hangingReconciler(&h, "settle unknown outcomes")
		h = newHarness(t, func(c *pathdialer.Config) {
			c.ExternalDecisions = true
			c.SettleUnknown = 200 * time.Millisecond
			hang(c)
		})
		defer h.close()
		h.start()
		if err := h.p.Assign(context.Background(), "eu", 1); err != nil {
			t.Fatalf("Assign: %v", err)
		}
		mustAcquire(t, h.p, "o-unknown").Unknown(errCut)
		<-entered
		start := time.Now()
		if err := h.p.Halt(errors.New("lease lost")); err != nil {
			t.Fatalf("Halt: %v", err)
		}
		if d := time.Since(start); d > time.Millisecond {
			t.Fatalf("Halt returned after %v while a settle hung (want at once)", d)
		}
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-after-halt"); !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Fatalf("Acquire after Halt: %v, want ErrTradingHalted", err)
		}
	})
}

// A switch's own reconcile that hangs does not keep the controller either: a
// coordinator's Halt during it is taken at once.
func TestCoordinatorHaltIsTakenAtOnceWhileASwitchReconcileHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h *harness
		hang, entered := hangingReconciler(&h, "assigned")
		h = newHarness(t, func(c *pathdialer.Config) {
			c.ExternalDecisions = true
			hang(c)
		})
		defer h.close()
		h.start()
		if err := h.p.Assign(context.Background(), "eu", 1); err != nil {
			t.Fatalf("Assign: %v", err)
		}
		go h.p.Assign(context.Background(), "us", 2) //nolint:errcheck // told by the Halt
		<-entered
		start := time.Now()
		if err := h.p.Halt(errors.New("lease lost")); err != nil {
			t.Fatalf("Halt: %v", err)
		}
		if d := time.Since(start); d > time.Millisecond {
			t.Fatalf("Halt returned after %v while the switch's reconcile hung (want at once)", d)
		}
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-after-halt"); !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Fatalf("Acquire after Halt: %v, want ErrTradingHalted", err)
		}
	})
}

// A Fencer that hangs (its revocation call goes to the dying region) does not
// keep the controller either: the coordinator's Halt during it is taken at
// once, and the abandoned switch is not released.
func TestCoordinatorHaltIsTakenAtOnceWhileAFenceHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered := make(chan struct{}, 1)
		h := newHarness(t, func(c *pathdialer.Config) {
			c.ExternalDecisions = true
			c.Fencer = func(ctx context.Context, f pathdialer.Fence) error {
				select {
				case entered <- struct{}{}:
				default:
				}
				<-ctx.Done()
				return ctx.Err()
			}
		})
		defer h.close()
		h.start()
		if err := h.p.Assign(context.Background(), "eu", 1); err != nil {
			t.Fatalf("Assign: %v", err)
		}
		assigned := make(chan error, 1)
		go func() { assigned <- h.p.Assign(context.Background(), "us", 2) }()
		<-entered
		start := time.Now()
		if err := h.p.Halt(errors.New("lease lost")); err != nil {
			t.Fatalf("Halt: %v", err)
		}
		if d := time.Since(start); d > time.Millisecond {
			t.Fatalf("Halt returned after %v while the fence hung (want at once)", d)
		}
		if err := <-assigned; !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Fatalf("the Assign the Halt overtook returned %v, want ErrTradingHalted", err)
		}
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-after-halt"); !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Fatalf("Acquire after Halt: %v, want ErrTradingHalted", err)
		}
		time.Sleep(time.Minute) // whatever the abandoned fence does later
		if st := gateState(h.p); st != pathdialer.GateHalted {
			t.Fatalf("gate %v a minute after the Halt, want HALTED", st)
		}
	})
}

// The wait for orders still in flight before a switch's reconcile
// (InflightGrace) does not keep the controller either.
func TestCoordinatorHaltIsTakenAtOnceDuringTheInflightGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.ExternalDecisions = true
			c.InflightGrace = 10 * time.Second
		})
		defer h.close()
		h.start()
		if err := h.p.Assign(context.Background(), "eu", 1); err != nil {
			t.Fatalf("Assign: %v", err)
		}
		mustAcquire(t, h.p, "o-in-flight") // never finished: the switch waits for it
		assigned := make(chan error, 1)
		go func() { assigned <- h.p.Assign(context.Background(), "us", 2) }()
		h.await(pathdialer.EventSwitch, nil)
		time.Sleep(time.Millisecond)
		start := time.Now()
		if err := h.p.Halt(errors.New("lease lost")); err != nil {
			t.Fatalf("Halt: %v", err)
		}
		if d := time.Since(start); d > time.Millisecond {
			t.Fatalf("Halt returned after %v during the in-flight grace (want at once)", d)
		}
		if err := <-assigned; !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Fatalf("the Assign the Halt overtook returned %v, want ErrTradingHalted", err)
		}
		time.Sleep(time.Minute)
		if st := gateState(h.p); st != pathdialer.GateHalted {
			t.Fatalf("gate %v a minute after the Halt, want HALTED", st)
		}
	})
}

// A probe that takes the active endpoint DOWN holds the gate and starts the
// evaluation at once, without waiting for the rest of its round (here a
// backup whose probe answers slowly, still within ProbeTimeout).
func TestProbeDownActsBeforeTheRoundEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h *harness
		h = newHarness(t, func(c *pathdialer.Config) {
			c.Probe = func(ctx context.Context, ep pathdialer.Endpoint) error {
				if ep.Name == "us" {
					time.Sleep(400 * time.Millisecond) // slow, within ProbeTimeout (500 ms)
				}
				return h.probes.probe(ctx, ep)
			}
		})
		defer h.close()
		h.start()
		h.probes.set("eu", probeFail)
		down := h.await(pathdialer.EventStateChange, func(e pathdialer.Event) bool { return e.Endpoint == "eu" && e.State == engine.Down })
		hold := h.await(pathdialer.EventHold, nil)
		if d := hold.Time.Sub(down.Time); d > time.Millisecond {
			t.Fatalf("held %v after the probe took eu DOWN (the round's slow probe of us ran meanwhile), want at once", d)
		}
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
	})
}
