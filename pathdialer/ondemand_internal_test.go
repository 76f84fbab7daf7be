package pathdialer

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// stalledPath is a Path whose monitor is not running (its probe rounds are
// driven by the test), so the backup's evidence can go stale without failing:
// what a loaded host does to a probe that comes back late.
type stalledPath struct {
	p     *Path
	mu    sync.Mutex
	fail  map[string]error
	calls map[string]int
}

func newStalledPath(t *testing.T, edit func(*Config)) *stalledPath {
	t.Helper()
	s := &stalledPath{fail: map[string]error{}, calls: map[string]int{}}
	cfg := DefaultConfig()
	cfg.Endpoints = []Endpoint{
		{Name: "eu", Region: "eu", Primary: true, Services: map[string]string{"fix": "eu.example:1"}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"fix": "us.example:1"}},
	}
	cfg.ProbeJitter = 0
	cfg.Probe = func(ctx context.Context, ep Endpoint) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.calls[ep.Name]++
		return s.fail[ep.Name]
	}
	cfg.Fencer = LocalFenceOnly
	cfg.Reconcile = NoReconcile
	cfg.InflightGrace = 0
	if edit != nil {
		edit(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.p = p
	return s
}

func (s *stalledPath) set(name string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[name] = err
}

func (s *stalledPath) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[name]
}

func eventsOf(p *Path, kind EventKind) []Event {
	var out []Event
	for _, e := range p.events.recent() {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// The backup's probe is late once at the moment of failover (its last success
// is older than MaxHealthAge; nothing failed): the controller probes it at
// once, under the hold, and switches. No halt.
func TestOnDemandProbeAvoidsStaleHalt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStalledPath(t, nil)
		p := s.p
		ctx := context.Background()
		p.probeRound(ctx)
		p.setGate(GateOpen, "eu", 0, nil)
		<-time.After(6 * time.Second) // no round for 6 s: us's success is stale (MaxHealthAge 5 s)
		for range 3 {
			p.observe("eu", errors.New("connection refused"), 0, true)
		}
		if d, _ := p.eng.EvaluateFailover(false); d.Outcome != engine.NoTargetAvailable || len(d.Stale) != 1 || d.Stale[0] != "us" {
			t.Fatalf("the engine alone: %v, stale %v", d.Outcome, d.Stale)
		}
		before := s.count("us")
		c := newTestController(p)
		c.stepSync(ctx)
		if s.count("us") != before+1 {
			t.Fatalf("us probed %d times on demand, want 1", s.count("us")-before)
		}
		if a, _ := p.Active(); a.Name != "us" {
			t.Fatalf("active %q after the on-demand probe", a.Name)
		}
		if n := len(eventsOf(p, EventHalt)); n != 0 {
			t.Fatalf("%d halts on stale evidence", n)
		}
		od := eventsOf(p, EventOnDemand)
		if len(od) != 1 || !strings.Contains(od[0].Cause, `"us" HEALTHY`) || !strings.Contains(od[0].Cause, "FENCE_REQUIRED") {
			t.Fatalf("on-demand events: %v", od)
		}
		if st, _ := p.GateState(); st != GateOpen {
			t.Fatalf("gate %v after the switch", st)
		}
		_ = p.Close()
	})
}

// The on-demand probe fails: the halt is loud, and its reason carries the fresh
// evidence.
func TestOnDemandProbeFailsThenHalts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStalledPath(t, nil)
		p := s.p
		ctx := context.Background()
		p.probeRound(ctx)
		p.setGate(GateOpen, "eu", 0, nil)
		<-time.After(6 * time.Second)
		for range 3 {
			p.observe("eu", errors.New("connection refused"), 0, true)
		}
		s.set("us", errors.New("503 from us"))
		c := newTestController(p)
		c.stepSync(ctx)
		st, cause := p.GateState()
		if st != GateHalted {
			t.Fatalf("gate %v", st)
		}
		for _, want := range []string{"on-demand", `"us" DEGRADED`, "503 from us", "NO_TARGET_AVAILABLE"} {
			if !strings.Contains(cause.Error(), want) {
				t.Errorf("halt reason lacks %q: %v", want, cause)
			}
		}
		// The Report that took eu DOWN held the gate; the on-demand probe
		// kept it held.
		holds := eventsOf(p, EventHold)
		if len(holds) != 2 || !strings.Contains(holds[0].Cause, `"eu" is DOWN`) || !strings.Contains(holds[1].Cause, "probing us at once") {
			t.Fatalf("orders were not held during the on-demand probe: %v", holds)
		}
		_ = p.Close()
	})
}

// The active endpoint answers again while the candidates are probed: the hold is
// lifted, no switch, no halt.
func TestOnDemandHoldLiftedWhenActiveRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pp *Path
		s := newStalledPath(t, func(c *Config) {
			c.Engine.FailureThreshold = 1
			orig := c.Probe
			c.Probe = func(ctx context.Context, ep Endpoint) error {
				if ep.Name == "us" && pp != nil {
					// eu answers again while us is probed on demand.
					_, _ = pp.eng.Observe("eu", nil, 0)
				}
				return orig(ctx, ep)
			}
		})
		p := s.p
		ctx := context.Background()
		p.probeRound(ctx)
		p.setGate(GateOpen, "eu", 0, nil)
		<-time.After(6 * time.Second)
		p.observe("eu", errors.New("refused"), 0, false) // DOWN at threshold 1
		s.set("us", errors.New("503"))
		pp = p
		c := newTestController(p)
		c.stepSync(ctx)
		// Held when eu went DOWN, and while us was probed on demand.
		if holds := eventsOf(p, EventHold); len(holds) != 2 || !strings.Contains(holds[0].Cause, `"eu" is DOWN`) {
			t.Fatalf("holds: %v", holds)
		}
		if st, _ := p.GateState(); st != GateOpen {
			t.Fatalf("gate %v after the active endpoint answered again", st)
		}
		if n := len(eventsOf(p, EventHalt)) + len(eventsOf(p, EventSwitch)); n != 0 {
			t.Fatalf("%d halts or switches", n)
		}
		_ = p.Close()
	})
}

// Failback: the primary is held back only by a stale success; it is probed at
// once rather than waiting for the next round.
func TestOnDemandFailbackProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStalledPath(t, func(c *Config) {
			c.Engine.Cooldown = 0
			c.Engine.FailbackSuccessThreshold = 1
		})
		p := s.p
		ctx := context.Background()
		p.probeRound(ctx)
		if _, err := p.eng.Assign("us", 1, "test: flow on the backup"); err != nil {
			t.Fatal(err)
		}
		p.setActive(p.eps["us"], 1)
		p.setGate(GateOpen, "us", 1, nil)
		<-time.After(6 * time.Second)
		p.observe("us", nil, 0, false)
		if d, _ := p.eng.EvaluateFailback(false); d.Outcome != engine.PrimaryNotStable || len(d.Stale) != 1 {
			t.Fatalf("the engine alone: %v, stale %v", d.Outcome, d.Stale)
		}
		before := s.count("eu")
		c := newTestController(p)
		c.stepSync(ctx)
		if s.count("eu") != before+1 {
			t.Fatalf("eu probed %d times on demand", s.count("eu")-before)
		}
		if a, _ := p.Active(); a.Name != "eu" {
			t.Fatalf("no failback after the on-demand probe: active %q", a.Name)
		}
		_ = p.Close()
	})
}

// The backup's last probe timed out once (DEGRADED, below FailureThreshold: a
// late probe on a loaded host) at the moment the primary goes DOWN: that is
// inconclusive evidence, not a verdict, so the controller probes it at once and
// switches instead of halting.
func TestOnDemandProbeOfDegradedBackupAvoidsHalt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStalledPath(t, nil)
		p := s.p
		ctx := context.Background()
		p.probeRound(ctx)
		p.setGate(GateOpen, "eu", 0, nil)
		s.set("us", ErrProbeTimeout)
		p.probeOne(ctx, p.eps["us"], false)
		if st, _ := p.eng.Status("us"); st.State != engine.Degraded {
			t.Fatalf("us %v after one timed-out probe, want DEGRADED", st.State)
		}
		s.set("us", nil)
		for range 3 {
			p.observe("eu", errors.New("connection refused"), 0, true)
		}
		if d, _ := p.eng.EvaluateFailover(false); d.Outcome != engine.NoTargetAvailable || len(d.Stale) != 1 || d.Stale[0] != "us" {
			t.Fatalf("the engine alone: %v, stale %v (a DEGRADED backup is inconclusive, not failed)", d.Outcome, d.Stale)
		}
		c := newTestController(p)
		c.stepSync(ctx)
		if a, _ := p.Active(); a.Name != "us" {
			t.Fatalf("active %q after the on-demand probe of the DEGRADED backup", a.Name)
		}
		if n := len(eventsOf(p, EventHalt)); n != 0 {
			t.Fatalf("%d halts on one late probe", n)
		}
		_ = p.Close()
	})
}
