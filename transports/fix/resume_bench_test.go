package fix_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
	"github.com/brokerpath/brokerpath/venue"
)

// BenchmarkFIXResume measures, against the compatibility suite's acceptors
// (a quickfix executor per region, each its own process; probes every
// 150 ms), the time from a fault to the first execution report on the backup:
//
//   - fence: a session per region; eu is killed with an order in flight (its
//     connection reset: the broker side is gone); the in-flight order is
//     settled by a REST fallback. The session logs on to us at the switch.
//   - standby: as fence, with a hot standby session logged on to us
//     (Options.Standby, its own CompIDs): the order goes over it with no
//     logon (a run fails if the backup's acceptor saw a second one).
//   - fence-far, standby-far: the same with us 20 ms away each way (40 ms
//     round trip), set once every session is logged on: the logon at the
//     switch costs its round trips there, the standby none.
//   - nofence: one session across regions (HeartBtInt 1 s); eu is black-holed,
//     so the acceptor refuses the session on us until it times the old
//     connection out (about 2.4 × HeartBtInt).
//
// Each run builds its own regions; run with -benchtime=1x (the runs are
// BROKERPATH_FIX_RESUME_RUNS, default 5):
//
//	go test -run '^$' -bench FIXResume -benchtime=1x ./transports/fix/
func BenchmarkFIXResume(b *testing.B) {
	runs := 5
	if v, err := strconv.Atoi(os.Getenv("BROKERPATH_FIX_RESUME_RUNS")); err == nil && v > 0 {
		runs = v
	}
	const far = 20 * time.Millisecond // one way, to us
	kill := func(b *testing.B, standby bool, delay time.Duration) time.Duration {
		opts := fix.Options{Sequence: fix.SequenceResetOnLogon}
		if standby {
			opts.Standby = &fix.Standby{Venue: venue.BinanceSpot()}
		}
		var cs *compatSetup
		cs = compatWith(b, false, fix.ReconcileOptions{Fallback: restFallback(b, func(id string) bool { return cs.booked(id) })}, opts, 30)
		b.Cleanup(func() {
			if b.Failed() {
				cs.dumpEvents(b)
			}
		})
		if delay > 0 {
			if err := cs.relays["us"].SetFault(faultnet.Latency(delay, 0)); err != nil {
				b.Fatal(err)
			}
		}
		us := cs.regions["us"]
		eventually(b, 5*time.Second, "logons printed", func() bool { return !standby || us.logonsOf(cs.standby.SenderCompID) == 1 })
		killed := cs.killRegionWithOrderInFlight(b, "inflight")
		took := firstFill(b, cs).Sub(killed)
		// What was measured is what the row says: the standby carried the
		// order with no new logon; without it, the session logged on to us.
		if standby {
			if n, m := us.logonsOf(cs.standby.SenderCompID), us.logonsOf(cs.sid.SenderCompID); n != 1 || m != 0 {
				b.Fatalf("logons at us: standby %d, trading session %d; want 1, 0", n, m)
			}
		} else {
			eventually(b, 5*time.Second, "the session's logon at us printed", func() bool { return us.logonsOf(cs.sid.SenderCompID) == 1 })
		}
		return took
	}
	scenarios := []struct {
		name string
		run  func(b *testing.B) time.Duration
	}{
		{"fence", func(b *testing.B) time.Duration { return kill(b, false, 0) }},
		{"standby", func(b *testing.B) time.Duration { return kill(b, true, 0) }},
		{"fence-far", func(b *testing.B) time.Duration { return kill(b, false, far) }},
		{"standby-far", func(b *testing.B) time.Duration { return kill(b, true, far) }},
		{"nofence", func(b *testing.B) time.Duration {
			cs := compatWith(b, true, fix.ReconcileOptions{AcceptUndetermined: true},
				fix.Options{Sequence: fix.SequenceResetOnLogon, LogonFailureLimit: -1}, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := cs.in.SendOrder(ctx, order("nf-warm", "FILL"), cs.sid); err != nil {
				b.Fatal(err)
			}
			eventually(b, 5*time.Second, "warm-up answered", func() bool { return cs.in.Stats().Answered.Load() == 1 })
			cut := time.Now()
			_ = cs.relays["eu"].SetFault(faultnet.Blackhole())
			cs.events.Wait(b, cs.path, pathdialer.EventRelease)
			return firstFill(b, cs).Sub(cut)
		}},
	}
	for _, sc := range scenarios {
		b.Run(sc.name, func(b *testing.B) {
			var took []time.Duration
			for i := range runs {
				b.Run(strconv.Itoa(i), func(b *testing.B) {
					d := sc.run(b)
					took = append(took, d)
					b.ReportMetric(float64(d.Microseconds())/1000, "ms-to-fill")
				})
			}
			if len(took) == 0 {
				return
			}
			slices.Sort(took)
			b.Logf("%s: fault → first execution report on the backup over %d runs: median %v, min %v, max %v, all %v",
				sc.name, len(took), took[len(took)/2].Round(time.Millisecond), took[0].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), took)
		})
	}
}

// firstFill sends orders until one is answered, returning when: an order
// granted on the old endpoint just before the switch is not sent (ErrNotSent)
// and is sent again under a new ClOrdID, as a client would.
func firstFill(b *testing.B, cs *compatSetup) time.Time {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := cs.in.Stats().Answered.Load()
	for i := 0; ; i++ {
		err := cs.in.SendOrder(ctx, order("after-"+strconv.Itoa(i), "FILL"), cs.sid)
		if err == nil {
			break
		}
		if !errors.Is(err, fix.ErrNotSent) || ctx.Err() != nil {
			b.Fatalf("order on the survivor: %v", err)
		}
	}
	eventually(b, 10*time.Second, "order on the survivor answered", func() bool { return cs.in.Stats().Answered.Load() > before })
	return time.Now()
}
