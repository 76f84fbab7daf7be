package dst

import (
	"context"
	"errors"
	"testing"

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
