package rest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

func newClient(t *testing.T, h *harness, opts rest.Options) (*http.Client, *rest.Transport) {
	t.Helper()
	if opts.Hosts == nil {
		opts.Hosts = []string{"broker.invalid"} // the logical host the tests write
	}
	rt, err := rest.NewTransport(h.path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.CloseIdleConnections)
	return &http.Client{Transport: rt}, rt
}

func order(t *testing.T, ctx context.Context, c *http.Client, id string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://broker.invalid/v1/orders",
		strings.NewReader(`{"client_order_id":"`+id+`","symbol":"EURUSD","qty":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return c.Do(req)
}

func TestSwitchMovesRequestsToTheNewHost(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL+"/base", us.URL, nil)
	c, _ := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})

	resp, err := c.Get("https://broker.invalid/v1/account") // a logical host
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Region"); got != "eu" || resp.Proto != "HTTP/2.0" {
		t.Fatalf("first read went to %q over %s, want eu over HTTP/2.0", got, resp.Proto)
	}
	if eu.n("GET /base/v1/account") != 1 {
		t.Fatalf("eu did not see the base path rewritten: %v", eu.count)
	}
	// The application may also write an endpoint's own URL; its base path is stripped.
	resp, err = c.Get(eu.URL + "/base/v1/account")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if eu.n("GET /base/v1/account") != 2 {
		t.Fatalf("endpoint URL not mapped: %v", eu.count)
	}

	h.down["eu"].Store(true)
	h.waitEvent(t, pathdialer.EventRelease)
	resp, err = c.Get("https://broker.invalid/v1/account")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Region"); got != "us" {
		t.Fatalf("after the switch the read went to %q, want us", got)
	}
	if us.n("GET /v1/account") != 1 {
		t.Fatalf("us counts %v", us.count)
	}
}

func TestSubmissionDuringReconcileWaitsThenLandsOnceOnTheNewEndpoint(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, nil)
	h.gate = make(chan struct{})
	c, _ := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})

	h.down["eu"].Store(true)
	<-h.reconcile // the switch is done, reconcile is running and blocked

	// Reads are never held: the reconciler's own queries reach the new path.
	resp, err := c.Get("https://broker.invalid/v1/orders/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Region") != "us" {
		t.Fatalf("read during reconcile went to %q", resp.Header.Get("X-Region"))
	}

	done := make(chan *http.Response, 1)
	errc := make(chan error, 1)
	go func() {
		resp, err := order(t, context.Background(), c, "o-1")
		if err != nil {
			errc <- err
			return
		}
		done <- resp
	}()
	h.waitGateWaiter(t)
	if n := eu.n("POST /v1/orders") + us.n("POST /v1/orders"); n != 0 {
		t.Fatalf("an order went out while reconcile was pending (%d)", n)
	}
	close(h.gate)
	select {
	case resp := <-done:
		resp.Body.Close()
		if resp.Header.Get("X-Region") != "us" {
			t.Fatalf("order landed on %q", resp.Header.Get("X-Region"))
		}
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("order never released")
	}
	if eu.n("POST /v1/orders") != 0 || us.n("POST /v1/orders") != 1 {
		t.Fatalf("order counts: eu %d, us %d; want 0 and 1", eu.n("POST /v1/orders"), us.n("POST /v1/orders"))
	}
}

// waitGateWaiter waits until the gate is held (the submission goroutine is then
// either waiting in Acquire or about to).
func (h *harness) waitGateWaiter(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if st, _ := h.path.GateState(); st == pathdialer.GateHeld {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("gate never held")
		}
		<-time.After(time.Millisecond)
	}
}

func TestHaltedSubmissionFailsAtOnce(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, nil)
	c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})
	h.down["us"].Store(true)
	h.down["eu"].Store(true)
	h.waitEvent(t, pathdialer.EventHalt)
	start := time.Now()
	_, err := order(t, context.Background(), c, "o-halt")
	if !errors.Is(err, pathdialer.ErrTradingHalted) {
		t.Fatalf("err = %v, want ErrTradingHalted", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("halted submission took %v; it must fail at once", d)
	}
	if eu.n("POST /v1/orders")+us.n("POST /v1/orders") != 0 {
		t.Fatal("a halted order reached a server")
	}
	if rt.Stats().Halted.Load() != 1 {
		t.Fatalf("halted counter = %d", rt.Stats().Halted.Load())
	}
}

// bookThenCut books the order, then cuts the connection without answering.
func bookThenCut(s **server) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusOK)
			return
		}
		body, _ := io.ReadAll(r.Body)
		(*s).mu.Lock()
		(*s).orders[string(body)]++
		(*s).mu.Unlock()
		if hj, ok := w.(http.Hijacker); ok {
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		panic(http.ErrAbortHandler) // HTTP/2: reset the stream
	}
}

// opaqueReader is a body net/http cannot recognise as in memory.
type opaqueReader struct{ r io.Reader }

func (o *opaqueReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestCutAfterBookingIsNotResentAndReachesReconcile(t *testing.T) {
	// Every way a body reaches the transport: scanned in place (an in-memory
	// reader, passed on untouched), not inspected at all (order ID in a header),
	// or read and replaced (a reader of unknown type); each to a logical host
	// (request copied and re-aimed) and to the endpoint's own URL.
	type variant struct {
		name      string
		endpoint  bool // URL written as the endpoint's own
		headerID  bool // Options.OrderID = HeaderOrderID, body never inspected
		opaque    bool // body of a type net/http does not know
		bodyBytes bool // *bytes.Buffer body
	}
	variants := []variant{
		{name: "logical-host"},
		{name: "endpoint-url", endpoint: true},
		{name: "header-id", endpoint: true, headerID: true},
		{name: "opaque-body", opaque: true},
		{name: "bytes-buffer", endpoint: true, bodyBytes: true},
	}
	for _, h2 := range []bool{false, true} {
		for _, v := range variants {
			t.Run(map[bool]string{false: "http1", true: "http2"}[h2]+"/"+v.name, func(t *testing.T) {
				var eu *server
				eu = newServer(t, "eu", h2, bookThenCut(&eu))
				us := newServer(t, "us", h2, nil)
				h := newHarness(t, eu.URL, us.URL, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 50 })
				opts := rest.Options{TLSConfig: rootsOf(eu, us)}
				if v.headerID {
					opts.OrderID = rest.HeaderOrderID("X-Client-Order-ID")
				}
				c, _ := newClient(t, h, opts)
				base := "https://broker.invalid"
				if v.endpoint {
					base = eu.URL
				}
				// Warm a connection so the POST goes out on a reused one: that is
				// where net/http would silently retry a replayable request.
				resp, err := c.Get(base + "/v1/account")
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()

				body := `{"client_order_id":"o-cut","qty":1}`
				var rd io.Reader = bytes.NewReader([]byte(body))
				switch {
				case v.opaque:
					rd = &opaqueReader{strings.NewReader(body)}
				case v.bodyBytes:
					rd = bytes.NewBufferString(body)
				}
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/orders", rd)
				if v.opaque {
					req.ContentLength = int64(len(body))
					req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
				}
				req.Header.Set("Idempotency-Key", "o-cut") // makes it replayable to a bare net/http
				req.Header.Set("X-Client-Order-ID", "o-cut")
				_, err = c.Do(req)
				var uerr *rest.UnknownOutcomeError
				if !errors.As(err, &uerr) || !errors.Is(err, pathdialer.ErrUnknownOutcome) {
					t.Fatalf("err = %v, want *UnknownOutcomeError", err)
				}
				if uerr.OrderID != "o-cut" || uerr.Endpoint != "eu" {
					t.Fatalf("unknown outcome names order %q endpoint %q", uerr.OrderID, uerr.Endpoint)
				}
				eu.mu.Lock()
				booked := eu.orders[body]
				eu.mu.Unlock()
				if booked != 1 {
					t.Fatalf("the server booked the order %d times, want exactly 1", booked)
				}
				unknown := h.path.Unknown()
				if len(unknown) != 1 || unknown[0].OrderID != "o-cut" {
					t.Fatalf("path's unknown tickets = %+v", unknown)
				}
				// The next reconcile gets it.
				h.down["eu"].Store(true)
				for range 60 {
					h.path.Report("eu", 0, errors.New("x"), 0) // speed the DOWN verdict
				}
				r := <-h.reconcile
				found := false
				for _, tk := range r.Tickets {
					found = found || (tk.OrderID == "o-cut" && tk.State == pathdialer.TicketUnknown)
				}
				if !found {
					t.Fatalf("reconcile tickets %+v lack o-cut", r.Tickets)
				}
			})
		}
	}
}

// The same cut against a bare http.Transport shows what the guard prevents: the
// replayable POST on a reused HTTP/1 connection is sent twice.
func TestBareTransportWouldReplayTheOrder(t *testing.T) {
	var eu *server
	eu = newServer(t, "eu", false, bookThenCut(&eu))
	tr := &http.Transport{TLSClientConfig: rootsOf(eu)}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	resp, err := c.Get(eu.URL + "/v1/account")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	body := `{"client_order_id":"o-bare","qty":1}`
	req, _ := http.NewRequest(http.MethodPost, eu.URL+"/v1/orders", bytes.NewReader([]byte(body)))
	req.Header.Set("Idempotency-Key", "o-bare")
	_, _ = c.Do(req)
	eu.mu.Lock()
	booked := eu.orders[body]
	eu.mu.Unlock()
	if booked < 2 {
		t.Fatalf("bare transport booked %d times; expected net/http's replay (the hazard the rest transport guards against)", booked)
	}
}

func TestBlackholedH2ConnectionDetectedByPing(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	relay, err := faultnet.Listen(eu.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	_, port, _ := net.SplitHostPort(relay.Addr())
	h := newHarness(t, "https://127.0.0.1:"+port, us.URL, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 50 })
	c, _ := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), ReadIdleTimeout: 200 * time.Millisecond, PingTimeout: 200 * time.Millisecond})
	resp, err := c.Get("https://broker.invalid/v1/account")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Proto != "HTTP/2.0" {
		t.Fatalf("proto %s", resp.Proto)
	}
	if err := relay.SetFault(faultnet.Blackhole()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://broker.invalid/v1/account", nil)
	_, err = c.Do(req)
	if err == nil {
		t.Fatal("read over a blackholed connection succeeded")
	}
	if ctx.Err() != nil {
		t.Fatalf("the dead connection was not detected by the ping; the request ran into its 10s context (%v)", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("detection took %v", d)
	}
	st, _ := h.path.Engine().Status("eu")
	if st.ConsecutiveFailures == 0 {
		t.Fatal("the dead connection was not reported to the path")
	}
}

func TestReadsTripTheBreakerOrdersNever(t *testing.T) {
	fail := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }
	eu := newServer(t, "eu", true, fail)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 1000 })
	c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})
	for i := range 5 {
		resp, err := c.Get("https://broker.invalid/v1/account")
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 500 {
			t.Fatalf("read %d status %d", i, resp.StatusCode)
		}
	}
	_, err := c.Get("https://broker.invalid/v1/account")
	if !errors.Is(err, rest.ErrBreakerOpen) {
		t.Fatalf("6th read err = %v, want ErrBreakerOpen", err)
	}
	if eu.n("GET /v1/account") != 5 {
		t.Fatalf("server saw %d reads, the open breaker must fail fast", eu.n("GET /v1/account"))
	}
	if st, _ := rt.BreakerState("eu"); st.String() != "open" {
		t.Fatalf("breaker state %v", st)
	}
	// Orders never go through the breaker: this one reaches the server.
	resp, err := order(t, context.Background(), c, "o-b")
	if err != nil {
		t.Fatalf("order err = %v, want the 500 answer", err)
	}
	resp.Body.Close()
	if v := rest.Outcome(resp, err); v.Kind != rest.Unknown || v.StatusCode != 500 || v.Order == nil || v.Order.OrderID != "o-b" {
		t.Fatalf("order verdict %+v, want unknown outcome with HTTP 500", v)
	}
	if eu.n("POST /v1/orders") != 1 {
		t.Fatalf("order did not reach the server: %d", eu.n("POST /v1/orders"))
	}
	// The breaker switched nothing.
	if a, _ := h.path.Active(); a.Name != "eu" {
		t.Fatalf("active %q", a.Name)
	}
}

func TestSubmissionWithoutOrderIDIsRefusedUnsent(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, nil)
	c, _ := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})
	_, err := c.Post("https://broker.invalid/v1/orders", "application/json", strings.NewReader(`{"qty":1}`))
	if !errors.Is(err, rest.ErrNoOrderID) {
		t.Fatalf("err = %v", err)
	}
	if eu.n("POST /v1/orders") != 0 {
		t.Fatal("sent anyway")
	}
	// A context override makes a POST a read (no ticket, no order ID needed).
	req, _ := http.NewRequestWithContext(rest.WithSubmission(context.Background(), false), http.MethodPost, "https://broker.invalid/v1/search", strings.NewReader(`{}`))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestNewTransportRefusesWhatCannotWork(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, nil)
	cfg := rootsOf(eu)
	cfg.InsecureSkipVerify = true
	if _, err := rest.NewTransport(h.path, rest.Options{TLSConfig: cfg}); !errors.Is(err, rest.ErrInvalidOptions) || !strings.Contains(err.Error(), "InsecureSkipVerify") {
		t.Fatalf("InsecureSkipVerify: %v", err)
	}
	if _, err := rest.NewTransport(nil, rest.Options{}); !errors.Is(err, rest.ErrInvalidOptions) {
		t.Fatalf("nil path: %v", err)
	}
	if _, err := rest.NewTransport(h.path, rest.Options{Service: "fix"}); !errors.Is(err, rest.ErrInvalidOptions) || !strings.Contains(err.Error(), `"fix"`) {
		t.Fatalf("missing service: %v", err)
	}
}

func TestUntrustedCertificateIsNeverAccepted(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, nil)
	c, _ := newClient(t, h, rest.Options{}) // system roots: the test CA is not trusted
	_, err := c.Get("https://broker.invalid/v1/account")
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("err = %v, want a certificate verification failure", err)
	}
}

func TestProbeIsAuthenticatedAndRedacted(t *testing.T) {
	var calls atomic.Int32
	auth := func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("X-API-Key") != "good-key" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
	eu := newServer(t, "eu", true, auth)
	ep := pathdialer.Endpoint{Name: "eu", Services: map[string]string{"rest": eu.URL}}
	for _, tc := range []struct {
		key  string
		want bool
	}{{"good-key", true}, {"s3cret-wrong-key", false}} {
		probe, err := rest.Probe(rest.ProbeOptions{Path: "/v1/account?apiKey=" + tc.key, Header: http.Header{"X-Api-Key": {tc.key}}, TLSConfig: rootsOf(eu)})
		if err != nil {
			t.Fatal(err)
		}
		err = probe(context.Background(), ep)
		if (err == nil) != tc.want {
			t.Fatalf("key %q: err = %v", tc.key, err)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "401") {
				t.Fatalf("probe error does not say what happened: %v", err)
			}
			if strings.Contains(err.Error(), tc.key) {
				t.Fatalf("probe error leaks the key: %v", err)
			}
		}
	}
	if _, err := rest.Probe(rest.ProbeOptions{}); !errors.Is(err, rest.ErrInvalidOptions) {
		t.Fatalf("probe without a path: %v", err)
	}
}

// A submission that could not even connect is not an unknown outcome: nothing
// reached the broker, the error says so, and reconciliation is not bothered.
func TestSubmissionThatNeverConnectedIsNotSentNotUnknown(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	euURL := eu.URL
	eu.Close() // the port now refuses connections
	h := newHarness(t, euURL, us.URL, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 50 })
	c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})
	_, err := order(t, context.Background(), c, "o-refused")
	if !errors.Is(err, rest.ErrNotSent) {
		t.Fatalf("err = %v, want ErrNotSent", err)
	}
	var uerr *rest.UnknownOutcomeError
	if errors.As(err, &uerr) {
		t.Fatalf("a refused dial was classified as an unknown outcome: %v", err)
	}
	if u := h.path.Unknown(); len(u) != 0 {
		t.Fatalf("unknown tickets %+v", u)
	}
	if rt.Stats().NotSent.Load() != 1 {
		t.Fatalf("NotSent = %d", rt.Stats().NotSent.Load())
	}
}
