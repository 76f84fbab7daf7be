// Command orderclient is brokerpath's demo: an order client that uses all
// three transports through one path — REST for orders and account reads, a
// WebSocket price stream, a FIX session for orders — while a scripted outage
// hits the primary region of an embedded two-region simulated broker. It
// prints a timeline (probes failing, DEGRADED, DOWN, FENCE_REQUIRED, the
// fence, SWITCHED, reconcile, release, the stream resuming, the FIX logon in
// the other region, the gated failback) and a summary, and exits non-zero if
// any invariant broke.
//
//	go run ./examples/orderclient                       # blackhole on eu
//	go run ./examples/orderclient -fault both           # both regions: halt, then resume
//	go run ./examples/orderclient -fault partial -v     # every event and acknowledgement
//	go run ./examples/orderclient -config broker.json   # real endpoints (see orderflow.LoadConfig)
//	go run ./examples/orderclient -report reports/drill.html  # game day: HTML drill report
//	go run ./examples/orderclient -fault down -venue coinbase -fence-mode flatten  # resting orders under a venue's rules
//
// Every third order is a resting limit order. With -venue the simulated
// broker plays that venue's resting-order rules, from its profile in package
// venue: kraken (cancel-on-disconnect of the FIX session's orders, on by
// default, and a dead-man timer the client keeps armed), coinbase (8013=Y:
// every open order of the profile, the new path's and REST's included) or
// deribit (the connection's orders; only a graceful logout keeps them).
// -fence-mode flatten lets cancel-on-disconnect fire; preserve leaves the
// venue's way (an opt-out at logon where the venue has one). After every
// switch the client reconciles its open orders against the broker's list,
// and the summary says what each switch did to them: cancelled (by what),
// reported, filled meanwhile.
//
// With -report the run is also a game day: -drill-clients extra
// WebSocket clients share the Path so the surviving region sees a reconnect
// wave, the simulated broker gets a handshake budget of -drill-budget per
// second and region, counters are sampled every 100 ms, and an HTML report
// (package observe/drill) is written at the end.
//
// Faults: blackhole (default), down, 503, latency, partial, unknown-outcome,
// flapping, both.
//
// With -config the same client runs against real endpoints described by a
// JSON file (orderflow.LoadConfig documents every field); secrets are read
// from the environment variables the file names and are never printed. No
// fault is injected there and no broker audit exists: the client trades for
// -duration and checks what it can see itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/brokerpath/brokerpath/internal/drillflow"
	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/observe/drill"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the demo's knobs; the flags fill them, tests may shorten them.
type options struct {
	fault    string
	seed     uint64
	phase    time.Duration // trading before the fault, on the backup, after failback
	config   string
	verbose  bool
	timing   *orderflow.Timing // nil: orderflow.DefaultTiming
	getenv   func(string) string
	compID   string
	apiKey   string
	tickRate time.Duration
	// report: write the drill report there; drillClients extra WebSocket
	// clients and a handshake budget of drillBudget/s per region go with it.
	report       string
	drillClients int
	drillBudget  float64
	// venue: the venue whose resting-order rules the simulated broker plays
	// (cancel-on-disconnect, dead-man timer); fenceMode preserve or flatten.
	venue     string
	fenceMode string
}

var runs atomic.Int64

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("orderclient", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := options{}
	fs.StringVar(&o.fault, "fault", "blackhole", "outage of the primary region: blackhole, down, 503, latency, partial, unknown-outcome, flapping, both")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the simulated broker (prices, latency jitter)")
	fs.DurationVar(&o.phase, "duration", 3*time.Second, "length of each trading phase (before the fault, on the backup, after recovery); with -config, how long to trade")
	fs.StringVar(&o.config, "config", "", "JSON file of real endpoints (see orderflow.LoadConfig); secrets come from the environment variables it names")
	fs.BoolVar(&o.verbose, "v", false, "print every event (successful probes, every acknowledgement)")
	fs.StringVar(&o.venue, "venue", "none", "resting-order rules the simulated broker plays: none, kraken (session cancel-on-disconnect, dead-man timer), coinbase (profile-wide cancel-on-disconnect) or deribit (per-connection)")
	fs.StringVar(&o.fenceMode, "fence-mode", "preserve", "how the FIX session leaves a path: preserve (the venue's way of keeping resting orders) or flatten (let cancel-on-disconnect fire)")
	fs.StringVar(&o.report, "report", "", "write a game-day drill report (self-contained HTML) to this file")
	fs.IntVar(&o.drillClients, "drill-clients", 100, "with -report: extra WebSocket clients on the path, the population whose reconnect wave the survivor absorbs (0: none; simulated broker only)")
	fs.Float64Var(&o.drillBudget, "drill-budget", 40, "with -report: WebSocket handshake budget per second of each simulated region (0: unlimited)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.phase <= 0 {
		return o, errors.New("-duration must be > 0")
	}
	if o.drillClients < 0 || o.drillBudget < 0 {
		return o, errors.New("-drill-clients and -drill-budget must be >= 0")
	}
	if _, err := restingRules(o.venue, o.fenceMode); err != nil {
		fmt.Fprintln(stderr, "orderclient:", err)
		return o, err
	}
	return o, nil
}

// run is the whole demo; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0 // -h: the usage was printed, as asked
	}
	if err != nil {
		return 2
	}
	return runWith(ctx, o, stdout, stderr)
}

func runWith(ctx context.Context, o options, stdout, stderr io.Writer) int {
	if o.config != "" {
		return runReal(ctx, o, stdout, stderr)
	}
	code, err := runSim(ctx, o, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "orderclient:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func logger(stderr io.Writer, verbose bool) *slog.Logger {
	lvl := slog.LevelError
	if verbose {
		lvl = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
}

func runSim(ctx context.Context, o options, w io.Writer) (int, error) {
	began := time.Now()
	sc, err := orderflow.NewScenario(o.fault, "eu", "us")
	if err != nil {
		return 2, err
	}
	bcfg := simbroker.DefaultConfig()
	bcfg.Seed = o.seed
	bcfg.TickInterval = 25 * time.Millisecond
	if o.tickRate > 0 {
		bcfg.TickInterval = o.tickRate
	}
	bcfg.Streams = []string{"px.EURUSD"}
	bcfg.PingInterval = time.Second
	bcfg.ClientCompID = fmt.Sprintf("CLIENT%d", runs.Add(1))
	if o.compID != "" {
		bcfg.ClientCompID = o.compID
	}
	bcfg.APIKey = o.apiKey
	var budget drill.Budget
	if o.report != "" && o.drillBudget > 0 {
		budget = drill.Budget{PerSecond: o.drillBudget, Burst: max(1, int(o.drillBudget/4))}
		bcfg.HandshakesPerSecond, bcfg.HandshakeBurst = budget.PerSecond, budget.Burst
	}
	rules, err := restingRules(o.venue, o.fenceMode)
	if err != nil {
		return 2, err
	}
	b, err := simbroker.Start(ctx, bcfg)
	if err != nil {
		return 1, err
	}
	defer b.Close()
	if err := b.SetCancelOnDisconnect(simbroker.FIX, rules.cod); err != nil {
		return 1, err
	}

	cfg := orderflow.FromSimBroker(b)
	cfg.DeadManTimeout, cfg.DeadManRefresh = rules.deadMan, rules.deadMan/4
	if o.timing != nil {
		cfg.Timing = *o.timing
	}
	if o.fault == "latency" {
		// Seed 001's latency-aware machine: a slow probe is DEGRADED
		// evidence, and an active endpoint DEGRADED this long warrants failover.
		cfg.Timing.DegradedLatency = 60 * time.Millisecond
		cfg.Timing.MaxDegradedDuration = time.Second
		cfg.Timing.ProbeTimeout = cfg.Timing.ProbeInterval - cfg.Timing.ProbeJitter - 5*time.Millisecond
	}
	rec := orderflow.NewRecorder()
	cfg.Recorder = rec
	cfg.Logger = logger(os.Stderr, o.verbose)
	c, err := orderflow.New(cfg)
	if err != nil {
		return 1, err
	}
	closed := false
	defer func() {
		if !closed {
			_ = c.Close()
		}
	}()
	fmt.Fprintf(w, "orderclient: simulated broker, regions eu (primary) and us; fault %q; seed %d\n", o.fault, o.seed)
	fmt.Fprintf(w, "  transports: REST orders + account reads, WebSocket px.EURUSD, FIX 4.4 session %s→%s (sequence model %s, session policy %s)\n",
		cfg.FIXSenderCompID, cfg.FIXTargetCompID, cfg.Sequence, cfg.SessionPolicy)
	if rules.name != "" {
		fmt.Fprintf(w, "  resting orders: the broker plays %s, fence mode %s: %s\n", rules.name, o.fenceMode, rules.effect)
		fmt.Fprintf(w, "    FIX cancel-on-disconnect %s", rules.cod)
		if rules.deadMan > 0 {
			fmt.Fprintf(w, "; dead-man timer %s, refreshed every %s (the venue's %s, scaled to the demo)", rules.deadMan, rules.deadMan/4, rules.venueDeadMan)
		}
		fmt.Fprintln(w)
	}
	t := cfg.Timing
	fmt.Fprintf(w, "  timing: probe every %s (timeout %s), DOWN after %d failures, failback after %s cooldown + %d successes; API key: set, not shown\n\n",
		t.ProbeInterval, t.ProbeTimeout, t.FailureThreshold, t.Cooldown, t.FailbackSuccessThreshold)

	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = c.Start(sctx)
	cancel()
	if err != nil {
		return 1, fmt.Errorf("start client: %w", err)
	}
	var pop *drill.Population
	var sampler *drill.Sampler
	if o.report != "" {
		if o.drillClients > 0 {
			if pop, err = drill.NewPopulation(c.Path(), o.drillClients, drillflow.StreamConfig(cfg, t.StreamBackoff*5)); err != nil {
				return 1, err
			}
			defer pop.Close()
		}
		sampler = drill.StartSampler(ctx, 100*time.Millisecond, drill.Sources{Broker: drillflow.BrokerWS(b, "eu", "us"), Population: pop, Reads: c.Reads})
		defer sampler.Stop()
		if pop != nil {
			if err := pop.Start(ctx, pace(budget)); err != nil {
				return 1, err
			}
			deadline := time.Now().Add(15 * time.Second)
			for pop.Total() < pop.Len() && time.Now().Before(deadline) && ctx.Err() == nil {
				time.Sleep(50 * time.Millisecond)
			}
			rec.Note(orderflow.Info, "scenario", "drill: %d of %d extra WebSocket clients connected to eu (handshake budget %s/s per region)", pop.Connected()["eu"], pop.Len(), fmt.Sprint(o.drillBudget))
		}
	}
	rec.Note(orderflow.Info, "scenario", "trading on eu: REST order every 50 ms, FIX order every 100 ms, account read every 250 ms (every 3rd order a resting limit)")
	trader := orderflow.StartTrading(c, orderflow.DefaultTradeOptions())
	stopped := false
	stopTrading := func() {
		if !stopped {
			stopped = true
			trader.Stop()
		}
	}
	defer stopTrading()

	pause := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	// waitFor polls cond until it holds or the deadline passes.
	waitFor := func(d time.Duration, cond func() bool) bool {
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			if cond() {
				return true
			}
			if !pause(20 * time.Millisecond) {
				return false
			}
		}
		return cond()
	}
	active := func() string { ep, _ := c.Path().Active(); return ep.Name }
	gateOpen := func() bool { g, _ := c.Path().GateState(); return g == pathdialer.GateOpen }
	halted := func() bool { g, _ := c.Path().GateState(); return g == pathdialer.GateHalted }
	waitRounds := t.Cooldown + time.Duration(t.FailbackSuccessThreshold+4)*t.ProbeInterval + 3*time.Second
	rec.Note(orderflow.Info, "scenario", "phases of %s each (-duration): before the fault, after the failover, after the failback; plus detection and the failback gate (up to %s)",
		o.phase, waitRounds.Round(time.Second))

	if !pause(o.phase) {
		return 1, ctx.Err()
	}
	faultAt := time.Now()
	rec.Note(orderflow.Info, "scenario", "FAULT %s — %s", sc.Describe(), sc.Explain)
	if err := sc.Inject(b); err != nil {
		return 1, err
	}
	switch o.fault {
	case "both":
		if !waitFor(8*time.Second, halted) {
			rec.Note(orderflow.Info, "scenario", "no halt within 8 s")
		}
		pause(o.phase)
		rec.Note(orderflow.Info, "scenario", "RECOVER us (eu still blackholed): the halt ends by failing over to us")
		if err := sc.Recover(b, "us"); err != nil {
			return 1, err
		}
		waitFor(8*time.Second, func() bool { return !halted() && gateOpen() })
		pause(o.phase)
	case "flapping":
		waitFor(5*time.Second, func() bool { return active() == "us" })
		pause(o.phase)
	default:
		wait := 8 * time.Second
		if sc.Failover != orderflow.Must {
			wait = o.phase
		}
		waitFor(wait, func() bool { return active() == "us" && gateOpen() })
		pause(o.phase)
	}
	recoverAt := time.Now()
	rec.Note(orderflow.Info, "scenario", "RECOVER eu: every fault cleared (failback is gated by the cooldown and %d probe successes in a row)", t.FailbackSuccessThreshold)
	if err := sc.Recover(b, "eu"); err != nil {
		return 1, err
	}
	if active() != "eu" {
		if !waitFor(waitRounds, func() bool { return active() == "eu" && gateOpen() }) {
			rec.Note(orderflow.Info, "scenario", "no failback to eu within %s", waitRounds.Round(time.Second))
		}
	}
	pause(o.phase)
	stopTrading()
	rec.Note(orderflow.Info, "scenario", "trading stopped; draining: waiting for every order's answer or settlement")
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	pending := c.Drain(dctx)
	cancel()
	if len(pending) > 0 {
		rec.Note(orderflow.Info, "scenario", "still pending after drain: %v", pending)
	}
	if rules.name != "" {
		finalOpenReconcile(ctx, c, rec)
	}
	sum := c.Check(orderflow.CheckOptions{Audit: b.Audit(), Scenario: &sc, FaultAt: faultAt, Backup: "us"})
	var report drillflow.Run
	if sampler != nil {
		report = drillflow.Run{Title: fmt.Sprintf("brokerpath game day: %s on eu", o.fault), Fault: sc.Describe(),
			FaultAt: faultAt, RecoverAt: recoverAt, End: time.Now(), Primary: "eu", Survivor: "us",
			Summary: sum, Samples: sampler.Stop(), Budget: budget, Seed: fmt.Sprint(o.seed)}
		if pop != nil {
			report.Population = pop.Stats()
			pop.Close()
		}
	}
	closed = true
	if err := c.Close(); err != nil {
		rec.Note(orderflow.Info, "client", "close: %v", err)
	}

	fmt.Fprintln(w, "TIMELINE (relative to client start)")
	rec.WriteTimeline(w, o.verbose)
	fmt.Fprintln(w)
	sum.Write(w)
	fmt.Fprintf(w, "\n  run took %s\n", time.Since(began).Round(100*time.Millisecond))
	lastSummary.Store(&sum)
	if sampler != nil {
		if err := writeReport(o.report, drillflow.Input(c, report)); err != nil {
			return 1, err
		}
		fmt.Fprintf(w, "  drill report: %s\n", o.report)
	}
	if !sum.OK() {
		return 1, nil
	}
	return 0, nil
}

// pace spaces the population's first connects under the handshake budget.
func pace(b drill.Budget) time.Duration {
	if b.PerSecond <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / (0.8 * b.PerSecond))
}

// writeReport writes the drill report to file, creating its directory.
func writeReport(file string, in drill.Input) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := drill.WriteHTML(f, in); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// lastSummary is the summary of the last simulated run (for tests).
var lastSummary atomic.Pointer[orderflow.Summary]

// runReal trades against real endpoints for -duration: no fault, no audit.
func runReal(ctx context.Context, o options, w, stderr io.Writer) int {
	cfg, err := orderflow.LoadConfig(o.config, o.getenv)
	if err != nil {
		fmt.Fprintln(stderr, "orderclient:", err)
		return 2
	}
	if o.timing != nil {
		cfg.Timing = *o.timing
	}
	rec := orderflow.NewRecorder()
	cfg.Recorder = rec
	cfg.Logger = logger(stderr, o.verbose)
	c, err := orderflow.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "orderclient:", err)
		return 2
	}
	defer c.Close()
	fmt.Fprintf(w, "orderclient: %d endpoints from %s (credentials from the environment, not shown)\n", len(cfg.Endpoints), o.config)
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err = c.Start(sctx)
	cancel()
	if err != nil {
		fmt.Fprintln(stderr, "orderclient: start:", err)
		return 1
	}
	var sampler *drill.Sampler
	if o.report != "" {
		// No population on real endpoints: a drill must not storm a broker.
		sampler = drill.StartSampler(ctx, 100*time.Millisecond, drill.Sources{Reads: c.Reads})
	}
	trader := orderflow.StartTrading(c, orderflow.DefaultTradeOptions())
	select {
	case <-ctx.Done():
	case <-time.After(o.phase):
	}
	trader.Stop()
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	c.Drain(dctx)
	cancel()
	sum := c.Check(orderflow.CheckOptions{})
	if sampler != nil {
		in := drillflow.Input(c, drillflow.Run{Title: "brokerpath drill: " + o.config, End: time.Now(), Summary: sum, Samples: sampler.Stop()})
		if err := writeReport(o.report, in); err != nil {
			fmt.Fprintln(stderr, "orderclient: report:", err)
			return 1
		}
		defer fmt.Fprintf(w, "  drill report: %s\n", o.report)
	}
	fmt.Fprintln(w, "TIMELINE (relative to client start)")
	rec.WriteTimeline(w, o.verbose)
	fmt.Fprintln(w)
	sum.Write(w)
	fmt.Fprintln(w, "  (no broker audit: duplicate bookings and old-region bookings were not checked)")
	if !sum.OK() {
		return 1
	}
	return 0
}

// resting is the resting-order rules the simulated broker plays for a venue
// in a fence mode.
type resting struct {
	name         string
	cod          simbroker.CODScope
	deadMan      time.Duration
	venueDeadMan time.Duration
	effect       string
}

// restingRules maps -venue and -fence-mode to the broker's rules, from the
// venue profile: flatten lets the venue's cancel-on-disconnect fire;
// preserve leaves its way — where that way is chosen at logon (Kraken
// 8674=1, Coinbase without 8013), the session cancels nothing on a drop;
// where it is a graceful logout (Deribit 9003=Y), an outage that kills the
// connection still fires it.
func restingRules(name, mode string) (resting, error) {
	var fm venue.FenceMode
	switch mode {
	case "preserve", "": // the default
		fm = venue.Preserve
	case "flatten":
		fm = venue.Flatten
	default:
		return resting{}, fmt.Errorf("-fence-mode %q: want preserve or flatten", mode)
	}
	var p venue.Profile
	switch name {
	case "none", "":
		return resting{}, nil
	case "kraken":
		p = venue.KrakenSpot()
	case "coinbase":
		p = venue.CoinbaseExchangeFIX()
	case "deribit":
		p = venue.Deribit()
	default:
		return resting{}, fmt.Errorf("-venue %q: want none, kraken, coinbase or deribit", name)
	}
	effect, why := p.FenceEffect(fm)
	r := resting{name: p.Name, cod: simbroker.CODScopeOf(p), effect: why}
	if fm == venue.Preserve && effect == venue.EffectNone && name != "deribit" {
		r.cod = simbroker.CODOff // opted out at logon
	}
	if dm, ok := p.DeadManTimer(); ok {
		r.venueDeadMan, r.deadMan = dm.Timeout, 4*time.Second
	}
	return r, nil
}

// finalOpenReconcile reconciles the open orders once more after the drain
// (resting orders cancelled after the last switch's reconcile are reported
// too) and disarms the dead-man timer.
func finalOpenReconcile(ctx context.Context, c *orderflow.Client, rec *orderflow.Recorder) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ep, _ := c.Path().Active()
	if _, err := c.ReconcileOpen(ctx, ep.Name); err != nil {
		rec.Note(orderflow.Info, "scenario", "final open-order reconcile: %v", err)
	}
	if err := c.StopDeadMan(ctx); err != nil {
		rec.Note(orderflow.Info, "scenario", "stop the dead-man timer: %v", err)
	}
}
