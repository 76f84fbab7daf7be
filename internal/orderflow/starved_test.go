package orderflow_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// starvedHistory is cleanHistory continued on a starved host: on us, its
// probes time out while the broker keeps booking orders through us (R10 at
// 2050 ms, R12 at 2900 ms), so the Path halts twice for want of a target
// (2200 ms, 3000 ms) with a short release between (2600 ms); R11, sent on us
// at 2150 ms, finished unknown and was not settled when the run ended
// (3500 ms). The reconcile's bound is 5 s: R11 never had it.
func starvedHistory() orderflow.History {
	h := cleanHistory()
	h.End = at(3500)
	h.Judge = orderflow.JudgeTiming{SettleBound: 5 * time.Second}
	probeTimeout := errString("pathdialer: probe timed out after 250 ms: context deadline exceeded")
	noTarget := &engine.Decision{Outcome: engine.NoTargetAvailable, From: "us"}
	h.Events = append(h.Events,
		pathdialer.Event{Kind: pathdialer.EventProbe, Time: at(2000), Endpoint: "us", Err: probeTimeout},
		pathdialer.Event{Kind: pathdialer.EventStateChange, Time: at(2000), Endpoint: "us", PrevState: engine.Healthy, State: engine.Degraded},
		pathdialer.Event{Kind: pathdialer.EventStateChange, Time: at(2190), Endpoint: "us", PrevState: engine.Degraded, State: engine.Down},
		pathdialer.Event{Kind: pathdialer.EventDecision, Time: at(2200), Decision: noTarget},
		pathdialer.Event{Kind: pathdialer.EventHalt, Time: at(2200), Endpoint: "us", Cause: "no eligible target"},
		pathdialer.Event{Kind: pathdialer.EventStateChange, Time: at(2500), Endpoint: "us", PrevState: engine.Down, State: engine.Healthy},
		pathdialer.Event{Kind: pathdialer.EventResume, Time: at(2500), Endpoint: "us"},
		pathdialer.Event{Kind: pathdialer.EventHold, Time: at(2500), Endpoint: "us", Cause: "resuming"},
		pathdialer.Event{Kind: pathdialer.EventReconcileSuccess, Time: at(2600), From: "us", To: "us"},
		pathdialer.Event{Kind: pathdialer.EventRelease, Time: at(2600), Endpoint: "us", Token: 1},
		pathdialer.Event{Kind: pathdialer.EventProbe, Time: at(2800), Endpoint: "us", Err: probeTimeout},
		pathdialer.Event{Kind: pathdialer.EventStateChange, Time: at(2800), Endpoint: "us", PrevState: engine.Healthy, State: engine.Degraded},
		pathdialer.Event{Kind: pathdialer.EventDecision, Time: at(3000), Decision: noTarget},
		pathdialer.Event{Kind: pathdialer.EventHalt, Time: at(3000), Endpoint: "us", Cause: "no eligible target"},
	)
	acked := func(id string, sentMs, ackMs int) orderflow.OrderRecord {
		return orderflow.OrderRecord{ClOrdID: id, Transport: "rest", PlacedAt: at(sentMs), AttemptAt: at(sentMs), Sent: true,
			Acked: true, AckedAt: at(ackMs), AckEndpoint: "us", BookedRegion: "us",
			Attempts: []orderflow.Attempt{{At: at(sentMs), Sent: true, Endpoint: "us"}}}
	}
	h.Orders = append(h.Orders, acked("R10", 2040, 2060), acked("R12", 2890, 2910),
		orderflow.OrderRecord{ClOrdID: "R11", Transport: "rest", PlacedAt: at(2150), AttemptAt: at(2150), Sent: true, Unknown: true,
			Attempts: []orderflow.Attempt{{At: at(2150), Sent: true, Endpoint: "us"}}})
	bookIn(&h, 2050, "us", "rest", "us/rest/2", "R10", simbroker.OutcomeNew)
	bookIn(&h, 2900, "us", "rest", "us/rest/2", "R12", simbroker.OutcomeNew)
	renumber(&h)
	return h
}

type errString string

func (e errString) Error() string { return string(e) }

func write(s orderflow.Summary) string {
	var b bytes.Buffer
	s.Write(&b)
	return b.String()
}

// On a starved host an order still unsettled when the run ended, which
// never had the reconcile's bound of open flow, is INCONCLUSIVE, with the
// run's figures, and never printed LOST.
func TestCheckHistoryStarvedHostIsInconclusiveNotLost(t *testing.T) {
	sum := orderflow.CheckHistory(starvedHistory(), orderflow.CheckOptions{})
	out := write(sum)
	if !sum.OK() || !sum.Undecided() {
		t.Fatalf("OK=%v Undecided=%v, violations %v\n%s", sum.OK(), sum.Undecided(), sum.Violations, out)
	}
	if len(sum.Inconclusive) != 1 || sum.Inconclusive[0].Order != "R11" || sum.Inconclusive[0].Invariant != orderflow.InvNoLoss {
		t.Errorf("inconclusive %+v, want R11 under I2", sum.Inconclusive)
	}
	if st := sum.Starved; st == nil || st.Halts != 2 || st.ProbeTimeouts != 2 || st.Bound != 5*time.Second || st.LongestOpen != 400*time.Millisecond {
		t.Errorf("starvation figures %+v, want 2 halts, 2 probe timeouts, bound 5s, longest open 400ms", st)
	}
	if tr := sum.Transport("rest"); tr.Lost != 0 || tr.Inconclusive != 1 || sum.Losses != 0 {
		t.Errorf("rest lost %d, inconclusive %d, losses %d; want 0, 1, 0", tr.Lost, tr.Inconclusive, sum.Losses)
	}
	for _, want := range []string{"RESULT: INCONCLUSIVE: this host was too starved to judge (2 halt(s) for want of a target while the broker was answering", "? I2 INCONCLUSIVE: rest order R11"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	if strings.Contains(out, "LOST") || strings.Contains(out, "RESULT: OK") || strings.Contains(out, "RESULT: FAILED") {
		t.Errorf("a starved run printed LOST, OK or FAILED:\n%s", out)
	}
}

// The teeth stay: the same unsettled order is LOST when the host was not
// starved (an outage: the broker answered nothing through us once it began
// failing), when it had the reconcile's full bound of open flow after its
// attempt, or when the record has no timing to judge by.
func TestCheckHistoryUnsettledOrderIsLostUnlessStarved(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(h *orderflow.History)
	}{
		{"outage, not starvation", func(h *orderflow.History) {
			h.Audit = h.Audit.Filter(func(r simbroker.Record) bool { return r.ClientOrderID != "R10" && r.ClientOrderID != "R12" })
			for _, id := range []string{"R10", "R12"} {
				o := orderIn(h, id)
				o.Acked, o.AckEndpoint, o.BookedRegion, o.Sent = false, "", "", false
			}
		}},
		{"full bound of open flow", func(h *orderflow.History) {
			h.End = at(2600 + 5000)
			h.Events = h.Events[:len(h.Events)-2] // no second halt: open from 2600 ms to the end
		}},
		{"no timing", func(h *orderflow.History) { h.Judge = orderflow.JudgeTiming{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := starvedHistory()
			tc.edit(&h)
			sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
			out := write(sum)
			if sum.OK() || sum.Undecided() || len(sum.Inconclusive) != 0 {
				t.Fatalf("OK=%v Undecided=%v inconclusive %v\n%s", sum.OK(), sum.Undecided(), sum.Inconclusive, out)
			}
			if len(sum.Findings) != 1 || sum.Findings[0].Order != "R11" || sum.Findings[0].Invariant != orderflow.InvNoLoss || sum.Losses != 1 {
				t.Errorf("findings %v, losses %d; want R11 LOST", sum.Violations, sum.Losses)
			}
			if !strings.Contains(out, "✗ I2 LOST: rest order R11") || !strings.Contains(out, "RESULT: FAILED") {
				t.Errorf("output lacks the loss:\n%s", out)
			}
		})
	}
}
