package pathdialer_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// armMode is how the per-endpoint DeadMan hook answers.
type armMode int

const (
	armOK   armMode = iota
	armFail         // fails at once
	armHang         // blocks until its context ends (DeadManTimeout)
)

// epDeadMan is a DeadMan hook driven per endpoint. Safe for concurrent use.
type epDeadMan struct {
	mu   sync.Mutex
	mode map[string]armMode
	arms []pathdialer.DeadManArm
}

func (d *epDeadMan) set(ep string, m armMode) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mode == nil {
		d.mode = map[string]armMode{}
	}
	d.mode[ep] = m
}

func (d *epDeadMan) arm(ctx context.Context, a pathdialer.DeadManArm) error {
	d.mu.Lock()
	d.arms = append(d.arms, a)
	m := d.mode[a.Endpoint.Name]
	d.mu.Unlock()
	switch m {
	case armFail:
		return errArm
	case armHang:
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// interval is a span of virtual time.
type interval struct{ from, to time.Time }

func (iv interval) has(t time.Time) bool { return !t.Before(iv.from) && t.Before(iv.to) }

// holdsSince returns the spans in which the gate was not open (a hold or a
// halt until the next release), from events[i] on; a span still open ends at
// end.
func holdsSince(evs []pathdialer.Event, end time.Time) []interval {
	var out []interval
	var from time.Time
	for _, e := range evs {
		switch e.Kind {
		case pathdialer.EventHold, pathdialer.EventHalt:
			if from.IsZero() {
				from = e.Time
			}
		case pathdialer.EventRelease:
			if !from.IsZero() {
				out = append(out, interval{from, e.Time})
				from = time.Time{}
			}
		}
	}
	if !from.IsZero() {
		out = append(out, interval{from, end})
	}
	return out
}

// failbackTries returns when each failback was decided (the engine's
// FenceRequired to the primary).
func failbackTries(evs []pathdialer.Event) []time.Time {
	var out []time.Time
	for _, e := range evs {
		if e.Kind == pathdialer.EventDecision && e.Decision != nil && e.Decision.Failback && e.Decision.Outcome == engine.FenceRequired {
			out = append(out, e.Time)
		}
	}
	return out
}

// sampler places an order every second (virtual time), giving each 100 ms
// to be granted, and records when each was placed and whether it was.
type sampler struct {
	mu      sync.Mutex
	placed  []time.Time
	granted []bool
	stop    chan struct{}
	done    chan struct{}
}

func startSampler(p *pathdialer.Path) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(time.Second):
			}
			at := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			tk, err := p.Acquire(ctx, pathdialer.ServiceREST, "o-"+at.Format("150405.000"))
			cancel()
			if err == nil {
				tk.Done()
			}
			s.mu.Lock()
			s.placed = append(s.placed, at)
			s.granted = append(s.granted, err == nil)
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *sampler) halt() {
	close(s.stop)
	<-s.done
}

// A failback that cannot be prepared never holds the healthy backup: with the
// dead-man arm on the healed primary always failing (at once, or by running
// into DeadManTimeout), over ten minutes with the library's defaults the
// backup is held at most one FenceTimeout per failback try, the tries are
// spaced by a growing backoff, and every order placed outside a hold is
// granted.
func TestFailbackUnpreparedNeverHoldsHealthyBackup(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode armMode
	}{{"arm fails", armFail}, {"arm hangs", armHang}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dm := &epDeadMan{}
				dm.set("eu", tc.mode) // the failover arms on us, which works
				var cfg pathdialer.Config
				h := newHarness(t, func(c *pathdialer.Config) {
					c.Venue = venue.KrakenSpot()
					c.DeadMan = dm.arm
					cfg = *c
				})
				defer h.close()
				h.start()
				h.probes.set("eu", probeBlackhole)
				h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
				h.probes.set("eu", probeOK)
				mark := len(h.rec.all())
				t0 := time.Now()
				s := startSampler(h.p)
				<-time.After(10 * time.Minute)
				s.halt()
				synctest.Wait()
				end := time.Now()
				evs := h.rec.all()[mark:]

				tries := failbackTries(evs)
				holds := holdsSince(evs, end)
				var held time.Duration
				for _, iv := range holds {
					held += iv.to.Sub(iv.from)
				}
				t.Logf("over %v: %d failback tries, backup held %v (%.1f%%) in %d holds", end.Sub(t0), len(tries), held, 100*held.Seconds()/end.Sub(t0).Seconds(), len(holds))
				if len(tries) < 2 {
					t.Fatalf("%d failback tries in 10 minutes, want at least 2:\n%s", len(tries), timeline(evs))
				}
				if bound := time.Duration(len(tries)) * cfg.FenceTimeout; held > bound {
					t.Errorf("the healthy backup was held %v over %d failback tries, want at most one FenceTimeout (%v) a try: %v", held, len(tries), cfg.FenceTimeout, bound)
				}
				for i := 2; i < len(tries); i++ {
					prev, gap := tries[i-1].Sub(tries[i-2]), tries[i].Sub(tries[i-1])
					if gap < prev {
						t.Errorf("failback try %d came %v after the one before, which came %v after its own: want a growing backoff (tries at %v)", i+1, gap, prev, offsets(t0, tries))
					}
				}
				if first, last := tries[1].Sub(tries[0]), tries[len(tries)-1].Sub(tries[len(tries)-2]); len(tries) >= 3 && last <= first {
					t.Errorf("failback tries spaced %v at first and %v at last: want the spacing to grow (tries at %v)", first, last, offsets(t0, tries))
				}
				// Each try is abandoned loudly, saying why and when the next
				// is; the waits double from FailbackBackoff.Initial up to Max.
				var abs []pathdialer.Event
				for _, e := range evs {
					if e.Kind == pathdialer.EventFailbackAbandoned {
						abs = append(abs, e)
					}
				}
				if len(abs) != len(tries) {
					t.Errorf("%d failbacks abandoned for %d tries", len(abs), len(tries))
				}
				for i, e := range abs {
					want := min(cfg.FailbackBackoff.Initial<<i, cfg.FailbackBackoff.Max)
					if e.From != "us" || e.To != "eu" || !errors.Is(e.Err, pathdialer.ErrDeadManNotArmed) || e.Attempt != i+1 || e.Duration != want || !strings.Contains(e.Cause, "next try in") {
						t.Errorf("abandon %d: %v; want us -> eu, ErrDeadManNotArmed, attempt %d, next try in %v", i+1, e, i+1, want)
					}
					if i+1 < len(tries) && tries[i+1].Before(e.Time.Add(e.Duration)) {
						t.Errorf("try %d at %v, before the wait announced by the abandon at %v (%v)", i+2, tries[i+1].Sub(t0), e.Time.Sub(t0), e.Duration)
					}
				}
				if n := len(h.hooks.fenceCalls()); n != 1 {
					t.Errorf("%d fence calls, want the failover's alone: no failback may fence before its arm succeeded", n)
				}
				s.mu.Lock()
				defer s.mu.Unlock()
				refused := 0
				for i, at := range s.placed {
					if s.granted[i] {
						continue
					}
					inHold := false
					for _, iv := range holds {
						inHold = inHold || iv.has(at)
					}
					if !inHold {
						t.Errorf("an order placed at %v, outside every hold, was refused", at.Sub(t0))
					}
					refused++
				}
				t.Logf("%d of %d orders refused", refused, len(s.placed))
				if len(s.placed) < 500 {
					t.Errorf("only %d orders placed in 10 minutes", len(s.placed))
				}
			})
		})
	}
}

func offsets(t0 time.Time, ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, x := range ts {
		out[i] = x.Sub(t0).Round(100 * time.Millisecond)
	}
	return out
}

// Failover is never delayed by a failback's backoff or preparation: the
// backup dies while the next failback waits out its backoff, or while its
// dead-man arm on the primary still runs, and the switch to the primary
// begins at once.
func TestFailoverNotDelayedByFailbackBackoff(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode armMode // how the failback's arm on eu answers
	}{{"during the backoff", armFail}, {"during the preparation", armHang}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dm := &epDeadMan{}
				dm.set("eu", tc.mode)
				h := newHarness(t, func(c *pathdialer.Config) {
					c.Venue = venue.KrakenSpot()
					c.DeadMan = dm.arm
				})
				defer h.close()
				h.start()
				h.probes.set("eu", probeBlackhole)
				h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
				h.probes.set("eu", probeOK)
				fb := h.await(pathdialer.EventDecision, func(e pathdialer.Event) bool {
					return e.Decision != nil && e.Decision.Failback && e.Decision.Outcome == engine.FenceRequired
				})
				if tc.mode == armFail {
					ab := h.await(pathdialer.EventFailbackAbandoned, nil)
					<-time.After(ab.Duration / 3) // well inside the backoff
				} else {
					<-time.After(time.Second) // the arm hangs (DeadManTimeout 5 s)
				}
				synctest.Wait()
				if n := countKind(h.rec.all(), pathdialer.EventSwitch); n != 1 {
					t.Fatalf("premise: %d switches before the backup dies, want the failover alone", n)
				}
				dm.set("eu", armOK)
				h.probes.set("us", probeBlackhole)
				down := time.Now()
				reportDown(h.p, "us", 1)
				hold := h.await(pathdialer.EventHold, nil)
				if got := hold.Time.Sub(down); got != 0 {
					t.Errorf("failover held %v after the backup went DOWN, want at once", got)
				}
				sw := h.await(pathdialer.EventSwitch, nil)
				if sw.From != "us" || sw.To != "eu" || sw.Cause != "failover" {
					t.Fatalf("switch %v, want the failover us -> eu", sw)
				}
				if got := sw.Time.Sub(down); got > 2*time.Second {
					t.Errorf("failover switched %v after the backup went DOWN (failback decided %v before), want within 2 s", got, down.Sub(fb.Time))
				}
				h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "eu" })
				if tc.mode == armHang {
					superseded := false
					for _, e := range h.rec.all() {
						superseded = superseded || e.Kind == pathdialer.EventDeadManFailure && strings.Contains(e.Error, "superseded")
					}
					if !superseded {
						t.Errorf("the failback's arm in progress was not reported superseded:\n%s", timeline(h.rec.all()))
					}
				}
			})
		})
	}
}

// Once the dead-man arm on the primary works again, the failback happens
// within the backoff then in force, armed before anything is held.
func TestFailbackWithinOneBackoffOnceArmWorks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dm := &epDeadMan{}
		dm.set("eu", armFail)
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue = venue.KrakenSpot()
			c.DeadMan = dm.arm
		})
		defer h.close()
		h.start()
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		h.probes.set("eu", probeOK)
		var ab pathdialer.Event
		for range 3 {
			ab = h.await(pathdialer.EventFailbackAbandoned, nil)
		}
		if ab.Attempt != 3 || ab.Duration != 2*time.Minute {
			t.Fatalf("third abandon %v, want the third in a row with a 2 min wait", ab)
		}
		dm.set("eu", armOK)
		mark := len(h.rec.all())
		sw := h.await(pathdialer.EventSwitch, nil)
		if sw.From != "us" || sw.To != "eu" || sw.Cause != "failback" {
			t.Fatalf("switch %v, want the failback us -> eu", sw)
		}
		if late := sw.Time.Sub(ab.Time.Add(ab.Duration)); late > 2*time.Second {
			t.Errorf("failback %v after the backoff announced at %v ended, want within a probe round and a fence", late, ab.Time.Format("15:04:05"))
		}
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "eu" })
		ks := kindsSince(h.rec.all(), mark)
		ia, ih, iff := indexKind(ks, pathdialer.EventDeadManArmed), indexKind(ks, pathdialer.EventHold), indexKind(ks, pathdialer.EventFenceStart)
		if ia < 0 || ih < 0 || iff < 0 || !(ia < ih && ih < iff) {
			t.Errorf("dead-man-armed at %d, hold at %d, fence-start at %d: want armed, then hold, then fence; events %v", ia, ih, iff, ks)
		}
		arms := dm.calls()
		if a := arms[len(arms)-1]; a.Endpoint.Name != "eu" || a.From != "us" || a.Token != 1 || !a.TimerKnown {
			t.Errorf("the failback's arm %+v, want on eu, from us under token 1, with Kraken's timer", a)
		}
		if n := len(failbackTries(h.rec.all()[mark:])); n != 1 {
			t.Errorf("failback announced %d times, want once", n)
		}
	})
}

// A failback re-proves the primary's identity before it arms the dead-man
// timer there, and both before anything is held: the primary begins
// answering for another account just after its periodic verification, and
// the failback is abandoned with no arm through it, no hold and no fence.
func TestFailbackArmsOnlyThroughAReprovedPrimary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
		dm := &epDeadMan{}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Venue = venue.KrakenSpot()
			c.DeadMan = dm.arm
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = 30 * time.Second
			c.Engine.Cooldown = 57 * time.Second // failback due at ~62 s
			c.SuspectAfter = -1
		})
		defer h.close()
		start := time.Now()
		h.start()
		untilT(start, 1200*time.Millisecond)
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		h.probes.set("eu", probeOK)
		untilT(start, 60100*time.Millisecond)
		if st := status(t, h.p, "eu"); !st.Verified || time.Since(st.VerifiedAt) > 200*time.Millisecond {
			t.Fatalf("premise: eu verified %v, %v ago; want a periodic check at 60 s", st.Verified, time.Since(st.VerifiedAt))
		}
		ids.set("eu", "SOMEONE-ELSE")
		mark := len(h.rec.all())
		ab := h.await(pathdialer.EventFailbackAbandoned, nil)
		if !errors.Is(ab.Err, engine.ErrIdentityMismatch) || ab.From != "us" || ab.To != "eu" {
			t.Fatalf("abandon %v, want us -> eu for the identity mismatch", ab)
		}
		if at := ab.Time.Sub(start); at > 65*time.Second {
			t.Fatalf("premise: failback abandoned at %v, want it just after the cooldown at ~62 s", at)
		}
		for _, a := range dm.calls() {
			if a.Endpoint.Name == "eu" {
				t.Fatalf("the dead-man timer was armed through eu, which fronts another account: %+v", a)
			}
		}
		for _, e := range h.rec.all()[mark:] {
			if e.Kind == pathdialer.EventHold || e.Kind == pathdialer.EventHalt || e.Kind == pathdialer.EventFenceStart {
				t.Fatalf("%v for a failback that could not be prepared:\n%s", e, timeline(h.rec.all()[mark:]))
			}
		}
	})
}

func (d *epDeadMan) calls() []pathdialer.DeadManArm {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]pathdialer.DeadManArm(nil), d.arms...)
}
