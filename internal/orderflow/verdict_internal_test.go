package orderflow

import (
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// The region a settlement names is read without the punctuation the Path
// appends to its detail ("booked through eu; found by the re-query").
func TestVerdictRegionFromDetail(t *testing.T) {
	for detail, want := range map[string]string{
		"booked through eu":                          "eu",
		"booked through eu; found after quarantine":  "eu",
		"status filled, booked through us-east-1, x": "us-east-1",
		"not found": "",
	} {
		v := verdictOf(pathdialer.Settlement{OrderID: "o1", Fate: pathdialer.FateFilled, Detail: detail}, time.Now(), "reconcile")
		if v.Region != want {
			t.Errorf("%q: region %q, want %q", detail, v.Region, want)
		}
	}
}

// The answers a failed reconcile attempt gave are the Path's verdicts (it
// asks only about the other orders next): the client records them as a
// successful attempt's, or those orders would never be settled.
func TestFailedAttemptsAnswersSettleOrders(t *testing.T) {
	c := &Client{orders: map[string]*OrderRecord{"o1": {ClOrdID: "o1"}, "o2": {ClOrdID: "o2"}}, resend: make(chan struct{}, 1)}
	c.onEvent(pathdialer.Event{Kind: pathdialer.EventReconcileFailure, Attempt: 1,
		Settlements: []pathdialer.Settlement{{OrderID: "o1", Service: REST, Fate: pathdialer.FateFilled, Detail: "booked through eu", Final: true}}})
	if r := c.orders["o1"]; !r.Settled || r.Fate != pathdialer.FateFilled || len(r.Verdicts) != 1 || !r.Verdicts[0].Final || r.Verdicts[0].Region != "eu" {
		t.Fatalf("o1 after a failed attempt that settled it: %+v", *r)
	}
	if r := c.orders["o2"]; r.Settled {
		t.Fatalf("o2, not answered, was settled: %+v", *r)
	}
}
