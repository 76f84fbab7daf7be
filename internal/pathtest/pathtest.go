// Package pathtest builds pathdialer Paths for the transports' tests: probes the
// test switches per endpoint, test-speed timings, and a bounded wait for events.
// It is test support, not a fake: the Path is the real one.
package pathtest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// Probes answers each endpoint's probe from a switch the test flips:
// Down[name].Store(true) makes it fail.
type Probes struct {
	Down map[string]*atomic.Bool
}

// NewProbes returns switches, all up, for the named endpoints.
func NewProbes(names ...string) *Probes {
	p := &Probes{Down: make(map[string]*atomic.Bool, len(names))}
	for _, n := range names {
		p.Down[n] = &atomic.Bool{}
	}
	return p
}

// Probe is the pathdialer.ProbeFunc.
func (p *Probes) Probe(_ context.Context, ep pathdialer.Endpoint) error {
	if d, ok := p.Down[ep.Name]; ok && d.Load() {
		return errors.New("probe: region unreachable")
	}
	return nil
}

// FastConfig is pathdialer.DefaultConfig with test-speed timings (a probe every
// 20 ms with a 10 ms timeout and no jitter, DOWN after 2 failures, fresh for 1 s,
// no failback for an hour), probes from p, LocalFenceOnly and NoReconcile. The
// caller adjusts what its test needs.
func FastConfig(eps []pathdialer.Endpoint, p *Probes) pathdialer.Config {
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = eps
	cfg.Probe = p.Probe
	cfg.ProbeInterval, cfg.ProbeTimeout, cfg.ProbeJitter = 20*time.Millisecond, 10*time.Millisecond, 0
	cfg.Engine.FailureThreshold = 2
	cfg.Engine.MaxHealthAge = time.Second
	cfg.Engine.Cooldown = time.Hour
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	return cfg
}

// Start builds and starts the Path and closes it when the test ends.
func Start(t testing.TB, cfg pathdialer.Config) *pathdialer.Path {
	t.Helper()
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// Events buffers a Path's events for Wait. Set Hook as Config.OnEvent (or call
// it from yours). Events beyond the buffer are dropped from this view only.
type Events struct {
	ch chan pathdialer.Event
}

// NewEvents returns an empty buffer of 1024 events.
func NewEvents() *Events { return &Events{ch: make(chan pathdialer.Event, 1024)} }

// Hook records one event.
func (e *Events) Hook(ev pathdialer.Event) {
	select {
	case e.ch <- ev:
	default:
	}
}

// C returns the events as they arrive.
func (e *Events) C() <-chan pathdialer.Event { return e.ch }

// Wait returns the next event of kind, failing the test after 10 s with the
// Path's snapshot.
func (e *Events) Wait(t testing.TB, p *pathdialer.Path, kind pathdialer.EventKind) pathdialer.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-e.ch:
			if ev.Kind == kind {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %v event within 10s; snapshot: %+v", kind, p.Snapshot())
		}
	}
}
