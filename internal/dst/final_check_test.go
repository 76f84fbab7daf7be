package dst

import (
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// final-verdict-matches-book has teeth: a final NOT_RECEIVED whose send was
// booked (before or after the verdict, not by the resend), and a final
// FILLED, CANCELLED or RESTING the book's end state contradicts with no
// later report of the change, are caught; the resend's own booking, a
// RESTING order cancelled and reported after the verdict, and a verdict
// the book agrees with are not.
func TestFinalVerdictCheckFindsAVerdictTheBookContradicts(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	bk := func(region string, ms, sentBy int) simbroker.Record {
		r := simbroker.Record{Kind: simbroker.KindOrder, ClientOrderID: "o", Region: region, Outcome: simbroker.OutcomeNew, Time: at(ms), ConnID: region + "/rest/1"}
		if sentBy > 0 {
			r.SentBy = at(sentBy)
		}
		return r
	}
	bo := func(status string, created, updated int) simbroker.Order {
		return simbroker.Order{ClientOrderID: "o", Status: status, CreatedAt: at(created), UpdatedAt: at(updated)}
	}
	final := func(f pathdialer.Fate, ms int) []verdictAt { return []verdictAt{{fate: f, at: at(ms)}} }
	nr, filled, canc, resting := pathdialer.FateNotReceived, pathdialer.FateFilled, pathdialer.FateCanceled, pathdialer.FateResting
	for _, c := range []struct {
		name string
		o    finalOrder
		loud []time.Time
		want string // "" no violation, else a word the violation holds
	}{
		{"final NOT_RECEIVED, never booked", finalOrder{finals: final(nr, 100)}, nil, ""},
		{"final NOT_RECEIVED, the send booked later (a late landing after the final verdict)", finalOrder{finals: final(nr, 100), booked: []simbroker.Record{bk("eu", 900, 50)}, book: []simbroker.Order{bo("filled", 50, 50)}}, nil, "through eu at 900ms"},
		{"final NOT_RECEIVED, booked before the verdict", finalOrder{finals: final(nr, 100), booked: []simbroker.Record{bk("us", 60, 40)}, book: []simbroker.Order{bo("filled", 50, 50)}}, nil, "through us at 60ms"},
		{"final NOT_RECEIVED, the resend's booking", finalOrder{finals: final(nr, 100), resentAt: at(200), booked: []simbroker.Record{bk("us", 250, 210)}, book: []simbroker.Order{bo("filled", 50, 50)}}, nil, ""},
		{"final NOT_RECEIVED, the send's copy booked after the resend", finalOrder{finals: final(nr, 100), resentAt: at(200), booked: []simbroker.Record{bk("eu", 230, 50), bk("us", 250, 210)}, book: []simbroker.Order{bo("filled", 230, 230), bo("filled", 250, 250)}}, nil, "through eu at 230ms"},
		{"final NOT_RECEIVED, booked before the resend", finalOrder{finals: final(nr, 100), resentAt: at(200), booked: []simbroker.Record{bk("eu", 150, 0)}, book: []simbroker.Order{bo("filled", 50, 50)}}, nil, "through eu at 150ms"},
		{"final FILLED, filled", finalOrder{finals: final(filled, 100), booked: []simbroker.Record{bk("eu", 50, 40)}, book: []simbroker.Order{bo("filled", 50, 50)}}, nil, ""},
		{"final FILLED, never booked", finalOrder{finals: final(filled, 100)}, nil, "no booking"},
		{"final CANCELLED, open in the book", finalOrder{finals: final(canc, 100), booked: []simbroker.Record{bk("eu", 50, 40)}, book: []simbroker.Order{bo("new", 50, 50)}}, nil, "says [new] then"},
		{"final RESTING, open", finalOrder{finals: final(resting, 100), booked: []simbroker.Record{bk("eu", 50, 40)}, book: []simbroker.Order{bo("new", 50, 50)}}, nil, ""},
		{"final RESTING, cancelled before the verdict, never reported", finalOrder{finals: final(resting, 100), booked: []simbroker.Record{bk("eu", 50, 40)}, book: []simbroker.Order{bo("canceled", 50, 80)}}, nil, "says [canceled] then"},
		{"final RESTING on a read after the cancel (a stale report)", finalOrder{finals: final(resting, 100), booked: []simbroker.Record{bk("eu", 50, 40)}, book: []simbroker.Order{bo("canceled", 50, 80)}, lookups: []time.Time{at(90), at(120)}}, nil, "(read at 90ms)"},
		{"final RESTING, read before the cancel", finalOrder{finals: final(resting, 100), booked: []simbroker.Record{bk("eu", 50, 40)}, book: []simbroker.Order{bo("canceled", 50, 80)}, lookups: []time.Time{at(70)}}, nil, ""},
		{"final RESTING, cancelled after the verdict (a later cancel-on-disconnect)", finalOrder{finals: final(resting, 100), booked: []simbroker.Record{bk("eu", 50, 40)}, book: []simbroker.Order{bo("canceled", 50, 300)}}, nil, ""},
		{"final FILLED, open in the book", finalOrder{finals: final(filled, 100), booked: []simbroker.Record{bk("eu", 50, 40)}, book: []simbroker.Order{bo("new", 50, 50)}}, nil, "says [new] then"},
		{"final CANCELLED, cancelled only after the verdict", finalOrder{finals: final(canc, 100), booked: []simbroker.Record{bk("eu", 50, 40)}, book: []simbroker.Order{bo("canceled", 50, 300)}}, nil, "says [new] then"},
		{"final RESTING, cancelled, reported before the verdict only", finalOrder{finals: final(resting, 100), booked: []simbroker.Record{bk("eu", 50, 40)}, book: []simbroker.Order{bo("canceled", 50, 80)}, reported: []time.Time{at(90)}}, []time.Time{at(80)}, "no later report"},
		{"final RESTING, cancelled, reported after", finalOrder{finals: final(resting, 100), booked: []simbroker.Record{bk("eu", 50, 40)}, book: []simbroker.Order{bo("canceled", 50, 80)}, reported: []time.Time{at(300)}}, nil, ""},
		{"final RESTING, cancelled, an open-order reconcile failed loudly after", finalOrder{finals: final(resting, 100), booked: []simbroker.Record{bk("eu", 50, 40)}, book: []simbroker.Order{bo("canceled", 50, 80)}}, []time.Time{at(300)}, ""},
	} {
		c.o.id = "o"
		var got []string
		judgeFinal(finalGround{start: t0, loud: c.loud, orders: []finalOrder{c.o}}, func(inv, format string, a ...any) {
			if inv != InvFinalVerdict {
				t.Errorf("%s: invariant %s", c.name, inv)
			}
			got = append(got, sprintf(format, a...))
		})
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s: %v, want no violation", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: %v, want one %s violation saying %q", c.name, got, InvFinalVerdict, c.want)
		}
	}
}
