package orderflow_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// restingHistory is cleanHistory with resting orders and a dead-man timer,
// nothing wrong: L1 and L2 rest on eu (placed over FIX); the eu session
// drops at 900 ms and its cancel-on-disconnect cancels L1 (L2 was placed
// over REST and stays); L3 rests on us and fills at 1300 ms. The open-order
// reconcile after the release (1150 ms) reports L1 cancelled; one at 1400
// ms reports L3 filled. The client needs a dead-man timer from 0 to 2000
// ms; armed with 1 s at 0 and refreshed at 800 and 1600 ms (the last
// through us).
func restingHistory() orderflow.History {
	h := cleanHistory()
	limit := func(id, tr, ep string, sentMs, ackMs int) orderflow.OrderRecord {
		return orderflow.OrderRecord{ClOrdID: id, Transport: tr, Spec: orderflow.OrderSpec{ClOrdID: id, Limit: "1.01"},
			PlacedAt: at(sentMs), AttemptAt: at(sentMs), Sent: true, Acked: true, AckedAt: at(ackMs), AckEndpoint: ep, BookedRegion: ep,
			Attempts: []orderflow.Attempt{{At: at(sentMs), Sent: true}}}
	}
	h.Orders = append(h.Orders, limit("L1", "fix", "eu", 200, 210), limit("L2", "rest", "eu", 220, 230), limit("L3", "rest", "us", 1220, 1230))
	bookIn(&h, 205, "eu", "fix", "eu/fix/1", "L1", simbroker.OutcomeNew)
	bookIn(&h, 225, "eu", "rest", "eu/rest/1", "L2", simbroker.OutcomeNew)
	bookIn(&h, 1225, "us", "rest", "us/rest/1", "L3", simbroker.OutcomeNew)
	h.Audit = append(h.Audit,
		simbroker.Record{Time: at(900), Kind: simbroker.KindCODCancel, Region: "eu", Service: "fix", ConnID: "eu/fix/1",
			ClientOrderID: "L1", Outcome: simbroker.OutcomeOK, Detail: "cod session: placed on eu/fix/1"},
		simbroker.Record{Time: at(1300), Kind: simbroker.KindFill, Region: "us", Service: "rest", ClientOrderID: "L3", Outcome: simbroker.OutcomeOK},
	)
	arm := func(ms int, conn string) simbroker.Record {
		return simbroker.Record{Time: at(ms), Kind: simbroker.KindDeadMan, ConnID: conn, Outcome: simbroker.OutcomeOK, Detail: "arm timeout=1s"}
	}
	h.Audit = append(h.Audit, arm(0, "eu/rest/1"), arm(800, "eu/rest/1"), arm(1600, "us/rest/1"))
	renumber(&h)
	h.Resting = []orderflow.RestingReport{
		{At: at(1150), Order: "L1", Cause: orderflow.RestingCancelled, After: "us"},
		{At: at(1400), Order: "L3", Cause: orderflow.RestingFilled, After: "us"},
	}
	h.OpenReconciles = []time.Time{at(1150), at(1400)}
	h.DeadMan = orderflow.DeadManWindow{From: at(0), Until: at(2000)}
	return h
}

func TestCheckHistoryRestingCleanPasses(t *testing.T) {
	sum := orderflow.CheckHistory(restingHistory(), orderflow.CheckOptions{})
	if !sum.OK() {
		t.Fatalf("a clean history with resting orders failed: %v", sum.Violations)
	}
	for _, inv := range sum.Invariants {
		if (inv.ID == orderflow.InvRestingReported || inv.ID == orderflow.InvDeadMan) && !inv.Checked {
			t.Errorf("I%d not checked: %s", inv.ID, inv.NotChecked)
		}
	}
	if sum.RestingCancelled != 1 || sum.RestingReported != 1 || sum.DeadManGaps != 0 {
		t.Errorf("resting counts: cancelled %d reported %d gaps %d, want 1 1 0", sum.RestingCancelled, sum.RestingReported, sum.DeadManGaps)
	}
	// The one switch, eu → us, is nearest to L1's cancel and L3's fill.
	if bs := sum.RestingBySwitch; len(bs) != 1 || bs[0].To != "us" || bs[0].Cancelled != 1 || bs[0].Reported != 1 ||
		bs[0].CancelledBy["cod eu/fix/1"] != 1 || bs[0].Filled != 1 {
		t.Errorf("by switch %+v", bs)
	}
	var out bytes.Buffer
	sum.Write(&out)
	if !strings.Contains(out.String(), "switch eu → us at +1.000s: cancelled 1 (1 cod eu/fix/1), reported 1, filled meanwhile 1") {
		t.Errorf("summary lacks the switch's effect on resting orders:\n%s", out.String())
	}
	// Without resting orders or a dead-man, both are named as not checked.
	sum = orderflow.CheckHistory(cleanHistory(), orderflow.CheckOptions{})
	for _, inv := range sum.Invariants {
		if (inv.ID == orderflow.InvRestingReported || inv.ID == orderflow.InvDeadMan) && (inv.Checked || inv.NotChecked == "") {
			t.Errorf("I%d on a history without them: checked=%v %q", inv.ID, inv.Checked, inv.NotChecked)
		}
	}
}

// Each resting-order violation planted in the clean history is caught under
// its invariant and shown in the written summary.
func TestCheckHistoryCatchesPlantedRestingViolations(t *testing.T) {
	cases := []struct {
		name  string
		plant func(h *orderflow.History)
		inv   int
		order string
		text  string
	}{
		{"silent cancel: the reconcile never reported L1", func(h *orderflow.History) {
			h.Resting = h.Resting[1:]
		}, orderflow.InvRestingReported, "L1", "SILENT CANCEL"},
		{"silent cancel: L2 cancelled by the dead-man, unreported", func(h *orderflow.History) {
			h.Audit = append(h.Audit, simbroker.Record{Time: at(1000), Kind: simbroker.KindDeadManCancel, ClientOrderID: "L2",
				Outcome: simbroker.OutcomeOK, Detail: "dead-man timer lapsed"})
			renumber(h)
		}, orderflow.InvRestingReported, "L2", "SILENT CANCEL"},
		{"wrong report: L2 reported cancelled, the broker never cancelled it", func(h *orderflow.History) {
			h.Resting = append(h.Resting, orderflow.RestingReport{At: at(1150), Order: "L2", Cause: orderflow.RestingCancelled})
		}, orderflow.InvRestingReported, "L2", "WRONG REPORT"},
		{"dead-man gap: the refresh came after the timer lapsed", func(h *orderflow.History) {
			for i := range h.Audit {
				if h.Audit[i].Kind == simbroker.KindDeadMan && h.Audit[i].Time.Equal(at(800)) {
					h.Audit[i].Time = at(1300)
				}
			}
			renumber(h)
		}, orderflow.InvDeadMan, "", "DEAD-MAN GAP: no armed timer protected the account from +1s to +1.3s"},
		{"dead-man gap: disarmed during the window", func(h *orderflow.History) {
			h.Audit = append(h.Audit, simbroker.Record{Time: at(1700), Kind: simbroker.KindDeadMan, Outcome: simbroker.OutcomeOK, Detail: "disarm"})
			renumber(h)
		}, orderflow.InvDeadMan, "", "from +1.7s to +2s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := restingHistory()
			tc.plant(&h)
			sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
			found := false
			for _, f := range sum.Findings {
				if f.Invariant == tc.inv && f.Order == tc.order && strings.Contains(f.Text, tc.text) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no I%d finding about %q containing %q; findings: %v", tc.inv, tc.order, tc.text, sum.Violations)
			}
			var out bytes.Buffer
			sum.Write(&out)
			if !strings.Contains(out.String(), "RESULT: FAILED") || !strings.Contains(out.String(), fmt.Sprintf("✗ I%d ", tc.inv)) {
				t.Errorf("the written summary does not show it:\n%s", out.String())
			}
		})
	}
}

// A moment without an armed timer while no resting order is open exposes
// nothing: it is a note, not a violation.
func TestCheckHistoryDeadManGapWithNothingOpenIsANote(t *testing.T) {
	h := restingHistory()
	h.Audit = append(h.Audit,
		simbroker.Record{Time: at(300), Kind: simbroker.KindCancel, ClientOrderID: "L2", Outcome: simbroker.OutcomeOK, Detail: "user"},
		simbroker.Record{Time: at(1700), Kind: simbroker.KindDeadMan, Outcome: simbroker.OutcomeOK, Detail: "disarm"})
	renumber(&h)
	sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
	if !sum.OK() || sum.DeadManGaps != 0 {
		t.Fatalf("a gap with nothing open: %v (gaps %d)", sum.Violations, sum.DeadManGaps)
	}
	noted := false
	for _, n := range sum.Notes {
		noted = noted || strings.Contains(n, "no resting order was open")
	}
	if !noted {
		t.Fatalf("the gap is not noted: %v", sum.Notes)
	}
}

// An order whose outcome was unknown is told by its reconcile: a CANCELED
// verdict after the broker's cancel reports it.
func TestCheckHistoryCancelToldByASettlement(t *testing.T) {
	h := restingHistory()
	h.Resting = h.Resting[1:] // no open-order report of L1
	l1 := orderIn(&h, "L1")
	sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
	if sum.OK() {
		t.Fatal("the unreported cancel was not caught")
	}
	l1.Verdicts = append(l1.Verdicts, orderflow.Verdict{At: at(1100), Fate: pathdialer.FateCanceled, Final: true, Source: "reconcile"})
	if sum = orderflow.CheckHistory(h, orderflow.CheckOptions{}); !sum.OK() || sum.RestingReported != 1 {
		t.Fatalf("a CANCELED verdict after the cancel did not count as a report: %v", sum.Violations)
	}
	l1.Verdicts[len(l1.Verdicts)-1].At = at(850) // before the cancel: not a report of it
	if sum = orderflow.CheckHistory(h, orderflow.CheckOptions{}); sum.OK() {
		t.Fatal("a verdict before the cancel counted as a report")
	}
}

// A timer that lapses because no region's trade path could carry a refresh
// (an all-regions-down window; the lapse comes during it, or after its heal
// before the refresher could act) is the timer doing its job: no client
// could have refreshed it. The gap it leaves is a note, provided the client
// arms again within DeadManWindow.Rearm of the first door opening. A gap
// that starts before every region was down, or a re-arm later than that
// bound, is still a violation.
func TestCheckHistoryDeadManLapseWhileEveryRegionIsDown(t *testing.T) {
	// restingHistory's timer, armed with 1 s at 800 ms, lapses at 1800 ms;
	// the next arm comes at rearmMs. L2 stays open throughout (as an order
	// landing late from a blackhole would be).
	hist := func(rearmMs int) orderflow.History {
		h := restingHistory()
		for i := range h.Audit {
			if h.Audit[i].Kind == simbroker.KindDeadMan && h.Audit[i].Time.Equal(at(1600)) {
				h.Audit[i].Time = at(rearmMs)
			}
		}
		renumber(&h)
		h.DeadMan = orderflow.DeadManWindow{From: at(0), Until: at(rearmMs + 500), Rearm: 500 * time.Millisecond}
		return h
	}
	down := func(region string, fromMs, toMs int) orderflow.Fault {
		return orderflow.Fault{Region: region, Kind: "all-down", At: at(fromMs), Recovered: at(toMs), FailsProbe: true, FailsTradePath: true}
	}
	for _, tc := range []struct {
		name    string
		rearmMs int
		faults  []orderflow.Fault
		gap     bool
	}{
		{"every region down, re-armed as they recover", 1950, []orderflow.Fault{down("eu", 850, 1900), down("us", 850, 1900)}, false},
		{"every region down, re-armed within the bound", 2350, []orderflow.Fault{down("eu", 850, 1900), down("us", 850, 1900)}, false},
		{"every region down, re-armed too late", 2500, []orderflow.Fault{down("eu", 850, 1900), down("us", 850, 1900)}, true},
		{"one region still up", 1950, []orderflow.Fault{down("eu", 850, 1900)}, true},
		{"no fault", 1950, nil, true},
		{"lapsed before every region was down", 1950, []orderflow.Fault{down("eu", 850, 1900), down("us", 1850, 1900)}, true},
		// The last refresh before the outage came just before it: the timer
		// lapses after the heal, before the refresher's next tick.
		{"lapsed just after every region healed, re-armed within the bound", 1950, []orderflow.Fault{down("eu", 850, 1750), down("us", 850, 1750)}, false},
		{"lapsed just after every region healed, re-armed too late", 2300, []orderflow.Fault{down("eu", 850, 1750), down("us", 850, 1750)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := orderflow.CheckHistory(hist(tc.rearmMs), orderflow.CheckOptions{Faults: tc.faults})
			var gaps []string
			for _, f := range sum.Findings {
				if f.Invariant == orderflow.InvDeadMan {
					gaps = append(gaps, f.Text)
				}
			}
			if got := len(gaps) > 0; got != tc.gap {
				t.Fatalf("I18 violation %v, want %v: %v (notes %v)", got, tc.gap, sum.Violations, sum.Notes)
			}
			if !tc.gap && !strings.Contains(strings.Join(sum.Notes, "\n"), "while no region's trade path could carry a refresh") {
				t.Fatalf("the excused gap is not noted: %v", sum.Notes)
			}
		})
	}
}
