package orderflow

import (
	"fmt"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// A host too starved to judge. On a crowded machine (a race-instrumented
// build beside other work) probes to a server that answers can time out, the
// Path then halts for want of a target, and each halt supersedes the
// reconcile in progress: an order can still be unanswered and unsettled when
// the run ends without anything being lost. The checker tells that apart
// from a loss with the run's own record, and only where both hold:
//
//   - the host was starved: at least one halt for want of a target came while
//     the broker was answering orders through the halted endpoint's region
//     (its audit has an order through that region after the endpoint left
//     HEALTHY and before the halt: the server answered, its probes did not;
//     an outage stops the answers before the probes fail);
//   - the order never had the reconcile's bound of open flow: after its last
//     attempt began, the gate never stayed open (no hold, no halt) for
//     JudgeTiming.SettleBound before the run ended.
//
// Such an order is INCONCLUSIVE, not LOST (nor an unreported late landing
// or a client/book mismatch): the summary lists it with the figures and the
// demo exits with its own status. An order that had its full bound, or any
// order of a run with no such halt, is judged as before.

// JudgeTiming is what the checker needs of the configuration to tell a loss
// from a starved host. The zero value turns the distinction off: every
// unsettled order is a loss.
type JudgeTiming struct {
	// SettleBound is how long after an order's attempt began, with flow open
	// throughout, its settlement is due: OrderTimeout (until its unknown
	// outcome) + SettleUnknown + ProbeInterval (the settle starts at the
	// next evaluation) + ReconcileTimeout.
	SettleBound time.Duration
}

// Starvation is the run's record of a host too starved to judge.
type Starvation struct {
	// Halts counts halts for want of a target while the broker answered
	// orders through the halted endpoint's region; ProbeTimeouts the probes
	// that timed out over the run.
	Halts, ProbeTimeouts int
	// Bound is JudgeTiming.SettleBound; LongestOpen the longest the gate
	// stayed open after the first such halt.
	Bound, LongestOpen time.Duration
}

// String renders the figures.
func (s Starvation) String() string {
	return fmt.Sprintf("%d halt(s) for want of a target while the broker was answering orders through the halted endpoint's region; %d probe(s) timed out; after the first such halt the gate stayed open at most %s at a stretch, short of the reconcile's bound of %s",
		s.Halts, s.ProbeTimeouts, human(s.LongestOpen), human(s.Bound))
}

// span is an interval of open flow.
type span struct{ start, end time.Time }

// starvation computes the record's starvation figures and the spans of open
// flow; it leaves ck.starved nil when the host was not found starved.
func (ck *checker) starvation() {
	h := ck.h
	jt := h.Judge
	if jt.SettleBound <= 0 || h.Audit == nil {
		return
	}
	end := h.End
	for _, e := range h.Events {
		if e.Time.After(end) {
			end = e.Time
		}
	}
	// Open flow: from the start until a hold or halt, again from each full
	// release.
	open, from := true, h.Start
	var lastDecision *engine.Decision
	var firstStarved time.Time
	failing := map[string]time.Time{} // endpoint → when it left HEALTHY
	st := Starvation{Bound: jt.SettleBound}
	orders := h.Audit.Orders()
	for _, e := range h.Events {
		switch e.Kind {
		case pathdialer.EventProbe:
			if e.Err != nil && strings.Contains(e.Err.Error(), "timed out") {
				st.ProbeTimeouts++
			}
		case pathdialer.EventStateChange:
			switch {
			case e.State == engine.Healthy:
				delete(failing, e.Endpoint)
			case e.PrevState == engine.Healthy || failing[e.Endpoint].IsZero():
				failing[e.Endpoint] = e.Time
			}
		case pathdialer.EventDecision:
			lastDecision = e.Decision
		case pathdialer.EventHold, pathdialer.EventHalt:
			if open {
				ck.open = append(ck.open, span{from, e.Time})
				open = false
			}
			if e.Kind != pathdialer.EventHalt || lastDecision == nil || lastDecision.Outcome != engine.NoTargetAvailable {
				break
			}
			since, ok := failing[e.Endpoint]
			if !ok {
				break
			}
			region := ck.regionOf[e.Endpoint]
			for _, r := range orders {
				if r.Region == region && !r.Time.Before(since) && !r.Time.After(e.Time) {
					st.Halts++
					if firstStarved.IsZero() {
						firstStarved = e.Time
					}
					break
				}
			}
		case pathdialer.EventRelease:
			if e.Service == "" && !open {
				open, from = true, e.Time
			}
		}
	}
	if open {
		ck.open = append(ck.open, span{from, end})
	}
	if st.Halts == 0 {
		return
	}
	for _, sp := range ck.open {
		if !sp.start.Before(firstStarved) {
			st.LongestOpen = max(st.LongestOpen, sp.end.Sub(sp.start))
		}
	}
	ck.starved = &st
}

// inconclusive reports whether o, still unanswered or unsettled, belongs to
// a host too starved to judge: the host was starved and, after o's last
// attempt began, the gate never stayed open for the reconcile's bound.
func (ck *checker) inconclusive(o *OrderRecord) bool {
	if ck.starved == nil {
		return false
	}
	var last time.Time
	for _, a := range attempts(o) {
		if a.Sent {
			last = a.At
		}
	}
	if last.IsZero() {
		return false
	}
	for _, sp := range ck.open {
		if sp.start.Before(last) {
			sp.start = last
		}
		if sp.end.Sub(sp.start) >= ck.starved.Bound {
			return false
		}
	}
	return true
}

// undecided records, instead of a violation of inv, that o belongs to a host
// too starved to judge (what: what is not known yet of it).
func (ck *checker) undecided(inv int, o *OrderRecord, what string) {
	ck.sum.Inconclusive = append(ck.sum.Inconclusive, Finding{Invariant: inv, Order: o.ClOrdID,
		Text: fmt.Sprintf("INCONCLUSIVE: %s order %s %s when the run ended; the gate never stayed open the reconcile's bound (%s) after its last attempt, on a starved host", o.Transport, o.ClOrdID, what, human(ck.starved.Bound))})
}
