package pathdialer_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// These tests compose the evidence mechanisms — gray failures, trade-path
// checks, broken probes, on-demand probes, identity re-checks — through the
// exported API only.

// grayFailover takes eu out on failed orders while its probe passes, and
// waits for the switch to us and the gray-failure event.
func grayFailover(t *testing.T, h *harness) {
	t.Helper()
	for range 3 {
		h.p.Report("eu", 0, errors.New("HTTP 503 on order"), time.Millisecond)
	}
	if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
		t.Fatalf("switch %v", sw)
	}
	if g := h.await(pathdialer.EventGray, nil); g.Endpoint != "eu" {
		t.Fatalf("gray event %v", g)
	}
}

func failbacksTo(h *harness, name string) int {
	n := 0
	for _, e := range h.rec.all() {
		if e.Kind == pathdialer.EventSwitch && e.To == name {
			n++
		}
	}
	return n
}

// A probe blip (4 failed rounds, then the probe passes again) during a gray
// failure whose trade path still fails neither ends the gray failure nor lets
// flow fail back into the broken region.
func TestGrayFailureSurvivesProbeBlipExported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := &tradePath{err: errors.New("order status query: HTTP 503")}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.TradePathCheck = tp.check
			c.Engine.Cooldown = 5 * time.Second
		})
		defer h.close()
		h.start()
		grayFailover(t, h)
		<-time.After(10 * time.Second)
		h.probes.set("eu", probeFail)
		<-time.After(4 * time.Second) // 4 rounds
		h.probes.set("eu", probeOK)
		<-time.After(60 * time.Second)
		synctest.Wait()
		if a, _ := h.p.Active(); a.Name != "us" || failbacksTo(h, "eu") != 0 {
			t.Fatalf("failed back into %q while its trade path fails (active %q)", "eu", a.Name)
		}
		eu := snapshotOf(h.p, "eu")
		if !eu.GrayFailure || eu.State != engine.Down {
			t.Fatalf("a probe blip ended the gray failure: %+v", eu)
		}
		for _, e := range h.rec.all() {
			if e.Kind == pathdialer.EventGray && strings.Contains(e.Cause, "is back from") {
				t.Fatalf("gray failure announced over: %v", e)
			}
		}
	})
}

// The trade-path check keeps running on an endpoint that was gray while it is
// considered for failback: one trade-path success ends the gray failure, but
// the check fails again in the next round, and flow does not fail back.
func TestTradePathCheckedUntilFailback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := &tradePath{err: errors.New("order status query: HTTP 503")}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.TradePathCheck = tp.check
			c.Engine.Cooldown = 5 * time.Second
		})
		defer h.close()
		h.start()
		grayFailover(t, h)
		<-time.After(10 * time.Second)
		// One trade-path check passes, the next ones fail again.
		tp.set(nil)
		<-time.After(time.Second)
		tp.set(errors.New("order status query: HTTP 503"))
		tp.mu.Lock()
		before := tp.calls
		tp.mu.Unlock()
		<-time.After(60 * time.Second)
		synctest.Wait()
		tp.mu.Lock()
		after := tp.calls
		tp.mu.Unlock()
		if after-before < 50 {
			t.Fatalf("the trade-path check ran %d times in 60 s after the gray failure ended", after-before)
		}
		if a, _ := h.p.Active(); a.Name != "us" || failbacksTo(h, "eu") != 0 {
			t.Fatalf("failed back into eu while its trade path fails (active %q)", a.Name)
		}
		if eu := snapshotOf(h.p, "eu"); eu.Eligible {
			t.Fatalf("eu eligible while its trade path fails: %+v", eu)
		}
	})
}

// delayProbes answers after a delay (virtual time) that the test sets per
// endpoint; with ignoreCtx the delay runs out whatever the context says.
type delayProbes struct {
	mu        sync.Mutex
	delay     map[string]time.Duration
	fail      map[string]error
	ignoreCtx bool
}

func (d *delayProbes) set(name string, delay time.Duration, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.delay[name], d.fail[name] = delay, err
}

func (d *delayProbes) probe(ctx context.Context, ep pathdialer.Endpoint) error {
	d.mu.Lock()
	delay, err, ignore := d.delay[ep.Name], d.fail[ep.Name], d.ignoreCtx
	d.mu.Unlock()
	if delay > 0 {
		if ignore {
			time.Sleep(delay)
		} else {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return err
}

// The on-demand probe of a DEGRADED backup finds the round's probe of it
// running; the backup answers. The wait must end only once that answer is
// recorded, so the decision sees it: a switch, never a halt. Run many times:
// the defect depends on which goroutine runs first.
func TestOnDemandWaitsForTheRecordedResult(t *testing.T) {
	const runs = 100
	halts := 0
	for range runs {
		synctest.Test(t, func(t *testing.T) {
			dp := &delayProbes{delay: map[string]time.Duration{}, fail: map[string]error{}}
			h := newHarness(t, func(c *pathdialer.Config) { c.Probe = dp.probe })
			defer h.close()
			h.start()
			dp.set("us", 0, errors.New("late answer")) // us DEGRADED after the round at 1 s
			<-time.After(1500 * time.Millisecond)
			dp.set("us", 100*time.Millisecond, nil) // answers, in 100 ms
			<-time.After(550 * time.Millisecond)    // 50 ms into the round at 2 s
			for range 3 {
				h.p.Report("eu", 0, errors.New("connection refused"), time.Millisecond)
			}
			h.await(pathdialer.EventOnDemand, nil)
			synctest.Wait()
			if countKind(h.rec.all(), pathdialer.EventHalt) > 0 {
				halts++
			}
			if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
				t.Fatalf("switch %v", sw)
			}
		})
	}
	if halts > 0 {
		t.Fatalf("%d halts in %d runs although the backup answered the probe the on-demand probe waited for", halts, runs)
	}
}

// Start's context ends while the first round probes the backup (a probe that
// takes longer than Start was given): that result is dropped. When the active
// endpoint fails right after Start, the on-demand probe must probe the backup
// afresh, not wait for the cut probe and halt on "UNKNOWN (never probed)".
func TestOnDemandProbesAfreshAfterStartCutTheRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dp := &delayProbes{delay: map[string]time.Duration{}, fail: map[string]error{}, ignoreCtx: true}
		dp.set("us", 300*time.Millisecond, nil)
		h := newHarness(t, func(c *pathdialer.Config) { c.Probe = dp.probe })
		defer h.close()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := h.p.Start(ctx); err != nil {
			t.Fatalf("Start: %v", err)
		}
		if st := snapshotOf(h.p, "us"); st.State != engine.Unknown {
			t.Fatalf("us %v after a Start that cut its probe", st.State)
		}
		<-time.After(50 * time.Millisecond)
		for range 3 {
			h.p.Report("eu", 0, errors.New("connection refused"), time.Millisecond)
		}
		od := h.await(pathdialer.EventOnDemand, nil)
		if !strings.Contains(od.Cause, `"us" HEALTHY`) {
			t.Fatalf("on-demand: %s", od.Cause)
		}
		if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
			t.Fatalf("switch %v", sw)
		}
		for _, e := range h.rec.all() {
			if e.Kind == pathdialer.EventHalt {
				t.Fatalf("halt: %s", e.Cause)
			}
		}
	})
}

// The on-demand identity re-check of the backup times out: the halt says so,
// and does not call the backup "identity verified, eligible".
func TestHaltNamesTheFailedIdentityRecheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		usChecks := 0
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = func(ctx context.Context, ep pathdialer.Endpoint) (pathdialer.Identity, error) {
				mu.Lock()
				n := 0
				if ep.Name == "us" {
					usChecks++
					n = usChecks
				}
				mu.Unlock()
				if n > 1 {
					<-ctx.Done() // the backup stops answering identity checks
					return pathdialer.Identity{}, ctx.Err()
				}
				return pathdialer.Identity{Account: "ACC-1"}, nil
			}
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = time.Hour
			c.IdentityTimeout = time.Second
			c.Engine.SwitchVerificationAge = 5 * time.Second
		})
		defer h.close()
		h.start()
		<-time.After(10 * time.Second)
		for range 3 {
			h.p.Report("eu", 0, errors.New("connection refused"), time.Millisecond)
		}
		halt := h.await(pathdialer.EventHalt, nil)
		t.Logf("halt: %s", halt.Cause)
		if strings.Contains(halt.Cause, "identity verified, eligible") {
			t.Fatalf("the halt calls the backup verified and eligible after its re-check failed: %s", halt.Cause)
		}
		for _, want := range []string{`"us"`, "identity re-check", "could not be made"} {
			if !strings.Contains(halt.Cause, want) {
				t.Errorf("halt reason lacks %q: %s", want, halt.Cause)
			}
		}
	})
}

// Orders succeed, then the region dies: orders and probe both fail. The Path
// fails over, and never calls the probe the suspect.
func TestRealOutageIsNotABrokenProbeExported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		<-time.After(50 * time.Millisecond) // orders between the probe rounds
		for range 20 {
			<-time.After(100 * time.Millisecond)
			h.p.Report("eu", 0, nil, time.Millisecond)
		}
		<-time.After(20 * time.Millisecond)
		h.probes.set("eu", probeFail)
		for range 3 {
			h.p.Report("eu", 0, errors.New("connection refused"), time.Millisecond)
		}
		if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
			t.Fatalf("switch %v", sw)
		}
		<-time.After(6 * time.Second)
		synctest.Wait()
		for _, e := range h.rec.all() {
			if e.Kind == pathdialer.EventBrokenProbe {
				t.Fatalf("an outage of orders and probe reported as a broken probe: %s", e.Cause)
			}
		}
		if eu := snapshotOf(h.p, "eu"); eu.BrokenProbe {
			t.Fatalf("snapshot: %+v", eu)
		}
	})
}

// The rule for a probe that fails while orders succeed on the active endpoint:
// the probe is the suspect and flow stays; an order failure fails over at once
// (within the evaluation it triggers), and traffic that goes quiet for
// MaxHealthAge lets the probe count again.
func TestProbeFailingWhileOrdersSucceedKeepsFlow(t *testing.T) {
	run := func(t *testing.T, end func(h *harness, stop func()) time.Duration) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, nil)
			defer h.close()
			h.start()
			h.probes.set("eu", probeFail)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
						_, gen := h.p.Active()
						h.p.Report("eu", gen, nil, time.Millisecond)
					}
				}
			}()
			var once sync.Once
			stopTraffic := func() { once.Do(func() { close(stop); <-done }) }
			defer stopTraffic()
			bp := h.await(pathdialer.EventBrokenProbe, nil)
			if !strings.Contains(bp.Cause, "suspect") {
				t.Fatalf("broken probe: %v", bp)
			}
			<-time.After(20 * time.Second)
			synctest.Wait()
			evs := h.rec.all()
			if n := countKind(evs, pathdialer.EventHold) + countKind(evs, pathdialer.EventSwitch) + countKind(evs, pathdialer.EventHalt); n != 0 {
				t.Fatalf("flow moved off eu while its orders succeed and only its probe fails:\n%s", timeline(evs))
			}
			if eu := snapshotOf(h.p, "eu"); !eu.BrokenProbe || eu.State == engine.Down || eu.ProbeFailures < 20 {
				t.Fatalf("snapshot of eu: %+v", eu)
			}
			at := time.Now()
			limit := end(h, stopTraffic)
			hold := h.await(pathdialer.EventHold, nil)
			if d := hold.Time.Sub(at); d > limit {
				t.Fatalf("hold %v after the evidence changed, want <= %v", d, limit)
			}
			if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
				t.Fatalf("switch %v", sw)
			}
		})
	}
	t.Run("an order fails", func(t *testing.T) {
		run(t, func(h *harness, stop func()) time.Duration {
			stop()
			h.p.Report("eu", 0, errors.New("HTTP 503 on order"), time.Millisecond)
			return 0 // at once: the failed order is the evaluation's trigger
		})
	})
	t.Run("traffic goes quiet", func(t *testing.T) {
		run(t, func(h *harness, stop func()) time.Duration {
			stop()
			return 5*time.Second + time.Second // MaxHealthAge, then the next round
		})
	})
}
