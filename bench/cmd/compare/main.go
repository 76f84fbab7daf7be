// Command compare measures brokerpath against the peers a user would pick
// instead (quickfix multi-host failover, net/http, failsafe-go,
// go-retryablehttp, a WebSocket reconnect loop) on the simulated broker and
// prints markdown tables: first every peer at the detection budget
// brokerpath's probes have, then every peer at its own defaults.
// `make bench-compare` runs it; -h lists the settings.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/bench/compare"
)

func main() {
	compare.ChildMain()
	d := compare.DefaultSettings()
	var s compare.Settings
	runs := flag.Int("runs", 5, "runs per row (median)")
	out := flag.String("out", "", "also write the tables to this file (e.g. RESULTS.md)")
	quick := flag.Bool("quick", false, "one short run per row; the defaults table's FIX and WebSocket rows skipped")

	// brokerpath
	flag.DurationVar(&s.ProbeInterval, "probe-interval", d.ProbeInterval, "brokerpath: probe each endpoint this often")
	flag.DurationVar(&s.ProbeTimeout, "probe-timeout", d.ProbeTimeout, "brokerpath: one probe's limit")
	flag.IntVar(&s.FailureThreshold, "failures", d.FailureThreshold, "brokerpath: failed probes in a row that make an endpoint DOWN")
	flag.DurationVar(&s.InflightGrace, "inflight-grace", d.InflightGrace, "brokerpath: InflightGrace")
	flag.DurationVar(&s.OrderTimeout, "order-timeout", d.OrderTimeout, "brokerpath: per-order context (it detects with probes, not order timeouts)")
	flag.IntVar(&s.FIXHeartBtInt, "fix-heartbeat", d.FIXHeartBtInt, "FIX: HeartBtInt in seconds, every row")

	// Peers. Unless set, each follows brokerpath's settings (the equal
	// budget; see compare.Settings.EqualPeers); the defaults shown are those
	// of the default probe settings.
	flag.DurationVar(&s.PeerAttemptTimeout, "peer-attempt-timeout", d.PeerAttemptTimeout, "REST peers: one attempt's limit (equal: -probe-timeout)")
	flag.IntVar(&s.FailsafeAttempts, "failsafe-attempts", d.FailsafeAttempts, "failsafe-go: attempts on the primary (1 + retries) before the Fallback to the backup (equal: -failures)")
	flag.DurationVar(&s.FailsafeDelay, "failsafe-delay", d.FailsafeDelay, "failsafe-go: delay between retries (equal: -probe-interval − -probe-timeout)")
	flag.IntVar(&s.FailsafeBreaker, "failsafe-breaker", d.FailsafeBreaker, "failsafe-go: failures that open the CircuitBreaker (equal: -failures)")
	flag.IntVar(&s.RetryableAttempts, "retryable-attempts", d.RetryableAttempts, "go-retryablehttp: attempts on the primary before retries go to the backup (equal: -failures)")
	flag.DurationVar(&s.RetryableWaitMin, "retryable-wait-min", d.RetryableWaitMin, "go-retryablehttp: RetryWaitMin (equal: -probe-interval − -probe-timeout)")
	flag.DurationVar(&s.RetryableWaitMax, "retryable-wait-max", d.RetryableWaitMax, "go-retryablehttp: RetryWaitMax (equal: as -retryable-wait-min)")
	flag.DurationVar(&s.QuickfixReconnect, "quickfix-reconnect", d.QuickfixReconnect, "quickfix: ReconnectInterval (equal: -probe-interval)")
	flag.DurationVar(&s.WSSilence, "ws-silence", d.WSSilence, "reconnect loop: read deadline, no message for this long = dead (equal: -probe-interval)")
	flag.DurationVar(&s.WSConnectTimeout, "ws-connect-timeout", d.WSConnectTimeout, "reconnect loop: one connect's limit (equal: -probe-timeout)")
	flag.DurationVar(&s.WSBackoffBase, "ws-backoff-base", d.WSBackoffBase, "reconnect loop: wait before reconnecting, ×2 per failed connect (equal: -probe-interval − -probe-timeout)")
	flag.DurationVar(&s.WSBackoffMax, "ws-backoff-max", d.WSBackoffMax, "reconnect loop: longest wait (equal: as -ws-backoff-base)")
	flag.Float64Var(&s.WSJitter, "ws-jitter", d.WSJitter, "reconnect loop: + uniform(0, jitter) × wait (equal: 0)")
	flag.IntVar(&s.WSSwitchAfter, "ws-switch-after", d.WSSwitchAfter, "reconnect loop: failed connects before it switches region (equal: -failures − 1; the silent connection is the first failure)")
	defAttempt := flag.Duration("defaults-attempt-timeout", 150*time.Millisecond, "defaults table: the REST peers' attempt timeout (none of them has one by default)")
	flag.Parse()

	// The peers follow brokerpath's settings unless a peer flag was given.
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	eq := s
	eq.EqualPeers()
	keep := func(name string, dst, equal any) {
		if set[name] {
			return
		}
		switch p := dst.(type) {
		case *time.Duration:
			*p = *(equal.(*time.Duration))
		case *int:
			*p = *(equal.(*int))
		case *float64:
			*p = *(equal.(*float64))
		}
	}
	keep("peer-attempt-timeout", &s.PeerAttemptTimeout, &eq.PeerAttemptTimeout)
	keep("failsafe-attempts", &s.FailsafeAttempts, &eq.FailsafeAttempts)
	keep("failsafe-delay", &s.FailsafeDelay, &eq.FailsafeDelay)
	keep("failsafe-breaker", &s.FailsafeBreaker, &eq.FailsafeBreaker)
	keep("retryable-attempts", &s.RetryableAttempts, &eq.RetryableAttempts)
	keep("retryable-wait-min", &s.RetryableWaitMin, &eq.RetryableWaitMin)
	if set["retryable-wait-min"] && !set["retryable-wait-max"] {
		s.RetryableWaitMax = s.RetryableWaitMin
	} else {
		keep("retryable-wait-max", &s.RetryableWaitMax, &eq.RetryableWaitMax)
	}
	keep("quickfix-reconnect", &s.QuickfixReconnect, &eq.QuickfixReconnect)
	keep("ws-silence", &s.WSSilence, &eq.WSSilence)
	keep("ws-connect-timeout", &s.WSConnectTimeout, &eq.WSConnectTimeout)
	keep("ws-backoff-base", &s.WSBackoffBase, &eq.WSBackoffBase)
	if set["ws-backoff-base"] && !set["ws-backoff-max"] {
		s.WSBackoffMax = s.WSBackoffBase
	} else {
		keep("ws-backoff-max", &s.WSBackoffMax, &eq.WSBackoffMax)
	}
	keep("ws-jitter", &s.WSJitter, &eq.WSJitter)
	keep("ws-switch-after", &s.WSSwitchAfter, &eq.WSSwitchAfter)
	if err := s.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "compare: bad settings:", err)
		os.Exit(2)
	}
	if *runs < 1 {
		fmt.Fprintf(os.Stderr, "compare: -runs is %d, must be >= 1\n", *runs)
		os.Exit(2)
	}
	if *defAttempt <= 0 {
		fmt.Fprintf(os.Stderr, "compare: -defaults-attempt-timeout is %v, must be > 0\n", *defAttempt)
		os.Exit(2)
	}

	start := time.Now()
	rep, err := compare.Run(compare.Options{Runs: *runs, Quick: *quick, Settings: s, DefaultsAttemptTimeout: *defAttempt,
		Progress: func(f string, a ...any) {
			fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(f, a...))
		}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Print(rep.Markdown)
	if *out != "" {
		md := "# brokerpath vs the peers\n\nReproduce: `make bench-compare BENCH_COMPARE_ARGS='" + argsOf() + "'` (or `cd bench && go run ./cmd/compare " + argsOf() + " -out RESULTS.md`; `-h` lists the settings).\n\n" + rep.Markdown
		if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if len(rep.Errors) > 0 {
		os.Exit(1)
	}
}

// argsOf repeats the flags given, except -out.
func argsOf() string {
	var a []string
	flag.Visit(func(f *flag.Flag) {
		if f.Name != "out" {
			a = append(a, "-"+f.Name+" "+f.Value.String())
		}
	})
	return strings.Join(a, " ")
}
