package dst

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// every-unknown-order-settled has teeth: an order that finished unknown
// counts as settled only by a settlement made after it finished. One
// settled while still in flight (a reconcile that took its ticket in flight
// and answered before the order's call returned unknown) and never again
// is caught, as is one never settled; one settled after it ended, or at
// the instant it ended, is not. An order ends at the client's record's end
// or, if earlier, when a reconcile was handed its ticket as unknown (a FIX
// order never answered has its record ended by the run: any settlement
// counts unless its ticket was handed over as unknown).
func TestUnknownCheckNeedsSettlementAfterTheEnd(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	judged := func(o *orderRec) []string {
		o.id, o.first, o.outcome = "o-1", o.start, "unknown"
		w := &world{start: t0, orders: map[string]*orderRec{o.id: o}}
		var out []string
		w.checkOrders(&Result{}, nil, func(inv, format string, a ...any) {
			if inv == InvUnknown {
				out = append(out, inv+": "+fmt.Sprintf(format, a...))
			}
		})
		return out
	}
	nr := []pathdialer.Fate{pathdialer.FateNotReceived}
	for _, c := range []struct {
		name string
		o    *orderRec
		want string // "" no violation, else a word the violation holds
	}{
		{"never settled", &orderRec{start: at(100), end: at(900)}, "no reconcile settled it"},
		{"settled before it ended", &orderRec{start: at(100), end: at(900), settled: nr, settleAt: at(500)}, "before it finished"},
		{"settled after it ended", &orderRec{start: at(100), end: at(900), settled: nr, settleAt: at(1200)}, ""},
		{"settled at the instant it ended", &orderRec{start: at(100), end: at(900), settled: nr, settleAt: at(900)}, ""},
		{"handed unknown, settled, its record ended later (FIX)", &orderRec{start: at(100), end: at(9000), unknownAt: at(400), settled: nr, settleAt: at(500)}, ""},
		{"FIX, never answered, settled in flight at a switch", &orderRec{start: at(100), end: at(9000), runEnded: true, settled: nr, settleAt: at(500)}, ""},
		{"FIX, never answered, never settled", &orderRec{start: at(100), end: at(9000), runEnded: true}, "no reconcile settled it"},
		{"handed unknown after it was settled in flight", &orderRec{start: at(100), end: at(9000), unknownAt: at(600), settled: nr, settleAt: at(500)}, "before it finished"},
		{"handed unknown before its latest send", &orderRec{start: at(100), end: at(900), unknownAt: at(50), settled: nr, settleAt: at(500)}, "before it finished"},
		{"settled in flight, then again after", &orderRec{start: at(100), end: at(900), settled: append(nr, pathdialer.FateNotReceived), settleAt: at(1500)}, ""},
	} {
		v := judged(c.o)
		switch {
		case c.want == "" && len(v) != 0:
			t.Errorf("%s: %v, want no violation", c.name, v)
		case c.want != "" && (len(v) != 1 || !strings.Contains(v[0], c.want)):
			t.Errorf("%s: %v, want one %s violation saying %q", c.name, v, InvUnknown, c.want)
		}
	}
}
