package fix_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

func settlementsByID(s []pathdialer.Settlement) map[string]pathdialer.Settlement {
	m := map[string]pathdialer.Settlement{}
	for _, x := range s {
		m[x.OrderID] = x
	}
	return m
}

// A blackholed region A: the FIX probe fails, the path switches, the session logs
// on in region B within a second, the order cut in A is settled by reconcile,
// the order lost in A is gap-filled (never resent as PossDup into B) and settled
// as not received, an unanswered order is found resting, and the next order goes
// to B exactly once.
func TestFailoverBlackholeLogonOnBNoReplay(t *testing.T) {
	h := newHarness(t, harnessOpts{fixProbe: true, seq: fix.SequenceContinue})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	if err := h.in.SendOrder(ctx, order("ok-1", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "ok-1 answered", func() bool { return h.in.Stats().Answered.Load() == 1 })

	// mute-1 rests at the broker, which never answers it.
	if err := h.in.SendOrder(ctx, order("mute-1", "MUTEREST"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "mute-1 at the broker", func() bool { return len(h.b.received("mute-1")) == 1 })
	// cut-1 reaches the broker in A and fills, but A goes dark before the answer.
	h.b.mu.Lock()
	h.b.onOrder = func(b *broker, sym string) {
		if sym == "CUT" {
			_ = b.relays["eu"].SetFault(faultnet.Blackhole())
		}
	}
	h.b.mu.Unlock()
	if err := h.in.SendOrder(ctx, order("cut-1", "CUT"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "cut-1 at the broker", func() bool { return len(h.b.received("cut-1")) == 1 })
	// lost-1 is written into the black hole: it never reaches the broker.
	if err := h.in.SendOrder(ctx, order("lost-1", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}

	sw := h.waitEvent(t, pathdialer.EventSwitch)
	if sw.To != "us" {
		t.Fatalf("switched to %q", sw.To)
	}
	h.waitLogon(t, "us", 5*time.Second)
	took := time.Since(sw.Time)
	t.Logf("switch → logon on region B: %v", took)
	if took > time.Second {
		t.Errorf("logon on B took %v after the switch, want < 1s", took)
	}

	settled := h.waitReconcile(t)
	h.waitEvent(t, pathdialer.EventRelease)
	got := settlementsByID(settled)
	if f := got["cut-1"].Fate; f != pathdialer.FateFilled {
		t.Errorf("cut-1 fate %v (%s), want FILLED", f, got["cut-1"].Detail)
	}
	if f := got["mute-1"].Fate; f != pathdialer.FateResting {
		t.Errorf("mute-1 fate %v (%s), want RESTING", f, got["mute-1"].Detail)
	}
	if f := got["lost-1"].Fate; f != pathdialer.FateNotReceived {
		t.Errorf("lost-1 fate %v (%s), want NOT_RECEIVED", f, got["lost-1"].Detail)
	}
	if n := h.in.Stats().RefusedResends.Load(); n < 1 {
		t.Errorf("RefusedResends = %d, want >= 1 (the broker asked for lost-1 again)", n)
	}

	if err := h.in.SendOrder(ctx, order("after-1", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "after-1 at the broker", func() bool { return len(h.b.received("after-1")) == 1 })
	if r := h.b.received("after-1"); r[0].Region != "us" {
		t.Errorf("after-1 reached region %q, want us", r[0].Region)
	}
	if pd := h.b.possDups(); len(pd) != 0 {
		t.Errorf("orders replayed as PossDup: %+v", pd)
	}
	if r := h.b.received("lost-1"); len(r) != 0 {
		t.Errorf("lost-1 reached the broker: %+v", r)
	}
	if r := h.b.received("cut-1"); len(r) != 1 || r[0].Region != "eu" {
		t.Errorf("cut-1 at the broker: %+v, want once in eu", r)
	}
	for _, l := range h.b.logonsOf(h.sid.SenderCompID) {
		if l.PossDup {
			t.Errorf("SequenceContinue sent ResetSeqNumFlag=Y: %+v", l)
		}
	}
}

// Orders submitted while the path is reconciling wait, and go out exactly once
// on the new region after release.
func TestOrdersWaitDuringReconcileThenOnce(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{}, 4)
	h := newHarness(t, harnessOpts{reconcile: func(rec *fix.Reconciler) pathdialer.ReconcileFunc {
		return func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
			entered <- struct{}{}
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return rec.Reconcile(ctx, r)
		}
	}})
	_ = h.b.relays["eu"].SetFault(faultnet.Blackhole())
	h.down["eu"].Store(true)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no reconcile")
	}
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		errc <- h.in.SendOrder(ctx, order("held-1", "FILL"), h.sid)
	}()
	// The order must be held while reconcile runs.
	select {
	case err := <-errc:
		t.Fatalf("SendOrder returned during reconcile: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if r := h.b.received("held-1"); len(r) != 0 {
		t.Fatalf("held order reached the broker during reconcile: %+v", r)
	}
	close(gate)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "held-1 at the broker", func() bool { return len(h.b.received("held-1")) >= 1 })
	eventually(t, 5*time.Second, "held-1 answered", func() bool { return h.in.Stats().Answered.Load() == 1 })
	if r := h.b.received("held-1"); len(r) != 1 || r[0].Region != "us" || r[0].PossDup {
		t.Fatalf("held-1 at the broker: %+v, want exactly once in us", r)
	}
}

// Halted: no eligible endpoint → SendOrder fails at once with ErrTradingHalted.
func TestHaltedReturnsErrTradingHalted(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.down["eu"].Store(true)
	h.down["us"].Store(true)
	h.waitEvent(t, pathdialer.EventHalt)
	start := time.Now()
	err := h.in.SendOrder(context.Background(), order("halt-1", "FILL"), h.sid)
	if !errors.Is(err, pathdialer.ErrTradingHalted) {
		t.Fatalf("err = %v, want ErrTradingHalted", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("halted SendOrder took %v", d)
	}
	if r := h.b.received("halt-1"); len(r) != 0 {
		t.Fatalf("halted order reached the broker: %+v", r)
	}
}

// SequenceResetOnSwitch: the logon on the new region resets sequence numbers
// (ResetSeqNumFlag=Y); nothing from region A is resent; an order lost in A is
// settled as not received by reconcile.
func TestSequenceResetOnSwitch(t *testing.T) {
	// One book behind both regions' sessions: "unknown order" from us is a verdict.
	h := newHarness(t, harnessOpts{seq: fix.SequenceResetOnSwitch, recOpts: fix.ReconcileOptions{SharedBook: true}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.in.SendOrder(ctx, order("r-ok", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "r-ok answered", func() bool { return h.in.Stats().Answered.Load() == 1 })
	_ = h.b.relays["eu"].SetFault(faultnet.Blackhole())
	if err := h.in.SendOrder(ctx, order("r-lost", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}
	h.down["eu"].Store(true)
	h.waitEvent(t, pathdialer.EventSwitch)
	h.waitLogon(t, "us", 5*time.Second)
	settled := h.waitReconcile(t)
	if f := settlementsByID(settled)["r-lost"].Fate; f != pathdialer.FateNotReceived {
		t.Errorf("r-lost fate %v, want NOT_RECEIVED", f)
	}
	logons := h.b.logonsOf(h.sid.SenderCompID)
	last := logons[len(logons)-1]
	if !last.PossDup || last.Region != "us" {
		t.Errorf("last logon %+v, want ResetSeqNumFlag=Y in us", last)
	}
	if n := h.in.Stats().Resets.Load(); n != 1 {
		t.Errorf("Resets = %d, want 1", n)
	}
	if n := h.in.Stats().RefusedResends.Load(); n != 0 {
		t.Errorf("RefusedResends = %d, want 0 (no resend across a reset)", n)
	}
	if err := h.in.SendOrder(ctx, typedOrder("r-after", "FILL"), h.sid); err != nil { // typed fix44 message
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "r-after answered", func() bool { return len(h.b.received("r-after")) == 1 })
	if pd := h.b.possDups(); len(pd) != 0 {
		t.Errorf("orders replayed as PossDup: %+v", pd)
	}
	if r := h.b.received("r-lost"); len(r) != 0 {
		t.Errorf("r-lost reached the broker: %+v", r)
	}
}

// FIX.4.2 sessions work the same way: logon, gated order, answer.
func TestFIX42Session(t *testing.T) {
	h := newHarness(t, harnessOpts{begin: "FIX.4.2"})
	if err := h.in.SendOrder(context.Background(), order("42-1", "REST"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "42-1 answered", func() bool { return h.in.Stats().Answered.Load() == 1 })
	if r := h.b.received("42-1"); len(r) != 1 || r[0].Region != "eu" {
		t.Fatalf("42-1 at the broker: %+v", r)
	}
}

// Orders that bypass SendOrder are refused (the gate cannot be skipped);
// non-orders go through Send without a ticket.
func TestUngatedOrderRefused(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	if err := quickfix.SendToTarget(order("raw-1", "FILL"), h.sid); err == nil {
		t.Fatal("an order sent around SendOrder was accepted")
	}
	if err := h.in.Send(order("raw-2", "FILL"), h.sid); !errors.Is(err, fix.ErrNotOrder) {
		t.Fatalf("Send(order) = %v, want ErrNotOrder", err)
	}
	if err := h.in.SendOrder(context.Background(), order("", "FILL"), h.sid); !errors.Is(err, fix.ErrNoClOrdID) {
		t.Fatalf("SendOrder without ClOrdID = %v", err)
	}
	if h.in.Stats().UngatedRefused.Load() != 1 {
		t.Fatalf("UngatedRefused = %d", h.in.Stats().UngatedRefused.Load())
	}
	if r := h.b.received("raw-1"); len(r) != 0 {
		t.Fatalf("ungated order reached the broker: %+v", r)
	}
}

// The probe needs a FIX logon answer: a live acceptor passes, a port that only
// accepts TCP (or a blackholed region) fails.
func TestProbeIsLogonLevel(t *testing.T) {
	b := newBroker(t, map[string]string{uniq("PCLIENT"): "FIX.4.4"})
	probe, err := fix.Probe(fix.ProbeOptions{SessionID: b.probes["eu"]})
	if err != nil {
		t.Fatal(err)
	}
	ep := pathdialer.Endpoint{Name: "eu", Services: map[string]string{"fix": b.relays["eu"].Addr()}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := probe(ctx, ep); err != nil {
		t.Fatalf("probe of a live acceptor: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	mute := pathdialer.Endpoint{Name: "mute", Services: map[string]string{"fix": ln.Addr().String()}}
	sctx, scancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer scancel()
	if err := probe(sctx, mute); err == nil {
		t.Fatal("probe succeeded against a port that only accepts TCP")
	}

	_ = b.relays["eu"].SetFault(faultnet.Blackhole())
	bctx, bcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer bcancel()
	if err := probe(bctx, ep); err == nil {
		t.Fatal("probe succeeded against a blackholed region")
	}

	if _, err := fix.Probe(fix.ProbeOptions{}); !errors.Is(err, fix.ErrInvalidOptions) {
		t.Fatalf("Probe without a session: %v", err)
	}
}

// TLS to the broker is done by the relay toward the endpoint, verifying the
// endpoint's host name; the session fails over with TLS on both regions.
func TestTLSFailover(t *testing.T) {
	h := newHarness(t, harnessOpts{tls: true, fixProbe: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.in.SendOrder(ctx, order("tls-1", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "tls-1 answered", func() bool { return h.in.Stats().Answered.Load() == 1 })
	_ = h.b.relays["eu"].SetFault(faultnet.Blackhole())
	sw := h.waitEvent(t, pathdialer.EventSwitch)
	h.waitLogon(t, "us", 5*time.Second)
	t.Logf("TLS: switch → logon on region B: %v", time.Since(sw.Time))
	h.waitEvent(t, pathdialer.EventRelease)
	if err := h.in.SendOrder(ctx, order("tls-2", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "tls-2 at the broker", func() bool { return len(h.b.received("tls-2")) == 1 })
	if r := h.b.received("tls-2"); r[0].Region != "us" {
		t.Fatalf("tls-2 in %q", r[0].Region)
	}
}

// A connection the broker side resets is a passive signal against the endpoint
// (the probe alone would not have seen it).
func TestLostUpstreamIsReportedToThePath(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.waitLogon(t, "eu", 5*time.Second)
	before, _ := h.path.Engine().Status("eu")
	if before.ConsecutiveFailures != 0 {
		t.Fatalf("failures before the reset: %d", before.ConsecutiveFailures)
	}
	if err := h.b.relays["eu"].SetFault(faultnet.Reset()); err != nil {
		t.Fatal(err)
	}
	// One failure below the threshold of 2: eu goes DEGRADED (the next probe
	// success brings it back), with the relay's error as the cause.
	for {
		e := h.waitEvent(t, pathdialer.EventStateChange)
		if e.Endpoint == "eu" && e.State == engine.Degraded {
			if e.Err == nil || !strings.Contains(e.Err.Error(), `connection to "eu" lost`) {
				t.Fatalf("DEGRADED for another reason: %v", e.Err)
			}
			break
		}
	}
	// quickfix reconnects through the relay and logs on again on the same region.
	h.waitLogon(t, "eu", 5*time.Second)
}

// The FIX identity check reports who answered the logon; an expected identity
// naming another broker CompID is a mismatch.
func TestIdentityCheckReportsTheAnsweringCompIDs(t *testing.T) {
	b := newBroker(t, map[string]string{uniq("ICLIENT"): "FIX.4.4"})
	sid := b.probes["eu"]
	check, err := fix.IdentityCheck(fix.ProbeOptions{SessionID: sid})
	if err != nil {
		t.Fatal(err)
	}
	ep := pathdialer.Endpoint{Name: "eu", Services: map[string]string{"fix": b.relays["eu"].Addr()}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	id, err := check(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	// The answer comes from the broker: its SenderCompID is our TargetCompID.
	want := pathdialer.Identity{Extra: map[string]string{"SenderCompID": sid.TargetCompID, "TargetCompID": sid.SenderCompID}}
	if err := want.Match(id); err != nil {
		t.Fatalf("identity %+v: %v", id, err)
	}
	other := pathdialer.Identity{Extra: map[string]string{"SenderCompID": "SOMEONE-ELSE"}}
	if err := other.Match(id); !errors.Is(err, engine.ErrIdentityMismatch) {
		t.Fatalf("another broker's CompID matched: %v", err)
	}
	if _, err := fix.IdentityCheck(fix.ProbeOptions{}); !errors.Is(err, fix.ErrInvalidOptions) {
		t.Fatalf("no session: %v", err)
	}
}

// An order whose session drops before its answer, with no switch (the session
// logs on again on the same endpoint), is handed to reconciliation at once and
// settled in the background: it is never left in flight for ever.
func TestOrderCutWithoutSwitchIsSettled(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.waitLogon(t, "eu", 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.in.SendOrder(ctx, order("cut-noswitch", "MUTE-REST"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the order booked", func() bool { return len(h.b.received("cut-noswitch")) == 1 })
	if err := h.b.relays["eu"].SetFault(faultnet.Reset()); err != nil {
		t.Fatal(err)
	}
	got := settlementsByID(h.waitReconcile(t))
	s, ok := got["cut-noswitch"]
	if !ok || s.Fate != pathdialer.FateResting {
		t.Fatalf("settlements %+v, want cut-noswitch RESTING", got)
	}
	if a, gen := h.path.Active(); a.Name != "eu" || gen != 0 {
		t.Fatalf("a switch happened (%s/%d); this is about the same endpoint", a.Name, gen)
	}
	if n := len(h.b.received("cut-noswitch")); n != 1 {
		t.Fatalf("the order reached the broker %d times", n)
	}
}
