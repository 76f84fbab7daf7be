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
//     settled by a REST fallback.
//   - standby: as fence, with a hot standby session logged on to us
//     (Options.Standby, its own CompIDs).
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
	kill := func(b *testing.B, opts fix.Options) time.Duration {
		cs := compatWith(b, false, fix.ReconcileOptions{Fallback: restFallback(b, func(string) bool { return false })}, opts, 30)
		killed := cs.killRegionWithOrderInFlight(b, "inflight")
		b.Cleanup(func() {
			if b.Failed() {
				cs.dumpEvents(b)
			}
		})
		return firstFill(b, cs).Sub(killed)
	}
	scenarios := []struct {
		name string
		run  func(b *testing.B) time.Duration
	}{
		{"fence", func(b *testing.B) time.Duration {
			return kill(b, fix.Options{Sequence: fix.SequenceResetOnLogon})
		}},
		{"standby", func(b *testing.B) time.Duration {
			return kill(b, fix.Options{Sequence: fix.SequenceResetOnLogon, Standby: &fix.Standby{Venue: venue.BinanceSpot()}})
		}},
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
			b.Logf("%s: fault → first execution report on the backup over %d runs: median %v, max %v, all %v",
				sc.name, len(took), took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), took)
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
