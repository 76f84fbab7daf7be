package dst

import (
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// moveCut is one broker unknown-outcome fault a liveness move set
// (MoveLookup5xx, MoveHaltUnknown, MoveSettleHang): the broker cuts the answer of the next
// n orders through the region's REST door. The move owns those cuts only
// while it runs: when fewer than n orders reached the region before flow
// left it, the move's end disarms what is left (endMoveUnknown), so that no
// later order, after a failback seconds or minutes on, is cut by a fault no
// move meant for it.
type moveCut struct {
	region   string
	set, end time.Time // end zero: the move never ended
	n        int
	span     int  // its span in cx.spans (armN)
	setIdx   int  // its brokerSet in cx.brokerSets
	cleared  bool // the move's end disarmed cuts still armed
	skipped  bool // cuts were left but another fault shared the door: not cleared
	leftover int  // cuts still armed at the end, as the broker described them
}

// armMoveUnknown sets the move's unknown-outcome fault of n orders on
// region's REST door, records it (brokerFault, armN) and returns its index
// for endMoveUnknown.
func (w *world) armMoveUnknown(region string, n int) int {
	w.brokerFault(region, simbroker.REST, simbroker.UnknownOutcome{N: n})
	w.armN(region, spanUnknown, n)
	return w.moveCutSet(region, n)
}

// moveCutSet records, as a move cut for endMoveUnknown, the unknown-outcome
// fault of n orders just set on region's REST door (the last broker set)
// and the span just armed for it (the last span: armN's, or a span the move
// ends itself, as MoveSettleHang's).
func (w *world) moveCutSet(region string, n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cx.moveCuts = append(w.cx.moveCuts, moveCut{region: region, set: time.Now(), n: n, span: len(w.cx.spans) - 1, setIdx: len(w.cx.brokerSets) - 1})
	return len(w.cx.moveCuts) - 1
}

// endMoveUnknown ends move cut i now: what is left of its unknown-outcome
// fault is disarmed on the broker (recorded as a None set on the region's
// REST door, so the record of faults in force ends it here too) and its
// span ends at the same moment. It disarms nothing when the fault cut all
// its orders, when a later fault was set on the same door (that fault's own
// to end), or when another application fault shares the door (a None would
// end it too; counted, traced).
func (w *world) endMoveUnknown(i int) {
	now := time.Now()
	w.mu.Lock()
	mc := &w.cx.moveCuts[i]
	mc.end = now
	later := false
	for _, b := range w.cx.brokerSets[mc.setIdx+1:] {
		if b.region == mc.region && b.svc == simbroker.REST {
			later = true
		}
	}
	w.mu.Unlock()
	if later {
		return
	}
	var left int
	others := false
	for _, d := range w.b.Faults()[mc.region][simbroker.REST] {
		if k, ok := strings.CutPrefix(d, "unknown-outcome(n="); ok {
			for _, c := range strings.TrimSuffix(k, ")") {
				left = 10*left + int(c-'0')
			}
			continue
		}
		others = true
	}
	if left == 0 {
		return
	}
	w.mu.Lock()
	mc = &w.cx.moveCuts[i]
	mc.leftover = left
	if others {
		mc.skipped = true
		w.mu.Unlock()
		w.tracef(now, "move unknown-outcome on %s: %d cuts left armed (another fault shares the door)", mc.region, left)
		return
	}
	mc.cleared = true
	w.cx.spans[mc.span].cleared = now
	w.mu.Unlock()
	w.brokerFault(mc.region, simbroker.REST, simbroker.None{})
	w.tracef(now, "move unknown-outcome on %s: %d of %d cuts left disarmed", mc.region, left, mc.n)
}

// moveCutFigures counts, over the run's move cuts, the broker's cuts that
// fired after their move had ended (each attributed to the fault in force
// on the door: from its set to the next set there, at most n), and the
// cuts the moves' ends disarmed (w.mu held).
func (w *world) moveCutFigures(audit []simbroker.Record) (late, disarmed, skipped int) {
	for _, mc := range w.cx.moveCuts {
		if mc.cleared {
			disarmed += mc.leftover
		}
		if mc.skipped {
			skipped += mc.leftover
		}
		if mc.end.IsZero() {
			continue
		}
		var until time.Time
		for _, b := range w.cx.brokerSets[mc.setIdx+1:] {
			if b.region == mc.region && b.svc == simbroker.REST {
				until = b.at
				break
			}
		}
		n := 0
		for _, r := range audit {
			if r.Kind != simbroker.KindOrder || r.Outcome != simbroker.OutcomeCut || r.Region != mc.region || r.Service != string(simbroker.REST) {
				continue
			}
			if r.Time.Before(mc.set) || (!until.IsZero() && !r.Time.Before(until)) || n >= mc.n {
				continue
			}
			n++
			if !r.Time.Before(mc.end) {
				late++
			}
		}
	}
	return late, disarmed, skipped
}
