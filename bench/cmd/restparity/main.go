// Command restparity measures what rest.Transport costs over a bare, identically
// configured net/http Transport: client CPU time and heap allocations per request,
// for every cell of {HTTP/1.1, HTTP/2} × {1, 32 clients} × {POST order, GET read}.
//
// The servers run in a child process, so getrusage(RUSAGE_SELF) counts only the
// client: net/http, TLS, and for brokerpath the transport, the gate and the Path's
// probe monitor. Each cell runs interleaved rounds (bare, brokerpath, brokerpath,
// bare), so both sides see the same machine load; the ratio is bare CPU per request
// ÷ brokerpath CPU per request over all rounds (1.00 = free; the goal is ≥ 0.95).
//
//	go run ./cmd/restparity            # the table (about a minute)
//	go run ./cmd/restparity -rounds 4 -phase 200ms
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

const childEnv = "BROKERPATH_RESTPARITY_CHILD"

// postsAsReads sends brokerpath's POSTs down the read path (no order ID, no
// ticket), to tell the submission path's cost from the rest.
var postsAsReads bool

// bareTracked gives the bare transport the Path's tracked dialer (to tell the
// transport's cost from the tracked connection's).
var bareTracked bool

// profileSide, when set, runs only one side of each round (for profiling).
var profileSide string

type serverAddrs struct {
	H1, H2 string // base URLs
	Cert   string // base64 DER of the (shared) test certificate
}

func main() {
	if os.Getenv(childEnv) == "serve" {
		serve()
		return
	}
	rounds := flag.Int("rounds", 48, "interleaved rounds per cell (each: bare, brokerpath, brokerpath, bare)")
	phase := flag.Duration("phase", 100*time.Millisecond, "duration of one phase of a round")
	only := flag.String("cell", "", "run only the cells whose name contains this (e.g. \"h1 POST\")")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.BoolVar(&postsAsReads, "posts-as-reads", false, "treat brokerpath's POSTs as reads (isolates the submission path's cost)")
	flag.BoolVar(&bareTracked, "bare-tracked-dialer", false, "give the bare transport the Path's tracked dialer (isolates the transport's own cost)")
	flag.StringVar(&profileSide, "profile-side", "", "with -cpuprofile: run only this side (bare or brokerpath) in the rounds, to profile it alone")
	flag.Parse()
	if *prof != "" {
		f, err := os.Create(*prof)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "restparity:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*rounds, *phase, *only); err != nil {
		fmt.Fprintln(os.Stderr, "restparity:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// serve is the child: an HTTP/1.1-only and an HTTP/2 TLS server with the broker's
// two calls, until stdin closes.
func serve() {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"order_id":"1","status":"new"}`))
			return
		}
		_, _ = w.Write([]byte(`{"account_id":"A1","cash":"100000"}`))
	})
	quiet := log.New(io.Discard, "", 0) // clients closing idle connections are no news
	s1 := httptest.NewUnstartedServer(h)
	s1.Config.ErrorLog = quiet
	s1.StartTLS()
	s2 := httptest.NewUnstartedServer(h)
	s2.Config.ErrorLog = quiet
	s2.EnableHTTP2 = true
	s2.StartTLS()
	_ = json.NewEncoder(os.Stdout).Encode(serverAddrs{H1: s1.URL, H2: s2.URL, Cert: base64.StdEncoding.EncodeToString(s1.Certificate().Raw)})
	_, _ = io.Copy(io.Discard, os.Stdin)
	s1.Close()
	s2.Close()
}

func startChild() (serverAddrs, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return serverAddrs{}, nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=serve")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return serverAddrs{}, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return serverAddrs{}, nil, err
	}
	if err := cmd.Start(); err != nil {
		return serverAddrs{}, nil, err
	}
	stop := func() { _ = stdin.Close(); _ = cmd.Wait() }
	var a serverAddrs
	if err := json.NewDecoder(bufio.NewReader(stdout)).Decode(&a); err != nil {
		stop()
		return serverAddrs{}, nil, fmt.Errorf("reading the child's addresses: %w", err)
	}
	return a, stop, nil
}

type cell struct {
	proto   string // "h1" or "h2"
	clients int
	post    bool
	control bool // bare against a second bare transport: the measurement's resolution
}

func (c cell) String() string {
	m := "GET read"
	if c.post {
		m = "POST order"
	}
	if c.control {
		return fmt.Sprintf("control: bare vs bare, %s %s, %d client(s)", c.proto, m, c.clients)
	}
	return fmt.Sprintf("%s %s, %d client(s)", c.proto, m, c.clients)
}

type sample struct {
	cpu    time.Duration
	reqs   uint64
	allocs uint64
	bytes  uint64
}

func (s *sample) add(o sample) {
	s.cpu += o.cpu
	s.reqs += o.reqs
	s.allocs += o.allocs
	s.bytes += o.bytes
}

func (s sample) cpuPerReq() float64 { return float64(s.cpu.Nanoseconds()) / float64(s.reqs) }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func run(rounds int, phase time.Duration, only string) error {
	addrs, stop, err := startChild()
	if err != nil {
		return err
	}
	defer stop()
	der, err := base64.StdEncoding.DecodeString(addrs.Cert)
	if err != nil {
		return err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	tlsCfg := &tls.Config{RootCAs: pool}

	var cells []cell
	for _, proto := range []string{"h1", "h2"} {
		for _, post := range []bool{true, false} {
			for _, n := range []int{1, 32} {
				c := cell{proto: proto, clients: n, post: post}
				if only == "" || strings.Contains(c.String(), only) {
					cells = append(cells, c)
				}
			}
		}
	}
	for _, proto := range []string{"h1", "h2"} {
		for _, n := range []int{1, 32} {
			c := cell{proto: proto, clients: n, post: true, control: true}
			if only == "" || strings.Contains(c.String(), only) {
				cells = append(cells, c)
			}
		}
	}
	fmt.Printf("rest.Transport vs a bare http.Transport, client CPU per request (getrusage, servers in a child process)\n")
	fmt.Printf("%s, GOMAXPROCS %d, %d interleaved rounds (bare, brokerpath, brokerpath, bare) of %v per phase\n\n", runtime.Version(), runtime.GOMAXPROCS(0), rounds, phase)
	fmt.Println("| cell | bare µs CPU/req | brokerpath µs CPU/req | bare ÷ brokerpath, all rounds (goal ≥ 0.95) | median round | rounds min–max | allocs/req bare → brokerpath (bytes) |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- |")
	fails := 0
	for _, c := range cells {
		base := addrs.H2
		if c.proto == "h1" {
			base = addrs.H1
		}
		bare, bp, ratios, err := measure(c, base, addrs.H2, tlsCfg, rounds, phase)
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		r := bare.cpuPerReq() / bp.cpuPerReq()
		slices.Sort(ratios)
		ab, abp := float64(bare.allocs)/float64(bare.reqs), float64(bp.allocs)/float64(bp.reqs)
		bb, bbp := float64(bare.bytes)/float64(bare.reqs), float64(bp.bytes)/float64(bp.reqs)
		budget := 1.0
		if c.post {
			budget = 3
		}
		med := ratios[len(ratios)/2]
		if len(ratios)%2 == 0 {
			med = (ratios[len(ratios)/2-1] + med) / 2
		}
		mark := ""
		switch {
		case c.control:
			mark = " (control)"
		case max(r, med) < 0.95 || abp-ab > budget+0.5:
			mark = " ✗"
			fails++
		}
		fmt.Printf("| %s | %.2f | %.2f | %.3f%s | %.3f | %.2f–%.2f | %.1f → %.1f (%+.1f; %.0f → %.0f B) |\n",
			c, bare.cpuPerReq()/1e3, bp.cpuPerReq()/1e3, r, mark, med, ratios[0], ratios[len(ratios)-1], ab, abp, abp-ab, bb, bbp)
	}
	fmt.Printf("\nThe control rows measure a bare transport against a second bare transport the same way: their spread is what this machine's noise allows the other rows to resolve.\n")
	fmt.Printf("✗ = outside the goals (both ratios below 0.95, or allocations over budget: orders ≤ bare + 3, reads ≤ bare + 1); %d cell(s)\n", fails)
	return nil
}

// measure runs one cell: a fresh bare transport and a fresh brokerpath transport
// (each with its own connections, warmed up), then the interleaved rounds.
func measure(c cell, base, other string, tlsCfg *tls.Config, rounds int, phase time.Duration) (bare, bp sample, ratios []float64, err error) {
	bareRT := newBare(tlsCfg)
	defer bareRT.CloseIdleConnections()
	path, err := newPath(base, other)
	if err != nil {
		return bare, bp, nil, err
	}
	defer func() { _ = path.Close() }()
	if bareTracked {
		bareRT.DialContext = path.EndpointDialer("eu")
	}
	bpOpts := rest.Options{TLSConfig: tlsCfg, MaxIdleConnsPerHost: maxIdle}
	if postsAsReads {
		bpOpts.IsSubmission = func(*http.Request) bool { return false }
	}
	var bpRT interface {
		http.RoundTripper
		CloseIdleConnections()
	}
	if c.control {
		bpRT = newBare(tlsCfg) // the "brokerpath" side is a second bare transport
	} else if bpRT, err = rest.NewTransport(path, bpOpts); err != nil {
		return bare, bp, nil, err
	}
	defer bpRT.CloseIdleConnections()

	var seq atomic.Uint64
	var profiled sample // the profiled side's rounds (with -profile-side)
	// warm up: connections, TLS sessions, pools
	for _, rt := range []http.RoundTripper{bareRT, bpRT} {
		if _, err := load(c, rt, base, &seq, max(phase, 200*time.Millisecond)); err != nil {
			return bare, bp, nil, err
		}
	}
	for range rounds {
		var rb, rp sample
		for _, which := range []bool{false, true, true, false} {
			if (profileSide == "bare" && which) || (profileSide == "brokerpath" && !which) {
				continue
			}
			rt := http.RoundTripper(bareRT)
			if which {
				rt = bpRT
			}
			s, err := load(c, rt, base, &seq, phase)
			if err != nil {
				return bare, bp, nil, err
			}
			if which {
				rp.add(s)
			} else {
				rb.add(s)
			}
		}
		if profileSide != "" {
			profiled.add(rb)
			profiled.add(rp)
			rb, rp = sample{cpu: 1, reqs: 1}, sample{cpu: 1, reqs: 1}
		}
		ratios = append(ratios, rb.cpuPerReq()/rp.cpuPerReq())
		bare.add(rb)
		bp.add(rp)
	}
	if profileSide != "" {
		fmt.Fprintf(os.Stderr, "restparity: %s, %s side only: %d requests, %.2f µs CPU/req, %.1f allocs/req\n",
			c, profileSide, profiled.reqs, profiled.cpuPerReq()/1e3, float64(profiled.allocs)/float64(profiled.reqs))
	}
	return bare, bp, ratios, nil
}

// newBare is the transport rest.Transport builds per endpoint, with a plain dialer.
func newBare(tlsCfg *tls.Config) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 15 * time.Second}
	t := &http.Transport{
		DialContext:         d.DialContext,
		TLSClientConfig:     tlsCfg.Clone(),
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: maxIdle,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		HTTP2:               &http.HTTP2Config{SendPingTimeout: time.Second, PingTimeout: time.Second},
	}
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetHTTP2(true)
	t.Protocols = &protos
	return t
}

// newPath is a Path over the measured server (primary) and a second one, with a
// probe that always succeeds (the probe's own requests would otherwise be
// charged to brokerpath; the monitor's timers still are).
func newPath(primary, backup string) (*pathdialer.Path, error) {
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{pathdialer.ServiceREST: primary}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{pathdialer.ServiceREST: backup}},
	}
	cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	p, err := pathdialer.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.Start(context.Background()); err != nil {
		return nil, err
	}
	return p, nil
}

// load drives rt with c.clients goroutines for d and returns what it cost.
func load(c cell, rt http.RoundTripper, base string, seq *atomic.Uint64, d time.Duration) (sample, error) {
	client := &http.Client{Transport: rt}
	orders, account := base+"/v1/orders", base+"/v1/account"
	var (
		n        atomic.Uint64
		stopping atomic.Bool
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t0 := cpuTime()
	for range c.clients {
		wg.Go(func() {
			for !stopping.Load() {
				var req *http.Request
				if c.post {
					id := strconv.FormatUint(seq.Add(1), 10)
					req, _ = http.NewRequestWithContext(context.Background(), http.MethodPost, orders,
						strings.NewReader(`{"client_order_id":"o-`+id+`","symbol":"EURUSD","side":"buy","type":"market","qty":"1"}`))
					req.Header.Set("Content-Type", "application/json")
				} else {
					req, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, account, nil)
				}
				resp, err := client.Do(req)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					stopping.Store(true)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				n.Add(1)
			}
		})
	}
	time.Sleep(d)
	stopping.Store(true)
	wg.Wait()
	cpu := cpuTime() - t0
	runtime.ReadMemStats(&m1)
	if firstErr != nil {
		return sample{}, firstErr
	}
	return sample{cpu: cpu, reqs: n.Load(), allocs: m1.Mallocs - m0.Mallocs, bytes: m1.TotalAlloc - m0.TotalAlloc}, nil
}

// maxIdle keeps one idle HTTP/1.1 connection per client on both sides (with
// fewer, 32 clients would keep re-dialling, and the cells would measure TLS
// handshakes).
const maxIdle = 64
