package etcdcoord

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

func ob(observer, ep string, st engine.HealthState, fresh, stale bool) Observation {
	return Observation{Observer: observer, Endpoint: ep, State: st, Fresh: fresh, Stale: stale, Latency: time.Millisecond}
}

func TestAggregate(t *testing.T) {
	H, D, G := engine.Healthy, engine.Down, engine.Degraded
	tests := []struct {
		name   string
		obs    []Observation
		quorum int
		want   VerdictState
		down   int
	}{
		{"one of three cut off from the endpoint: disputed, not down", []Observation{ob("a", "eu", D, false, false), ob("b", "eu", H, true, false), ob("c", "eu", H, true, false)}, 2, VerdictHealthy, 1},
		{"one down, one healthy, third dead (lease expired): disputed", []Observation{ob("a", "eu", D, false, false), ob("b", "eu", H, true, false)}, 2, VerdictDisputed, 1},
		{"quorum down", []Observation{ob("a", "eu", D, false, false), ob("b", "eu", D, false, false), ob("c", "eu", H, true, false)}, 2, VerdictDown, 2},
		{"single monitor alive: no quorum", []Observation{ob("a", "eu", D, false, false)}, 2, VerdictNoQuorum, 1},
		{"stale opinions do not count", []Observation{ob("a", "eu", D, false, true), ob("b", "eu", D, false, true), ob("c", "eu", H, true, false)}, 2, VerdictNoQuorum, 0},
		{"healthy but not fresh is not eligible", []Observation{ob("a", "us", H, false, false), ob("b", "us", H, false, false)}, 2, VerdictDisputed, 0},
		{"degraded reports: disputed", []Observation{ob("a", "us", G, false, false), ob("b", "us", G, false, false)}, 2, VerdictDisputed, 0},
		{"a duplicate opinion counts once (last wins)", []Observation{ob("a", "eu", D, false, false), ob("a", "eu", D, false, false), ob("a", "eu", H, true, false), ob("b", "eu", D, false, false)}, 2, VerdictDisputed, 1},
		{"quorum below half: both reached is disputed", []Observation{ob("a", "eu", D, false, false), ob("b", "eu", H, true, false)}, 1, VerdictDisputed, 1},
		{"quorum 1: single monitor decides", []Observation{ob("a", "eu", D, false, false)}, 1, VerdictDown, 1},
		{"quorum < 1 is treated as 1", []Observation{ob("a", "eu", H, true, false)}, 0, VerdictHealthy, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Aggregate(tt.obs, tt.quorum)
			v := got[tt.obs[0].Endpoint]
			if v.State != tt.want || v.Down != tt.down {
				t.Fatalf("got %v (down %d, %+v), want %v (down %d)", v.State, v.Down, v, tt.want, tt.down)
			}
		})
	}
}

func TestAggregateIsPerEndpointAndMedianLatency(t *testing.T) {
	obs := []Observation{
		{Observer: "a", Endpoint: "eu", State: engine.Healthy, Fresh: true, Latency: 30 * time.Millisecond},
		{Observer: "b", Endpoint: "eu", State: engine.Healthy, Fresh: true, Latency: 10 * time.Millisecond},
		{Observer: "c", Endpoint: "eu", State: engine.Healthy, Fresh: true, Latency: 20 * time.Millisecond},
		{Observer: "a", Endpoint: "us", State: engine.Down},
	}
	v := Aggregate(obs, 2)
	if len(v) != 2 || v["eu"].Latency != 20*time.Millisecond || v["eu"].State != VerdictHealthy || v["us"].State != VerdictNoQuorum {
		t.Fatalf("got %+v", v)
	}
	if got := v["eu"].HealthyBy; len(got) != 3 || got[0] != "a" || got[2] != "c" {
		t.Fatalf("HealthyBy not sorted: %v", got)
	}
}

func TestVerdictStateString(t *testing.T) {
	for s, want := range map[VerdictState]string{VerdictNoQuorum: "NO_QUORUM", VerdictHealthy: "HEALTHY", VerdictDown: "DOWN", VerdictDisputed: "DISPUTED", 9: "VerdictState(9)"} {
		if s.String() != want {
			t.Errorf("%d: %q", s, s.String())
		}
	}
}

func TestObservationJSONRoundTrip(t *testing.T) {
	for _, st := range []engine.HealthState{engine.Unknown, engine.Healthy, engine.Degraded, engine.Down} {
		in := Observation{Observer: "a", Endpoint: "eu", State: st, Fresh: true, Latency: time.Second, Round: 3}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var out Observation
		if err := json.Unmarshal(b, &out); err != nil || out != in {
			t.Fatalf("%s: got %+v, %v", b, out, err)
		}
	}
	var out Observation
	if err := json.Unmarshal([]byte(`{"state":"BOGUS"}`), &out); err == nil {
		t.Fatal("an unknown state was accepted")
	}
}

// Identity by quorum: one live observer's mismatch keeps an endpoint out; a
// quorum of live verifications admits it; stale observers count for nothing.
func TestAggregateIdentity(t *testing.T) {
	id := func(observer, verdict string, stale bool) Observation {
		o := ob(observer, "us", engine.Healthy, true, stale)
		o.Identity = verdict
		if verdict == IdentityMismatch {
			o.IdentityError = "account \"X\", expected \"ACC-1\""
		}
		return o
	}
	for _, tt := range []struct {
		name string
		obs  []Observation
		want string
	}{
		{"quorum verified", []Observation{id("a", IdentityVerified, false), id("b", IdentityVerified, false), id("c", "", false)}, IdentityVerified},
		{"one verification is not a quorum", []Observation{id("a", IdentityVerified, false), id("b", "", false), id("c", "", false)}, IdentityUnproven},
		{"one mismatch outweighs a quorum", []Observation{id("a", IdentityVerified, false), id("b", IdentityVerified, false), id("c", IdentityMismatch, false)}, IdentityMismatch},
		{"stale verifications do not count", []Observation{id("a", IdentityVerified, true), id("b", IdentityVerified, false), id("c", "", false)}, IdentityUnproven},
		{"stale mismatch does not count", []Observation{id("a", IdentityMismatch, true), id("b", IdentityVerified, false), id("c", IdentityVerified, false)}, IdentityVerified},
	} {
		v := Aggregate(tt.obs, 2)["us"]
		if v.Identity != tt.want {
			t.Errorf("%s: %s (%+v), want %s", tt.name, v.Identity, v, tt.want)
		}
		if tt.want == IdentityMismatch && (len(v.MismatchBy) != 1 || v.IdentityError == "") {
			t.Errorf("%s: mismatch not named: %+v", tt.name, v)
		}
	}
}
