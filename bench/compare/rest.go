package compare

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/fallback"
	"github.com/failsafe-go/failsafe-go/timeout"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

func tlsConfig(caPEM []byte) *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// innerTransport is the transport every REST peer gets: TLS with the broker's
// CA, 16 idle connections per host, HTTP/2 (h1 false) or HTTP/1.1 only.
func innerTransport(caPEM []byte, h1 bool) *http.Transport {
	t := &http.Transport{
		TLSClientConfig:     tlsConfig(caPEM),
		ForceAttemptHTTP2:   !h1,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetHTTP2(!h1)
	t.Protocols = &protos
	return t
}

// restClient places one order and says which region booked it (X-Region).
type restClient struct {
	order func(ctx context.Context, id string) (region string, err error)
	close func()
}

// restPeer is one row of a REST table: a client library on one protocol.
type restPeer struct {
	name     string // the library, e.g. "failsafe-go failsafehttp v0.9.8"
	proto    string // "HTTP/2" or "HTTP/1.1"
	bp       bool   // brokerpath's row (the × bp reference for its protocol)
	settings string // the settings cell
	config   string // how it is built (the notes)
	build    func(a brokerAddrs) (*restClient, error)
}

func (p restPeer) row() string { return p.name + " (" + p.proto + ")" }

func orderBody(id string) string {
	return `{"client_order_id":"` + id + `","symbol":"EURUSD","side":"buy","qty":"1","type":"market"}`
}

// doOrder sends one order with c and reads the answer.
func doOrder(ctx context.Context, c *http.Client, base, key, id string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/orders", strings.NewReader(orderBody(id)))
	if err != nil {
		return "", err
	}
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	return finish(resp)
}

func finish(resp *http.Response) (string, error) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	return resp.Header.Get("X-Region"), nil
}

func hostOf(raw string) string {
	u, _ := url.Parse(raw)
	return u.Host
}

const (
	nameBare      = "net/http bare Transport"
	nameFailsafe  = "failsafe-go failsafehttp v0.9.8"
	nameRetryable = "hashicorp/go-retryablehttp v0.7.8"
	nameBP        = "brokerpath rest.Transport"
)

// restPeers returns the rows of the equal-budget table: each library over
// HTTP/2 and over HTTP/1.1, with s's settings.
func restPeers(s Settings) []restPeer {
	var out []restPeer
	for _, h1 := range []bool{false, true} {
		proto := map[bool]string{false: "HTTP/2", true: "HTTP/1.1"}[h1]
		out = append(out,
			restPeer{
				name:     nameBare,
				proto:    proto,
				settings: fmt.Sprintf("%s per order, one URL (A), no retry", ms(s.PeerAttemptTimeout)),
				config:   fmt.Sprintf("one base URL (primary); http.Client.Timeout %s; no retry", ms(s.PeerAttemptTimeout)),
				build: func(a brokerAddrs) (*restClient, error) {
					tr := innerTransport(a.CAPEM, h1)
					c := &http.Client{Transport: tr, Timeout: s.PeerAttemptTimeout}
					base := a.Regions[0].REST
					return &restClient{
						order: func(ctx context.Context, id string) (string, error) { return doOrder(ctx, c, base, a.APIKey, id) },
						close: tr.CloseIdleConnections,
					}, nil
				},
			},
			failsafePeer(s, h1, proto),
			retryablePeer(s, h1, proto),
			restPeer{
				name:     nameBP,
				proto:    proto,
				bp:       true,
				settings: s.bpCell() + fmt.Sprintf("; %s per order", ms(s.OrderTimeout)),
				config: fmt.Sprintf("Path over both regions (rest.Probe on ProbeURL/v1/account with the key, every %s, timeout %s, DOWN after %d, "+
					"LocalFenceOnly, rest.Reconciler GET /v1/orders/{client_order_id}); per-order context %s; orders never retried",
					ms(s.ProbeInterval), ms(s.ProbeTimeout), s.FailureThreshold, ms(s.OrderTimeout)),
				build: func(a brokerAddrs) (*restClient, error) { return buildBrokerpathREST(a, s, h1, s.OrderTimeout) },
			},
			restPeer{
				name:     fmt.Sprintf("%s, %s per order", nameBP, ms(s.PeerAttemptTimeout)),
				proto:    proto,
				settings: s.bpCell() + fmt.Sprintf("; %s per order (the peers' attempt timeout)", ms(s.PeerAttemptTimeout)),
				config: fmt.Sprintf("the same Path, with the peers' %s per order: a timed-out order is an unknown outcome, reconciled and never resent; "+
					"the caller's own deadline is not reported as a path failure, so detection stays with the probes", ms(s.PeerAttemptTimeout)),
				build: func(a brokerAddrs) (*restClient, error) { return buildBrokerpathREST(a, s, h1, s.PeerAttemptTimeout) },
			},
		)
	}
	return out
}

// defaultsPeers returns the rows of the second table: the peers that fail
// over, at their own defaults (s = Settings.PeerDefaults), over HTTP/2.
func defaultsPeers(s Settings) []restPeer {
	return []restPeer{failsafePeer(s, false, "HTTP/2"), retryablePeer(s, false, "HTTP/2")}
}

func failsafePeer(s Settings, h1 bool, proto string) restPeer {
	return restPeer{
		name:     nameFailsafe,
		proto:    proto,
		settings: s.failsafeCell(),
		config: fmt.Sprintf("NewRoundTripper(Fallback→backup URL, failsafehttp RetryPolicy (%d retries, delay %s, Retry-After), "+
			"CircuitBreaker (%d failures, 5 s open), Timeout %s per attempt)", s.FailsafeAttempts-1, ms(s.FailsafeDelay), s.FailsafeBreaker, ms(s.PeerAttemptTimeout)),
		build: func(a brokerAddrs) (*restClient, error) { return buildFailsafe(a, s, h1) },
	}
}

type retryCountKey struct{}

func retryablePeer(s Settings, h1 bool, proto string) restPeer {
	return restPeer{
		name:     nameRetryable,
		proto:    proto,
		settings: s.retryableCell(),
		config: fmt.Sprintf("NewClient (RetryMax %d, DefaultRetryPolicy, DefaultBackoff) with waits %s–%s between attempts; HTTPClient Timeout %s per attempt; "+
			"PrepareRetry aims retry %d and later at the backup URL", s.retryMax(), ms(s.RetryableWaitMin), ms(s.RetryableWaitMax), ms(s.PeerAttemptTimeout), s.RetryableAttempts),
		build: func(a brokerAddrs) (*restClient, error) {
			tr := innerTransport(a.CAPEM, h1)
			rc := retryablehttp.NewClient()
			rc.HTTPClient = &http.Client{Transport: tr, Timeout: s.PeerAttemptTimeout}
			rc.RetryWaitMin, rc.RetryWaitMax = s.RetryableWaitMin, s.RetryableWaitMax
			rc.RetryMax = s.retryMax()
			rc.Logger = nil
			backup := hostOf(a.Regions[1].REST)
			rc.PrepareRetry = func(r *http.Request) error {
				n, _ := r.Context().Value(retryCountKey{}).(*int)
				if n == nil {
					return errors.New("no retry counter")
				}
				*n++ // PrepareRetry runs before retry *n, one request at a time
				if *n >= s.RetryableAttempts {
					u := *r.URL
					u.Host = backup
					r.URL, r.Host = &u, ""
				}
				return nil
			}
			base := a.Regions[0].REST
			return &restClient{
				order: func(ctx context.Context, id string) (string, error) {
					ctx = context.WithValue(ctx, retryCountKey{}, new(int))
					req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/orders", strings.NewReader(orderBody(id)))
					if err != nil {
						return "", err
					}
					req.Header.Set("X-API-Key", a.APIKey)
					req.Header.Set("Content-Type", "application/json")
					resp, err := rc.Do(req)
					if err != nil {
						return "", err
					}
					return finish(resp)
				},
				close: tr.CloseIdleConnections,
			}, nil
		},
	}
}

type origReqKey struct{}

// buildFailsafe: failsafehttp's RoundTripper with a Fallback that re-issues
// the request to the backup base URL. Fallback functions do not receive the
// request, so a thin wrapper puts it in the context (what a user has to write).
func buildFailsafe(a brokerAddrs, s Settings, h1 bool) (*restClient, error) {
	inner := innerTransport(a.CAPEM, h1)
	backup := hostOf(a.Regions[1].REST)
	fb := fallback.NewWithFunc(func(exec failsafe.Execution[*http.Response]) (*http.Response, error) {
		orig, _ := exec.Context().Value(origReqKey{}).(*http.Request)
		if orig == nil {
			return nil, errors.New("fallback: no request")
		}
		ctx, cancel := context.WithTimeout(orig.Context(), s.PeerAttemptTimeout)
		r := orig.Clone(ctx)
		r.URL.Host, r.Host = backup, ""
		if orig.GetBody != nil {
			body, err := orig.GetBody()
			if err != nil {
				cancel()
				return nil, err
			}
			r.Body = body
		}
		resp, err := inner.RoundTrip(r)
		if err != nil {
			cancel()
			return nil, err
		}
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil
	})
	rpb := failsafehttp.NewRetryPolicyBuilder().WithMaxRetries(s.FailsafeAttempts - 1)
	if s.FailsafeDelay > 0 {
		rpb = rpb.WithDelay(s.FailsafeDelay)
	}
	rp := rpb.Build()
	cb := circuitbreaker.NewBuilder[*http.Response]().
		HandleIf(func(r *http.Response, err error) bool { return err != nil || (r != nil && r.StatusCode >= 500) }).
		WithFailureThreshold(uint(s.FailsafeBreaker)).WithDelay(5 * time.Second).Build()
	to := timeout.New[*http.Response](s.PeerAttemptTimeout)
	fs := failsafehttp.NewRoundTripper(inner, fb, rp, cb, to)
	c := &http.Client{Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
		return fs.RoundTrip(r.WithContext(context.WithValue(r.Context(), origReqKey{}, r)))
	})}
	base := a.Regions[0].REST
	return &restClient{
		order: func(ctx context.Context, id string) (string, error) { return doOrder(ctx, c, base, a.APIKey, id) },
		close: inner.CloseIdleConnections,
	}, nil
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error { err := b.ReadCloser.Close(); b.cancel(); return err }

func buildBrokerpathREST(a brokerAddrs, s Settings, h1 bool, perOrder time.Duration) (*restClient, error) {
	cfg, err := pathConfig(a, s, func(r regionAddrs) map[string]string { return map[string]string{"rest": r.REST} })
	if err != nil {
		return nil, err
	}
	// The REST reconciler: look every unknown order up by client order ID
	// through the new path (reads are never held by the gate).
	rec, err := rest.NewReconciler(rest.ReconcileOptions{
		URL:     a.Regions[0].REST + "/v1/orders/" + rest.OrderIDPlaceholder,
		Header:  http.Header{"X-API-Key": {a.APIKey}},
		IDField: "client_order_id",
	})
	if err != nil {
		return nil, err
	}
	cfg.Reconcile = rec.Reconcile
	p, err := pathdialer.New(cfg)
	if err != nil {
		return nil, err
	}
	tr, err := rest.NewTransport(p, rest.Options{TLSConfig: tlsConfig(a.CAPEM), DisableHTTP2: h1})
	if err != nil {
		return nil, err
	}
	rec.SendLookupsVia(tr)
	c := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	base := a.Regions[0].REST // rewritten to the active endpoint
	return &restClient{
		order: func(ctx context.Context, id string) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, perOrder)
			defer cancel()
			return doOrder(ctx, c, base, a.APIKey, id)
		},
		close: func() { tr.CloseIdleConnections(); _ = p.Close() },
	}, nil
}

// ---- scenario: REST failover ----

type restFailoverResult struct {
	firstOnBackup time.Duration // < 0: never within bound
	repeated      int           // client order IDs submitted more than once
	doubleBooked  int           // submissions answered "already booked" (would be a 2nd order without idempotent IDs)
}

// restFailover: orders in a loop against the primary; after 300 ms the
// primary region is blackholed; time until the first order the backup
// region accepted.
func restFailover(p restPeer, bound time.Duration) (restFailoverResult, error) {
	b, err := startBroker(nil)
	if err != nil {
		return restFailoverResult{}, err
	}
	defer b.Close()
	a := addrsOf(b)
	c, err := p.build(a)
	if err != nil {
		return restFailoverResult{}, err
	}
	defer c.close()

	var (
		mu      sync.Mutex
		t0      time.Time
		first   time.Time
		healthy bool
	)
	done := make(chan struct{})
	stop := make(chan struct{})
	prefix := uniq("rf")
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			region, err := c.order(context.Background(), fmt.Sprintf("%s-%d", prefix, i))
			now := time.Now()
			mu.Lock()
			if err == nil && region == a.Regions[0].Name {
				healthy = true
			}
			if err == nil && region == a.Regions[1].Name && !t0.IsZero() && first.IsZero() {
				first = now
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		h := healthy
		mu.Unlock()
		if h {
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			<-done
			return restFailoverResult{}, errors.New("no healthy order on the primary")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	t0 = time.Now()
	mu.Unlock()
	if err := blackholeRegion(b, a.Regions[0].Name); err != nil {
		return restFailoverResult{}, err
	}
	var res restFailoverResult
	end := t0.Add(bound)
	for {
		mu.Lock()
		f := first
		mu.Unlock()
		if !f.IsZero() {
			res.firstOnBackup = f.Sub(t0)
			break
		}
		if time.Now().After(end) {
			res.firstOnBackup = -1
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	c.close() // unblocks an order stuck on the blackholed primary
	waitOrTimeout(done, 3*time.Second)
	res.repeated, res.doubleBooked = countRepeats(b.Audit())
	return res, nil
}

func waitOrTimeout(ch <-chan struct{}, d time.Duration) {
	select {
	case <-ch:
	case <-time.After(d):
	}
}

func countRepeats(log simbroker.AuditLog) (repeated, doubleBooked int) {
	for _, n := range log.Submissions() {
		if n > 1 {
			repeated++
		}
	}
	for _, r := range log.Orders() {
		if r.Outcome == simbroker.OutcomeDuplicate {
			doubleBooked++
		}
	}
	return repeated, doubleBooked
}

// ---- scenario: unknown outcome (booked, then the connection is cut) ----

// restUnknownOutcome sends 10 orders to a healthy primary whose next 3 orders
// are booked and then cut before the answer (simbroker.UnknownOutcome{N: 3}).
func restUnknownOutcome(p restPeer) (repeated, doubleBooked int, err error) {
	b, err := startBroker(nil)
	if err != nil {
		return 0, 0, err
	}
	defer b.Close()
	a := addrsOf(b)
	c, err := p.build(a)
	if err != nil {
		return 0, 0, err
	}
	defer c.close()
	prefix := uniq("uo")
	if _, err := c.order(context.Background(), prefix+"-warm"); err != nil {
		return 0, 0, fmt.Errorf("warm-up order: %w", err)
	}
	if err := b.SetFault(a.Regions[0].Name, simbroker.REST, simbroker.UnknownOutcome{N: 3}); err != nil {
		return 0, 0, err
	}
	for i := range 10 {
		_, _ = c.order(context.Background(), fmt.Sprintf("%s-%d", prefix, i))
	}
	repeated, doubleBooked = countRepeats(b.Audit())
	return repeated, doubleBooked, nil
}

// ---- scenario: slow primary (a slow broker, not a dead one) ----

// restSlowPrimary sends 5 orders one at a time while the primary's trading
// relay delays everything by delay each way (its probe relay stays fast),
// then waits for late deliveries and counts what the broker received twice.
func restSlowPrimary(p restPeer, delay time.Duration) (repeated, doubleBooked int, err error) {
	b, err := startBroker(nil)
	if err != nil {
		return 0, 0, err
	}
	defer b.Close()
	a := addrsOf(b)
	c, err := p.build(a)
	if err != nil {
		return 0, 0, err
	}
	defer c.close()
	prefix := uniq("sp")
	if _, err := c.order(context.Background(), prefix+"-warm"); err != nil {
		return 0, 0, fmt.Errorf("warm-up order: %w", err)
	}
	if err := b.SetFault(a.Regions[0].Name, simbroker.REST, simbroker.Latency{Delay: delay}); err != nil {
		return 0, 0, err
	}
	for i := range 5 {
		_, _ = c.order(context.Background(), fmt.Sprintf("%s-%d", prefix, i))
	}
	time.Sleep(4 * delay) // attempts still on the slow wire land
	repeated, doubleBooked = countRepeats(b.Audit())
	return repeated, doubleBooked, nil
}
