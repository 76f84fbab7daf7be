//go:build dstfix

package simbroker

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/config"

	"github.com/brokerpath/brokerpath/internal/dst/qfhook/qfnet"
)

// StartFIX starts the broker's FIX acceptor on injected listeners: one per
// region, from Config.Listen(region, FIX), all feeding the one quickfix
// acceptor of the account. It exists in the simulation's build only (-tags
// dstfix with the patched quickfix of internal/dst/qfhook, which takes its
// listener from qfnet), for a broker started with Config.Listen (which
// starts no FIX by itself). Each accepted connection names its region, so
// the acceptor attributes sessions and orders as it does through relays; a
// drop (a newer logon, a cut answer) closes the broker's end. Call it once,
// after Start; Close stops it.
func (b *Broker) StartFIX() error {
	if b.cfg.Listen == nil {
		return errors.New("simbroker: StartFIX needs Config.Listen (the relayed broker starts its own acceptor)")
	}
	if b.fix != nil {
		return errors.New("simbroker: FIX already started")
	}
	qfnet.Install()
	fs := newFIXServer(b)
	if _, err := quickfix.GetExpectedSenderNum(fs.sid); err == nil {
		return fmt.Errorf("%w: %s", ErrFIXSessionInUse, fs.sid)
	}
	port := qfnet.Port()
	fan := &fixFanIn{conns: make(chan net.Conn), done: make(chan struct{}), open: map[*regionConn]struct{}{},
		addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}}
	for _, rg := range b.regions {
		ln, err := b.cfg.Listen(rg.name, FIX)
		if err == nil && ln == nil {
			err = errors.New("Listen returned no listener")
		}
		if err != nil {
			_ = fan.Close()
			return fmt.Errorf("simbroker: region %s: %s listener: %w", rg.name, FIX, err)
		}
		fan.lns = append(fan.lns, ln)
	}
	for _, rg := range b.regions {
		fan.serve(rg, fan.lns[len(fan.serving)])
	}
	host := "fix.broker.sim"
	release, err := qfnet.Serve(net.JoinHostPort(host, strconv.Itoa(port)), fan)
	if err != nil {
		_ = fan.Close()
		return err
	}
	defer release()
	var logs quickfix.LogFactory = quickfix.NewNullLogFactory()
	if b.cfg.FIXVerbose {
		logs = slogLogFactory{log: b.log}
	}
	settings := quickfix.NewSettings()
	settings.GlobalSettings().Set(config.SocketAcceptHost, host)
	ss := quickfix.NewSessionSettings()
	ss.Set(config.BeginString, quickfix.BeginStringFIX44)
	ss.Set(config.SenderCompID, b.cfg.BrokerCompID)
	ss.Set(config.TargetCompID, b.cfg.ClientCompID)
	ss.Set(config.SocketAcceptPort, strconv.Itoa(port))
	ss.Set(config.ResetOnLogon, yn(b.cfg.ResetOnLogon))
	if _, err := settings.AddSession(ss); err != nil {
		_ = fan.Close()
		return fmt.Errorf("simbroker: FIX settings: %w", err)
	}
	a, err := quickfix.NewAcceptor(fs, quickfix.NewMemoryStoreFactory(), settings, logs)
	if err != nil {
		_ = quickfix.UnregisterSession(fs.sid)
		_ = fan.Close()
		return fmt.Errorf("simbroker: FIX acceptor: %w", err)
	}
	a.SetConnectionValidator(fs)
	if err := a.Start(); err != nil {
		_ = quickfix.UnregisterSession(fs.sid)
		_ = fan.Close()
		return fmt.Errorf("simbroker: FIX acceptor start: %w", err)
	}
	fs.acceptor = a
	fs.addr = net.JoinHostPort(host, strconv.Itoa(port))
	b.mu.Lock()
	closed := b.closed
	if !closed {
		b.fix = fs
	}
	b.mu.Unlock()
	if closed {
		fs.beginClose()
		a.Stop()
		return ErrClosed
	}
	return nil
}

// fixFanIn is the acceptor's one listener: the connections every region's
// injected FIX listener accepts, each wrapped to name its region.
type fixFanIn struct {
	addr    *net.TCPAddr // quickfix checks an accepted connection's local port
	lns     []net.Listener
	serving []*Region
	conns   chan net.Conn
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup

	mu     sync.Mutex
	closed bool
	open   map[*regionConn]struct{} // accepted, not yet closed
}

func (f *fixFanIn) serve(rg *Region, ln net.Listener) {
	f.serving = append(f.serving, rg)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		var n uint64
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n++
			rc := &regionConn{Conn: c, rg: rg, id: n, local: f.addr, fan: f}
			f.mu.Lock()
			if f.closed {
				f.mu.Unlock()
				_ = c.Close()
				return
			}
			f.open[rc] = struct{}{}
			f.mu.Unlock()
			select {
			case f.conns <- rc:
			case <-f.done:
				_ = c.Close()
				return
			}
		}
	}()
}

func (f *fixFanIn) Accept() (net.Conn, error) {
	select {
	case c := <-f.conns:
		return c, nil
	case <-f.done:
		return nil, net.ErrClosed
	}
}

// Close closes every region's listener and every connection accepted and
// still open (quickfix leaves one that has not logged on reading), and
// waits for the accept loops.
func (f *fixFanIn) Close() error {
	f.once.Do(func() {
		close(f.done)
		for _, ln := range f.lns {
			_ = ln.Close()
		}
		f.mu.Lock()
		f.closed = true
		open := make([]*regionConn, 0, len(f.open))
		for c := range f.open {
			open = append(open, c)
		}
		f.mu.Unlock()
		for _, c := range open {
			_ = c.Close()
		}
	})
	f.wg.Wait()
	return nil
}

func (f *fixFanIn) Addr() net.Addr { return f.addr }

// regionConn is a FIX connection accepted on rg's listener, the id-th there.
type regionConn struct {
	net.Conn
	rg    *Region
	id    uint64
	local *net.TCPAddr
	fan   *fixFanIn
}

func (c *regionConn) Close() error {
	c.fan.mu.Lock()
	delete(c.fan.open, c)
	c.fan.mu.Unlock()
	return c.Conn.Close()
}

func (c *regionConn) LocalAddr() net.Addr { return c.local }

func (c *regionConn) fixAttribution() (*Region, uint64) { return c.rg, c.id }
