package dst

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// no-order-sent-after-handed has teeth: a FIX order the client wrote after
// a reconcile was handed it in flight, and that reached the broker, is
// caught; one written before the hand-over (in the same call), one handed
// over only as unknown, one whose later call was never handed over, and one
// written late that never reached the broker are not.
func TestHandedCheckFindsAnOrderWrittenAfterItsHandOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		f := &fixSim{w: &world{start: t0}, started: map[string]time.Time{}, handed: map[string]time.Time{}, lateWrites: map[string]handedRec{}}
		step := func() { time.Sleep(10 * time.Millisecond) } // virtual time
		inflight := func(ids ...string) pathdialer.Reconciliation {
			r := pathdialer.Reconciliation{From: "eu", To: "eu"}
			for _, id := range ids {
				r.Tickets = append(r.Tickets, pathdialer.TicketInfo{OrderID: id, Service: pathdialer.ServiceFIX, Endpoint: "eu", State: pathdialer.TicketInFlight})
			}
			return r
		}
		for _, id := range []string{"late", "early", "unknown", "rest", "again", "lost"} {
			f.started[id] = time.Now()
		}
		step()
		f.wrote("early") // written before any hand-over
		f.noteHanded(inflight("late", "early", "again", "lost"))
		un := inflight("unknown")
		un.Tickets[0].State = pathdialer.TicketUnknown
		f.noteHanded(un)
		rs := inflight("rest")
		rs.Tickets[0].Service = pathdialer.ServiceREST
		f.noteHanded(rs)
		step()
		f.started["again"] = time.Now() // a later call of its own, never handed over
		step()
		for _, id := range []string{"late", "unknown", "rest", "again", "lost"} {
			f.wrote(id)
		}
		at := time.Now()
		var audit simbroker.AuditLog
		for _, id := range []string{"late", "early", "unknown", "rest", "again"} {
			audit = append(audit, simbroker.Record{Kind: simbroker.KindOrder, ClientOrderID: id, Region: "eu", Service: string(simbroker.FIX), Outcome: simbroker.OutcomeNew, Time: at.Add(time.Millisecond)})
		}
		var got []string
		f.checkHanded(audit, func(inv, format string, a ...any) {
			if inv != InvSentAfterHanded {
				t.Errorf("invariant %s", inv)
			}
			got = append(got, sprintf(format, a...))
		})
		if len(got) != 1 || !strings.HasPrefix(got[0], "late was handed to a reconcile in flight by 10ms") || !strings.Contains(got[0], "written by the client at 30ms") {
			t.Fatalf("violations %q, want one: late, handed at 10ms, written at 30ms", got)
		}
		// A record of the order before its late write is another copy's
		// (sent before the hand-over): not judged.
		f2 := &fixSim{w: f.w, lateWrites: map[string]handedRec{"late": f.lateWrites["late"]}}
		audit[0].Time = t0.Add(5 * time.Millisecond)
		f2.checkHanded(audit[:1], func(inv, format string, a ...any) {
			t.Errorf("a booking before the late write judged: %s", sprintf(format, a...))
		})
	})
}
