package simbroker

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// A listing of every order (GET /v1/orders) answers for every order, as a
// FIX mass status does: it is audited as a lookup with no client order ID,
// so a check of "did the broker answer for this order since" counts it. A
// listing of open orders only answers for none in particular: not audited.
func TestListingOfEveryOrderIsAuditedAsALookup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, c, eu := memBroker(t, func(*Config) {})
		t0 := time.Now()
		if r := mustDo(t, c, http.MethodGet, eu+"/v1/orders?status=open", b.APIKey(), nil); r.code != http.StatusOK {
			t.Fatalf("open listing: %d %s", r.code, r.body)
		}
		if _, ok := b.Audit().FirstLookup("any-order", t0); ok {
			t.Fatalf("an open-order listing counted as an answer for every order: %+v", b.Audit().Lookups())
		}
		if r := mustDo(t, c, http.MethodGet, eu+"/v1/orders?status=all", b.APIKey(), nil); r.code != http.StatusOK {
			t.Fatalf("listing: %d %s", r.code, r.body)
		}
		r, ok := b.Audit().FirstLookup("any-order", t0)
		if !ok || r.ClientOrderID != "" || r.Region != "eu" || r.Outcome != OutcomeOK || r.Detail != "order listing" {
			t.Fatalf("listing of every order audited as %+v (found %v), want a lookup of every order", r, ok)
		}
	})
}
