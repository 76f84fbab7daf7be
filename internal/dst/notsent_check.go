package dst

import (
	"sort"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// InvNotSent: an order the library said was never sent reached no one.
const InvNotSent = "not-sent-never-received"

// checkNotSent judges not-sent-never-received (w.mu is held): an
// order whose latest send the library called not sent (rest.Outcome's
// NotSent: ErrNotSent, a halt, an expired ticket, no order ID...; FIX's
// ErrNotSent) has no record in the broker's audit at all, booked or
// refused: "not sent" is the promise that no byte of it reached the
// broker, on which a caller resends it, or gives it up, as never placed.
// The lost-order class: an unknown outcome called "not sent" is an order
// the broker may have booked while the client believes it never left.
//
// A resent order is not judged (its first copy, settled NOT_RECEIVED, may
// land late; which copy an audit record is of the book cannot tell), nor
// are the second process's orders (proc2.go, their own record).
func (w *world) checkNotSent(audit simbroker.AuditLog, viol func(inv, format string, a ...any)) int {
	reached := map[string][]simbroker.Record{}
	for _, r := range audit {
		if r.Kind == simbroker.KindOrder {
			reached[r.ClientOrderID] = append(reached[r.ClientOrderID], r)
		}
	}
	return judgeNotSent(w.start, w.orders, reached, viol)
}

// judgeNotSent is checkNotSent's judgement over the client's record and the
// broker's order records by client order ID; it returns how many orders
// the library called not sent.
func judgeNotSent(start time.Time, orders map[string]*orderRec, reached map[string][]simbroker.Record, viol func(inv, format string, a ...any)) int {
	ids := make([]string, 0, len(orders))
	for id, o := range orders {
		if o.notSent != "" {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		o := orders[id]
		if o.resent {
			continue
		}
		if rs := reached[id]; len(rs) > 0 {
			r := rs[0]
			viol(InvNotSent, "%s sent at %v, the library said not sent (%s); the broker received it through %s at %v (%s, %d record(s))",
				id, o.start.Sub(start), o.notSent, r.Region, r.Time.Sub(start), r.Outcome, len(rs))
		}
	}
	return len(ids)
}
