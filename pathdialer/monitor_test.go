package pathdialer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

func status(t *testing.T, p *pathdialer.Path, name string) engine.Status {
	t.Helper()
	st, ok := p.Engine().Status(name)
	if !ok {
		t.Fatalf("no status for %q", name)
	}
	return st
}

// A probe that honours its context and never answers fails at ProbeTimeout.
func TestProbeTimeoutHonouringContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.probes.set("eu", probeBlackhole)
		start := time.Now()
		h.start()
		if got := time.Since(start); got != 500*time.Millisecond {
			t.Errorf("Start's probe round took %v, want ProbeTimeout", got)
		}
		st := status(t, h.p, "eu")
		if st.State != engine.Degraded || st.ConsecutiveFailures != 1 {
			t.Errorf("eu after one timed-out probe: %v, %d failures", st.State, st.ConsecutiveFailures)
		}
		if !errors.Is(st.LastProbeError, pathdialer.ErrProbeTimeout) || !errors.Is(st.LastProbeError, context.DeadlineExceeded) {
			t.Errorf("LastProbeError = %v, want ErrProbeTimeout wrapping DeadlineExceeded", st.LastProbeError)
		}
		ev := h.await(pathdialer.EventProbe, func(e pathdialer.Event) bool { return e.Endpoint == "eu" })
		if !errors.Is(ev.Err, pathdialer.ErrProbeTimeout) || ev.Time.Sub(start) != 500*time.Millisecond {
			t.Errorf("probe event = %v at %v", ev, ev.Time.Sub(start))
		}
	})
}

// A probe that ignores its context is counted as a failure at ProbeTimeout, is not
// started again while it still runs (each round counts it as timed out), and runs
// again once it has returned.
func TestProbeIgnoringContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Rounds alone (SuspectAfter < 0): TestSuspicionProbeIgnoringContext
		// has the early probes.
		h := newHarness(t, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 5; c.SuspectAfter = -1 })
		defer h.close()
		h.start()
		h.probes.set("eu", probeHang)
		<-time.After(1500 * time.Millisecond) // the round at 1 s times out at 1.5 s
		synctest.Wait()
		st := status(t, h.p, "eu")
		if st.ConsecutiveFailures != 1 || !errors.Is(st.LastProbeError, pathdialer.ErrProbeTimeout) {
			t.Fatalf("after the first hung round: %d failures, %v", st.ConsecutiveFailures, st.LastProbeError)
		}
		calls := h.probes.count("eu")
		// Rounds at 2 s and 3 s: each waits ProbeTimeout for the hung call to
		// return, then counts a timeout (at 2.5 s and 3.5 s).
		<-time.After(2100 * time.Millisecond)
		synctest.Wait()
		if n := h.probes.count("eu"); n != calls {
			t.Errorf("the probe was started %d more times while the previous one still ran", n-calls)
		}
		st = status(t, h.p, "eu")
		if st.ConsecutiveFailures != 3 || st.State != engine.Degraded || !errors.Is(st.LastProbeError, pathdialer.ErrProbeTimeout) {
			t.Errorf("after three rounds: %v, %d failures, %v", st.State, st.ConsecutiveFailures, st.LastProbeError)
		}
		// The hung probe returns (successfully, and late): its result is dropped;
		// the next round probes again.
		h.probes.set("eu", probeOK)
		h.cursor = len(h.rec.all())
		close(h.probes.release)
		synctest.Wait()
		if st := status(t, h.p, "eu"); st.ConsecutiveFailures != 3 {
			t.Errorf("a late result was counted: %+v", st)
		}
		h.await(pathdialer.EventProbe, func(e pathdialer.Event) bool { return e.Endpoint == "eu" && e.Err == nil })
		if n := h.probes.count("eu"); n != calls+1 {
			t.Errorf("probe calls = %d, want %d", n, calls+1)
		}
	})
}

// A panicking probe is a failure (engine.ErrProbePanic), and enough of them fail
// over like any other failure.
func TestProbePanicIsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.probes.set("eu", probePanic)
		h.start()
		st := status(t, h.p, "eu")
		if st.ConsecutiveFailures != 1 || !errors.Is(st.LastProbeError, engine.ErrProbePanic) {
			t.Fatalf("after a panicking probe: %d failures, %v", st.ConsecutiveFailures, st.LastProbeError)
		}
		sw := h.await(pathdialer.EventSwitch, nil)
		if sw.To != "us" {
			t.Errorf("switch = %v", sw)
		}
	})
}

// A failure reported from live traffic that takes the active endpoint DOWN is
// evaluated at once: the switch completes before any fake time passes, let alone
// a probe interval. (Suspicion is off: a failed order also brings a probe of
// the endpoint forward, which may or may not start, at the same instant,
// before the third report takes it DOWN; this test is about the report alone.)
func TestReportDownEvaluatesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.SuspectAfter = -1 })
		defer h.close()
		h.start()
		<-time.After(200 * time.Millisecond) // between probe rounds
		t0 := time.Now()
		for i := range 3 {
			h.p.Report("eu", 0, fmt.Errorf("HTTP 502 #%d", i), 10*time.Millisecond)
		}
		hold := h.await(pathdialer.EventHold, nil)
		rel := h.await(pathdialer.EventRelease, nil)
		if hold.Time != t0 || rel.Time != t0 {
			t.Errorf("hold %v and release %v after the report, want both at once", hold.Time.Sub(t0), rel.Time.Sub(t0))
		}
		if rel.Endpoint != "us" {
			t.Errorf("release = %v", rel)
		}
		// The probes did not take part: the round at 1 s has not run.
		if n := h.probes.count("eu"); n != 1 {
			t.Errorf("eu probed %d times", n)
		}
	})
}

// Below the threshold a report only degrades; no evaluation is triggered.
func TestReportBelowThresholdDoesNotSwitch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		h.p.Report("eu", 0, errReset, 0)
		h.p.Report("eu", 0, errReset, 0)
		synctest.Wait()
		if st := status(t, h.p, "eu"); st.State != engine.Degraded {
			t.Errorf("eu = %v", st.State)
		}
		if n := countKind(h.rec.all(), pathdialer.EventHold); n != 0 {
			t.Error("held below the threshold")
		}
		h.p.Report("eu", 0, nil, time.Millisecond) // a success resets the count
		if st := status(t, h.p, "eu"); st.State != engine.Healthy || st.ConsecutiveFailures != 0 {
			t.Errorf("eu after a success = %v", st.State)
		}
	})
}

// Reports from an older token, about a fenced endpoint, or of the caller's
// own cancellation are not counted.
func TestReportDropsStaleFencedAndCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		h.p.Report("eu", 0, context.Canceled, 0)
		h.p.Report("eu", 0, fmt.Errorf("request aborted: %w", context.Canceled), 0)
		if st := status(t, h.p, "eu"); st.ConsecutiveFailures != 0 {
			t.Errorf("cancellations counted: %d failures", st.ConsecutiveFailures)
		}
		if n := h.p.Snapshot().DroppedReports; n != 0 {
			t.Errorf("cancellations counted as dropped reports: %d", n)
		}
		h.p.Report("nowhere", 0, errReset, 0) // unknown endpoint: ignored

		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, nil) // now on us, token 1
		before := status(t, h.p, "us")
		h.p.Report("us", 0, errReset, 0) // from a connection dialed under token 0
		h.p.Report("eu", 1, errReset, 0) // eu is fenced
		h.p.Report("eu", 1, nil, 0)
		if st := status(t, h.p, "us"); st.ConsecutiveFailures != before.ConsecutiveFailures {
			t.Errorf("a report from token 0 counted on us")
		}
		if n := h.p.Snapshot().DroppedReports; n != 3 {
			t.Errorf("DroppedReports = %d, want 3", n)
		}
		h.p.Report("us", 1, errReset, 0)
		if st := status(t, h.p, "us"); st.ConsecutiveFailures != 1 {
			t.Errorf("a current report was not counted: %+v", st)
		}
	})
}

// Snapshot.Monitor reports the last probe round.
func TestSnapshotMonitor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		<-time.After(2500 * time.Millisecond)
		m := h.p.Snapshot().Monitor
		if m.Stale || m.Interval != time.Second || time.Since(m.LastRound) != 500*time.Millisecond {
			t.Errorf("monitor = %+v (last round %v ago)", m, time.Since(m.LastRound))
		}
	})
}

// Passive successes on a HEALTHY endpoint are coalesced within 2 ms (they add
// no evidence); failures never are.
func TestPassiveSuccessesCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		before, _ := h.p.Engine().Status("eu")
		for range 1000 {
			h.p.Report("eu", 0, nil, time.Millisecond)
		}
		mid, _ := h.p.Engine().Status("eu")
		if got := mid.ConsecutiveSuccesses - before.ConsecutiveSuccesses; got != 1 {
			t.Fatalf("1000 successes in one instant recorded %d times, want 1", got)
		}
		<-time.After(3 * time.Millisecond)
		h.p.Report("eu", 0, nil, time.Millisecond)
		after, _ := h.p.Engine().Status("eu")
		if after.ConsecutiveSuccesses != mid.ConsecutiveSuccesses+1 {
			t.Fatalf("a success 3 ms later was not recorded (%d -> %d)", mid.ConsecutiveSuccesses, after.ConsecutiveSuccesses)
		}
		h.p.Report("eu", 0, errors.New("reset"), 0)
		h.p.Report("eu", 0, errors.New("reset"), 0)
		if st, _ := h.p.Engine().Status("eu"); st.ConsecutiveFailures != 2 {
			t.Fatalf("failures coalesced: %d", st.ConsecutiveFailures)
		}
	})
}
