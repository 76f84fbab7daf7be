package dst

import (
	"fmt"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// InvFailbackOntoFailing: no switch back to an endpoint that flow left after
// the broker had refused FailureThreshold orders through it for a gray failure (its Partial
// fault: orders answered 503, the probe and reads 200), while that same
// refusal is still in force. Judged from ground truth alone: the faults the
// sim set on the broker and the network (orderPathSpans: the last one set is
// in force, whatever span the move recorded) and the broker's book (the
// refused orders), against the Path's switches; nothing the Path says about
// the endpoint's health counts. The Path saw orders fail there, and a
// trade-path check that exercises the order path (Config.TradePathCheck)
// fails as long as they do, so nothing it knows can bring flow back before
// the refusal ends. Judged in composed seeds with Config.TradePathCheck; in
// seeds with rest.Reconciler's offered check (a lookup, which passes during
// such a failure: the Path cannot tell it from a recovery) such a switch is
// a note.
const InvFailbackOntoFailing = "no-failback-onto-failing-orders"

// judgeGrayFailback reports every switch to an endpoint e whose orders the
// broker refused (a spanGray of spans, from orderPathSpans, in force at the
// switch) when flow had left e at a switch during that same refusal, after
// the broker refused threshold (FailureThreshold) orders through e in it
// (refused: the times the book shows an order through each region refused
// as unavailable). gates must be in the Path's order (by seq).
func judgeGrayFailback(start time.Time, gates []gateRec, spans []span, refused map[string][]time.Time, threshold int, viol func(inv, format string, a ...any)) {
	off := func(t time.Time) time.Duration { return t.Sub(start) }
	for i, g := range gates {
		if g.kind != pathdialer.EventSwitch || g.from == g.to {
			continue
		}
		// The last switch away from g.to before this one.
		var left *gateRec
		for k := i - 1; k >= 0; k-- {
			if h := gates[k]; h.kind == pathdialer.EventSwitch && h.from == g.to && h.to != g.to {
				left = &gates[k]
				break
			}
		}
		if left == nil {
			continue
		}
		for _, s := range spans {
			if s.kind != spanGray || s.region != g.to || s.from.After(left.at) || !s.covers(g.at) {
				continue
			}
			// FailureThreshold orders through g.to refused in this refusal
			// before flow left: live traffic took it out (fewer, and the
			// probe's failures did: an outage its success ends).
			var first time.Time
			n := 0
			for _, r := range refused[g.to] {
				if !r.Before(s.from) && !r.After(left.at) {
					if n == 0 {
						first = r
					}
					n++
				}
			}
			if n < threshold {
				continue
			}
			viol(InvFailbackOntoFailing, "switch (%s) from %s back to %s at %v while the broker still refused orders through %s (refusing them since %v, in force to %s); flow had left %s at %v, after the broker refused %d orders through it from %v",
				g.cause, g.from, g.to, off(g.at), g.to, off(s.from), spanEnd(s, off), g.to, off(left.at), n, off(first))
			break
		}
	}
}

func (s span) covers(t time.Time) bool {
	return !t.Before(s.from) && (s.to.IsZero() || t.Before(s.to))
}

func spanEnd(s span, off func(time.Time) time.Duration) string {
	if s.to.IsZero() {
		return "the end of the run"
	}
	return off(s.to).String()
}

// checkGrayFailback judges no-failback-onto-failing-orders (w.mu held, the
// records sorted by checkComposed).
func (w *world) checkGrayFailback(res *Result, audit simbroker.AuditLog, viol func(inv, format string, a ...any)) {
	cuts := map[string][]time.Time{}
	refused := map[string][]time.Time{}
	for _, r := range audit {
		if r.Kind != simbroker.KindOrder {
			continue
		}
		switch r.Outcome {
		case simbroker.OutcomeCut:
			cuts[r.Region] = append(cuts[r.Region], r.Time)
		case simbroker.OutcomeUnavailable:
			refused[r.Region] = append(refused[r.Region], r.Time)
		}
	}
	spans := orderPathSpans(w.s.Regions, w.cx.netSets, w.cx.brokerSets, cuts)
	if !w.s.NoTradePathCheck || w.s.NoCheckAtAll {
		judgeGrayFailback(w.start, w.cx.gates, spans, refused, w.s.FailureThreshold, viol)
		return
	}
	judgeGrayFailback(w.start, w.cx.gates, spans, refused, w.s.FailureThreshold, func(inv, format string, a ...any) {
		res.Notes = append(res.Notes, "with the offered trade-path check (a lookup), "+fmt.Sprintf(format, a...))
	})
}
