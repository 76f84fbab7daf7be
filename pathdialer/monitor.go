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

// probeOne probes rt once, bounded by ProbeTimeout, and records the result. A
// round's probe starts after its jitter, and counts a probe of rt still running
// from before as timed out; an on-demand probe starts at once, and when a probe
// of rt is already running it waits for that one (at most ProbeTimeout)
// instead of starting another.
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
	if ctx.Err() != nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, p.cfg.ProbeTimeout)
	defer cancel()
	done := make(chan probeResult, 1)
	// Claim the endpoint's probe slot, or find the probe that holds it.
	rt.mu.Lock()
	running := rt.probing
	var started time.Time
	if running == nil {
		rt.probing = make(chan struct{})
		p.setProbeStart(rt.ep.Name, time.Now())
	} else {
		started = p.probeStart(rt.ep.Name)
	}
	mine := rt.probing
	rt.mu.Unlock()
	if running != nil {
		// A probe of rt is running. Within its ProbeTimeout (an on-demand probe,
		// or one of another round), wait for it and take its result; past it
		// (it ignores its context), a round counts it as timed out again.
		left := p.cfg.ProbeTimeout - time.Since(started)
		if onDemand || left > 0 {
			t := time.NewTimer(max(left, 0))
			defer t.Stop()
			select {
			case <-running:
				return
			case <-t.C:
			case <-ctx.Done():
				return
			}
			if onDemand {
				return
			}
		}
		p.observe(rt.ep.Name, fmt.Errorf("%w: the previous probe of %q has not returned yet (it ignores its context): %w", ErrProbeTimeout, rt.ep.Name, context.DeadlineExceeded), p.cfg.ProbeTimeout, false)
		return
	}
	running = mine
	p.probeWG.Add(1)
	go func() {
		defer p.probeWG.Done()
		start := time.Now()
		err := callProbe(pctx, p.cfg.Probe, rt.ep)
		lat := time.Since(start)
		// The slot is free before the result is delivered: a probe of rt
		// started once this one's result is known is a new probe, not a wait
		// for this one.
		rt.mu.Lock()
		rt.probing = nil
		rt.mu.Unlock()
		close(running)
		done <- probeResult{err: err, latency: lat}
	}()
	timer := time.NewTimer(p.cfg.ProbeTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if ctx.Err() != nil {
			return // the Path is closing (or Start's context ended): not evidence about the endpoint
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
		}
		p.observe(rt.ep.Name, r.err, r.latency, false)
	case <-timer.C:
		// The probe ignores its context: count the timeout now; its late result
		// will be discarded.
		if ctx.Err() == nil {
			p.observe(rt.ep.Name, fmt.Errorf("%w after %v: %w", ErrProbeTimeout, p.cfg.ProbeTimeout, context.DeadlineExceeded), p.cfg.ProbeTimeout, false)
		}
	case <-ctx.Done():
	}
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
