// Command restparity measures what rest.Transport costs over a bare, identically
// configured net/http Transport: client CPU time and heap allocations per request,
// for every cell of {HTTP/1.1, HTTP/2} × {1, 32 clients} × {POST order, GET read}.
//
// The servers run in a child process, so getrusage(RUSAGE_SELF) counts only the
// client: net/http, TLS, and for brokerpath the transport, the gate and the Path's
// probe monitor. Each cell runs rounds of six phases, A P B B P A, where A and B
// are two bare transports and P is brokerpath, so all three see the same machine
// load. Per round, the ratio is bare CPU per request ÷ brokerpath CPU per request
// (1.00 = free; the goal is ≥ 0.97), and the control is A ÷ B. The table gives
// the trimmed mean of the rounds for each, with a 95 % confidence interval: a
// cell meets the goal when the interval lies above it.
//
// With -peers (the default) the rounds also hold what users would pick
// instead, each over a bare transport of its own: failsafe-go's failsafehttp
// RoundTripper (retry policy and circuit breaker) and go-retryablehttp's
// RoundTripper (its defaults); a round is then ten phases, a palindrome of the
// five transports, and a second table gives bare ÷ peer and peer ÷ brokerpath
// per cell.
//
//	go run ./cmd/restparity            # the tables (about 10 minutes; 5 with -peers=false)
//	go run ./cmd/restparity -rounds 20 -phase 100ms -cell "h2 POST"
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
	"math"
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

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

const childEnv = "BROKERPATH_RESTPARITY_CHILD"

// postsAsReads sends brokerpath's POSTs down the read path (no order ID, no
// ticket), to tell the submission path's cost from the rest.
var postsAsReads bool

// pSide is what takes brokerpath's place, P, in the rounds: "brokerpath"
// (rest.Transport), "bare" (a third bare transport, behind a RoundTripper
// func as any wrapper is: a check of the harness, which should read 1.00)
// or "copy" (a bare transport behind a wrapper that sends a copy of the
// request with GetBody cleared: what any transport that keeps net/http from
// replaying an order's body must at least pay).
var pSide string

// bareTracked gives the bare transport the Path's tracked dialer (to tell the
// transport's cost from the tracked connection's).
var bareTracked bool

// dumpRounds, when set, names a file that gets each round's phases (cell,
// round, transport, CPU ns, requests), for analysis elsewhere.
var dumpRounds *os.File

// gcEachPhase collects garbage before each phase (outside the measurement).
var gcEachPhase bool

// profileSide, when set, runs only one side of each round (for profiling).
var profileSide string

// peers adds the RoundTrippers users would pick instead to every round (see
// newPeers), each measured against the same bare transports.
var peers bool

type serverAddrs struct {
	H1, H2 string // base URLs
	Cert   string // base64 DER of the (shared) test certificate
}

func main() {
	if os.Getenv(childEnv) == "serve" {
		serve()
		return
	}
	rounds := flag.Int("rounds", 240, "rounds per cell (each six phases: bare A, brokerpath, bare B, bare B, brokerpath, bare A, rotating)")
	phase := flag.Duration("phase", 25*time.Millisecond, "duration of one phase of a round")
	only := flag.String("cell", "", "run only the cells whose name contains this (e.g. \"h1 POST\")")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.BoolVar(&postsAsReads, "posts-as-reads", false, "treat brokerpath's POSTs as reads (isolates the submission path's cost)")
	flag.StringVar(&pSide, "p", "brokerpath", "what takes P's place: brokerpath, bare (a third bare transport: a check of the harness) or copy (a bare transport sent a copy of each request with GetBody cleared: the floor of not replaying orders)")
	flag.BoolVar(&bareTracked, "bare-tracked-dialer", false, "give the bare transport the Path's tracked dialer (isolates the transport's own cost)")
	flag.StringVar(&profileSide, "profile-side", "", "with -cpuprofile: run only this side (bare or brokerpath) in the rounds, to profile it alone")
	flag.BoolVar(&peers, "peers", true, "also measure failsafe-go's failsafehttp RoundTripper and go-retryablehttp's RoundTripper in the same rounds (a second table)")
	flag.BoolVar(&gcEachPhase, "gc-each-phase", false, "collect garbage before each phase, outside the measurement (each phase then starts from the same heap, with cold caches)")
	dump := flag.String("dump", "", "write every phase (cell, round, transport, CPU ns, requests) to this file as CSV")
	flag.Parse()
	if *dump != "" {
		f, err := os.Create(*dump)
		if err != nil {
			fmt.Fprintln(os.Stderr, "restparity:", err)
			os.Exit(1)
		}
		defer func() { _ = f.Close() }()
		dumpRounds = f
	}
	if pSide != "brokerpath" && pSide != "bare" && pSide != "copy" {
		fmt.Fprintf(os.Stderr, "restparity: -p must be brokerpath, bare or copy (got %q)\n", pSide)
		os.Exit(2)
	}
	if *rounds < 1 || *phase <= 0 {
		fmt.Fprintf(os.Stderr, "restparity: -rounds must be at least 1 and -phase positive (got -rounds %d -phase %v)\n", *rounds, *phase)
		os.Exit(2)
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err == nil {
			// 1 kHz rather than pprof's 100 Hz: the transport's own functions
			// are a few per cent of the samples, and need many to be told apart.
			// (pprof then fails to set its own rate, and the runtime says so on
			// stderr: "cannot set cpu profile rate"; the profile is at 1 kHz.)
			runtime.SetCPUProfileRate(1000)
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
}

func (c cell) String() string {
	m := "GET read"
	if c.post {
		m = "POST order"
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

// goal is the least bare ÷ brokerpath ratio a cell should show.
const goal = 0.97

// Allocation budgets per request over bare: orders, reads.
const orderAllocBudget, readAllocBudget = 1.0, 0.0

// summary describes a cell's per-round ratios. Its centre is the 20 %
// trimmed mean of their logarithms (a ratio and its inverse weigh alike, and
// a round hit by a load spike at either end is dropped), with a 95 %
// confidence interval; the median and the middle half of the rounds show the
// spread.
type summary struct {
	n           int
	tm, lo, hi  float64 // trimmed (geometric) mean and its 95 % confidence interval
	med, q1, q3 float64 // median round, and the middle half of the rounds
}

// trim is the fraction of rounds dropped at each end for the trimmed mean.
const trim = 0.2

// summarize describes xs (ratios, all positive). The interval is Tukey and
// McLaughlin's for a trimmed mean: ± t(0.975, n−2k−1) × the winsorized
// standard deviation ÷ ((1−2·trim)·√n), on the logarithms.
func summarize(xs []float64) summary {
	n := len(xs)
	if n == 0 {
		return summary{}
	}
	s := make([]float64, n)
	for i, x := range xs {
		s[i] = math.Log(x)
	}
	slices.Sort(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + med) / 2
	}
	out := summary{n: n, med: math.Exp(med), q1: math.Exp(s[n/4]), q3: math.Exp(s[(3*n)/4])}
	k := int(trim * float64(n))
	var sum float64
	for _, v := range s[k : n-k] {
		sum += v
	}
	m := sum / float64(n-2*k)
	out.tm, out.lo, out.hi = math.Exp(m), math.Exp(s[0]), math.Exp(s[n-1])
	if n-2*k < 2 {
		return out // too few rounds for an interval: the whole range
	}
	// Winsorized variance: the trimmed values replaced by the nearest kept one.
	var wsum, wsq float64
	for _, v := range s {
		w := min(max(v, s[k]), s[n-k-1])
		wsum += w
		wsq += w * w
	}
	wmean := wsum / float64(n)
	wvar := (wsq - float64(n)*wmean*wmean) / float64(n-1)
	se := math.Sqrt(max(wvar, 0)) / ((1 - 2*trim) * math.Sqrt(float64(n)))
	h := tQuantile975(n-2*k-1) * se
	out.lo, out.hi = math.Exp(m-h), math.Exp(m+h)
	return out
}

// tQuantile975 is Student's t 97.5 % quantile for df degrees of freedom
// (a table to 30, then the normal approximation's first correction).
func tQuantile975(df int) float64 {
	table := [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	switch {
	case df < 1:
		return math.Inf(1)
	case df <= len(table):
		return table[df-1]
	}
	const z = 1.959964
	return z + (z*z*z+z)/(4*float64(df))
}

// verdict says whether the rounds show the goal met, show it missed, or do
// not resolve it (the interval straddles the goal).
func (s summary) verdict(goal float64) string {
	switch {
	case s.lo >= goal:
		return fmt.Sprintf("≥ %.2f", goal)
	case s.hi < goal:
		return fmt.Sprintf("✗ < %.2f", goal)
	}
	return "not resolved"
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
	if len(cells) == 0 {
		return fmt.Errorf("no cell matches -cell %q", only)
	}
	fmt.Printf("rest.Transport vs a bare http.Transport, client CPU per request (getrusage, servers in a child process)\n")
	if pSide != "brokerpath" {
		fmt.Printf("-p %s: P, in the brokerpath column, is not rest.Transport but %s\n", pSide, map[string]string{
			"bare": "a third bare transport behind a RoundTripper func (a check of the harness: it should read 1.00)",
			"copy": "a bare transport sent a copy of each request with GetBody cleared (the floor of not replaying orders)"}[pSide])
	}
	fmt.Printf("%s, GOMAXPROCS %d, load average %s at the start; %d rounds per cell of %v phases: A P B B P A, rotating (A, B bare, P brokerpath)\n\n",
		runtime.Version(), runtime.GOMAXPROCS(0), loadAvg(), rounds, phase)
	if peers {
		fmt.Printf("With the peers (-peers): each round is ten phases, the peers F and R (failsafe-go, go-retryablehttp) between, e.g. A P B F R R F B P A, rotating; the table below counts only A, P and B, the peers' table follows it.\n\n")
	}
	fmt.Printf("| cell | bare µs CPU/req | brokerpath µs CPU/req | bare ÷ brokerpath [95 %% CI] | median round | middle half of rounds | control bare ÷ bare [95 %% CI] | control middle half | goal ≥ %.2f | allocs/req bare → brokerpath (bytes) |\n", goal)
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	var missed, unresolved, allocOver, disturbed int
	var peerRows []string
	ctlLo, ctlHi, ctlWide := math.Inf(1), math.Inf(-1), 0.0
	for _, c := range cells {
		base := addrs.H2
		if c.proto == "h1" {
			base = addrs.H1
		}
		m, err := measure(c, base, addrs.H2, tlsCfg, rounds, phase)
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		if profileSide != "" {
			continue // measure said what the profiled side cost; no ratios
		}
		bare := m.bareA
		bare.add(m.bareB)
		r, ctl := summarize(m.ratios), summarize(m.controls)
		ctlLo, ctlHi = min(ctlLo, ctl.tm), max(ctlHi, ctl.tm)
		ctlWide = max(ctlWide, ctl.hi-ctl.lo)
		ab, abp := float64(bare.allocs)/float64(bare.reqs), float64(m.bp.allocs)/float64(m.bp.reqs)
		bb, bbp := float64(bare.bytes)/float64(bare.reqs), float64(m.bp.bytes)/float64(m.bp.reqs)
		budget := readAllocBudget
		if c.post {
			budget = orderAllocBudget
		}
		v := r.verdict(goal)
		switch {
		case strings.HasPrefix(v, "✗"):
			missed++
		case v == "not resolved":
			unresolved++
		}
		if m.empty > 0 {
			v += fmt.Sprintf(" (%d round(s) left out: a transport completed no request in them)", m.empty)
		}
		if m.switches+m.halts > 0 {
			v += fmt.Sprintf(" (the Path switched %d and halted %d times during the rounds: not a healthy path)", m.switches, m.halts)
			disturbed++
		}
		allocMark := ""
		if abp-ab > budget+0.5 {
			allocMark = " ✗"
			allocOver++
		}
		fmt.Printf("| %s | %.2f | %.2f | %.3f [%.3f–%.3f] | %.3f | %.3f–%.3f | %.3f [%.3f–%.3f] | %.3f–%.3f | %s | %.1f → %.1f (%+.1f%s; %.0f → %.0f B) |\n",
			c, bare.cpuPerReq()/1e3, m.bp.cpuPerReq()/1e3,
			r.tm, r.lo, r.hi, r.med, r.q1, r.q3,
			ctl.tm, ctl.lo, ctl.hi, ctl.q1, ctl.q3, v,
			ab, abp, abp-ab, allocMark, bb, bbp)
		if peers {
			f, rr := summarize(m.peerRatios[0]), summarize(m.peerRatios[1])
			fb, rb := summarize(m.peerVsBP[0]), summarize(m.peerVsBP[1])
			ci := func(s summary) string { return fmt.Sprintf("%.3f [%.3f–%.3f]", s.tm, s.lo, s.hi) }
			perReq := func(x sample) float64 { return float64(x.allocs) / float64(x.reqs) }
			peerRows = append(peerRows, fmt.Sprintf("| %s | %.2f | %.2f | %.2f | %.2f | %s | %s | %s | %s | %s | %.1f / %.1f / %.1f / %.1f |",
				c, bare.cpuPerReq()/1e3, m.bp.cpuPerReq()/1e3, m.peer[0].cpuPerReq()/1e3, m.peer[1].cpuPerReq()/1e3,
				ci(r), ci(f), ci(rr), ci(fb), ci(rb), ab, abp, perReq(m.peer[0]), perReq(m.peer[1])))
		}
	}
	if profileSide != "" {
		return nil // the profiled side's figures went to stderr; there are no ratios
	}
	fmt.Printf("\nPer round, bare ÷ brokerpath is the CPU per request of both bare transports together ÷ brokerpath's; the column gives the %.0f %% trimmed geometric mean of the rounds with its 95 %% confidence interval. ", trim*100)
	fmt.Printf("A round is six phases, A P B B P A (the order rotates from round to round so that each transport takes every place equally often): A and B are two bare transports, P is brokerpath. bare ÷ brokerpath is A and B together against P; the control is A against B, measured in the same rounds, so its spread is the noise this run could not resolve (slightly wider than the noise of the bare ÷ brokerpath column, which pools both bare transports).\n")
	fmt.Printf("Controls across cells: %.3f–%.3f, the widest interval %.3f. Goal ≥ %.2f: shown when the 95 %% interval lies above it, missed (✗) when it lies below, not resolved when it straddles it; %d cell(s) missed, %d not resolved. Allocations: orders ≤ bare + %.0f, reads ≤ bare + %.0f; %d cell(s) over (✗). Cells in which the Path switched or halted: %d.\n",
		ctlLo, ctlHi, ctlWide, goal, missed, unresolved, orderAllocBudget, readAllocBudget, allocOver, disturbed)
	if len(peerRows) > 0 {
		fmt.Printf("\nThe peers, in the same rounds (a round is then ten phases, the five transports rotating in a palindrome): %s; %s. "+
			"Each column X ÷ Y is X's CPU per request ÷ Y's, the trimmed geometric mean of the rounds [95 %% CI]: below 1 X is cheaper, above 1 Y is; peer ÷ brokerpath above 1 means brokerpath costs less than that peer.\n\n",
			failsafeConfig, retryableConfig)
		fmt.Println("| cell | bare µs CPU/req | brokerpath µs | failsafe-go µs | go-retryablehttp µs | bare ÷ brokerpath | bare ÷ failsafe-go | bare ÷ go-retryablehttp | failsafe-go ÷ brokerpath | go-retryablehttp ÷ brokerpath | allocs/req bare / brokerpath / failsafe-go / go-retryablehttp |")
		fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
		for _, row := range peerRows {
			fmt.Println(row)
		}
	}
	return nil
}

// The peers' configurations, as a user would write them for the same job
// (one broker base URL, orders and reads, retry what fails transiently,
// stop hammering a failing broker), each over a transport identical to the
// bare ones.
const (
	failsafeConfig = "failsafe-go v0.9.8: failsafehttp.NewRoundTripper(bare, RetryPolicy (failsafehttp.NewRetryPolicyBuilder: retries on connection errors, 429 and 5xx, honours Retry-After; 2 retries, backoff 100 ms–2 s), " +
		"CircuitBreaker (opens after 5 consecutive errors or 5xx, 5 s open))"
	retryableConfig = "go-retryablehttp v0.7.8: &retryablehttp.RoundTripper{Client: NewClient() with HTTPClient over bare and Logger nil; its defaults otherwise: RetryMax 4, DefaultRetryPolicy, DefaultBackoff 1–30 s}"
)

// newPeers returns failsafe-go's and go-retryablehttp's RoundTrippers,
// configured as failsafeConfig and retryableConfig say, each over a bare
// transport of its own, and a function that closes their idle connections.
func newPeers(tlsCfg *tls.Config) ([2]http.RoundTripper, func()) {
	fsInner, rhInner := newBare(tlsCfg), newBare(tlsCfg)
	rp := failsafehttp.NewRetryPolicyBuilder().WithMaxRetries(2).WithBackoff(100*time.Millisecond, 2*time.Second).Build()
	cb := circuitbreaker.NewBuilder[*http.Response]().
		HandleIf(func(r *http.Response, err error) bool { return err != nil || (r != nil && r.StatusCode >= 500) }).
		WithFailureThreshold(5).WithDelay(5 * time.Second).Build()
	fs := failsafehttp.NewRoundTripper(fsInner, rp, cb)
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Transport: rhInner}
	rc.Logger = nil
	rh := &retryablehttp.RoundTripper{Client: rc}
	return [2]http.RoundTripper{fs, rh}, func() { fsInner.CloseIdleConnections(); rhInner.CloseIdleConnections() }
}

// loadAvg is the 1-, 5- and 15-minute load average, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

type measurement struct {
	bareA, bareB, bp sample
	// What the Path did during the rounds that a healthy path does not:
	// switches of the active endpoint and halts. Either makes the cell
	// measure reconnections, not the transport's cost per request.
	switches, halts uint64
	// empty counts rounds left out because a transport completed no request
	// in its phases (a machine stalled longer than two phases).
	empty    int
	ratios   []float64 // per round: bare (A and B) ÷ brokerpath, CPU per request
	controls []float64 // per round: A ÷ B
	// With -peers: each peer's phases, and per round bare (A and B) ÷ the
	// peer and the peer ÷ brokerpath, CPU per request.
	peer       [2]sample
	peerRatios [2][]float64
	peerVsBP   [2][]float64
}

// roundOrder is the order of the 2k phases of round i for k transports: 0 =
// bare A, 1 = brokerpath, 2 = bare B, then the peers (3 = failsafe-go, 4 =
// go-retryablehttp). Each round is a palindrome (linear drift in the
// machine's speed falls on all alike), and the order rotates, so that over k
// rounds each transport takes each of the 2k places once (runs first, runs
// twice in a row, runs last). For k = 3 a round is A P B B P A.
func roundOrder(i, k int) []int {
	o := make([]int, 2*k)
	for p := range k {
		o[p] = (i + p) % k
		o[2*k-1-p] = o[p]
	}
	return o
}

// measure runs one cell: two fresh bare transports and a fresh brokerpath
// transport (each with its own connections, warmed up), then the rounds.
func measure(c cell, base, other string, tlsCfg *tls.Config, rounds int, phase time.Duration) (m measurement, err error) {
	bareA, bareB := newBare(tlsCfg), newBare(tlsCfg)
	defer bareA.CloseIdleConnections()
	defer bareB.CloseIdleConnections()
	path, err := newPath(base, other)
	if err != nil {
		return m, err
	}
	defer func() { _ = path.Close() }()
	if bareTracked {
		bareA.DialContext = path.EndpointDialer("eu")
		bareB.DialContext = path.EndpointDialer("eu")
	}
	bpOpts := rest.Options{TLSConfig: tlsCfg, MaxIdleConnsPerHost: maxIdle}
	if postsAsReads {
		bpOpts.Rules = rest.Rules{NotOrders: []rest.Rule{{Method: http.MethodPost, Path: "/v1/orders"}}}
	}
	bpRT, err := rest.NewTransport(path, bpOpts)
	if err != nil {
		return m, err
	}
	defer bpRT.CloseIdleConnections()
	var seq atomic.Uint64
	var pRT http.RoundTripper = bpRT
	switch pSide {
	case "bare":
		inner := newBare(tlsCfg)
		defer inner.CloseIdleConnections()
		pRT = roundTripFunc(inner.RoundTrip)
	case "copy":
		inner := newBare(tlsCfg)
		defer inner.CloseIdleConnections()
		pRT = roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r2 := new(http.Request)
			*r2 = *r
			r2.GetBody = nil
			return inner.RoundTrip(r2)
		})
	}
	rts := []http.RoundTripper{bareA, pRT, bareB}
	if peers && profileSide == "" {
		ps, closePeers := newPeers(tlsCfg)
		defer closePeers()
		rts = append(rts, ps[0], ps[1])
	}
	cls := make([]*clients, len(rts))
	for i, rt := range rts {
		cls[i] = startClients(c, rt, base, &seq)
		defer cls[i].stop()
	}
	// warm up: connections, TLS sessions, pools, the goroutines' stacks
	for _, cl := range cls {
		if _, err := cl.phase(max(phase, 200*time.Millisecond)); err != nil {
			return m, err
		}
	}
	var profiled sample // the profiled side's phases (with -profile-side)
	before := path.Snapshot()
	defer func() {
		after := path.Snapshot()
		m.switches, m.halts = after.Token-before.Token, after.Halts-before.Halts
	}()
	for i := range rounds {
		s := make([]sample, len(cls))
		for _, which := range roundOrder(i, len(cls)) {
			if (profileSide == "bare" && which == 1) || (profileSide == "brokerpath" && which != 1) {
				continue
			}
			got, err := cls[which].phase(phase)
			if err != nil {
				return m, err
			}
			s[which].add(got)
			if dumpRounds != nil {
				fmt.Fprintf(dumpRounds, "%s,%d,%s,%d,%d,%d\n", c, i, [5]string{"A", "P", "B", "failsafe-go", "go-retryablehttp"}[which], got.cpu.Nanoseconds(), got.reqs, got.allocs)
			}
		}
		if profileSide != "" {
			for _, x := range s {
				profiled.add(x)
			}
			continue
		}
		if slices.ContainsFunc(s, func(x sample) bool { return x.reqs == 0 }) {
			m.empty++ // a transport finished no request in its phases: no ratio
			continue
		}
		bare := s[0]
		bare.add(s[2])
		m.ratios = append(m.ratios, bare.cpuPerReq()/s[1].cpuPerReq())
		m.controls = append(m.controls, s[0].cpuPerReq()/s[2].cpuPerReq())
		m.bareA.add(s[0])
		m.bp.add(s[1])
		m.bareB.add(s[2])
		for j, x := range s[3:] {
			m.peer[j].add(x)
			m.peerRatios[j] = append(m.peerRatios[j], bare.cpuPerReq()/x.cpuPerReq())
			m.peerVsBP[j] = append(m.peerVsBP[j], x.cpuPerReq()/s[1].cpuPerReq())
		}
	}
	if profileSide != "" {
		fmt.Fprintf(os.Stderr, "restparity: %s, %s side only: %d requests, %.2f µs CPU/req, %.1f allocs/req\n",
			c, profileSide, profiled.reqs, profiled.cpuPerReq()/1e3, float64(profiled.allocs)/float64(profiled.reqs))
	}
	return m, nil
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

// clients are a cell's client goroutines for one transport: started once and
// kept for the whole cell, as an application keeps its own (goroutines
// started afresh for every phase would grow their stacks again each time, a
// cost that falls unevenly on transports whose calls go deeper).
type clients struct {
	c       cell
	client  *http.Client
	orders  string
	account string
	seq     *atomic.Uint64
	work    []chan *phaseRun
	done    sync.WaitGroup
}

// phaseRun is one phase's shared state.
type phaseRun struct {
	n        atomic.Uint64
	stopping atomic.Bool
	wg       sync.WaitGroup
	errOnce  sync.Once
	err      error
}

func startClients(c cell, rt http.RoundTripper, base string, seq *atomic.Uint64) *clients {
	cl := &clients{c: c, client: &http.Client{Transport: rt}, orders: base + "/v1/orders", account: base + "/v1/account", seq: seq}
	for range c.clients {
		ch := make(chan *phaseRun)
		cl.work = append(cl.work, ch)
		cl.done.Go(func() {
			for ph := range ch {
				cl.run(ph)
				ph.wg.Done()
			}
		})
	}
	return cl
}

// stop ends the goroutines.
func (cl *clients) stop() {
	for _, ch := range cl.work {
		close(ch)
	}
	cl.done.Wait()
}

// run sends requests until the phase stops or one fails.
func (cl *clients) run(ph *phaseRun) {
	for !ph.stopping.Load() {
		var req *http.Request
		if cl.c.post {
			id := strconv.FormatUint(cl.seq.Add(1), 10)
			req, _ = http.NewRequestWithContext(context.Background(), http.MethodPost, cl.orders,
				strings.NewReader(`{"client_order_id":"o-`+id+`","symbol":"EURUSD","side":"buy","type":"market","qty":"1"}`))
			req.Header.Set("Content-Type", "application/json")
		} else {
			req, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, cl.account, nil)
		}
		resp, err := cl.client.Do(req)
		if err != nil {
			ph.errOnce.Do(func() { ph.err = err })
			ph.stopping.Store(true)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		ph.n.Add(1)
	}
}

// phase drives the transport with all its clients for d and returns what it
// cost.
func (cl *clients) phase(d time.Duration) (sample, error) {
	if gcEachPhase {
		runtime.GC()
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	ph := new(phaseRun)
	ph.wg.Add(len(cl.work))
	t0 := cpuTime()
	for _, ch := range cl.work {
		ch <- ph
	}
	time.Sleep(d)
	ph.stopping.Store(true)
	ph.wg.Wait()
	cpu := cpuTime() - t0
	runtime.ReadMemStats(&m1)
	if ph.err != nil {
		return sample{}, ph.err
	}
	return sample{cpu: cpu, reqs: ph.n.Load(), allocs: m1.Mallocs - m0.Mallocs, bytes: m1.TotalAlloc - m0.TotalAlloc}, nil
}

// maxIdle keeps one idle HTTP/1.1 connection per client on both sides (with
// fewer, 32 clients would keep re-dialling, and the cells would measure TLS
// handshakes).
const maxIdle = 64

// roundTripFunc is a RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
