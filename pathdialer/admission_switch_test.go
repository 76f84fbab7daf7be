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
)

// Identity is re-proved at every switch, whatever the age of the last
// verification. These tests run in a bubble that starts the Path at t=0; the
// periodic identity checks then run at 30 s, 60 s, … (IdentityInterval 30 s)
// and the probe rounds every second.

// haltOnce stops an acquirer once, so a test that fails early still stops it
// (a goroutine left blocked in a bubble would hide the failure).
func haltOnce(a *acquirer) func() map[string]int {
	var once sync.Once
	var on map[string]int
	return func() map[string]int {
		once.Do(func() { on = a.halt() })
		return on
	}
}

// untilT sleeps (virtual time) until t after start.
func untilT(start time.Time, t time.Duration) {
	time.Sleep(time.Until(start.Add(t)))
}

// The backup is verified by the periodic check at 30 s and begins answering for
// another account 100 ms later; the primary dies (DOWN at 32 s), 1.9 s after
// the flip, with the backup's verification 2 s old. The switch re-checks it:
// not one ticket is granted on it, and the halt names the mismatch.
func TestSwitchReprovesRecentlyVerifiedBackup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = 30 * time.Second
		})
		defer h.close()
		start := time.Now()
		h.start()
		stop := haltOnce(startAcquirer(h.p))
		defer stop()
		untilT(start, 29200*time.Millisecond)
		h.probes.set("eu", probeFail) // rounds at 30, 31, 32 s fail (at once, so they never delay the identity check)
		untilT(start, 30100*time.Millisecond)
		if st := status(t, h.p, "us"); !st.Verified || time.Since(st.VerifiedAt) > 200*time.Millisecond {
			t.Fatalf("premise: us verified %v, %v ago; want a periodic check at 30 s (%+v)", st.Verified, time.Since(st.VerifiedAt), st)
		}
		ids.set("us", "SOMEONE-ELSE")
		halt := h.await(pathdialer.EventHalt, nil)
		<-time.After(5 * time.Second)
		on := stop()
		if on["us"] != 0 {
			t.Fatalf("%d tickets granted on the backup fronting another account", on["us"])
		}
		if on["eu"] == 0 {
			t.Fatal("no ticket before the failure: the acquirer did not run")
		}
		if !strings.Contains(halt.Cause, "SOMEONE-ELSE") {
			t.Fatalf("halt cause does not name the mismatch: %s", halt.Cause)
		}
		if at := halt.Time.Sub(start); at > 33*time.Second {
			t.Fatalf("halt at %v, want right after the failure at 32 s", at)
		}
		for _, e := range h.rec.all() {
			if e.Kind == pathdialer.EventRelease && e.Endpoint == "us" {
				t.Fatalf("released on us: %v", e)
			}
		}
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-after"); !errors.Is(err, pathdialer.ErrTradingHalted) || !strings.Contains(err.Error(), "SOMEONE-ELSE") {
			t.Fatalf("Acquire after the refusal: %v", err)
		}
	})
}

// Failback too: flow is on the backup; the primary recovers but, 100 ms after
// its periodic verification at 60 s, begins answering for another account;
// the failback is due at ~62 s. The failback re-checks it: not one ticket is
// granted on the primary, the mismatch is announced, and flow stays on (or
// returns to) the backup. The check runs before the failback holds anything,
// so however slow it is, the failback is abandoned (EventFailbackAbandoned
// naming the mismatch) and the backup is never held for it.
func TestFailbackReprovesRecentlyVerifiedPrimary(t *testing.T) {
	for _, tc := range []struct {
		name    string
		idDelay time.Duration
	}{{"instant check", 0}, {"check slower than the fence", 300 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) { failbackFlip(t, tc.idDelay) })
	}
}

func failbackFlip(t *testing.T, idDelay time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = func(ctx context.Context, ep pathdialer.Endpoint) (pathdialer.Identity, error) {
				if idDelay > 0 {
					time.Sleep(idDelay)
				}
				return ids.check(ctx, ep)
			}
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = 30 * time.Second
			c.Engine.Cooldown = 57 * time.Second // failback due at ~62 s
			c.SuspectAfter = -1                  // that timing counts the DOWN on probe rounds alone
		})
		defer h.close()
		start := time.Now()
		h.start()
		untilT(start, 1200*time.Millisecond)
		h.probes.set("eu", probeBlackhole)
		if rel := h.await(pathdialer.EventRelease, nil); rel.Endpoint != "us" {
			t.Fatalf("release %v", rel)
		}
		h.probes.set("eu", probeOK)
		untilT(start, 10*time.Second)
		stop := haltOnce(startAcquirer(h.p))
		defer stop()
		untilT(start, 60100*time.Millisecond+2*idDelay)
		if st := status(t, h.p, "eu"); !st.Verified || time.Since(st.VerifiedAt) > 200*time.Millisecond {
			t.Fatalf("premise: eu verified %v, %v ago; want a periodic check at 60 s", st.Verified, time.Since(st.VerifiedAt))
		}
		ids.set("eu", "SOMEONE-ELSE")
		fb := h.await(pathdialer.EventDecision, func(e pathdialer.Event) bool { return e.Decision.Outcome == engine.FenceRequired && e.To == "eu" })
		if at := fb.Time.Sub(start); at > 64*time.Second {
			t.Fatalf("premise: failback at %v, want it within 5 s of the verification at 60 s", at)
		}
		id := h.await(pathdialer.EventIdentity, func(e pathdialer.Event) bool { return e.Endpoint == "eu" })
		if !errors.Is(id.Err, engine.ErrIdentityMismatch) || !strings.Contains(id.Cause, "SOMEONE-ELSE") {
			t.Fatalf("identity event %v", id)
		}
		// The re-check runs before anything is held (a failback is
		// optional), however slow it is: the failback is abandoned, loudly,
		// and the backup is never held for it.
		ab := h.await(pathdialer.EventFailbackAbandoned, nil)
		if ab.From != "us" || ab.To != "eu" || !errors.Is(ab.Err, engine.ErrIdentityMismatch) || !strings.Contains(ab.Cause, "identity") || ab.Duration <= 0 {
			t.Fatalf("abandon event %v, want the failback us -> eu abandoned for the mismatch, with the wait before the next try", ab)
		}
		for _, e := range h.rec.all() {
			if e.Kind == pathdialer.EventSwitch && e.To == "eu" || e.Time.After(fb.Time) && (e.Kind == pathdialer.EventHold || e.Kind == pathdialer.EventHalt) {
				t.Fatalf("the failback held or switched (%v) although its re-check failed:\n%s", e, timeline(h.rec.all()))
			}
		}
		<-time.After(5 * time.Second)
		on := stop()
		if on["eu"] != 0 {
			t.Fatalf("%d tickets granted on the primary fronting another account", on["eu"])
		}
		if on["us"] == 0 {
			t.Fatal("no ticket on the backup: the acquirer did not run")
		}
		for _, e := range h.rec.all() {
			if e.Kind == pathdialer.EventRelease && e.Endpoint == "eu" {
				t.Fatalf("released on eu: %v", e)
			}
		}
		if a, _ := h.p.Active(); a.Name != "us" {
			t.Fatalf("active %q", a.Name)
		}
	})
}

// failoverHold runs a failover whose reconcile takes recDur and whose identity
// check takes idDur (no identity check when idDur < 0), the primary failing
// 10 s after Start (so the backup's last verification is 10 s old), and
// returns how long submissions were held.
func failoverHold(t *testing.T, recDur, idDur time.Duration) time.Duration {
	t.Helper()
	var d time.Duration
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
		var checking sync.Mutex
		slow := false
		h := newHarness(t, func(c *pathdialer.Config) {
			if idDur < 0 {
				return
			}
			c.Identity = func(ctx context.Context, ep pathdialer.Endpoint) (pathdialer.Identity, error) {
				checking.Lock()
				s := slow
				checking.Unlock()
				if s {
					select {
					case <-time.After(idDur):
					case <-ctx.Done():
						return pathdialer.Identity{}, ctx.Err()
					}
				}
				return ids.check(ctx, ep)
			}
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = time.Minute
		})
		defer h.close()
		h.hooks.onReconcile = func(pathdialer.Reconciliation) { time.Sleep(recDur) }
		h.start()
		checking.Lock()
		slow = true
		checking.Unlock()
		<-time.After(10 * time.Second)
		h.probes.set("eu", probeBlackhole)
		rel := h.await(pathdialer.EventRelease, nil)
		if rel.Endpoint != "us" {
			t.Fatalf("release %v", rel)
		}
		if n := countKind(h.rec.all(), pathdialer.EventHalt); n != 0 {
			t.Fatalf("%d halts in a clean failover", n)
		}
		d = rel.Duration
	})
	return d
}

// The switch's identity check runs alongside the fence and reconcile: when
// it is quicker it adds nothing to the hold; when it is slower the release
// waits for it, and no longer.
func TestSwitchIdentityCheckAddsNoHoldTime(t *testing.T) {
	const rec = time.Second
	base := failoverHold(t, rec, -1)
	if base < rec {
		t.Fatalf("hold without identity checks %v, shorter than the reconcile %v", base, rec)
	}
	if quick := failoverHold(t, rec, 200*time.Millisecond); quick != base {
		t.Errorf("hold with a 200 ms identity check %v, without %v: the check added time", quick, base)
	}
	if slow := failoverHold(t, rec, 2*time.Second); slow != base-rec+2*time.Second {
		t.Errorf("hold with a 2 s identity check %v, want %v (the check, not check + reconcile)", slow, base-rec+2*time.Second)
	}
}

// With no Identity check configured nothing is checked at a switch (the
// failover is unchanged), and with one configured a check whose answer cannot
// be had keeps flow off the new endpoint, loudly, until one proves it.
func TestSwitchIdentityCheckInconclusive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
		var mu sync.Mutex
		failUS := false
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = func(ctx context.Context, ep pathdialer.Endpoint) (pathdialer.Identity, error) {
				mu.Lock()
				f := failUS && ep.Name == "us"
				mu.Unlock()
				if f {
					return pathdialer.Identity{}, errors.New("account query: 503 Service Unavailable")
				}
				return ids.check(ctx, ep)
			}
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = time.Hour
		})
		defer h.close()
		h.start()
		stop := haltOnce(startAcquirer(h.p))
		defer stop()
		mu.Lock()
		failUS = true
		mu.Unlock()
		h.probes.set("eu", probeBlackhole)
		halt := h.await(pathdialer.EventHalt, nil)
		if !strings.Contains(halt.Cause, "could not be re-proved") || !strings.Contains(halt.Cause, "503") {
			t.Fatalf("halt cause: %s", halt.Cause)
		}
		<-time.After(10 * time.Second)
		if on := stop(); on["us"] != 0 {
			t.Fatalf("%d tickets on an endpoint whose identity was not re-proved", on["us"])
		}
		if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-1"); !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Fatalf("Acquire while unproven: %v", err)
		}
		mu.Lock()
		failUS = false
		mu.Unlock()
		if rel := h.await(pathdialer.EventRelease, nil); rel.Endpoint != "us" {
			t.Fatalf("release %v", rel)
		}
		if st := status(t, h.p, "us"); !st.Verified || st.IdentityMismatch {
			t.Fatalf("us at release: %+v", st)
		}
		if tk := mustAcquire(t, h.p, "o-2"); tk.Endpoint != "us" {
			t.Fatalf("ticket on %q", tk.Endpoint)
		}
	})
}

// With ReconcileByService, a service is released on the new endpoint when its own
// reconcile succeeded, but not before the switch's identity re-check proved
// the endpoint: a REST reconcile done at once waits for a 2 s check; when the
// check finds another account, REST is never released there.
func TestServiceReleaseWaitsForSwitchIdentityCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		account string
	}{{"verified", "ACC-1"}, {"mismatch", "SOMEONE-ELSE"}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
				var mu sync.Mutex
				slow := false
				fix := &hooks{}
				fixGate := make(chan struct{})
				h := newHarness(t, func(c *pathdialer.Config) {
					c.Identity = func(ctx context.Context, ep pathdialer.Endpoint) (pathdialer.Identity, error) {
						mu.Lock()
						s := slow && ep.Name == "us"
						mu.Unlock()
						if s {
							time.Sleep(2 * time.Second)
						}
						return ids.check(ctx, ep)
					}
					c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
					c.IdentityInterval = time.Hour
					c.ReconcileByService = map[string]pathdialer.ReconcileFunc{
						pathdialer.ServiceREST: pathdialer.NoReconcile,
						pathdialer.ServiceFIX: func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
							select { // the FIX reconcile outlasts the check
							case <-fixGate:
							case <-ctx.Done():
								return nil, ctx.Err()
							}
							return fix.reconcile(ctx, r)
						},
					}
				})
				defer h.close()
				defer close(fixGate)
				h.start()
				// A FIX order in flight, so the FIX reconcile has work to do.
				tk, err := h.p.Acquire(context.Background(), pathdialer.ServiceFIX, "o-fix")
				if err != nil {
					t.Fatal(err)
				}
				tk.Unknown(errors.New("read timeout after write"))
				stop := haltOnce(startAcquirer(h.p))
				defer stop()
				mu.Lock()
				slow = true
				mu.Unlock()
				ids.set("us", tc.account)
				h.probes.set("eu", probeBlackhole)
				hold := h.await(pathdialer.EventHold, nil)
				<-time.After(5 * time.Second)
				on := stop()
				var restRel *pathdialer.Event
				for _, e := range h.rec.all() {
					if e.Kind == pathdialer.EventRelease && e.Service == pathdialer.ServiceREST {
						restRel = &e
					}
				}
				switch tc.account {
				case "ACC-1":
					if restRel == nil || restRel.Endpoint != "us" {
						t.Fatalf("REST not released on us: %v", restRel)
					}
					if d := restRel.Time.Sub(hold.Time); d < 2*time.Second {
						t.Fatalf("REST released %v after the hold, before the 2 s identity check answered", d)
					}
					if on["us"] == 0 {
						t.Fatal("no REST ticket on us after its release")
					}
				default:
					if restRel != nil || on["us"] != 0 {
						t.Fatalf("REST released on an endpoint fronting another account (%v, %d tickets)", restRel, on["us"])
					}
				}
			})
		})
	}
}

// A coordinator's Assign is a switch too: the endpoint assigned is re-proved
// before flow is released there. The backup flipped to another account right
// after its verification at Start; the Assign to it ends with the trading
// halt naming the mismatch, and no ticket is granted there.
func TestAssignReprovesIdentity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.ExternalDecisions = true
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = time.Hour
		})
		defer h.close()
		h.start()
		ctx := context.Background()
		if err := h.p.Assign(ctx, "eu", 1); err != nil {
			t.Fatal(err)
		}
		ids.set("us", "SOMEONE-ELSE")
		stop := haltOnce(startAcquirer(h.p))
		defer stop()
		<-time.After(time.Second)
		err := h.p.Assign(ctx, "us", 2)
		if !errors.Is(err, pathdialer.ErrTradingHalted) || !strings.Contains(err.Error(), "SOMEONE-ELSE") {
			t.Fatalf("Assign to an endpoint fronting another account: %v", err)
		}
		<-time.After(3 * time.Second)
		if on := stop(); on["us"] != 0 || on["eu"] == 0 {
			t.Fatalf("tickets %v: want none on us (and some on eu before the Assign)", on)
		}
	})
}

// A backup whose last periodic identity check found another account, but
// which answers for the right one again by the time the primary fails, is
// re-checked at once before any halt: flow fails over to it instead of
// halting until the next periodic check.
func TestOldMismatchIsRecheckedBeforeAHalt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-2"}}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = time.Minute
		})
		defer h.close()
		h.start()
		h.await(pathdialer.EventIdentity, func(e pathdialer.Event) bool {
			return e.Endpoint == "us" && errors.Is(e.Err, engine.ErrIdentityMismatch)
		})
		time.Sleep(5 * time.Second)
		ids.set("us", "ACC-1") // put right; the next periodic check is 55 s away
		time.Sleep(5 * time.Second)
		h.probes.set("eu", probeBlackhole)
		rel := h.await(pathdialer.EventRelease, nil)
		if rel.Endpoint != "us" {
			t.Fatalf("release on %q, want us", rel.Endpoint)
		}
		if n := countKind(h.rec.all(), pathdialer.EventHalt); n != 0 {
			t.Fatalf("%d halts while the backup answered for the right account:\n%s", n, timeline(h.rec.all()))
		}
	})
}
