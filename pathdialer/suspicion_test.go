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

// scriptedProbe answers "us" at once and "eu" as the test scripts it: the
// delays of eu's next probes (in order; once used up, eu answers at once, or
// never when blackhole is set). A probe that outlives its context returns the
// context's error.
type scriptedProbe struct {
	mu        sync.Mutex
	delays    []time.Duration
	blackhole bool
	refused   bool // eu's probe fails at once (the listener is gone)
	calls     int
}

// count returns how many times eu was probed.
func (s *scriptedProbe) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

var errRefused = errors.New("dial tcp 127.0.0.1:443: connect: connection refused")

func (s *scriptedProbe) probe(ctx context.Context, ep pathdialer.Endpoint) error {
	if ep.Name != "eu" {
		return nil
	}
	s.mu.Lock()
	s.calls++
	var d time.Duration
	switch {
	case len(s.delays) > 0:
		d, s.delays = s.delays[0], s.delays[1:]
	case s.blackhole:
		d = time.Hour
	}
	refused := s.refused
	s.mu.Unlock()
	if refused {
		return errRefused
	}
	if d == 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *scriptedProbe) set(blackhole bool, delays ...time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blackhole, s.delays = blackhole, delays
}

// suspicionHarness: probes every 100 ms with an 80 ms timeout, DOWN after 2
// failures, eu active. It returns after the round at 100 ms, 50 ms before the
// next one (every probe answers at once until the test scripts otherwise).
func suspicionHarness(t *testing.T, sp *scriptedProbe) *harness {
	h := newHarness(t, func(c *pathdialer.Config) {
		c.ProbeInterval = 100 * time.Millisecond
		c.ProbeTimeout = 80 * time.Millisecond
		c.Engine.FailureThreshold = 2
		c.Engine.MaxHealthAge = time.Second
		c.InflightGrace = 0
		c.Probe = sp.probe
	})
	h.start()
	time.Sleep(150 * time.Millisecond)
	synctest.Wait()
	return h
}

// A blackholed active endpoint is DOWN, and the flow on the backup, within two
// probe intervals of the fault: the late probe makes it suspect, and it is
// probed again at once instead of a round later.
func TestSuspicionBlackholeDownWithinTwoIntervals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &scriptedProbe{}
		h := suspicionHarness(t, sp)
		defer h.close()
		fault := time.Now()
		sp.set(true)
		h.await(pathdialer.EventStateChange, func(e pathdialer.Event) bool {
			return e.Endpoint == "eu" && e.State == engine.Down
		})
		down := time.Since(fault)
		h.await(pathdialer.EventSwitch, nil)
		switched := time.Since(fault)
		// The round 50 ms after the fault, late at +40 ms, the early probe
		// times out 80 ms after that: 170 ms (a round later without
		// suspicion: 230 ms).
		if down > 170*time.Millisecond || switched > 200*time.Millisecond {
			t.Fatalf("eu DOWN %v and the switch %v after the blackhole; want ≤ 170ms and ≤ 200ms (2 × ProbeInterval)", down, switched)
		}
		if ep, _ := h.p.Active(); ep.Name != "us" {
			t.Fatalf("active %q after the switch", ep.Name)
		}
	})
}

// One slow answer is not an outage: a probe that answers after SuspectAfter
// (but within ProbeTimeout) is a success, and the early probe beside it too.
func TestSuspicionSlowAnswerIsNoFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &scriptedProbe{}
		h := suspicionHarness(t, sp)
		defer h.close()
		from := len(h.rec.all())
		before := sp.count()
		sp.set(false, 70*time.Millisecond) // the next probe answers late
		time.Sleep(time.Second)
		synctest.Wait()
		for _, e := range h.rec.all()[from:] {
			if e.Kind == pathdialer.EventProbe && e.Endpoint == "eu" && e.Err != nil {
				t.Fatalf("a probe of eu failed: %v", e.Err)
			}
			if e.Kind == pathdialer.EventStateChange && e.Endpoint == "eu" {
				t.Fatalf("eu changed state on one slow answer: %v", e)
			}
		}
		calls := sp.count() - before
		// Ten rounds and one early probe beside the late one.
		if calls != 11 {
			t.Fatalf("%d probes of eu in 1 s; want 11 (10 rounds + 1 early)", calls)
		}
	})
}

// One probe that times out while the next one answers is one failure: the
// endpoint is DEGRADED, not DOWN, and the flow stays.
func TestSuspicionOneTimeoutNoFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &scriptedProbe{}
		h := suspicionHarness(t, sp)
		defer h.close()
		from := len(h.rec.all())
		sp.set(false, time.Hour) // the next probe never answers; the early one does
		time.Sleep(time.Second)
		synctest.Wait()
		evs := h.rec.all()[from:]
		if n := countKind(evs, pathdialer.EventSwitch); n != 0 {
			t.Fatalf("%d switches on one timed-out probe", n)
		}
		if ep, _ := h.p.Active(); ep.Name != "eu" {
			t.Fatalf("active %q after one timed-out probe", ep.Name)
		}
		st := h.p.Snapshot()
		for _, e := range st.Endpoints {
			if e.Name == "eu" && e.State != engine.Healthy {
				t.Fatalf("eu %v a second after one timed-out probe", e.State)
			}
		}
	})
}

// Turned off (SuspectAfter < 0), the next failure waits for the next round.
func TestSuspicionOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &scriptedProbe{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.ProbeInterval = 100 * time.Millisecond
			c.ProbeTimeout = 80 * time.Millisecond
			c.SuspectAfter = -1
			c.Engine.FailureThreshold = 2
			c.Engine.MaxHealthAge = time.Second
			c.InflightGrace = 0
			c.Probe = sp.probe
		})
		h.start()
		defer h.close()
		time.Sleep(150 * time.Millisecond)
		fault := time.Now()
		sp.set(true)
		h.await(pathdialer.EventStateChange, func(e pathdialer.Event) bool {
			return e.Endpoint == "eu" && e.State == engine.Down
		})
		if down := time.Since(fault); down != 230*time.Millisecond {
			t.Fatalf("eu DOWN %v after the blackhole with suspicion off; want 230ms (two rounds)", down)
		}
	})
}

// A probe that ignores its context is not called again while it still runs:
// one early probe beside the hung round's, and none after it until it returns.
func TestSuspicionProbeIgnoringContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 5 })
		defer h.close()
		h.start()
		h.probes.set("eu", probeHang)
		<-time.After(3500 * time.Millisecond) // rounds at 1, 2 and 3 s
		synctest.Wait()
		// The round at 1 s hangs; late at 1.25 s, one early probe, which hangs
		// too; the rounds at 2 and 3 s find the first still running.
		if n := h.probes.count("eu"); n != 2+1 {
			t.Fatalf("%d calls of the probe of eu; want 3 (Start's, the round at 1 s, one early probe)", n)
		}
		st := status(t, h.p, "eu")
		if st.ConsecutiveFailures != 4 || st.State != engine.Degraded {
			t.Fatalf("after three rounds and one early probe: %v, %d failures; want DEGRADED, 4", st.State, st.ConsecutiveFailures)
		}
		close(h.probes.release)
	})
}

// An order unanswered for SuspectAfter brings the next probe forward: with an
// order in flight into the blackhole, eu is DOWN sooner than on probes alone.
func TestSuspicionLateOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &scriptedProbe{}
		h := suspicionHarness(t, sp)
		defer h.close()
		fault := time.Now()
		sp.set(true)
		tk := mustAcquire(t, h.p, "o-into-the-blackhole") // sent, never answered
		defer tk.Done()
		h.await(pathdialer.EventStateChange, func(e pathdialer.Event) bool {
			return e.Endpoint == "eu" && e.State == engine.Down
		})
		// The order is found late 30 ms after the fault (checks every 20 ms):
		// an early probe, which times out 80 ms later; the round's at 50 ms
		// times out at 130 ms: DOWN (170 ms on probes alone).
		if down := time.Since(fault); down > 130*time.Millisecond {
			t.Fatalf("eu DOWN %v after the blackhole with an order in flight; want ≤ 130ms", down)
		}
	})
}

// A late order that is answered is no failure, and an order stuck for ever
// brings one probe forward, not one every round.
func TestSuspicionLateOrderOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &scriptedProbe{}
		h := suspicionHarness(t, sp)
		defer h.close()
		from := len(h.rec.all())
		before := sp.count()
		tk := mustAcquire(t, h.p, "o-stuck")
		time.Sleep(time.Second)
		synctest.Wait()
		tk.Done()
		calls := sp.count() - before
		if calls != 11 {
			t.Fatalf("%d probes of eu in 1 s with one order stuck; want 11 (10 rounds + 1 early)", calls)
		}
		for _, e := range h.rec.all()[from:] {
			if e.Kind == pathdialer.EventStateChange && e.Endpoint == "eu" {
				t.Fatalf("eu changed state on a late order: %v", e)
			}
		}
	})
}

// A probe that honours its context but comes back late (a stalled host: its
// goroutine runs again only after the deadline) is one failure: the next round
// waits for it to return and probes afresh, instead of counting a second
// timeout for the same stall.
func TestStalledProbeIsOneFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		stall := false
		h := newHarness(t, func(c *pathdialer.Config) {
			c.ProbeInterval = 100 * time.Millisecond
			c.ProbeTimeout = 80 * time.Millisecond
			c.SuspectAfter = -1 // rounds alone
			c.Engine.FailureThreshold = 2
			c.Engine.MaxHealthAge = time.Second
			c.Probe = func(ctx context.Context, ep pathdialer.Endpoint) error {
				mu.Lock()
				s := stall && ep.Name == "eu"
				stall = stall && !s
				mu.Unlock()
				if !s {
					return nil
				}
				<-ctx.Done()                      // the deadline (80 ms) passes …
				time.Sleep(40 * time.Millisecond) // … and the goroutine runs again 40 ms later
				return ctx.Err()
			}
		})
		defer h.close()
		h.start()
		time.Sleep(150 * time.Millisecond)
		from := len(h.rec.all())
		mu.Lock()
		stall = true // the round at 200 ms: timed out at 280 ms, returns at 320 ms
		mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		evs := h.rec.all()[from:]
		for _, e := range evs {
			if e.Kind == pathdialer.EventStateChange && e.Endpoint == "eu" && e.State == engine.Down {
				t.Fatalf("one stalled probe took eu DOWN:\n%s", timeline(evs))
			}
		}
		if n := countKind(evs, pathdialer.EventSwitch); n != 0 {
			t.Fatalf("%d switches on one stalled probe", n)
		}
	})
}

// SuspectAfter at or above ProbeTimeout is refused, naming the field.
func TestSuspectAfterValidated(t *testing.T) {
	cfg := baseConfig()
	cfg.Probe = newProbes().probe
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	cfg.SuspectAfter = cfg.ProbeTimeout
	_, err := pathdialer.New(cfg)
	if !errors.Is(err, pathdialer.ErrInvalidConfig) || !strings.Contains(err.Error(), "SuspectAfter") {
		t.Fatalf("New with SuspectAfter = ProbeTimeout: %v", err)
	}
	for _, ok := range []time.Duration{-1, 0, cfg.ProbeTimeout - time.Millisecond} {
		cfg.SuspectAfter = ok
		p, err := pathdialer.New(cfg)
		if err != nil {
			t.Fatalf("New with SuspectAfter %v: %v", ok, err)
		}
		_ = p.Close()
	}
}

// A failed order is evidence that brings the probe forward: when the probe
// agrees at once (the connection is refused), the endpoint is probed again at
// once while no order has succeeded since, and is DOWN, and the flow on the
// backup, without waiting for another failed order or the next round.
func TestSuspicionFailedOrderProbeAgrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &scriptedProbe{}
		h := suspicionHarness(t, sp)
		defer h.close()
		sp.mu.Lock()
		sp.refused = true
		sp.mu.Unlock()
		fault := time.Now()
		h.p.Report("eu", 0, errRefused, 0) // one order refused
		h.await(pathdialer.EventSwitch, nil)
		// The next round is 50 ms away: without the early probes, DOWN would
		// take that round's and the next one's (150 ms), or a second order.
		if d := time.Since(fault); d != 0 {
			t.Fatalf("the switch %v after one refused order while the probe is refused too; want at once", d)
		}
		if ep, _ := h.p.Active(); ep.Name != "us" {
			t.Fatalf("active %q after the switch", ep.Name)
		}
	})
}

// One failed order while the probe answers is no outage: one probe is brought
// forward, it succeeds, and the endpoint keeps the flow (DEGRADED by the
// failed order, as before).
func TestSuspicionFailedOrderProbeAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &scriptedProbe{}
		h := suspicionHarness(t, sp)
		defer h.close()
		from := len(h.rec.all())
		h.p.Report("eu", 0, errors.New("HTTP 503 on order"), time.Millisecond)
		synctest.Wait()
		before := sp.count()
		time.Sleep(time.Second)
		synctest.Wait()
		calls := sp.count() - before
		if calls != 10 {
			t.Fatalf("%d probes of eu in the second after the failed order; want 10 (one a round)", calls)
		}
		evs := h.rec.all()[from:]
		if n := countKind(evs, pathdialer.EventSwitch); n != 0 {
			t.Fatalf("%d switches on one failed order:\n%s", n, timeline(evs))
		}
		early := 0
		for _, e := range evs {
			if e.Kind == pathdialer.EventProbe && e.Endpoint == "eu" && e.Time.Equal(evs[0].Time) {
				early++
			}
		}
		if early != 1 {
			t.Fatalf("%d probes of eu recorded at the failed order; want 1 brought forward:\n%s", early, timeline(evs))
		}
	})
}

// A probe that fails at once while orders succeed is not probed again early:
// the orders vouch for the endpoint (a broken probe), and nothing switches.
func TestSuspicionBrokenProbeNotRepeated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &scriptedProbe{}
		h := suspicionHarness(t, sp)
		defer h.close()
		from := len(h.rec.all())
		sp.mu.Lock()
		sp.refused = true
		before := sp.calls
		sp.mu.Unlock()
		for range 20 { // an order every 50 ms succeeds
			h.p.Report("eu", 0, nil, time.Millisecond)
			time.Sleep(50 * time.Millisecond)
		}
		synctest.Wait()
		calls := sp.count() - before
		if calls != 10 {
			t.Fatalf("%d probes of eu in 1 s; want 10 (one a round)", calls)
		}
		if n := countKind(h.rec.all()[from:], pathdialer.EventSwitch); n != 0 {
			t.Fatalf("%d switches while orders succeed", n)
		}
	})
}

// A blackhole that begins just after a round answered (the worst phase) is
// found within 2 × ProbeInterval when SuspectAfter is left to its default: a
// probe is late once it is well past the endpoint's measured latency, not
// only at half of ProbeTimeout.
func TestSuspicionLateByMeasuredLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &scriptedProbe{}
		h := suspicionHarness(t, sp)
		defer h.close()
		delays := make([]time.Duration, 20)
		for i := range delays {
			delays[i] = 2 * time.Millisecond
		}
		sp.set(false, delays...)
		time.Sleep(853 * time.Millisecond) // the round at 1 s answered at 1.002 s
		fault := time.Now()
		sp.set(true)
		h.await(pathdialer.EventStateChange, func(e pathdialer.Event) bool {
			return e.Endpoint == "eu" && e.State == engine.Down
		})
		down := time.Since(fault)
		h.await(pathdialer.EventSwitch, nil)
		switched := time.Since(fault)
		// The round 97 ms after the fault is late 5 ms later (twice the 2 ms
		// measured, at least ProbeTimeout/16); the early probe times out 80 ms
		// after that: 182 ms (at half of ProbeTimeout: 217 ms).
		if down > 185*time.Millisecond || switched > 185*time.Millisecond {
			t.Fatalf("eu DOWN %v and the switch %v after a blackhole at the worst phase; want ≤ 185ms", down, switched)
		}
	})
}

// An endpoint that always answers in 30 ms is not late at 30 ms: its
// measured latency sets the bar, so it costs no early probes.
func TestSuspicionSlowEndpointNotLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &scriptedProbe{}
		h := suspicionHarness(t, sp)
		defer h.close()
		delays := make([]time.Duration, 40)
		for i := range delays {
			delays[i] = 30 * time.Millisecond
		}
		sp.set(false, delays...)
		time.Sleep(time.Second) // 10 rounds: the latency is measured
		synctest.Wait()
		before := sp.count()
		from := len(h.rec.all())
		time.Sleep(time.Second)
		synctest.Wait()
		calls := sp.count() - before
		if calls != 10 {
			t.Fatalf("%d probes of eu in 1 s while it answers in 30 ms every time; want 10 (one a round)", calls)
		}
		for _, e := range h.rec.all()[from:] {
			if e.Kind == pathdialer.EventStateChange && e.Endpoint == "eu" {
				t.Fatalf("eu changed state: %v", e)
			}
		}
	})
}

// While orders flow, the measured bar is not used: a probe is late only at
// SuspectAfter's bound (ProbeTimeout/2), so two probe failures are that far
// apart and an order that succeeds between them still vouches for the
// endpoint. A probe-only blackhole (a broken probe) then moves nothing.
func TestSuspicionOrdersStillVouch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &scriptedProbe{}
		h := suspicionHarness(t, sp)
		defer h.close()
		time.Sleep(500 * time.Millisecond) // five rounds: eu's latency is measured
		from := len(h.rec.all())
		sp.set(true)   // the probe only: orders keep succeeding
		for range 50 { // an order every 20 ms for 1 s
			h.p.Report("eu", 0, nil, time.Millisecond)
			time.Sleep(20 * time.Millisecond)
		}
		synctest.Wait()
		evs := h.rec.all()[from:]
		if n := countKind(evs, pathdialer.EventSwitch); n != 0 {
			t.Fatalf("%d switches on a probe-only blackhole while every order succeeds:\n%s", n, timeline(evs))
		}
		if countKind(evs, pathdialer.EventBrokenProbe) == 0 {
			t.Fatalf("no broken-probe event:\n%s", timeline(evs))
		}
	})
}
