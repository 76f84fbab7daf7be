// Command chaos is brokerpath's long randomized run: an order client on all
// three transports (REST orders, FIX orders, a WebSocket price stream)
// against a three-region simulated broker while a seeded schedule of random
// faults hits random regions and services, including monitor-only
// partitions, flapping and a few deliberate all-regions-down windows.
//
// It runs the same schedule once per broker policy of a matrix (how the
// broker deduplicates client order IDs, whether it fences a region itself,
// whether it checks fencing tokens) and prints one table: per policy, the
// orders, the faults, and what the broker's book shows — orders booked
// twice, orders lost, orders booked on a second live path, late landings
// reported and unreported, halts. It prints the seed and the schedule's
// digest first, a progress line every few seconds, each run's report, and
// exits non-zero on any violation.
//
// Where the broker checks fencing tokens, the run ends with stale writes:
// for each earlier token the broker booked under, one order written with
// it through the region it came through, as the old path's copy delivered
// late would arrive. Each must be refused as stale (the table counts them,
// "stale tokens refused / written"); one booked, or a cell where no earlier
// token exists to write (nothing exercised), is a violation.
//
// Every third order is a resting limit order. The FIX session's
// cancel-on-disconnect (-cod, default profile: every open order, as
// Coinbase's 8013=Y) cancels them when a fault drops the session; the
// client reconciles its open orders after every switch (and once after the
// drain), and the table counts the resting orders the broker cancelled by
// itself against those the client was told of (invariant I17). With
// -deadman the client keeps the broker's dead-man timer armed and the table
// counts the gaps in which a resting order was open and no timer was
// (invariant I18). -resting-by says who handles resting orders across a
// switch: the Path (its fence mode, the dead-man timer armed through the new
// path before each fence, the open-order reconcile after every switch), the
// client's own reconciler, or (the default) the Path in the first cell and
// then cell by cell in turn; the table marks the Path's cells.
//
//	go run ./integration/chaos                          # fresh random seed, printed; the whole matrix
//	go run ./integration/chaos -seed 12345              # replay: same schedule
//	go run ./integration/chaos -seed 12345 -policies dedup=none,fence=none   # one cell
//	go run ./integration/chaos -seed 12345 -schedule    # print the schedule and exit
//	go run ./integration/chaos -venues all              # the venue matrix (venues.go): one run per venue profile
//
// A seed fixes the schedule, not the network: which orders are on the wire
// when a fault begins, how many a blackholed relay holds, whether a probe on
// a loaded machine times out. Orders, halts and late landings vary between
// runs of one seed; a violation is a finding in any run (see package
// integration).
package main

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/brokerpath/brokerpath/integration/chaos/plan"
	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout)
	stop()
	os.Exit(code)
}

type options struct {
	seed              uint64
	orders, faults    int
	regions           string
	restEvery, fixEvr time.Duration
	progress          time.Duration
	scheduleOnly      bool
	verbose           bool
	policies          []orderflow.BrokerPolicy
	// Resting orders: the FIX session's cancel-on-disconnect scope and the
	// dead-man timer's timeout (0: none).
	cod        simbroker.CODScope
	deadMan    time.Duration
	venues     []venue.Profile // -venues: the venue matrix instead (venues.go)
	venueScale float64
	// restingBy: who handles resting orders across a switch, per cell:
	// "runtime" (the Path's fence mode, dead-man hook and open-order
	// reconcile), "client" (the client's own reconciler) or "alternate"
	// (the first cell the runtime, the next the client, ...); byRuntime is
	// the current cell's.
	restingBy string
	byRuntime bool
}

func run(ctx context.Context, args []string, w io.Writer) int {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	o := options{}
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the fault schedule (0: a fresh random seed, printed)")
	fs.IntVar(&o.orders, "orders", 5000, "orders to place (REST and FIX together)")
	fs.IntVar(&o.faults, "faults", 50, "faults in the schedule")
	fs.StringVar(&o.regions, "regions", "eu,us,ap", "regions of the simulated broker (the first is primary)")
	fs.DurationVar(&o.restEvery, "rest-every", 50*time.Millisecond, "one REST order per interval")
	fs.DurationVar(&o.fixEvr, "fix-every", 100*time.Millisecond, "one FIX order per interval")
	fs.DurationVar(&o.progress, "progress", 3*time.Second, "progress line interval")
	fs.BoolVar(&o.scheduleOnly, "schedule", false, "print the schedule and exit")
	fs.BoolVar(&o.verbose, "v", false, "print the timeline at the end")
	cod := fs.String("cod", "profile", "cancel-on-disconnect of the FIX session: off, connection, session or profile (every open order, as Coinbase 8013=Y)")
	fs.DurationVar(&o.deadMan, "deadman", 0, "arm the broker's dead-man timer with this timeout, refreshed every quarter of it (0: none)")
	vens := fs.String("venues", "", "run the venue matrix instead of the policy matrix: \"all\" (every shipped venue profile) or profile names separated by ','")
	fs.Float64Var(&o.venueScale, "venue-scale", 60, "with -venues: venue time runs this many times faster (lookup lags, windows, budgets)")
	fs.StringVar(&o.restingBy, "resting-by", "alternate", "who handles resting orders across a switch: runtime (the Path's fence mode, dead-man hook and open-order reconcile), client (the client's own reconciler) or alternate (cell by cell, the runtime first)")
	pols := fs.String("policies", "matrix", "broker policies to run the schedule under, separated by ';' (each: dedup=across|open-only|none,fence=none|enforced,tokens=off|checked), or \"matrix\" for "+orderflow.PolicyMatrixNames())
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var err error
	if o.cod, err = parseCOD(*cod); err != nil {
		fmt.Fprintln(w, "chaos:", err)
		return 2
	}
	if o.restingBy != "runtime" && o.restingBy != "client" && o.restingBy != "alternate" {
		fmt.Fprintf(w, "chaos: -resting-by %q: want runtime, client or alternate\n", o.restingBy)
		return 2
	}
	if o.deadMan < 0 {
		fmt.Fprintln(w, "chaos: -deadman must not be negative")
		return 2
	}
	if o.policies, err = orderflow.ParsePolicies(*pols); err != nil {
		fmt.Fprintln(w, "chaos:", err)
		return 2
	}
	if *vens != "" {
		if o.venues, err = parseVenues(*vens); err != nil {
			fmt.Fprintln(w, "chaos:", err)
			return 2
		}
	}
	if o.seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		o.seed = binary.LittleEndian.Uint64(b[:]) % 1_000_000_000
	}
	regions := strings.Split(o.regions, ",")
	rate := float64(time.Second)/float64(o.restEvery) + float64(time.Second)/float64(o.fixEvr)
	expected := time.Duration(float64(o.orders) / rate * float64(time.Second))
	popts := plan.Options{Regions: regions, Faults: o.faults, Span: expected * 85 / 100, Warmup: 3 * time.Second}
	sched := plan.Generate(o.seed, popts)
	fmt.Fprintf(w, "chaos: seed %d (replay: make chaos SEED=%d)\n", o.seed, o.seed)
	if yieldPoints {
		fmt.Fprintln(w, "chaos: built with the Path's yield points (-tags dstyield): each yields the processor half the time")
	}
	fmt.Fprintf(w, "chaos: schedule digest %s — %d faults over %s on regions %s: %s\n", sched.Digest(), len(sched.Faults),
		sched.End().Round(time.Second), o.regions, strings.Join(sched.CountByKind(), " "))
	if o.scheduleOnly {
		fmt.Fprint(w, sched.String())
		return 0
	}
	if len(o.venues) > 0 {
		fmt.Fprintf(w, "chaos: %d orders per venue at %.0f/s (REST every %s, FIX every %s), %d venue profiles\n",
			o.orders, rate, o.restEvery, o.fixEvr, len(o.venues))
		return runVenues(ctx, o, regions, sched, w, o.venues)
	}
	fmt.Fprintf(w, "chaos: %d orders per policy at %.0f/s (REST every %s, FIX every %s), expected ~%s per policy, %d policies\n",
		o.orders, rate, o.restEvery, o.fixEvr, expected.Round(time.Second), len(o.policies))
	code := 0
	var rows []Row
	for i, p := range o.policies {
		if ctx.Err() != nil {
			break
		}
		o.byRuntime = o.restingBy == "runtime" || (o.restingBy == "alternate" && i%2 == 0)
		fmt.Fprintf(w, "\n=== policy %s (resting orders handled by the %s)\n", p, map[bool]string{true: "Path", false: "client"}[o.byRuntime])
		r, err := newRunner(ctx, o, regions, sched, w, p)
		if errors.Is(err, orderflow.ErrPolicyNotOffered) {
			fmt.Fprintln(w, "chaos:", err)
			rows = append(rows, Row{Policy: p, Result: "not run: the simulated broker does not offer it"})
			code = 1
			continue
		}
		if err != nil {
			fmt.Fprintln(w, "chaos:", err)
			return 1
		}
		c, row := r.run(ctx)
		rows = append(rows, row)
		code = max(code, c)
	}
	fmt.Fprintf(w, "\nCHAOS MATRIX — seed %d, schedule digest %s (replay: make chaos SEED=%d)\n", o.seed, sched.Digest(), o.seed)
	WriteTable(w, rows)
	return code
}

// killSwitchRTT is how long the broker's kill switch takes to answer.
const killSwitchRTT = 5 * time.Millisecond

type injected struct {
	f             plan.Fault
	at, recovered time.Time
	err           error
}

type runner struct {
	o     options
	pol   orderflow.BrokerPolicy
	w     io.Writer
	sched plan.Schedule
	b     *simbroker.Broker
	c     *orderflow.Client
	start time.Time

	mu   sync.Mutex
	inj  []*injected
	errs []string

	// The venue matrix (venues.go): the profile played, the copy hold, the
	// client's quarantine, holds done, and extra, run beside the schedule
	// until trading stops.
	venue            *venue.Profile
	hold, quarantine time.Duration
	// shortHold: the venue matrix's first hold (shortHold).
	shortHold time.Duration
	holds     int
	extra     func(context.Context)
	sum       orderflow.Summary
}

func newRunner(ctx context.Context, o options, regions []string, sched plan.Schedule, w io.Writer, pol orderflow.BrokerPolicy) (*runner, error) {
	bcfg := simbroker.DefaultConfig()
	bcfg.Regions = regions
	bcfg.Seed = o.seed
	bcfg.TickInterval = 50 * time.Millisecond
	bcfg.Streams = []string{"px.EURUSD"}
	bcfg.ReplayBuffer = 16384
	bcfg.PingInterval = time.Second
	bcfg.ClientCompID = "CHAOS"
	if err := pol.Apply(&bcfg); err != nil {
		return nil, err
	}
	b, err := simbroker.Start(ctx, bcfg)
	if err != nil {
		return nil, err
	}
	if err := b.SetCancelOnDisconnect(simbroker.FIX, o.cod); err != nil {
		_ = b.Close()
		return nil, err
	}
	cfg := orderflow.FromSimBroker(b)
	if o.deadMan > 0 {
		cfg.DeadManTimeout, cfg.DeadManRefresh = o.deadMan, o.deadMan/4
	}
	if o.byRuntime {
		// The Path handles resting orders: it is told the session's
		// cancel-on-disconnect (and timer), lets it fire (flatten), arms
		// the timer through the new path before each fence, and reconciles
		// open orders after every switch.
		cfg.Venue = restingVenue(cfg.Venue, o.cod, o.deadMan)
		cfg.PathResting, cfg.FenceMode, cfg.CODSettle = true, pathdialer.FenceFlatten, 500*time.Millisecond
	}
	cfg.Timing.FlapLimit = 12
	cfg.Timing.FlapWindow = 30 * time.Second
	cfg.Timing.Cooldown = 2 * time.Second
	// A copy written before a fence can be held as long as the fault that
	// holds it lasts: a provisional NOT_RECEIVED must not become final (and
	// be re-sent) before then. Twice the schedule's longest fault.
	cfg.Timing.Quarantine = 2 * sched.LongestFault()
	if fence := cfg.BrokerFence; fence != nil {
		// The kill switch is a request to the broker: it answers after a
		// round trip, not the instant it is asked.
		cfg.BrokerFence = func(ctx context.Context, region string, on bool) error {
			t := time.NewTimer(killSwitchRTT)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
			return fence(ctx, region, on)
		}
	}
	c, err := orderflow.New(cfg)
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	installYield(c.Path()) // builds with -tags dstyield only (make mutants)
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := c.Start(sctx); err != nil {
		_ = c.Close()
		_ = b.Close()
		return nil, fmt.Errorf("start client: %w", err)
	}
	return &runner{o: o, pol: pol, w: w, sched: sched, b: b, c: c}, nil
}

func (r *runner) run(ctx context.Context) (int, Row) {
	defer func() { _ = r.b.Close() }()
	closed := false
	defer func() {
		if !closed {
			_ = r.c.Close()
		}
	}()
	r.start = time.Now()
	tr := orderflow.StartTrading(r.c, orderflow.TradeOptions{RESTEvery: r.o.restEvery, FIXEvery: r.o.fixEvr,
		ReadEvery: 250 * time.Millisecond, LimitEvery: 3, LimitPrice: "0.5000", Prefix: "c"})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.inject(ctx) }()
	xctx, xstop := context.WithCancel(ctx)
	defer xstop()
	if r.extra != nil {
		wg.Go(func() { r.extra(xctx) })
	}

	tk := time.NewTicker(r.o.progress)
	defer tk.Stop()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	interrupted := false
	for {
		if len(r.c.Orders()) >= r.o.orders && r.faultsDone() && r.extraDone() {
			break
		}
		select {
		case <-ctx.Done():
			interrupted = true
		case <-tk.C:
			r.progressLine()
			continue
		case <-poll.C:
			continue
		}
		break
	}
	tr.Stop()
	xstop()
	wg.Wait()
	r.recoverAll()
	r.progressLine()
	fmt.Fprintln(r.w, "chaos: trading stopped; every fault cleared; draining (every order answered or settled)")
	pending := r.drain()
	r.finalOpenReconcile()
	if r.venue != nil {
		r.awaitReports()
	}
	audit := r.b.Audit()
	sum := r.c.Check(orderflow.CheckOptions{Audit: audit, Faults: r.injectedFaults(), Connections: r.b.Connections()})
	if r.venue != nil {
		sum = reportedAlarms(sum)
	}
	r.sum = sum
	closed = true
	_ = r.c.Close()
	removeYield(r.c.Path())
	if r.o.verbose {
		r.c.Recorder().WriteTimeline(r.w, false)
	}
	violations, notes := r.verdict(sum, audit, pending)
	staleSent, staleRefused, staleViol := r.staleWrites(ctx, audit) // stale.go
	violations = append(violations, staleViol...)
	if staleSent > 0 {
		notes = append(notes, fmt.Sprintf("stale tokens: %d late copies written with an earlier token, %d refused by the broker", staleSent, staleRefused))
	}
	r.report(sum, violations, notes)
	row := r.row(sum, violations)
	row.StaleSent, row.StaleRefused = staleSent, staleRefused
	if interrupted {
		fmt.Fprintln(r.w, "chaos: interrupted")
		row.Result = "interrupted"
		return 1, row
	}
	if len(violations) > 0 {
		return 1, row
	}
	return 0, row
}

// drainBound is how long the drain may take, derived from the run: the
// quarantine a provisional verdict waits out (twice the longest fault), the
// retries of a reconcile, and the machine's own slowness — how much longer
// trading took than planned, applied to all of it.
func (r *runner) drainBound(traded time.Duration) time.Duration {
	base := 2*r.sched.LongestFault() + 10*time.Second
	if planned := r.planned(); planned > 0 && traded > planned {
		base = time.Duration(float64(base) * float64(traded) / float64(planned))
	}
	return min(base, 10*time.Minute)
}

// planned is how long trading should last: until the last fault is over.
func (r *runner) planned() time.Duration {
	var end time.Duration
	for _, f := range r.sched.Faults {
		end = max(end, f.At+f.For)
	}
	return end
}

// drain waits until the library has settled (every order answered or
// settled, no provisional verdict left, the gate open) and the broker is
// quiet (its audit unchanged for a second, every connection's bytes
// delivered), within a bound derived from the run. It returns the orders
// still pending.
func (r *runner) drain() []string {
	bound := r.drainBound(time.Since(r.start))
	fmt.Fprintf(r.w, "chaos: drain bound %s (derived from the longest fault and this run's pace)\n", bound.Round(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	pending := r.c.Drain(ctx)
	quietFor := time.Second
	last, lastChange := -1, time.Now()
	tk := time.NewTicker(100 * time.Millisecond)
	defer tk.Stop()
	for {
		n := len(r.b.Audit())
		if n != last {
			last, lastChange = n, time.Now()
		}
		snap := r.c.Path().Snapshot()
		settled := len(r.c.Pending()) == 0 && snap.ProvisionalCount == 0 && snap.Gate == pathdialer.GateOpen
		if settled && time.Since(lastChange) >= quietFor && r.inTransit() == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if p := r.c.Pending(); len(p) > 0 {
				return p
			}
			return pending[:0]
		case <-tk.C:
		}
	}
}

// inTransit counts the connections holding client bytes the broker has not
// received yet (a relay still delivering).
func (r *runner) inTransit() int {
	n := 0
	for _, c := range r.b.Connections() {
		if !c.Closed.IsZero() || len(c.Sent) == 0 {
			continue
		}
		if c.Sent[len(c.Sent)-1].Arrived.IsZero() {
			n++
		}
	}
	return n
}

// row is this run's line of the matrix.
func (r *runner) row(sum orderflow.Summary, violations []string) Row {
	rep, unrep := sum.LateReported()
	row := Row{Policy: r.pol, Orders: len(r.c.Orders()), Duplicates: sum.Duplicates, Allowed: sum.DuplicatesAllowed,
		RestingCancelled: sum.RestingCancelled, RestingReported: sum.RestingReported, DeadManGaps: sum.DeadManGaps,
		DeadMan: r.o.deadMan > 0, ByRuntime: r.o.byRuntime,
		Losses: sum.Losses, TwoLive: sum.TwoLivePaths, LateReported: rep, LateUnreported: unrep, Halts: sum.Halts,
		Repeats: sum.Repeats, Violations: len(violations), Result: "OK"}
	for _, t := range sum.Transports {
		row.NotSent += t.NotSent
		row.Refused += t.Rejected
	}
	r.mu.Lock()
	row.Faults = len(r.inj)
	r.mu.Unlock()
	if len(violations) > 0 {
		row.Result = "FAILED"
	}
	return row
}

// inject follows the schedule: each fault at start+At, recovered For later.
func (r *runner) inject(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, f := range r.sched.Faults {
		t := time.NewTimer(time.Until(r.start.Add(f.At)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		now := time.Now()
		in := &injected{f: f, at: now}
		sf := f.SimFault(now)
		for _, rg := range f.Regions {
			for _, svc := range f.Services {
				if err := r.b.SetFault(rg, svc, sf); err != nil && in.err == nil {
					in.err = err
				}
			}
		}
		r.c.Recorder().Note(orderflow.Info, "chaos", "FAULT %s", f)
		r.mu.Lock()
		r.inj = append(r.inj, in)
		if in.err != nil {
			r.errs = append(r.errs, fmt.Sprintf("inject #%d: %v", f.Index, in.err))
		}
		r.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTimer(f.For)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
			for _, rg := range f.Regions {
				for _, svc := range f.Services {
					_ = r.b.SetFault(rg, svc, simbroker.None{})
				}
			}
			r.c.Recorder().Note(orderflow.Info, "chaos", "RECOVER #%02d %s", f.Index, strings.Join(f.Regions, ","))
			r.mu.Lock()
			in.recovered = time.Now()
			r.mu.Unlock()
		}()
	}
}

// injectedFaults lists the faults injected, per region, for the checker's
// failback invariant (I14).
func (r *runner) injectedFaults() []orderflow.Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []orderflow.Fault
	for _, in := range r.inj {
		fails := false
		switch in.f.Kind {
		case plan.Blackhole, plan.Down, plan.Flap, plan.AllDown, plan.Partition:
			fails = true
		}
		has := func(s simbroker.Service) bool {
			for _, x := range in.f.Services {
				if x == s {
					return true
				}
			}
			return false
		}
		for _, rg := range in.f.Regions {
			out = append(out, orderflow.Fault{Region: rg, Kind: in.f.Kind, At: in.at, Recovered: in.recovered,
				FailsProbe: fails && has(simbroker.Probe), FailsTradePath: fails && has(simbroker.REST)})
		}
	}
	return out
}

func (r *runner) faultsDone() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.inj) < len(r.sched.Faults) {
		return false
	}
	for _, in := range r.inj {
		if in.recovered.IsZero() {
			return false
		}
	}
	return true
}

func (r *runner) recoverAll() {
	for _, rg := range r.b.Regions() {
		for _, svc := range simbroker.Services {
			_ = r.b.SetFault(rg.Name(), svc, simbroker.None{})
		}
	}
}

func (r *runner) progressLine() {
	orders := r.c.Orders()
	acked, pending, notSent := 0, 0, 0
	for _, o := range orders {
		switch {
		case o.Acked || o.Rejected || o.Settled:
			acked++
		case o.Sent:
			pending++
		default:
			notSent++
		}
	}
	r.mu.Lock()
	n := len(r.inj)
	var active []string
	for _, in := range r.inj {
		if in.recovered.IsZero() {
			active = append(active, fmt.Sprintf("%s:%s", strings.Join(in.f.Regions, "+"), in.f.Kind))
		}
	}
	r.mu.Unlock()
	ep, gen := r.c.Path().Active()
	g, _ := r.c.Path().GateState()
	audit := r.b.Audit()
	sum := r.c.Check(orderflow.CheckOptions{Audit: audit})
	byID := map[string]orderflow.OrderRecord{}
	for _, o := range orders {
		byID[o.ClOrdID] = o
	}
	v := 0
	for _, s := range sum.Violations {
		if !inProgress(s) {
			v++
		}
	}
	if len(active) == 0 {
		active = []string{"none"}
	}
	fmt.Fprintf(r.w, "[%6s] faults %2d/%d (active %s) | orders %4d/%d: %d answered/settled, %d in flight, %d not sent | on %s gen %d gate %s | switches %d halts %d | violations so far %d\n",
		time.Since(r.start).Round(time.Second), n, len(r.sched.Faults), strings.Join(active, " "), len(orders), r.o.orders,
		acked, pending, notSent, ep.Name, gen, g, len(sum.Switches), sum.Halts, v)
}

// inProgress: Check's findings that only mean an order is still in flight.
func inProgress(v string) bool {
	for _, p := range []string{"LOST:", "order "} {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return strings.HasPrefix(v, "reconcile found order")
}

// verdict applies every invariant to the final records.
func (r *runner) verdict(sum orderflow.Summary, audit simbroker.AuditLog, pending []string) (violations, notes []string) {
	orders := r.c.Orders()
	byID := map[string]orderflow.OrderRecord{}
	for _, o := range orders {
		byID[o.ClOrdID] = o
	}
	violations = append(violations, sum.Violations...)
	if rep, unrep := sum.LateReported(); rep+unrep > 0 && r.venue == nil { // the venue matrix notes its own (reportedAlarms)
		notes = append(notes, fmt.Sprintf("%d late landing(s): orders written before a fence, booked through the old region after it (in flight across the fence, or held by a blackhole and delivered on heal): %d reported, %d unreported", rep+unrep, rep, unrep))
	}
	if len(pending) > 0 {
		violations = append(violations, fmt.Sprintf("no lost order: %d order(s) still pending after drain: %v", len(pending), pending))
	}
	for _, st := range sum.Streams {
		if uint64(st.Messages) != st.Last-st.First+1 {
			violations = append(violations, fmt.Sprintf("ws every sequence once in order: %d messages for seq %d..%d", st.Messages, st.First, st.Last))
		}
	}
	if len(sum.Streams) == 0 {
		violations = append(violations, "ws: the price stream delivered nothing")
	}
	r.mu.Lock()
	violations = append(violations, r.errs...)
	r.mu.Unlock()
	// Halts and the all-down windows.
	halts := r.c.Recorder().Events(pathdialer.EventHalt)
	for _, in := range r.inj {
		if in.f.Kind != plan.AllDown {
			continue
		}
		got := false
		for _, h := range halts {
			if !h.Time.Before(in.at) && h.Time.Before(in.recovered.Add(time.Second)) {
				got = true
			}
		}
		if !got {
			notes = append(notes, fmt.Sprintf("all-down window #%02d (%s) produced no halt", in.f.Index, in.f.For))
		}
	}
	outside := 0
	for _, h := range halts {
		in := false
		for _, x := range r.inj {
			if x.f.Kind == plan.AllDown && !h.Time.Before(x.at) && h.Time.Before(x.recovered.Add(time.Second)) {
				in = true
			}
		}
		if !in {
			outside++
		}
	}
	if outside > 0 {
		notes = append(notes, fmt.Sprintf("%d halt(s) outside the all-down windows (each paired with a NO_TARGET_AVAILABLE decision by Check: a clean region was not eligible yet — just recovered, or its probe timed out)", outside))
	}
	return violations, notes
}

// failover is one failover (not a failback) with its cause and timings.
type failover struct {
	kind               string
	path               time.Duration // fault injected → SWITCHED
	rest, fix, ws      time.Duration // fault → first answer / tick from the new endpoint (-1: none)
	from, to           string
	switchAt, injectAt time.Time
}

func (r *runner) failovers(sum orderflow.Summary) []failover {
	rec := r.c.Recorder()
	start := rec.Start()
	orders := r.c.Orders()
	var wsMoves []orderflow.Entry
	for _, e := range rec.Entries() {
		if e.Source == "ws" && (strings.Contains(e.Note, " resumed on ") || strings.Contains(e.Note, " moved to ")) {
			wsMoves = append(wsMoves, e)
		}
	}
	var out []failover
	for i, sw := range sum.Switches {
		if sw.Failback {
			continue
		}
		at := start.Add(sw.At)
		next := time.Time{}
		if i+1 < len(sum.Switches) {
			next = start.Add(sum.Switches[i+1].At)
		}
		// The cause: the latest fault injected on the old region before the switch.
		var cause *injected
		r.mu.Lock()
		for _, in := range r.inj {
			if !in.at.After(at) && contains(in.f.Regions, sw.From) && (in.recovered.IsZero() || at.Before(in.recovered.Add(2*time.Second))) {
				cause = in
			}
		}
		r.mu.Unlock()
		f := failover{kind: "none (no fault on the old region)", from: sw.From, to: sw.To, switchAt: at, rest: -1, fix: -1, ws: -1}
		base := at
		if cause != nil {
			f.kind, f.injectAt, base = cause.f.Kind, cause.at, cause.at
			f.path = at.Sub(cause.at)
		}
		first := func(tr string) time.Duration {
			var best time.Time
			for _, o := range orders {
				if o.Transport == tr && o.Acked && o.AckEndpoint == sw.To && !o.AckedAt.Before(at) && (next.IsZero() || o.AckedAt.Before(next)) {
					if best.IsZero() || o.AckedAt.Before(best) {
						best = o.AckedAt
					}
				}
			}
			if best.IsZero() {
				return -1
			}
			return best.Sub(base)
		}
		f.rest, f.fix = first(orderflow.REST), first(orderflow.FIX)
		for _, e := range wsMoves {
			if !e.Time.Before(at) && (next.IsZero() || e.Time.Before(next)) && strings.Contains(e.Note, " on "+sw.To+" ") || (!e.Time.Before(at) && strings.Contains(e.Note, "moved to "+sw.To+" ")) {
				if next.IsZero() || e.Time.Before(next) {
					f.ws = e.Time.Sub(base)
					break
				}
			}
		}
		out = append(out, f)
	}
	return out
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func dist(ds []time.Duration) string {
	var v []time.Duration
	for _, d := range ds {
		if d >= 0 {
			v = append(v, d)
		}
	}
	if len(v) == 0 {
		return "n=0"
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	q := func(p float64) time.Duration { return v[min(len(v)-1, int(p*float64(len(v))))] }
	ms := func(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }
	return fmt.Sprintf("n=%-3d min %-7s p50 %-7s p90 %-7s max %s", len(v), ms(v[0]), ms(q(0.5)), ms(q(0.9)), ms(v[len(v)-1]))
}

func (r *runner) report(sum orderflow.Summary, violations, notes []string) {
	w := r.w
	fmt.Fprintln(w)
	fmt.Fprintf(w, "CHAOS RESULT — policy %s, seed %d, schedule digest %s, ran %s\n", r.pol, r.o.seed, r.sched.Digest(), time.Since(r.start).Round(time.Second))
	r.mu.Lock()
	byKind := map[string]int{}
	for _, in := range r.inj {
		byKind[in.f.Kind]++
	}
	r.mu.Unlock()
	var ks []string
	for k, n := range byKind {
		ks = append(ks, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(ks)
	fmt.Fprintf(w, "  faults injected  %d: %s\n", len(r.inj), strings.Join(ks, " "))
	total := 0
	for _, t := range sum.Transports {
		total += t.Placed
		fmt.Fprintf(w, "  %-5s placed %5d sent %5d not-sent %4d acked %5d rejected %3d unknown %3d resent %3d dup %d lost %d reconciled %v\n",
			t.Transport, t.Placed, t.Sent, t.NotSent, t.Acked, t.Rejected, t.Unknown, t.Resent, t.Duplicated, t.Lost, t.Reconciled)
	}
	fmt.Fprintf(w, "  orders total     %d\n", total)
	for _, st := range sum.Streams {
		fmt.Fprintf(w, "  ws %s seq %d..%d, %d delivered, %d dup, %d gap, %d missed, longest silence %s, %d endpoint changes\n",
			st.Stream, st.First, st.Last, st.Messages, st.Duplicates, st.Gaps, st.Missed, st.MaxStall.Round(time.Millisecond), len(st.Endpoints)-1)
	}
	fmt.Fprintf(w, "  fix seq          %d logons, %d resets, %d gaps repaired by resend, %d backwards, %d exec reports\n",
		sum.FIX.Logons, sum.FIX.Resets, sum.FIX.Gaps, sum.FIX.Backward, sum.FIX.ExecReports)
	fb := 0
	for _, s := range sum.Switches {
		if s.Failback {
			fb++
		}
	}
	fmt.Fprintf(w, "  switches         %d (%d failovers, %d failbacks), halts %d\n", len(sum.Switches), len(sum.Switches)-fb, fb, sum.Halts)
	fos := r.failovers(sum)
	fmt.Fprintln(w, "  FAILOVER TIMES (from the fault's injection)")
	col := func(pick func(failover) time.Duration, keep func(failover) bool) []time.Duration {
		var out []time.Duration
		for _, f := range fos {
			if keep(f) {
				out = append(out, pick(f))
			}
		}
		return out
	}
	caused := func(f failover) bool { return !f.injectAt.IsZero() }
	fmt.Fprintf(w, "    path switch  %s\n", dist(col(func(f failover) time.Duration { return f.path }, caused)))
	fmt.Fprintf(w, "    rest 1st ack %s\n", dist(col(func(f failover) time.Duration { return f.rest }, caused)))
	fmt.Fprintf(w, "    fix 1st ack  %s\n", dist(col(func(f failover) time.Duration { return f.fix }, caused)))
	fmt.Fprintf(w, "    ws resumed   %s\n", dist(col(func(f failover) time.Duration { return f.ws }, caused)))
	kinds := map[string]bool{}
	for _, f := range fos {
		kinds[f.kind] = true
	}
	var kl []string
	for k := range kinds {
		kl = append(kl, k)
	}
	sort.Strings(kl)
	fmt.Fprintln(w, "  path switch time by fault kind")
	for _, k := range kl {
		fmt.Fprintf(w, "    %-15s %s\n", k, dist(col(func(f failover) time.Duration { return f.path }, func(f failover) bool { return f.kind == k && caused(f) })))
	}
	for _, f := range fos {
		if !caused(f) {
			fmt.Fprintf(w, "    uncaused failover %s→%s at %s\n", f.from, f.to, r.c.Recorder().Rel(f.switchAt))
		}
	}
	for _, n := range sum.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	var inv []string
	for _, i := range sum.Invariants {
		switch {
		case !i.Checked:
			inv = append(inv, fmt.Sprintf("I%d not checked", i.ID))
		case i.Violations > 0:
			inv = append(inv, fmt.Sprintf("I%d VIOLATED %d", i.ID, i.Violations))
		default:
			inv = append(inv, fmt.Sprintf("I%d held", i.ID))
		}
	}
	fmt.Fprintf(w, "  invariants (orderflow.InvariantName): %s; plus ws sequence count, halts vs all-down windows\n", strings.Join(inv, ", "))
	if len(violations) == 0 {
		fmt.Fprintln(w, "  RESULT: OK — every invariant held")
		return
	}
	fmt.Fprintf(w, "  RESULT: FAILED — %d violation(s):\n", len(violations))
	for i, v := range violations {
		if i == 40 {
			fmt.Fprintf(w, "    … %d more\n", len(violations)-40)
			break
		}
		fmt.Fprintf(w, "    ✗ %s\n", v)
	}
}

// parseCOD reads the -cod flag.
func parseCOD(s string) (simbroker.CODScope, error) {
	for _, c := range []simbroker.CODScope{simbroker.CODOff, simbroker.CODConnection, simbroker.CODSession, simbroker.CODProfile} {
		if c.String() == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("-cod %q: want off, connection, session or profile", s)
}

// finalOpenReconcile runs the client's open-order reconcile once more after
// the drain, on the active endpoint, and stops the dead-man timer: resting
// orders cancelled after the last switch's reconcile are reported too.
func (r *runner) finalOpenReconcile() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r.o.byRuntime {
		r.awaitPathReconcile(ctx)
		if err := r.c.StopDeadMan(ctx); err != nil {
			fmt.Fprintf(r.w, "chaos: stop the dead-man timer: %v\n", err)
		}
		return
	}
	ep, _ := r.c.Path().Active()
	if _, err := r.c.ReconcileOpen(ctx, ep.Name); err != nil {
		fmt.Fprintf(r.w, "chaos: final open-order reconcile: %v\n", err)
	}
	if err := r.c.StopDeadMan(ctx); err != nil {
		fmt.Fprintf(r.w, "chaos: stop the dead-man timer: %v\n", err)
	}
}

// awaitPathReconcile waits until the Path has reported the open-order
// reconcile of the last switch for both transports (orders that switch
// cancelled are reported by the Path's events, not by a final sweep).
func (r *runner) awaitPathReconcile(ctx context.Context) {
	p := r.c.Path()
	for {
		_, gen := p.Active()
		done := 0
		for _, rep := range p.Snapshot().OpenOrders {
			if rep.Token == gen {
				done++
			}
		}
		if gen == 0 || done >= 2 {
			return
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(r.w, "chaos: the Path's open-order reconcile of the last switch did not report in time\n")
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// restingVenue is the simulated broker's profile with the FIX session's
// cancel-on-disconnect and, when armed, a dead-man timer: what the Path is
// told the venue does to resting orders.
func restingVenue(p venue.Profile, cod simbroker.CODScope, deadMan time.Duration) venue.Profile {
	const doc = "https://pkg.go.dev/github.com/brokerpath/brokerpath/internal/simbroker"
	scope := map[simbroker.CODScope]venue.CODScope{simbroker.CODOff: venue.CODNone, simbroker.CODConnection: venue.CODConnection,
		simbroker.CODSession: venue.CODSession, simbroker.CODProfile: venue.CODProfile}[cod]
	p.CancelOnDisconnect = venue.Documented(venue.CancelOnDisconnect{Scope: scope, OnByDefault: true, Trigger: "the end of the FIX session's connection"}, doc, "the broker's cancel-on-disconnect default")
	if deadMan > 0 {
		p.DeadMan = venue.Documented(venue.DeadMan{Available: true, API: "POST /v1/account/cancel-all-after", Timeout: deadMan, Refresh: deadMan / 4}, doc, "dead-man timer")
	}
	return p
}
