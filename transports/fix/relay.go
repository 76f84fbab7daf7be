package fix

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// relay is one session's loopback listener. Every connection quickfix opens to
// it is spliced to the active endpoint through the Path's tracked dial, so the
// Path's local fence (closing the old endpoint's connections) cuts the session
// and quickfix reconnects at once, landing on the new endpoint.
type relay struct {
	ln      net.Listener
	path    *pathdialer.Path
	service string
	tlsCfg  *tls.Config
	timeout time.Duration
	log     *slog.Logger
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	splices map[*splice]struct{}
	cur     *splice // the newest connection whose upstream is established
}

// splice is one relayed connection.
type splice struct {
	down     net.Conn
	up       net.Conn
	endpoint string
	gen      uint64
}

func (s *splice) close() {
	_ = s.down.Close()
	if s.up != nil {
		_ = s.up.Close()
	}
}

func newRelay(path *pathdialer.Path, service string, tlsCfg *tls.Config, timeout time.Duration, log *slog.Logger) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fix: relay listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &relay{ln: ln, path: path, service: service, tlsCfg: tlsCfg, timeout: timeout, log: log,
		ctx: ctx, cancel: cancel, splices: make(map[*splice]struct{})}
	return r, nil
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) start() {
	r.wg.Add(1)
	go r.serve()
}

func (r *relay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if r.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			r.log.Warn("fix relay: accept", "err", err)
			continue
		}
		sp := &splice{down: c}
		r.mu.Lock()
		if r.ctx.Err() != nil {
			r.mu.Unlock()
			_ = c.Close()
			return
		}
		r.splices[sp] = struct{}{}
		r.mu.Unlock()
		r.wg.Add(1)
		go r.handle(sp)
	}
}

// dialUp connects to the active endpoint (dialing again if the path switched
// during the dial) and performs TLS when configured.
func (r *relay) dialUp() (net.Conn, *pathdialer.Conn, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.timeout)
	defer cancel()
	var pc *pathdialer.Conn
	var err error
	for range 3 {
		pc, err = r.path.Dial(ctx, r.service)
		if !errors.Is(err, pathdialer.ErrSwitched) {
			break
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

func (r *relay) handle(sp *splice) {
	defer r.wg.Done()
	defer func() {
		sp.close()
		r.mu.Lock()
		delete(r.splices, sp)
		if r.cur == sp {
			r.cur = nil
		}
		r.mu.Unlock()
	}()
	up, pc, err := r.dialUp()
	if err != nil {
		r.log.Info("fix relay: no upstream, closing the session's connection", "err", err)
		// A failed dial is a passive signal against the endpoint it was for
		// (the Path drops it if that endpoint is fenced or the generation moved).
		if r.ctx.Err() == nil && !errors.Is(err, pathdialer.ErrFenced) && !errors.Is(err, pathdialer.ErrClosed) {
			ep, gen := r.path.Active()
			r.path.Report(ep.Name, gen, err, 0)
		}
		return
	}
	r.mu.Lock()
	sp.up, sp.endpoint, sp.gen = up, pc.Endpoint(), pc.Generation()
	if r.ctx.Err() != nil {
		r.mu.Unlock()
		return
	}
	r.cur = sp
	r.mu.Unlock()
	r.log.Debug("fix relay: spliced", "endpoint", sp.endpoint, "generation", sp.gen)
	done := make(chan struct{}, 2)
	upErr := make(chan error, 1)
	go func() { _, _ = io.Copy(up, sp.down); done <- struct{}{} }()
	go func() {
		_, err := io.Copy(sp.down, up)
		upErr <- err
		done <- struct{}{}
	}()
	<-done
	sp.close() // either side ending (the fence closing upstream) ends both
	<-done
	// The broker side failing (a reset, a timeout; not a clean EOF, and not our
	// own close or fence, which the Path drops) is a passive signal.
	if err := <-upErr; err != nil && r.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
		r.path.Report(sp.endpoint, sp.gen, fmt.Errorf("fix: connection to %q lost: %w", sp.endpoint, err), 0)
	}
}

// current returns the endpoint of the newest established connection.
func (r *relay) current() (string, uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		return "", 0, false
	}
	return r.cur.endpoint, r.cur.gen, true
}

// closeConns cuts every relayed connection (quickfix then reconnects or, when
// stopping, finishes at once).
func (r *relay) closeConns() {
	r.mu.Lock()
	sps := make([]*splice, 0, len(r.splices))
	for sp := range r.splices {
		sps = append(sps, sp)
	}
	r.mu.Unlock()
	for _, sp := range sps {
		r.mu.Lock()
		up := sp.up
		r.mu.Unlock()
		_ = sp.down.Close()
		if up != nil {
			_ = up.Close()
		}
	}
}

// close stops accepting, cuts every connection and waits for its goroutines.
func (r *relay) close() {
	r.mu.Lock()
	r.cancel()
	r.mu.Unlock()
	_ = r.ln.Close()
	r.closeConns()
	r.wg.Wait()
}
