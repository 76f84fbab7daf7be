package dst

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// TLS and pooled HTTP/2 (Scenario.H2). In a quarter of the seeds (drawn
// from a source of their own, so every other field of every seed is as
// before) the traders' orders leave through a second rest.Transport whose
// endpoint service (h2Service) is a TLS front end of each region: the
// client speaks HTTP/2 over TLS (ALPN h2, a fixed test certificate for
// broker.sim), so one pooled connection carries many orders, and the front
// end hands each request to the region's REST server as a load balancer
// would. TLS bytes are random, so the network delays chunks of these
// connections by connection, not by content (see Run).
//
// The front end records, at the broker's edge, which connection each order
// arrived on. Now and then (one order in eight, drawn from the seed and the
// order's ID) it drains the connection an order arrived on as a load
// balancer going away can: once the broker has answered, it sends GOAWAY
// with last stream ID 0, which tells the client that no stream on the
// connection was processed, and drops the answer. net/http's HTTP/2 client retries such a stream
// on a new connection when it can rewind the body (Request.GetBody): an
// order the broker already booked then arrives twice without the client
// ever resending it. The invariant:
//
//	no-order-replayed-by-pool  no client order ID arrives at the front end on more
//	                           distinct connections than the client sent it
//	no-drain-as-evidence       no state change of the Path's has a graceful
//	                           GOAWAY for its cause
//
// The REST transport clears GetBody, so the stream fails and the order is
// an unknown outcome, settled by a reconcile. Plant h2-replay (the transport
// keeping GetBody) shows the invariant failing.

const (
	h2Service   = "h2"
	invH2Replay = "no-order-replayed-by-pool"
	// invH2DrainEvidence: no state change of the Path's is caused by a
	// graceful GOAWAY (a drain retires a connection, not an endpoint).
	invH2DrainEvidence = "no-drain-as-evidence"
	h2DrainOneIn       = 8
	h2ForwardTimeout   = 5 * time.Second
)

// h2CertPEM and h2KeyPEM: a self-signed certificate for broker.sim, valid
// from 1990 to 2199 (synctest's clock starts in 2000).
const h2CertPEM = `-----BEGIN CERTIFICATE-----
MIIBijCCAS+gAwIBAgIBHTAKBggqhkjOPQQDAjAVMRMwEQYDVQQDEwpicm9rZXIu
c2ltMCAXDTkwMDEwMTAwMDAwMFoYDzIxOTkwMTAxMDAwMDAwWjAVMRMwEQYDVQQD
Ewpicm9rZXIuc2ltMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEs62Ui0JyVsPj
m1zqo55GvRf6KmM1TEftsbnllq6/VrUbqw6Ggp9jA204l3qgSqxBGrh4aYy/SIfc
NJF6KRbqXKNuMGwwDgYDVR0PAQH/BAQDAgKEMBMGA1UdJQQMMAoGCCsGAQUFBwMB
MA8GA1UdEwEB/wQFMAMBAf8wHQYDVR0OBBYEFBw++HOFjOZiNDlYmIRlOjsZ1+Aa
MBUGA1UdEQQOMAyCCmJyb2tlci5zaW0wCgYIKoZIzj0EAwIDSQAwRgIhAKtN+cK1
sveXnrnlgRdd1HWbKqkidyxdkRZpYsTbiGubAiEA72wHHJAMnYJNefHYZxoUml/z
CohywrYEJk6dulF87Nc=
-----END CERTIFICATE-----
`

const h2KeyPEM = `-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIL4YmwjJ00AgUxaLi2TrE0RogTOdGswfCUuqw+E5aEbqoAoGCCqGSM49
AwEHoUQDQgAEs62Ui0JyVsPjm1zqo55GvRf6KmM1TEftsbnllq6/VrUbqw6Ggp9j
A204l3qgSqxBGrh4aYy/SIfcNJF6KRbqXA==
-----END EC PRIVATE KEY-----
`

// drawH2 decides Scenario.H2 from a source of its own.
func drawH2(s *Scenario) {
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x4832683268326832))
	s.H2 = r.IntN(4) == 0
}

func h2Addr(region string) string { return region + ".h2.sim:443" }

// h2front is the TLS front end of every region, and the client side that
// sends orders through it.
type h2front struct {
	w     *world
	fwd   *http.Client // front end to the region's REST server
	srv   *http.Server
	lns   []net.Listener
	rt    *rest.Transport
	hc    *http.Client
	serve sync.WaitGroup

	mu       sync.Mutex
	conns    int
	open     []*h2conn
	arrivals map[string][]int // client order ID -> connections it arrived on, in order
	sends    map[string]int   // client order ID -> times the client sent it
	drains   int
	// drainChanges are the Path's state changes whose cause was a graceful
	// GOAWAY (no-drain-as-evidence).
	drainChanges []string
}

// noteEvent keeps a state change of the Path's that a drained connection
// caused: a graceful GOAWAY retires a connection, not an endpoint, and must
// not count against it.
func (f *h2front) noteEvent(ev pathdialer.Event) {
	if f == nil || ev.Kind != pathdialer.EventStateChange || ev.Err == nil || !strings.Contains(ev.Err.Error(), "graceful shutdown GOAWAY") {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drainChanges = append(f.drainChanges, fmt.Sprintf("%s %v->%v at %v", ev.Endpoint, ev.PrevState, ev.State, ev.Time.Sub(f.w.start)))
}

type h2connKey struct{}

// h2conn is one accepted TLS connection. Its writes are serialised so that
// a frame the front end injects (GOAWAY) falls between two of the HTTP/2
// server's writes, never inside one.
type h2conn struct {
	// The *tls.Conn as a net.Conn: its ConnectionState must stay hidden,
	// or the server would take the connection for HTTP/1 over TLS instead
	// of HTTP/2 (it serves the decrypted stream as prior-knowledge h2).
	net.Conn
	n  int
	mu sync.Mutex
}

func (c *h2conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.Write(p)
}

// goAway sends GOAWAY(last stream 0, NO_ERROR): "nothing on this connection
// was processed".
func (c *h2conn) goAway() {
	var f [17]byte
	f[2] = 8   // payload length
	f[3] = 0x7 // GOAWAY; flags 0, stream 0; last stream 0, error code 0
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.Conn.Write(f[:])
}

type h2listener struct {
	net.Listener
	f   *h2front
	cfg *tls.Config
}

func (l *h2listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.f.mu.Lock()
	l.f.conns++
	hc := &h2conn{Conn: tls.Server(c, l.cfg), n: l.f.conns}
	l.f.open = append(l.f.open, hc)
	l.f.mu.Unlock()
	return hc, nil
}

// buildH2 starts the front ends and the client's pooled transport. It is
// called from build, before the Path is made (the endpoints need the
// service's URL): endpoints get theirs through h2URL.
func (w *world) buildH2() error {
	if !w.s.H2 {
		return nil
	}
	cert, err := tls.X509KeyPair([]byte(h2CertPEM), []byte(h2KeyPEM))
	if err != nil {
		return fmt.Errorf("dst: h2 certificate: %w", err)
	}
	f := &h2front{w: w, arrivals: map[string][]int{}, sends: map[string]int{},
		fwd: &http.Client{Transport: &http.Transport{DialContext: w.net.Dial, DisableKeepAlives: true}}}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true) // TLS is terminated by h2listener; ALPN chose h2
	f.srv = &http.Server{Handler: http.HandlerFunc(f.handle), Protocols: &p,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, h2connKey{}, c) }}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}
	for _, r := range w.s.Regions {
		ln, err := w.net.Listen(h2Addr(r))
		if err != nil {
			f.close()
			return fmt.Errorf("dst: h2 front end %s: %w", r, err)
		}
		hl := &h2listener{Listener: ln, f: f, cfg: cfg}
		f.lns = append(f.lns, hl)
		f.serve.Add(1)
		go func() { defer f.serve.Done(); _ = f.srv.Serve(hl) }()
	}
	w.h2 = f
	return nil
}

// startH2Client makes the pooled transport through the Path.
func (f *h2front) startClient() error {
	if f == nil {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(h2CertPEM))
	ro := rest.Options{Service: h2Service, Hosts: []string{"broker.sim"},
		TLSConfig: &tls.Config{RootCAs: pool, ServerName: "broker.sim", MinVersion: tls.VersionTLS12}}
	if f.w.s.Coordinated || f.w.libToken() { // tokens_check.go
		ro.TokenHeader = simbroker.TokenHeader
	}
	var err error
	if f.rt, err = rest.NewTransport(f.w.path, ro); err != nil {
		return fmt.Errorf("dst: h2 transport: %w", err)
	}
	f.hc = &http.Client{Transport: f.rt}
	return nil
}

// orderClient is the client and URL an order is sent with: the pooled
// HTTP/2 one in H2 seeds.
func (w *world) orderClient() (*http.Client, string, bool) {
	if w.h2 == nil {
		return w.hc, "http://broker.invalid/v1/orders", false
	}
	return w.h2.hc, "https://broker.sim/v1/orders", true
}

// sent counts a send of id by the client.
func (f *h2front) sent(id string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.sends[id]++
	f.mu.Unlock()
}

func (f *h2front) drainDraw(id string) bool {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], f.w.s.Seed)
	h.Write(b[:])
	h.Write([]byte(id))
	return h.Sum64()%h2DrainOneIn == 0
}

func (f *h2front) handle(rw http.ResponseWriter, r *http.Request) {
	c, _ := r.Context().Value(h2connKey{}).(*h2conn)
	region := strings.TrimSuffix(r.Host, ".h2.sim:443")
	region = strings.TrimSuffix(region, ".h2.sim")
	id := r.Header.Get("X-Client-Order-ID")
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil || c == nil {
		return
	}
	if id != "" && r.Method == http.MethodPost {
		f.mu.Lock()
		f.arrivals[id] = append(f.arrivals[id], c.n)
		f.mu.Unlock()
	}
	// A load balancer forwards what it received even if the client goes.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), h2ForwardTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, r.Method, "http://"+addr(region, simbroker.REST)+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := f.fwd.Do(req)
	if err != nil {
		// The broker's answer was cut: so is the client's connection.
		_ = c.Close()
		return
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if id != "" && r.Method == http.MethodPost && time.Now().Before(f.w.start.Add(f.w.s.Duration)) && f.drainDraw(id) {
		f.mu.Lock()
		f.drains++
		f.mu.Unlock()
		// For the composed invariants a drain is a fault armed on the
		// region at this instant: an order booked and its answer lost, as
		// an unknown outcome (the Path may take the endpoint DOWN on it).
		now := time.Now()
		f.w.mu.Lock()
		f.w.cx.spans = append(f.w.cx.spans, span{region: region, kind: spanUnknown, from: now, to: now.Add(time.Millisecond)})
		f.w.mu.Unlock()
		f.w.tracef(now, "h2 front %s drains conn %d after order %s", region, c.n, id)
		c.goAway()
		// Having said nothing was processed, it sends no answer: the
		// stream is reset (the client has already given it up).
		panic(http.ErrAbortHandler)
	}
	for k, v := range resp.Header {
		rw.Header()[k] = v
	}
	rw.WriteHeader(resp.StatusCode)
	_, _ = rw.Write(raw)
}

// check judges no-order-replayed-by-pool.
func (f *h2front) check(res *Result, viol func(inv, format string, a ...any)) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]string, 0, len(f.arrivals))
	for id := range f.arrivals {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		conns := map[int]bool{}
		for _, n := range f.arrivals[id] {
			conns[n] = true
		}
		if len(conns) > f.sends[id] {
			res.Stats.H2Replays++
			viol(invH2Replay, "order %s arrived on %d connections %v, sent by the client %d time(s)", id, len(conns), f.arrivals[id], f.sends[id])
		}
	}
	for _, c := range f.drainChanges {
		viol(invH2DrainEvidence, "endpoint %s on a graceful GOAWAY: a drained connection counted against its endpoint", c)
	}
	res.Stats.H2Drains = f.drains
	res.Stats.H2Conns = f.conns
}

func (f *h2front) close() {
	if f == nil {
		return
	}
	if f.rt != nil {
		f.rt.CloseIdleConnections()
	}
	if f.srv != nil {
		_ = f.srv.Close()
	}
	for _, l := range f.lns {
		_ = l.Close()
	}
	f.mu.Lock()
	open := f.open
	f.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
	f.serve.Wait()
	f.fwd.CloseIdleConnections()
}
