package orderflow

import (
	"context"
	"slices"
	"testing"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// An order a reconcile found NOT_RECEIVED, re-sent with the same client
// order ID and accepted, rests at the broker: the client's record of its
// open orders lists it (the Path's open-order reconcile reads that record,
// so a cancel-on-disconnect of it is reported). Orders settled filled, or
// NOT_RECEIVED and not accepted since, are not listed.
func TestOpenOrdersOfListsAnOrderAcceptedAfterNotReceived(t *testing.T) {
	lim := OrderSpec{Symbol: "EURUSD", Limit: "1.05"}
	c := &Client{orders: map[string]*OrderRecord{
		"resent":  {ClOrdID: "resent", Transport: REST, Spec: lim, Settled: true, Fate: pathdialer.FateNotReceived, Resent: 1, Acked: true, AckEndpoint: "us"},
		"pending": {ClOrdID: "pending", Transport: REST, Spec: lim, Settled: true, Fate: pathdialer.FateNotReceived},
		"filled":  {ClOrdID: "filled", Transport: REST, Spec: lim, Settled: true, Fate: pathdialer.FateFilled, Acked: true, AckEndpoint: "eu"},
		"resting": {ClOrdID: "resting", Transport: REST, Spec: lim, Settled: true, Fate: pathdialer.FateResting},
		"acked":   {ClOrdID: "acked", Transport: REST, Spec: lim, Acked: true, AckEndpoint: "eu"},
	}, ids: []string{"acked", "filled", "pending", "resent", "resting"}}
	got, err := c.openOrdersOf(context.Background(), REST)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, o := range got {
		ids = append(ids, o.OrderID)
	}
	if want := []string{"acked", "resent", "resting"}; !slices.Equal(ids, want) {
		t.Fatalf("open orders %v, want %v", ids, want)
	}
}
