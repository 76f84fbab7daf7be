// Command simbroker runs the simulated multi-region broker of
// internal/simbroker so a person can point their own code at it and run a
// failover drill by hand.
//
// It prints every endpoint (REST, probe, WebSocket and FIX per region), the
// CA file to trust, the API key (a simulator key: printing it is the point),
// ready curl lines for the order API and the admin endpoint (one command
// each, to paste as printed), and the export lines the quick start reads
// (BROKER_REGIONS, BROKER_CA_FILE, BROKER_API_KEY, BROKER_FIX_SENDER,
// BROKER_FIX_TARGET):
//
//	go run ./cmd/simbroker -tick 250ms -lag us=2s -budget 20 -session-policy one-per-credential
//	go run ./cmd/simbroker -dedup none -fence enforced -tokens checked   # a strict broker
//	curl -sS --fail-with-body -X POST 'http://127.0.0.1:PORT/fault?region=eu&service=rest&kind=blackhole'
//	curl -sS --fail-with-body 'http://127.0.0.1:PORT/audit'
//
// It stops cleanly on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "simbroker:", err)
		os.Exit(1)
	}
}

// options are the command-line flags.
type options struct {
	cfg   simbroker.Config
	admin string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	cfg := simbroker.DefaultConfig()
	fs := flag.NewFlagSet("simbroker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	regions := fs.String("regions", strings.Join(cfg.Regions, ","), "comma-separated region names")
	fs.DurationVar(&cfg.TickInterval, "tick", cfg.TickInterval, "market data tick interval (0: only POST /tick)")
	lag := fs.String("lag", "", "replication lag per region, e.g. us=2s,eu=0s")
	fs.Float64Var(&cfg.HandshakesPerSecond, "budget", 20, "WebSocket handshakes per second per region (0: no limit)")
	fs.IntVar(&cfg.HandshakeBurst, "burst", 0, "handshake burst (0: same as -budget)")
	fs.IntVar(&cfg.ReplayBuffer, "replay", cfg.ReplayBuffer, "ticks kept per stream per region for resume")
	policy := fs.String("session-policy", cfg.SessionPolicy.String(), "concurrent | one-per-credential")
	dedup := fs.String("dedup", cfg.Dedup.String(), "book deduplication of client order IDs: across-regions | open-only | none")
	fence := fs.String("fence", cfg.Fence.String(), "broker-side fence (kill switch): none | enforced")
	tokens := fs.String("tokens", cfg.Tokens.String(), "fencing tokens on orders: off | checked")
	streams := fs.String("streams", strings.Join(cfg.Streams, ","), "comma-separated market data streams")
	fs.StringVar(&cfg.APIKey, "api-key", "", "API key (empty: random)")
	fs.StringVar(&cfg.AccountID, "account", cfg.AccountID, "account ID")
	fs.StringVar(&cfg.BrokerCompID, "broker-compid", cfg.BrokerCompID, "broker's FIX CompID")
	fs.StringVar(&cfg.ClientCompID, "client-compid", cfg.ClientCompID, "client's FIX CompID")
	fs.BoolVar(&cfg.ResetOnLogon, "reset-on-logon", false, "FIX: reset sequence numbers on every logon")
	admin := fs.String("admin", "127.0.0.1:0", "admin HTTP listen address (loopback)")
	verbose := fs.Bool("v", false, "log to stderr (debug, including FIX messages)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	cfg.Regions = splitList(*regions)
	cfg.Streams = splitList(*streams)
	p, err := simbroker.ParseSessionPolicy(*policy)
	if err != nil {
		return options{}, err
	}
	cfg.SessionPolicy = p
	if cfg.Dedup, err = simbroker.ParseDedupPolicy(*dedup); err != nil {
		return options{}, err
	}
	if cfg.Fence, err = simbroker.ParseFencePolicy(*fence); err != nil {
		return options{}, err
	}
	if cfg.Tokens, err = simbroker.ParseTokenPolicy(*tokens); err != nil {
		return options{}, err
	}
	cfg.ReplicationLag = map[string]time.Duration{}
	for _, kv := range splitList(*lag) {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			return options{}, fmt.Errorf("-lag %q: want region=duration", kv)
		}
		d, err := time.ParseDuration(val)
		if err != nil {
			return options{}, fmt.Errorf("-lag %q: %w", kv, err)
		}
		cfg.ReplicationLag[name] = d
	}
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		cfg.FIXVerbose = true
	}
	return options{cfg: cfg, admin: *admin}, nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// run starts the broker and the admin server, prints the endpoints, and
// serves until ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	b, err := simbroker.Start(ctx, opts.cfg)
	if err != nil {
		return err
	}
	defer b.Close()

	ln, err := net.Listen("tcp", opts.admin)
	if err != nil {
		return fmt.Errorf("admin listen %s: %w", opts.admin, err)
	}
	srv := &http.Server{Handler: newAdmin(b), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	printEndpoints(stdout, b, "http://"+ln.Addr().String())

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("admin server: %w", err)
	}
	fmt.Fprintln(stdout, "stopping")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	<-served
	return b.Close()
}

func printEndpoints(w io.Writer, b *simbroker.Broker, admin string) {
	cfg := b.Config()
	sid := b.FIXSessionID()
	first, last := b.Regions()[0], b.Regions()[len(b.Regions())-1]
	fmt.Fprintf(w, "simbroker: %d regions over ONE shared account book, ticks every %v\n", len(b.Regions()), cfg.TickInterval)
	fmt.Fprintf(w, "policies  dedup %s · fence %s · tokens %s · session %s\n", cfg.Dedup, cfg.Fence, cfg.Tokens, cfg.SessionPolicy)
	fmt.Fprintf(w, "services per region (each behind its own fault relay; the -fault service names):\n")
	fmt.Fprintf(w, "  rest   order API (HTTPS, HTTP/2 and HTTP/1.1)\n")
	fmt.Fprintf(w, "  probe  the same REST server through a second relay: point health monitors here\n")
	fmt.Fprintf(w, "  ws     WebSocket market data (wss, path /ws)\n")
	fmt.Fprintf(w, "  fix    FIX 4.4 acceptor (one session for the account, shared by every region)\n")
	for _, rg := range b.Regions() {
		fmt.Fprintf(w, "region %s\n", rg.Name())
		fmt.Fprintf(w, "  REST   %s\n", rg.RESTURL())
		fmt.Fprintf(w, "  probe  %s   (monitors: GET /v1/account here)\n", rg.ProbeURL())
		fmt.Fprintf(w, "  WS     %s\n", rg.WSURL())
		fmt.Fprintf(w, "  FIX    %s   (FIX.4.4 SenderCompID=%s TargetCompID=%s)\n", rg.FIXAddr(), sid.SenderCompID, sid.TargetCompID)
	}
	lags := make([]string, 0, len(cfg.ReplicationLag))
	for r, d := range cfg.ReplicationLag {
		lags = append(lags, r+"="+d.String())
	}
	sort.Strings(lags)
	fmt.Fprintf(w, "streams   %s   replication lag %v   handshake budget %v/s\n", strings.Join(cfg.Streams, ","), lags, cfg.HandshakesPerSecond)
	fmt.Fprintf(w, "CA file   %s\n", b.CAFile())
	fmt.Fprintf(w, "API key   %s   (header X-API-Key; a simulator key, printed on purpose)\n", b.APIKey())

	tokHdr, tokNote := "", ""
	if cfg.Tokens == simbroker.TokensChecked {
		tokHdr = fmt.Sprintf(" -H '%s: 1'", simbroker.TokenHeader)
		tokNote = fmt.Sprintf(" (tokens checked: every order needs header %s or FIX tag %d; lower than the highest seen is rejected 409)", simbroker.TokenHeader, simbroker.TokenTag)
	}
	// Every printed command is one command with one URL, and fails on an
	// HTTP error (--fail-with-body), so it can be pasted as it stands.
	curl := fmt.Sprintf("curl -sS --fail-with-body --cacert %s -H 'X-API-Key: %s'", shellQuote(b.CAFile()), b.APIKey())
	fmt.Fprintf(w, "REST order API (JSON; every /v1 call needs X-API-Key)%s\n", tokNote)
	fmt.Fprintf(w, "  POST   /v1/orders                    body {\"client_order_id\",\"symbol\",\"side\":\"buy|sell\",\"qty\",\"type\":\"market|limit\",\"price\"}\n")
	fmt.Fprintf(w, "                                       201 booked; 200 existing order (repeat, dedup %s); 400 invalid;\n", cfg.Dedup)
	fmt.Fprintf(w, "                                       403 region fenced; 409 stale token; 428 missing token\n")
	fmt.Fprintf(w, "  GET    /v1/orders/{client_order_id}  200 order | 404      GET /v1/orders?status=open|all\n")
	fmt.Fprintf(w, "  DELETE /v1/orders/{client_order_id}  cancel: 200 | 409 not open | 404\n")
	fmt.Fprintf(w, "  GET    /v1/account                   the probe (authenticated, cheap)\n")
	fmt.Fprintf(w, "  POST   /v1/account/fence   {\"region\"}   kill switch, on any region (fence %s; 501 when none)\n", cfg.Fence)
	fmt.Fprintf(w, "  POST   /v1/account/unfence {\"region\"}   GET /v1/account/fence: fenced regions, highest token\n")
	fmt.Fprintf(w, "  place an order:\n    %s%s -H 'Content-Type: application/json' \\\n      -d '{\"client_order_id\":\"hello-1\",\"symbol\":\"EURUSD\",\"side\":\"buy\",\"qty\":\"1000\",\"type\":\"market\"}' %s/v1/orders\n",
		curl, tokHdr, first.RESTURL())
	fmt.Fprintf(w, "  probe:\n    %s %s/v1/account\n", curl, first.ProbeURL())
	if cfg.Fence == simbroker.FenceEnforced {
		fmt.Fprintf(w, "  fence %s (through %s):\n    %s -d '{\"region\":\"%s\"}' %s/v1/account/fence\n", first.Name(), last.Name(), curl, first.Name(), last.RESTURL())
	} else {
		fmt.Fprintf(w, "  the kill switch answers 501 (fence none): start with -fence enforced to try it\n")
	}

	// The admin lines, one command each.
	adminCurl := "curl -sS --fail-with-body"
	post := func(path string) { fmt.Fprintf(w, "  %s -X POST '%s%s'\n", adminCurl, admin, path) }
	fmt.Fprintf(w, "admin     %s   (no key; loopback only)\n", admin)
	fmt.Fprintf(w, "  faults, one region and service at a time:\n")
	post(fmt.Sprintf("/fault?region=%s&service=rest&kind=blackhole", cfg.Regions[0]))
	post(fmt.Sprintf("/fault?region=%s&service=rest&kind=none", cfg.Regions[0]))
	fmt.Fprintf(w, "    service: rest | probe | ws | fix\n")
	fmt.Fprintf(w, "    kind:    none | down | blackhole | latency&delay=200ms&jitter=50ms | reset |\n")
	fmt.Fprintf(w, "             503&n=10 (or &for=30s, &retry_after=2s) | partial | unknown&n=1 |\n")
	fmt.Fprintf(w, "             flap&period=2s[&fault=down|blackhole|reset] | partition (probe blackhole; service ignored)\n")
	if cfg.Fence == simbroker.FenceEnforced {
		fmt.Fprintf(w, "  the broker's kill switch:\n")
		post("/fence?region=" + cfg.Regions[0])
		post("/unfence?region=" + cfg.Regions[0])
	}
	if cfg.Tokens == simbroker.TokensChecked {
		fmt.Fprintf(w, "  raise the highest fencing token seen:\n")
		post("/token?value=7")
	}
	fmt.Fprintf(w, "  what the broker booked and saw:\n")
	for _, p := range []string{"audit", "book", "faults", "stats", "endpoints"} {
		fmt.Fprintf(w, "  %s '%s/%s'\n", adminCurl, admin, p)
	}
	fmt.Fprintf(w, "  a tick now, and replication lag:\n")
	post("/tick?stream=" + cfg.Streams[0])
	post(fmt.Sprintf("/lag?region=%s&lag=2s", cfg.Regions[len(cfg.Regions)-1]))

	// The quick start (README, examples/quickstart) reads these.
	var regions []string
	for _, rg := range b.Regions() {
		regions = append(regions, fmt.Sprintf("%s=%s,%s,%s", rg.Name(), rg.RESTURL(), rg.WSURL(), rg.FIXAddr()))
	}
	fmt.Fprintf(w, "quick start: paste these into the shell that runs it, then go run .\n")
	fmt.Fprintf(w, "  export BROKER_REGIONS=%s\n", shellQuote(strings.Join(regions, " ")))
	fmt.Fprintf(w, "  export BROKER_CA_FILE=%s\n", shellQuote(b.CAFile()))
	fmt.Fprintf(w, "  export BROKER_API_KEY=%s\n", shellQuote(b.APIKey()))
	fmt.Fprintf(w, "  export BROKER_FIX_SENDER=%s BROKER_FIX_TARGET=%s\n", shellQuote(sid.SenderCompID), shellQuote(sid.TargetCompID))
	var urls []string
	for _, rg := range b.Regions() {
		urls = append(urls, rg.RESTURL())
	}
	fmt.Fprintf(w, "REST-only quick start (it speaks Alpaca's paths and headers, which this broker also serves): paste this instead, then go run .\n")
	fmt.Fprintf(w, "  export BROKER_URLS=%s SSL_CERT_FILE=%s APCA_API_KEY_ID=quickstart APCA_API_SECRET_KEY=%s\n",
		shellQuote(strings.Join(urls, " ")), shellQuote(b.CAFile()), shellQuote(b.APIKey()))
	fmt.Fprintln(w, "Ctrl-C to stop.")
}
