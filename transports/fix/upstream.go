package fix

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// dialUp connects to the active endpoint (dialing again if the path switched
// during the dial) and performs TLS when configured.
func (r *relay) dialUp() (net.Conn, *pathdialer.Conn, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.timeout)
	defer cancel()
	var pc *pathdialer.Conn
	var err error
	if r.pinned != "" {
		ep, _ := r.path.Endpoint(r.pinned)
		var hp string
		if hp, err = ep.HostPort(r.service); err == nil {
			pc, err = r.path.DialEndpoint(ctx, r.pinned, "tcp", hp)
		}
	} else {
		for range 3 {
			pc, err = r.path.Dial(ctx, r.service)
			if !errors.Is(err, pathdialer.ErrSwitched) {
				break
			}
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if r.tlsCfg == nil {
		return pc, pc, nil
	}
	ep, _ := r.path.Endpoint(pc.Endpoint())
	hp, err := ep.HostPort(r.service)
	if err != nil {
		_ = pc.Close()
		return nil, nil, err
	}
	host, _, _ := net.SplitHostPort(hp)
	cfg := r.tlsCfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	tc := tls.Client(pc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = pc.Close()
		return nil, nil, fmt.Errorf("fix relay: TLS to endpoint %q: %w", pc.Endpoint(), err)
	}
	return tc, pc, nil
}

// connectUp dials the upstream connection while quickfix's connection sp is
// held (no SOCKS reply yet): dial failures are retried here, paced, and a
// switch dials the new endpoint at once. When it gives up (the relay is
// closing, or the Path is closed) it answers quickfix with a failure and
// returns false.
func (r *relay) connectUp(sp *splice) (net.Conn, *pathdialer.Conn, bool) {
	for {
		if !r.pace() {
			_ = socksReply(sp.down, socksGeneralFailure)
			return nil, nil, false
		}
		_, gen := r.path.Active()
		up, pc, err := r.dialUp()
		if err == nil {
			return up, pc, true
		}
		r.log.Info("fix relay: no upstream; holding the session's connection", "err", err)
		// A failed dial is a passive signal against the endpoint it was for
		// (the Path drops it if that endpoint is fenced or the token moved).
		// A standby session's endpoint is judged by the Path's probes.
		if r.ctx.Err() == nil && r.pinned == "" && !errors.Is(err, pathdialer.ErrFenced) && !errors.Is(err, pathdialer.ErrClosed) {
			ep, gen := r.path.Active()
			r.path.Report(ep.Name, gen, err, 0)
		}
		r.ended(gen)
		if errors.Is(err, pathdialer.ErrClosed) {
			// Nothing to dial ever again: hold until the Initiator closes.
			<-r.ctx.Done()
			_ = socksReply(sp.down, socksGeneralFailure)
			return nil, nil, false
		}
	}
}

// ended records that a connection of token gen ended (or a dial under
// it failed) now: the next dial under the same token waits interval.
func (r *relay) ended(gen uint64) {
	r.mu.Lock()
	r.lastEnd, r.lastGen = time.Now(), gen
	r.mu.Unlock()
}

// pace waits until interval has passed since the last connection ended or
// dial failed, and not at all once the path has moved to another token
// since then (a switch: the new endpoint is dialed at once). It returns false
// when the relay is closing.
func (r *relay) pace() bool {
	pathClosed := false
	for {
		var moved <-chan struct{}
		if !pathClosed {
			moved = r.path.ActiveChanged() // before reading Active: no lost wake-up
		}
		_, gen := r.path.Active()
		r.mu.Lock()
		last, lastGen := r.lastEnd, r.lastGen
		r.mu.Unlock()
		if last.IsZero() || gen != lastGen {
			return r.ctx.Err() == nil
		}
		d := time.Until(last.Add(max(r.interval, relayMinInterval)))
		if d <= 0 {
			return r.ctx.Err() == nil
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
			return r.ctx.Err() == nil
		case <-moved:
			t.Stop()
			if r.path.ActiveChanged() == moved {
				pathClosed = true // closed, not switched: it will not move again
			}
		case <-r.ctx.Done():
			t.Stop()
			return false
		}
	}
}
