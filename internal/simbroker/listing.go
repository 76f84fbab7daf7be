package simbroker

import "time"

// listOrders answers a REST listing (GET /v1/orders): every order lookups
// can see, or the open ones only. A listing of every order answers for every
// order, as a FIX mass status does: it is audited as a KindLookup with no
// client order ID (Detail "order listing"), under the order lock so that its
// Seq orders it against submissions. An open-order listing is not audited.
func (b *Broker) listOrders(rg *Region, svc Service, src source, openOnly bool) []Order {
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	out := b.visibleList(openOnly, time.Now())
	if !openOnly {
		b.audit.add(Record{Kind: KindLookup, Region: rg.name, Service: string(svc), ConnID: src.connID,
			Outcome: OutcomeOK, Detail: "order listing", ConnOpened: src.opened, SentBy: src.sentBy, SentAfter: src.sentAfter})
	}
	return out
}
