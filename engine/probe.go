package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Probe runs Config.Probe against the named endpoint, outside the Manager's lock, and
// records the result. The latency recorded is the difference of two Clock readings
// taken around the probe.
//
// A returned error and a panic inside the probe are failures: counted, kept in
// Status.LastProbeError (errors.Is finds the probe's error, or ErrProbePanic and the
// panic value when that is an error), and reported by the returned Status with a nil
// error. So is a probe that outlives a deadline the caller set on ctx: when ctx's
// error is context.DeadlineExceeded once the probe returns, the result is a failure
// wrapping context.DeadlineExceeded, whatever the probe returned. A probe that
// outlives the time it was given is a failed probe.
//
// Cancellation of ctx by the caller (context.Canceled, before or while the probe
// runs) is not evidence about the endpoint: Probe counts nothing, whatever the probe
// returned, and returns an error wrapping context.Canceled.
// An unknown name returns ErrUnknownEndpoint.
func (m *Manager) Probe(ctx context.Context, name string) (Status, error) {
	m.mu.Lock()
	es, ok := m.byName[name]
	var ep Endpoint
	if ok {
		ep = es.ep
	}
	m.mu.Unlock()
	if !ok {
		return Status{}, fmt.Errorf("%w: %q", ErrUnknownEndpoint, name)
	}
	if err := ctx.Err(); errors.Is(err, context.Canceled) {
		return Status{}, fmt.Errorf("engine: probe of %q not run: %w", name, err)
	}
	start := m.clock.Now()
	err := m.callProbe(ctx, ep)
	ctxErr := ctx.Err()
	latency := m.clock.Now().Sub(start)
	switch {
	case errors.Is(ctxErr, context.Canceled):
		return Status{}, fmt.Errorf("engine: probe of %q abandoned: %w", name, ctxErr)
	case errors.Is(ctxErr, context.DeadlineExceeded) && err == nil:
		err = fmt.Errorf("engine: probe of %q outlived its deadline: %w", name, ctxErr)
	case errors.Is(ctxErr, context.DeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("%w (probe returned: %w)", ctxErr, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recordLocked(es, err, latency, srcProbe)
	return m.statusLocked(es), nil
}

// Observe records a probe result measured elsewhere (an external monitor, a
// runtime that runs its own probes, a quorum's verdict) as if it came from
// Probe: a nil result is a success with the given latency, any other result a
// failure. Live-traffic results go to ObserveTraffic instead, so that the two
// kinds of evidence never mask each other. The caller filters out its own
// cancellations; Observe counts what it is given. An unknown name returns
// ErrUnknownEndpoint.
func (m *Manager) Observe(name string, result error, latency time.Duration) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.byName[name]
	if !ok {
		return Status{}, fmt.Errorf("%w: %q", ErrUnknownEndpoint, name)
	}
	m.recordLocked(es, result, latency, srcProbe)
	return m.statusLocked(es), nil
}

func (m *Manager) callProbe(ctx context.Context, ep Endpoint) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if rerr, ok := r.(error); ok {
				err = fmt.Errorf("%w on endpoint %q: %w", ErrProbePanic, ep.Name, rerr)
			} else {
				err = fmt.Errorf("%w on endpoint %q: %v", ErrProbePanic, ep.Name, r)
			}
		}
	}()
	return m.cfg.Probe(ctx, ep)
}
