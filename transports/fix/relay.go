package fix

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// relay is one session's loopback listener. quickfix reaches it as a SOCKS5
// proxy (quickfix's ProxyType=socks, the only way v0.9.10 lets an initiator
// be given its connection) authenticated with a random per-relay password
// that only this session's settings hold: a connection from any other client
// is refused before anything is dialed. Every authenticated connection is
// spliced to the active endpoint through the Path's tracked dial, so the
// Path's local fence (closing the old endpoint's connections) cuts the session
// and quickfix reconnects at once, landing on the new endpoint.
type relay struct {
	ln      net.Listener
	path    *pathdialer.Path
	service string
	tlsCfg  *tls.Config
	timeout time.Duration
	log     *slog.Logger
	user    string
	pass    string
	before  func(ctx context.Context) error // runs before every upstream dial
	// farewell, with Options.PreserveLogout, is the session's graceful
	// Logout, set on every upstream connection (pathdialer.Conn.SetFarewell).
	farewell pathdialer.Farewell
	// codWithin, from the session's HeartBtInt, is declared on every
	// upstream connection (pathdialer.Conn.SetCODWithin, farewell.go).
	codWithin time.Duration
	maxMsg    int // Options.MaxMessageSize
	// interval paces connections to one token of the path
	// (Options.ReconnectInterval): quickfix itself reconnects almost at once,
	// and the relay holds its connection until interval has passed since the
	// last connection ended or a dial failed, or until the path switches.
	interval time.Duration
	// pinned, with a hot standby, is the one endpoint this session connects
	// to, whether active or not (refused while the path has it fenced).
	pinned  string
	hs      chan struct{} // a slot per handshake in progress
	refused atomic.Uint64
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	splices map[*splice]struct{}
	cur     *splice   // the newest connection whose upstream is established
	lastEnd time.Time // when the last upstream connection ended or dial failed
	lastGen uint64    // the path's token then
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
	ln, err := relayListen() // relay_listen.go
	if err != nil {
		return nil, fmt.Errorf("fix: relay listen: %w", err)
	}
	return newRelayOn(ln, path, service, tlsCfg, timeout, log)
}

// newRelayOn is newRelay on a given listener (closed on error).
func newRelayOn(ln net.Listener, path *pathdialer.Path, service string, tlsCfg *tls.Config, timeout time.Duration, log *slog.Logger) (*relay, error) {
	var secret [24]byte
	if _, err := rand.Read(secret[:]); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("fix: relay secret: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &relay{ln: ln, path: path, service: service, tlsCfg: tlsCfg, timeout: timeout, log: log,
		user: "brokerpath", pass: hex.EncodeToString(secret[:]),
		maxMsg: DefaultMaxMessageSize, hs: make(chan struct{}, relayMaxHandshakes),
		ctx: ctx, cancel: cancel, splices: make(map[*splice]struct{})}
	return r, nil
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) start() {
	r.wg.Add(1)
	go r.serve()
}

// serve accepts local connections while at most relayMaxHandshakes are
// being authenticated (the others wait in the listener's backlog), and backs
// off on accept errors as net/http's server does, so that running out of file
// descriptors does not make it spin.
func (r *relay) serve() {
	defer r.wg.Done()
	var delay time.Duration
	for {
		select {
		case r.hs <- struct{}{}: // released by handle once the handshake ends
		case <-r.ctx.Done():
			return
		}
		c, err := r.ln.Accept()
		if err != nil {
			<-r.hs
			if r.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			delay = acceptBackoff(delay)
			r.log.Warn("fix relay: accept failed; retrying", "err", err, "retry_in", delay)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-r.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		delay = 0
		sp := &splice{down: c}
		r.mu.Lock()
		if r.ctx.Err() != nil {
			r.mu.Unlock()
			<-r.hs
			_ = c.Close()
			return
		}
		r.splices[sp] = struct{}{}
		r.mu.Unlock()
		r.wg.Add(1)
		go r.handle(sp)
	}
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
	err := r.socksAccept(sp.down) // counted in refused
	<-r.hs
	if err != nil {
		r.log.Warn("fix relay: refused a local connection that is not the session's own", "remote", sp.down.RemoteAddr().String(), "err", err)
		return
	}
	if r.before != nil {
		if err := r.before(r.ctx); err != nil {
			return
		}
	}
	up, pc, ok := r.connectUp(sp)
	if !ok {
		return
	}
	r.mu.Lock()
	sp.up, sp.endpoint, sp.gen = up, pc.Endpoint(), pc.Token()
	if r.ctx.Err() != nil {
		r.mu.Unlock()
		return
	}
	r.cur = sp
	r.mu.Unlock()
	if r.farewell != nil {
		pc.SetFarewell(r.farewell)
	}
	pc.SetCODWithin(r.codWithin)
	if err := socksReply(sp.down, socksSucceeded); err != nil {
		return
	}
	r.log.Debug("fix relay: spliced", "endpoint", sp.endpoint, "generation", sp.gen)
	r.reportEnd(sp, r.pipe(sp, up))
}

// pipe copies both ways between quickfix and the endpoint (up) until either
// side ends, then closes both, and returns the upstream side's error.
func (r *relay) pipe(sp *splice, up net.Conn) error {
	done := make(chan struct{}, 2)
	upErr := make(chan error, 1)
	go func() { _, _ = io.Copy(up, sp.down); done <- struct{}{} }()
	go func() {
		// What the endpoint sends is framed on its way to quickfix, whose
		// reader would buffer any amount of it.
		upErr <- copyFramed(sp.down, up, newFramer(r.maxMsg))
		done <- struct{}{}
	}()
	<-done
	sp.close() // either side ending (the fence closing upstream) ends both
	<-done
	r.ended(sp.gen)
	return <-upErr
}

// reportEnd reports to the Path how the endpoint's side of sp ended, when
// that is evidence against the endpoint.
func (r *relay) reportEnd(sp *splice, err error) {
	switch {
	case errors.Is(err, ErrMalformedStream) || errors.Is(err, ErrMessageTooLarge):
		// Evidence against the endpoint, whatever the state of the relay.
		err = fmt.Errorf("fix: connection to %q cut: %w", sp.endpoint, err)
		r.log.Warn("fix relay: cut the endpoint's connection", "endpoint", sp.endpoint, "err", err)
		r.path.Report(sp.endpoint, sp.gen, err, 0)
	case err != nil && r.ctx.Err() == nil && !errors.Is(err, net.ErrClosed):
		// The broker side failing (a reset, a timeout; not a clean EOF, and
		// not our own close or fence, which the Path drops) is a passive signal.
		r.path.Report(sp.endpoint, sp.gen, fmt.Errorf("fix: connection to %q lost: %w", sp.endpoint, err), 0)
	}
}

// acceptBackoff returns the wait after an accept error that followed a wait
// of prev: 5 ms, doubling up to 1 s (net/http's server's schedule).
func acceptBackoff(prev time.Duration) time.Duration {
	if prev == 0 {
		return 5 * time.Millisecond
	}
	return min(2*prev, time.Second)
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

const (
	// quickfixReconnect is the ReconnectInterval written into quickfix's
	// settings: it reconnects to its relay almost at once, and the relay
	// paces the connections to the broker (Options.ReconnectInterval).
	quickfixReconnect = 2 * time.Millisecond
	// relayMinInterval is the least pause between dials under one token.
	relayMinInterval = 10 * time.Millisecond
	// relayMaxHandshakes bounds the local connections being authenticated at
	// once; further connections wait in the listener's backlog.
	relayMaxHandshakes = 16
	// relayHandshakeTimeout bounds each SOCKS handshake (quickfix's own takes
	// microseconds: it is local).
	relayHandshakeTimeout = 3 * time.Second
)
