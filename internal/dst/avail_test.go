package dst

import (
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// gate-open-while-usable has teeth: planted in a hand-built record (the
// faults the sim armed, its Fencer's calls, the Path's gate events), a gate
// closed beyond the bound while a path was usable is caught; the same
// closure while every path was unusable, within the bound, or while a fence
// was not yet confirmed is not.

// availOf judges a two-region record from 0 to 30 s with a bound of 2 s.
func availOf(gates []gateRec, spans []span, fences []fenceCall, exempt []ival) ([]string, AvailFigure) {
	var out []string
	a := availRec{
		start: t0, from: t0, end: at(30000), regions: []string{"eu", "us"}, primary: "eu",
		gates: gates, spans: spans, fences: fences, fenceRetry: 500 * time.Millisecond, exempt: exempt,
		bound: 2 * time.Second, boundText: "test", gap: time.Second,
	}
	fig := a.judge(func(inv, format string, args ...any) { out = append(out, inv) })
	return out, fig
}

// A halt at 1 s, then a switch eu→us and its release at releaseAt.
func haltUntil(releaseAt int) []gateRec {
	return []gateRec{
		{at: at(1000), kind: pathdialer.EventHalt, seq: 1},
		{at: at(releaseAt), kind: pathdialer.EventSwitch, from: "eu", to: "us", seq: 2},
		{at: at(releaseAt), kind: pathdialer.EventRelease, seq: 3},
	}
}

func TestAvailCatchesClosureBeyondBound(t *testing.T) {
	// eu down from 1 s to 20 s; us usable throughout: a halt for 9 s.
	eu := []span{{region: "eu", kind: spanNet, from: at(1000), to: at(20000)}}
	got, fig := availOf(haltUntil(10000), eu, nil, nil)
	wantOnly(t, got, InvAvailable)
	if fig.Beyond != 7*time.Second || fig.Closed != 9*time.Second || fig.Worst != 9*time.Second {
		t.Fatalf("figure %+v, want 7 s beyond the bound of 9 s closed, worst 9 s", fig)
	}
	// A gate left open on a dead path while another is usable is no better.
	open := []span{{region: "eu", kind: spanNet, from: at(1000), to: at(8000)}}
	got, fig = availOf(nil, open, nil, nil)
	wantOnly(t, got, InvAvailable)
	if fig.Beyond != 5*time.Second {
		t.Fatalf("figure %+v, want 5 s beyond", fig)
	}
}

func TestAvailNotWhileEveryPathUnusable(t *testing.T) {
	// Both regions down while the gate is halted: a halt is right.
	both := []span{
		{region: "eu", kind: spanNet, from: at(1000), to: at(10000)},
		{region: "us", kind: spanGray, from: at(900), to: at(9500)},
	}
	got, fig := availOf(haltUntil(10000), both, nil, nil)
	wantNone(t, got)
	// us usable from 9.5 s, released at 10 s: 0.5 s closed, within the bound.
	if fig.Beyond != 0 || fig.Closed != 500*time.Millisecond {
		t.Fatalf("figure %+v, want 500ms closed, none beyond", fig)
	}
	// The same halt 3 s longer: closed 2.5 s after us became usable.
	got, _ = availOf(haltUntil(12500), both, nil, nil)
	wantOnly(t, got, InvAvailable)
}

func TestAvailNotWithinBound(t *testing.T) {
	eu := []span{{region: "eu", kind: spanNet, from: at(1000), to: at(20000)}}
	got, fig := availOf(haltUntil(2900), eu, nil, nil)
	wantNone(t, got)
	if fig.Closed != 1900*time.Millisecond || fig.Beyond != 0 {
		t.Fatalf("figure %+v", fig)
	}
}

func TestAvailNotWhileFencePending(t *testing.T) {
	// A switch eu→us whose Fencer call runs from 1 s to 8 s: the gate is
	// held (the fence is not confirmed), then released within the bound of
	// the call's return.
	gates := []gateRec{
		{at: at(1000), kind: pathdialer.EventHold, seq: 1},
		{at: at(1000), kind: pathdialer.EventFenceStart, seq: 2},
		{at: at(8000), kind: pathdialer.EventSwitch, from: "eu", to: "us", seq: 3},
		{at: at(9000), kind: pathdialer.EventRelease, seq: 4},
	}
	eu := []span{{region: "eu", kind: spanNet, from: at(1000), to: at(20000)}}
	fence := []fenceCall{{endpoint: "eu", start: at(1000), end: at(8000), ok: true}}
	got, _ := availOf(gates, eu, fence, nil)
	wantNone(t, got)
	// Failed calls retried within the backoff are one fence not confirmed.
	retried := []fenceCall{
		{endpoint: "eu", start: at(1000), end: at(3000)},
		{endpoint: "eu", start: at(3400), end: at(6000)},
		{endpoint: "eu", start: at(6300), end: at(8000), ok: true},
	}
	got, _ = availOf(gates, eu, retried, nil)
	wantNone(t, got)
	// Without the call the same hold is a violation.
	got, _ = availOf(gates, eu, nil, nil)
	wantOnly(t, got, InvAvailable)
	// A coordinator's halt in force is a condition the ground truth confirms.
	got, _ = availOf(haltUntil(10000), eu, nil, []ival{{from: at(1000), to: at(9000), why: "coordinator"}})
	wantNone(t, got)
}

// A failback that cannot complete and closes the gate at every attempt
// keeps it closed: short openings between closures that moved no flow do
// not end the closure.
func TestAvailRetryingHoldsAreOneClosure(t *testing.T) {
	var gates []gateRec
	seq := uint64(0)
	for ms := 1000; ms < 10000; ms += 1000 {
		seq++
		gates = append(gates, gateRec{at: at(ms), kind: pathdialer.EventHold, seq: seq})
		seq++
		gates = append(gates, gateRec{at: at(ms + 400), kind: pathdialer.EventRelease, seq: seq})
	}
	// us refuses dead-man arms (the failback target); eu, active, is fine.
	spans := []span{{region: "us", kind: spanArmFail, from: at(0), to: at(20000)}}
	got, fig := availOf(gates, spans, nil, nil)
	wantOnly(t, got, InvAvailable)
	if fig.Closed != 3600*time.Millisecond {
		t.Fatalf("figure %+v, want 3.6 s closed", fig)
	}
	// The same holds, each followed by a switch (flow moved): no violation.
	var moved []gateRec
	seq = 0
	for i, ms := 0, 1000; ms < 10000; i, ms = i+1, ms+1000 {
		to := []string{"us", "eu"}[i%2]
		from := []string{"eu", "us"}[i%2]
		moved = append(moved,
			gateRec{at: at(ms), kind: pathdialer.EventHold, seq: seq + 1},
			gateRec{at: at(ms + 300), kind: pathdialer.EventSwitch, from: from, to: to, seq: seq + 2},
			gateRec{at: at(ms + 400), kind: pathdialer.EventRelease, seq: seq + 3})
		seq += 3
	}
	got, _ = availOf(moved, nil, nil, nil)
	wantNone(t, got)
}

// Usability from the faults really in force: the last fault set on an
// address holds, whatever the span of the move that set it; a probe-only
// partition leaves the order path usable.
func TestOrderPathSpansFromFaultsInForce(t *testing.T) {
	rest := addr("eu", simbroker.REST)
	nets := []netSet{
		{at: at(1000), addr: rest, f: faultnet.Down()},
		{at: at(2000), addr: rest, f: faultnet.None()}, // another fault's heal clears it
		{at: at(3000), addr: addr("eu", simbroker.Probe), f: faultnet.Blackhole()},
	}
	brokers := []brokerSet{
		{at: at(4000), region: "eu", svc: simbroker.REST, f: simbroker.UnknownOutcome{N: 2}},
		{at: at(9000), region: "eu", svc: simbroker.REST, f: simbroker.Partial{}},
		{at: at(11000), region: "eu", svc: simbroker.REST, f: simbroker.None{}},
	}
	cuts := map[string][]time.Time{"eu": {at(4500), at(7000)}}
	sp := orderPathSpans([]string{"eu"}, nets, brokers, cuts)
	var got []string
	for _, s := range sp {
		got = append(got, s.kind+"@"+s.from.Sub(t0).String()+"-"+s.to.Sub(t0).String())
	}
	want := "net@1s-2s unknown@7s-7.001s unknown@4s-6s gray@9s-11s"
	if strings.Join(got, " ") != want {
		t.Fatalf("spans %v, want %s", got, want)
	}
}

// Order lookups failing on the only other region: a closure is not owed
// while its reconcile cannot read, and is from the lookups' heal.
func TestAvailLookupsFailing(t *testing.T) {
	spans := []span{
		{region: "eu", kind: spanNet, from: at(1000), to: at(20000)},
		{region: "us", kind: spanLookup, from: at(500), to: at(8000)},
	}
	got, _ := availOf(haltUntil(9500), spans, nil, nil)
	wantNone(t, got)
	got, _ = availOf(haltUntil(11000), spans, nil, nil)
	wantOnly(t, got, InvAvailable)
	// A gate open on the active region while its lookups fail is served.
	open := []span{{region: "eu", kind: spanLookup, from: at(1000), to: at(20000)}}
	got, fig := availOf(nil, open, nil, nil)
	wantNone(t, got)
	if fig.Closed != 0 {
		t.Fatalf("figure %+v, want nothing closed", fig)
	}
}

// A fence not confirmed exempts a hold only when the switch goes to a path
// that could take the flow: a Path that keeps fencing toward a dead region
// while another is usable is closed.
func TestAvailFenceTowardDeadTarget(t *testing.T) {
	judge := func(to string) []string {
		var out []string
		gates := []gateRec{{at: at(1000), kind: pathdialer.EventHold, seq: 1}, {at: at(1000), kind: pathdialer.EventFenceStart, seq: 2}}
		var fences []fenceCall
		for ms := 1000; ms < 12000; ms += 1200 {
			fences = append(fences, fenceCall{endpoint: "eu", to: to, start: at(ms), end: at(ms + 1000)})
		}
		a := availRec{
			start: t0, from: t0, end: at(12000), regions: []string{"eu", "us", "ap"}, primary: "eu", gates: gates,
			spans: []span{
				{region: "eu", kind: spanNet, from: at(900)},
				{region: "ap", kind: spanNet, from: at(900)},
			},
			fences: fences, fenceRetry: 500 * time.Millisecond, bound: 2 * time.Second, boundText: "test", gap: time.Second,
		}
		a.judge(func(inv, format string, args ...any) { out = append(out, inv) })
		return out
	}
	wantNone(t, judge("us"))
	wantOnly(t, judge("ap"), InvAvailable)
}

// Coordinated seeds: the Path follows the coordinator's assignment and may
// not leave it on its own. A switch into the assigned region whose order
// lookups fail cannot complete (its reconcile cannot read there), before the
// engine made it active and after: the closure is the coordinator's until
// the lookups heal, and is owed from then on. Without an assignment (the
// Path decides) the same record is a closure beyond the bound.
func TestAvailAssignedRegionReadsFailing(t *testing.T) {
	judge := func(releaseAt int, assigns []coordEvent) []string {
		var out []string
		gates := []gateRec{
			{at: at(1000), kind: pathdialer.EventHold, seq: 1},
			{at: at(1100), kind: pathdialer.EventSwitch, from: "eu", to: "us", seq: 2},
			{at: at(releaseAt), kind: pathdialer.EventRelease, seq: 3},
		}
		a := availRec{
			start: t0, from: t0, end: at(30000), regions: []string{"eu", "us"}, primary: "eu", gates: gates,
			spans: []span{
				{region: "eu", kind: spanNet, from: at(500), to: at(2000)},
				{region: "us", kind: spanLookup, from: at(900), to: at(8000)},
			},
			assigns: assigns, fenceRetry: 500 * time.Millisecond, bound: 2 * time.Second, boundText: "test", gap: time.Second,
		}
		a.judge(func(inv, format string, args ...any) { out = append(out, inv) })
		return out
	}
	assigned := []coordEvent{{at: at(1000), kind: "us"}}
	wantNone(t, judge(9500, assigned))
	wantOnly(t, judge(11000, assigned), InvAvailable)
	wantOnly(t, judge(9500, nil), InvAvailable)
}
