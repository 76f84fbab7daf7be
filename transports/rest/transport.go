package rest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// Options configures a Transport. The zero value works for a broker with a
// publicly trusted certificate.
type Options struct {
	// TLSConfig is the base TLS configuration (RootCAs, client certificates). It is
	// cloned per endpoint. Its ServerName, when set, is the name every endpoint's
	// certificate is verified against (an endpoint dialled by IP address, verified
	// as the broker's host name); when empty, each endpoint's URL host is.
	// InsecureSkipVerify is refused.
	TLSConfig *tls.Config
	// Service is the endpoint service whose address requests go to ("rest").
	Service string
	// Hosts are the names the application writes for the broker in its URLs
	// instead of an endpoint's own address, for example "broker" in
	// https://broker/v1/orders. A request for one of them, or for an
	// endpoint's own host, is sent to the active endpoint (scheme, host and
	// base path rewritten). A name without a port matches it with any port.
	// A request for any other host never goes to the broker: it is refused
	// with ErrForeignHost, or sent through Other when set.
	Hosts []string
	// Other, when set, carries requests for hosts that are not the broker's
	// (see Hosts) unchanged: no path, gate, breaker or rewriting. For example
	// http.DefaultTransport. Nil: such requests are refused.
	Other http.RoundTripper
	// Rules say which requests are orders by method and path (AlpacaRules,
	// BinanceSpotRules, or your broker's), so that cancel-all, a login or a
	// stream token request need no WithSubmission(ctx, false). A request no
	// rule matches is an order unless its method is GET, HEAD or OPTIONS; a
	// context from WithSubmission overrides the rules per request. See Rules
	// for the order in which a request is classified.
	Rules Rules
	// OrderID finds a submission's client order ID; nil means DefaultOrderID.
	OrderID OrderIDFunc
	// ReadIdleTimeout: after this long without a frame on an HTTP/2 connection, a
	// ping is sent. Default 1 s.
	ReadIdleTimeout time.Duration
	// PingTimeout: a ping unanswered this long closes the connection. Default 1 s.
	PingTimeout time.Duration
	// DisableHTTP2 speaks HTTP/1.1 only, even to a server that offers HTTP/2
	// (for a gateway whose HTTP/2 misbehaves). Default false: HTTP/2 where
	// offered.
	DisableHTTP2 bool
	// ResponseHeaderTimeout bounds the wait for response headers after the request
	// is written; 0 means none (use request contexts).
	ResponseHeaderTimeout time.Duration
	// MaxIdleConnsPerHost for each endpoint's pool. Default 16.
	MaxIdleConnsPerHost int
	// Breaker configures the read breakers. Zero fields take gobreaker's meaning,
	// except ReadyToTrip, which defaults to 5 consecutive failures, and Timeout,
	// which defaults to 5 s. Reconcile lookups (WithReconcile) bypass the
	// breakers; one that succeeds closes its endpoint's breaker, and
	// OnStateChange is told. With the default ReadyToTrip and IsSuccessful,
	// a read on an endpoint whose breaker is closed and has counted no
	// failure since its last success goes out without passing through it
	// (a success there changes nothing the breaker decides by); a failure
	// is always counted. A ReadyToTrip of your own sees every read.
	Breaker gobreaker.Settings
	// TokenHeader, when set, names a header that carries the fencing token of
	// the ticket each submission was granted under (pathdialer.Ticket.Token,
	// in decimal), so a broker or gateway that checks tokens refuses a writer
	// whose decision has been superseded. For example "X-Fencing-Token", the
	// header the simulated broker's token mode reads. Empty: no header.
	// Reads never carry it.
	TokenHeader string
	// Logger for request failures (URLs and headers redacted). Nil discards.
	Logger *slog.Logger

	// OnOrder, when set, is told how every order request ended, with the
	// ID it is tracked under (assigned or not) and the verdict Outcome
	// would give. It needs no access to the response or the error, so it
	// works under a broker SDK that consumes both, and under an
	// http.Client whose Timeout turns the transport's typed errors into
	// text. Called once per order request, after RoundTrip's outcome is
	// known and before it returns, on the caller's goroutine, outside any
	// lock; it must not block.
	OnOrder func(OrderEvent)
	// UnknownAsError makes an order answered 5xx come back as an
	// *UnknownOutcomeError (StatusCode set, the body discarded) instead of
	// the response, so that an SDK that turns responses into its own errors
	// cannot hide that the outcome is unknown: SDKs return http.Client.Do's
	// error as it is, and errors.As finds it. Default false: the response
	// is returned, as the RoundTripper contract asks (ask Outcome).
	UnknownAsError bool
	// GateWait bounds how long an order waits at the gate (held while the
	// Path fences, switches or reconciles) when its context allows longer;
	// past it, ErrNotSent wrapping context.DeadlineExceeded. It keeps a
	// bounded submission's errors typed where http.Client.Timeout, which
	// net/http reports as text, would not: set it (with
	// ResponseHeaderTimeout) instead of Client.Timeout for an SDK that takes
	// no context. 0: the context alone bounds the wait.
	GateWait time.Duration
}

// OrderEvent is how one order request ended (Options.OnOrder).
type OrderEvent struct {
	// OrderID is the ID the order is tracked under: its client order ID,
	// or VenueOrderID's form of the venue's own; "" when none was found.
	OrderID string
	// Assigned is true when the request carried no ID and the transport
	// assigned OrderID (Rule.AssignID).
	Assigned bool
	// Method and Path are the request's (the path as the application wrote
	// it; no query, no credentials).
	Method, Path string
	// Endpoint is the endpoint it was sent to ("" when not sent).
	Endpoint string
	// Verdict is Outcome's verdict on it.
	Verdict Verdict
}

// Transport is the http.RoundTripper. Create it with NewTransport.
type Transport struct {
	// What every request reads, together at the start (a request that finds
	// these in few cache lines costs less when the caches have gone cold
	// between requests).
	path     *pathdialer.Path
	orderID  OrderIDFunc
	epList   []*endpointClient // the endpoints, for endpoint (few: a scan beats a map)
	service  string
	tokenKey string   // canonical Options.TokenHeader
	logical  []string // Options.Hosts, lower-cased
	hasRules bool     // Options.Rules has a rule
	// cleanReads: the read breakers trip on consecutive failures (the default
	// ReadyToTrip and IsSuccessful), so a success on an endpoint whose breaker
	// is closed and has counted no failure changes nothing they decide by.
	cleanReads bool
	epoch      time.Time // for mono
	// acquire is path.AcquireInto; tests wrap it to hand out tickets whose
	// decision has lapsed.
	acquire func(ctx context.Context, t *pathdialer.Ticket, service, orderID string) error
	// tickets holds Tickets that finished with Done, for AcquireInto to refill
	// (one allocation less per order). A ticket finished with Unknown belongs
	// to reconciliation and is never put back.
	tickets sync.Pool

	opts     Options
	log      *slog.Logger
	eps      map[string]*endpointClient
	hostToEP map[string]*endpointClient
	// The counters, written by every request from every core, on cache lines
	// of their own: beside the fields above, which every request reads, each
	// write would evict those from the other cores' caches.
	_     [128]byte
	stats Stats
	_     [128]byte
}

var _ http.RoundTripper = (*Transport)(nil)

type endpointClient struct {
	name string
	base *url.URL
	t1   *http.Transport
	// breaker guards the application's reads; replaced by a closed one when
	// a reconcile read succeeds while it is not closed (closeBreaker).
	breaker atomic.Pointer[gobreaker.CircuitBreaker[*http.Response]]
	// okAt is when (Transport.mono, +1) a success on this endpoint was last
	// passed to the Path; 0 after a failure was passed, or before any report.
	okAt atomic.Int64
	// readFailed is set by every failed application read and cleared by a
	// success that found the read breaker closed with no failure counted
	// (see Transport.read).
	readFailed atomic.Bool
	// checkT carries the trade-path checks of this endpoint (checkRead),
	// made on first use.
	checkOnce sync.Once
	checkT    *http.Transport
}

// okThin is how close together two successes on one endpoint may be passed to
// the Path. Under load a transport sees thousands a second; the Path records
// at most one per two milliseconds on a healthy endpoint anyway, and each
// report costs a trip through the Path's shared state. Failures are always
// passed, and so is the first success after one.
const okThin = time.Millisecond

// lap starts timing a request on ec: its start (Transport.mono) and whether
// a success would be due to be passed to the Path, that is, whether none
// was passed in the last okThin and no failure since. Only a request whose
// success is due, or that fails, reads the clock again when it ends (under
// load, most requests read it once).
func (t *Transport) lap(ec *endpointClient) (start time.Duration, due bool) {
	start = t.mono()
	last := ec.okAt.Load()
	return start, last == 0 || int64(start)+1-last >= int64(okThin)
}

// reportOK passes a success that began at start (Transport.mono), ending
// now, to the Path, unless one was passed less than okThin before it and no
// failure since (concurrent requests found it due together).
func (t *Transport) reportOK(ec *endpointClient, gen uint64, start time.Duration) {
	end := t.mono()
	now := int64(end) + 1
	if last := ec.okAt.Load(); last != 0 && now-last < int64(okThin) {
		return
	}
	ec.okAt.Store(now)
	t.path.Report(ec.name, gen, nil, end-start)
}

// reportFailed passes the transport error of a request that began at start
// to the Path, unless it says nothing about the endpoint: the request's own
// context ended, or the server retired the connection gracefully (goneAway).
func (t *Transport) reportFailed(ec *endpointClient, gen uint64, req *http.Request, err error, start time.Duration) {
	if req.Context().Err() != nil || goneAway(err) {
		return
	}
	t.reportErr(ec, gen, err, t.mono()-start)
}

// reportErr passes a failure to the Path; the next success is passed too.
func (t *Transport) reportErr(ec *endpointClient, gen uint64, err error, lat time.Duration) {
	ec.okAt.Store(0)
	t.path.Report(ec.name, gen, err, lat)
}

// Stats counts requests by kind and outcome.
type Stats struct {
	// Reads counts reads sent or refused; each ends as a success (a response
	// below 500), a failure (a transport error or 5xx) or a breaker rejection.
	Reads, ReadSuccesses, ReadFailures, BreakerRejections atomic.Uint64
	// Submissions counts orders; each ends acknowledged (the broker answered
	// below 500), unknown, not sent (NotSent also counts an order refused
	// for want of an ID, ErrNoOrderID), or refused while halted.
	Submissions, Acknowledged, Unknown, NotSent, Halted atomic.Uint64
}

// NewTransport returns a RoundTripper that routes every request over path. It
// validates opts and every endpoint's address for the service.
func NewTransport(path *pathdialer.Path, opts Options) (*Transport, error) {
	if path == nil {
		return nil, optionsError("path", "", "path is nil")
	}
	if opts.TLSConfig != nil && opts.TLSConfig.InsecureSkipVerify {
		return nil, optionsError("TLSConfig.InsecureSkipVerify", "", "TLSConfig.InsecureSkipVerify is refused: an order path must verify the broker")
	}
	if opts.Service == "" {
		opts.Service = pathdialer.ServiceREST
	}
	if opts.ReadIdleTimeout < 0 || opts.PingTimeout < 0 || opts.ResponseHeaderTimeout < 0 || opts.MaxIdleConnsPerHost < 0 || opts.GateWait < 0 {
		return nil, optionsError("ReadIdleTimeout, PingTimeout, ResponseHeaderTimeout, MaxIdleConnsPerHost and GateWait", "", "negative timeout or pool size")
	}
	if opts.ReadIdleTimeout == 0 {
		opts.ReadIdleTimeout = time.Second
	}
	if opts.PingTimeout == 0 {
		opts.PingTimeout = time.Second
	}
	if opts.MaxIdleConnsPerHost == 0 {
		opts.MaxIdleConnsPerHost = 16
	}
	if opts.TokenHeader != "" && !validHeaderName(opts.TokenHeader) {
		return nil, optionsError("TokenHeader", "", "TokenHeader %q is not a valid HTTP header name", opts.TokenHeader)
	}
	if err := opts.Rules.validate(); err != nil {
		return nil, err
	}
	var logical []string
	for i, h := range opts.Hosts {
		if h == "" || strings.ContainsAny(h, "/@?# \t") {
			return nil, optionsError(fmt.Sprintf("Hosts[%d]", i), "", "Hosts[%d] %q must be a host name (optionally with :port), without scheme or path", i, h)
		}
		logical = append(logical, strings.ToLower(h))
	}
	t := &Transport{
		epoch:    time.Now(),
		path:     path,
		opts:     opts,
		log:      opts.Logger,
		service:  opts.Service,
		orderID:  opts.OrderID,
		eps:      make(map[string]*endpointClient),
		hostToEP: make(map[string]*endpointClient),
		logical:  logical,
		hasRules: len(opts.Rules.Orders)+len(opts.Rules.NotOrders) > 0,
		// Interval, BucketPeriod, Timeout and MaxRequests only change when the
		// counts are cleared and how an open breaker recovers: neither is
		// reached by a success on a closed breaker with no failure counted.
		cleanReads: opts.Breaker.ReadyToTrip == nil && opts.Breaker.IsSuccessful == nil,
	}
	if opts.TokenHeader != "" {
		t.tokenKey = textproto.CanonicalMIMEHeaderKey(opts.TokenHeader)
	}
	t.acquire = path.AcquireInto
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.orderID == nil {
		t.orderID = DefaultOrderID
	}
	for i, ep := range path.Endpoints() {
		field := fmt.Sprintf("Endpoints[%d].Services[%q]", i, opts.Service)
		addr, ok := ep.Address(opts.Service)
		if !ok {
			return nil, optionsError(field, ep.Name, "endpoint %q has no %q address", ep.Name, opts.Service)
		}
		base, err := url.Parse(addr)
		if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
			return nil, optionsError(field, ep.Name, "endpoint %q: %q address must be an http(s) URL with a host", ep.Name, opts.Service)
		}
		base.Path = strings.TrimSuffix(base.Path, "/")
		ec := &endpointClient{name: ep.Name, base: base, t1: t.newHTTPTransport(ep.Name)}
		ec.breaker.Store(gobreaker.NewCircuitBreaker[*http.Response](t.breakerSettings(ep.Name)))
		t.eps[ep.Name] = ec
		t.epList = append(t.epList, ec)
		t.hostToEP[strings.ToLower(base.Host)] = ec
	}
	return t, nil
}

func (t *Transport) newHTTPTransport(endpoint string) *http.Transport {
	var tlsCfg *tls.Config
	if t.opts.TLSConfig != nil {
		tlsCfg = t.opts.TLSConfig.Clone()
	} else {
		tlsCfg = &tls.Config{}
	}
	// An empty ServerName is set by net/http from the endpoint URL's host; a
	// user-supplied one is kept (verification is never skipped either way).
	h1 := &http.Transport{
		DialContext:           t.path.EndpointDialer(endpoint),
		TLSClientConfig:       tlsCfg,
		ForceAttemptHTTP2:     !t.opts.DisableHTTP2,
		MaxIdleConnsPerHost:   t.opts.MaxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: t.opts.ResponseHeaderTimeout,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: t.opts.ReadIdleTimeout,
			PingTimeout:     t.opts.PingTimeout,
		},
	}
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetHTTP2(!t.opts.DisableHTTP2)
	h1.Protocols = &protos
	return h1
}

func (t *Transport) breakerSettings(endpoint string) gobreaker.Settings {
	s := t.opts.Breaker
	s.Name = "rest/" + endpoint
	if s.ReadyToTrip == nil {
		s.ReadyToTrip = func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 5 }
	}
	if s.Timeout == 0 {
		s.Timeout = 5 * time.Second
	}
	if s.IsExcluded == nil {
		s.IsExcluded = func(err error) bool { return errors.Is(err, context.Canceled) }
	}
	return s
}

// endpoint returns the named endpoint's client. The names come from the
// Path's configuration, the same strings the clients were made with, so the
// comparison is usually decided by their pointers.
func (t *Transport) endpoint(name string) *endpointClient {
	for _, ec := range t.epList {
		if ec.name == name {
			return ec
		}
	}
	return t.eps[name] // not reached: the Path names only its endpoints
}

// mono reads the monotonic clock only (time.Now reads the wall clock too): a
// request's latency is the difference of two readings.
func (t *Transport) mono() time.Duration { return time.Since(t.epoch) }

// BreakerState returns the state of an endpoint's read breaker.
func (t *Transport) BreakerState(endpoint string) (gobreaker.State, bool) {
	ec, ok := t.eps[endpoint]
	if !ok {
		return 0, false
	}
	return ec.breaker.Load().State(), true
}

// closeBreaker closes the endpoint's read breaker after a reconcile read on it
// succeeded: that read is the trial a half-open breaker would have let through,
// and it passed. The close is reported to Breaker.OnStateChange.
func (t *Transport) closeBreaker(ec *endpointClient) {
	cb := ec.breaker.Load()
	from := cb.State()
	if from == gobreaker.StateClosed {
		return
	}
	if ec.breaker.CompareAndSwap(cb, gobreaker.NewCircuitBreaker[*http.Response](t.breakerSettings(ec.name))) {
		if f := t.opts.Breaker.OnStateChange; f != nil {
			f(cb.Name(), from, gobreaker.StateClosed)
		}
	}
}

// Stats returns the transport's counters.
func (t *Transport) Stats() *Stats { return &t.stats }

// CloseIdleConnections closes idle connections of every endpoint.
func (t *Transport) CloseIdleConnections() {
	for _, ec := range t.eps {
		ec.t1.CloseIdleConnections()
	}
}

// RoundTrip sends req over the path. See the package documentation for what it
// guarantees for submissions and reads. It keeps the http.RoundTripper
// contract: whenever the broker answered, the response is returned with a nil
// error, 5xx included (an order answered 5xx is also handed to
// reconciliation; ask Outcome). Errors never carry the request's credentials.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.roundTrip(req)
	if err != nil {
		return nil, scrub(err, req.URL)
	}
	return resp, nil
}

func (t *Transport) roundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, fmt.Errorf("%w: request has no URL", ErrInvalidOptions)
	}
	src, ok := t.brokerHost(req.URL.Host)
	if !ok && !markedReconcile(req) {
		if t.opts.Other != nil {
			resp, err := t.opts.Other.RoundTrip(req)
			if err != nil {
				return nil, RedactError(err)
			}
			return resp, nil
		}
		closeBody(req)
		return nil, fmt.Errorf("%w: %s %s: %q is neither an endpoint's host nor in Options.Hosts (add the name your URLs use for the broker to Options.Hosts, or set Options.Other to send other hosts elsewhere)",
			ErrForeignHost, req.Method, redactURL(req.URL), req.URL.Host)
	}
	switch kind, rule := t.classify(req, src); kind {
	case kindSubmission:
		return t.submit(req, rule)
	case kindReconcile:
		return t.read(req, true)
	}
	return t.read(req, false)
}

// brokerHost reports whether host (as a URL writes it) is the broker's: an
// endpoint's own host (then src is that endpoint) or a name in Options.Hosts.
func (t *Transport) brokerHost(host string) (src *endpointClient, ok bool) {
	for _, ec := range t.epList {
		if host == ec.base.Host || strings.EqualFold(host, ec.base.Host) {
			return ec, true
		}
	}
	if len(t.logical) == 0 || host == "" {
		return nil, false
	}
	name := host
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		name = host[:i]
	}
	for _, h := range t.logical {
		if strings.EqualFold(host, h) {
			return nil, true
		}
		if name != host && strings.EqualFold(name, h) && !strings.Contains(strings.TrimPrefix(h, "["), ":") {
			return nil, true // a name without a port matches any port
		}
	}
	return nil, false
}

// aimed reports whether r already goes to the endpoint exactly as aim would
// send it (the application wrote the endpoint's own URL): no copy is needed.
func aimed(r *http.Request, ec *endpointClient) bool {
	u := r.URL
	return u.Host == ec.base.Host && u.Scheme == ec.base.Scheme && u.User == nil && u.RawPath == "" &&
		(r.Host == "" || r.Host == u.Host) && strings.HasPrefix(u.Path, ec.base.Path)
}

// aim points r (the transport's own copy) at the endpoint. The application may
// have written any endpoint's URL (its base path is then stripped) or a logical
// host.
func (t *Transport) aim(r *http.Request, ec *endpointClient) {
	if aimed(r, ec) {
		return // r.Host is empty or the endpoint's own: the same Host header
	}
	p := r.URL.Path
	if src, ok := t.hostToEP[strings.ToLower(r.URL.Host)]; ok && src.base.Path != "" {
		p = strings.TrimPrefix(p, src.base.Path)
	}
	u := *r.URL
	u.Scheme = ec.base.Scheme
	u.Host = ec.base.Host
	u.User = nil
	u.Path = ec.base.Path + p
	u.RawPath = ""
	r.URL = &u
	r.Host = ""
}

// read sends a read. An application read goes through the endpoint's read
// breaker; a reconcile read bypasses it (neither refused nor counted) and, when
// it succeeds, closes it.
func (t *Transport) read(req *http.Request, reconcile bool) (*http.Response, error) {
	ep, gen := t.path.ReadEndpoint() // the active endpoint, or the degraded mode's read endpoint
	ec := t.endpoint(ep.Name)
	r2 := req // net/http does not modify it; copied only when it must be re-aimed
	if !aimed(req, ec) {
		r2 = new(http.Request)
		*r2 = *req
		t.aim(r2, ec)
	}
	t.stats.Reads.Add(1)
	start, due := t.lap(ec)
	var resp *http.Response
	var err error
	switch {
	case reconcile:
		resp, err = roundTripRead(ec.t1, r2)
	case t.cleanReads && !ec.readFailed.Load():
		// The breaker is closed and has counted no failure: a success would
		// change nothing it decides by, so the read goes straight out (no
		// lock or clock of the breaker's on every read, which cost the most
		// when reads run on several cores). A failure is counted in the
		// breaker as Execute counts it, and the reads after it pass through
		// the breaker until one succeeds and finds it clean again. (A
		// success that raced the first failure goes uncounted: the breaker
		// may then trip one consecutive failure early, never late.)
		resp, err = roundTripRead(ec.t1, r2)
		if err != nil {
			ec.readFailed.Store(true)
			_, _ = ec.breaker.Load().Execute(func() (*http.Response, error) { return resp, err })
		}
	default:
		cb := ec.breaker.Load()
		resp, err = cb.Execute(func() (*http.Response, error) { return roundTripRead(ec.t1, r2) })
		if err == nil && t.cleanReads && cb.State() == gobreaker.StateClosed && cb.Counts().ConsecutiveFailures == 0 {
			ec.readFailed.Store(false)
		}
	}
	switch {
	case errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests):
		closeBody(req)
		t.stats.BreakerRejections.Add(1)
		return nil, fmt.Errorf("%w: endpoint %q (%s)", ErrBreakerOpen, ec.name, err)
	case errors.Is(err, errServerStatus):
		t.reportErr(ec, gen, fmt.Errorf("rest: HTTP %d", resp.StatusCode), t.mono()-start)
		t.stats.ReadFailures.Add(1)
		return resp, nil
	case err != nil:
		t.reportFailed(ec, gen, req, err, start)
		t.stats.ReadFailures.Add(1)
		err = RedactError(err)
		t.log.Debug("rest: read failed", "endpoint", ec.name, "url", redactURL(r2.URL), "err", err)
		return nil, fmt.Errorf("rest: read on endpoint %q: %w", ec.name, err)
	}
	if due {
		t.reportOK(ec, gen, start)
	}
	t.stats.ReadSuccesses.Add(1)
	if reconcile {
		t.closeBreaker(ec)
	}
	return resp, nil
}

// checkRoundTripper sends every request to one endpoint with checkRead.
type checkRoundTripper struct {
	t  *Transport
	ec *endpointClient
}

func (c checkRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	return c.t.checkRead(c.ec, req)
}

// checkClient returns a client whose requests go to the named endpoint,
// whichever is active, through checkRead; false when the Transport has no
// such endpoint.
func (t *Transport) checkClient(endpoint string) (*http.Client, bool) {
	ec, ok := t.eps[endpoint]
	if !ok {
		return nil, false
	}
	return &http.Client{Transport: checkRoundTripper{t, ec},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, true
}

// checkRead sends a read (a trade-path check) to ec, whichever endpoint is
// active, on a fresh connection that the Path tracks and allows while ec is
// fenced (Path.DialReadOnly): the check proves that a new connection through
// the endpoint's path is made, authenticated and answered. It passes no
// breaker and reports nothing to the Path: the Path records the check's
// result itself.
func (t *Transport) checkRead(ec *endpointClient, req *http.Request) (*http.Response, error) {
	ec.checkOnce.Do(func() {
		ec.checkT = t.newHTTPTransport(ec.name)
		ec.checkT.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := t.path.DialReadOnly(ctx, ec.name, network, addr)
			if err != nil {
				return nil, err
			}
			return c, nil
		}
		ec.checkT.DisableKeepAlives = true
	})
	r2 := new(http.Request)
	*r2 = *req
	t.aim(r2, ec)
	resp, err := ec.checkT.RoundTrip(r2)
	if err != nil {
		return nil, scrub(err, req.URL)
	}
	return resp, nil
}

// roundTripRead sends a read; a 5xx answer is returned with errServerStatus.
func roundTripRead(t1 *http.Transport, r *http.Request) (*http.Response, error) {
	resp, err := t1.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 500 {
		return resp, errServerStatus
	}
	return resp, nil
}

var errServerStatus = errors.New("rest: server error status")

// noReplayBody stands in for an absent submission body: net/http replays a
// request without a body (Request.isReplayable, and HTTP/2's retry) when it
// carries an Idempotency-Key header, never one with a body and no GetBody.
type noReplayBody struct{ io.ReadCloser }

// submit sends an order; rule is the Orders rule that matched it, if any.
func (t *Transport) submit(req *http.Request, rule *Rule) (*http.Response, error) {
	if t.opts.OnOrder == nil {
		return t.submitOrder(req, rule, nil)
	}
	ev := OrderEvent{Method: req.Method, Path: req.URL.Path}
	resp, err := t.submitOrder(req, rule, &ev)
	if err != nil {
		ev.Verdict = Outcome(nil, err)
	} else {
		ev.Verdict = Outcome(resp, nil)
	}
	t.opts.OnOrder(ev)
	return resp, err
}

// noOrderID is the refusal of an order request without an ID: what would
// identify it, and the rule to add.
func (t *Transport) noOrderID(req *http.Request, rule *Rule) error {
	u := redactURL(req.URL)
	if rule != nil {
		want := rule.Want
		if want == "" {
			want = "an order ID that Rule.OrderID finds"
		}
		return fmt.Errorf("%w: %s %s matches the order rule {%s %q} but carries no ID: it needs %s", ErrNoOrderID, req.Method, u, rule.Method, rule.Path, want)
	}
	if t.hasRules {
		return fmt.Errorf("%w: %s %s matches no rule and carries no client order ID: if it is not an order, add rest.Rule{Method: %q, Path: %q} to Options.Rules.NotOrders; if it is, add it to Options.Rules.Orders with the Rule.OrderID that finds its ID",
			ErrNoOrderID, req.Method, u, req.Method, req.URL.Path)
	}
	return fmt.Errorf("%w: %s %s (set Options.OrderID, or send X-Client-Order-ID; if it is not an order, add rest.Rule{Method: %q, Path: %q} to Options.Rules.NotOrders)", ErrNoOrderID, req.Method, u, req.Method, req.URL.Path)
}

func (t *Transport) submitOrder(req *http.Request, rule *Rule, ev *OrderEvent) (*http.Response, error) {
	// Our own copy: GetBody cleared, so that neither net/http's HTTP/1 nor its
	// HTTP/2 transport can send the body twice. The body itself is passed on as
	// the caller made it (an in-memory reader stays one, so HTTP/1 writes
	// headers and body together).
	r3 := new(http.Request)
	*r3 = *req
	r3.GetBody = nil
	find := t.orderID
	if rule != nil && rule.OrderID != nil {
		find = rule.OrderID
	}
	orderID, err := find(r3)
	if err != nil {
		closeBody(r3)
		return nil, err
	}
	assigned := false
	if strings.TrimSpace(orderID) == "" && rule != nil && rule.AssignID != nil {
		orderID, assigned = "bp-"+strings.ToLower(rand.Text()), true
		body := r3.Body
		if err := rule.AssignID(r3, orderID); err != nil {
			closeBody(r3)
			if body != r3.Body {
				_ = body.Close()
			}
			t.stats.Submissions.Add(1)
			t.stats.NotSent.Add(1)
			return nil, fmt.Errorf("%w: %s %s: %w", ErrNoOrderID, req.Method, redactURL(req.URL), err)
		}
		if body != nil && body != r3.Body {
			_ = body.Close()
		}
	}
	if ev != nil {
		ev.OrderID, ev.Assigned = orderID, assigned
	}
	t.stats.Submissions.Add(1)
	if strings.TrimSpace(orderID) == "" {
		closeBody(r3)
		t.stats.NotSent.Add(1)
		return nil, t.noOrderID(req, rule)
	}
	ticket, _ := t.tickets.Get().(*pathdialer.Ticket)
	if ticket == nil {
		ticket = new(pathdialer.Ticket)
	}
	actx := req.Context()
	if t.opts.GateWait > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(actx, t.opts.GateWait)
		defer cancel()
	}
	if err := t.acquire(actx, ticket, t.service, orderID); err != nil {
		t.tickets.Put(ticket) // not a ticket after a failed AcquireInto: refillable
		closeBody(r3)
		if errors.Is(err, pathdialer.ErrTradingHalted) {
			t.stats.Halted.Add(1)
		} else {
			t.stats.NotSent.Add(1) // its context or GateWait ended at the gate, or the ticket was refused
		}
		return nil, fmt.Errorf("%w: order %q: %w", ErrNotSent, orderID, err)
	}
	ec := t.endpoint(ticket.Endpoint)
	if ev != nil {
		ev.Endpoint = ec.name
	}
	t.aim(r3, ec)
	r3.GetBody = nil // an OrderIDFunc may have set it
	if r3.Body == nil || r3.Body == http.NoBody {
		r3.Body = noReplayBody{http.NoBody}
	}
	if t.tokenKey != "" {
		r3.Header = r3.Header.Clone()
		if r3.Header == nil {
			r3.Header = make(http.Header, 1)
		}
		r3.Header[t.tokenKey] = []string{strconv.FormatUint(ticket.Token, 10)}
	}
	// The last moment before the request is handed to net/http: a decision
	// that lapsed while we waited (a paused process, an expired lease) must
	// not write an order.
	if err := ticket.Valid(); err != nil {
		ticket.Done()
		t.tickets.Put(ticket)
		closeBody(r3)
		t.stats.NotSent.Add(1)
		return nil, fmt.Errorf("%w: order %q on endpoint %q: %w", ErrNotSent, orderID, ec.name, err)
	}
	start, due := t.lap(ec)
	resp, err := ec.t1.RoundTrip(r3)
	if err != nil {
		cause := RedactError(err)
		t.reportFailed(ec, ticket.Token, req, err, start)
		if neverSent(err) {
			ticket.Done() // nothing reached the broker
			t.tickets.Put(ticket)
			t.stats.NotSent.Add(1)
			return nil, fmt.Errorf("%w: order %q on endpoint %q: %w", ErrNotSent, orderID, ec.name, cause)
		}
		uerr := &UnknownOutcomeError{OrderID: orderID, Endpoint: ec.name, Token: ticket.Token, Cause: cause}
		ticket.Unknown(uerr)
		t.stats.Unknown.Add(1)
		t.log.Warn("rest: order outcome unknown", "order", orderID, "endpoint", ec.name, "err", cause)
		return nil, uerr
	}
	if resp.StatusCode >= 500 {
		// Binance's guidance holds for brokers in general: on a 5xx "the execution
		// status is UNKNOWN and could have been a success". The answer is the
		// caller's, body and all (the broker's own words); the order goes to
		// reconciliation, and Outcome(resp, nil) says so. The body is read
		// first (up to 64 KiB; a longer one keeps its rest to be read), so
		// the connection is free before reconciliation can begin.
		bufferBody(resp)
		t.reportErr(ec, ticket.Token, fmt.Errorf("rest: HTTP %d", resp.StatusCode), t.mono()-start)
		uerr := &UnknownOutcomeError{OrderID: orderID, Endpoint: ec.name, Token: ticket.Token, StatusCode: resp.StatusCode}
		ticket.Unknown(uerr)
		t.stats.Unknown.Add(1)
		t.log.Warn("rest: order outcome unknown", "order", orderID, "endpoint", ec.name, "status", resp.StatusCode)
		if t.opts.UnknownAsError {
			_ = resp.Body.Close()
			return nil, uerr
		}
		markUnknown(resp, r3, uerr)
		return resp, nil
	}
	if due {
		t.reportOK(ec, ticket.Token, start)
	}
	ticket.Done()
	t.tickets.Put(ticket)
	t.stats.Acknowledged.Add(1)
	return resp, nil
}

// bufferBody reads resp's body into memory, up to 64 KiB, and leaves resp
// with the same bytes to read: a short body's connection is released at once.
func bufferBody(resp *http.Response) {
	const max = 64 << 10
	body := resp.Body
	buf, err := io.ReadAll(io.LimitReader(body, max))
	switch {
	case err != nil:
		_ = body.Close()
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(buf), errReader{err}))
	case len(buf) < max:
		_ = body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(buf))
	default:
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(buf), body), body}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

type readCloser struct {
	io.Reader
	io.Closer
}

// goneAway reports whether err is net/http's HTTP/2 client failing a request
// because the server retired its connection gracefully (GOAWAY with
// NO_ERROR; a submission cannot be retried, its body not being rewindable):
// what is going away is that connection, which a load balancer retires as a
// matter of course, not the endpoint, which new connections reach (one that
// cannot be reached fails the next dial and the probes). Such an error is not
// passed to the Path as a failure. net/http gives it only as text (it formats
// the cause into a new error), so it is recognised by its text.
func goneAway(err error) bool {
	return strings.Contains(err.Error(), "graceful shutdown GOAWAY")
}

// neverSent reports whether err proves that no byte of the request reached the
// broker: the connection could not be made (dial refused, fenced endpoint, TLS
// handshake failed). Anything else after a connection existed is an unknown
// outcome. (A request-level trace would tell more precisely, at several µs per
// request; this errs only towards "unknown", which reconciliation settles.)
func neverSent(err error) bool {
	if errors.Is(err, pathdialer.ErrFenced) || errors.Is(err, pathdialer.ErrClosed) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var (
		rh   tls.RecordHeaderError
		cv   *tls.CertificateVerificationError
		ua   x509.UnknownAuthorityError
		hn   x509.HostnameError
		cinv x509.CertificateInvalidError
	)
	return errors.As(err, &rh) || errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &cinv)
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
