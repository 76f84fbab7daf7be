// Command orderclient is brokerpath's demo: an order client that uses all
// three transports through one path — REST for orders and account reads, a
// WebSocket price stream, a FIX session for orders — while a scripted outage
// hits the primary region of an embedded two-region simulated broker. It
// prints a timeline (probes failing, DEGRADED, DOWN, FENCE_REQUIRED, the
// fence, SWITCHED, reconcile, release, the stream resuming, the FIX logon in
// the other region, the gated failback) and a summary, and exits 1 if any
// invariant broke. It exits 3 (INCONCLUSIVE) when every invariant held except
// for orders it could not judge because the host was too starved: halts for
// want of a target while the broker was answering through the halted
// endpoint, and the gate never open for the reconcile's bound after those
// orders (the summary gives the figures). A loss on a host that was not
// starved, or after the reconcile had its full bound, is a failure.
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
// venue, and the runtime (pathdialer) handles them: kraken (cancel-on-
// disconnect of the FIX session's orders, on by default, and a dead-man
// timer), coinbase (8013=Y: every open order of the profile, the new path's
// and REST's included) or deribit (the connection's orders; a Logout with
// 9003=Y keeps them). -fence-mode is the Path's Config.FenceMode: default
// (the venue profile's), flatten (let cancel-on-disconnect fire) or preserve
// (the venue's way: the FIX Logout with the opt-out tag where the venue has
// one, a session that chose at logon to keep its orders where that is the
// only way). The dead-man timer is armed through the new path before the
// old one is fenced (Config.DeadMan), and after every switch the Path
// reconciles the open orders of each transport against the broker's list
// (Config.OpenOrders): every order a switch cancelled is reported by its
// events, and the summary says what each switch did to resting orders.
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
	"github.com/brokerpath/brokerpath/internal/drillkit"
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
	fs.StringVar(&o.fenceMode, "fence-mode", "default", "how a switch leaves the old path (pathdialer.Config.FenceMode): default (the venue profile's), preserve (the venue's way of keeping resting orders) or flatten (let cancel-on-disconnect fire)")
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
	if err := b.SetCancelOnDisconnect(simbroker.FIX, rules.brokerCOD); err != nil {
		return 1, err
	}

	cfg := orderflow.FromSimBroker(b)
	cfg.DeadManTimeout, cfg.DeadManRefresh = rules.deadMan, rules.deadMan/4
	if rules.name != "" {
		// The runtime handles resting orders: the fence mode, the dead-man
		// timer armed through the new path before the old one is fenced,
		// the open-order reconcile after every switch.
		cfg.Venue = rules.venueFor(cfg.Venue)
		cfg.PathResting, cfg.FenceMode, cfg.CODSettle = true, rules.mode, time.Second
		cfg.FIXLogon, cfg.FIXPreserveLogout = rules.logon, rules.logout
	}
	if o.timing != nil {
		cfg.Timing = *o.timing
	}
	if hold := longestHold(o); cfg.Timing.Quarantine < hold {
		// A blackhole holds the copies written into it until the region
		// recovers, and the Path may call such an order NOT_RECEIVED for
		// good only once no copy can still land (Config.MaxCopyHold): the
		// demo's network promises no shorter hold than its longest fault.
		cfg.Timing.Quarantine = hold
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
		fc := c.Path().Snapshot().Fence
		fmt.Fprintf(w, "  resting orders: the broker plays %s; the Path's fence mode %s (%s): %s\n", rules.name, fc.Mode, fc.Chosen, fc.Why)
		fmt.Fprintf(w, "    FIX cancel-on-disconnect for a session that asks nothing: %s; Logon fields %v; preserve-mode Logout fields %v", rules.brokerCOD, rules.logon, rules.logout)
		if rules.deadMan > 0 {
			fmt.Fprintf(w, "; dead-man timer %s, refreshed every %s (the venue's %s, scaled to the demo), armed through the new path before each fence", rules.deadMan, rules.deadMan/4, rules.venueDeadMan)
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
	var pop *drillkit.Population
	var sampler *drillkit.Sampler
	if o.report != "" {
		if o.drillClients > 0 {
			if pop, err = drillkit.NewPopulation(c.Path(), o.drillClients, drillflow.StreamConfig(cfg, t.StreamBackoff*5)); err != nil {
				return 1, err
			}
			defer pop.Close()
		}
		sampler = drillkit.StartSampler(ctx, 100*time.Millisecond, drillkit.Sources{Broker: drillflow.BrokerWS(b, "eu", "us"), Population: pop, Reads: c.Reads})
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
	// A copy the blackhole held can be booked just after the library's
	// look at the recovery that released it; the library reports such a
	// landing within MaxCopyHold (here the quarantine) plus one lookup
	// interval of its booking (pathdialer.Verdict): the run is judged once
	// that bound has passed, not before.
	awaitLateReports(ctx, c, b, rec, cfg.Timing.Quarantine+cfg.Venue.LookupInterval()+time.Second)
	if rules.name != "" {
		services := 1 // REST, and FIX when the session is configured
		if cfg.FIXSenderCompID != "" {
			services = 2
		}
		finalOpenReconcile(ctx, c, rec, services)
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
	lastRuntimeCancelled.Store(int64(c.Path().Snapshot().RestingCancelled))
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
	lastHold.Store(&holdSpan{quarantine: cfg.Timing.Quarantine, fault: recoverAt.Sub(faultAt)})
	if sampler != nil {
		in := drillflow.Input(c, report)
		lastReport.Store(&in)
		if err := writeReport(o.report, in); err != nil {
			return 1, err
		}
		fmt.Fprintf(w, "  drill report: %s\n", o.report)
	}
	switch {
	case sum.Undecided():
		return exitInconclusive, nil
	case !sum.OK():
		return 1, nil
	}
	return 0, nil
}

// exitInconclusive is the exit status of a run the host was too starved to
// judge (orderflow.Summary.Undecided).
const exitInconclusive = 3

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

// lastSummary is the summary of the last simulated run (for tests);
// lastReport, its drill report's input; lastRuntimeCancelled, the Path's
// count of resting orders cancelled by a switch in it.
var (
	lastSummary          atomic.Pointer[orderflow.Summary]
	lastReport           atomic.Pointer[drill.Input]
	lastRuntimeCancelled atomic.Int64
	lastHold             atomic.Pointer[holdSpan]
)

// holdSpan is a run's quarantine beside how long its primary's fault lasted
// (for tests: a blackhole holds copies that long).
type holdSpan struct{ quarantine, fault time.Duration }

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
	if hold := longestHold(o); cfg.Timing.Quarantine < hold {
		// A blackhole holds the copies written into it until the region
		// recovers, and the Path may call such an order NOT_RECEIVED for
		// good only once no copy can still land (Config.MaxCopyHold): the
		// demo's network promises no shorter hold than its longest fault.
		cfg.Timing.Quarantine = hold
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
	var sampler *drillkit.Sampler
	if o.report != "" {
		// No population on real endpoints: a drill must not storm a broker.
		sampler = drillkit.StartSampler(ctx, 100*time.Millisecond, drillkit.Sources{Reads: c.Reads})
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

// resting is how the demo trades resting orders under a venue's rules: the
// rules the simulated broker plays (from the venue's profile), and what the
// runtime is given — the fence mode, the Logon and Logout fields, the
// dead-man timer.
type resting struct {
	name    string
	profile venue.Profile
	// mode is the fence mode given to the Path; resolved is the one in force
	// (the venue's default when mode is FenceModeDefault).
	mode     pathdialer.FenceMode
	resolved venue.FenceMode
	// brokerCOD is the broker's cancel-on-disconnect for a FIX session that
	// asks for nothing at logon (the venue's default).
	brokerCOD simbroker.CODScope
	// logon and logout: the FIX fields the session logs on with (the
	// venue's cancel-on-disconnect choice) and the Logout fields that keep
	// orders (fix.Options.PreserveLogout).
	logon, logout map[int]string
	deadMan       time.Duration
	venueDeadMan  time.Duration
	effect        string
}

// restingRules maps -venue and -fence-mode to the broker's rules and the
// runtime's settings, from the venue profile. Flatten lets the venue's
// cancel-on-disconnect fire; preserve leaves the venue's way: a Logout with
// the opt-out tag where the venue keeps orders at logout (Deribit 9003=Y),
// or, where orders are kept only by a choice made at logon (Kraken 8674=1,
// Coinbase without 8013), a session that logged on that way. The default
// is the venue profile's (DefaultFenceMode).
func restingRules(name, mode string) (resting, error) {
	var fm pathdialer.FenceMode
	switch mode {
	case "default", "":
		fm = pathdialer.FenceModeDefault
	case "preserve":
		fm = pathdialer.FencePreserve
	case "flatten":
		fm = pathdialer.FenceFlatten
	default:
		return resting{}, fmt.Errorf("-fence-mode %q: want default, preserve or flatten", mode)
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
	r := resting{name: p.Name, profile: p, mode: fm, brokerCOD: simbroker.CODFor(p)}
	switch fm {
	case pathdialer.FencePreserve:
		r.resolved = venue.Preserve
	case pathdialer.FenceFlatten:
		r.resolved = venue.Flatten
	default:
		r.resolved, _ = p.DefaultFenceMode()
	}
	_, r.effect = p.FenceEffect(r.resolved)
	preserve := r.resolved == venue.Preserve
	switch name {
	case "kraken": // on by default for the session; 8674=1 opts out at logon
		if preserve {
			r.logon = map[int]string{simbroker.TagKrakenCOD: "1"}
		}
	case "coinbase": // off unless asked at logon: 8013=Y, the recommended value
		if !preserve {
			r.logon = map[int]string{simbroker.TagCoinbaseCOD: "Y"}
		}
	case "deribit": // asked at logon; a Logout with 9003=Y keeps the orders
		r.logon = map[int]string{simbroker.TagDeribitCOD: "Y"}
		r.logout = map[int]string{simbroker.TagDontCancelOnDisconnect: "Y"}
	}
	if dm, ok := p.DeadManTimer(); ok {
		r.venueDeadMan, r.deadMan = dm.Timeout, 4*time.Second
	}
	return r, nil
}

// venueFor is the broker's own profile with the venue's resting-order
// facts: what the Path is told the venue does to resting orders.
func (r resting) venueFor(broker venue.Profile) venue.Profile {
	v := broker
	v.Name = broker.Name + " as " + r.profile.Name
	v.CancelOnDisconnect = r.profile.CancelOnDisconnect
	v.DeadMan = r.profile.DeadMan
	return v
}

// finalOpenReconcile waits, after the drain, until the Path has reported
// the open-order reconcile of the last switch (every resting order that
// switch cancelled is reported by the runtime's events, not by the demo),
// then disarms the dead-man timer.
func finalOpenReconcile(ctx context.Context, c *orderflow.Client, rec *orderflow.Recorder, services int) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p := c.Path()
	for {
		_, gen := p.Active()
		s := p.Snapshot()
		done := 0
		for _, r := range s.OpenOrders {
			if r.Token == gen {
				done++
			}
		}
		if gen == 0 || done >= services {
			break
		}
		select {
		case <-ctx.Done():
			rec.Note(orderflow.Info, "scenario", "the open-order reconcile of the last switch did not report within 5 s")
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := c.StopDeadMan(ctx); err != nil {
		rec.Note(orderflow.Info, "scenario", "stop the dead-man timer: %v", err)
	}
}

// longestHold bounds how long the scenario of o can hold a copy of an order
// on the way: the primary's fault lasts until the failover is seen (at most
// 8 s), then one phase; with -fault both, the halt (8 s), a phase, the
// resume on us (8 s) and a phase; plus a second for a host that is slow to
// run the timers.
// awaitLateReports waits, while a late landing the broker booked is not yet
// reported to the client (and was not booked after a final verdict: that is
// a violation however long one waits), until each is reported or bound has
// passed since its booking (lateReportsDue).
func awaitLateReports(ctx context.Context, c *orderflow.Client, b *simbroker.Broker, rec *orderflow.Recorder, bound time.Duration) {
	tk := time.NewTicker(100 * time.Millisecond)
	defer tk.Stop()
	noted := false
	for {
		lands := c.Check(orderflow.CheckOptions{Audit: b.Audit()}).LateLandings
		due := lateReportsDue(lands, rec.Start(), bound)
		if due.IsZero() || !time.Now().Before(due) {
			return
		}
		if !noted {
			noted = true
			rec.Note(orderflow.Info, "scenario", "waiting up to %s for the report of a late landing (its booking plus MaxCopyHold and a lookup)", rec.Rel(due))
		}
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}

// lateReportsDue returns until when the library may still report the late
// landings in lands not reported yet (each booking, since start, plus
// bound); zero when none is waiting. A landing after a final NOT_RECEIVED is
// not waited for.
func lateReportsDue(lands []orderflow.LateLanding, start time.Time, bound time.Duration) time.Time {
	var due time.Time
	for _, l := range lands {
		if l.Reported || l.AfterFinal {
			continue
		}
		if t := start.Add(l.BookedAt + bound); t.After(due) {
			due = t
		}
	}
	return due
}

func longestHold(o options) time.Duration {
	d := 8*time.Second + o.phase
	if o.fault == "both" {
		d *= 2
	}
	return d + time.Second
}
