package orderflow_test

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// t0 is the origin of every synthetic history; at(ms) a time after it.
var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// cleanHistory is a recorded run with nothing wrong in it: trading on eu, a
// blackhole, a failover to us at 1000 ms (fence of eu 950–960 ms), three
// orders in flight at the switch (R2 settled FILLED — it was booked just
// before the fence; R3 settled NOT_RECEIVED, final, and re-sent on us; F1
// cut and settled RESTING), trading on us, a stream without gaps and a
// continuous FIX session.
func cleanHistory() orderflow.History {
	h := orderflow.History{
		Start: t0,
		Endpoints: []orderflow.Endpoint{
			{Name: "eu", Region: "eu", Primary: true},
			{Name: "us", Region: "us", Priority: 10},
		},
		Streams:           []orderflow.StreamStats{{Stream: "px.EURUSD", First: 1, Last: 80, Messages: 80, Endpoints: []string{"eu", "us"}}},
		StreamsConfigured: 1,
		FIX:               &orderflow.FIXSeqStats{Logons: 2, LastIn: 40, Messages: 40, ExecReports: 20},
		Sequence:          orderflow.SequenceContinue,
	}
	h.Events = []pathdialer.Event{
		{Kind: pathdialer.EventDecision, Time: at(940), Decision: &engine.Decision{Outcome: engine.FenceRequired, From: "eu", To: "us"}},
		{Kind: pathdialer.EventHold, Time: at(940), Cause: "fencing"},
		{Kind: pathdialer.EventFenceStart, Time: at(950), Endpoint: "eu", Attempt: 1},
		{Kind: pathdialer.EventFenceSuccess, Time: at(960), Endpoint: "eu", Duration: 10 * time.Millisecond},
		{Kind: pathdialer.EventSwitch, Time: at(1000), From: "eu", To: "us", Token: 1},
		{Kind: pathdialer.EventReconcileStart, Time: at(1000), From: "eu", To: "us", Tickets: []pathdialer.TicketInfo{
			{OrderID: "R2", Service: "rest", Endpoint: "eu"}, {OrderID: "R3", Service: "rest", Endpoint: "eu"}, {OrderID: "F1", Service: "fix", Endpoint: "eu"}}},
		{Kind: pathdialer.EventReconcileSuccess, Time: at(1100)},
		{Kind: pathdialer.EventRelease, Time: at(1100), Endpoint: "us", Token: 1},
	}
	acked := func(id, tr, ep string, sentMs, ackMs int) orderflow.OrderRecord {
		return orderflow.OrderRecord{ClOrdID: id, Transport: tr, PlacedAt: at(sentMs), AttemptAt: at(sentMs), Sent: true,
			Acked: true, AckedAt: at(ackMs), AckEndpoint: ep, BookedRegion: ep,
			Attempts: []orderflow.Attempt{{At: at(sentMs), Sent: true}}}
	}
	r3 := orderflow.OrderRecord{ClOrdID: "R3", Transport: "rest", PlacedAt: at(920), AttemptAt: at(1150), Sent: true, Unknown: true,
		Settled: true, Fate: pathdialer.FateNotReceived, SettledAt: at(1100), Resent: 1,
		Acked: true, AckedAt: at(1160), AckEndpoint: "us", BookedRegion: "us",
		Attempts: []orderflow.Attempt{{At: at(920), Sent: true}, {At: at(1150), Resend: true, Sent: true}},
		Verdicts: []orderflow.Verdict{{At: at(1100), Fate: pathdialer.FateNotReceived, Final: true, Source: "reconcile"}}}
	h.Orders = []orderflow.OrderRecord{
		acked("R1", "rest", "eu", 100, 110),
		{ClOrdID: "R2", Transport: "rest", PlacedAt: at(900), AttemptAt: at(900), Sent: true, Unknown: true,
			Settled: true, Fate: pathdialer.FateFilled, SettledAt: at(1100),
			Attempts: []orderflow.Attempt{{At: at(900), Sent: true}},
			Verdicts: []orderflow.Verdict{{At: at(1100), Fate: pathdialer.FateFilled, Final: true, Region: "eu", Source: "reconcile"}}},
		r3,
		{ClOrdID: "F1", Transport: "fix", PlacedAt: at(930), AttemptAt: at(930), Sent: true, Unknown: true,
			Settled: true, Fate: pathdialer.FateResting, SettledAt: at(1100),
			Attempts: []orderflow.Attempt{{At: at(930), Sent: true}},
			Verdicts: []orderflow.Verdict{{At: at(1100), Fate: pathdialer.FateResting, Final: true, Source: "reconcile"}}},
		acked("R4", "rest", "us", 1200, 1210),
		acked("F2", "fix", "us", 1250, 1260),
		// Refused at once during the hold: never sent.
		{ClOrdID: "R5", Transport: "rest", PlacedAt: at(990), AttemptAt: at(990), NotSent: "held past its deadline",
			Attempts: []orderflow.Attempt{{At: at(990)}}},
	}
	rec := func(seq int, ms int, region, svc, conn, id string, out simbroker.Outcome) simbroker.Record {
		return simbroker.Record{Seq: uint64(seq), Time: at(ms), Kind: simbroker.KindOrder, Region: region, Service: svc,
			ConnID: conn, ClientOrderID: id, Outcome: out}
	}
	h.Audit = simbroker.AuditLog{
		rec(1, 105, "eu", "rest", "eu/rest/1", "R1", simbroker.OutcomeNew),
		rec(2, 905, "eu", "rest", "eu/rest/1", "R2", simbroker.OutcomeCut),
		rec(3, 935, "eu", "fix", "eu/fix/1", "F1", simbroker.OutcomeCut),
		rec(4, 1155, "us", "rest", "us/rest/1", "R3", simbroker.OutcomeNew),
		rec(5, 1205, "us", "rest", "us/rest/1", "R4", simbroker.OutcomeNew),
		rec(6, 1255, "us", "fix", "us/fix/1", "F2", simbroker.OutcomeNew),
	}
	// The reconcile's lookups, answered by the broker before the release.
	lookup := func(ms int, svc, id string, out simbroker.Outcome) simbroker.Record {
		return simbroker.Record{Time: at(ms), Kind: simbroker.KindLookup, Region: "us", Service: svc, ClientOrderID: id, Outcome: out}
	}
	h.Audit = append(h.Audit, lookup(1050, "rest", "R2", simbroker.OutcomeOK), lookup(1060, "fix", "F1", simbroker.OutcomeOK),
		lookup(1090, "rest", "R3", simbroker.OutcomeFailed))
	renumber(&h)
	return h
}

// renumber orders h's audit by time and numbers it from 1, as the broker does.
func renumber(h *orderflow.History) {
	sort.SliceStable(h.Audit, func(i, j int) bool { return h.Audit[i].Time.Before(h.Audit[j].Time) })
	for i := range h.Audit {
		h.Audit[i].Seq = uint64(i + 1)
	}
}

// order returns a pointer to h's record of id.
func orderIn(h *orderflow.History, id string) *orderflow.OrderRecord {
	for i := range h.Orders {
		if h.Orders[i].ClOrdID == id {
			return &h.Orders[i]
		}
	}
	panic("no order " + id)
}

func bookIn(h *orderflow.History, ms int, region, svc, conn, id string, out simbroker.Outcome) {
	h.Audit = append(h.Audit, simbroker.Record{Seq: uint64(len(h.Audit) + 1), Time: at(ms), Kind: simbroker.KindOrder,
		Region: region, Service: svc, ConnID: conn, ClientOrderID: id, Outcome: out})
}

func TestCheckHistoryCleanPasses(t *testing.T) {
	sum := orderflow.CheckHistory(cleanHistory(), orderflow.CheckOptions{})
	if !sum.OK() {
		t.Fatalf("a clean history failed: %v", sum.Violations)
	}
	for _, inv := range sum.Invariants {
		if inv.ID <= orderflow.InvFIXSeq && !inv.Checked {
			t.Errorf("I%d not checked on a full history: %s", inv.ID, inv.NotChecked)
		}
	}
	if len(sum.Switches) != 1 || sum.Switches[0].FenceBegan != 950*time.Millisecond || sum.Switches[0].FenceDone != 960*time.Millisecond {
		t.Errorf("switches %+v, want one eu→us with the fence 950–960 ms", sum.Switches)
	}
	// R3 was submitted twice (original and re-send; the original never
	// landed, so the broker saw one submission): nothing repeated.
	if sum.Repeats != 0 || sum.Duplicates != 0 || sum.TwoLivePaths != 0 || len(sum.LateLandings) != 0 || sum.Losses != 0 {
		t.Errorf("counts %+v", sum)
	}
	var out bytes.Buffer
	sum.Write(&out)
	for _, want := range []string{"I1 ", "I3 ", "I9 ", "RESULT: OK"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

// Each kind of violation planted in the clean history must be caught, under
// its invariant, naming the order.
func TestCheckHistoryCatchesEveryPlantedViolation(t *testing.T) {
	cases := []struct {
		name  string
		plant func(h *orderflow.History)
		inv   int
		order string
		text  string
		count func(orderflow.Summary) int
	}{
		{"duplicate", func(h *orderflow.History) {
			// R4 booked a second time on us (a broker without deduplication
			// and a replay below the client).
			bookIn(h, 1300, "us", "rest", "us/rest/1", "R4", simbroker.OutcomeNew)
		}, orderflow.InvNoDuplicate, "R4", "DUPLICATE", func(s orderflow.Summary) int { return s.Duplicates }},
		{"duplicate after an allowed re-send", func(h *orderflow.History) {
			// R3's original copy landed late on eu after its re-send booked
			// it on us: booked twice, caused by a re-send the library allowed.
			bookIn(h, 1170, "eu", "rest", "eu/rest/1", "R3", simbroker.OutcomeNew)
		}, orderflow.InvNoDuplicate, "R3", "allowed by a final NOT_RECEIVED", func(s orderflow.Summary) int { return s.DuplicatesAllowed }},
		{"loss: sent, never answered", func(h *orderflow.History) {
			o := orderIn(h, "F2")
			o.Acked, o.AckEndpoint, o.AckedAt, o.BookedRegion = false, "", time.Time{}, ""
		}, orderflow.InvNoLoss, "F2", "LOST", func(s orderflow.Summary) int { return s.Losses }},
		{"loss: acknowledged, never booked", func(h *orderflow.History) {
			h.Audit = h.Audit.Filter(func(r simbroker.Record) bool { return r.ClientOrderID != "R4" })
		}, orderflow.InvClientBook, "R4", "never booked", func(s orderflow.Summary) int { return s.Losses }},
		{"two live paths", func(h *orderflow.History) {
			// R6 placed at 1020 ms (after eu's fence began) and booked on eu.
			h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "R6", Transport: "rest", PlacedAt: at(1020), AttemptAt: at(1020),
				Sent: true, Acked: true, AckedAt: at(1040), AckEndpoint: "eu", BookedRegion: "eu",
				Attempts: []orderflow.Attempt{{At: at(1020), Sent: true}}})
			bookIn(h, 1030, "eu", "rest", "eu/rest/1", "R6", simbroker.OutcomeNew)
		}, orderflow.InvOneLivePath, "R6", "TWO LIVE PATHS", func(s orderflow.Summary) int { return s.TwoLivePaths }},
		{"two live paths on a connection opened after the fence", func(h *orderflow.History) {
			// R7's attempt began before the fence, but the copy that booked
			// came on a connection the broker first saw after it: a new
			// dial to a fenced region.
			h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "R7", Transport: "rest", PlacedAt: at(935), AttemptAt: at(935),
				Sent: true, Acked: true, AckedAt: at(1060), AckEndpoint: "eu", BookedRegion: "eu",
				Attempts: []orderflow.Attempt{{At: at(935), Sent: true}}})
			bookIn(h, 1050, "eu", "rest", "eu/rest/9", "R7", simbroker.OutcomeNew)
		}, orderflow.InvOneLivePath, "R7", "opened after the fence", func(s orderflow.Summary) int { return s.TwoLivePaths }},
		{"two live paths from the hold, before the fence", func(h *orderflow.History) {
			// R8 began at 945 ms, after eu was held (940) but before its
			// fence began (950), and was booked on eu: no ticket may be
			// granted on a held endpoint.
			h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "R8", Transport: "rest", PlacedAt: at(945), AttemptAt: at(945),
				Sent: true, Acked: true, AckedAt: at(958), AckEndpoint: "eu", BookedRegion: "eu",
				Attempts: []orderflow.Attempt{{At: at(945), Sent: true}}})
			bookIn(h, 955, "eu", "rest", "eu/rest/1", "R8", simbroker.OutcomeNew)
		}, orderflow.InvOneLivePath, "R8", "sent after the hold began", func(s orderflow.Summary) int { return s.TwoLivePaths }},
		{"two live paths: the fence closed nothing", func(h *orderflow.History) {
			// R9's attempt began before the hold, but the network saw its
			// bytes leave the client at 1250 ms on eu's old connection, long
			// after the fence was confirmed (960): the fence left it open.
			h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "R9", Transport: "rest", PlacedAt: at(930), AttemptAt: at(930),
				Sent: true, Acked: true, AckedAt: at(1310), AckEndpoint: "eu", BookedRegion: "eu",
				Attempts: []orderflow.Attempt{{At: at(930), Sent: true}}})
			bookIn(h, 1300, "eu", "rest", "eu/rest/1", "R9", simbroker.OutcomeNew)
			h.Audit[len(h.Audit)-1].SentBy, h.Audit[len(h.Audit)-1].SentAfter, h.Audit[len(h.Audit)-1].ConnOpened = at(1250), at(1250), at(50)
		}, orderflow.InvOneLivePath, "R9", "a connection the fence did not close", func(s orderflow.Summary) int { return s.TwoLivePaths }},
		{"a re-send granted on the fenced endpoint", func(h *orderflow.History) {
			// R10 first left at 920 ms through eu; found NOT_RECEIVED, final,
			// its re-send at 1150 ms was sent through eu again (the transport
			// says so) and booked there: a ticket granted on a fenced endpoint.
			h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "R10", Transport: "rest", PlacedAt: at(920), AttemptAt: at(1150),
				Sent: true, Unknown: true, Settled: true, Fate: pathdialer.FateNotReceived, SettledAt: at(1100), Resent: 1,
				Acked: true, AckedAt: at(1170), AckEndpoint: "eu", BookedRegion: "eu",
				Attempts: []orderflow.Attempt{{At: at(920), Sent: true, Endpoint: "eu"}, {At: at(1150), Resend: true, Sent: true, Endpoint: "eu"}},
				Verdicts: []orderflow.Verdict{{At: at(1100), Fate: pathdialer.FateNotReceived, Final: true, Source: "reconcile"}}})
			bookIn(h, 1160, "eu", "rest", "eu/rest/1", "R10", simbroker.OutcomeNew)
		}, orderflow.InvOneLivePath, "R10", "was sent through eu itself", func(s orderflow.Summary) int { return s.TwoLivePaths }},
		{"duplicate through the probe relay", func(h *orderflow.History) {
			// R4's second copy came through us's probe relay: a booking,
			// whatever door it came through.
			bookIn(h, 1300, "us", "probe", "us/probe/1", "R4", simbroker.OutcomeNew)
		}, orderflow.InvNoDuplicate, "R4", "DUPLICATE", func(s orderflow.Summary) int { return s.Duplicates }},
		{"released before the reconcile's lookups", func(h *orderflow.History) {
			// R11 reached the broker on us at 1075 ms, before the broker had
			// answered the lookup of R3 (1090): the gate opened early,
			// whatever the release event says.
			h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "R11", Transport: "rest", PlacedAt: at(1070), AttemptAt: at(1070),
				Sent: true, Acked: true, AckedAt: at(1080), AckEndpoint: "us", BookedRegion: "us",
				Attempts: []orderflow.Attempt{{At: at(1070), Sent: true, Endpoint: "us"}}})
			bookIn(h, 1075, "us", "rest", "us/rest/1", "R11", simbroker.OutcomeNew)
			renumber(h)
		}, orderflow.InvReconcile, "R11", "RELEASED BEFORE RECONCILE", nil},
		{"released before a lookup that never came", func(h *orderflow.History) {
			// The broker never answered a lookup of R3, yet R4 flowed on us.
			h.Audit = h.Audit.Filter(func(r simbroker.Record) bool { return r.Kind != simbroker.KindLookup || r.ClientOrderID != "R3" })
			renumber(h)
		}, orderflow.InvReconcile, "R3", "RELEASED BEFORE RECONCILE", nil},
		{"unreported late landing", func(h *orderflow.History) {
			// F3 written at 940 ms on eu's FIX connection, held by the
			// blackhole, booked there at 1500 ms; the client's record still
			// says the order is in flight to reconcile, provisional.
			h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "F3", Transport: "fix", PlacedAt: at(935), AttemptAt: at(935),
				Sent: true, Unknown: true, Settled: true, Fate: pathdialer.FateNotReceived, Provisional: true, SettledAt: at(1100),
				Attempts: []orderflow.Attempt{{At: at(935), Sent: true}},
				Verdicts: []orderflow.Verdict{{At: at(1100), Fate: pathdialer.FateNotReceived, Source: "reconcile"}}})
			bookIn(h, 1500, "eu", "fix", "eu/fix/1", "F3", simbroker.OutcomeNew)
		}, orderflow.InvLateLandings, "F3", "UNREPORTED LATE LANDING", func(s orderflow.Summary) int { _, u := s.LateReported(); return u }},
		{"late landing after a final verdict", func(h *orderflow.History) {
			// The same, but the library had called F3 NOT_RECEIVED, final,
			// and later reported the landing: still a violation.
			h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "F3", Transport: "fix", PlacedAt: at(935), AttemptAt: at(935),
				Sent: true, Unknown: true, Settled: true, Fate: pathdialer.FateFilled, SettledAt: at(1600),
				Attempts: []orderflow.Attempt{{At: at(935), Sent: true}},
				Verdicts: []orderflow.Verdict{{At: at(1100), Fate: pathdialer.FateNotReceived, Final: true, Source: "reconcile"},
					{At: at(1600), Fate: pathdialer.FateFilled, Final: true, Region: "eu", Source: "late landing"}}})
			bookIn(h, 1500, "eu", "fix", "eu/fix/1", "F3", simbroker.OutcomeNew)
		}, orderflow.InvLateLandings, "F3", "AFTER A FINAL VERDICT", func(s orderflow.Summary) int { _, u := s.LateReported(); return u }},
		{"client/book mismatch: booked elsewhere", func(h *orderflow.History) {
			// R1 was booked through eu but the client recorded it as
			// accepted by us (the endpoint active when the answer came).
			o := orderIn(h, "R1")
			o.AckEndpoint, o.BookedRegion = "us", "us"
		}, orderflow.InvClientBook, "R1", "booked it through eu", nil},
		{"client/book mismatch: recorded not sent, booked", func(h *orderflow.History) {
			bookIn(h, 1300, "us", "rest", "us/rest/1", "R5", simbroker.OutcomeNew)
		}, orderflow.InvClientBook, "R5", "not sent", nil},
		{"unexplained repeat", func(h *orderflow.History) {
			// R4 reached the broker twice (the second answered duplicate)
			// though the client sent it once: an automatic retry.
			bookIn(h, 1206, "us", "rest", "us/rest/2", "R4", simbroker.OutcomeDuplicate)
		}, orderflow.InvRepeats, "R4", "REPEAT", func(s orderflow.Summary) int { return s.Repeats }},
		{"replay with PossDup", func(h *orderflow.History) {
			h.Audit = append(h.Audit, simbroker.Record{Seq: 99, Time: at(1400), Kind: simbroker.KindOrder, Region: "us", Service: "fix",
				ClientOrderID: "F2", Outcome: simbroker.OutcomeDuplicate, PossDup: true})
		}, orderflow.InvRepeats, "F2", "PossDupFlag", nil},
		{"missed tick", func(h *orderflow.History) {
			h.Streams[0].Gaps, h.Streams[0].Missed, h.Streams[0].Messages = 1, 3, 77
		}, orderflow.InvStream, "", "tick(s) missed", nil},
		{"halt without NO_TARGET_AVAILABLE", func(h *orderflow.History) {
			h.Events = append(h.Events, pathdialer.Event{Kind: pathdialer.EventHalt, Time: at(2000), Cause: "test"})
		}, orderflow.InvHalt, "", "HALT at", func(s orderflow.Summary) int { return s.Halts }},
		{"halt after a reconcile failure without the word", func(h *orderflow.History) {
			// A halt after a reconcile failure whose cause does not say so is
			// still unexplained.
			h.Events = append(h.Events, pathdialer.Event{Kind: pathdialer.EventReconcileFailure, Time: at(1900), Attempt: 40},
				pathdialer.Event{Kind: pathdialer.EventHalt, Time: at(2000), Cause: "operator"})
		}, orderflow.InvHalt, "", "HALT at", nil},
		{"FIX sequence went back", func(h *orderflow.History) {
			h.FIX.Backward = 1
		}, orderflow.InvFIXSeq, "", "went back", nil},
		{"granted while held: refused as fenced", func(h *orderflow.History) {
			// R12's attempt began at 1000 ms, while submissions were held
			// (940–1100), and came back at 1005 ms refused because its
			// ticket's endpoint was fenced: it had a ticket, granted on a
			// held gate. Nothing reached the broker.
			h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "R12", Transport: "rest", PlacedAt: at(1000), AttemptAt: at(1000),
				NotSent:  "its endpoint was fenced before it left",
				Attempts: []orderflow.Attempt{{At: at(1000), Granted: at(1005)}}})
		}, orderflow.InvHeldGrant, "R12", "GRANTED WHILE HELD", nil},
		{"granted while held: seen by the broker before the reconcile succeeded", func(h *orderflow.History) {
			// F4 began at 1020 ms and reached the broker through us at 1040
			// ms, before the reconcile succeeded (1100): the gate opened
			// early, whatever the release event says.
			h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "F4", Transport: "fix", PlacedAt: at(1020), AttemptAt: at(1020),
				Sent: true, Acked: true, AckedAt: at(1200), AckEndpoint: "us", BookedRegion: "us",
				Attempts: []orderflow.Attempt{{At: at(1020), Sent: true, Endpoint: "us", Granted: at(1190)}}})
			bookIn(h, 1040, "us", "fix", "us/fix/1", "F4", simbroker.OutcomeNew)
			renumber(h)
		}, orderflow.InvHeldGrant, "F4", "the broker received it through us", nil},
		{"an unknown outcome the switch's reconcile missed", func(h *orderflow.History) {
			// R2's transport returned unknown at 910 ms, before the switch
			// (1000), but the switch's reconcile did not list it: the
			// hand-over from "in flight" to "unknown" lost it on the way.
			orderIn(h, "R2").Attempts[0].Granted = at(910)
			for i := range h.Events {
				if h.Events[i].Kind == pathdialer.EventReconcileStart {
					h.Events[i].Tickets = slices.DeleteFunc(slices.Clone(h.Events[i].Tickets), func(t pathdialer.TicketInfo) bool { return t.OrderID == "R2" })
				}
			}
		}, orderflow.InvHandedOver, "R2", "NOT HANDED OVER", nil},
		{"an unknown outcome the switch's reconcile missed, returned after the release", func(h *orderflow.History) {
			// R2's transport returned unknown only at 1200 ms, after the
			// release, but the broker had received it at 905 ms: it was
			// granted before the hold, so the switch's take had it.
			orderIn(h, "R2").Attempts[0].Granted = at(1200)
			for i := range h.Events {
				if h.Events[i].Kind == pathdialer.EventReconcileStart {
					h.Events[i].Tickets = slices.DeleteFunc(slices.Clone(h.Events[i].Tickets), func(t pathdialer.TicketInfo) bool { return t.OrderID == "R2" })
				}
			}
		}, orderflow.InvHandedOver, "R2", "NOT HANDED OVER", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := cleanHistory()
			tc.plant(&h)
			sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
			if sum.OK() {
				t.Fatalf("planted %s: the checker found nothing", tc.name)
			}
			found := false
			for _, f := range sum.Findings {
				if f.Invariant == tc.inv && f.Order == tc.order && strings.Contains(f.Text, tc.text) {
					found = true
				}
			}
			if !found {
				t.Errorf("planted %s: no I%d finding about %q containing %q; findings: %v", tc.name, tc.inv, tc.order, tc.text, sum.Violations)
			}
			if tc.count != nil && tc.count(sum) == 0 {
				t.Errorf("planted %s: the Summary's count of it is 0", tc.name)
			}
			for _, inv := range sum.Invariants {
				if inv.ID == tc.inv && inv.Violations == 0 {
					t.Errorf("planted %s: I%d reports no violation", tc.name, tc.inv)
				}
			}
			var out bytes.Buffer
			sum.Write(&out)
			if !strings.Contains(out.String(), "RESULT: FAILED") || !strings.Contains(out.String(), fmt.Sprintf("✗ I%d ", tc.inv)) {
				t.Errorf("planted %s: the written summary does not show it:\n%s", tc.name, out.String())
			}
		})
	}
}

// A late landing the library reported (a verdict that the order is booked
// through the fenced region, never a final NOT_RECEIVED before it) is
// counted, shown, and not a violation.
func TestCheckHistoryReportedLateLandingIsNotAViolation(t *testing.T) {
	h := cleanHistory()
	h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "F3", Transport: "fix", PlacedAt: at(935), AttemptAt: at(935),
		Sent: true, Unknown: true, Settled: true, Fate: pathdialer.FateFilled, SettledAt: at(1600),
		Attempts: []orderflow.Attempt{{At: at(935), Sent: true}},
		Verdicts: []orderflow.Verdict{{At: at(1100), Fate: pathdialer.FateNotReceived, Source: "reconcile"},
			{At: at(1600), Fate: pathdialer.FateFilled, Final: true, Region: "eu", Source: "late landing"}}})
	bookIn(&h, 1500, "eu", "fix", "eu/fix/1", "F3", simbroker.OutcomeNew)
	sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
	if !sum.OK() {
		t.Fatalf("a reported late landing is not a violation: %v", sum.Violations)
	}
	rep, unrep := sum.LateReported()
	if rep != 1 || unrep != 0 || sum.LateLandings[0].Order != "F3" || sum.LateLandings[0].Region != "eu" {
		t.Errorf("late landings %+v, want F3 on eu reported", sum.LateLandings)
	}
}

// Without a broker audit the checks that need it are not checked, and say so.
func TestCheckHistoryWithoutAudit(t *testing.T) {
	h := cleanHistory()
	h.Audit = nil
	sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
	if !sum.OK() {
		t.Fatalf("violations: %v", sum.Violations)
	}
	for _, inv := range sum.Invariants {
		// I12 reads the client's own record and the Path's events.
		want := inv.ID == orderflow.InvNoLoss || inv.ID == orderflow.InvHalt || inv.ID == orderflow.InvStream || inv.ID == orderflow.InvFIXSeq ||
			inv.ID == orderflow.InvHeldGrant || inv.ID == orderflow.InvHandedOver
		if inv.Checked != want {
			t.Errorf("I%d checked=%v (%s)", inv.ID, inv.Checked, inv.NotChecked)
		}
	}
}

// A copy the broker could not attribute to a relay connection ("direct:",
// the relay having forgotten a connection whose client side the fence
// closed) is judged by the attempt's time alone: sent before the fence, it
// is a late landing, not a second live path.
func TestCheckHistoryUnattributedConnectionIsJudgedByTheAttempt(t *testing.T) {
	h := cleanHistory()
	h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "R8", Transport: "rest", PlacedAt: at(935), AttemptAt: at(935),
		Sent: true, Unknown: true, Settled: true, Fate: pathdialer.FateFilled, SettledAt: at(1600),
		Attempts: []orderflow.Attempt{{At: at(935), Sent: true}},
		Verdicts: []orderflow.Verdict{{At: at(1600), Fate: pathdialer.FateFilled, Final: true, Region: "eu", Source: "late landing"}}})
	bookIn(&h, 1500, "eu", "rest", "direct:127.0.0.1:40000", "R8", simbroker.OutcomeNew)
	sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
	if !sum.OK() || sum.TwoLivePaths != 0 || len(sum.LateLandings) != 1 {
		t.Fatalf("violations %v, late landings %+v", sum.Violations, sum.LateLandings)
	}
}

// A halt the Path declares because the reconcile keeps failing is loud and
// named: a note, not a violation.
func TestCheckHistoryReconcileHaltIsNamed(t *testing.T) {
	h := cleanHistory()
	h.Events = append(h.Events, pathdialer.Event{Kind: pathdialer.EventReconcileFailure, Time: at(1900), Attempt: 40},
		pathdialer.Event{Kind: pathdialer.EventHalt, Time: at(2000), Cause: "reconcile of fix on \"us\" failed 40 times in a row"})
	sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
	if !sum.OK() || sum.Halts != 1 || !strings.Contains(strings.Join(sum.Notes, "\n"), "reconcile kept failing") {
		t.Fatalf("violations %v, halts %d, notes %v", sum.Violations, sum.Halts, sum.Notes)
	}
}

// A re-send that a final NOT_RECEIVED allowed can itself be in flight when a
// later fence begins and land late: that copy is the re-send, sent after the
// verdict, so the verdict (about the copies before it) was not wrong. It is a
// reported late landing, not one "after a final verdict".
func TestCheckHistoryLateResendIsNotAfterTheFinalVerdict(t *testing.T) {
	h := cleanHistory()
	h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "R9", Transport: "rest", PlacedAt: at(700), AttemptAt: at(930),
		Sent: true, Unknown: true, Settled: true, Fate: pathdialer.FateFilled, SettledAt: at(1600), Resent: 1,
		Attempts: []orderflow.Attempt{{At: at(700), Sent: true}, {At: at(930), Resend: true, Sent: true}},
		Verdicts: []orderflow.Verdict{{At: at(900), Fate: pathdialer.FateNotReceived, Final: true, Source: "re-query"},
			{At: at(1600), Fate: pathdialer.FateFilled, Final: true, Region: "eu", Source: "late landing"}}})
	bookIn(&h, 1500, "eu", "rest", "eu/rest/1", "R9", simbroker.OutcomeNew)
	sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
	if !sum.OK() {
		t.Fatalf("the late copy is the allowed re-send: %v", sum.Violations)
	}
	if rep, unrep := sum.LateReported(); rep != 1 || unrep != 0 || sum.LateLandings[0].AfterFinal {
		t.Errorf("late landings %+v, want R9 reported, not after a final verdict", sum.LateLandings)
	}
}

// A request the broker could not read (a body cut short: a copy held by a
// blackholed relay whose stream the client reset at the fence, delivered at
// the heal) names no order: two of them are not a repeated order.
func TestCheckHistoryUnreadableSubmissionsAreNotARepeat(t *testing.T) {
	h := cleanHistory()
	for _, ms := range []int{1500, 1501} {
		h.Audit = append(h.Audit, simbroker.Record{Seq: uint64(len(h.Audit) + 1), Time: at(ms), Kind: simbroker.KindOrder,
			Region: "eu", Service: "rest", ConnID: "eu/rest/1", Outcome: simbroker.OutcomeRejected, Detail: "bad JSON body"})
	}
	sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
	if !sum.OK() || sum.Repeats != 0 {
		t.Fatalf("two unreadable submissions were taken for a repeated order (%d repeats): %v", sum.Repeats, sum.Violations)
	}
}

// The Path's settle of unknown outcomes (From = To, Reason "settle unknown
// outcomes") does not hold submissions (pathdialer.Config.SettleUnknown): an
// order reaching the broker while it runs is not "released before reconcile".
func TestCheckHistorySettleOfUnknownOutcomesDoesNotHoldFlow(t *testing.T) {
	h := cleanHistory()
	h.Events = append(h.Events,
		pathdialer.Event{Kind: pathdialer.EventReconcileStart, Time: at(1300), From: "us", To: "us", Cause: "settle unknown outcomes",
			Tickets: []pathdialer.TicketInfo{{OrderID: "R6", Service: "rest", Endpoint: "us"}}},
		pathdialer.Event{Kind: pathdialer.EventReconcileSuccess, Time: at(1360), From: "us", To: "us", Cause: "settle unknown outcomes"})
	// R6: booked on us, its answer cut (unknown outcome), settled FILLED.
	h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "R6", Transport: "rest", PlacedAt: at(1280), AttemptAt: at(1280), Sent: true, Unknown: true,
		Settled: true, Fate: pathdialer.FateFilled, SettledAt: at(1360), Attempts: []orderflow.Attempt{{At: at(1280), Sent: true, Endpoint: "us"}},
		Verdicts: []orderflow.Verdict{{At: at(1360), Fate: pathdialer.FateFilled, Final: true, Region: "us", Source: "reconcile"}}})
	bookIn(&h, 1285, "us", "rest", "us/rest/1", "R6", simbroker.OutcomeCut)
	// R7: placed while the settle runs, booked before its lookup.
	h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "R7", Transport: "rest", PlacedAt: at(1305), AttemptAt: at(1305), Sent: true,
		Acked: true, AckedAt: at(1315), AckEndpoint: "us", BookedRegion: "us", Attempts: []orderflow.Attempt{{At: at(1305), Sent: true, Endpoint: "us"}}})
	bookIn(&h, 1310, "us", "rest", "us/rest/1", "R7", simbroker.OutcomeNew)
	h.Audit = append(h.Audit, simbroker.Record{Time: at(1350), Kind: simbroker.KindLookup, Region: "us", Service: "rest", ClientOrderID: "R6", Outcome: simbroker.OutcomeOK})
	renumber(&h)
	if sum := orderflow.CheckHistory(h, orderflow.CheckOptions{}); !sum.OK() {
		t.Fatalf("an order placed during a settle of unknown outcomes failed the check: %v", sum.Violations)
	}
}

// An attempt begun during a hold that waited for the release (granted
// after it) is not a grant while held, nor is one begun before the hold;
// a hold announced by a Report (the reporting goroutine's event can be
// stamped after the controller reopened the gate) starts no span.
func TestCheckHistoryGrantAfterReleaseIsNotHeld(t *testing.T) {
	h := cleanHistory()
	h.Orders = append(h.Orders,
		orderflow.OrderRecord{ClOrdID: "R20", Transport: "rest", PlacedAt: at(1000), AttemptAt: at(1000), Sent: true,
			Acked: true, AckedAt: at(1120), AckEndpoint: "us", BookedRegion: "us",
			Attempts: []orderflow.Attempt{{At: at(1000), Sent: true, Granted: at(1120)}}},
		orderflow.OrderRecord{ClOrdID: "R21", Transport: "rest", PlacedAt: at(2010), AttemptAt: at(2010), Sent: true,
			Acked: true, AckedAt: at(2020), AckEndpoint: "us", BookedRegion: "us",
			Attempts: []orderflow.Attempt{{At: at(2010), Sent: true, Granted: at(2020)}}})
	bookIn(&h, 1110, "us", "rest", "us/rest/1", "R20", simbroker.OutcomeNew)
	bookIn(&h, 2015, "us", "rest", "us/rest/1", "R21", simbroker.OutcomeNew)
	h.Events = append(h.Events, pathdialer.Event{Kind: pathdialer.EventHold, Time: at(2000), Endpoint: "us",
		Cause: `"us" is DOWN: held while the switch is decided`})
	renumber(&h)
	// R2 returned unknown before the switch and the switch's reconcile
	// listed it: handed over.
	orderIn(&h, "R2").Attempts[0].Granted = at(910)
	sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
	if !sum.OK() {
		t.Fatalf("violations: %v", sum.Violations)
	}
	// The same order granted 5 ms before the release event, with no
	// reconcile success to bound the opening, is within the margin.
	h.Events = slices.DeleteFunc(h.Events, func(e pathdialer.Event) bool { return e.Kind == pathdialer.EventReconcileSuccess })
	o := orderIn(&h, "R20")
	o.Attempts[0].Granted = at(1095)
	for i := range h.Audit {
		if h.Audit[i].ClientOrderID == "R20" {
			h.Audit[i].Time = at(1096)
		}
	}
	renumber(&h)
	if sum := orderflow.CheckHistory(h, orderflow.CheckOptions{}); !sum.OK() {
		t.Fatalf("within the margin: violations: %v", sum.Violations)
	}
	o.Attempts[0].At, o.Attempts[0].Granted = at(960), at(970)
	if sum := orderflow.CheckHistory(h, orderflow.CheckOptions{}); sum.OK() {
		t.Fatal("granted 130 ms before the release: not caught")
	}
}

// I13 judges every switch against the broker's record of its kill switch.
func TestCheckHistorySwitchBeforeKillSwitch(t *testing.T) {
	fence := func(ms int, region string, on bool) simbroker.Record {
		k := simbroker.KindRegionFenced
		if !on {
			k = simbroker.KindRegionUnfenced
		}
		return simbroker.Record{Time: at(ms), Kind: k, Region: region, Outcome: simbroker.OutcomeOK, Detail: "go api"}
	}
	for _, tc := range []struct {
		name   string
		fences []simbroker.Record
		want   string // "" = no violation
	}{
		{"fenced before the switch", []simbroker.Record{fence(958, "eu", true)}, ""},
		{"fenced after the switch", []simbroker.Record{fence(1003, "eu", true)}, "fenced it only at"},
		{"never fenced", nil, "never fenced it"},
		{"fence lifted before the switch", []simbroker.Record{fence(958, "eu", true), fence(990, "eu", false)}, "never fenced it"},
		{"another region fenced", []simbroker.Record{fence(958, "us", true)}, "never fenced it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := cleanHistory()
			h.BrokerFence = true
			h.Audit = append(h.Audit, tc.fences...)
			renumber(&h)
			sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
			var got []orderflow.Finding
			for _, f := range sum.Findings {
				if f.Invariant == orderflow.InvFenceFirst {
					got = append(got, f)
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Fatalf("violations: %v", sum.Violations)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0].Text, tc.want)):
				t.Fatalf("want one I13 finding containing %q, got %v", tc.want, sum.Violations)
			}
		})
	}
	// Without a kill switch the check is not made.
	h := cleanHistory()
	sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
	for _, inv := range sum.Invariants {
		if inv.ID == orderflow.InvFenceFirst && inv.Checked {
			t.Error("I13 checked without a broker kill switch")
		}
	}
}

// I14 judges a failback against the faults the run injected.
func TestCheckHistoryFailbackAgainstInjectedFaults(t *testing.T) {
	rule := orderflow.FailbackRule{Cooldown: 2 * time.Second, Successes: 10, ProbeInterval: 300 * time.Millisecond,
		ProbeJitter: 20 * time.Millisecond, ProbeTimeout: 250 * time.Millisecond}
	// The clean history's failover (hold 940, switch 1000) followed by a
	// failback to eu at failbackMs.
	withFailback := func(failbackMs int, cause string) orderflow.History {
		h := cleanHistory()
		h.Failback = rule
		h.Events = append(h.Events,
			pathdialer.Event{Kind: pathdialer.EventHold, Time: at(failbackMs - 20), Cause: "failback"},
			pathdialer.Event{Kind: pathdialer.EventFenceStart, Time: at(failbackMs - 10), Endpoint: "us"},
			pathdialer.Event{Kind: pathdialer.EventFenceSuccess, Time: at(failbackMs - 5), Endpoint: "us"},
			pathdialer.Event{Kind: pathdialer.EventSwitch, Time: at(failbackMs), From: "us", To: "eu", Token: 2, Cause: cause},
			pathdialer.Event{Kind: pathdialer.EventRelease, Time: at(failbackMs + 10), Endpoint: "eu", Token: 2})
		return h
	}
	blackhole := func(fromMs, toMs int) orderflow.Fault {
		return orderflow.Fault{Region: "eu", Kind: "blackhole", At: at(fromMs), Recovered: at(toMs), FailsProbe: true, FailsTradePath: true}
	}
	for _, tc := range []struct {
		name       string
		failbackMs int
		faults     []orderflow.Fault
		want       string
		cause      string // the switch's cause; "" = failback
	}{
		{"after cooldown and stability", 5000, []orderflow.Fault{blackhole(500, 1500)}, "", ""},
		{"within cooldown of the failure", 2000, []orderflow.Fault{blackhole(500, 1500)}, "WITHIN COOLDOWN", ""},
		{"too soon after the heal", 3000, []orderflow.Fault{blackhole(500, 2800)}, "COULD BE STABLE", ""},
		{"while the failure is armed", 3000, []orderflow.Fault{{Region: "eu", Kind: "down", At: at(500), FailsProbe: true, FailsTradePath: true}}, "still armed", ""},
		// A probe-only partition: the trade path's answers may count.
		{"soon after a probe-only failure", 3000, []orderflow.Fault{{Region: "eu", Kind: "partition", At: at(500), Recovered: at(2800), FailsProbe: true}}, "", ""},
		// A fault on the backup says nothing about the primary.
		{"a fault elsewhere", 3000, []orderflow.Fault{{Region: "us", Kind: "down", At: at(500), Recovered: at(2900), FailsProbe: true, FailsTradePath: true}}, "", ""},
		// A failover to the primary (the backup went DOWN) is never gated.
		{"a failover to the primary", 2000, []orderflow.Fault{blackhole(500, 1990)}, "", "failover"},
		// With a trade-path check the primary's answers come two a round
		// (the probe's and the check's): 10 in a row take 5 rounds, not 10.
		{"two answers a round, 1.23 s after the heal", 4031, []orderflow.Fault{blackhole(500, 2800)}, "", "failback+check"},
		{"two answers a round, 0.3 s after the heal", 3100, []orderflow.Fault{blackhole(500, 2800)}, "COULD BE STABLE", "failback+check"},
		// A flap's probe answers between its phases (and through blackhole
		// phases shorter than the probe's timeout): its end is no heal the
		// answers in a row start from. Its cooldown still holds.
		{"soon after a flap ended", 3100, []orderflow.Fault{{Region: "eu", Kind: "flap", At: at(500), Recovered: at(2800), FailsProbe: true, FailsTradePath: true}}, "", ""},
		{"within cooldown of a flap", 2000, []orderflow.Fault{{Region: "eu", Kind: "flap", At: at(500), Recovered: at(1900), FailsProbe: true, FailsTradePath: true}}, "WITHIN COOLDOWN", ""},
		// A fault armed less than one probe round (ProbeInterval +
		// ProbeJitter + ProbeTimeout: 570 ms here) before the failback
		// could not have failed a probe by then: the failback was decided
		// on the answers before it, and is no early failback (leaving again
		// is judged by the detection it needs, not here). Armed a whole
		// round before, it could have been seen.
		{"a down fault armed 183 ms before the failback", 3000, []orderflow.Fault{{Region: "eu", Kind: "down", At: at(2817), Recovered: at(4200), FailsProbe: true, FailsTradePath: true}}, "", ""},
		{"a down fault armed a probe round before the failback", 3000, []orderflow.Fault{{Region: "eu", Kind: "down", At: at(2400), Recovered: at(4200), FailsProbe: true, FailsTradePath: true}}, "still armed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cause := tc.cause
			check := false
			if cause == "failback+check" {
				cause, check = "", true
			}
			if cause == "" {
				cause = "failback"
			}
			h := withFailback(tc.failbackMs, cause)
			h.Failback.TradePathCheck = check
			sum := orderflow.CheckHistory(h, orderflow.CheckOptions{Faults: tc.faults})
			var got []orderflow.Finding
			for _, f := range sum.Findings {
				if f.Invariant == orderflow.InvFailback {
					got = append(got, f)
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Fatalf("violations: %v", sum.Violations)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0].Text, tc.want)):
				t.Fatalf("want one I14 finding containing %q, got %v", tc.want, sum.Violations)
			}
		})
	}
}

// I16 judges the local fence from the network's record of the connections.
func TestCheckHistoryFenceClosesOrderConnections(t *testing.T) {
	conn := func(id, svc string, openedMs, closedMs int, by string) simbroker.Connection {
		c := simbroker.Connection{Region: "eu", Service: simbroker.Service(svc), ConnID: id}
		c.Opened = at(openedMs)
		if closedMs > 0 {
			c.Closed, c.ClosedBy = at(closedMs), by
		}
		return c
	}
	for _, tc := range []struct {
		name string
		c    simbroker.Connection
		want bool
	}{
		{"closed by the fence", conn("eu/rest/1", "rest", 50, 952, "client"), false},
		{"left open", conn("eu/rest/1", "rest", 50, 0, ""), true},
		{"closed only seconds later", conn("eu/fix/1", "fix", 50, 3000, "client"), true},
		{"closed by the fence under a blackhole that passed the close on seconds later", func() simbroker.Connection {
			c := conn("eu/fix/1", "fix", 50, 3000, "client")
			c.EndSeen = at(952)
			return c
		}(), false},
		{"its end seen only seconds later", func() simbroker.Connection {
			c := conn("eu/fix/1", "fix", 50, 3000, "client")
			c.EndSeen = at(2900)
			return c
		}(), true},
		{"closed by a fault before the fence", conn("eu/rest/1", "rest", 50, 900, "fault"), false},
		{"carried no order (a health check's own)", conn("eu/rest/9", "rest", 50, 0, ""), false},
		{"opened as the fence began", conn("eu/rest/1", "rest", 900, 0, ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := cleanHistory()
			sum := orderflow.CheckHistory(h, orderflow.CheckOptions{Connections: []simbroker.Connection{tc.c}})
			n := 0
			for _, f := range sum.Findings {
				if f.Invariant == orderflow.InvFenceCloses {
					n++
				}
			}
			if got := n > 0; got != tc.want {
				t.Fatalf("violation %v, want %v: %v", got, tc.want, sum.Violations)
			}
		})
	}
}

// A halt the Path declares because the dead-man timer cannot be armed on the
// endpoint a switch goes to (it holds, then halts, rather than fence the old
// path with no armed timer) is loud and named: a note, not a violation. The
// same cause with no failed arm before it is still a violation.
func TestCheckHistoryDeadManHaltIsNamed(t *testing.T) {
	deadManHalt := pathdialer.Event{Kind: pathdialer.EventHalt, Time: at(2000),
		Cause: `dead-man timer not armed on "us", 5 attempts in a row (retrying; the old path is not fenced before it is)`}
	t.Run("after failed arms", func(t *testing.T) {
		h := cleanHistory()
		for i := 1; i <= 5; i++ {
			h.Events = append(h.Events, pathdialer.Event{Kind: pathdialer.EventDeadManFailure, Time: at(1500 + 100*i), Endpoint: "us", From: "eu", To: "us", Attempt: i})
		}
		h.Events = append(h.Events, deadManHalt)
		sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
		if !sum.OK() || sum.Halts != 1 || !strings.Contains(strings.Join(sum.Notes, "\n"), "dead-man timer could not be armed") {
			t.Fatalf("violations %v, halts %d, notes %v", sum.Violations, sum.Halts, sum.Notes)
		}
	})
	t.Run("armed before the halt", func(t *testing.T) {
		h := cleanHistory()
		h.Events = append(h.Events,
			pathdialer.Event{Kind: pathdialer.EventDeadManFailure, Time: at(1600), Endpoint: "us", Attempt: 1},
			pathdialer.Event{Kind: pathdialer.EventDeadManArmed, Time: at(1700), Endpoint: "us", Attempt: 2},
			deadManHalt)
		sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
		if sum.OK() || sum.Findings[0].Invariant != orderflow.InvHalt {
			t.Fatalf("want an I7 violation, got %v", sum.Violations)
		}
	})
}
