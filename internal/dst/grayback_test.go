package dst

import (
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// no-failback-onto-failing-orders has teeth: flow leaves eu after the
// broker refused FailureThreshold (2) orders through it (at 250 and 260 ms;
// a Partial fault in force from 200 ms) and comes back while the same fault is still in force: caught. The same return
// after the fault was cleared, a return when flow left eu before the fault
// began, and a first switch to an endpoint whose orders fail (the Path could
// not know) are not.
func TestGrayFailbackCheckFindsReturnOntoFailingOrders(t *testing.T) {
	gates := func(backAt int) []gateRec {
		return []gateRec{
			{at: at(300), kind: pathdialer.EventHold, seq: 1},
			{at: at(320), kind: pathdialer.EventSwitch, from: "eu", to: "us", cause: "failover", seq: 2},
			{at: at(330), kind: pathdialer.EventRelease, seq: 3},
			{at: at(backAt - 20), kind: pathdialer.EventHold, seq: 4},
			{at: at(backAt), kind: pathdialer.EventSwitch, from: "us", to: "eu", cause: "failback", seq: 5},
			{at: at(backAt + 10), kind: pathdialer.EventRelease, seq: 6},
		}
	}
	refused := map[string][]time.Time{"eu": {at(250), at(260)}}
	judgeRefused := func(g []gateRec, spans []span, refused map[string][]time.Time) []string {
		var out []string
		judgeGrayFailback(t0, g, spans, refused, 2, func(inv, format string, a ...any) { out = append(out, inv) })
		return out
	}
	judge := func(g []gateRec, spans []span) []string { return judgeRefused(g, spans, refused) }
	partial := func(from, to int) span {
		s := span{region: "eu", kind: spanGray, from: at(from)}
		if to > 0 {
			s.to = at(to)
		}
		return s
	}
	// Planted: back at 2 s while the refusal set at 200 ms is in force
	// (cleared at 5 s, or never).
	wantOnly(t, judge(gates(2000), []span{partial(200, 5000)}), InvFailbackOntoFailing)
	wantOnly(t, judge(gates(2000), []span{partial(200, 0)}), InvFailbackOntoFailing)
	// Back after the refusal was cleared.
	wantNone(t, judge(gates(6000), []span{partial(200, 5000)}))
	// The refusal began after flow had left eu (a first switch onto it
	// would be a failover the Path could not judge; here it returns).
	wantNone(t, judge(gates(2000), []span{partial(400, 5000)}))
	// Another region's refusal, and a net outage of eu, are not judged here.
	wantNone(t, judge(gates(2000), []span{{region: "us", kind: spanGray, from: at(200)}, {region: "eu", kind: spanNet, from: at(200), to: at(5000)}}))
	// No switch away from eu before: a failover onto it.
	wantNone(t, judge(gates(2000)[3:], []span{partial(200, 5000)}))
	// The broker refused no order through eu before flow left it (it left
	// for another reason: the Path never saw the refusal), or only before
	// the refusal began (another fault's).
	wantNone(t, judgeRefused(gates(2000), []span{partial(200, 5000)}, nil))
	wantNone(t, judgeRefused(gates(2000), []span{partial(200, 5000)}, map[string][]time.Time{"eu": {at(150), at(250), at(400)}, "us": {at(250), at(260)}}))
	// One order refused (below FailureThreshold 2): the probe's failures
	// took eu out, an outage its success ends.
	wantNone(t, judgeRefused(gates(2000), []span{partial(200, 5000)}, map[string][]time.Time{"eu": {at(250)}}))
}
