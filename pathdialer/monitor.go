package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// probeRound probes every endpoint concurrently, each after its own jitter and
// with its own timeout, and records the results. It returns when every probe has
// answered or timed out. A probe still running from an earlier round (it ignores
// its context) is not started again; that endpoint is counted as timed out.
func (p *Path) probeRound(ctx context.Context) {
	p.newSuspicionRound()
	var wg sync.WaitGroup
	for _, rt := range p.order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.probeOne(ctx, rt, false)
		}()
	}
	wg.Wait()
	now := time.Now()
	p.lastRound.Store(&now)
	if ctx.Err() == nil {
		p.tradePathChecks(ctx)
		p.noteEvidence()
		p.noteExpiries()
	}
}

type probeResult struct {
	err     error
	latency time.Duration
}

// probeRun is one probe of an endpoint in progress: a goroutine that calls
// Config.Probe, and the probeOne that started it (its owner), which records
// the result, or a timeout, or nothing when its context ended (the Path is
// closing, or Start's context ended). endpointRT.probing points to it while
// its goroutine runs, unless the owner dropped it: a probe whose result will
// not be recorded holds the endpoint for no one.
type probeRun struct {
	started time.Time
	// settled is closed once the owner recorded the result (or a timeout) or
	// dropped it; recorded, written before, says which.
	settled  chan struct{}
	recorded bool
	// returned is closed once the call of Config.Probe returned and the slot
	// (endpointRT.probing) is free.
	returned chan struct{}
}

// probeOne probes rt once, bounded by ProbeTimeout, and records the result. A
// round's probe starts after its jitter; an on-demand probe starts at once.
// When a probe of rt is already in progress, probeOne does not start another:
// it waits until that probe's result is recorded (not merely returned), so
// that whatever the caller does next sees it; when that probe ends without a
// recorded result (its owner's context ended), probeOne probes afresh. A
// round that finds a probe of rt still running past its ProbeTimeout waits
// up to ProbeTimeout more for its call to return (a stalled host), then
// probes afresh; if it has not returned by then (it ignores its context), the
// round counts rt as timed out again.
func (p *Path) probeOne(ctx context.Context, rt *endpointRT, onDemand bool) {
	if j := p.cfg.ProbeJitter; j > 0 && !onDemand {
		t := time.NewTimer(rand.N(j))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
	for ctx.Err() == nil {
		rt.mu.Lock()
		run := rt.probing
		if run == nil {
			run = &probeRun{started: time.Now(), settled: make(chan struct{}), returned: make(chan struct{})}
			rt.probing = run
			rt.mu.Unlock()
			if p.runProbe(ctx, rt, run).suspicious(p, rt) {
				p.suspect(ctx, rt) // suspicion.go
			}
			return
		}
		rt.mu.Unlock()
		if !onDemand && time.Since(run.started) >= p.cfg.ProbeTimeout {
			// Its timeout was counted, or is being counted, and its call has
			// not returned. A probe that honours its context returns at its
			// deadline unless the host stalled: that stall is one failure, not
			// two. Give it this round's ProbeTimeout to return, then probe
			// afresh; one that still runs ignores its context.
			t := time.NewTimer(p.cfg.ProbeTimeout)
			select {
			case <-run.returned:
				t.Stop()
				continue
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			p.observe(rt.ep.Name, fmt.Errorf("%w: the previous probe of %q has not returned yet (it ignores its context): %w", ErrProbeTimeout, rt.ep.Name, context.DeadlineExceeded), p.cfg.ProbeTimeout, false)
			return
		}
		// Its owner settles it by its own ProbeTimeout at the latest.
		select {
		case <-run.settled:
		case <-ctx.Done():
			return
		}
		if run.recorded {
			return
		}
		// It will not be recorded: probe afresh (its owner freed the slot).
	}
}

// runProbe runs run, the probe of rt that this call owns, and records its
// result, or a timeout at ProbeTimeout (the probe ignores its context: its late
// result is discarded), or nothing when ctx ends first. It reports what it
// recorded. A probe of the active endpoint still running when it is late
// (SuspectAfter, or measured) makes it suspect (suspicion.go). A timeout seen
// long after its deadline that would take rt DOWN may be left unrecorded
// (probeStalled: this process stalled; suspicion.go).
func (p *Path) runProbe(ctx context.Context, rt *endpointRT, run *probeRun) probeOutcome {
	pctx, cancel := context.WithTimeout(ctx, p.cfg.ProbeTimeout)
	defer cancel()
	recorded := false
	defer func() {
		rt.mu.Lock()
		if !recorded && rt.probing == run {
			rt.probing = nil
		}
		run.recorded = recorded
		close(run.settled)
		rt.mu.Unlock()
	}()
	done := make(chan probeResult, 1)
	p.probeWG.Add(1)
	go func() {
		defer p.probeWG.Done()
		start := time.Now()
		err := callProbe(pctx, p.cfg.Probe, rt.ep)
		lat := time.Since(start)
		yieldPoint(p, "monitor: probe answered")
		// The slot is free before the result is delivered: a probe of rt
		// started from now on is a new probe. One that started waiting before
		// waits for this result to be recorded (run.settled).
		rt.mu.Lock()
		if rt.probing == run {
			rt.probing = nil
		}
		rt.mu.Unlock()
		close(run.returned) // after the slot is free: a round waiting for it probes afresh
		done <- probeResult{err: err, latency: lat}
	}()
	timer := time.NewTimer(p.cfg.ProbeTimeout)
	defer timer.Stop()
	var late <-chan time.Time
	if d := p.probeLateAfter(rt); d > 0 && p.suspectable(rt) {
		lt := time.NewTimer(d)
		defer lt.Stop()
		late = lt.C
	}
	for late != nil {
		select {
		case <-late:
			late = nil
			p.suspect(ctx, rt) // the probe is late: probe again beside it
		case r := <-done:
			done <- r // taken below
			late = nil
		case <-timer.C:
			late = nil
			timer.Reset(0) // taken below
		case <-ctx.Done():
			late = nil
		}
	}
	select {
	case r := <-done:
		if ctx.Err() != nil {
			return probeDropped // the Path is closing (or Start's context ended): not evidence about the endpoint
		}
		if pctx.Err() != nil {
			// It outlived ProbeTimeout: a failure whatever it returned, as the
			// timer branch below counts it (the two race at the deadline).
			if r.err == nil {
				r.err = context.DeadlineExceeded
			}
			if !errors.Is(r.err, context.DeadlineExceeded) {
				r.err = fmt.Errorf("%w (probe returned: %w)", context.DeadlineExceeded, r.err)
			}
			r.err = fmt.Errorf("%w after %v: %w", ErrProbeTimeout, p.cfg.ProbeTimeout, r.err)
			if p.stalled(rt, run) {
				return probeStalled // suspicion.go
			}
		}
		p.observe(rt.ep.Name, r.err, r.latency, false)
		rt.suspect.stalled.Store(false)
		recorded = true
		switch {
		case pctx.Err() != nil:
			return probeTimedOut
		case r.err != nil:
			return probeFailed
		}
		rt.suspect.noteLatency(r.latency) // when the next probe is late (suspicion.go)
		return probeAnswered
	case <-timer.C:
		// The probe ignores its context: count the timeout now; its late result
		// will be discarded.
		if ctx.Err() == nil {
			if p.stalled(rt, run) {
				return probeStalled // suspicion.go
			}
			p.observe(rt.ep.Name, fmt.Errorf("%w after %v: %w", ErrProbeTimeout, p.cfg.ProbeTimeout, context.DeadlineExceeded), p.cfg.ProbeTimeout, false)
			rt.suspect.stalled.Store(false)
			recorded = true
			return probeTimedOut
		}
	case <-ctx.Done():
	}
	return probeDropped
}

func callProbe(ctx context.Context, probe ProbeFunc, ep Endpoint) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if rerr, ok := r.(error); ok {
				err = fmt.Errorf("%w on endpoint %q: %w", engine.ErrProbePanic, ep.Name, rerr)
			} else {
				err = fmt.Errorf("%w on endpoint %q: %v", engine.ErrProbePanic, ep.Name, r)
			}
		}
	}()
	return probe(ctx, ep)
}

// TCPProbe returns a probe that only opens and closes a TCP connection to the
// endpoint's address for service.
//
// It is the WEAKEST probe there is, shipped only as a labelled last resort: a TCP
// connect proves neither authentication nor order acceptance, and a load balancer
// in front of a broken region accepts connections happily. Prefer a probe that
// performs an authenticated request on the trade path (rest.Probe, fix.Probe).
func TCPProbe(service string) ProbeFunc {
	return func(ctx context.Context, ep Endpoint) error {
		addr, err := ep.HostPort(service)
		if err != nil {
			return err
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}
