package dst

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// The resting-order invariants have teeth: each is planted, as a violation,
// in a run's record, and caught; the same record without it passes.

func judgedResting(g restingGround) []string {
	var out []string
	g.start = t0
	g.judge(func(inv, format string, a ...any) { out = append(out, inv) })
	return out
}

func TestRestingCancelReported(t *testing.T) {
	cancels := []codCancel{{orderID: "r-1", at: at(100)}, {orderID: "r-2", at: at(100)}}
	reported := []pathdialer.Event{
		{Kind: pathdialer.EventRestingCancelled, OrderID: "r-1", Time: at(300)},
		{Kind: pathdialer.EventRestingCancelled, OrderID: "r-2", Time: at(300)},
	}
	wantNone(t, judgedResting(restingGround{cancels: cancels, events: reported}))
	// One cancel never reported.
	wantOnly(t, judgedResting(restingGround{cancels: cancels, events: reported[:1]}), InvRestingCancelReported)
	// A report older than the cancel (an earlier switch's) does not count.
	old := []pathdialer.Event{reported[0], {Kind: pathdialer.EventRestingCancelled, OrderID: "r-2", Time: at(50)}}
	wantOnly(t, judgedResting(restingGround{cancels: cancels, events: old}), InvRestingCancelReported)
	// A reconcile that failed is loud; one superseded is not a report.
	failed := []pathdialer.Event{reported[0], {Kind: pathdialer.EventOpenOrderDiff, Time: at(300), Err: errors.New("429"), Error: "429"}}
	wantNone(t, judgedResting(restingGround{cancels: cancels, events: failed}))
	superseded := []pathdialer.Event{reported[0], {Kind: pathdialer.EventOpenOrderDiff, Time: at(300), Err: errors.New("x"), Error: "reconcile superseded by a hold"}}
	wantOnly(t, judgedResting(restingGround{cancels: cancels, events: superseded}), InvRestingCancelReported)
}

// A cancel is reported by the switch that caused it: a report naming
// another switch (a later one, which found the late cancel) does not count.
func TestRestingCancelReportedByItsSwitch(t *testing.T) {
	cancels := []codCancel{{orderID: "r-1", at: at(4800), causes: []string{"eu"}}}
	ok := []pathdialer.Event{{Kind: pathdialer.EventRestingCancelled, OrderID: "r-1", From: "eu", To: "us", Time: at(5600)}}
	wantNone(t, judgedResting(restingGround{cancels: cancels, events: ok}))
	other := []pathdialer.Event{{Kind: pathdialer.EventRestingCancelled, OrderID: "r-1", From: "us", To: "eu", Time: at(9000)}}
	wantOnly(t, judgedResting(restingGround{cancels: cancels, events: other}), InvRestingCancelReported)
	// Either switch that may have cancelled it (a profile-wide cancel).
	two := []codCancel{{orderID: "r-1", at: at(4800), causes: []string{"eu", "us"}}}
	wantNone(t, judgedResting(restingGround{cancels: two, events: other}))
}

// Planted in a run's record: a late cancel-on-disconnect of an order the
// client holds open (acknowledged, or settled RESTING by the switch's
// reconcile), due within the time its session declared, judged; one later
// than that, a note; an order the client does not hold open, not judged.
func TestCheckRestingJudgesLateCancels(t *testing.T) {
	run := func(outcome string, settled []pathdialer.Fate, cancelAt int, events []pathdialer.Event) ([]string, []string) {
		w := &world{start: t0, s: Scenario{Resting: RestingSim{On: true, CODSettle: 500 * time.Millisecond, HeartBt: 2 * time.Second}},
			orders: map[string]*orderRec{"r-1": {id: "r-1", limit: true, outcome: outcome, settled: settled, start: at(10)}}}
		w.rs = &restingSim{w: w, conns: []sessionConn{{region: "eu", start: at(20)}}}
		w.rs.rec.leaves = []leaveCall{{from: "eu", to: "us", start: at(1000)}}
		w.rs.rec.events = events
		audit := simbroker.AuditLog{{Time: at(cancelAt), Kind: simbroker.KindCODCancel, Region: "eu", ClientOrderID: "r-1"}}
		var res Result
		var got []string
		w.checkResting(&res, audit, func(inv, format string, a ...any) { got = append(got, inv) })
		return got, res.Notes
	}
	rep := []pathdialer.Event{{Kind: pathdialer.EventRestingCancelled, OrderID: "r-1", From: "eu", To: "us", Time: at(6600)}}
	// 4.8 s after the fence, within the declared 5.5 s: judged.
	if got, _ := run("acked", nil, 5800, nil); len(got) != 1 || got[0] != InvRestingCancelReported {
		t.Fatalf("unreported late cancel: %v, want %s", got, InvRestingCancelReported)
	}
	if got, _ := run("acked", nil, 5800, rep); len(got) != 0 {
		t.Fatalf("reported late cancel: %v, want none", got)
	}
	// Settled RESTING by a reconcile: the client holds it open.
	if got, _ := run("unknown", []pathdialer.Fate{pathdialer.FateResting}, 5800, nil); len(got) != 1 {
		t.Fatalf("unreported cancel of an order settled RESTING: %v, want %s", got, InvRestingCancelReported)
	}
	if got, _ := run("unknown", []pathdialer.Fate{pathdialer.FateCanceled}, 5800, nil); len(got) != 0 {
		t.Fatalf("an order settled CANCELED: %v, want nothing judged", got)
	}
	// Later than declared: a note.
	if got, notes := run("acked", nil, 7000, nil); len(got) != 0 || len(notes) != 1 {
		t.Fatalf("cancel later than declared: %v, notes %v; want a note only", got, notes)
	}
}

func TestNoDeadManGap(t *testing.T) {
	leaves := []leaveCall{{from: "eu", to: "us", start: at(200)}, {from: "us", to: "eu", start: at(900)}}
	arms := []armCall{{endpoint: "us", start: at(100), end: at(150), ok: true}, {endpoint: "eu", start: at(800), end: at(850), ok: true}}
	wantNone(t, judgedResting(restingGround{timerRequired: true, leaves: leaves, arms: arms}))
	// Not required: nothing to judge.
	wantNone(t, judgedResting(restingGround{leaves: leaves}))
	// Fenced before the arm returned.
	late := []armCall{{endpoint: "us", start: at(100), end: at(250), ok: true}, arms[1]}
	wantOnly(t, judgedResting(restingGround{timerRequired: true, leaves: leaves, arms: late}), InvNoDeadManGap)
	// The arm failed.
	failed := []armCall{{endpoint: "us", start: at(100), end: at(150)}, arms[1]}
	wantOnly(t, judgedResting(restingGround{timerRequired: true, leaves: leaves, arms: failed}), InvNoDeadManGap)
	// Armed on the wrong endpoint.
	wrong := []armCall{{endpoint: "eu", start: at(100), end: at(150), ok: true}, arms[1]}
	wantOnly(t, judgedResting(restingGround{timerRequired: true, leaves: leaves, arms: wrong}), InvNoDeadManGap)
	// The second switch relies on the first switch's arm (armed before the previous fence).
	stale := []armCall{arms[0], {endpoint: "eu", start: at(150), end: at(160), ok: true}}
	wantOnly(t, judgedResting(restingGround{timerRequired: true, leaves: leaves, arms: stale}), InvNoDeadManGap)
}

// The record wraps the hooks and keeps what the invariants need.
func TestRestingRecord(t *testing.T) {
	var r restingRecord
	r.onEvent(pathdialer.Event{Kind: pathdialer.EventProbe})
	r.onEvent(pathdialer.Event{Kind: pathdialer.EventRestingCancelled, OrderID: "r-1"})
	arm := r.deadMan(func(ctx context.Context, a pathdialer.DeadManArm) error { return nil })
	fence := r.fencer(func(ctx context.Context, f pathdialer.Fence) error { return nil })
	if err := arm(context.Background(), pathdialer.DeadManArm{Endpoint: pathdialer.Endpoint{Name: "us"}}); err != nil {
		t.Fatal(err)
	}
	if err := fence(context.Background(), pathdialer.Fence{Endpoint: pathdialer.Endpoint{Name: "eu"}, To: "us"}); err != nil {
		t.Fatal(err)
	}
	g := r.ground(t0, nil, true)
	if len(g.events) != 1 || len(g.arms) != 1 || !g.arms[0].ok || g.arms[0].endpoint != "us" || len(g.leaves) != 1 || g.leaves[0].to != "us" {
		t.Fatalf("record %+v", g)
	}
}

// A cancel-on-disconnect is judged against the fence that left the
// session whose end fired it: a session the network cut (a reset), whose
// venue cancelled late while a new session ran on the region, is not
// blamed on the fence that later left the new one; a cancel from a region
// going down just before its fence is that fence's.
func TestCODCauseIsTheFenceOfTheSessionThatEnded(t *testing.T) {
	// Reset at +0.742 s, a new session at +1.085 s, the late cancel of the
	// first at +3.112 s, the fence of the second at +9.514 s.
	conns := []sessionConn{{region: "eu", start: at(366), end: at(742)}, {region: "eu", start: at(1085), end: at(9514)}}
	leaves := []leaveCall{{from: "eu", to: "us", start: at(9514)}}
	if c := codCause(conns, leaves, "eu", at(3112)); c != nil {
		t.Fatalf("cancel at +3.112s of the session reset at +0.742s: cause %+v, want none (the fence at +9.514s left the next session)", *c)
	}
	if c := codCause(conns, leaves, "eu", at(11000)); c == nil || c.start != at(9514) {
		t.Fatalf("cancel at +11s after the fence at +9.514s: cause %v, want that fence", c)
	}
	if c := codCause(conns, leaves, "us", at(11000)); c != nil {
		t.Fatalf("cancel on us: cause %+v, want none (us had no session)", *c)
	}
	// The region goes down at +10.466 s, its venue cancels at +10.472 s,
	// the fence begins at +10.477 s: the session's one fence.
	down := []sessionConn{{region: "eu", start: at(143)}}
	fence := []leaveCall{{from: "eu", to: "us", start: at(10477)}}
	if c := codCause(down, fence, "eu", at(10472)); c == nil || c.start != at(10477) {
		t.Fatalf("cancel at +10.472s of a session the fence at +10.477s left: cause %v, want that fence", c)
	}
}
