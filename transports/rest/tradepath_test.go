package rest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// memNet is an in-memory network of real net/http servers, one per region,
// reached over net.Pipe: it runs inside a synctest bubble.
type memNet struct {
	mu      sync.Mutex
	regions map[string]*memRegion // by host
	servers []*http.Server
	wg      sync.WaitGroup
}

// memRegion is one region of a broker whose account book is shared: it
// answers GET /v1/account (the probe), POST /v1/orders and
// GET /v1/orders/{id} (the reconcile lookup: the order, or 404).
type memRegion struct {
	name    string
	book    *memBook
	ln      *pipeListener
	down    atomic.Bool // every request answers 503
	lookups atomic.Bool // order lookups answer 503
	orders  atomic.Bool // orders answer 503 (not booked)
	reads   atomic.Int64
}

type memBook struct {
	mu     sync.Mutex
	orders map[string]string // client order ID → region
}

type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func newMemNet(book *memBook, names ...string) *memNet {
	n := &memNet{regions: map[string]*memRegion{}}
	for _, name := range names {
		r := &memRegion{name: name, book: book, ln: &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}}
		n.regions[name+".broker.test:80"] = r
		srv := &http.Server{Handler: r}
		n.servers = append(n.servers, srv)
		n.wg.Go(func() { _ = srv.Serve(r.ln) })
	}
	return n
}

func (n *memNet) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	n.mu.Lock()
	r, ok := n.regions[addr]
	n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("memnet: no host %s", addr)
	}
	a, b := net.Pipe()
	select {
	case r.ln.conns <- b:
		return a, nil
	case <-r.ln.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (n *memNet) close() {
	for _, s := range n.servers {
		_ = s.Close()
	}
	n.wg.Wait()
}

func (r *memRegion) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	if req.Header.Get("X-API-Key") != "k" {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if r.down.Load() {
		http.Error(w, "region unavailable", http.StatusServiceUnavailable)
		return
	}
	switch {
	case req.Method == http.MethodGet && req.URL.Path == "/v1/account":
		_, _ = io.WriteString(w, `{"account":"a-1"}`)
	case req.Method == http.MethodPost && req.URL.Path == "/v1/orders":
		if r.orders.Load() {
			http.Error(w, "order service unavailable", http.StatusServiceUnavailable)
			return
		}
		id := req.Header.Get("X-Client-Order-ID")
		r.book.mu.Lock()
		r.book.orders[id] = r.name
		r.book.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"client_order_id":"`+id+`","status":"new"}`)
	case req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, "/v1/orders/"):
		r.reads.Add(1)
		if r.lookups.Load() {
			http.Error(w, "order service unavailable", http.StatusServiceUnavailable)
			return
		}
		id := strings.TrimPrefix(req.URL.Path, "/v1/orders/")
		r.book.mu.Lock()
		_, ok := r.book.orders[id]
		r.book.mu.Unlock()
		if !ok {
			http.Error(w, "no such order", http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, `{"client_order_id":"`+id+`","status":"new"}`)
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

// quickStart is a Path, rest.Transport and rest.Reconciler set up as the
// README's quick start sets them up (DefaultConfig, an authenticated probe,
// LocalFenceOnly, the REST reconcile by service, no TradePathCheck), over
// memNet.
type quickStart struct {
	path   *pathdialer.Path
	rt     *rest.Transport
	client *http.Client
	probeT *http.Transport
	mu     sync.Mutex
	events []pathdialer.Event
}

func newQuickStart(t *testing.T, n *memNet, edit func(*pathdialer.Config)) *quickStart {
	t.Helper()
	q := &quickStart{}
	auth := http.Header{"X-Api-Key": {"k"}}
	q.probeT = &http.Transport{DialContext: n.dial, DisableKeepAlives: true}
	probeClient := &http.Client{Transport: q.probeT}
	probe := func(ctx context.Context, ep pathdialer.Endpoint) error {
		u, _ := ep.Address("rest")
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/v1/account", nil)
		if err != nil {
			return err
		}
		req.Header = auth.Clone()
		resp, err := probeClient.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("probe: HTTP %d", resp.StatusCode)
		}
		return nil
	}
	restRec, err := rest.NewReconciler(rest.ReconcileOptions{URL: "http://broker/v1/orders/" + rest.OrderIDPlaceholder, Header: auth})
	if err != nil {
		t.Fatal(err)
	}
	cfg := pathdialer.DefaultConfig()
	for i, name := range []string{"eu", "us"} {
		cfg.Endpoints = append(cfg.Endpoints, pathdialer.Endpoint{Name: name, Region: name, Priority: i, Primary: i == 0,
			Services: map[string]string{"rest": "http://" + name + ".broker.test"}})
	}
	cfg.Probe = probe
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.ReconcileByService = map[string]pathdialer.ReconcileFunc{"rest": restRec.Reconcile}
	cfg.AllowPlaintext = true // the in-memory network carries plain HTTP
	cfg.Dial = n.dial
	cfg.OnEvent = func(e pathdialer.Event) {
		q.mu.Lock()
		q.events = append(q.events, e)
		q.mu.Unlock()
	}
	if edit != nil {
		edit(&cfg)
	}
	if q.path, err = pathdialer.New(cfg); err != nil {
		t.Fatal(err)
	}
	if q.rt, err = rest.NewTransport(q.path, rest.Options{Hosts: []string{"broker"}}); err != nil {
		t.Fatal(err)
	}
	restRec.SendLookupsVia(q.rt)
	q.client = &http.Client{Transport: q.rt}
	if err := q.path.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return q
}

func (q *quickStart) close() {
	_ = q.path.Close()
	q.rt.CloseIdleConnections()
	q.probeT.CloseIdleConnections()
}

// first returns the first event of kind at or after since that match accepts.
func (q *quickStart) first(kind pathdialer.EventKind, since time.Time, match func(pathdialer.Event) bool) (pathdialer.Event, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.events {
		if e.Kind == kind && !e.Time.Before(since) && (match == nil || match(e)) {
			return e, true
		}
	}
	return pathdialer.Event{}, false
}

func (q *quickStart) timeline(since time.Time) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var b strings.Builder
	for _, e := range q.events {
		if e.Kind == pathdialer.EventProbe || e.Time.Before(since) {
			continue
		}
		fmt.Fprintf(&b, "  +%v %v %s %s→%s %v %s\n", e.Time.Sub(since), e.Kind, e.Endpoint, e.From, e.To, e.Err, e.Cause)
	}
	return b.String()
}

var errUnknownOutcome = errors.New("outcome unknown")

// order sends one REST order through the quick start's client.
func (q *quickStart) order(ctx context.Context, id string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://broker/v1/orders", strings.NewReader(`{"symbol":"EURUSD"}`))
	req.Header.Set("X-API-Key", "k")
	req.Header.Set("X-Client-Order-ID", id)
	resp, err := q.client.Do(req)
	v := rest.Outcome(resp, err)
	if resp != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	switch {
	case v.Kind == rest.Unknown:
		return errUnknownOutcome
	case err != nil:
		return err
	case resp.StatusCode != http.StatusCreated:
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// During a switch, the backup's order lookups answer 503 for 12 s: the
// reconcile's failed lookups take the backup out, and trading halts (no
// path can settle the order of unknown fate). Configured as the quick start
// is, with no TradePathCheck, trading resumes within a few probe rounds of
// the lookups healing, not after Engine.GrayFailbackWait.
func TestHaltEndsWithTheLookupOutageQuickStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		book := &memBook{orders: map[string]string{}}
		n := newMemNet(book, "eu", "us")
		defer n.close()
		q := newQuickStart(t, n, nil)
		defer q.close()
		eu, us := n.regions["eu.broker.test:80"], n.regions["us.broker.test:80"]
		cfg := pathdialer.DefaultConfig()

		if err := q.order(t.Context(), "o-1"); err != nil {
			t.Fatalf("order on eu: %v", err)
		}
		// eu goes dark: its order answers 503 (fate unknown) and its probe
		// fails; us's order lookups fail for 12 s from the outage on.
		us.lookups.Store(true)
		eu.down.Store(true)
		outage := time.Now()
		if err := q.order(t.Context(), "o-2"); !errors.Is(err, errUnknownOutcome) {
			t.Fatalf("order o-2: %v, want an unknown outcome", err)
		}
		<-time.After(12 * time.Second)
		us.lookups.Store(false)
		healed := time.Now()
		if _, ok := q.first(pathdialer.EventHalt, outage, nil); !ok {
			t.Fatalf("no halt during the lookup outage (the case this test is about); events:\n%s", q.timeline(outage))
		}
		// Released on us within a few probe rounds of the heal, and a
		// reconcile's worth of time.
		bound := time.Duration(cfg.Engine.FailureThreshold+cfg.Engine.FailbackSuccessThreshold+2)*(cfg.ProbeInterval+cfg.ProbeJitter) + cfg.ReconcileTimeout
		<-time.After(bound)
		rel, ok := q.first(pathdialer.EventRelease, healed, func(e pathdialer.Event) bool { return e.Service == "" })
		if !ok {
			t.Fatalf("trading not released within %v of the lookups healing (Engine.GrayFailbackWait is %v); state %v; us %+v; events:\n%s",
				bound, cfg.Engine.GrayFailbackWait, gateStateOf(q.path), endpointOf(q.path, "us"), q.timeline(outage))
		}
		if a, _ := q.path.Active(); a.Name != "us" {
			t.Fatalf("released on %q, want us", a.Name)
		}
		if err := q.order(t.Context(), "o-3"); err != nil {
			t.Fatalf("order after the release (%v after the heal): %v", rel.Time.Sub(healed), err)
		}
		book.mu.Lock()
		where := book.orders["o-3"]
		book.mu.Unlock()
		if where != "us" {
			t.Fatalf("o-3 booked in %q, want us", where)
		}
		// What ended it is the Reconciler's check (one gray failure, ended
		// by it), not the probe standing in for one.
		var onsets int
		q.mu.Lock()
		for _, e := range q.events {
			if e.Kind == pathdialer.EventGray && e.Endpoint == "us" && strings.Contains(e.Cause, "is DOWN") {
				onsets++
				if !strings.Contains(e.Cause, "trade-path check of rest.Reconciler runs every probe round") {
					t.Errorf("gray event does not name the Reconciler's check: %s", e.Cause)
				}
			}
		}
		q.mu.Unlock()
		if onsets != 1 {
			t.Fatalf("%d gray failures of us, want 1; events:\n%s", onsets, q.timeline(outage))
		}
		if us.reads.Load() < 12 {
			t.Fatalf("%d lookups reached us: the check did not run every probe round", us.reads.Load())
		}
		t.Logf("released %v after the lookups healed (bound %v)", rel.Time.Sub(healed), bound)
	})
}

func gateStateOf(p *pathdialer.Path) pathdialer.GateState {
	s, _ := p.GateState()
	return s
}

func endpointOf(p *pathdialer.Path, name string) pathdialer.EndpointSnapshot {
	for _, e := range p.Snapshot().Endpoints {
		if e.Name == name {
			return e
		}
	}
	return pathdialer.EndpointSnapshot{}
}

// The Reconciler's trade-path check reaches an endpoint that is fenced and
// not active (its own connection, allowed while fenced): a primary taken out
// by failed orders while its probe passed stays out while its lookups fail.
// Its failures name the endpoint and the status, never the credentials. Its
// orders were answered 503, so its lookups healing do not bring it back
// while the backup carries flow: a lookup cannot vouch for submission.
func TestReconcilerTradePathCheckReachesFencedEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		book := &memBook{orders: map[string]string{}}
		n := newMemNet(book, "eu", "us")
		defer n.close()
		q := newQuickStart(t, n, nil)
		defer q.close()
		eu := n.regions["eu.broker.test:80"]
		cfg := pathdialer.DefaultConfig()
		eu.orders.Store(true)
		eu.lookups.Store(true)
		start := time.Now()
		for i := range cfg.Engine.FailureThreshold {
			if err := q.order(t.Context(), fmt.Sprintf("o-%d", i)); !errors.Is(err, errUnknownOutcome) {
				t.Fatalf("order %d on eu: %v, want an unknown outcome", i, err)
			}
		}
		<-time.After(10 * time.Second)
		if a, _ := q.path.Active(); a.Name != "us" {
			t.Fatalf("active %q, want us; events:\n%s", a.Name, q.timeline(start))
		}
		s := endpointOf(q.path, "eu")
		if !s.GrayFailure || !s.Fenced {
			t.Fatalf("eu after 10 s: %+v", s)
		}
		if !strings.Contains(s.LastProbeError, `trade-path check on "eu"`) || !strings.Contains(s.LastProbeError, "HTTP 503") || strings.Contains(s.LastProbeError, "X-Api-Key") {
			t.Fatalf("eu's last error %q does not say that the check failed, and how", s.LastProbeError)
		}
		got := eu.reads.Load()
		if got < 8 {
			t.Fatalf("%d lookups reached the fenced eu in 10 s", got)
		}
		eu.lookups.Store(false)
		healed := time.Now()
		<-time.After(2 * (cfg.ProbeInterval + cfg.ProbeJitter))
		if back, ok := q.first(pathdialer.EventGray, healed, func(e pathdialer.Event) bool { return e.Endpoint == "eu" }); ok {
			t.Fatalf("eu back from a gray failure of submission on its lookups healing (%v); events:\n%s", back, q.timeline(start))
		}
		if s := endpointOf(q.path, "eu"); !s.GrayFailure || !s.SubmissionFailed || eu.reads.Load() < got+2 {
			t.Fatalf("eu after its lookups healed: %+v (%d lookups reached it)", s, eu.reads.Load()-got)
		}
	})
}
