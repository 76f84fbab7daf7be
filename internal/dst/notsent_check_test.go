package dst

import (
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// not-sent-never-received has teeth: an order the library called
// not sent that the broker booked, or received and refused, is caught; one
// the broker never received is not, nor an order of another outcome that
// it booked, nor a resent order (its first copy may land late).
func TestNotSentCheckFindsAnOrderThatReachedTheBroker(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	rec := func(id, region string, out simbroker.Outcome, ms int) simbroker.Record {
		return simbroker.Record{Kind: simbroker.KindOrder, ClientOrderID: id, Region: region, Outcome: out, Time: at(ms)}
	}
	notSent := "rest: submission not sent: order \"o\": x"
	for _, c := range []struct {
		name    string
		o       *orderRec
		reached []simbroker.Record
		want    string // "" no violation, else a word the violation holds
	}{
		{"not sent, never received", &orderRec{notSent: notSent}, nil, ""},
		{"not sent, booked (an unknown outcome called not sent)", &orderRec{notSent: notSent}, []simbroker.Record{rec("o", "eu", simbroker.OutcomeNew, 40)}, "through eu at 40ms (new"},
		{"not sent, booked then cut", &orderRec{notSent: notSent}, []simbroker.Record{rec("o", "us", simbroker.OutcomeCut, 40)}, "through us"},
		{"not sent, received and refused", &orderRec{notSent: notSent}, []simbroker.Record{rec("o", "eu", simbroker.OutcomeStaleToken, 40)}, "stale"},
		{"unknown, booked", &orderRec{outcome: "unknown"}, []simbroker.Record{rec("o", "eu", simbroker.OutcomeNew, 40)}, ""},
		{"resent, first copy landed", &orderRec{notSent: notSent, resent: true}, []simbroker.Record{rec("o", "eu", simbroker.OutcomeNew, 40)}, ""},
	} {
		c.o.id, c.o.start = "o", at(10)
		var got []string
		n := judgeNotSent(t0, map[string]*orderRec{"o": c.o}, map[string][]simbroker.Record{"o": c.reached}, func(inv, format string, a ...any) {
			if inv != InvNotSent {
				t.Errorf("%s: invariant %s", c.name, inv)
			}
			got = append(got, sprintf(format, a...))
		})
		if want := map[bool]int{true: 1, false: 0}[c.o.notSent != ""]; n != want {
			t.Errorf("%s: %d judged, want %d", c.name, n, want)
		}
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s: %v, want no violation", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: %v, want one %s violation saying %q", c.name, got, InvNotSent, c.want)
		}
	}
}
