package pathdialer_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// The whole failover, step by step: the primary is blackholed, submissions are
// held, the primary is fenced, the engine switches, the reconciler receives every
// ticket in flight or of unknown outcome, and only then is flow released on the
// backup — where an Acquire that waited through the hold proceeds.
func TestFailoverBlackholedPrimary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		ctx := context.Background()
		start := time.Now()
		h.start()
		if st := gateState(h.p); st != pathdialer.GateOpen {
			t.Fatalf("gate after Start = %v, want OPEN", st)
		}
		oldConn, err := h.p.Dial(ctx, pathdialer.ServiceFIX)
		if err != nil {
			t.Fatal(err)
		}
		inflight := mustAcquire(t, h.p, "o-inflight") // sent, never answered
		mustAcquire(t, h.p, "o-unknown").Unknown(errors.New("read timeout after write"))
		mustAcquire(t, h.p, "o-done").Done()

		h.probes.set("eu", probeBlackhole)
		hold := h.await(pathdialer.EventHold, nil)
		// o-inflight, unanswered, is late at 0.25 s (SuspectAfter, ProbeTimeout/2):
		// eu is probed early then, and that probe times out at 0.75 s, the next
		// early one at 1.25 s, the round's at 1 s at 1.5 s: the third failure
		// makes eu DOWN and the hold follows at once.
		if got := hold.Time.Sub(start); got != 1500*time.Millisecond {
			t.Errorf("hold after %v, want 1.5s", got)
		}
		if hold.Endpoint != "eu" || hold.Token != 0 {
			t.Errorf("hold event = %v", hold)
		}
		if st := gateState(h.p); st != pathdialer.GateHeld {
			t.Fatalf("gate during the switch = %v, want HELD", st)
		}
		waiting := acquireAsync(ctx, h.p, pathdialer.ServiceREST, "o-held")
		synctest.Wait()
		select {
		case r := <-waiting:
			t.Fatalf("Acquire returned during the hold: %+v", r)
		default:
		}
		returnedDuringReconcile := make(chan bool, 1)
		h.hooks.mu.Lock()
		h.hooks.onReconcile = func(pathdialer.Reconciliation) { returnedDuringReconcile <- len(waiting) > 0 }
		h.hooks.mu.Unlock()

		h.await(pathdialer.EventFenceSuccess, func(e pathdialer.Event) bool { return e.Endpoint == "eu" && e.To == "us" })
		sw := h.await(pathdialer.EventSwitch, nil)
		if sw.From != "eu" || sw.To != "us" || sw.Token != 1 {
			t.Errorf("switch = %v", sw)
		}
		rs := h.await(pathdialer.EventReconcileStart, nil)
		// The reconcile waited InflightGrace for o-inflight, which never finished.
		if got := rs.Time.Sub(sw.Time); got != time.Second {
			t.Errorf("reconcile started %v after the switch, want InflightGrace (1s)", got)
		}
		rel := h.await(pathdialer.EventRelease, nil)
		if <-returnedDuringReconcile {
			t.Fatal("the held Acquire returned before the reconciler did")
		}
		if rel.Endpoint != "us" || rel.Token != 1 {
			t.Errorf("release = %v", rel)
		}
		r := <-waiting
		if r.err != nil {
			t.Fatalf("Acquire that waited through the hold: %v", r.err)
		}
		if r.t.Endpoint != "us" || r.t.Token != 1 {
			t.Errorf("waiting Acquire got endpoint %q token %d, want us 1", r.t.Endpoint, r.t.Token)
		}
		r.t.Done()

		// The sequence, in order.
		evs := h.rec.all()
		relIdx := slices.IndexFunc(evs, func(e pathdialer.Event) bool { return e.Kind == pathdialer.EventRelease })
		got := kindsSince(evs[:relIdx+1], 0)
		// The first hold is the probe's: the gate stops granting on eu when it
		// goes DOWN, before the controller decides.
		want := []pathdialer.EventKind{
			pathdialer.EventHold, pathdialer.EventDecision, pathdialer.EventHold, pathdialer.EventFenceStart, pathdialer.EventFenceSuccess,
			pathdialer.EventDecision, pathdialer.EventSwitch, pathdialer.EventReconcileStart, pathdialer.EventReconcileSuccess,
			pathdialer.EventRelease,
		}
		if !slices.Equal(got, want) {
			t.Errorf("event sequence:\n got %v\nwant %v\n%s", got, want, timeline(evs))
		}

		fences := h.hooks.fenceCalls()
		if len(fences) != 1 || fences[0].Endpoint.Name != "eu" || fences[0].To != "us" || fences[0].Token != 0 || fences[0].Attempt != 1 || fences[0].Failback {
			t.Errorf("fence calls = %+v", fences)
		}
		recs := h.hooks.reconciliations()
		if len(recs) != 1 {
			t.Fatalf("reconciliations = %+v", recs)
		}
		rec := recs[0]
		if rec.From != "eu" || rec.To != "us" || rec.Token != 1 || rec.Reason != "failover" || rec.Attempt != 1 {
			t.Errorf("reconciliation = %+v", rec)
		}
		if ids := orderIDs(rec.Tickets); !slices.Equal(ids, []string{"o-inflight", "o-unknown"}) {
			t.Errorf("reconciled orders = %v, want o-inflight and o-unknown", ids)
		}
		for _, tk := range rec.Tickets {
			want := map[string]pathdialer.TicketState{"o-inflight": pathdialer.TicketInFlight, "o-unknown": pathdialer.TicketUnknown}[tk.OrderID]
			if tk.State != want || tk.Endpoint != "eu" || tk.Token != 0 || tk.Service != "rest" {
				t.Errorf("ticket %+v, want state %v on eu token 0", tk, want)
			}
			if tk.OrderID == "o-unknown" && (tk.Cause == nil || !strings.Contains(tk.Cause.Error(), "read timeout")) {
				t.Errorf("unknown ticket's cause = %v", tk.Cause)
			}
		}

		// The old path is fenced: its connection closed, dials refused.
		if _, err := oldConn.Read(make([]byte, 1)); err == nil {
			t.Error("connection to eu still open after the switch")
		}
		if !h.p.Fenced("eu") || h.p.Fenced("us") {
			t.Errorf("Fenced(eu)=%v Fenced(us)=%v", h.p.Fenced("eu"), h.p.Fenced("us"))
		}
		if ep, gen := h.p.Active(); ep.Name != "us" || gen != 1 {
			t.Errorf("Active = %s/%d", ep.Name, gen)
		}
		// A late answer for the order handed to reconciliation is reported.
		inflight.Done()
		late := h.await(pathdialer.EventLateTicket, nil)
		if late.Endpoint != "eu" || late.Token != 0 || !strings.Contains(late.Cause, "o-inflight") {
			t.Errorf("late ticket event = %v", late)
		}
	})
}

// Both paths fail: Acquire returns ErrTradingHalted at once (no wait, whatever
// its context), and when the primary answers again flow resumes only through a
// reconcile on the same endpoint that is handed the order in flight at the halt.
func TestHaltAndResumeRunsReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		inflight := mustAcquire(t, h.p, "o-1")
		h.probes.set("us", probeFail)
		h.probes.set("eu", probeBlackhole)
		halt := h.await(pathdialer.EventHalt, nil)
		if !strings.Contains(halt.Cause, "no eligible target") {
			t.Errorf("halt cause = %q", halt.Cause)
		}
		if st := gateState(h.p); st != pathdialer.GateHalted {
			t.Fatalf("gate = %v, want HALTED", st)
		}
		before := time.Now()
		_, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-2")
		if !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Fatalf("Acquire during halt: %v, want ErrTradingHalted", err)
		}
		if !strings.Contains(err.Error(), "no eligible target") {
			t.Errorf("halt error does not say why: %v", err)
		}
		if waited := time.Since(before); waited != 0 {
			t.Errorf("Acquire during halt waited %v", waited)
		}
		if len(h.hooks.reconciliations()) != 0 || len(h.hooks.fenceCalls()) != 0 {
			t.Fatal("halt ran a fence or reconcile")
		}
		<-time.After(10 * time.Second) // ten more rounds, still halted
		if n := countKind(h.rec.all(), pathdialer.EventDecision); n != 1 {
			t.Errorf("%d NO_TARGET_AVAILABLE decision events in one halt, want 1", n)
		}
		if n := countKind(h.rec.all(), pathdialer.EventHalt); n != 1 {
			t.Errorf("%d halt events, want 1", n)
		}

		// The primary answers again.
		h.probes.set("eu", probeOK)
		resume := h.await(pathdialer.EventResume, nil)
		if resume.Endpoint != "eu" {
			t.Errorf("resume = %v", resume)
		}
		h.await(pathdialer.EventHold, nil)
		h.await(pathdialer.EventReconcileSuccess, nil)
		rel := h.await(pathdialer.EventRelease, nil)
		if rel.Endpoint != "eu" || rel.Token != 0 {
			t.Errorf("release = %v", rel)
		}
		recs := h.hooks.reconciliations()
		if len(recs) != 1 || recs[0].From != "eu" || recs[0].To != "eu" || recs[0].Reason != "resume after halt" {
			t.Fatalf("reconciliations = %+v", recs)
		}
		if ids := orderIDs(recs[0].Tickets); !slices.Equal(ids, []string{"o-1"}) {
			t.Errorf("reconciled %v, want [o-1]", ids)
		}
		tk := mustAcquire(t, h.p, "o-3")
		if tk.Endpoint != "eu" || tk.Token != 0 {
			t.Errorf("ticket after resume: %s/%d", tk.Endpoint, tk.Token)
		}
		tk.Done()
		inflight.Done()
		h.await(pathdialer.EventLateTicket, nil)
		if n := h.p.Engine().Token(); n != 0 {
			t.Errorf("generation = %d after a halt and resume, want 0 (no switch)", n)
		}
	})
}

// A fence that keeps failing never lets the engine switch: held, then halted with
// the fence's error after FenceAttempts, retried with growing backoff for ever.
func TestFailingFenceNeverSwitches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.FenceAttempts = 3
			c.FenceBackoff = pathdialer.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second}
		})
		defer h.close()
		h.hooks.setFenceFails(-1)
		h.start()
		// A probe that fails at once keeps probe rounds instantaneous, so the
		// fence retries are spaced by the backoff alone.
		h.probes.set("eu", probeFail)
		h.await(pathdialer.EventHold, nil)
		waiting := acquireAsync(context.Background(), h.p, pathdialer.ServiceREST, "o-held")
		halt := h.await(pathdialer.EventHalt, nil)
		if !strings.Contains(halt.Cause, "fence") || !strings.Contains(halt.Cause, errFence.Error()) {
			t.Errorf("halt cause = %q", halt.Cause)
		}
		// The Acquire that waited through the hold now fails loudly, with the cause.
		r := <-waiting
		if !errors.Is(r.err, pathdialer.ErrTradingHalted) || !errors.Is(r.err, errFence) {
			t.Fatalf("waiting Acquire: %v, want ErrTradingHalted wrapping the fence error", r.err)
		}
		<-time.After(time.Minute)
		evs := h.rec.all()
		if n := countKind(evs, pathdialer.EventSwitch); n != 0 {
			t.Fatalf("%d switches with a failing fence", n)
		}
		if n := countKind(evs, pathdialer.EventFenceSuccess); n != 0 {
			t.Fatalf("%d fence successes", n)
		}
		if ep, gen := h.p.Active(); ep.Name != "eu" || gen != 0 || h.p.Engine().Token() != 0 || len(h.p.Engine().History()) != 0 {
			t.Fatalf("active %s/%d, engine token %d", ep.Name, gen, h.p.Engine().Token())
		}
		if n := countKind(evs, pathdialer.EventHalt); n != 1 {
			t.Errorf("%d halt events, want 1 (the halt is not repeated per attempt)", n)
		}
		fences := h.hooks.fenceCalls()
		if len(fences) < 10 {
			t.Fatalf("only %d fence attempts in a minute", len(fences))
		}
		// Attempts are numbered and spaced by the capped backoff.
		var times []time.Time
		for _, e := range evs {
			if e.Kind == pathdialer.EventFenceStart {
				times = append(times, e.Time)
				if e.Attempt != len(times) {
					t.Errorf("fence attempt %d numbered %d", len(times), e.Attempt)
				}
			}
		}
		for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 2 * time.Second, 2 * time.Second} {
			if got := times[i+1].Sub(times[i]); got != want {
				t.Errorf("delay before attempt %d = %v, want %v", i+2, got, want)
			}
		}
		// eu is fenced locally while its fence is pending; us is not active.
		if _, err := h.p.Dial(context.Background(), pathdialer.ServiceFIX); !errors.Is(err, pathdialer.ErrFenced) {
			t.Errorf("Dial during a pending fence: %v, want ErrFenced", err)
		}
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-2"); !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Errorf("Acquire: %v", err)
		}
	})
}

// The fence fails FenceAttempts times (halt, with the cause), then succeeds: the
// switch, the reconcile and the release follow.
func TestFenceFailsThenSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.FenceAttempts = 3 })
		defer h.close()
		h.hooks.setFenceFails(3)
		h.start()
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventHalt, func(e pathdialer.Event) bool { return strings.Contains(e.Cause, "3 times") })
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-1"); !errors.Is(err, pathdialer.ErrTradingHalted) || !errors.Is(err, errFence) {
			t.Fatalf("Acquire while the fence fails: %v", err)
		}
		ok := h.await(pathdialer.EventFenceSuccess, nil)
		if ok.Attempt != 4 {
			t.Errorf("fence succeeded on attempt %d, want 4", ok.Attempt)
		}
		h.await(pathdialer.EventSwitch, func(e pathdialer.Event) bool { return e.To == "us" })
		h.await(pathdialer.EventReconcileSuccess, nil)
		rel := h.await(pathdialer.EventRelease, nil)
		if rel.Endpoint != "us" || rel.Token != 1 {
			t.Errorf("release = %v", rel)
		}
		tk := mustAcquire(t, h.p, "o-2")
		if tk.Endpoint != "us" {
			t.Errorf("ticket on %s", tk.Endpoint)
		}
		tk.Done()
	})
}

// A reconcile that keeps failing never releases flow: held, then halted with the
// reconciler's error after ReconcileAttempts, with every attempt handed the same
// tickets.
func TestFailingReconcileNeverReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.ReconcileAttempts = 3 })
		defer h.close()
		h.hooks.setRecFails(-1)
		h.start()
		mustAcquire(t, h.p, "o-inflight")
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventSwitch, nil)
		waiting := acquireAsync(context.Background(), h.p, pathdialer.ServiceREST, "o-held")
		h.await(pathdialer.EventReconcileFailure, nil)
		if st := gateState(h.p); st != pathdialer.GateHeld {
			t.Errorf("gate after one failed reconcile = %v, want HELD", st)
		}
		halt := h.await(pathdialer.EventHalt, nil)
		if !strings.Contains(halt.Cause, "reconcile") || !strings.Contains(halt.Cause, errReconcile.Error()) {
			t.Errorf("halt cause = %q", halt.Cause)
		}
		r := <-waiting
		if !errors.Is(r.err, pathdialer.ErrTradingHalted) || !errors.Is(r.err, errReconcile) {
			t.Fatalf("waiting Acquire: %v", r.err)
		}
		<-time.After(time.Minute)
		if n := countKind(h.rec.all(), pathdialer.EventRelease); n != 0 {
			t.Fatalf("%d releases with a failing reconcile", n)
		}
		recs := h.hooks.reconciliations()
		if len(recs) < 5 {
			t.Fatalf("%d reconcile attempts in a minute", len(recs))
		}
		for i, r := range recs {
			if r.Attempt != i+1 || !slices.Equal(orderIDs(r.Tickets), []string{"o-inflight"}) || r.To != "us" {
				t.Errorf("attempt %d: %+v", i+1, r)
			}
		}
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-2"); !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Errorf("Acquire: %v", err)
		}
		// Reads go to the new path meanwhile (reconcile reads through it).
		if c, err := h.p.Dial(context.Background(), pathdialer.ServiceREST); err != nil || c.Endpoint() != "us" {
			t.Errorf("Dial during reconcile: %v", err)
		}
	})
}

// Reconcile fails ReconcileAttempts times (halt), then succeeds: flow is released.
func TestReconcileFailsThenSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.ReconcileAttempts = 2 })
		defer h.close()
		h.hooks.setRecFails(2)
		h.start()
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventHalt, nil)
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-1"); !errors.Is(err, errReconcile) {
			t.Fatalf("Acquire during reconcile halt: %v", err)
		}
		ok := h.await(pathdialer.EventReconcileSuccess, nil)
		if ok.Attempt != 3 {
			t.Errorf("reconcile succeeded on attempt %d", ok.Attempt)
		}
		rel := h.await(pathdialer.EventRelease, nil)
		if rel.Endpoint != "us" || rel.Token != 1 {
			t.Errorf("release = %v", rel)
		}
		if st := gateState(h.p); st != pathdialer.GateOpen {
			t.Errorf("gate = %v", st)
		}
		mustAcquire(t, h.p, "o-2").Done()
	})
}

// Failback waits for the cooldown and the primary's stability, and then fences
// the backup, switches, lifts the primary's fence and reconciles like a failover.
func TestFailbackAfterCooldownFencesAndReconciles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Engine.Cooldown = 30 * time.Second
			c.Engine.FailbackSuccessThreshold = 3
		})
		defer h.close()
		h.start()
		h.probes.set("eu", probeBlackhole)
		sw1 := h.await(pathdialer.EventSwitch, nil)
		h.await(pathdialer.EventRelease, nil)
		onUS := mustAcquire(t, h.p, "o-us") // in flight on us when failback begins
		h.probes.set("eu", probeOK)
		cd := h.await(pathdialer.EventDecision, func(e pathdialer.Event) bool { return e.Decision.Outcome == engine.CooldownActive })
		if !cd.Decision.Failback {
			t.Errorf("cooldown decision = %+v", cd.Decision)
		}
		fs := h.await(pathdialer.EventFenceStart, nil)
		if fs.Endpoint != "us" || fs.To != "eu" {
			t.Errorf("failback fence = %v", fs)
		}
		if got := fs.Time.Sub(sw1.Time); got < 30*time.Second || got > 32*time.Second {
			t.Errorf("failback fence %v after the failover, want just after the 30s cooldown", got)
		}
		sw2 := h.await(pathdialer.EventSwitch, nil)
		if sw2.From != "us" || sw2.To != "eu" || sw2.Token != 2 || sw2.Cause != "failback" {
			t.Errorf("failback switch = %v", sw2)
		}
		unf := h.await(pathdialer.EventUnfence, nil)
		if unf.Endpoint != "eu" {
			t.Errorf("unfence = %v", unf)
		}
		h.await(pathdialer.EventReconcileSuccess, nil)
		rel := h.await(pathdialer.EventRelease, nil)
		if rel.Endpoint != "eu" || rel.Token != 2 {
			t.Errorf("release = %v", rel)
		}
		fences := h.hooks.fenceCalls()
		if len(fences) != 2 || fences[1].Endpoint.Name != "us" || fences[1].To != "eu" || !fences[1].Failback || fences[1].Token != 1 {
			t.Errorf("fence calls = %+v", fences)
		}
		if unf := h.hooks.unfenceCalls(); len(unf) != 1 || unf[0].Endpoint.Name != "eu" {
			t.Errorf("Unfence calls = %+v", unf)
		}
		recs := h.hooks.reconciliations()
		if len(recs) != 2 || recs[1].From != "us" || recs[1].To != "eu" || recs[1].Reason != "failback" || recs[1].Token != 2 {
			t.Fatalf("reconciliations = %+v", recs)
		}
		if ids := orderIDs(recs[1].Tickets); !slices.Equal(ids, []string{"o-us"}) {
			t.Errorf("failback reconciled %v, want [o-us]", ids)
		}
		if h.p.Fenced("eu") || !h.p.Fenced("us") {
			t.Errorf("Fenced(eu)=%v Fenced(us)=%v", h.p.Fenced("eu"), h.p.Fenced("us"))
		}
		onUS.Done()
		c, err := h.p.Dial(context.Background(), pathdialer.ServiceFIX)
		if err != nil || c.Endpoint() != "eu" || c.Token() != 2 {
			t.Fatalf("Dial after failback: %v", err)
		}
	})
}

// Every connection dialed on the old endpoint — through Dial or an endpoint's
// own dialer — is closed by the switch, and new dials there are refused; the
// backup's connections survive.
func TestSwitchClosesOldConnsAndRefusesDials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		ctx := context.Background()
		h.start()
		viaDial, err := h.p.Dial(ctx, pathdialer.ServiceFIX)
		if err != nil {
			t.Fatal(err)
		}
		if viaDial.Endpoint() != "eu" || viaDial.Token() != 0 {
			t.Errorf("conn on %s/%d", viaDial.Endpoint(), viaDial.Token())
		}
		viaPool, err := h.p.EndpointDialer("eu")(ctx, "tcp", "api-eu.broker.example:443")
		if err != nil {
			t.Fatal(err)
		}
		backup, err := h.p.EndpointDialer("us")(ctx, "tcp", "api-us.broker.example:443")
		if err != nil {
			t.Fatal(err)
		}
		if s := h.p.Snapshot(); s.Endpoints[0].Conns != 2 || s.Endpoints[1].Conns != 1 {
			t.Errorf("tracked conns eu=%d us=%d", s.Endpoints[0].Conns, s.Endpoints[1].Conns)
		}
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, nil)

		for name, c := range map[string]io.Reader{"Dial": viaDial, "EndpointDialer": viaPool} {
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Errorf("%s connection to eu survived the switch", name)
			}
		}
		done := make(chan error, 1)
		go func() { _, err := backup.Read(make([]byte, 1)); done <- err }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Errorf("backup connection closed by the switch: %v", err)
		default:
		}
		dialsBefore := h.net.count("eu")
		if _, err := h.p.DialEndpoint(ctx, "eu", "tcp", "api-eu.broker.example:443"); !errors.Is(err, pathdialer.ErrFenced) {
			t.Errorf("DialEndpoint(eu) after the switch: %v, want ErrFenced", err)
		}
		if _, err := h.p.EndpointDialer("eu")(ctx, "tcp", "api-eu.broker.example:443"); !errors.Is(err, pathdialer.ErrFenced) {
			t.Errorf("EndpointDialer(eu) after the switch: %v, want ErrFenced", err)
		}
		if n := h.net.count("eu"); n != dialsBefore {
			t.Errorf("a refused dial reached the network (%d dials)", n-dialsBefore)
		}
		c, err := h.p.Dial(ctx, pathdialer.ServiceREST)
		if err != nil || c.Endpoint() != "us" || c.Token() != 1 {
			t.Fatalf("Dial after the switch: %v", err)
		}
		if s := h.p.Snapshot(); s.Endpoints[0].Conns != 0 || !s.Endpoints[0].Fenced {
			t.Errorf("eu after the switch: %+v", s.Endpoints[0])
		}
		_ = backup.Close()
		<-done
	})
}

// The new active endpoint dies while its reconcile is still failing: the
// reconcile is abandoned, trading halts (the old one is down too), and when the
// old one answers again flow fails over back to it, and its reconcile is handed
// the tickets of the abandoned one.
func TestNewEndpointDiesDuringReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.ReconcileAttempts = 100 })
		defer h.close()
		h.hooks.setRecFails(-1)
		h.start()
		mustAcquire(t, h.p, "o-gen0")
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventSwitch, func(e pathdialer.Event) bool { return e.To == "us" })
		h.await(pathdialer.EventReconcileFailure, nil)
		h.probes.set("us", probeBlackhole)
		halt := h.await(pathdialer.EventHalt, nil)
		if !strings.Contains(halt.Cause, "no eligible target") {
			t.Errorf("halt cause = %q", halt.Cause)
		}
		if n := countKind(h.rec.all(), pathdialer.EventRelease); n != 0 {
			t.Fatal("released on a dying endpoint")
		}
		failedSoFar := len(h.hooks.reconciliations())
		h.hooks.setRecFails(0)
		h.probes.set("eu", probeOK)
		sw := h.await(pathdialer.EventSwitch, func(e pathdialer.Event) bool { return e.To == "eu" })
		if sw.Token != 2 || sw.Cause != "failover" {
			t.Errorf("switch back = %v", sw)
		}
		rel := h.await(pathdialer.EventRelease, nil)
		if rel.Endpoint != "eu" || rel.Token != 2 {
			t.Errorf("release = %v", rel)
		}
		recs := h.hooks.reconciliations()
		if len(recs) != failedSoFar+1 {
			t.Fatalf("%d reconciliations, want %d", len(recs), failedSoFar+1)
		}
		last := recs[len(recs)-1]
		if last.From != "us" || last.To != "eu" || last.Token != 2 || !slices.Equal(orderIDs(last.Tickets), []string{"o-gen0"}) {
			t.Errorf("final reconciliation = %+v", last)
		}
		if h.p.Fenced("eu") || !h.p.Fenced("us") {
			t.Errorf("Fenced(eu)=%v Fenced(us)=%v", h.p.Fenced("eu"), h.p.Fenced("us"))
		}
		fences := h.hooks.fenceCalls()
		if len(fences) != 2 || fences[1].Endpoint.Name != "us" {
			t.Errorf("fences = %+v", fences)
		}
	})
}

// The fence is confirmed but by then the primary answers again (the engine says
// NoAction): nothing switches, the primary's fence is lifted, and flow resumes on
// it only after a reconcile.
func TestAbandonedSwitchReconcilesOnSameEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.FenceBackoff = pathdialer.Backoff{Initial: 1500 * time.Millisecond, Max: 5 * time.Second}
		})
		defer h.close()
		h.hooks.setFenceFails(1)
		h.start()
		old, err := h.p.Dial(context.Background(), pathdialer.ServiceFIX)
		if err != nil {
			t.Fatal(err)
		}
		mustAcquire(t, h.p, "o-1")
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventFenceFailure, nil)
		if !h.p.Fenced("eu") {
			t.Error("eu not fenced locally while its fence is pending")
		}
		h.probes.set("eu", probeOK) // eu answers before the retry: the switch is abandoned
		rs := h.await(pathdialer.EventReconcileStart, nil)
		if rs.From != "eu" || rs.To != "eu" || rs.Token != 0 || rs.Cause != "switch abandoned: the active endpoint answers again" {
			t.Errorf("reconcile = %v", rs)
		}
		rel := h.await(pathdialer.EventRelease, nil)
		if rel.Endpoint != "eu" || rel.Token != 0 {
			t.Errorf("release = %v", rel)
		}
		evs := h.rec.all()
		if n := countKind(evs, pathdialer.EventSwitch); n != 0 {
			t.Errorf("%d switches", n)
		}
		if n := countKind(evs, pathdialer.EventFenceSuccess); n != 0 {
			t.Errorf("the fence was retried after the switch stopped being warranted (%d fence-ok)", n)
		}
		unfIdx := slices.IndexFunc(evs, func(e pathdialer.Event) bool { return e.Kind == pathdialer.EventUnfence })
		rsIdx := slices.IndexFunc(evs, func(e pathdialer.Event) bool { return e.Kind == pathdialer.EventReconcileStart })
		if unfIdx < 0 || unfIdx > rsIdx || evs[unfIdx].Endpoint != "eu" {
			t.Errorf("eu's fence not lifted before the reconcile:\n%s", timeline(evs))
		}
		if unf := h.hooks.unfenceCalls(); len(unf) != 1 || unf[0].Endpoint.Name != "eu" {
			t.Errorf("Unfence calls = %+v", unf)
		}
		if h.p.Fenced("eu") {
			t.Error("eu still fenced")
		}
		if recs := h.hooks.reconciliations(); len(recs) != 1 || !slices.Equal(orderIDs(recs[0].Tickets), []string{"o-1"}) {
			t.Errorf("reconciliations = %+v", recs)
		}
		// The fence cut the old connection; new dials to eu work again.
		if _, err := old.Read(make([]byte, 1)); err == nil {
			t.Error("connection from before the fence survived it")
		}
		if c, err := h.p.Dial(context.Background(), pathdialer.ServiceFIX); err != nil || c.Endpoint() != "eu" {
			t.Errorf("Dial after the abandoned switch: %v", err)
		}
		tk := mustAcquire(t, h.p, "o-2")
		if tk.Endpoint != "eu" || tk.Token != 0 {
			t.Errorf("ticket %s/%d", tk.Endpoint, tk.Token)
		}
		tk.Done()
	})
}

// The target dies while the fence is being confirmed: after the fence, the engine
// finds nowhere to go and trading halts on the primary, which is still active and
// so not fenced (reads and dials reach it; submissions are halted); when the
// backup answers again the switch goes ahead, through a new fence.
func TestTargetDiesDuringFence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		var once sync.Once
		h.hooks.onFence = func(f pathdialer.Fence) {
			once.Do(func() {
				// The backup's health collapses while the fence runs.
				h.probes.set("us", probeFail)
				for range 3 {
					_, _ = h.p.Engine().Observe("us", errReset, 0)
				}
			})
		}
		h.start()
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventFenceSuccess, nil)
		halt := h.await(pathdialer.EventHalt, nil)
		if !strings.Contains(halt.Cause, "after the fence") {
			t.Errorf("halt cause = %q", halt.Cause)
		}
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-1"); !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Fatalf("Acquire: %v", err)
		}
		if h.p.Fenced("eu") {
			t.Error("eu, still the active endpoint, stays fenced after a no-target halt")
		}
		if c, err := h.p.Dial(context.Background(), pathdialer.ServiceFIX); err != nil || c.Endpoint() != "eu" {
			t.Errorf("reads' dial to the still-active eu while halted: %v", err)
		} else {
			_ = c.Close()
		}
		h.probes.set("us", probeOK)
		sw := h.await(pathdialer.EventSwitch, nil)
		if sw.To != "us" || sw.Token != 1 {
			t.Errorf("switch = %v", sw)
		}
		h.await(pathdialer.EventRelease, nil)
		mustAcquire(t, h.p, "o-2").Done()
	})
}

// With Engine.BrokerFencesAtLogon the engine switches at once (no FenceRequired, no
// Fencer needed), but the local fence still closes this process's connections to
// the old endpoint and refuses new ones.
func TestBrokerFences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Engine.BrokerFencesAtLogon = true
			c.Fencer = nil
			c.Unfence = nil
		})
		defer h.close()
		h.start()
		old, err := h.p.Dial(context.Background(), pathdialer.ServiceFIX)
		if err != nil {
			t.Fatal(err)
		}
		mustAcquire(t, h.p, "o-1")
		h.probes.set("eu", probeBlackhole)
		d := h.await(pathdialer.EventDecision, nil)
		if d.Decision.Outcome != engine.Switched {
			t.Errorf("first decision = %v, want SWITCHED directly", d.Decision.Outcome)
		}
		h.await(pathdialer.EventRelease, nil)
		evs := h.rec.all()
		for _, k := range []pathdialer.EventKind{pathdialer.EventFenceStart, pathdialer.EventFenceSuccess, pathdialer.EventFenceFailure} {
			if n := countKind(evs, k); n != 0 {
				t.Errorf("%d %v events with BrokerFencesAtLogon", n, k)
			}
		}
		// Failback decisions (cooldown) may follow as soon as the probes resume; the
		// failover sequence itself must be exactly this.
		var failover []pathdialer.Event
		for _, e := range evs {
			if e.Kind != pathdialer.EventDecision || !e.Decision.Failback {
				failover = append(failover, e)
			}
		}
		if got := kindsSince(failover, 0); !slices.Equal(got, []pathdialer.EventKind{pathdialer.EventHold, pathdialer.EventDecision, pathdialer.EventHold, pathdialer.EventSwitch, pathdialer.EventReconcileStart, pathdialer.EventReconcileSuccess, pathdialer.EventRelease}) {
			t.Errorf("sequence = %v", got)
		}
		if _, err := old.Read(make([]byte, 1)); err == nil {
			t.Error("old connection survived the switch")
		}
		if _, err := h.p.DialEndpoint(context.Background(), "eu", "tcp", "fix-eu.broker.example:9878"); !errors.Is(err, pathdialer.ErrFenced) {
			t.Errorf("dial to eu: %v", err)
		}
		if recs := h.hooks.reconciliations(); len(recs) != 1 || !slices.Equal(orderIDs(recs[0].Tickets), []string{"o-1"}) {
			t.Errorf("reconciliations = %+v", recs)
		}
	})
}

// Orders finished with an unknown outcome wait for the next reconcile (on any
// later switch); once handed over they leave Path.Unknown, and a late answer is
// reported as EventLateTicket.
func TestUnknownTicketsReachNextReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Engine.Cooldown = 10 * time.Second
			c.Engine.FailbackSuccessThreshold = 1
		})
		defer h.close()
		h.start()
		u := mustAcquire(t, h.p, "o-unknown")
		u.Unknown(nil)
		if got := h.p.Unknown(); len(got) != 1 || got[0].OrderID != "o-unknown" || !errors.Is(got[0].Cause, pathdialer.ErrUnknownOutcome) {
			t.Fatalf("Unknown() = %+v", got)
		}
		if s := h.p.Snapshot(); s.Unknown != 1 || s.InFlight != 0 {
			t.Errorf("snapshot unknown=%d in_flight=%d", s.Unknown, s.InFlight)
		}
		u.Unknown(errors.New("again")) // a second finish is ignored (not handed yet)
		u.Done()
		if n := countKind(h.rec.all(), pathdialer.EventLateTicket); n != 0 {
			t.Errorf("late-ticket event before hand-over")
		}
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, nil)
		recs := h.hooks.reconciliations()
		if len(recs) != 1 || !slices.Equal(orderIDs(recs[0].Tickets), []string{"o-unknown"}) || recs[0].Tickets[0].State != pathdialer.TicketUnknown {
			t.Fatalf("reconciliations = %+v", recs)
		}
		if got := h.p.Unknown(); len(got) != 0 {
			t.Errorf("Unknown() after hand-over = %+v", got)
		}
		u.Done()
		late := h.await(pathdialer.EventLateTicket, nil)
		if !strings.Contains(late.Cause, "o-unknown") {
			t.Errorf("late = %v", late)
		}
		// An order of unknown fate on the new path waits for the next reconcile:
		// the failback's.
		u2 := mustAcquire(t, h.p, "o-unknown-us")
		u2.Unknown(errors.New("HTTP 503"))
		h.probes.set("eu", probeOK)
		h.await(pathdialer.EventSwitch, func(e pathdialer.Event) bool { return e.To == "eu" })
		h.await(pathdialer.EventRelease, nil)
		recs = nonRequery(h.hooks.reconciliations()) // eu's recovery brings a look of o-unknown forward
		if len(recs) != 2 || !slices.Equal(orderIDs(recs[1].Tickets), []string{"o-unknown-us"}) {
			t.Fatalf("failback reconciliation = %+v", recs[len(recs)-1])
		}
		if tk := recs[1].Tickets[0]; tk.Endpoint != "us" || tk.Token != 1 || tk.Cause == nil || tk.Cause.Error() != "HTTP 503" {
			t.Errorf("ticket = %+v", tk)
		}
	})
}

// The fence fails until the hold becomes a halt, then succeeds; the reconcile
// that follows holds again (with its own attempts) and, when it keeps failing,
// halts with its own cause, not the fence's.
func TestFenceHaltThenReconcileHaltSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.FenceAttempts = 2
			c.ReconcileAttempts = 2
		})
		defer h.close()
		h.hooks.setFenceFails(2)
		h.hooks.setRecFails(-1)
		h.start()
		h.probes.set("eu", probeFail)
		h.await(pathdialer.EventHalt, nil)
		h.await(pathdialer.EventSwitch, nil)
		h.await(pathdialer.EventReconcileFailure, nil)
		if st, cause := h.p.GateState(); st != pathdialer.GateHeld || !strings.Contains(cause.Error(), "reconciling") {
			t.Errorf("gate during the reconcile after a fence halt: %v (%v), want HELD for reconciliation", st, cause)
		}
		halt := h.await(pathdialer.EventHalt, nil)
		if !strings.Contains(halt.Cause, "reconcile") {
			t.Errorf("second halt cause = %q", halt.Cause)
		}
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-1"); !errors.Is(err, errReconcile) || errors.Is(err, errFence) {
			t.Errorf("Acquire: %v, want the reconcile's error", err)
		}
		h.hooks.setRecFails(0)
		h.await(pathdialer.EventRelease, nil)
	})
}

// The reconciler owns the Reconciliation it is given: scribbling on its tickets
// changes neither the event (read concurrently by OnEvent; -race checks) nor the
// next attempt.
func TestReconcilerMayEditItsTickets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu     sync.Mutex
			given  [][]string
			events [][]string
		)
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
				mu.Lock()
				given = append(given, orderIDs(r.Tickets))
				n := len(given)
				mu.Unlock()
				for i := range r.Tickets {
					r.Tickets[i].OrderID = "scribbled"
				}
				slices.Reverse(r.Tickets)
				if n == 1 {
					return nil, errReconcile
				}
				return nil, nil
			}
		})
		defer h.close()
		h.rec.also = func(e pathdialer.Event) {
			if e.Kind == pathdialer.EventReconcileStart {
				ids := orderIDs(e.Tickets)
				mu.Lock()
				events = append(events, ids)
				mu.Unlock()
			}
		}
		h.start()
		mustAcquire(t, h.p, "o-1")
		mustAcquire(t, h.p, "o-2")
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, nil)
		mu.Lock()
		defer mu.Unlock()
		if len(given) != 2 || len(events) != 2 {
			t.Fatalf("%d attempts, %d events", len(given), len(events))
		}
		for i := range given {
			if !slices.Equal(given[i], []string{"o-1", "o-2"}) || !slices.Equal(events[i], []string{"o-1", "o-2"}) {
				t.Errorf("attempt %d: given %v, event %v", i+1, given[i], events[i])
			}
		}
	})
}

// Halted because the fence kept failing; when it finally succeeds there is no
// longer anywhere to go: the halt stays, but its cause (what Acquire returns and
// Snapshot shows) now says why, and it is announced.
func TestHaltCauseFollowsTheReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.FenceAttempts = 2 })
		defer h.close()
		h.hooks.setFenceFails(3)
		h.hooks.onFence = func(f pathdialer.Fence) {
			if f.Attempt == 4 {
				h.probes.set("us", probeFail)
				for range 3 {
					_, _ = h.p.Engine().Observe("us", errReset, 0)
				}
			}
		}
		h.start()
		h.probes.set("eu", probeFail)
		first := h.await(pathdialer.EventHalt, nil)
		if !strings.Contains(first.Cause, "fence") {
			t.Fatalf("first halt = %q", first.Cause)
		}
		h.await(pathdialer.EventFenceSuccess, nil)
		second := h.await(pathdialer.EventHalt, nil)
		if !strings.Contains(second.Cause, "no eligible target after the fence") {
			t.Errorf("second halt = %q", second.Cause)
		}
		_, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-1")
		if !errors.Is(err, pathdialer.ErrTradingHalted) || errors.Is(err, errFence) || !strings.Contains(err.Error(), "no eligible target") {
			t.Errorf("Acquire: %v", err)
		}
		if s := h.p.Snapshot(); !strings.Contains(s.GateCause, "no eligible target") || s.Halts != 2 {
			t.Errorf("snapshot: cause %q, %d halts", s.GateCause, s.Halts)
		}
		<-time.After(10 * time.Second)
		if n := countKind(h.rec.all(), pathdialer.EventHalt); n != 2 {
			t.Errorf("%d halt events, want 2", n)
		}
		// The backup comes back: the switch goes ahead (eu is still fenced).
		h.probes.set("us", probeOK)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
	})
}

// A failback is voluntary: when its fence fails it is given up at once (flow
// resumes on the healthy backup after reconciliation), never retried under
// the hold nor turned into a halt, and not tried again for FailbackBackoff,
// which grows with each failback abandoned in a row.
func TestFailbackFenceFailuresAbandonFailbackWithoutHalting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Engine.Cooldown = 30 * time.Second
			c.Engine.FailbackSuccessThreshold = 3
			c.FenceAttempts = 2
		})
		defer h.close()
		h.start()
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventSwitch, nil)
		h.await(pathdialer.EventRelease, nil)
		h.hooks.setFenceFails(-1) // every fence from now on fails
		h.probes.set("eu", probeOK)
		fs := h.await(pathdialer.EventFenceStart, nil)
		if fs.Endpoint != "us" || fs.To != "eu" {
			t.Fatalf("failback fence = %v", fs)
		}
		rs := h.await(pathdialer.EventReconcileStart, nil)
		if rs.From != "us" || rs.To != "us" || rs.Token != 1 {
			t.Errorf("reconcile after the abandoned failback = %v", rs)
		}
		rel := h.await(pathdialer.EventRelease, nil)
		if rel.Endpoint != "us" || rel.Token != 1 {
			t.Errorf("release = %v", rel)
		}
		evs := h.rec.all()
		if n := countKind(evs, pathdialer.EventHalt); n != 0 {
			t.Errorf("a failing failback fence halted a healthy backup:\n%s", timeline(evs))
		}
		if n := countKind(evs, pathdialer.EventFenceFailure); n != 1 {
			t.Errorf("%d fence failures, want 1: a failback gives up at its first failed fence", n)
		}
		var ab pathdialer.Event
		for _, e := range evs {
			if e.Kind == pathdialer.EventFailbackAbandoned {
				ab = e
				break
			}
		}
		if ab.From != "us" || ab.To != "eu" || !errors.Is(ab.Err, errFence) || ab.Attempt != 1 || ab.Duration != 30*time.Second {
			t.Errorf("abandon event %v, want us -> eu for the fence's error, the first in a row, next try in 30 s", ab)
		}
		tk := mustAcquire(t, h.p, "o-after")
		if tk.Endpoint != "us" {
			t.Errorf("ticket on %q", tk.Endpoint)
		}
		tk.Done()
		// No new failback attempt within the backoff that follows; the next
		// one, when it fails too, doubles it.
		<-time.After(20 * time.Second)
		synctest.Wait()
		if n := countKind(h.rec.all(), pathdialer.EventFenceStart); n != 2 { // failover + 1 failback attempt
			t.Errorf("%d fence starts within the backoff after abandoning, want 2", n)
		}
		fs2 := h.await(pathdialer.EventFenceStart, nil)
		if got := fs2.Time.Sub(ab.Time); got < 30*time.Second || got > 32*time.Second {
			t.Errorf("second failback fence %v after the first was abandoned, want just after the 30 s backoff", got)
		}
		if ab2 := h.await(pathdialer.EventFailbackAbandoned, nil); ab2.Attempt != 2 || ab2.Duration != time.Minute {
			t.Errorf("second abandon event %v, want the second in a row, next try in 1 min", ab2)
		}
	})
}

// An order with an unknown outcome on a healthy path is settled in the
// background, SettleUnknown after it finished, without holding submissions; a
// failing settle is retried and never halts; a later switch takes whatever is
// still unsettled.
func TestSettleUnknownWithoutSwitch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.SettleUnknown = 2 * time.Second })
		defer h.close()
		h.hooks.setRecFails(1)
		h.start()
		tk := mustAcquire(t, h.p, "o-5xx")
		tk.Unknown(errors.New("HTTP 503"))
		fail := h.await(pathdialer.EventReconcileFailure, nil)
		if fail.Cause != "settle unknown outcomes" {
			t.Errorf("failure event = %v", fail)
		}
		ok := h.await(pathdialer.EventReconcileSuccess, nil)
		if ok.From != "eu" || ok.To != "eu" || ok.Token != 0 {
			t.Errorf("settle = %v", ok)
		}
		if since := ok.Time.Sub(fail.Time); since < 100*time.Millisecond {
			t.Errorf("retry came %v after the failure, want the ReconcileBackoff", since)
		}
		recs := h.hooks.reconciliations()
		if len(recs) != 2 || recs[1].Reason != "settle unknown outcomes" || !slices.Equal(orderIDs(recs[1].Tickets), []string{"o-5xx"}) {
			t.Fatalf("reconciliations = %+v", recs)
		}
		if first := recs[0]; first.Tickets[0].State != pathdialer.TicketUnknown {
			t.Errorf("ticket state %v", first.Tickets[0].State)
		}
		evs := h.rec.all()
		for _, k := range []pathdialer.EventKind{pathdialer.EventHold, pathdialer.EventHalt} {
			if n := countKind(evs, k); n != 0 {
				t.Errorf("settling unknown orders produced %d %v events:\n%s", n, k, timeline(evs))
			}
		}
		if st, _ := h.p.GateState(); st != pathdialer.GateOpen {
			t.Errorf("gate %v", st)
		}
		if u := h.p.Unknown(); len(u) != 0 {
			t.Errorf("still unknown: %+v", u)
		}
		// Not settled twice (its NOT_RECEIVED is looked up again, on purpose).
		<-time.After(10 * time.Second)
		synctest.Wait()
		if n := len(nonRequery(h.hooks.reconciliations())); n != 2 {
			t.Errorf("%d reconciliations after the settle, want 2", n)
		}
	})
}

// nonRequery leaves out the re-queries of provisional NOT_RECEIVED verdicts
// (looked up again on purpose, every MaxCopyHold).
func nonRequery(recs []pathdialer.Reconciliation) []pathdialer.Reconciliation {
	var out []pathdialer.Reconciliation
	for _, r := range recs {
		if r.Reason != pathdialer.ReasonRequery {
			out = append(out, r)
		}
	}
	return out
}
