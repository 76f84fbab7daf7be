package etcdcoord_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// accounts answers identity checks per observer and endpoint; absent entries
// answer the expected account.
type accounts struct {
	mu sync.Mutex
	m  map[string]string // observer/endpoint -> account, "" = no answer
}

func (a *accounts) set(observer, ep, account string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.m[observer+"/"+ep] = account
}

func (a *accounts) check(observer string) pathdialer.IdentityFunc {
	return func(ctx context.Context, ep pathdialer.Endpoint) (pathdialer.Identity, error) {
		a.mu.Lock()
		acc, ok := a.m[observer+"/"+ep.Name]
		a.mu.Unlock()
		switch {
		case !ok:
			return pathdialer.Identity{Account: "ACC-1"}, nil
		case acc == "":
			return pathdialer.Identity{}, errors.New("401 from a new host")
		}
		return pathdialer.Identity{Account: acc}, nil
	}
}

func (r *rig) identityObserver(name string, ids *accounts) {
	cfg := etcdcoord.DefaultObserverConfig()
	cfg.Client, cfg.Prefix, cfg.Name, cfg.Region, cfg.Endpoints = r.cli, prefix, name, name, endpoints
	cfg.Probe = r.reach.probe(name)
	cfg.Interval, cfg.ProbeTimeout, cfg.TTL = 100*time.Millisecond, 50*time.Millisecond, time.Second
	cfg.Engine.FailureThreshold, cfg.Engine.MaxHealthAge = 2, 500*time.Millisecond
	cfg.Identity, cfg.ExpectedIdentity = ids.check(name), pathdialer.Identity{Account: "ACC-1"}
	cfg.IdentityInterval, cfg.IdentityTimeout, cfg.IdentityMaxAge = 100*time.Millisecond, 50*time.Millisecond, 500*time.Millisecond
	o, err := etcdcoord.NewObserver(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.goRun(r.ctx, o.Run)
}

// The decider fails over only to a target a quorum of observers agrees fronts
// the account: with the backup found on another account (by one observer, or
// verified by fewer than a quorum), the primary's death halts; once a quorum
// verifies it again, flow moves there.
func TestDeciderRequiresQuorumIdentity(t *testing.T) {
	r := newRig(t)
	h := r.history()
	ids := &accounts{m: map[string]string{}}
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.identityObserver(o, ids)
	}
	dc := deciderConfig(r.cli, "decider-1")
	dc.RequireIdentity = true
	d, err := etcdcoord.NewDecider(dc)
	if err != nil {
		t.Fatal(err)
	}
	r.goRun(r.ctx, d.Run)
	tr := r.trader(r.cli, "trader-1")
	waitActive(t, h, "eu", tr)

	// One observer sees the backup answer for another account; the other two
	// cannot get an answer (fewer than a quorum verify it).
	ids.set("mon-eu", "us", "SOMEONE-ELSE")
	ids.set("mon-us", "us", "")
	ids.set("mon-ap", "us", "")
	etcdtest.Eventually(t, 10*time.Second, "the mismatch reaches the decider, the old verifications expired", func() bool {
		v := d.Aggregator().Verdicts()["us"]
		return v.Identity == etcdcoord.IdentityMismatch && len(v.VerifiedBy) == 0
	})
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.reach.set(o, "eu", false)
	}
	etcdtest.Eventually(t, 10*time.Second, "a halt naming the identity", func() bool {
		l, ok := h.last()
		return ok && l.a.Phase == etcdcoord.PhaseHalted && strings.Contains(l.a.Reason, "identity")
	})
	for _, a := range h.actives() {
		if a == "us" {
			t.Fatal("assigned to a backup found on another account")
		}
	}
	// Only one observer verifies it: still no quorum.
	ids.set("mon-eu", "us", "ACC-1")
	etcdtest.Eventually(t, 10*time.Second, "mismatch gone, one verification", func() bool {
		v := d.Aggregator().Verdicts()["us"]
		return v.Identity == etcdcoord.IdentityUnproven && len(v.VerifiedBy) == 1
	})
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		<-time.After(50 * time.Millisecond)
		if l, _ := h.last(); l.a.Phase == etcdcoord.PhaseActive && l.a.Endpoint == "us" {
			t.Fatal("assigned to us on one observer's verification (quorum 2)")
		}
	}
	ids.set("mon-us", "us", "ACC-1")
	waitActive(t, h, "us", tr)
}

// An observer fed by a Path's events publishes its identity verdicts: verified,
// mismatch, and nothing once the verification is older than IdentityMaxAge.
func TestObserverRecordsIdentityEvents(t *testing.T) {
	r := newRig(t)
	cfg := etcdcoord.DefaultObserverConfig()
	cfg.Client, cfg.Prefix, cfg.Name, cfg.Region = r.cli, prefix, "mon-1", "eu"
	cfg.Endpoints = []pathdialer.Endpoint{endpoints[0], endpoints[1]}
	cfg.Endpoints[1].Jurisdiction = "US"
	cfg.IdentityMaxAge = 300 * time.Millisecond
	o, err := etcdcoord.NewObserver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	find := func(ep string) etcdcoord.Observation {
		for _, ob := range o.Observations() {
			if ob.Endpoint == ep {
				return ob
			}
		}
		return etcdcoord.Observation{}
	}
	o.RecordEvent(pathdialer.Event{Kind: pathdialer.EventIdentity, Endpoint: "us", Cause: "identity verified"})
	if ob := find("us"); ob.Identity != etcdcoord.IdentityVerified || ob.Jurisdiction != "US" {
		t.Fatalf("after a verified event: %+v", ob)
	}
	o.RecordEvent(pathdialer.Event{Kind: pathdialer.EventIdentity, Endpoint: "eu", Err: errors.Join(engine.ErrIdentityMismatch, errors.New(`account "X"`)), Cause: "mismatch"})
	if ob := find("eu"); ob.Identity != etcdcoord.IdentityMismatch || !strings.Contains(ob.IdentityError, `account "X"`) {
		t.Fatalf("after a mismatch event: %+v", ob)
	}
	// An expiry notice carries no verdict: it must not verify anything.
	o.RecordEvent(pathdialer.Event{Kind: pathdialer.EventIdentity, Endpoint: "eu", Cause: "identity verification of \"eu\" expired"})
	if ob := find("eu"); ob.Identity != etcdcoord.IdentityMismatch {
		t.Fatalf("an expiry notice changed the verdict: %+v", ob)
	}
	etcdtest.Eventually(t, 5*time.Second, "the verification expires", func() bool { return find("us").Identity == "" })
}
