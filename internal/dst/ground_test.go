package dst

import (
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// The ground-truth invariants have teeth: each is planted, as a violation,
// in a run's record (the sim's own: its Fencer's calls, its faults and probe
// answers, its order dials), and caught; the same record without the
// violation passes. make mutants plants each in the runtime itself and
// sweeps (internal/dst's documentation, "Mutants").

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func judged(g ground) []string {
	var out []string
	g.start = t0
	g.judge(func(inv, format string, a ...any) { out = append(out, inv) })
	return out
}

func wantOnly(t *testing.T, got []string, inv string) {
	t.Helper()
	if len(got) == 0 {
		t.Fatalf("the planted violation of %s was not caught", inv)
	}
	for _, g := range got {
		if g != inv {
			t.Fatalf("caught %v, want only %s", got, inv)
		}
	}
}

func wantNone(t *testing.T, got []string) {
	t.Helper()
	if len(got) > 0 {
		t.Fatalf("a record without the violation was flagged: %v", got)
	}
}

// A failover eu→us: hold, fence start, switch, release.
func failover(switchAt int) []gateRec {
	return []gateRec{
		{at: at(100), kind: pathdialer.EventHold, seq: 1},
		{at: at(100), kind: pathdialer.EventFenceStart, seq: 2},
		{at: at(switchAt), kind: pathdialer.EventSwitch, from: "eu", to: "us", cause: "failover", seq: 3},
		{at: at(switchAt + 10), kind: pathdialer.EventRelease, seq: 4},
	}
}

func TestGroundSwitchAfterFenceConfirmed(t *testing.T) {
	fences := []fenceCall{{endpoint: "eu", start: at(100), end: at(130), ok: true}}
	wantNone(t, judged(ground{gates: failover(130), fences: fences}))
	// The switch before the Fencer returned.
	wantOnly(t, judged(ground{gates: failover(101), fences: fences}), InvSwitchAfterFence)
	// The Fencer failed.
	failed := []fenceCall{{endpoint: "eu", start: at(100), end: at(130)}}
	wantOnly(t, judged(ground{gates: failover(130), fences: failed}), InvSwitchAfterFence)
	// A success of an earlier fence (before the previous switch) does not count.
	gates := append(failover(130), gateRec{at: at(500), kind: pathdialer.EventSwitch, from: "us", to: "eu", cause: "failback", seq: 5})
	gates = append(gates, gateRec{at: at(510), kind: pathdialer.EventRelease, seq: 6})
	wantOnly(t, judged(ground{gates: gates, fences: append(fences, fenceCall{endpoint: "us", start: at(120), end: at(125), ok: true})}), InvSwitchAfterFence)
}

func TestGroundNoTicketWhileHeld(t *testing.T) {
	fences := []fenceCall{{endpoint: "eu", start: at(100), end: at(130), ok: true}}
	ok := []grantRec{{id: "a", endpoint: "eu", at: at(50), acq: at(50)}, {id: "b", endpoint: "us", at: at(140), acq: at(140)},
		{id: "c", endpoint: "eu", at: at(100), acq: at(100)}} // c: at the hold's instant (granted before it)
	wantNone(t, judged(ground{gates: failover(130), fences: fences, grants: ok}))
	// Granted during the reconcile, before the release.
	bad := append(ok, grantRec{id: "d", endpoint: "us", at: at(135), acq: at(135)})
	wantOnly(t, judged(ground{gates: failover(130), fences: fences, grants: bad}), InvNoGrantWhileHeld)
	// A paused process: the grant (acq) during the hold, its dial after the release.
	paused := append(ok, grantRec{id: "e", endpoint: "eu", at: at(900), acq: at(120)})
	wantOnly(t, judged(ground{gates: failover(130), fences: fences, grants: paused}), InvNoGrantWhileHeld)
	// A release of another service does not open the gate for REST orders.
	gates := failover(130)
	gates[3].service = pathdialer.ServiceWS
	wantOnly(t, judged(ground{gates: gates, fences: fences, grants: ok}), InvNoGrantWhileHeld)
}

func TestGroundFailbackCooldownAndThreshold(t *testing.T) {
	fences := []fenceCall{{endpoint: "eu", start: at(100), end: at(130), ok: true}, {endpoint: "us", start: at(3000), end: at(3005), ok: true}}
	spans := []span{{region: "eu", kind: spanNet, from: at(90), to: at(1000)}}
	probes := []probeRec{
		{endpoint: "eu", start: at(900), end: at(950)},             // failed, during the fault
		{endpoint: "eu", start: at(1500), end: at(1501), ok: true}, // answers after the heal
		{endpoint: "eu", start: at(2000), end: at(2001), ok: true},
		{endpoint: "eu", start: at(2500), end: at(2501), ok: true},
	}
	gates := func(failbackAt int) []gateRec {
		return append(failover(130),
			gateRec{at: at(failbackAt), kind: pathdialer.EventHold, seq: 5},
			gateRec{at: at(failbackAt), kind: pathdialer.EventSwitch, from: "us", to: "eu", cause: "failback", seq: 6},
			gateRec{at: at(failbackAt + 5), kind: pathdialer.EventRelease, seq: 7})
	}
	g := ground{gates: gates(3005), fences: fences, spans: spans, probes: probes, cooldown: 2 * time.Second, successThreshold: 3, decidesItself: true}
	wantNone(t, judged(g))
	// Too early: 2 s after the failure was injected, less than Cooldown.
	g.cooldown = 3 * time.Second
	wantOnly(t, judged(g), InvFailbackCooldown)
	// Too few answers in a row after the last failed one.
	g.cooldown, g.successThreshold = 2*time.Second, 4
	wantOnly(t, judged(g), InvFailbackCooldown)
	// A coordinated Path does not fail back by itself: not judged.
	g.decidesItself = false
	wantNone(t, judged(g))
}

func TestGroundFenceClosesOrderConnections(t *testing.T) {
	fences := []fenceCall{{endpoint: "eu", start: at(100), end: at(130), ok: true}}
	var got []string
	viol := func(inv, format string, a ...any) { got = append(got, inv) }
	conns := []*connRec{
		{id: "a", endpoint: "eu", opened: at(10), closed: at(60)},  // closed before
		{id: "b", endpoint: "eu", opened: at(50), closed: at(100)}, // closed by the fence
		{id: "c", endpoint: "us", opened: at(50)},                  // another endpoint
		{id: "d", endpoint: "eu", opened: at(110)},                 // after the fence began
	}
	judgeFenceCloses(t0, fences, conns, viol)
	wantNone(t, got)
	open := append(conns, &connRec{id: "e", endpoint: "eu", opened: at(90), closed: at(400)})
	judgeFenceCloses(t0, fences, open, viol)
	wantOnly(t, got, InvFenceCloses)
}
