package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// quickfix v0.9.10 leaves goroutines blocked after a session stops: its
// logon/logout timer callbacks, its read loop and its in-session-time query
// (the same four transports/fix's tests name, with the reasons).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(monitored{m},
		goleak.IgnoreTopFunction("github.com/quickfixgo/quickfix.(*stateMachine).Connect.func1"),
		goleak.IgnoreTopFunction("github.com/quickfixgo/quickfix.(*session).initiateLogoutInReplyTo.func1"),
		// and its read loop blocked sending a message nobody receives, and
		// its in-session-time query, when Stop ended the session loop first.
		goleak.IgnoreTopFunction("github.com/quickfixgo/quickfix.readLoop"),
		goleak.IgnoreTopFunction("github.com/quickfixgo/quickfix.(*session).waitForInSessionTime"),
	)
}

// monitored runs the tests with the scheduling-delay monitor on (stopped
// before goleak looks for leaks).
type monitored struct{ m *testing.M }

func (w monitored) Run() int {
	lag = startLagMonitor()
	defer lag.close()
	return w.m.Run()
}

// Invariant names, used in every failure message.
const (
	invNoDuplicate = "INVARIANT no-duplicate-order"
	invNoLost      = "INVARIANT no-lost-order"
	invOldRegion   = "INVARIANT no-order-through-old-region-after-fence"
	invHalt        = "INVARIANT halt-exactly-when-no-target-eligible"
	invWS          = "INVARIANT ws-every-sequence-once-in-order"
	invFIX         = "INVARIANT fix-sequence-continuous"
	invScenario    = "SCENARIO"
)

// slots bounds how many simulated brokers run at once: each test owns a
// broker, a Path probing every 500 ms and three transports, and on 2 cores
// under -race more than a few at once starve the probes into spurious
// timeouts. A test on a loaded host takes more of them (budget.weight): what
// the process asks of the CPU must shrink when the host gives it less, or
// its own queues grow without bound (orders, lookups and probes all late).
var slots = newPool(3)

var compIDs atomic.Int64

// env is one test's world: its own broker, client and trader.
type env struct {
	t       *testing.T
	b       *simbroker.Broker
	c       *orderflow.Client
	tr      *orderflow.Trader
	primary string
	backup  string
	// bud is what this test's timing and deadlines are derived from
	// (budget_test.go).
	bud budget
}

type envOptions struct {
	policy simbroker.SessionPolicy
	// tune adjusts the test's timing (derived from b).
	tune func(tm *orderflow.Timing, b budget)
	// inject replaces Scenario.Inject (nil: Scenario.Inject).
	inject func(*env) error
	// broker is the broker's policy (zero: deduplication across regions, no
	// broker fence, no tokens).
	broker orderflow.BrokerPolicy
}

// start runs the test in parallel (bounded by slots) and starts a broker with
// regions eu (primary) and us, a client on all three transports and a trader.
func start(t *testing.T, o envOptions) *env {
	t.Helper()
	t.Parallel()
	w := newBudget().weight()
	slots.acquire(w)
	t.Cleanup(func() { slots.release(w) })
	// Measured again: the wait for slots may have been long.
	bud := newBudget()
	t.Logf("%s; %d of %d broker slot(s); %s", bud, w, slots.size, lag.describe(time.Now().Add(-lagWindow)))

	bcfg := simbroker.DefaultConfig()
	bcfg.TickInterval = 25 * time.Millisecond
	bcfg.Streams = []string{"px.EURUSD"}
	bcfg.PingInterval = time.Second
	bcfg.ReplayBuffer = 4096
	bcfg.SessionPolicy = o.policy
	bcfg.ClientCompID = fmt.Sprintf("ITEST%d", compIDs.Add(1))
	if o.broker != (orderflow.BrokerPolicy{}) {
		if err := o.broker.Apply(&bcfg); err != nil {
			t.Fatalf("broker policy: %v", err)
		}
	}
	b, err := simbroker.Start(context.Background(), bcfg)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })

	cfg := orderflow.FromSimBroker(b)
	cfg.Timing = bud.timing
	if o.tune != nil {
		o.tune(&cfg.Timing, bud)
	}
	c, err := orderflow.New(cfg)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bud.scaled(15*time.Second))
	defer cancel()
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		t.Fatalf("start client: %v", err)
	}
	e := &env{t: t, b: b, c: c, primary: "eu", backup: "us", bud: bud}
	t.Cleanup(func() {
		e.stopTrading()
		_ = c.Close()
	})
	e.trade("i")
	began := time.Now()
	t.Cleanup(func() { t.Logf("during the test: %s", lag.describe(began)) })
	return e
}

// trade starts a trader whose client order IDs start with prefix: on a
// quiet host a REST order every 50 ms, a FIX order every 100 ms, an account
// read every 250 ms, every third order a resting limit. On a loaded host the
// intervals stretch with the budget: the trader starts each order on its own
// goroutine whether the last one was answered or not, so a process given
// less CPU than its orders cost falls further behind with every order.
func (e *env) trade(prefix string) {
	e.tr = orderflow.StartTrading(e.c, orderflow.TradeOptions{
		RESTEvery: e.bud.scaled(50 * time.Millisecond), FIXEvery: e.bud.scaled(100 * time.Millisecond),
		ReadEvery:  e.bud.scaled(250 * time.Millisecond),
		LimitEvery: 3, LimitPrice: "0.5000", Prefix: prefix,
	})
}

func (e *env) stopTrading() {
	if e.tr != nil {
		e.tr.Stop()
		e.tr = nil
	}
}

// waitFor polls cond every 10 ms until it holds; past the deadline the test
// fails with what it waited for, the scheduling delay meanwhile and the
// timeline so far.
//
// d is the budget on a quiet host. The deadline is d scaled by the test's
// budget (the lateness measured before it began), and the time the lag
// monitor lost waiting for a CPU during the wait is added to it, up to
// maxStretch times the scaled budget in all. A condition that never holds
// still fails, within maxStretch × scaled d (30 s for a 10 s budget on a
// quiet host).
func (e *env) waitFor(d time.Duration, what string, cond func() bool) {
	e.t.Helper()
	budget := e.bud.scaled(d)
	tk := time.NewTicker(10 * time.Millisecond)
	defer tk.Stop()
	began := time.Now()
	for !cond() {
		<-tk.C
		elapsed := time.Since(began)
		_, lost := lag.since(began)
		if elapsed-lost < budget && elapsed < maxStretch*budget {
			continue
		}
		if cond() {
			return
		}
		e.t.Fatalf("%s: timed out after %s (budget %s, %s lost waiting for a CPU) waiting for %s (%s)\n%s",
			invScenario, elapsed.Round(time.Millisecond), budget.Round(time.Millisecond), lost.Round(time.Millisecond), what, lag.describe(began), e.timeline())
	}
}

func (e *env) timeline() string {
	var w bytes.Buffer
	e.c.Recorder().WriteTimeline(&w, false)
	return w.String()
}

func (e *env) active() string { ep, _ := e.c.Path().Active(); return ep.Name }

func (e *env) gate() pathdialer.GateState { g, _ := e.c.Path().GateState(); return g }

// flowsOn: endpoint is active and the gate is open.
func (e *env) flowsOn(endpoint string) bool {
	return e.active() == endpoint && e.gate() == pathdialer.GateOpen
}

// ackedSince counts orders of a transport answered (accepted) by endpoint
// after t ("" transport: any).
func (e *env) ackedSince(transport, endpoint string, t time.Time) int {
	n := 0
	for _, o := range e.c.Orders() {
		if o.Acked && o.AckEndpoint == endpoint && !o.AckedAt.Before(t) && (transport == "" || o.Transport == transport) {
			n++
		}
	}
	return n
}

// tradingOn waits until both order transports have had answers from
// endpoint after t.
func (e *env) tradingOn(endpoint string, t time.Time, d time.Duration) {
	e.t.Helper()
	e.waitFor(d, fmt.Sprintf("REST and FIX orders acknowledged by %s", endpoint), func() bool {
		return e.ackedSince(orderflow.REST, endpoint, t) >= 3 && e.ackedSince(orderflow.FIX, endpoint, t) >= 2
	})
}

// judgedBefore waits until every order placed before t that left the
// process is answered or judged by a reconcile, a provisional NOT_RECEIVED
// included: what a blackholed relay still holds of them is then accounted
// for, and healing it lets the held copies land while every verdict on them
// is still provisional (their quarantine, Timing.Quarantine, outlasts this
// wait), so the re-query after the quarantine finds them booked instead of
// a re-send racing them.
//
// Past the budget (d scaled, extended as in waitFor) it logs and returns:
// finish names whatever stays unjudged.
func (e *env) judgedBefore(t time.Time, d time.Duration) {
	e.t.Helper()
	judged := func() bool {
		for _, o := range e.c.Orders() {
			if o.PlacedAt.Before(t) && o.Sent && !o.Acked && !o.Rejected && !o.Settled {
				return false
			}
		}
		return true
	}
	budget := e.bud.scaled(d)
	tk := time.NewTicker(10 * time.Millisecond)
	defer tk.Stop()
	began := time.Now()
	for !judged() {
		<-tk.C
		elapsed := time.Since(began)
		if _, lost := lag.since(began); elapsed-lost >= budget || elapsed >= maxStretch*budget {
			e.t.Logf("orders placed before %s still unjudged after %s; healing anyway", e.c.Recorder().Rel(t), elapsed.Round(time.Millisecond))
			return
		}
	}
}

// auditOrders returns the audit's order records on region matching outcome
// at or after t.
func (e *env) auditOrders(region string, outcome simbroker.Outcome, t time.Time) simbroker.AuditLog {
	return e.b.Audit().Orders().Filter(func(r simbroker.Record) bool {
		return r.Region == region && r.Outcome == outcome && !r.Time.Before(t)
	})
}

// finish stops trading, drains, runs orderflow's Check and asserts every
// invariant directly through the broker's audit. It returns the Summary.
func (e *env) finish(sc *orderflow.Scenario, faultAt time.Time, wantHalt bool) orderflow.Summary {
	t := e.t
	t.Helper()
	e.stopTrading()
	// Orders still pending may wait for a re-query after their quarantine
	// (one reconcile, retried once) and then for their re-send's answer:
	// on a starved host the re-query alone can take seconds (its lookups go
	// one by one).
	// An order judged NOT_RECEIVED just before stays provisional for its
	// quarantine first.
	drain := e.bud.scaled(10*time.Second) + 2*e.bud.timing.ReconcileTimeout + e.bud.timing.Quarantine
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	pending := e.c.Drain(ctx)
	cancel()
	if len(pending) > 0 {
		t.Errorf("%s: %d order(s) still pending after a %s drain: %v", invNoLost, len(pending), drain.Round(time.Millisecond), pending)
	}
	audit := e.b.Audit()
	sum := e.c.Check(orderflow.CheckOptions{Audit: audit, Scenario: sc, FaultAt: faultAt, Backup: e.backup})
	var report bytes.Buffer
	sum.Write(&report)
	orders := e.c.Orders()
	if len(orders) == 0 {
		t.Fatalf("%s: no order was placed", invScenario)
	}
	byID := map[string]orderflow.OrderRecord{}
	for _, o := range orders {
		byID[o.ClOrdID] = o
	}
	for _, v := range sum.Violations {
		t.Errorf("orderflow.Check: %s", v)
	}

	// No duplicate order: the audit books each client order ID at most once.
	if d := audit.Duplicates(); len(d) > 0 {
		t.Errorf("%s: the broker booked %d client order ID(s) more than once: %v", invNoDuplicate, len(d), d)
	}
	bookings := map[string]int{}
	for _, r := range audit.Orders().Booked() {
		bookings[r.ClientOrderID]++
	}
	for id, n := range bookings {
		if n > 1 {
			t.Errorf("%s: %s booked %d times", invNoDuplicate, id, n)
		}
	}
	for _, r := range audit.Orders().Filter(func(r simbroker.Record) bool { return r.PossDup }) {
		t.Errorf("%s: %s reached the broker with PossDupFlag=Y through %s (an order replayed)", invNoDuplicate, r.ClientOrderID, r.Region)
	}

	// No lost order: every order sent was acknowledged or settled, and every
	// booking in the audit is one the client knows the fate of.
	for _, o := range orders {
		if o.Sent && !o.Answered() {
			t.Errorf("%s: %s order %s was sent and never acknowledged nor settled", invNoLost, o.Transport, o.ClOrdID)
		}
	}
	for id := range bookings {
		o, ok := byID[id]
		switch {
		case !ok:
			t.Errorf("%s: the broker booked %s, which the client never placed", invNoLost, id)
		case !o.Acked && !(o.Settled && (o.Fate == pathdialer.FateFilled || o.Fate == pathdialer.FateResting || o.Fate == pathdialer.FateCanceled)):
			t.Errorf("%s: the broker booked %s but the client neither got its acknowledgement nor settled it (acked=%v settled=%v fate=%s)",
				invNoLost, id, o.Acked, o.Settled, o.Fate)
		}
	}

	// Never two live paths; every late landing reported: orderflow.Check
	// classifies every booking through a fenced region from the broker's
	// audit (its findings are reported above); here, the counts.
	if sum.TwoLivePaths != 0 {
		t.Errorf("%s: %d order(s) booked through a region after its fence began", invOldRegion, sum.TwoLivePaths)
	}
	for _, l := range sum.LateLandings {
		t.Logf("late landing: %s sent %s, fence of %s began %s, booked %s (reported %v, after a final verdict %v)",
			l.Order, l.SentAt.Round(time.Millisecond), l.Region, l.FenceAt.Round(time.Millisecond), l.BookedAt.Round(time.Millisecond), l.Reported, l.AfterFinal)
	}

	// Halt exactly when no target is eligible: orderflow.Check matches every
	// HALT to a NO_TARGET_AVAILABLE decision and back; here, the scenario.
	if wantHalt && sum.Halts == 0 {
		t.Errorf("%s: no target was eligible (every region faulted) but trading never halted", invHalt)
	}
	// A halt while a target was eligible: the backup's last probe before the
	// HALT succeeded within MaxHealthAge. (Under load the backup's own probe
	// may time out just when the primary goes DOWN: then nothing was
	// eligible and the halt is right; orderflow.Check pairs every HALT with
	// its NO_TARGET_AVAILABLE decision.)
	if !wantHalt {
		probes := e.c.Recorder().Events(pathdialer.EventProbe)
		for _, h := range e.c.Recorder().Events(pathdialer.EventHalt) {
			var last *pathdialer.Event
			for i := range probes {
				if probes[i].Endpoint == e.backup && !probes[i].Time.After(h.Time) {
					last = &probes[i]
				}
			}
			if last != nil && last.Err == nil && h.Time.Sub(last.Time) < e.bud.timing.MaxHealthAge {
				t.Errorf("%s: HALT at %s while %s was eligible (last probe OK %s before)", invHalt, e.c.Recorder().Rel(h.Time), e.backup, h.Time.Sub(last.Time).Round(time.Millisecond))
			} else {
				t.Logf("halt at %s with %s not eligible (its last probe failed or was stale): allowed", e.c.Recorder().Rel(h.Time), e.backup)
			}
		}
	}

	// The WebSocket handler saw every sequence once, in order.
	if len(sum.Streams) == 0 {
		t.Errorf("%s: the price stream delivered nothing", invWS)
	}
	for _, st := range sum.Streams {
		if st.Messages < 10 || st.Duplicates != 0 || st.Gaps != 0 || st.Missed != 0 {
			t.Errorf("%s: stream %s: %d delivered, %d duplicate(s), %d gap(s), %d tick(s) missed (seq %d..%d via %v)",
				invWS, st.Stream, st.Messages, st.Duplicates, st.Gaps, st.Missed, st.First, st.Last, st.Endpoints)
		}
		if uint64(st.Messages) != st.Last-st.First+1 {
			t.Errorf("%s: stream %s: %d messages for seq %d..%d", invWS, st.Stream, st.Messages, st.First, st.Last)
		}
	}

	// FIX sequence numbers continuous (one session across regions).
	fx := sum.FIX
	if fx.Logons == 0 || fx.ExecReports == 0 {
		t.Errorf("%s: FIX session: %d logon(s), %d execution report(s)", invFIX, fx.Logons, fx.ExecReports)
	}
	if fx.Backward != 0 || fx.Resets != 0 {
		t.Errorf("%s: incoming MsgSeqNum went back %d time(s), %d reset(s) under the continue model", invFIX, fx.Backward, fx.Resets)
	}
	failovers := 0
	for _, sw := range sum.Switches {
		if !sw.Failback {
			failovers++
		}
	}
	if failovers > 0 && fx.Logons < 2 {
		t.Errorf("%s: %d failover(s) but only %d FIX logon(s): the session never moved", invFIX, failovers, fx.Logons)
	}

	if t.Failed() {
		t.Logf("timeline:\n%s\n%s", e.timeline(), report.String())
	} else if testing.Verbose() {
		t.Logf("\n%s", report.String())
	}
	return sum
}

// runScenario is the common shape: trade on eu, inject the fault, wait for
// effect, recover, wait for failback when the scenario requires it, check.
func runScenario(t *testing.T, sc orderflow.Scenario, o envOptions, effect func(e *env, faultAt time.Time)) (*env, orderflow.Summary) {
	wantHalt := sc.Halt == orderflow.Must
	if sc.Halt == orderflow.MustNot {
		sc.Halt = orderflow.May // finish() checks halts against eligibility instead
	}
	e := start(t, o)
	began := time.Now()
	e.tradingOn(e.primary, began, 10*time.Second)

	faultAt := time.Now()
	e.c.Recorder().Note(orderflow.Info, "scenario", "FAULT %s", sc.Describe())
	inject := func(e *env) error { return sc.Inject(e.b) }
	if o.inject != nil {
		inject = o.inject
	}
	if err := inject(e); err != nil {
		t.Fatalf("inject %s: %v", sc.Kind, err)
	}
	effect(e, faultAt)
	// Recover once every order placed so far is answered or judged by a
	// reconcile, while the NOT_RECEIVED verdicts are still provisional: the
	// copies a blackholed relay held land now, before any re-send can be
	// allowed, and the re-query after the quarantine finds them booked.
	// (Waiting for the final verdicts instead races the re-sends against
	// those copies: on a loaded host a copy landed through the old region
	// after its order was called NOT_RECEIVED, final, and before the re-send
	// went out.)
	e.judgedBefore(time.Now(), 15*time.Second)
	recoverAt := time.Now()
	if first := e.firstProvisional(faultAt); !first.IsZero() && recoverAt.After(first.Add(e.bud.timing.Quarantine)) {
		t.Logf("the heal comes %s after the first provisional verdict, past the %s quarantine: held copies may land after a final verdict",
			recoverAt.Sub(first).Round(time.Millisecond), e.bud.timing.Quarantine)
	}
	for _, r := range sc.Regions() {
		if err := e.recover(&sc, r); err != nil {
			t.Fatalf("recover %s: %v", r, err)
		}
	}
	e.c.Recorder().Note(orderflow.Info, "scenario", "RECOVER %v", sc.Regions())
	switched := e.active() != e.primary
	if switched && sc.Failback == orderflow.Must {
		e.waitFor(15*time.Second, "failback to "+e.primary, func() bool { return e.flowsOn(e.primary) })
		e.tradingOn(e.primary, time.Now(), 10*time.Second)
	} else {
		e.waitFor(10*time.Second, "orders acknowledged after recovery", func() bool {
			return e.ackedSince(orderflow.REST, e.active(), recoverAt) >= 3 && e.ackedSince(orderflow.FIX, e.active(), recoverAt) >= 2
		})
	}
	sum := e.finish(&sc, faultAt, wantHalt)
	t.Logf("%s: %d orders, %d switch(es), %d halt(s), took %s", sc.Kind, len(e.c.Orders()), len(sum.Switches), sum.Halts,
		time.Since(began).Round(10*time.Millisecond))
	return e, sum
}

func scenario(t *testing.T, kind string) orderflow.Scenario {
	t.Helper()
	sc, err := orderflow.NewScenario(kind, "eu", "us")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// recover clears sc's faults on region. Leaving Down re-listens on the
// relay's port, and on a shared host another process can hold that port
// for a moment (seen: "bind: address already in use" while other packages'
// tests ran); the relay then stays Down and says so, and recover tries
// again, for up to a scaled 10 s, before it gives up.
func (e *env) recover(sc *orderflow.Scenario, region string) error {
	e.t.Helper()
	deadline := time.Now().Add(e.bud.scaled(10 * time.Second))
	for {
		err := sc.Recover(e.b, region)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		e.t.Logf("recover %s: %v; trying again", region, err)
		time.Sleep(100 * time.Millisecond) // end-to-end: waiting for another process to let the port go
	}
}

// firstProvisional is the first provisional NOT_RECEIVED verdict given
// after t (zero: none was).
func (e *env) firstProvisional(t time.Time) time.Time {
	var first time.Time
	for _, o := range e.c.Orders() {
		for _, v := range o.Verdicts {
			if v.Fate == pathdialer.FateNotReceived && !v.Final && !v.At.Before(t) && (first.IsZero() || v.At.Before(first)) {
				first = v.At
			}
		}
	}
	return first
}

// failedOver waits for flow on the backup with orders answered there.
func failedOver(e *env, faultAt time.Time) {
	e.t.Helper()
	e.waitFor(10*time.Second, "failover to "+e.backup+" and release", func() bool { return e.flowsOn(e.backup) })
	e.tradingOn(e.backup, faultAt, 10*time.Second)
}

// placeRefusedAtOnce places one REST order and returns how long it took and
// the error.
func (e *env) placeOnce(id string) (time.Duration, error) {
	t0 := time.Now()
	err := e.c.PlaceREST(context.Background(), id)
	return time.Since(t0), err
}
