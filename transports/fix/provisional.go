package fix

// provisionalOrders keeps the orders a reconcile settled NOT_RECEIVED (the
// Path may re-query them after its quarantine: asking needs their session,
// symbol and side) until a re-query settles them, bounded (oldest dropped
// first) like the Path's own verdicts.
type provisionalOrders struct {
	m     map[string]*order
	queue []string // insertion order of m's keys (with dropped ones, compacted)
}

const provisionalMax = 1 << 16

func (p *provisionalOrders) get(id string) *order { return p.m[id] }

func (p *provisionalOrders) put(o *order) {
	if p.m == nil {
		p.m = make(map[string]*order)
	}
	ro := &order{clOrdID: o.clOrdID, msgType: o.msgType, sessionID: o.sessionID, symbol: o.symbol, side: o.side}
	if _, ok := p.m[o.clOrdID]; !ok {
		p.queue = append(p.queue, o.clOrdID)
	}
	p.m[o.clOrdID] = ro
	for len(p.m) > provisionalMax && len(p.queue) > 0 {
		delete(p.m, p.queue[0])
		p.queue = p.queue[1:]
	}
	p.compact()
}

func (p *provisionalOrders) drop(id string) {
	if _, ok := p.m[id]; ok {
		delete(p.m, id)
		p.compact()
	}
}

// compact drops the queue's entries no longer in m once they dominate it.
func (p *provisionalOrders) compact() {
	if len(p.queue) <= 2*len(p.m)+64 {
		return
	}
	q := make([]string, 0, len(p.m))
	seen := make(map[string]bool, len(p.m))
	for _, id := range p.queue {
		if _, ok := p.m[id]; ok && !seen[id] {
			seen[id] = true
			q = append(q, id)
		}
	}
	p.queue = q
}
