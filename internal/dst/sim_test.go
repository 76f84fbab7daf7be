package dst

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

var (
	flagSeeds  = flag.Int("sim.seeds", 20, "how many seeds TestSimSeeds runs")
	flagStart  = flag.Uint64("sim.start", 1, "first seed of TestSimSeeds")
	flagSeed   = flag.Uint64("sim.seed", 0, "run only this seed (replay)")
	flagTrace  = flag.String("sim.trace", "", "write the trace of -sim.seed to this file")
	flagTwice  = flag.Bool("sim.twice", false, "TestSimSeeds: run every seed twice and require byte-identical traces")
	flagDetail = flag.Bool("sim.detail", false, "TestSimSeeds: add every probe result and each event's error and cause to the trace (Options.TraceDetail)")
	flagShard  = flag.String("sim.shard", "0/1", "TestSimSeeds: run only shard i of n (i/n) of the seeds: those whose index from -sim.start is i modulo n")
	flagComp   = flag.Bool("sim.composed", composedByDefault, "every test: seeds with composed moves (NewComposedScenario: late probes, probes cut by Start, hanging settles, stream dial timeouts, gray failures, identity flips, a coordinator's Halt during a settle)")
	flagLive   = flag.Bool("sim.live", liveByDefault, "with -sim.composed: add the liveness moves (NewLiveScenario: order bursts, lookup 5xx, dead-man arm failures on failback, process stalls, a halt with unknown orders)")
)

// liveByDefault is the default of -sim.live: whether composed seeds also
// draw the liveness moves (NewLiveScenario). make sim passes -sim.live
// itself (SIM_LIVE).
const liveByDefault = false

// composedByDefault is the default of -sim.composed: whether the tests
// (TestSimSeeds, so the short sweep of go test, and every other test that
// runs seeds) draw the composed moves. make sim passes -sim.composed itself.
const composedByDefault = true

// scenarioOf is the scenario of seed under -sim.composed.
func scenarioOf(seed uint64) Scenario {
	if *flagComp && *flagLive {
		return NewLiveScenario(seed)
	}
	if *flagComp {
		return NewComposedScenario(seed)
	}
	return NewScenario(seed)
}

// shardOf parses -sim.shard.
func shardOf(s string) (i, n int, err error) {
	if _, err := fmt.Sscanf(s, "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("-sim.shard=%q: want i/n with 0 <= i < n", s)
	}
	return i, n, nil
}

// seedWallLimit bounds one seed in wall-clock time: virtual time cannot
// catch a livelock (goroutines that spin without ever blocking).
const seedWallLimit = 2 * time.Minute

func runSeed(t *testing.T, seed uint64, o Options) *Result {
	t.Helper()
	var res *Result
	watchdog := time.AfterFunc(seedWallLimit, func() {
		panic(fmt.Sprintf("dst: seed %d still running after %v of wall time (a livelock: something spins without blocking)\nreplay: %s",
			seed, seedWallLimit, replayCommand(seed)))
	})
	defer watchdog.Stop()
	synctest.Test(t, func(t *testing.T) {
		var err error
		res, err = Run(scenarioOf(seed), o)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	})
	return res
}

func replayCommand(seed uint64) string {
	resend := ""
	if !*flagResend {
		resend = " -sim.resend=false"
	}
	if *flagLibToken {
		resend += " -sim.libtoken"
	}
	if *flagProcs != 1 {
		resend += fmt.Sprintf(" -sim.procs=%d", *flagProcs)
	}
	if *flagTwice {
		resend += " -sim.twice"
	}
	if *flagDetail {
		resend += " -sim.detail"
	}
	if *flagComp != composedByDefault {
		resend += fmt.Sprintf(" -sim.composed=%v", *flagComp)
	}
	if *flagLive != liveByDefault {
		resend += fmt.Sprintf(" -sim.live=%v", *flagLive)
	}
	tags := ""
	if YieldPoints {
		tags = " -tags dstyield"
	}
	tags = fixBuildFlags(tags) // fixsim.go
	return fmt.Sprintf("go test"+tags+" ./internal/dst -run 'TestSimSeeds$' -count=1 -v -args -sim.seed=%d -sim.trace=sim-%d.trace%s", seed, seed, resend)
}

// TestSimSeeds runs -sim.seeds seeds from -sim.start (or the one -sim.seed)
// and checks the invariants of each; a failing seed prints the one command
// that replays it and writes its trace.
func TestSimSeeds(t *testing.T) {
	shard, shards, err := shardOf(*flagShard)
	if err != nil {
		t.Fatal(err)
	}
	seeds := make([]uint64, 0, *flagSeeds)
	if *flagSeed != 0 {
		seeds = append(seeds, *flagSeed)
	} else {
		for i := 0; i < *flagSeeds; i++ {
			if i%shards == shard {
				seeds = append(seeds, *flagStart+uint64(i))
			}
		}
	}
	var ran, failed atomic.Int64
	began := time.Now()
	var mu sync.Mutex
	type cell struct{ seeds, failed, orders, dups, late, resends int }
	matrix := map[string]*cell{}
	var av struct {
		judged, closed, beyond, worst time.Duration
		worstSeed                     uint64
		unbounded                     []uint64
		lateCuts, disarmed, skipped   int
		lateSeeds                     []uint64
	}
	t.Cleanup(func() {
		el := time.Since(began)
		// gate-open-while-usable's figure (one line, summed over shards by
		// make sim).
		sort.Slice(av.unbounded, func(i, j int) bool { return av.unbounded[i] < av.unbounded[j] })
		t.Logf("dst: availability judged %d ms, closed while usable %d ms, beyond the bound %d ms, unbounded seeds %d, worst %d ms seed %d, unbounded %v",
			av.judged.Milliseconds(), av.closed.Milliseconds(), av.beyond.Milliseconds(), len(av.unbounded), av.worst.Milliseconds(), av.worstSeed, av.unbounded)
		sort.Slice(av.lateSeeds, func(i, j int) bool { return av.lateSeeds[i] < av.lateSeeds[j] })
		t.Logf("dst: move cuts after their move ended %d (seeds %v), disarmed at a move's end %d, left armed (door shared) %d",
			av.lateCuts, av.lateSeeds, av.disarmed, av.skipped)
		t.Logf("dst: %d seeds in %v (%.0f seeds/minute), %d failed", ran.Load(), el.Round(time.Millisecond),
			float64(ran.Load())/el.Minutes(), failed.Load())
		keys := make([]string, 0, len(matrix))
		for k := range matrix {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		fmt.Fprintf(&b, "%-50s %6s %6s %8s %6s %6s %7s\n", "broker policy", "seeds", "failed", "orders", "dups", "late", "resends")
		for _, k := range keys {
			c := matrix[k]
			fmt.Fprintf(&b, "%-50s %6d %6d %8d %6d %6d %7d\n", k, c.seeds, c.failed, c.orders, c.dups, c.late, c.resends)
		}
		t.Logf("dst: per broker policy\n%s", b.String())
	})
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			if len(seeds) > 1 {
				t.Parallel()
			}
			o := Options{ResendNotReceived: *flagResend, LibraryToken: *flagLibToken, TraceDetail: *flagDetail}
			res := runSeed(t, seed, o)
			ran.Add(1)
			if *flagTwice {
				again := runSeed(t, seed, o)
				if d := traceDiff(res, again); d != "" {
					t.Errorf("seed %d: two runs gave different traces: %s\nreplay: %s", seed, d, replayCommand(seed))
				}
			}
			if *flagTrace != "" && *flagSeed == seed {
				if err := os.WriteFile(*flagTrace, []byte(res.TraceText()), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("trace of seed %d written to %s (%d lines, hash %016x)", seed, *flagTrace, len(res.Trace), res.TraceHash())
			}
			if testing.Verbose() {
				t.Logf("seed %d: %+v", seed, res.Stats)
			}
			sc := res.Scenario
			key := fmt.Sprintf("dedup=%s fence=%s tokens=%s", sc.Dedup, sc.Fence, sc.Tokens)
			mu.Lock()
			c := matrix[key]
			if c == nil {
				c = &cell{}
				matrix[key] = c
			}
			c.seeds++
			av.judged += res.Avail.Judged
			av.closed += res.Avail.Closed
			av.beyond += res.Avail.Beyond
			if res.Avail.Beyond > 0 {
				av.unbounded = append(av.unbounded, seed)
			}
			if res.Avail.Worst > av.worst {
				av.worst, av.worstSeed = res.Avail.Worst, seed
			}
			av.lateCuts += res.Stats.LateMoveCuts
			av.disarmed += res.Stats.DisarmedCuts
			av.skipped += res.Stats.SkippedCuts
			if res.Stats.LateMoveCuts > 0 {
				av.lateSeeds = append(av.lateSeeds, seed)
			}
			c.orders += res.Stats.Orders
			c.dups += res.Stats.Duplicates
			c.late += res.Stats.LateLandings
			c.resends += res.Stats.Resends
			if len(res.Violations) > 0 {
				c.failed++
			}
			mu.Unlock()
			if len(res.Violations) > 0 {
				failed.Add(1)
				t.Errorf("seed %d (%s) broke %d invariant(s) (trace hash %016x):\n  %s\nreplay: %s", seed, key, len(res.Violations),
					res.TraceHash(), strings.Join(res.Violations, "\n  "), replayCommand(seed))
			}
		})
	}
}

// traceDiff describes where the traces of a and b first differ ("" when
// they are byte-identical), with a few lines of context.
func traceDiff(a, b *Result) string {
	if a.TraceText() == b.TraceText() {
		return ""
	}
	al, bl := a.Trace, b.Trace
	i := 0
	for i < len(al) && i < len(bl) && al[i] == bl[i] {
		i++
	}
	var s strings.Builder
	fmt.Fprintf(&s, "first at line %d of %d/%d", i, len(al), len(bl))
	for k := max(0, i-3); k < i; k++ {
		fmt.Fprintf(&s, "\n    = %s", al[k])
	}
	for k := i; k < i+4; k++ {
		if k < len(al) {
			fmt.Fprintf(&s, "\n  a %s", al[k])
		}
	}
	for k := i; k < i+4; k++ {
		if k < len(bl) {
			fmt.Fprintf(&s, "\n  b %s", bl[k])
		}
	}
	return s.String()
}

// The checker has teeth: with a reconciler that drops the orders that
// finished unknown before a switch (as the unknown-at-switch race did), a
// sweep finds a seed that breaks every-unknown-order-settled, and the
// unmutated run of that seed passes.
func TestSimFindsPlantedDefect(t *testing.T) {
	for seed := uint64(1); seed <= 1000; seed++ {
		res := runSeed(t, seed, Options{DropSwitchUnknowns: true})
		found := false
		for _, v := range res.Violations {
			found = found || strings.Contains(v, InvUnknown) || strings.Contains(v, InvPending) || strings.Contains(v, InvSettledFirst)
		}
		if !found {
			continue
		}
		t.Logf("planted defect found at seed %d (the %d-th seed tried): %s", seed, seed, res.Violations[0])
		if clean := runSeed(t, seed, Options{}); len(clean.Violations) > 0 {
			t.Fatalf("seed %d fails without the planted defect too: %v", seed, clean.Violations)
		}
		return
	}
	t.Fatal("1000 seeds did not find the planted defect")
}

var flagLibToken = flag.Bool("sim.libtoken", false, "TestSimSeeds: send the library's fencing token (Options.LibraryToken)")

var flagResend = flag.Bool("sim.resend", true, "TestSimSeeds: resend an order the Path allows (Path.MayResend; Options.ResendNotReceived)")

// no-duplicate-order has teeth: resending under the same client order ID
// every order a reconcile settled NOT_RECEIVED, provisional or not, books an
// order twice on a broker that does not deduplicate, when the first copy was
// still in the network (a late landing). A sweep finds such a seed.
func TestSimNaiveResendFindsDuplicate(t *testing.T) {
	for seed := uint64(1); seed <= 600; seed++ {
		res := runSeed(t, seed, Options{ResendNaive: true})
		for _, v := range res.Violations {
			if strings.Contains(v, InvDuplicate) {
				if res.Scenario.Dedup == simbroker.DedupAcrossRegions {
					t.Fatalf("seed %d: a duplicate with deduplication across regions: %s", seed, v)
				}
				t.Logf("seed %d (dedup %s, fence %s, tokens %s): %s", seed, res.Scenario.Dedup, res.Scenario.Fence, res.Scenario.Tokens, v)
				return
			}
		}
	}
	t.Fatal("600 seeds with naive resends found no duplicate")
}

// Resending only what Path.MayResend allows books nothing twice, whatever
// the broker's deduplication, and does resend (the check is not vacuous).
func TestSimMayResendNoDuplicate(t *testing.T) {
	resends := 0
	for seed := uint64(1); seed <= 60; seed++ {
		res := runSeed(t, seed, Options{ResendNotReceived: true})
		resends += res.Stats.Resends
		for _, v := range res.Violations {
			t.Errorf("seed %d (dedup %s, fence %s): %s\nreplay: %s -sim.resend", seed, res.Scenario.Dedup, res.Scenario.Fence, v, replayCommand(seed))
		}
	}
	t.Logf("%d resends allowed by MayResend over 60 seeds", resends)
	if resends == 0 {
		t.Fatal("MayResend allowed no resend in 60 seeds: nothing was checked")
	}
}
