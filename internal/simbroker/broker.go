package simbroker

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
)

// Broker is a running simulated broker: N regions over one shared account
// book, each region serving REST, WebSocket and FIX behind fault relays.
// All methods are safe for concurrent use. Close stops every goroutine the
// broker started.
type Broker struct {
	cfg    Config
	log    *slog.Logger
	apiKey string
	pki    *pki

	book    *book
	audit   audit
	orderMu sync.Mutex // orders: book + audit decided together, in one order
	// Strict-broker state, under orderMu: fenced regions (since when), the
	// account's highest fencing token, the region of the last FIX logon.
	fenced       map[string]time.Time
	highestToken uint64
	lastLogon    *Region
	venue        *venueState // Config.Venue's running state; nil: none
	gen          *generator
	fix          *fixServer
	rest         resting // cancel-on-disconnect scopes and the dead-man timer (resting.go)

	regions []*Region
	byName  map[string]*Region
	// byNameMu guards byName: a region serves (its handlers look regions up
	// by name) before the next region is added.
	byNameMu sync.RWMutex

	tickStop chan struct{}
	tickDone chan struct{}

	ready atomic.Bool // set once every region exists; FIX attribution waits for it

	mu     sync.Mutex
	closed bool
	flaps  map[string]*faultnet.Schedule // key region/service
}

// Start validates cfg and starts a broker: every listener is on 127.0.0.1
// with a port chosen by the OS, and every endpoint accepts connections when
// Start returns. The context bounds startup only; stop the broker with Close.
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg.Regions = slices.Clone(cfg.Regions)
	cfg.Streams = slices.Clone(cfg.Streams)
	cfg.Entitlements = slices.Clone(cfg.Entitlements)
	cfg.ReplicationLag = maps.Clone(cfg.ReplicationLag)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Broker{
		cfg:    cfg,
		log:    log,
		apiKey: cfg.APIKey,
		book:   newBook(cfg.Dedup),
		fenced: map[string]time.Time{},
		gen:    newGenerator(cfg.Streams, cfg.Seed),
		byName: map[string]*Region{},
		flaps:  map[string]*faultnet.Schedule{},
		venue:  newVenueState(cfg.Venue),
	}
	if cfg.Venue != nil {
		b.book.window = cfg.Venue.DedupWindow
	}
	if b.apiKey == "" {
		var raw [16]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return nil, fmt.Errorf("simbroker: generate API key: %w", err)
		}
		b.apiKey = "sim-" + hex.EncodeToString(raw[:])
	}
	var err error
	if b.pki, err = newPKI(); err != nil {
		return nil, err
	}
	if cfg.Listen == nil {
		if b.fix, err = startFIX(b); err != nil {
			_ = b.Close()
			return nil, err
		}
	}
	initial := b.gen.initial()
	for i, name := range cfg.Regions {
		rg, err := startRegion(b, name, i, initial)
		if rg != nil {
			b.regions = append(b.regions, rg)
			b.byNameMu.Lock()
			b.byName[name] = rg
			b.byNameMu.Unlock()
		}
		if err != nil {
			_ = b.Close()
			return nil, err
		}
		b.gen.feeds = append(b.gen.feeds, rg.feed)
	}
	b.ready.Store(true)
	if cfg.TickInterval > 0 {
		b.tickStop = make(chan struct{})
		b.tickDone = make(chan struct{})
		go b.runTicker(cfg.TickInterval)
	}
	b.log.Info("simbroker started", "regions", cfg.Regions, "dedup", cfg.Dedup.String(), "fence", cfg.Fence.String(),
		"tokens", cfg.Tokens.String(), "session", cfg.SessionPolicy.String())
	return b, nil
}

func (b *Broker) runTicker(every time.Duration) {
	defer close(b.tickDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-b.tickStop:
			return
		case <-t.C:
			for _, s := range b.cfg.Streams {
				_, _ = b.gen.publish(s)
			}
		}
	}
}

// Close stops the broker: relays first (every client connection is reset),
// then the FIX acceptor, the HTTP and WebSocket servers and the feeds, and
// removes the CA file. Every goroutine the broker started has returned when
// Close returns. Close is idempotent.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	flaps := b.flaps
	b.flaps = map[string]*faultnet.Schedule{}
	b.mu.Unlock()

	var errs []error
	if b.tickStop != nil {
		close(b.tickStop)
		<-b.tickDone
	}
	b.stopDeadMan()
	for _, s := range flaps {
		s.Stop()
	}
	if b.fix != nil {
		b.fix.beginClose()
	}
	for _, rg := range b.regions {
		errs = append(errs, rg.closeRelays())
	}
	if b.fix != nil {
		errs = append(errs, b.fix.stop())
	}
	for _, rg := range b.regions {
		errs = append(errs, rg.closeServers())
	}
	if b.pki != nil {
		errs = append(errs, b.pki.close())
	}
	b.log.Info("simbroker closed")
	return errors.Join(errs...)
}

func (b *Broker) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Config returns a copy of the configuration the broker runs with (APIKey
// as given, possibly empty; see APIKey for the key in force).
func (b *Broker) Config() Config {
	c := b.cfg
	c.Regions = slices.Clone(c.Regions)
	c.Streams = slices.Clone(c.Streams)
	c.Entitlements = slices.Clone(c.Entitlements)
	c.ReplicationLag = maps.Clone(c.ReplicationLag)
	return c
}

// Regions returns the regions in configuration order.
func (b *Broker) Regions() []*Region { return slices.Clone(b.regions) }

// Region returns the named region, or nil if there is none.
func (b *Broker) Region(name string) *Region {
	b.byNameMu.RLock()
	defer b.byNameMu.RUnlock()
	return b.byName[name]
}

func (b *Broker) region(name string) (*Region, error) {
	b.byNameMu.RLock()
	rg, ok := b.byName[name]
	b.byNameMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownRegion, name)
	}
	return rg, nil
}

// APIKey returns the key REST and WebSocket clients must send as X-API-Key.
func (b *Broker) APIKey() string { return b.apiKey }

// CACertPEM returns the PEM of the CA that signed every server certificate.
func (b *Broker) CACertPEM() []byte { return slices.Clone(b.pki.caPEM) }

// CertPool returns a pool holding only the broker's CA.
func (b *Broker) CertPool() *x509.CertPool { return b.pki.pool.Clone() }

// CAFile returns the path of a PEM file holding the CA; it is removed by Close.
func (b *Broker) CAFile() string { return b.pki.caFile }

// ClientTLSConfig returns a TLS client config that trusts only the broker's CA.
func (b *Broker) ClientTLSConfig() *tls.Config {
	return &tls.Config{RootCAs: b.CertPool(), MinVersion: tls.VersionTLS12}
}

// HTTPClient returns a new http.Client that trusts the broker's CA and
// speaks HTTP/2, for tests and tools. It dials directly (no pathdialer);
// call its CloseIdleConnections when done.
func (b *Broker) HTTPClient() *http.Client {
	tr := &http.Transport{TLSClientConfig: b.ClientTLSConfig(), ForceAttemptHTTP2: true}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// Audit returns an ordered copy of the audit log.
func (b *Broker) Audit() AuditLog { return b.audit.snapshot() }

// Book returns every order of the shared book, in booking order.
func (b *Broker) Book() []Order { return b.book.list(false) }

// Order returns the order with the client order ID, if booked: the latest
// booking when the dedup policy let it be booked more than once.
func (b *Broker) Order(clientOrderID string) (Order, bool) { return b.book.get(clientOrderID) }

// Bookings returns every order booked under the client order ID, oldest
// first (more than one only with DedupOpenOnly or DedupNone).
func (b *Broker) Bookings(clientOrderID string) []Order { return b.book.bookings(clientOrderID) }

// PublishTick publishes the next tick of stream from the central generator
// and returns it. Each region receives it after its replication lag (at once
// without lag: it is in the region's replay buffer when PublishTick returns).
func (b *Broker) PublishTick(stream string) (Tick, error) {
	if b.isClosed() {
		return Tick{}, ErrClosed
	}
	return b.gen.publish(stream)
}

// SetReplicationLag changes region's lag for ticks published from now on.
func (b *Broker) SetReplicationLag(region string, lag time.Duration) error {
	rg, err := b.region(region)
	if err != nil {
		return err
	}
	if lag < 0 {
		return fmt.Errorf("%w: ReplicationLag %v is negative", ErrInvalidConfig, lag)
	}
	rg.feed.setLag(lag)
	return nil
}

// SetFault applies f to one service of one region, replacing the fault of
// the same family (network or application) already set there; None clears
// both and stops a Flap (on injected listeners, Config.Listen, it clears the
// application faults: the network's are that network's). It fails with ErrUnknownRegion, ErrUnknownService,
// ErrFaultNotSupported or ErrInvalidFault without changing anything.
func (b *Broker) SetFault(region string, svc Service, f Fault) error {
	rg, err := b.region(region)
	if err != nil {
		return err
	}
	if _, err := ParseService(string(svc)); err != nil {
		return err
	}
	if err := validateFault(svc, f); err != nil {
		return err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	key := region + "/" + string(svc)
	old := b.flaps[key]
	_, isNet := netFault(f)
	_, isFlap := f.(Flap)
	if isNet || isFlap {
		delete(b.flaps, key)
	}
	b.mu.Unlock()
	if (isNet || isFlap) && old != nil {
		old.Stop()
	}

	relay := rg.relays[svc]
	if _, none := f.(None); none && relay == nil {
		// Injected listeners: the network's faults are that network's to
		// heal; None still heals the application faults.
		rg.app.clear(svc)
		b.log.Info("fault set", "region", region, "service", string(svc), "fault", f.String())
		return nil
	}
	if relay == nil && (isNet || isFlap) {
		return fmt.Errorf("%w: %s on %s/%s: the broker serves on injected listeners (Config.Listen); set network faults on that network",
			ErrFaultNotSupported, f, region, svc)
	}
	switch f := f.(type) {
	case None:
		rg.app.clear(svc)
		err = relay.SetFault(faultnet.None())
	case Flap:
		inner := faultnet.Down()
		if f.Fault != nil {
			inner, _ = netFault(f.Fault)
		}
		var s *faultnet.Schedule
		s, err = faultnet.Flap(relay, inner, f.Period)
		if err == nil {
			b.mu.Lock()
			if b.closed {
				b.mu.Unlock()
				s.Stop()
				return ErrClosed
			}
			b.flaps[key] = s
			b.mu.Unlock()
		}
	case Fault503:
		rg.app.set503(svc, f)
	case Partial:
		rg.app.setPartial(svc)
	case UnknownOutcome:
		rg.app.setUnknown(svc, f.N)
	case BookingDelay:
		rg.app.setBooking(svc, f.Delay)
	default:
		nf, _ := netFault(f)
		err = relay.SetFault(nf)
	}
	if err != nil {
		return fmt.Errorf("simbroker: set %s on %s/%s: %w", f, region, svc, err)
	}
	b.log.Info("fault set", "region", region, "service", string(svc), "fault", f.String())
	return nil
}

// PartitionMonitor cuts region off from health monitors only: its probe
// relay is blackholed while rest, ws and fix keep working (the split
// case). Monitors must probe through Region.ProbeURL for this to bite. Clear
// it with SetFault(region, Probe, None{}).
func (b *Broker) PartitionMonitor(region string) error {
	return b.SetFault(region, Probe, Blackhole{})
}

// Faults describes the faults in force, by region and service.
func (b *Broker) Faults() map[string]map[Service][]string {
	out := map[string]map[Service][]string{}
	b.mu.Lock()
	flaps := maps.Clone(b.flaps)
	b.mu.Unlock()
	for _, rg := range b.regions {
		m := map[Service][]string{}
		for _, s := range Services {
			var d []string
			if _, ok := flaps[rg.name+"/"+string(s)]; ok {
				d = append(d, "flap")
			}
			if r := rg.relays[s]; r != nil && r.Fault().Kind != faultnet.KindNone {
				f := r.Fault()
				d = append(d, f.String())
			}
			d = append(d, rg.app.describe(s)...)
			if len(d) > 0 {
				m[s] = d
			}
		}
		out[rg.name] = m
	}
	return out
}

// placeOrder applies the fence and token policies, books req (or maps it to
// an existing order, per the dedup policy) and audits the submission,
// deciding all of it under one lock so audit order is decision order. cut
// reports that the caller must cut the connection instead of answering
// (UnknownOutcome). err is non-nil exactly when nothing was booked or
// matched; out then says why.
func (b *Broker) placeOrder(rg *Region, svc Service, src source, req orderRequest, possDup bool, tok subToken) (o Order, out Outcome, cut bool, err error) {
	connID := src.connID
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	now := time.Now()
	faultSvc := svc
	if svc == Probe {
		faultSvc = REST
	}
	var created bool
	if out, err = b.admitLocked(rg, tok); err == nil {
		o, created, err = b.book.place(req, rg.name, string(svc), tok.value, b.fillPrice, now)
		switch {
		case err != nil:
			out = OutcomeRejected
		case !created:
			out = OutcomeDuplicate
		case rg.app.takeUnknown(faultSvc):
			out, cut = OutcomeCut, true
		default:
			out = OutcomeNew
		}
	}
	detail := ""
	if err != nil {
		detail = err.Error()
	}
	b.audit.add(Record{Time: now, Kind: KindOrder, Region: rg.name, Service: string(svc), ConnID: connID,
		ClientOrderID: req.ClientOrderID, OrderID: o.OrderID, Token: tok.value, Outcome: out, PossDup: possDup, Detail: detail,
		ConnOpened: src.opened, SentBy: src.sentBy, SentAfter: src.sentAfter})
	return o, out, cut, err
}

// lookupOrder answers an order-status query and audits it as a KindLookup,
// under the order lock so that its Seq orders it against submissions.
func (b *Broker) lookupOrder(rg *Region, svc Service, src source, clientOrderID string) (Order, bool) {
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	o, ok := b.visibleOrder(clientOrderID, time.Now())
	rec := Record{Kind: KindLookup, Region: rg.name, Service: string(svc), ConnID: src.connID, ClientOrderID: clientOrderID,
		Outcome: OutcomeFailed, Detail: "not found", ConnOpened: src.opened, SentBy: src.sentBy, SentAfter: src.sentAfter}
	if ok {
		rec.Outcome, rec.Detail, rec.OrderID = OutcomeOK, o.Status, o.OrderID
	}
	b.audit.add(rec)
	return o, ok
}

// source is what the broker knows of the connection a request came
// through: its ID for the audit and the network's facts about it.
type source struct {
	connID string
	// opened: when the network opened the connection; sentBy and
	// sentAfter: the latest and the earliest instant the last byte received on
	// it so far can have left the client (zero: unknown).
	opened, sentBy, sentAfter time.Time
}

func infoSource(id string, info faultnet.ConnInfo) source {
	return source{connID: id, opened: info.Opened, sentBy: info.LastLeft, sentAfter: info.LastAfter}
}

// Connection is the network's record of one connection to a region's
// service, as the relay in front of it saw it.
type Connection struct {
	Region  string
	Service Service
	// ConnID is the ID audit records of this connection carry
	// ("<region>/<service>/<relay conn ID>").
	ConnID string
	faultnet.ConnRecord
}

// Connections returns the record of every connection the broker's relays
// accepted, open or closed, region by region and service by service: when
// it was opened, when each chunk the client sent left it and reached the
// broker, when and by whom it was closed. Empty when the broker serves on
// injected listeners (read that network's own records).
func (b *Broker) Connections() []Connection {
	var out []Connection
	for _, rg := range b.regions {
		for _, s := range Services {
			r := rg.relays[s]
			if r == nil {
				continue
			}
			for _, h := range r.History() {
				out = append(out, Connection{Region: rg.name, Service: s, ConnID: connID(rg.name, s, h.ID), ConnRecord: h})
			}
		}
	}
	return out
}

// fillPrice prices a market order on SYMBOL from stream px.SYMBOL, if any.
func (b *Broker) fillPrice(symbol string) string { return b.gen.lastPrice("px." + symbol) }

func connID(region string, svc Service, id uint64) string {
	return fmt.Sprintf("%s/%s/%d", region, svc, id)
}

// lookupConn finds the relayed connection a server socket with the given
// remote address belongs to, among the relays of svcs.
func (rg *Region) lookupConn(remote string, svcs ...Service) (Service, string, bool) {
	s, src, ok := rg.lookupSource(remote, svcs...)
	return s, src.connID, ok
}

// lookupSource is lookupConn with the network's facts about the connection.
func (rg *Region) lookupSource(remote string, svcs ...Service) (Service, source, bool) {
	for _, s := range svcs {
		r := rg.relays[s]
		if r == nil {
			continue
		}
		if info, ok := r.LookupUpstream(remote); ok {
			return s, infoSource(connID(rg.name, s, info.ID), info), true
		}
	}
	return "", source{}, false
}

// listenLoopback listens on 127.0.0.1 with an OS-chosen port.
func listenLoopback() (net.Listener, error) {
	return net.Listen("tcp", "127.0.0.1:0")
}
