package pathdialer

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// stallWorld: eu and us, probes every 100 ms, 80 ms timeout, DOWN after 2;
// eu's next hang probes never answer (hangForever: none does); lateness
// says how long after its deadline a timeout is seen (a stalled process).
type stallWorld struct {
	mu          sync.Mutex
	hang        int
	hangForever bool
	late        time.Duration
	events      []Event
}

func (w *stallWorld) probe(ctx context.Context, ep Endpoint) error {
	if ep.Name != "eu" {
		return nil
	}
	w.mu.Lock()
	h := w.hangForever || w.hang > 0
	if w.hang > 0 {
		w.hang--
	}
	w.mu.Unlock()
	if !h {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (w *stallWorld) downs() (n int, first time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events {
		if e.Kind == EventStateChange && e.Endpoint == "eu" && e.State == engine.Down {
			if n == 0 {
				first = e.Time
			}
			n++
		}
	}
	return n, first
}

func newStallPath(t *testing.T, w *stallWorld) *Path {
	t.Helper()
	cfg := twoEndpointConfig()
	cfg.ProbeInterval, cfg.ProbeTimeout, cfg.ProbeJitter = 100*time.Millisecond, 80*time.Millisecond, 0
	cfg.Engine.FailureThreshold = 2
	cfg.Engine.MaxHealthAge = time.Second
	cfg.InflightGrace = 0
	cfg.Probe = w.probe
	cfg.OnEvent = func(e Event) {
		w.mu.Lock()
		w.events = append(w.events, e)
		w.mu.Unlock()
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.eps["eu"].suspect.sinceDeadline = func(deadline time.Time) time.Duration {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.late > 0 {
			return w.late
		}
		return time.Since(deadline)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(550 * time.Millisecond) // five rounds: eu's latency is measured; 50 ms before the next
	synctest.Wait()
	return p
}

// A stall of this process that the round's probe and the early probe beside
// it both outlive (their timeouts seen 40 ms after the deadline) is not an
// outage: the second timeout, which would take eu DOWN, is not counted, eu is
// probed again at once, answers, and the flow stays.
func TestStalledProcessIsNotAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &stallWorld{}
		p := newStallPath(t, w)
		defer p.Close()
		w.mu.Lock()
		w.hang, w.late = 2, 40*time.Millisecond // the next two probes of eu outlive the stall
		w.mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		if n, _ := w.downs(); n != 0 {
			t.Fatalf("eu taken DOWN %d times by one stall of this process", n)
		}
		if ep, _ := p.Active(); ep.Name != "eu" {
			t.Fatalf("active %q after a stall of this process", ep.Name)
		}
	})
}

// On a host that is always late, a blackhole is still found: one timeout
// in a row is left uncounted, not more, so eu is DOWN one probe later.
func TestStalledHostStillFindsBlackhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &stallWorld{}
		p := newStallPath(t, w)
		defer p.Close()
		fault := time.Now()
		w.mu.Lock()
		w.hangForever, w.late = true, 40*time.Millisecond
		w.mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		n, first := w.downs()
		if n == 0 {
			t.Fatal("a blackholed eu never DOWN on a host whose timers are always late")
		}
		// The round at 600 ms times out at 680 (DEGRADED); the early probe
		// from 605 ms at 685 is left uncounted; the next, from 685, at 765.
		if d := first.Sub(fault); d > 215*time.Millisecond {
			t.Fatalf("eu DOWN %v after the blackhole on an always-late host; want ≤ 215ms (one probe more)", d)
		}
		if ep, _ := p.Active(); ep.Name != "us" {
			t.Fatalf("active %q after eu went DOWN", ep.Name)
		}
	})
}
