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

func snapshotOf(p *pathdialer.Path, name string) pathdialer.EndpointSnapshot {
	for _, e := range p.Snapshot().Endpoints {
		if e.Name == name {
			return e
		}
	}
	return pathdialer.EndpointSnapshot{}
}

// tradePath is a TradePathCheck the test switches between failing and passing.
type tradePath struct {
	mu    sync.Mutex
	err   error
	calls int
}

func (tp *tradePath) set(err error) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.err = err
}

func (tp *tradePath) check(context.Context, pathdialer.Endpoint) error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.calls++
	return tp.err
}

// The primary answers its probe but fails orders (a partial, gray failure): it is
// taken out on live-traffic evidence, and however long its probe passes, flow
// does not fail back into it until the trade-path check succeeds.
func TestGrayFailureWaitsForTradePath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := &tradePath{err: errors.New("order status query: HTTP 503")}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.TradePathCheck = tp.check
			c.Engine.Cooldown = 5 * time.Second
		})
		defer h.close()
		h.start()
		for range 3 {
			h.p.Report("eu", 0, errors.New("HTTP 503 on order"), time.Millisecond)
		}
		if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
			t.Fatalf("switch %v", sw)
		}
		gray := h.await(pathdialer.EventGray, nil)
		if gray.Endpoint != "eu" || !strings.Contains(gray.Cause, "TradePathCheck") {
			t.Fatalf("gray event %v", gray)
		}
		<-time.After(60 * time.Second) // eu's probe passes all along
		synctest.Wait()
		if a, _ := h.p.Active(); a.Name != "us" {
			t.Fatalf("failed back into %q while its trade path still fails", a.Name)
		}
		eu := snapshotOf(h.p, "eu")
		if !eu.GrayFailure || eu.State != engine.Down || eu.ProbeFailures != 0 || eu.TrafficFailures < 3 || eu.GrayWaitUntil.IsZero() {
			t.Fatalf("snapshot of eu: %+v", eu)
		}
		var notes string
		for _, e := range h.rec.all() {
			if e.Kind == pathdialer.EventDecision && e.Decision.Failback {
				notes += strings.Join(e.Decision.Notes, ";")
			}
		}
		if !strings.Contains(notes, "gray failure") {
			t.Fatalf("the failback decisions do not say why failback waits: %q", notes)
		}
		tp.mu.Lock()
		calls := tp.calls
		tp.mu.Unlock()
		if calls < 50 {
			t.Fatalf("trade-path check ran %d times in 60 s", calls)
		}
		tp.set(nil)
		back := h.await(pathdialer.EventGray, nil)
		if back.Endpoint != "eu" || !strings.Contains(back.Cause, "back") {
			t.Fatalf("gray end %v", back)
		}
		if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "eu" {
			t.Fatalf("failback %v", sw)
		}
	})
}

// A probe failing while live traffic on the endpoint succeeds is a broken probe:
// its own event and Snapshot field, not flapping health.
func TestBrokenProbeReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 3 })
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
		ev := h.await(pathdialer.EventBrokenProbe, nil)
		close(stop)
		<-done
		if ev.Endpoint != "eu" || !strings.Contains(ev.Cause, "fails while live traffic on it succeeds") {
			t.Fatalf("broken-probe event %v", ev)
		}
		if eu := snapshotOf(h.p, "eu"); !eu.BrokenProbe || eu.ProbeFailures < 3 || eu.TrafficFailures != 0 {
			t.Fatalf("snapshot %+v", eu)
		}
		var flips int
		for _, e := range h.rec.all() {
			if e.Kind == pathdialer.EventStateChange && e.Endpoint == "eu" && e.State == engine.Healthy && e.PrevState != engine.Unknown {
				flips++
			}
		}
		if flips != 0 {
			t.Fatalf("order successes flipped the endpoint back to HEALTHY %d times", flips)
		}
	})
}

// Start waits (StartWait) for an endpoint to be eligible, and fails with a clear
// error, the gate halted, when none is; probes that never succeeded are
// reported as broken. The Path recovers by itself later.
func TestStartWaitsForAnEligibleEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.probes.set("eu", probeFail)
		h.probes.set("us", probeFail)
		start := time.Now()
		err := h.p.Start(context.Background())
		if !errors.Is(err, pathdialer.ErrNoEligibleEndpoint) || !strings.Contains(err.Error(), `"eu" DOWN`) {
			t.Fatalf("Start: %v", err)
		}
		if d := time.Since(start); d < 10*time.Second || d > 12*time.Second {
			t.Fatalf("Start returned after %v, want the 10 s StartWait", d)
		}
		if st, _ := h.p.GateState(); st != pathdialer.GateHalted {
			t.Fatalf("gate %v", st)
		}
		bp := h.await(pathdialer.EventBrokenProbe, nil)
		if !strings.Contains(bp.Cause, "never succeeded") {
			t.Fatalf("broken probe %v", bp)
		}
		h.probes.set("eu", probeOK)
		h.await(pathdialer.EventRelease, nil)
		if tk := mustAcquire(t, h.p, "o-1"); tk.Endpoint != "eu" {
			t.Fatalf("ticket on %q", tk.Endpoint)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.probes.set("eu", probeFail)
		h.probes.set("us", probeFail)
		go func() {
			<-time.After(2500 * time.Millisecond)
			h.probes.set("us", probeOK)
		}()
		start := time.Now()
		if err := h.p.Start(context.Background()); err != nil {
			t.Fatalf("Start: %v", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Fatalf("Start returned after %v, want at the first round with an eligible endpoint (3 s)", d)
		}
	})
}
