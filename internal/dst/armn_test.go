package dst

import (
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// A liveness move's unknown-outcome fault (armN: halt-with-unknown,
// lookup-5xx) stays armed on the broker until it cut its N orders, however
// long that takes: when the move's own orders never reach the broker, the
// first order through the region seconds later is cut. The composed
// invariants must see that fault armed at that cut (seed 241: the resend of
// an unknown order through eu was cut 9 s after halt-with-unknown armed two
// cuts there, eu went DOWN on that REST failure, and
// stream-evidence-alone-moves-no-order read it as only eu's WebSocket
// address failing, from a record that ended the fault after two seconds).
// After the N-th cut it is no longer armed.
func TestMoveUnknownFaultArmedUntilItsCuts(t *testing.T) {
	w := &world{}
	w.armN("eu", spanUnknown, 2)
	w.arm("eu", spanWS) // armed to the end
	from := w.cx.spans[0].from
	cut1 := from.Add(9 * time.Second)
	cut2 := from.Add(11 * time.Second)
	rec := func(at time.Time, region string, out simbroker.Outcome) simbroker.Record {
		return simbroker.Record{Time: at, Kind: simbroker.KindOrder, Region: region, Service: string(simbroker.REST), Outcome: out}
	}
	audit := []simbroker.Record{
		rec(from.Add(time.Second), "eu", simbroker.OutcomeNew),
		rec(from.Add(2*time.Second), "us", simbroker.OutcomeCut), // another region's cut does not count
		rec(cut1, "eu", simbroker.OutcomeCut),
		rec(cut2, "eu", simbroker.OutcomeCut),
	}
	armedUntilCut(w.cx.spans, audit)
	at := func(t0 time.Time) map[string]bool { return w.spansOn("eu", t0.Add(-time.Millisecond), t0) }
	if k := at(cut1); !k[spanUnknown] || !k[spanWS] {
		t.Errorf("at the first cut, 9 s after the move armed it, eu has %v armed; want the unknown-outcome fault and the WebSocket fault", k)
	}
	if k := at(cut2); !k[spanUnknown] {
		t.Errorf("at the second (last) cut eu has %v armed; want the unknown-outcome fault", k)
	}
	if k := at(cut2.Add(time.Second)); k[spanUnknown] {
		t.Errorf("a second after the last of its 2 cuts eu has %v armed; want no unknown-outcome fault", k)
	}
}
