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

// identities answers identity checks from a table the test changes.
type identities struct {
	mu  sync.Mutex
	acc map[string]string
}

func (i *identities) set(ep, account string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.acc[ep] = account
}

func (i *identities) check(_ context.Context, ep pathdialer.Endpoint) (pathdialer.Identity, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	a, ok := i.acc[ep.Name]
	if !ok {
		return pathdialer.Identity{}, errors.New("no answer")
	}
	return pathdialer.Identity{Account: a, Entity: "Broker EU Ltd"}, nil
}

// An endpoint that answers with another account's ID is never a target, even the
// only healthy one: the Path halts, says why, and the Snapshot shows the mismatch.
// When the endpoint answers with the right account again, it becomes the target.
func TestIdentityMismatchHaltsInsteadOfSwitching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-2"}}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1", Entity: "Broker EU Ltd"}
			c.IdentityInterval = 10 * time.Second
		})
		defer h.close()
		h.start()
		idEv := h.await(pathdialer.EventIdentity, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		if !errors.Is(idEv.Err, engine.ErrIdentityMismatch) || !strings.Contains(idEv.Cause, `account "ACC-2", expected "ACC-1"`) {
			t.Fatalf("identity event = %v", idEv)
		}
		h.probes.set("eu", probeBlackhole)
		halt := h.await(pathdialer.EventHalt, nil)
		if !strings.Contains(halt.Cause, "identity mismatch") {
			t.Fatalf("halt cause does not name the mismatch: %s", halt.Cause)
		}
		if _, err := h.p.Acquire(context.Background(), "rest", "o-1"); !errors.Is(err, pathdialer.ErrTradingHalted) {
			t.Fatalf("Acquire: %v", err)
		}
		var us pathdialer.EndpointSnapshot
		for _, e := range h.p.Snapshot().Endpoints {
			if e.Name == "us" {
				us = e
			}
		}
		if us.State != engine.Healthy || us.Eligible || !us.IdentityMismatch || !strings.Contains(us.IdentityError, "ACC-2") {
			t.Fatalf("snapshot of us: %+v", us)
		}
		if n := countKind(h.rec.all(), pathdialer.EventSwitch); n != 0 {
			t.Fatalf("%d switches to an endpoint fronting another account", n)
		}
		ids.set("us", "ACC-1")
		sw := h.await(pathdialer.EventSwitch, nil)
		if sw.To != "us" {
			t.Fatalf("switch %v", sw)
		}
		h.await(pathdialer.EventRelease, nil)
	})
}

// The active endpoint starting to answer for another account is failed over at
// once (the identity check kicks an evaluation).
func TestActiveIdentityMismatchFailsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = 10 * time.Second
		})
		defer h.close()
		h.start()
		ids.set("eu", "ACC-666")
		d := h.await(pathdialer.EventDecision, nil)
		if d.Decision.Outcome != engine.FenceRequired || !strings.Contains(strings.Join(d.Decision.Notes, ";"), "fronts another account") {
			t.Fatalf("decision %+v", d.Decision)
		}
		if got := h.await(pathdialer.EventSwitch, nil); got.To != "us" {
			t.Fatalf("switch %v", got)
		}
	})
}

// epEU2 is an allowed (EU) backup for the jurisdiction tests, after "us".
var epEU2 = pathdialer.Endpoint{Name: "eu2", Region: "eu-central-1", Priority: 20, Jurisdiction: "EU",
	Services: map[string]string{"rest": "https://api-eu2.broker.example", "fix": "fix-eu2.broker.example:9878"}}

// Jurisdiction rule with the degraded read-only mode: EU may fail over to EU only;
// with the EU backup down and only the US healthy, reads go to the US while orders
// are refused with an error naming the rule; when the EU recovers, flow resumes
// there through reconcile and reads follow it again.
func TestDegradedModeReadsFlowOrdersRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Endpoints = append(c.Endpoints, epEU2)
			c.Endpoints[0].Jurisdiction = "EU"
			c.Endpoints[1].Jurisdiction = "US"
			c.Engine.TargetJurisdictions = []string{"EU"}
			c.DegradedReads = true
		})
		defer h.close()
		h.probes.set("eu2", probeFail)
		h.start()
		h.probes.set("eu", probeBlackhole)
		deg := h.await(pathdialer.EventDegraded, nil)
		if deg.Endpoint != "us" {
			t.Fatalf("degraded event %v", deg)
		}
		if re, _ := h.p.ReadEndpoint(); re.Name != "us" {
			t.Fatalf("reads go to %q in degraded mode", re.Name)
		}
		if a, _ := h.p.Active(); a.Name != "eu" {
			t.Fatalf("active moved to %q: the rule must keep orders off the US", a.Name)
		}
		_, err := h.p.Acquire(context.Background(), "rest", "o-us")
		if !errors.Is(err, pathdialer.ErrTradingHalted) || !strings.Contains(err.Error(), "allowed jurisdictions [EU]") || !strings.Contains(err.Error(), `reads go to "us"`) {
			t.Fatalf("order in degraded mode: %v", err)
		}
		if snap := h.p.Snapshot(); snap.ReadEndpoint != "us" || snap.Gate != pathdialer.GateHalted {
			t.Fatalf("snapshot read=%q gate=%v", snap.ReadEndpoint, snap.Gate)
		}
		h.probes.set("eu", probeOK)
		h.await(pathdialer.EventRelease, nil)
		if re, _ := h.p.ReadEndpoint(); re.Name != "eu" {
			t.Fatalf("reads still go to %q after recovery", re.Name)
		}
		recs := h.hooks.reconciliations()
		if len(recs) != 1 || recs[0].Reason != "resume after halt" {
			t.Fatalf("reconciliations %+v", recs)
		}
	})
}

func TestAdmissionConfigRefusals(t *testing.T) {
	ids := &identities{acc: map[string]string{}}
	for name, tc := range map[string]struct {
		edit func(*pathdialer.Config)
		want string
	}{
		"require without check":     {func(c *pathdialer.Config) { c.Engine.RequireAdmission = true }, "RequireAdmission needs an Identity"},
		"check without expectation": {func(c *pathdialer.Config) { c.Identity = ids.check }, "ExpectedIdentity is empty"},
		"degraded without rule":     {func(c *pathdialer.Config) { c.DegradedReads = true }, "DegradedReads needs Engine.TargetJurisdictions"},
		"blank jurisdiction":        {func(c *pathdialer.Config) { c.Engine.TargetJurisdictions = []string{""} }, "TargetJurisdictions"},
	} {
		cfg := baseConfig()
		cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
		cfg.Fencer = pathdialer.LocalFenceOnly
		cfg.Reconcile = pathdialer.NoReconcile
		tc.edit(&cfg)
		_, err := pathdialer.New(cfg)
		if !errors.Is(err, pathdialer.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming %q", name, err, tc.want)
		}
	}
}

func TestIdentityMatch(t *testing.T) {
	want := pathdialer.Identity{Account: "A", Entity: "E", Entitlements: []string{"spot", "margin"}, Extra: map[string]string{"SenderCompID": "BRK"}}
	if err := want.Match(pathdialer.Identity{Account: "A", Entity: "E", Entitlements: []string{"margin", "spot", "futures"}, Extra: map[string]string{"SenderCompID": "BRK"}}); err != nil {
		t.Fatalf("match: %v", err)
	}
	err := want.Match(pathdialer.Identity{Account: "B", Entity: "E2", Entitlements: []string{"spot"}, Extra: map[string]string{"SenderCompID": "OTHER"}})
	if !errors.Is(err, engine.ErrIdentityMismatch) {
		t.Fatalf("mismatch: %v", err)
	}
	for _, sub := range []string{`account "B"`, `entity "E2"`, `entitlement "margin" missing`, `SenderCompID "OTHER"`} {
		if !strings.Contains(err.Error(), sub) {
			t.Errorf("mismatch error %q lacks %q", err, sub)
		}
	}
}

// A full failover under a jurisdiction rule with an allowed backup: the backup's
// jurisdiction reaches the engine, so it is a target, and flow moves there.
func TestJurisdictionRuleFailsOverToAllowedBackup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Endpoints[0].Jurisdiction = "EU"
			c.Endpoints[1].Jurisdiction = "EU"
			c.Engine.TargetJurisdictions = []string{"EU"}
		})
		defer h.close()
		h.start()
		if st := status(t, h.p, "us"); st.Jurisdiction != "EU" || !st.Eligible {
			t.Fatalf("backup as the engine sees it: jurisdiction %q, eligible %v", st.Jurisdiction, st.Eligible)
		}
		h.probes.set("eu", probeBlackhole)
		sw := h.await(pathdialer.EventSwitch, nil)
		if sw.To != "us" {
			t.Fatalf("switch %v", sw)
		}
		h.await(pathdialer.EventRelease, nil)
		if tk := mustAcquire(t, h.p, "o-1"); tk.Endpoint != "us" {
			t.Fatalf("ticket on %q", tk.Endpoint)
		}
		if n := countKind(h.rec.all(), pathdialer.EventHalt); n != 0 {
			t.Fatalf("%d halts with an allowed backup", n)
		}
	})
}

// acquirer takes an order ticket every 50 ms until stopped and records where
// each ticket was granted: the evidence of where orders would have gone.
type acquirer struct {
	mu   sync.Mutex
	on   map[string]int
	stop chan struct{}
	done chan struct{}
}

func startAcquirer(p *pathdialer.Path) *acquirer {
	a := &acquirer{on: map[string]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for i := 0; ; i++ {
			select {
			case <-a.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
			tk, err := p.Acquire(ctx, pathdialer.ServiceREST, "o-"+string(rune('a'+i%26))+time.Now().Format("150405.000"))
			cancel()
			if err == nil {
				a.mu.Lock()
				a.on[tk.Endpoint]++
				a.mu.Unlock()
				tk.Done()
			}
		}
	}()
	return a
}

func (a *acquirer) halt() map[string]int {
	close(a.stop)
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.on
}

// The backup flips to another account (a DNS change behind it) long after its
// last periodic check, then the primary dies: with Engine.SwitchVerificationAge
// set, the stale verification is re-checked on demand before the switch, which
// finds the mismatch and halts naming it. Not one ticket is granted on the
// backup.
func TestIdentityFlipJustBeforeFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = 30 * time.Second
			c.Engine.SwitchVerificationAge = 5 * time.Second // re-check a stale target before the switch
		})
		defer h.close()
		h.start()
		acq := startAcquirer(h.p)
		<-time.After(10 * time.Second)
		ids.set("us", "SOMEONE-ELSE")
		<-time.After(2500 * time.Millisecond)
		h.probes.set("eu", probeBlackhole)
		halt := h.await(pathdialer.EventHalt, nil)
		<-time.After(5 * time.Second)
		on := acq.halt()
		if on["us"] != 0 {
			t.Fatalf("%d tickets granted on the backup fronting another account", on["us"])
		}
		if on["eu"] == 0 {
			t.Fatal("no ticket before the failure: the acquirer did not run")
		}
		if !strings.Contains(halt.Cause, "SOMEONE-ELSE") || !strings.Contains(halt.Cause, "on-demand") {
			t.Fatalf("halt cause does not give the fresh identity evidence: %s", halt.Cause)
		}
		if n := countKind(h.rec.all(), pathdialer.EventSwitch); n != 0 {
			t.Fatalf("%d switches", n)
		}
	})
}

// With Engine.SwitchVerificationAge set, a backup whose verification is stale
// is re-checked on demand before the switch, which goes ahead once it verified
// it (the re-check is what makes it active).
func TestSwitchReprovesIdentity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = 30 * time.Second
			c.Engine.SwitchVerificationAge = 5 * time.Second // re-check a stale target before the switch
		})
		defer h.close()
		h.start()
		<-time.After(10 * time.Second)
		h.probes.set("eu", probeBlackhole)
		od := h.await(pathdialer.EventOnDemand, nil)
		if !strings.Contains(od.Cause, `"us" HEALTHY, identity verified, eligible`) {
			t.Fatalf("on-demand event: %s", od.Cause)
		}
		if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
			t.Fatalf("switch %v", sw)
		}
		if st := status(t, h.p, "us"); time.Since(st.VerifiedAt) > 10*time.Second {
			t.Fatalf("us was switched to on a verification %v old", time.Since(st.VerifiedAt))
		}
	})
}

// A verification that no later check renews expires, with an event, and the
// endpoint stops being a target (later checks only fail: a new host answering
// 401).
func TestVerificationExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = 10 * time.Second
			c.Engine.VerificationMaxAge = 25 * time.Second
		})
		defer h.close()
		h.start()
		if st := status(t, h.p, "us"); !st.Verified || !st.Eligible {
			t.Fatalf("us at start: %+v", st)
		}
		ids.mu.Lock()
		delete(ids.acc, "us") // "no answer" from now on
		ids.mu.Unlock()
		ev := h.await(pathdialer.EventIdentity, func(e pathdialer.Event) bool {
			return e.Endpoint == "us" && strings.Contains(e.Cause, "expired")
		})
		if !strings.Contains(ev.Cause, "no answer") {
			t.Errorf("expiry event lacks the last check's error: %s", ev.Cause)
		}
		st := status(t, h.p, "us")
		if st.Verified || !st.VerificationExpired || st.Eligible {
			t.Fatalf("us after expiry: verified %v, expired %v, eligible %v", st.Verified, st.VerificationExpired, st.Eligible)
		}
		var us pathdialer.EndpointSnapshot
		for _, e := range h.p.Snapshot().Endpoints {
			if e.Name == "us" {
				us = e
			}
		}
		if !us.VerificationExpired || us.Verified {
			t.Fatalf("snapshot: %+v", us)
		}
	})
}

// A check that ignores its context is bounded by IdentityTimeout: Start returns
// on time, and the hung check does not stop the re-checks of the other
// endpoint, which is found on another account at its next check.
func TestIdentityTimeoutBoundsHungCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
		release := make(chan struct{})
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = func(ctx context.Context, ep pathdialer.Endpoint) (pathdialer.Identity, error) {
				if ep.Name == "us" {
					<-release // ignores ctx
				}
				return ids.check(ctx, ep)
			}
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = 10 * time.Second
			c.IdentityTimeout = 2 * time.Second
		})
		defer h.close()
		defer close(release)
		start := time.Now()
		h.start()
		if d := time.Since(start); d > 2*time.Second+500*time.Millisecond {
			t.Fatalf("Start took %v with a hung identity check (IdentityTimeout 2s)", d)
		}
		if st := status(t, h.p, "us"); st.Verified || st.IdentityError == nil || !errors.Is(st.IdentityError, context.DeadlineExceeded) {
			t.Fatalf("us after a hung check: verified %v, error %v", st.Verified, st.IdentityError)
		}
		ids.set("eu", "ACC-666")
		ev := h.await(pathdialer.EventIdentity, func(e pathdialer.Event) bool {
			return e.Endpoint == "eu" && errors.Is(e.Err, engine.ErrIdentityMismatch)
		})
		if time.Since(start) > 25*time.Second {
			t.Fatalf("eu's re-check: %v at %v", ev, time.Since(start))
		}
	})
}

// A primary proven at Start to front another account never gets a ticket: the
// gate does not open on it; flow opens on the backup after the switch.
func TestStartNeverOpensOnWrongAccount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "SOMEONE-ELSE", "us": "ACC-1"}}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
		})
		defer h.close()
		h.start()
		// Right after Start the gate is halted on eu, or the switch to us
		// already released flow there: never a ticket on eu.
		switch tk, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-1"); {
		case err == nil && tk.Endpoint != "us":
			t.Fatalf("Acquire right after Start: ticket on %q", tk.Endpoint)
		case err == nil:
			tk.Done()
		case !errors.Is(err, pathdialer.ErrTradingHalted) || !strings.Contains(err.Error(), "fronts another account"):
			t.Fatalf("Acquire right after Start: %v", err)
		}
		if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
			t.Fatalf("switch %v", sw)
		}
		h.await(pathdialer.EventRelease, nil)
		if tk := mustAcquire(t, h.p, "o-2"); tk.Endpoint != "us" {
			t.Fatalf("ticket on %q", tk.Endpoint)
		}
	})
}

// The gate never opens later on an endpoint found fronting another account
// while a switch to it was reconciling.
func TestReleaseRefusedOnWrongAccount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
		var h *harness
		h = newHarness(t, func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
		})
		defer h.close()
		var once sync.Once
		h.hooks.onReconcile = func(r pathdialer.Reconciliation) {
			if r.To == "us" {
				once.Do(func() {
					// Found during the reconcile: the new active endpoint now
					// answers for another account.
					ids.set("us", "SOMEONE-ELSE")
					_, _ = h.p.Engine().Admit("us", errors.Join(engine.ErrIdentityMismatch, errors.New("account SOMEONE-ELSE")))
				})
			}
		}
		h.start()
		acq := startAcquirer(h.p)
		h.probes.set("eu", probeBlackhole)
		// Refused at the release, or (the mismatch seen while the reconcile
		// still ran) halted by the evaluation that abandons it: either way
		// loud and naming the other account.
		halt := h.await(pathdialer.EventHalt, nil)
		if !strings.Contains(halt.Cause, "does not open on \"us\"") && !strings.Contains(halt.Cause, "\"us\" fronts another account") {
			t.Fatalf("halt %s", halt.Cause)
		}
		<-time.After(3 * time.Second)
		if on := acq.halt(); on["us"] != 0 {
			t.Fatalf("%d tickets on an endpoint known to front another account:\n%s", on["us"], timeline(h.rec.all()))
		}
	})
}

// New refuses expectations and rules that cannot compare as meant.
func TestAdmissionRefusesWhatCannotCompare(t *testing.T) {
	ids := &identities{acc: map[string]string{}}
	for name, tc := range map[string]struct {
		edit func(*pathdialer.Config)
		want string
	}{
		"blank Extra value": {func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Extra: map[string]string{"SenderCompID": ""}}
		}, `Extra["SenderCompID"] is blank`},
		"padded account": {func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1 "}
		}, "ExpectedIdentity.Account"},
		"blank entity": {func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1", Entity: "  "}
		}, "ExpectedIdentity.Entity"},
		"padded Extra value": {func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Extra: map[string]string{"SenderCompID": " BRK"}}
		}, `Extra["SenderCompID"]`},
		"blank entitlement": {func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "A", Entitlements: []string{""}}
		}, "Entitlements[0]"},
		"padded rule": {func(c *pathdialer.Config) {
			c.Endpoints[0].Jurisdiction, c.Endpoints[1].Jurisdiction = "EU", "EU"
			c.Engine.TargetJurisdictions = []string{"EU "}
		}, "white space"},
		"padded endpoint jurisdiction": {func(c *pathdialer.Config) {
			c.Endpoints[0].Jurisdiction, c.Endpoints[1].Jurisdiction = "EU", " EU"
			c.Engine.TargetJurisdictions = []string{"EU"}
		}, "white space"},
		"unknown jurisdiction in the rule": {func(c *pathdialer.Config) {
			c.Endpoints[0].Jurisdiction, c.Endpoints[1].Jurisdiction = "EU", "EU"
			c.Engine.TargetJurisdictions = []string{"EU", "UE"}
		}, `names "UE"`},
		"rule no backup satisfies": {func(c *pathdialer.Config) {
			c.Endpoints[0].Jurisdiction, c.Endpoints[1].Jurisdiction = "EU", "US"
			c.Engine.TargetJurisdictions = []string{"EU"}
		}, "no backup lies in the allowed jurisdictions"},
		"backup without jurisdiction": {func(c *pathdialer.Config) {
			c.Endpoints[0].Jurisdiction = "EU"
			c.Engine.TargetJurisdictions = []string{"EU"}
		}, `backup "us" has no jurisdiction`},
		"negative StartWait": {func(c *pathdialer.Config) { c.StartWait = -time.Second }, "StartWait"},
	} {
		cfg := baseConfig()
		cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
		cfg.Fencer = pathdialer.LocalFenceOnly
		cfg.Reconcile = pathdialer.NoReconcile
		tc.edit(&cfg)
		_, err := pathdialer.New(cfg)
		if !errors.Is(err, pathdialer.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming %q", name, err, tc.want)
		}
	}
}

// With Identity set, admission is required: an endpoint whose identity was
// never verified is not a target.
func TestIdentityRequiresAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1"}} // us never answers
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
		})
		defer h.close()
		h.start()
		if !h.p.Engine().Config().RequireAdmission {
			t.Fatal("RequireAdmission is off with an Identity check")
		}
		if st := status(t, h.p, "us"); st.Eligible {
			t.Fatalf("never-verified us is eligible: %+v", st)
		}
		h.probes.set("eu", probeBlackhole)
		halt := h.await(pathdialer.EventHalt, nil)
		if !strings.Contains(halt.Cause, "identity never verified") {
			t.Fatalf("halt cause: %s", halt.Cause)
		}
	})
}

// Coordinated mode: Assign refuses, before anything changes, a target this
// process found fronting another account or lying outside the rules.
func TestAssignRefusesInadmissibleTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "SOMEONE-ELSE", "eu2": "ACC-1"}}
		h := newHarness(t, func(c *pathdialer.Config) {
			c.ExternalDecisions = true
			c.Identity = ids.check
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
		})
		defer h.close()
		h.start()
		if err := h.p.Assign(context.Background(), "eu", 1); err != nil {
			t.Fatal(err)
		}
		err := h.p.Assign(context.Background(), "us", 2)
		if !errors.Is(err, engine.ErrIdentityMismatch) || !strings.Contains(err.Error(), "SOMEONE-ELSE") {
			t.Fatalf("Assign to the wrong account: %v", err)
		}
		if a, gen := h.p.Active(); a.Name != "eu" || gen != 1 || len(h.hooks.fenceCalls()) != 0 {
			t.Fatalf("a refused Assign changed something: %s/%d, %d fences", a.Name, gen, len(h.hooks.fenceCalls()))
		}
		tk := mustAcquire(t, h.p, "o-1")
		tk.Done()
		if tk.Endpoint != "eu" {
			t.Fatalf("ticket on %q", tk.Endpoint)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.ExternalDecisions = true
			c.Endpoints = append(c.Endpoints, epEU2)
			c.Endpoints[0].Jurisdiction, c.Endpoints[1].Jurisdiction = "EU", "US"
			c.Engine.TargetJurisdictions = []string{"EU"}
		})
		defer h.close()
		h.start()
		if err := h.p.Assign(context.Background(), "us", 1); !errors.Is(err, engine.ErrJurisdiction) || !strings.Contains(err.Error(), "outside the allowed [EU]") {
			t.Fatalf("Assign outside the rules: %v", err)
		}
		if err := h.p.Assign(context.Background(), "eu2", 2); err != nil {
			t.Fatalf("Assign to the allowed backup: %v", err)
		}
	})
}

// Degraded mode keeps deciding while halted: it starts when the endpoint outside
// the rules recovers during the halt, ends when that endpoint goes DOWN, and
// ends when it is found fronting another account.
func TestDegradedModeFollowsTheHalt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Endpoints = append(c.Endpoints, epEU2)
			c.Endpoints[0].Jurisdiction = "EU"
			c.Endpoints[1].Jurisdiction = "US"
			c.Engine.TargetJurisdictions = []string{"EU"}
			c.DegradedReads = true
		})
		defer h.close()
		h.probes.set("eu2", probeFail)
		h.probes.set("us", probeFail)
		h.start()
		h.probes.set("eu", probeBlackhole)
		halt := h.await(pathdialer.EventHalt, nil)
		if strings.Contains(halt.Cause, "degraded mode") {
			t.Fatalf("degraded mode with no healthy endpoint: %s", halt.Cause)
		}
		// us recovers during the halt: reads may go there now.
		h.probes.set("us", probeOK)
		if deg := h.await(pathdialer.EventDegraded, nil); deg.Endpoint != "us" {
			t.Fatalf("degraded event %v", deg)
		}
		if re, _ := h.p.ReadEndpoint(); re.Name != "us" {
			t.Fatalf("reads go to %q", re.Name)
		}
		if _, err := h.p.Acquire(context.Background(), "rest", "o-1"); !errors.Is(err, pathdialer.ErrTradingHalted) || !strings.Contains(err.Error(), `reads go to "us"`) {
			t.Fatalf("Acquire in degraded mode: %v", err)
		}
		// us goes DOWN: reads leave it.
		h.probes.set("us", probeFail)
		if deg := h.await(pathdialer.EventDegraded, nil); deg.Endpoint != "" || !strings.Contains(deg.Cause, "ended") {
			t.Fatalf("degraded end %v", deg)
		}
		if re, _ := h.p.ReadEndpoint(); re.Name != "eu" {
			t.Fatalf("reads still go to %q after it went DOWN", re.Name)
		}
		// Back again, then found fronting another account: reads leave it.
		h.probes.set("us", probeOK)
		h.await(pathdialer.EventDegraded, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
		_, _ = h.p.Engine().Admit("us", errors.Join(engine.ErrIdentityMismatch, errors.New("account SOMEONE-ELSE")))
		h.await(pathdialer.EventDegraded, func(e pathdialer.Event) bool { return e.Endpoint == "" })
		if re, _ := h.p.ReadEndpoint(); re.Name != "eu" {
			t.Fatalf("reads still go to %q, which fronts another account", re.Name)
		}
	})
}

// A slow identity check at switch time keeps the hold: an order waits (it is
// not refused), and its ticket is granted on the new endpoint only after the
// check proved it.
func TestSlowSwitchCheckKeepsTheHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
		var slow sync.Mutex
		slowUS := false
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Identity = func(ctx context.Context, ep pathdialer.Endpoint) (pathdialer.Identity, error) {
				slow.Lock()
				s := slowUS && ep.Name == "us"
				slow.Unlock()
				if s {
					select {
					case <-time.After(3 * time.Second):
					case <-ctx.Done():
						return pathdialer.Identity{}, ctx.Err()
					}
				}
				return ids.check(ctx, ep)
			}
			c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
			c.IdentityInterval = time.Hour
		})
		defer h.close()
		h.start()
		<-time.After(10 * time.Second)
		slow.Lock()
		slowUS = true
		slow.Unlock()
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventHold, nil)
		tk, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-during-check")
		if err != nil {
			t.Fatalf("an order during the slow check was refused: %v", err)
		}
		defer tk.Done()
		st := status(t, h.p, "us")
		if tk.Endpoint != "us" || !st.Verified || time.Since(st.VerifiedAt) > time.Second || st.VerifiedAt.Before(time.Now().Add(-5*time.Second)) {
			t.Fatalf("ticket on %q; us verified %v, %v ago", tk.Endpoint, st.Verified, time.Since(st.VerifiedAt))
		}
		if n := countKind(h.rec.all(), pathdialer.EventHalt); n != 0 {
			t.Fatalf("%d halts during a slow but successful check", n)
		}
	})
}
