package fix

import "github.com/quickfixgo/quickfix"

// answer is one message answering an order, for a reconcile.
type answer struct {
	clOrdID string
	msg     *quickfix.Message
}

// recentAnswers remembers the last answer of the most recent orders (bounded),
// so that an order whose answer arrives after its ticket was handed to
// reconciliation (a PossDup ExecutionReport recovered by resend) is still settled.
type recentAnswers struct {
	m    map[string]*quickfix.Message
	ring [recentAnswersMax]string
	next int
}

const recentAnswersMax = 4096

func (r *recentAnswers) put(id string, msg *quickfix.Message) {
	if _, ok := r.m[id]; !ok {
		if old := r.ring[r.next]; old != "" {
			delete(r.m, old)
		}
		r.ring[r.next] = id
		r.next = (r.next + 1) % recentAnswersMax
	}
	r.m[id] = msg
}

// answered settles the order's ticket on a definitive answer (msg, when it
// carries a fate, is remembered for reconciliation).
func (in *Initiator) answered(clOrdID string, msg *quickfix.Message) {
	in.mu.Lock()
	if msg != nil {
		in.recent.put(clOrdID, msg)
	}
	o := in.orders[clOrdID]
	settle := o != nil && !o.submitting
	if settle {
		delete(in.orders, clOrdID)
	} else if o != nil {
		o.early = true
	}
	in.mu.Unlock()
	if settle {
		in.stats.Answered.Add(1)
		o.ticket.Done()
	}
}

// deliver hands a status answer to a waiting reconcile.
func (in *Initiator) deliver(clOrdID string, msg *quickfix.Message) {
	in.mu.Lock()
	ch := in.waiters[clOrdID]
	in.mu.Unlock()
	if ch != nil {
		select {
		case ch <- answer{clOrdID, msg}:
		default:
		}
	}
}

// deliverRef hands a reject to whoever waits for what it refers to.
func (in *Initiator) deliverRef(ref refVal, msg *quickfix.Message) {
	if ref.msgType == msgTypeMassStatusRequest {
		in.deliverMass(ref.clOrdID, msg)
		return
	}
	in.deliver(ref.clOrdID, msg)
}

// deliverMass hands one mass-status answer to the waiting reconcile.
func (in *Initiator) deliverMass(reqID string, msg *quickfix.Message) {
	in.mu.Lock()
	ch := in.mass[reqID]
	in.mu.Unlock()
	if ch != nil {
		select {
		case ch <- msg:
		default:
		}
	}
}

// refOf finds what a reject refers to: RefSeqNum (45) among the messages this
// Initiator sent on the session, checked against RefMsgType (372) when present.
func (in *Initiator) refOf(msg *quickfix.Message, sid quickfix.SessionID) (refVal, bool) {
	seq, err := msg.Body.GetInt(tagRefSeqNum)
	if err != nil {
		return refVal{}, false
	}
	in.mu.Lock()
	v, ok := in.refs.m[refKey{sid, seq}]
	in.mu.Unlock()
	if !ok {
		return refVal{}, false
	}
	if rmt, err := msg.Body.GetString(tagRefMsgType); err == nil && rmt != v.msgType {
		return refVal{}, false
	}
	return v, true
}

// isStatusReport: an ExecutionReport answering a status request (FIX 4.4
// ExecType=I, FIX 4.2 ExecTransType=3) settles nothing by itself.
func isStatusReport(msg *quickfix.Message) bool {
	if et, _ := msg.Body.GetString(tagExecType); et == "I" {
		return true
	}
	tt, _ := msg.Body.GetString(tagExecTransType)
	return tt == "3"
}

// refKey names one message this Initiator sent.
type refKey struct {
	sid quickfix.SessionID
	seq int
}

type refVal struct{ clOrdID, msgType string }

// sentRefs remembers the MsgSeqNum of the most recent orders and status
// requests per session (bounded), so a reject that carries only RefSeqNum is
// matched to its order.
type sentRefs struct {
	m    map[refKey]refVal
	ring [recentAnswersMax]refKey
	n    int
}

func (r *sentRefs) put(k refKey, v refVal) {
	if _, ok := r.m[k]; !ok {
		if r.n >= recentAnswersMax {
			delete(r.m, r.ring[r.n%recentAnswersMax])
		}
		r.ring[r.n%recentAnswersMax] = k
		r.n++
	}
	r.m[k] = v
}
