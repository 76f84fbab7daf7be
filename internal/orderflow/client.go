package orderflow

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/config"

	"github.com/brokerpath/brokerpath/observe"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
	"github.com/brokerpath/brokerpath/transports/rest"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// Transport names, as in pathdialer's service names.
const (
	REST = pathdialer.ServiceREST
	FIX  = pathdialer.ServiceFIX
)

// Sentinel errors of the Client.
var (
	// ErrNotSent: the order did not leave the process (halted, held past its
	// deadline, the dial failed); it is safe to place again with the same ID.
	ErrNotSent = errors.New("orderflow: order not sent")
	// ErrUnknown: the order may or may not have reached the broker; it has been
	// handed to reconciliation. Never place it again under a new ID.
	ErrUnknown = errors.New("orderflow: order outcome unknown")
	// ErrRejected: the broker answered the order with a rejection.
	ErrRejected = errors.New("orderflow: order rejected")
	// ErrNoFIX: the Config has no FIX session.
	ErrNoFIX = errors.New("orderflow: no FIX session configured")
)

// OrderSpec is one order. Limit empty: a market order (it fills at once on
// the simulated broker); otherwise a limit order at that price (a buy far
// below the market rests).
type OrderSpec struct {
	ClOrdID string
	Symbol  string
	Side    string // "buy" or "sell"; default buy
	Qty     string // default "1"
	Limit   string
}

// OrderRecord is what the Client knows about one order.
type OrderRecord struct {
	ClOrdID   string
	Transport string
	Spec      OrderSpec
	PlacedAt  time.Time
	// AttemptAt is when the latest attempt to send it began (Place, or a re-send
	// after reconciliation).
	AttemptAt time.Time
	// Sent: the order left (or may have left) the process at least once.
	Sent bool
	// NotSent is why the last attempt did not leave ("" when it did).
	NotSent string
	// ResendRefused is why the Path refused to resend it after a final
	// NOT_RECEIVED (the venue cannot make a resend safe, or its one resend
	// was granted already): the order is given up, not pending.
	ResendRefused string
	// Unknown: an attempt ended with an unknown outcome (handed to reconcile).
	Unknown bool
	// Acked: the broker answered it (accepted, possibly filled); Rejected: the
	// answer was a rejection. AckEndpoint is where the answer came from.
	Acked, Rejected bool
	AckedAt         time.Time
	AckEndpoint     string
	// BookedRegion is the region the broker's answer says booked the order
	// (the REST answer's region; the region of the endpoint the FIX session
	// was logged on through when the ExecutionReport arrived).
	BookedRegion string
	// Settled: reconciliation found its fate (the latest verdict: Fate at
	// SettledAt; Provisional when it is a NOT_RECEIVED not yet final).
	Settled     bool
	Fate        pathdialer.Fate
	SettledAt   time.Time
	Provisional bool
	// Resent counts sends after reconciliation found it NOT_RECEIVED.
	Resent int
	// Attempts are every send, the first placement included; Verdicts every
	// fate the library reported, in order.
	Attempts []Attempt
	Verdicts []Verdict

	resending bool // a re-send is on its way
}

// Answered reports whether the order's fate is known to the client.
func (o OrderRecord) Answered() bool { return o.Acked || o.Rejected || o.Settled }

// Client is an order client on one Path with all three transports. Create
// it with New, then Start; Close stops everything it started.
type Client struct {
	cfg Config
	// settleUnknown is the Path's Config.SettleUnknown (History.Judge).
	settleUnknown time.Duration
	rec           *Recorder
	path          *pathdialer.Path
	rt            *rest.Transport
	http          *http.Client
	stream        *ws.Stream
	fixRec        *fix.Reconciler
	in            *fix.Initiator
	sid           quickfix.SessionID
	app           *fixApp
	prices        *SeqChecker

	regionToEndpoint map[string]string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	resend chan struct{}

	mu       sync.Mutex
	orders   map[string]*OrderRecord
	ids      []string
	lastRead string
	reads    struct{ ok, failed, streak int }
	// refusedHalt counts orders refused at once by the current halt.
	refusedHalt int

	rst restingState // open-order reconciles and the dead-man timer (resting.go)
	// direct reaches an endpoint straight, not through the Path (the
	// dead-man refresh's fallback), with directHdr.
	direct    *http.Client
	directHdr http.Header
	lk        *lookups // pacing within the venue's lookup budget (lookups.go)
}

// New validates cfg and builds the Client's Path and transports. Nothing
// connects before Start.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, rec: cfg.Recorder, orders: map[string]*OrderRecord{}, resend: make(chan struct{}, 1),
		regionToEndpoint: map[string]string{}, lk: newLookups(cfg.Venue)}
	if c.rec == nil {
		c.rec = NewRecorder()
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	t := cfg.Timing
	tlsCfg := &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	hdr := http.Header{cfg.APIKeyHeader: {cfg.APIKey}}
	c.direct = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg,
		DialContext: (&net.Dialer{Timeout: time.Second}).DialContext, DisableKeepAlives: true}}
	c.directHdr = hdr

	// Probes reuse their connection: a fresh TLS handshake every round costs
	// 100-300 ms on a loaded 2-core host, and a healthy backup whose one probe
	// timed out is not a failover target. A blackholed path still fails the
	// probe (the kept connection goes silent), a downed one refuses it.
	probe, err := rest.Probe(rest.ProbeOptions{Path: cfg.ProbePath, Header: hdr, TLSConfig: tlsCfg, Service: "probe", KeepAlive: true})
	if err != nil {
		return nil, err
	}
	var tradePath pathdialer.ProbeFunc
	if cfg.TradePathCheck != "" {
		// The cancel of a client order ID that does not exist: a working order
		// path answers 404 ("unknown order"), a broken one 503 or nothing.
		tradePath, err = rest.Probe(rest.ProbeOptions{Method: http.MethodDelete, Path: cfg.TradePathCheck, Header: hdr,
			TLSConfig: tlsCfg, Service: REST, Expect: []int{http.StatusNotFound}, KeepAlive: true})
		if err != nil {
			return nil, err
		}
	}
	pc := pathdialer.DefaultConfig()
	for _, e := range cfg.Endpoints {
		svc := map[string]string{REST: e.REST, "probe": e.REST}
		if e.Probe != "" {
			svc["probe"] = e.Probe
		}
		if e.WS != "" {
			svc[pathdialer.ServiceWS] = e.WS
		}
		if e.FIX != "" {
			svc[FIX] = e.FIX
		}
		pc.Endpoints = append(pc.Endpoints, pathdialer.Endpoint{Name: e.Name, Region: e.Region, Priority: e.Priority, Primary: e.Primary, Services: svc})
		c.regionToEndpoint[e.Region] = e.Name
		c.regionToEndpoint[e.Name] = e.Name
	}
	pc.Probe = probe
	pc.TradePathCheck = tradePath
	pc.ProbeInterval, pc.ProbeTimeout, pc.ProbeJitter = t.ProbeInterval, t.ProbeTimeout, t.ProbeJitter
	pc.Engine.FailureThreshold = t.FailureThreshold
	pc.Engine.MaxHealthAge = t.MaxHealthAge
	pc.Engine.Cooldown = t.Cooldown
	pc.Engine.FailbackSuccessThreshold = t.FailbackSuccessThreshold
	pc.Engine.FlapLimit, pc.Engine.FlapWindow = t.FlapLimit, t.FlapWindow
	pc.Engine.GrayFailbackWait = t.GrayFailbackWait
	pc.Engine.MaxGrayFailbackWait = max(pc.Engine.MaxGrayFailbackWait, t.GrayFailbackWait)
	pc.Engine.BounceWindow, pc.Engine.FlapBounces = t.BounceWindow, t.FlapBounces
	pc.Engine.DegradedLatency, pc.Engine.MaxDegradedDuration = t.DegradedLatency, t.MaxDegradedDuration
	if cfg.SessionPolicy == PolicyOnePerCred {
		// The broker drops the old session when we log on through the new
		// path: it fences for us.
		pc.Engine.BrokerFencesAtLogon = true
	} else if cfg.BrokerFence != nil {
		// The broker's kill switch: after the local fence, the broker itself
		// refuses the account's orders through the old region.
		pc.Fencer = func(ctx context.Context, f pathdialer.Fence) error {
			return cfg.BrokerFence(ctx, f.Endpoint.Region, true)
		}
		pc.Unfence = func(ctx context.Context, f pathdialer.Fence) error {
			return cfg.BrokerFence(ctx, f.Endpoint.Region, false)
		}
	} else {
		// Concurrent sessions: the broker does not fence, so nothing but this
		// process's own fence stands between two live paths. It is the whole
		// fence because this process is the only one trading the account.
		pc.Fencer = pathdialer.LocalFenceOnly
	}
	pc.InflightGrace = t.InflightGrace
	// A NOT_RECEIVED for an order sent through an endpoint the broker fenced
	// is final at once; otherwise provisional until the quarantine's re-query.
	pc.BrokerFencesViaFencer = cfg.BrokerFence != nil || cfg.SessionPolicy == PolicyOnePerCred
	pc.Venue = cfg.Venue
	if t.Quarantine > 0 {
		// The quarantine is chosen (by the scenario) to outlast the longest
		// a copy can be held on this network.
		pc.Quarantine, pc.MaxCopyHold = t.Quarantine, t.Quarantine
	}
	pc.FenceTimeout = time.Second
	pc.FenceBackoff = pathdialer.Backoff{Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond}
	pc.ReconcileTimeout = t.ReconcileTimeout
	pc.ReconcileAttempts = t.ReconcileAttempts
	pc.ReconcileBackoff = pathdialer.Backoff{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond}
	recs := []pathdialer.ReconcileFunc{c.reconcileREST}
	if cfg.FIXSenderCompID != "" {
		answer := t.FIXAnswerTimeout
		if answer <= 0 {
			answer = time.Second
		}
		c.fixRec, err = fix.NewReconciler(fix.ReconcileOptions{AnswerTimeout: answer, RetryInterval: 200 * time.Millisecond,
			AcceptUndetermined: cfg.FIXAcceptUndeter})
		if err != nil {
			return nil, err
		}
		recs = append(recs, c.reconcileFIX)
	}
	pc.Reconcile = pathdialer.ReconcileAll(recs...)
	// Each transport is reconciled and released on its own: a REST order
	// does not wait for the FIX session to log on through the new endpoint.
	pc.ReconcileByService = map[string]pathdialer.ReconcileFunc{REST: c.reconcileREST}
	if c.fixRec != nil {
		pc.ReconcileByService[FIX] = c.reconcileFIX
	}
	if c.lk.listing {
		// One listing answers every order (reconcileBook): the Path's
		// re-queries ask about every due order at once.
		pc.ReconcileListings = map[string]int{}
		for k := range pc.ReconcileByService {
			pc.ReconcileListings[k] = 1
		}
	}
	pc.Logger = cfg.Logger
	pc.OnEvent = observe.Tee(c.rec.OnEvent, c.onEvent, cfg.OnEvent)
	if cfg.PathResting {
		c.pathResting(&pc, tlsCfg, hdr)
	}
	c.settleUnknown = pc.SettleUnknown
	if c.path, err = pathdialer.New(pc); err != nil {
		return nil, err
	}
	ropts := rest.Options{TLSConfig: tlsCfg, Logger: cfg.Logger, Hosts: []string{baseHost},
		ReadIdleTimeout: cfg.Timing.HTTP2PingTimeout, PingTimeout: cfg.Timing.HTTP2PingTimeout}
	if cfg.FencingTokens {
		ropts.TokenHeader = FencingTokenHeader
	}
	if c.rt, err = rest.NewTransport(c.path, ropts); err != nil {
		return nil, err
	}
	c.http = &http.Client{Transport: c.rt}
	if len(cfg.Streams) > 0 {
		c.prices = NewSeqChecker(c.rec)
		sc := ws.DefaultStreamConfig()
		sc.Streams = cfg.Streams
		sc.Handler = c.prices.Handle
		sc.Dialer = &websocket.Dialer{TLSClientConfig: tlsCfg, HandshakeTimeout: time.Second}
		sc.Header = hdr.Clone()
		sc.Backoff = ws.Backoff{Base: t.StreamBackoff, Cap: 10 * t.StreamBackoff}
		sc.FailuresBeforeFallback = 1
		sc.DialTimeout = time.Second
		sc.PingInterval, sc.PongTimeout = 500*time.Millisecond, 500*time.Millisecond
		sc.MigrateTimeout = 2 * time.Second
		sc.MaxRetryAfter = 2 * time.Second
		sc.Logger = cfg.Logger
		if c.stream, err = ws.NewStream(c.path, sc); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Path returns the Client's Path (for Snapshot, status pages, metrics).
func (c *Client) Path() *pathdialer.Path { return c.path }

// Recorder returns the Client's Recorder.
func (c *Client) Recorder() *Recorder { return c.rec }

// Prices returns the price stream's checker (nil without streams).
func (c *Client) Prices() *SeqChecker { return c.prices }

// REST returns the REST transport (for its Stats).
func (c *Client) REST() *rest.Transport { return c.rt }

// FIX returns the FIX initiator (nil before Start or without FIX).
func (c *Client) FIX() *fix.Initiator { return c.in }

// FIXSeq returns the FIX sequence checker's counts (zero without FIX).
func (c *Client) FIXSeq() FIXSeqStats {
	if c.app == nil {
		return FIXSeqStats{}
	}
	return c.app.seqStats()
}

// Start starts the Path, the price stream and the FIX session, and waits
// (bounded by ctx) until the FIX session has logged on.
func (c *Client) Start(ctx context.Context) error {
	if err := c.path.Start(ctx); err != nil {
		return err
	}
	c.wg.Add(1)
	go c.resender()
	if err := c.startResting(ctx); err != nil {
		return err
	}
	if c.stream != nil {
		if err := c.stream.Start(c.ctx); err != nil {
			return err
		}
	}
	if c.cfg.FIXSenderCompID == "" {
		return nil
	}
	settings := quickfix.NewSettings()
	s := quickfix.NewSessionSettings()
	s.Set(config.BeginString, c.cfg.FIXBeginString)
	s.Set(config.SenderCompID, c.cfg.FIXSenderCompID)
	s.Set(config.TargetCompID, c.cfg.FIXTargetCompID)
	s.Set(config.HeartBtInt, strconv.Itoa(c.cfg.Timing.HeartBtInt))
	s.Set(config.LogonTimeout, "2")
	sid, err := settings.AddSession(s)
	if err != nil {
		return fmt.Errorf("orderflow: FIX settings: %w", err)
	}
	c.sid = sid
	c.app = newFIXApp(c)
	seq := fix.SequenceContinue
	if c.cfg.Sequence == SequenceResetOnSwitch {
		seq = fix.SequenceResetOnSwitch
	}
	var tlsCfg *tls.Config
	if c.cfg.RootCAs != nil && c.usesTLSForFIX() {
		tlsCfg = &tls.Config{RootCAs: c.cfg.RootCAs, MinVersion: tls.VersionTLS12}
	}
	fopts := fix.Options{Sequence: seq, Reconciler: c.fixRec, TLSConfig: tlsCfg, Logger: c.cfg.Logger,
		OnRefusedResend: func(_ quickfix.SessionID, id, _ string) {
			c.rec.NoteOrder(Info, "fix", id, "broker asked for order %s again: gap-filled, never replayed (it goes to reconcile)", id)
		}}
	if c.cfg.FencingTokens {
		fopts.TokenTag = FencingTokenTag
	}
	for tag, v := range c.cfg.FIXPreserveLogout {
		if fopts.PreserveLogout == nil {
			fopts.PreserveLogout = map[quickfix.Tag]string{}
		}
		fopts.PreserveLogout[quickfix.Tag(tag)] = v
	}
	c.in, err = fix.NewInitiator(c.app, quickfix.NewMemoryStoreFactory(), settings, quickfix.NewNullLogFactory(), c.path, fopts)
	if err != nil {
		return err
	}
	return c.in.WaitLoggedOn(ctx, sid, "")
}

// usesTLSForFIX is false for the simulated broker, whose FIX relay is plain
// TCP; a real config with a CA speaks TLS to FIX too.
func (c *Client) usesTLSForFIX() bool { return c.cfg.FIXTLS }

// Close stops the FIX session, the stream, the Path and every goroutine the
// Client started. Idempotent.
func (c *Client) Close() error {
	c.cancel()
	var errs []error
	if c.in != nil {
		errs = append(errs, c.in.Close())
	}
	if c.stream != nil {
		errs = append(errs, c.stream.Close())
	}
	c.rt.CloseIdleConnections()
	errs = append(errs, c.path.Close())
	c.wg.Wait()
	return errors.Join(errs...)
}

func (c *Client) track(o OrderSpec, transport string) *OrderRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.orders[o.ClOrdID]
	if !ok {
		r = &OrderRecord{ClOrdID: o.ClOrdID, Transport: transport, Spec: o, PlacedAt: time.Now()}
		c.orders[o.ClOrdID] = r
		c.ids = append(c.ids, o.ClOrdID)
	}
	return r
}

// refused notes an order refused because trading is halted: the first of a
// halt is an Info note.
func (c *Client) refused(transport, id, why string) {
	if why != "trading halted" {
		return
	}
	c.mu.Lock()
	c.refusedHalt++
	first := c.refusedHalt == 1
	c.mu.Unlock()
	if first {
		c.rec.NoteOrder(Info, transport, id, "order %s refused at once: trading halted (ErrTradingHalted, no wait, nothing sent)", id)
	}
}

func (c *Client) update(id string, f func(r *OrderRecord)) {
	c.mu.Lock()
	if r, ok := c.orders[id]; ok {
		f(r)
	}
	c.mu.Unlock()
}

// Orders returns a copy of every order's record, in placement order.
func (c *Client) Orders() []OrderRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]OrderRecord, 0, len(c.ids))
	for _, id := range c.ids {
		r := *c.orders[id]
		r.Attempts = append([]Attempt(nil), r.Attempts...)
		r.Verdicts = append([]Verdict(nil), r.Verdicts...)
		out = append(out, r)
	}
	return out
}

// attempt records the start of a send of id.
func (c *Client) attempt(id string, resend bool) {
	now := time.Now()
	c.update(id, func(r *OrderRecord) {
		r.AttemptAt = now
		r.Attempts = append(r.Attempts, Attempt{At: now, Resend: resend})
	})
}

// sent marks id's latest attempt as having left (or possibly left) the process.
func sentAttempt(r *OrderRecord) {
	r.Sent, r.NotSent = true, ""
	if n := len(r.Attempts); n > 0 {
		r.Attempts[n-1].Sent = true
	}
}

// setAttemptEndpoint records where r's latest attempt was sent (REST: the
// endpoint that answered, or the one the unknown outcome names).
func setAttemptEndpoint(r *OrderRecord, ep string) {
	if n := len(r.Attempts); n > 0 && ep != "" && r.Attempts[n-1].Endpoint == "" {
		r.Attempts[n-1].Endpoint = ep
	}
}

// Pending returns, sorted, the IDs of orders sent whose fate the client
// does not know yet (no answer, no settlement) and of orders found
// NOT_RECEIVED that are not answered yet (their verdict is provisional, or
// their re-send is on its way).
func (c *Client) Pending() []string {
	var out []string
	for _, o := range c.Orders() {
		notReceived := o.Settled && o.Fate == pathdialer.FateNotReceived && !o.Acked && !o.Rejected && o.ResendRefused == ""
		if o.Sent && !o.Answered() || notReceived {
			out = append(out, o.ClOrdID)
		}
	}
	sort.Strings(out)
	return out
}

// kickResend wakes the resender.
func (c *Client) kickResend() {
	select {
	case c.resend <- struct{}{}:
	default:
	}
}

func (c *Client) spec(o OrderSpec) OrderSpec {
	if o.Symbol == "" {
		o.Symbol = c.cfg.Symbol
	}
	if o.Side == "" {
		o.Side = "buy"
	}
	if o.Qty == "" {
		o.Qty = "1"
	}
	return o
}

// PlaceREST places a market buy of 1 over REST.
func (c *Client) PlaceREST(ctx context.Context, clOrdID string) error {
	return c.Place(ctx, REST, OrderSpec{ClOrdID: clOrdID})
}

// PlaceFIX places a market buy of 1 over FIX.
func (c *Client) PlaceFIX(ctx context.Context, clOrdID string) error {
	return c.Place(ctx, FIX, OrderSpec{ClOrdID: clOrdID})
}

// Place sends one order over the named transport (REST or FIX), bounded by
// Timing.OrderTimeout. It returns nil when the broker accepted it (REST) or
// when it left for the broker (FIX: the ExecutionReport is counted when it
// arrives), an error wrapping ErrNotSent, ErrUnknown or ErrRejected otherwise.
func (c *Client) Place(ctx context.Context, transport string, o OrderSpec) error {
	if o.ClOrdID == "" {
		return fmt.Errorf("%w: empty client order ID", ErrNotSent)
	}
	o = c.spec(o)
	c.track(o, transport)
	c.attempt(o.ClOrdID, false)
	var err error
	switch transport {
	case REST:
		err = c.placeREST(ctx, o)
	case FIX:
		err = c.placeFIX(ctx, o)
	default:
		return fmt.Errorf("%w: unknown transport %q", ErrNotSent, transport)
	}
	c.granted(o.ClOrdID, err)
	return err
}

// granted records, for id's latest attempt that just returned with err,
// that its ticket had been granted by now, when the attempt shows it was.
func (c *Client) granted(id string, err error) {
	now := time.Now()
	c.update(id, func(r *OrderRecord) {
		if n := len(r.Attempts); n > 0 && (r.Attempts[n-1].Sent || errors.Is(err, pathdialer.ErrFenced)) {
			r.Attempts[n-1].Granted = now
		}
	})
}

type restOrder struct {
	ClientOrderID string `json:"client_order_id"`
	Symbol        string `json:"symbol"`
	Side          string `json:"side"`
	Qty           string `json:"qty"`
	Type          string `json:"type"`
	Price         string `json:"price,omitempty"`
	Status        string `json:"status,omitempty"`
	Region        string `json:"region,omitempty"`
}

// baseURL is a placeholder: the REST transport rewrites scheme, host and base
// path to the active endpoint's.
const baseURL = "https://" + baseHost

// baseHost is the logical host of baseURL (rest.Options.Hosts).
const baseHost = "broker.invalid"

func (c *Client) placeREST(ctx context.Context, o OrderSpec) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timing.OrderTimeout)
	defer cancel()
	body := restOrder{ClientOrderID: o.ClOrdID, Symbol: o.Symbol, Side: o.Side, Qty: o.Qty, Type: "market"}
	if o.Limit != "" {
		body.Type, body.Price = "limit", o.Limit
	}
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/v1/orders", bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(c.cfg.APIKeyHeader, c.cfg.APIKey)
	req.Header.Set("X-Client-Order-ID", o.ClOrdID)
	resp, err := c.http.Do(req)
	if v := rest.Outcome(resp, err); v.Order != nil && err == nil {
		// Answered 5xx: the broker may have booked it; the transport handed
		// it to reconciliation like an order that got no answer.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		resp, err = nil, v.Order
	}
	if err != nil {
		var uo *rest.UnknownOutcomeError
		if errors.As(err, &uo) {
			c.update(o.ClOrdID, func(r *OrderRecord) {
				sentAttempt(r)
				setAttemptEndpoint(r, uo.Endpoint)
				// A new send of unknown fate supersedes an earlier verdict:
				// reconcile judges it again.
				r.Unknown, r.Settled, r.Provisional = true, false, false
			})
			c.rec.NoteOrder(Info, "rest", o.ClOrdID, "order %s: outcome UNKNOWN on %s (%s): handed to reconcile, never resent under a new ID", o.ClOrdID, uo.Endpoint, unknownWhy(uo))
			return fmt.Errorf("%w: %s: %v", ErrUnknown, o.ClOrdID, rest.RedactError(err))
		}
		why := notSentWhy(err)
		c.refused(REST, o.ClOrdID, why)
		c.update(o.ClOrdID, func(r *OrderRecord) { r.NotSent = why })
		// Keep the cause in the chain (errors.Is finds pathdialer.ErrTradingHalted).
		return fmt.Errorf("%w: %s: %s: %w", ErrNotSent, o.ClOrdID, why, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var got restOrder
	_ = json.Unmarshal(raw, &got)
	ep := c.endpointOf(resp.Header.Get("X-Region"), got.Region)
	c.update(o.ClOrdID, func(r *OrderRecord) {
		sentAttempt(r)
		setAttemptEndpoint(r, ep)
	})
	switch {
	case resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK:
		// The body's region is where the order is booked (an order booked
		// earlier and returned again keeps its region).
		c.ack(o.ClOrdID, REST, ep, got.Region, false)
		return nil
	default:
		c.ack(o.ClOrdID, REST, ep, "", true)
		return fmt.Errorf("%w: %s: HTTP %d", ErrRejected, o.ClOrdID, resp.StatusCode)
	}
}

func unknownWhy(uo *rest.UnknownOutcomeError) string {
	if uo.StatusCode != 0 {
		return fmt.Sprintf("HTTP %d", uo.StatusCode)
	}
	if uo.Cause != nil {
		return shortErr(uo.Cause)
	}
	return "no answer"
}

func notSentWhy(err error) string {
	switch {
	case errors.Is(err, pathdialer.ErrTradingHalted):
		return "trading halted"
	case errors.Is(err, context.DeadlineExceeded):
		return "held past its deadline"
	case errors.Is(err, pathdialer.ErrClosed), errors.Is(err, context.Canceled):
		return "client closing"
	case errors.Is(err, pathdialer.ErrFenced):
		return "its endpoint was fenced before it left"
	case errors.Is(err, pathdialer.ErrTicketExpired):
		return "its ticket was handed to reconciliation (or expired) before it left"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return shortErr(err)
}

// endpointOf maps the broker's region header (or body field) to an endpoint
// name, falling back to the Path's active endpoint.
func (c *Client) endpointOf(candidates ...string) string {
	for _, s := range candidates {
		if ep, ok := c.regionToEndpoint[s]; ok {
			return ep
		}
	}
	ep, _ := c.path.Active()
	return ep.Name
}

// ack records an answer. The first acknowledgement on each endpoint per
// transport is an Info note; the others are Debug.
func (c *Client) ack(id, transport, endpoint, region string, rejected bool) {
	c.mu.Lock()
	r, ok := c.orders[id]
	if !ok || r.Acked || r.Rejected {
		c.mu.Unlock()
		return
	}
	first := true
	for _, x := range c.orders {
		if x != r && x.Transport == transport && (x.Acked || x.Rejected) && x.AckEndpoint == endpoint {
			first = false
			break
		}
	}
	r.Sent = true
	r.AckedAt, r.AckEndpoint = time.Now(), endpoint
	if rejected {
		r.Rejected = true
	} else {
		r.Acked = true
		r.BookedRegion = region
	}
	resent, settled, fate := r.Resent, r.Settled, r.Fate
	c.mu.Unlock()
	what := "accepted"
	if rejected {
		what = "REJECTED"
	}
	level := Debug
	if first || resent > 0 || rejected {
		level = Info
	}
	extra := ""
	if first {
		extra = " (first " + transport + " answer from " + endpoint + ")"
	}
	if resent > 0 {
		extra += " (re-sent after reconcile found it NOT_RECEIVED)"
	} else if settled {
		extra += fmt.Sprintf(" (late: reconcile had already found it %s)", fate)
	}
	c.rec.NoteOrder(level, transport, id, "order %s %s by %s%s", id, what, endpoint, extra)
}

// Account reads GET /v1/account (a read: never held, not gated).
func (c *Client) Account(ctx context.Context) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timing.ReadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/v1/account", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(c.cfg.APIKeyHeader, c.cfg.APIKey)
	readEP, _ := c.path.ReadEndpoint()
	resp, err := c.http.Do(req)
	if err != nil {
		err = rest.RedactError(err)
		c.readResult(false, readEP.Name, shortErr(err))
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.readResult(false, readEP.Name, fmt.Sprintf("HTTP %d", resp.StatusCode))
		return nil, fmt.Errorf("orderflow: account: HTTP %d", resp.StatusCode)
	}
	var acct map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&acct); err != nil {
		c.readResult(false, readEP.Name, shortErr(err))
		return nil, err
	}
	c.readResult(true, c.endpointOf(resp.Header.Get("X-Region")), "")
	return acct, nil
}

func (c *Client) readResult(ok bool, endpoint string, why string) {
	c.mu.Lock()
	if !ok {
		c.reads.failed++
		c.reads.streak++
		first := c.reads.streak == 1
		c.mu.Unlock()
		if first {
			c.rec.Note(Info, "rest", "account read failed on %s (%s): reads are never held, so a read sent to a failing endpoint fails", endpoint, why)
		}
		return
	}
	c.reads.ok++
	if n := c.reads.streak; n > 0 {
		c.reads.streak = 0
		defer c.rec.Note(Info, "rest", "account reads ok again on %s (%d had failed)", endpoint, n)
	}
	changed := c.lastRead != "" && c.lastRead != endpoint
	prev := c.lastRead
	c.lastRead = endpoint
	c.mu.Unlock()
	if changed {
		c.rec.Note(Info, "rest", "account reads now answered by %s (were %s)", endpoint, prev)
	}
}

// Reads returns the account reads that succeeded and failed.
func (c *Client) Reads() (ok, failed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads.ok, c.reads.failed
}

// onEvent is chained into the Path's OnEvent: settlements mark orders, and a
// release wakes the resender for orders found NOT_RECEIVED.
func (c *Client) onEvent(e pathdialer.Event) {
	switch e.Kind {
	case pathdialer.EventReconcileSuccess:
		source := "reconcile"
		if e.Cause == pathdialer.ReasonRequery {
			source = "re-query"
		}
		c.settle(e.Settlements, source, func(_ *OrderRecord, st pathdialer.Settlement) bool { return settlementFinal(st) })
		c.kickResend() // a re-query may have made NOT_RECEIVED verdicts final
	case pathdialer.EventReconcileFailure:
		// The answers a failed attempt gave are kept by the Path (the next
		// attempt asks only about the other orders): they settle orders too.
		if len(e.Settlements) > 0 {
			c.settle(e.Settlements, "reconcile", func(_ *OrderRecord, st pathdialer.Settlement) bool { return settlementFinal(st) })
			c.kickResend()
		}
	case pathdialer.EventLateLanding:
		c.settle(e.Settlements, "late landing", func(*OrderRecord, pathdialer.Settlement) bool { return true })
	case pathdialer.EventRelease:
		c.mu.Lock()
		n := c.refusedHalt
		c.refusedHalt = 0
		c.mu.Unlock()
		if n > 0 {
			c.rec.Note(Info, "client", "%d order(s) were refused at once (ErrTradingHalted) during the halt: never sent, safe to place again", n)
		}
		c.kickOpenReconcileAfter(e)
		select {
		case c.resend <- struct{}{}:
		default:
		}
	}
}

func (c *Client) settle(ss []pathdialer.Settlement, source string, final func(*OrderRecord, pathdialer.Settlement) bool) {
	now := time.Now()
	c.mu.Lock()
	for _, s := range ss {
		if r, ok := c.orders[s.OrderID]; ok {
			v := verdictOf(s, now, source)
			v.Final = final(r, s)
			r.Settled, r.Fate, r.SettledAt, r.Provisional = true, s.Fate, now, !v.Final
			r.Verdicts = append(r.Verdicts, v)
		}
	}
	c.mu.Unlock()
}

// verdictOf turns a settlement into a Verdict: the region is read from its
// detail ("booked through eu").
func verdictOf(s pathdialer.Settlement, at time.Time, source string) Verdict {
	v := Verdict{At: at, Fate: s.Fate, Source: source}
	if i := strings.Index(s.Detail, "booked through "); i >= 0 {
		v.Region = strings.TrimRight(strings.Fields(s.Detail[i+len("booked through "):] + " ")[0], ";,.)")
	}
	return v
}

// mayResendLocked: the library's latest verdict on r is a final NOT_RECEIVED
// (and, where the Path judged it, the Path agrees). c.mu is held.
func (c *Client) mayResendLocked(r *OrderRecord) bool {
	n := len(r.Verdicts)
	if n == 0 || r.Verdicts[n-1].Fate != pathdialer.FateNotReceived || !r.Verdicts[n-1].Final {
		return false
	}
	// Once per verdict, and not while a re-send is on its way.
	if r.resending {
		return false
	}
	for _, a := range r.Attempts {
		if a.Sent && !a.At.Before(r.Verdicts[n-1].At) {
			return false
		}
	}
	ok, why := c.pathAllowsResend(r.ClOrdID, r.Verdicts[n-1].Source)
	if !ok && why != "" {
		// A final NOT_RECEIVED the venue cannot make a resend safe for (or
		// whose one resend was granted already): the order is given up, as a
		// strategy would, not left pending for ever.
		r.ResendRefused = why
	}
	return ok
}

// maxResends bounds the re-sends of one order (each after its own final
// NOT_RECEIVED verdict).
const maxResends = 3

// resender sends again, with the same client order ID and over the same
// transport, every order reconciliation found NOT_RECEIVED, once flow has been
// released.
func (c *Client) resender() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.resend:
		}
		var todo []OrderRecord
		c.mu.Lock()
		for _, id := range c.ids {
			r := c.orders[id]
			if r.Settled && r.Fate == pathdialer.FateNotReceived && !r.Acked && !r.Rejected && r.Resent < maxResends && c.mayResendLocked(r) {
				r.Resent++
				r.resending = true
				todo = append(todo, *r)
			}
		}
		c.mu.Unlock()
		for _, r := range todo {
			c.rec.NoteOrder(Info, r.Transport, r.ClOrdID, "re-sending %s (NOT_RECEIVED, final) with the same client order ID", r.ClOrdID)
			c.attempt(r.ClOrdID, true)
			var err error
			if r.Transport == REST {
				err = c.placeREST(c.ctx, r.Spec)
			} else {
				err = c.placeFIX(c.ctx, r.Spec)
			}
			c.granted(r.ClOrdID, err)
			c.update(r.ClOrdID, func(x *OrderRecord) { x.resending = false })
			if err != nil && !errors.Is(err, ErrRejected) {
				c.rec.NoteOrder(Info, r.Transport, r.ClOrdID, "re-send of %s: %v", r.ClOrdID, err)
				if errors.Is(err, ErrNotSent) {
					c.update(r.ClOrdID, func(x *OrderRecord) { x.Resent-- })
				}
			}
		}
	}
}

// ReconcileUnknown settles, on the active endpoint and without a switch,
// the orders that finished with an unknown outcome and that no switch has
// reconciled yet (pathdialer only reconciles at a switch or a resume). It
// returns the settlements; orders found NOT_RECEIVED are re-sent.
func (c *Client) ReconcileUnknown(ctx context.Context) ([]pathdialer.Settlement, error) {
	tickets := c.path.Unknown()
	if len(tickets) == 0 {
		return nil, nil
	}
	// Orders never settled, and those an earlier in-place reconcile found
	// NOT_RECEIVED at least Quarantine ago: the order was sent on an endpoint
	// nobody fenced, so a copy could still land; a second "not received"
	// after the quarantine makes the verdict final.
	var todo []pathdialer.TicketInfo
	now := time.Now()
	c.mu.Lock()
	for _, t := range tickets {
		r, ok := c.orders[t.OrderID]
		if !ok || r.Acked || r.Rejected {
			continue
		}
		if !r.Settled || r.Provisional && r.Fate == pathdialer.FateNotReceived && now.Sub(r.SettledAt) >= c.cfg.Timing.Quarantine {
			todo = append(todo, t)
		}
	}
	c.mu.Unlock()
	if len(todo) == 0 {
		return nil, nil
	}
	active, gen := c.path.Active()
	rc := pathdialer.Reconciliation{From: active.Name, To: active.Name, Token: gen, Reason: "in place (no switch)", Tickets: todo, Attempt: 1}
	var all []pathdialer.Settlement
	ss, err := c.reconcileREST(ctx, rc)
	all = append(all, ss...)
	if err == nil && c.fixRec != nil {
		ss, err = c.fixRec.Reconcile(ctx, rc)
		all = append(all, ss...)
	}
	if err != nil {
		c.rec.Note(Info, "client", "in-place reconcile of %d order(s) failed: %v", len(todo), err)
		return all, err
	}
	// The Path does not judge an in-place reconcile: a NOT_RECEIVED is
	// provisional the first time, final when found again after the quarantine.
	c.settle(all, "in-place reconcile", func(r *OrderRecord, st pathdialer.Settlement) bool {
		return st.Fate != pathdialer.FateNotReceived || r.Settled && r.Provisional && r.Fate == pathdialer.FateNotReceived
	})
	c.rec.Note(Info, "client", "in-place reconcile on %s (no switch): %s", active.Name, settlementList(all))
	select {
	case c.resend <- struct{}{}:
	default:
	}
	return all, nil
}

// reconcileREST settles the "rest" tickets by GET /v1/orders/{id} through the
// new path (reads are never held): 200 → FILLED, RESTING or CANCELED from the
// order's status, 404 → NOT_RECEIVED. Anything else fails the reconcile, so
// the Path keeps holding and retries.
func (c *Client) reconcileREST(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	return c.reconcileBook(ctx, r, REST)
}

// reconcileFIX settles the "fix" tickets over the FIX session
// (OrderStatusRequest), except on the Path's re-query of provisional
// verdicts: the FIX reconciler has forgotten those orders' side and symbol
// by then, and the account's one book answers for every order by its client
// order ID through the REST lookup.
func (c *Client) reconcileFIX(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	if r.Reason == pathdialer.ReasonRequery {
		return c.reconcileBook(ctx, r, FIX)
	}
	ss, err := c.fixRec.Reconcile(ctx, r)
	if err == nil {
		return ss, nil
	}
	// The FIX session could not tell (an order it cannot ask about, a
	// session not logged on yet): the account's book can, by client order ID.
	if bs, berr := c.reconcileBook(ctx, r, FIX); berr == nil {
		c.rec.Note(Info, "fix", "FIX reconcile could not settle every order (%s): settled through the account's order lookup instead", shortErr(err))
		return bs, nil
	}
	return ss, err
}

// reconcileBook settles the tickets of service by GET /v1/orders/{id}, or
// from one order listing where the venue has no lookup by client order ID;
// every request is paced within the venue's lookup budget (lookups.go) and
// passes the read breaker (rest.WithReconcile).
func (c *Client) reconcileBook(ctx context.Context, r pathdialer.Reconciliation, service string) ([]pathdialer.Settlement, error) {
	// Marked as the reconcile's lookups: the REST transport's read breaker,
	// opened by an outage, neither refuses nor counts them.
	ctx = rest.WithReconcile(ctx)
	if c.lk.listing {
		return c.listBook(ctx, r, service)
	}
	var out []pathdialer.Settlement
	for i := 0; i < len(r.Tickets); i++ {
		t := r.Tickets[i]
		if t.Service != service {
			continue
		}
		if err := c.lk.wait(ctx); err != nil {
			return out, fmt.Errorf("orderflow: book lookup of %s: waiting for the venue's lookup budget: %w", t.OrderID, err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/v1/orders/"+url.PathEscape(t.OrderID), nil)
		if err != nil {
			return out, err
		}
		req.Header.Set(c.cfg.APIKeyHeader, c.cfg.APIKey)
		resp, err := c.http.Do(req)
		if err != nil {
			return out, fmt.Errorf("orderflow: book lookup of %s: %w", t.OrderID, rest.RedactError(err))
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			// Over the venue's lookup budget: back off as told, then ask
			// again (within the reconcile's context).
			if err := backOff(ctx, resp.Header.Get("Retry-After")); err != nil {
				return out, fmt.Errorf("orderflow: book lookup of %s: HTTP 429, backing off: %w", t.OrderID, err)
			}
			i--
			continue
		}
		switch resp.StatusCode {
		case http.StatusOK:
			var o restOrder
			if err := json.Unmarshal(raw, &o); err != nil {
				return out, fmt.Errorf("orderflow: book lookup of %s: %w", t.OrderID, err)
			}
			fate := fateOfStatus(o.Status)
			if fate == pathdialer.FateUndetermined {
				return out, fmt.Errorf("orderflow: book lookup of %s: unknown status %q", t.OrderID, o.Status)
			}
			out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: service, Fate: fate, Detail: "booked through " + o.Region})
		case http.StatusNotFound:
			out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: service, Fate: pathdialer.FateNotReceived})
		default:
			return out, fmt.Errorf("orderflow: book lookup of %s: HTTP %d", t.OrderID, resp.StatusCode)
		}
	}
	return out, nil
}

// backOff waits the Retry-After of a 429 (whole seconds; 1 s when absent or
// unreadable), or until ctx is done.
func backOff(ctx context.Context, retryAfter string) error {
	d := time.Second
	if n, err := strconv.Atoi(strings.TrimSpace(retryAfter)); err == nil && n > 0 {
		d = time.Duration(n) * time.Second
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
