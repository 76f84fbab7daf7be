package rest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

func accountServer(t *testing.T, name, account string) *server {
	return newServer(t, name, true, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != "k" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"account_id":"` + account + `","entity":"Broker EU Ltd","entitlements":["spot","margin"]}`))
	})
}

// The REST identity check reads the account query; an endpoint that fronts
// another account is never chosen: the path halts instead.
func TestIdentityCheckKeepsAnotherAccountOut(t *testing.T) {
	eu := accountServer(t, "eu", "ACC-1")
	us := accountServer(t, "us", "ACC-2")
	check, err := rest.IdentityCheck(rest.IdentityOptions{Path: "/v1/account", Header: http.Header{"X-Api-Key": {"k"}}, TLSConfig: rootsOf(eu, us)})
	if err != nil {
		t.Fatal(err)
	}
	id, err := check(context.Background(), pathdialer.Endpoint{Name: "us", Services: map[string]string{"rest": us.URL}})
	if err != nil || id.Account != "ACC-2" || id.Entity != "Broker EU Ltd" || len(id.Entitlements) != 2 {
		t.Fatalf("identity %+v, %v", id, err)
	}
	h := newHarness(t, eu.URL, us.URL, func(c *pathdialer.Config) {
		c.Identity = check
		c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1", Entitlements: []string{"spot"}}
	})
	h.down["eu"].Store(true)
	halt := h.waitEvent(t, pathdialer.EventHalt)
	if !strings.Contains(halt.Cause, `account "ACC-2", expected "ACC-1"`) {
		t.Fatalf("halt cause: %s", halt.Cause)
	}
	if a, _ := h.path.Active(); a.Name != "eu" {
		t.Fatalf("switched to %q", a.Name)
	}
	// A wrong key is an inconclusive check (401), never an admission.
	bad, _ := rest.IdentityCheck(rest.IdentityOptions{Path: "/v1/account", Header: http.Header{"X-Api-Key": {"wrong-s3cret"}}, TLSConfig: rootsOf(eu)})
	_, err = bad(context.Background(), pathdialer.Endpoint{Name: "eu", Services: map[string]string{"rest": eu.URL}})
	if err == nil || errors.Is(err, engine.ErrIdentityMismatch) || strings.Contains(err.Error(), "wrong-s3cret") || !strings.Contains(err.Error(), "401") {
		t.Fatalf("401 identity: %v", err)
	}
	if _, err := rest.IdentityCheck(rest.IdentityOptions{}); !errors.Is(err, rest.ErrInvalidOptions) {
		t.Fatalf("no path: %v", err)
	}
}

// Against the simulated broker: every region fronts the same account.
func TestIdentityCheckOnTheSimulatedBroker(t *testing.T) {
	b, err := simbroker.Start(context.Background(), simbroker.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	check, err := rest.IdentityCheck(rest.IdentityOptions{Path: "/v1/account", Header: http.Header{"X-Api-Key": {b.APIKey()}}, TLSConfig: b.ClientTLSConfig()})
	if err != nil {
		t.Fatal(err)
	}
	want := pathdialer.Identity{Account: b.Config().AccountID, Entity: b.Config().Entity}
	for _, r := range b.Regions() {
		ep := pathdialer.Endpoint{Name: r.Name(), Services: map[string]string{"rest": r.RESTURL()}}
		got, err := check(context.Background(), ep)
		if err != nil {
			t.Fatal(err)
		}
		if err := want.Match(got); err != nil {
			t.Fatalf("region %s: %v", r.Name(), err)
		}
	}
}

// Degraded mode end to end: EU may fail over to EU only (a second EU region,
// down throughout); with only the US healthy, reads flow through the US while
// orders are refused naming the rule.
func TestDegradedModeReadsFlowOrdersRefusedOverREST(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, func(c *pathdialer.Config) {
		c.Endpoints[0].Jurisdiction = "EU"
		c.Endpoints[1].Jurisdiction = "US"
		c.Endpoints = append(c.Endpoints, pathdialer.Endpoint{Name: "eu2", Region: "eu-central", Priority: 2, Jurisdiction: "EU",
			Services: map[string]string{"rest": eu.URL}})
		probe := c.Probe
		c.Probe = func(ctx context.Context, ep pathdialer.Endpoint) error {
			if ep.Name == "eu2" {
				return errors.New("probe: eu2 unreachable")
			}
			return probe(ctx, ep)
		}
		c.Engine.TargetJurisdictions = []string{"EU"}
		c.DegradedReads = true
	})
	c, _ := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})
	h.down["eu"].Store(true)
	h.waitEvent(t, pathdialer.EventDegraded)
	resp, err := c.Get("https://broker.invalid/v1/orders/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Region") != "us" {
		t.Fatalf("degraded read went to %q", resp.Header.Get("X-Region"))
	}
	_, err = order(t, context.Background(), c, "o-deg")
	if !errors.Is(err, pathdialer.ErrTradingHalted) || !strings.Contains(err.Error(), "allowed jurisdictions [EU]") {
		t.Fatalf("order in degraded mode: %v", err)
	}
	if n := eu.n("POST /v1/orders") + us.n("POST /v1/orders"); n != 0 {
		t.Fatalf("%d orders reached a server in degraded mode", n)
	}
}
