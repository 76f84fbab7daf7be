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
		cfg.Reconciler = pathdialer.NoReconcile
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
