package dst

import (
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// late-landing-reported-in-time and resend-allowed-by-venue have teeth:
// each kind of violation planted in a hand-built record is caught, and the
// record of a Path that keeps the rules passes.
func TestLateCheckFindsPlantedViolations(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	noDedup := simbroker.Profile(simbroker.DedupNone, simbroker.FenceNone, simbroker.TokensOff)
	fenced := simbroker.Profile(simbroker.DedupNone, simbroker.FenceEnforced, simbroker.TokensOff)
	dedup := simbroker.Profile(simbroker.DedupAcrossRegions, simbroker.FenceNone, simbroker.TokensOff)
	ground := func(o lateOrder) lateGround {
		return lateGround{profile: noDedup, hold: quarantine, interval: noDedup.LookupInterval(), end: at(60_000), orders: []lateOrder{o}}
	}
	// An order sent at 0, found missing at 100 ms (the verdict at 110),
	// booked at 130 ms (its server was still booking).
	landed := lateOrder{id: "o", first: at(0), nrAt: at(110), notFound: []time.Time{at(100)}, booked: []time.Time{at(130)}, regions: []string{"eu"}}
	within := landed
	within.looks, within.reportsAt = []time.Time{at(7_110)}, at(7_112)
	late := landed
	late.looks, late.reportsAt = []time.Time{at(15_110)}, at(15_112) // at the quarantine's end only
	never := landed
	resettled := landed // in flight at the lookup, then unknown: the next switch's reconcile found it booked
	resettled.settledAt = at(2_000)
	closed := ground(late)
	closed.closed = []ival{{from: at(1_000), to: at(10_000)}} // a switch held the gate for 9 s meanwhile
	cutOff := ground(landed)
	cutOff.end = at(5_000) // the run ended before the look was due

	resent := lateOrder{id: "r", first: at(0), nrAt: at(110), notFound: []time.Time{at(100), at(15_100)}, resentAt: at(15_120), regions: []string{"eu"}}
	fenceEU := simbroker.FenceSpan{Region: "eu", From: at(50)}
	lifted := fenceEU
	lifted.Until = at(15_110)
	withFence := func(p lateGround, spans ...simbroker.FenceSpan) lateGround {
		p.profile, p.fences = fenced, spans
		return p
	}
	twoRegions := resent
	twoRegions.regions = []string{"eu", "us"}
	dedupGround := ground(resent)
	dedupGround.profile = dedup

	rows := []struct {
		name string
		g    lateGround
		want string // the invariant broken; "" none
		note bool
	}{
		{"reported by the early look", ground(within), "", false},
		{"reported only at the quarantine's end", ground(late), InvLateReported, false},
		{"never reported", ground(never), InvLateReported, false},
		{"found booked by the next switch's reconcile", ground(resettled), "", false},
		{"the gate held meanwhile", closed, "", false},
		{"the run ended before the deadline", cutOff, "", true},
		{"resend at a venue without dedup or fence", ground(resent), InvResendAllowed, false},
		{"resend after the broker fenced its region", withFence(ground(resent), fenceEU), "", false},
		{"resend after the fence was lifted", withFence(ground(resent), lifted), InvResendAllowed, false},
		{"resend of an order sent through an unfenced region too", withFence(ground(twoRegions), fenceEU), InvResendAllowed, false},
		{"resend at a venue that deduplicates for ever", dedupGround, "", false},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			v, notes := judgeLate(row.g)
			if row.want == "" && len(v) != 0 {
				t.Fatalf("violations %v, want none", v)
			}
			if row.want != "" && (len(v) != 1 || !strings.Contains(v[0], row.want)) {
				t.Fatalf("violations %v, want one %s", v, row.want)
			}
			if row.note != (len(notes) == 1) {
				t.Fatalf("notes %v, want a note: %v", notes, row.note)
			}
		})
	}
}
