package simbroker

import (
	"sync"
	"time"
)

// RecordKind says what an audit Record is about.
type RecordKind string

// Record kinds.
const (
	KindOrder   RecordKind = "order"   // an order submission (REST POST or FIX NewOrderSingle)
	KindCancel  RecordKind = "cancel"  // a cancel request
	KindLogon   RecordKind = "logon"   // a FIX logon accepted through a region
	KindLogout  RecordKind = "logout"  // a FIX session ended (logout or disconnect)
	KindFence   RecordKind = "fence"   // the broker dropped a session for a newer logon (one-per-credential)
	KindRefused RecordKind = "refused" // a FIX logon refused (session busy, unknown path, closing)
	// KindRegionFenced: a region was fenced for the account (FenceEnforced):
	// from this record's Seq on, every order through it is rejected. Detail
	// says by what (go api, rest kill switch through a region, FIX logon).
	KindRegionFenced RecordKind = "region-fenced"
	// KindRegionUnfenced: a fenced region takes the account's orders again.
	KindRegionUnfenced RecordKind = "region-unfenced"
	// KindToken: the account's highest fencing token was raised without an
	// order (RaiseToken or the token header on the REST kill switch); Token
	// is the new highest.
	KindToken RecordKind = "token"
	// KindLookup: the broker answered an order-status query by client order
	// ID (REST GET /v1/orders/{id}, FIX OrderStatusRequest). Outcome is
	// OutcomeOK when it found the order (Detail: its status, OrderID set),
	// OutcomeFailed when it answered "not found". A lookup is decided under
	// the same lock as order submissions: its Seq orders it against them.
	// A query of every order (FIX OrderMassStatusRequest; REST GET
	// /v1/orders, every status) has an empty ClientOrderID and Detail "mass
	// status" or "order listing": it answers for every order.
	KindLookup RecordKind = "lookup"
)

// Outcome is what the broker did with a submission.
type Outcome string

// Outcomes.
const (
	// OutcomeNew: booked now (answered normally).
	OutcomeNew Outcome = "new"
	// OutcomeCut: booked now, then the connection was cut before the answer
	// (UnknownOutcome fault). The order exists; the client cannot know.
	OutcomeCut Outcome = "cut"
	// OutcomeDuplicate (deduplicated): the dedup policy mapped the client
	// order ID to an order already booked; that order was returned and
	// nothing was booked. Record.OrderID names the existing order.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeRejected: invalid request (or an unparsable fencing token);
	// nothing booked.
	OutcomeRejected Outcome = "rejected"
	// OutcomeFenced: the region was fenced for the account (FenceEnforced);
	// nothing booked.
	OutcomeFenced Outcome = "rejected-fenced"
	// OutcomeStaleToken: the order's fencing token was lower than the highest
	// the account had seen (TokensChecked); nothing booked. Detail names both.
	OutcomeStaleToken Outcome = "rejected-stale-token"
	// OutcomeMissingToken: TokensChecked and the order carried no token;
	// nothing booked.
	OutcomeMissingToken Outcome = "rejected-missing-token"
	// OutcomeUnavailable: refused by a 503 burst or a Partial fault; nothing booked.
	OutcomeUnavailable Outcome = "unavailable"
	// OutcomeOK: a non-order record that succeeded (cancel, logon, ...).
	OutcomeOK Outcome = "ok"
	// OutcomeFailed: a non-order record that did not succeed (cancel of an
	// unknown or closed order, refused logon).
	OutcomeFailed Outcome = "failed"
)

// Record is one audit entry. Records are numbered by Seq in the order the
// broker decided them, across all regions and services.
type Record struct {
	Seq           uint64     `json:"seq"`
	Time          time.Time  `json:"time"`
	Kind          RecordKind `json:"kind"`
	Region        string     `json:"region"`
	Service       string     `json:"service"`           // rest | probe | fix
	ConnID        string     `json:"conn_id,omitempty"` // "<region>/<service>/<relay conn ID>"
	ClientOrderID string     `json:"client_order_id,omitempty"`
	// OrderID is the broker's order ID: the order booked (new, cut) or the
	// existing order a duplicate was mapped to. Empty when nothing matched.
	OrderID string `json:"order_id,omitempty"`
	// Token is the fencing token the submission carried (0: none), or for
	// KindToken the account's new highest token.
	Token   uint64  `json:"token,omitempty"`
	Outcome Outcome `json:"outcome"`
	PossDup bool    `json:"poss_dup,omitempty"` // FIX PossDupFlag=Y on the message
	Detail  string  `json:"detail,omitempty"`
	// ConnOpened is when the network opened the connection the record came
	// through (the relay accepted it, or the in-memory network dialled it);
	// zero when the broker cannot tell (a connection it cannot attribute).
	ConnOpened time.Time `json:"conn_opened,omitzero"`
	// SentBy is the latest instant the request's bytes can have left the
	// client: when the last of the bytes the broker had received on the
	// connection when it decided the record left the client (as the relay or
	// the in-memory network saw them). Every byte of the request left at or
	// before SentBy; on a connection the client had closed before SentBy
	// nothing was sent after it. Zero when the broker cannot tell.
	SentBy time.Time `json:"sent_by,omitzero"`
	// SentAfter is the earliest instant the last of those bytes can have
	// left the client (faultnet.ConnInfo.LastAfter): a relay that a fault
	// made stop reading sees bytes long after the client wrote them, so only
	// SentAfter proves an order left the client after some instant. Zero
	// when the broker cannot tell.
	SentAfter time.Time `json:"sent_after,omitzero"`
}

// AuditLog is an ordered copy of audit records with counting helpers.
type AuditLog []Record

// Filter returns the records for which keep returns true, in order.
func (l AuditLog) Filter(keep func(Record) bool) AuditLog {
	var out AuditLog
	for _, r := range l {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// Orders returns the order submission records.
func (l AuditLog) Orders() AuditLog {
	return l.Filter(func(r Record) bool { return r.Kind == KindOrder })
}

// Booked returns the submissions that booked an order (OutcomeNew or OutcomeCut).
func (l AuditLog) Booked() AuditLog {
	return l.Filter(func(r Record) bool {
		return r.Kind == KindOrder && (r.Outcome == OutcomeNew || r.Outcome == OutcomeCut)
	})
}

// AcceptedThrough returns the submissions that booked an order through
// region at or after since. After a client switched to another region, a
// non-empty result means two order paths were live.
func (l AuditLog) AcceptedThrough(region string, since time.Time) AuditLog {
	return l.Booked().Filter(func(r Record) bool { return r.Region == region && !r.Time.Before(since) })
}

// Duplicates returns the client order IDs booked more than once, in order of
// their second booking. With DedupAcrossRegions it stays empty (a non-empty
// result is a broker bug); with DedupOpenOnly or DedupNone a resend the
// broker did not recognise shows up here. Repeated submissions are counted
// by Submissions instead.
func (l AuditLog) Duplicates() []string {
	n := map[string]int{}
	var out []string
	for _, r := range l.Booked() {
		n[r.ClientOrderID]++
		if n[r.ClientOrderID] == 2 {
			out = append(out, r.ClientOrderID)
		}
	}
	return out
}

// Lookups returns the order-status queries the broker answered, in order.
func (l AuditLog) Lookups() AuditLog {
	return l.Filter(func(r Record) bool { return r.Kind == KindLookup })
}

// FirstLookup returns the first lookup of clientOrderID (or of every
// order) the broker answered at or after since, and whether there is one.
func (l AuditLog) FirstLookup(clientOrderID string, since time.Time) (Record, bool) {
	for _, r := range l {
		if r.Kind == KindLookup && (r.ClientOrderID == clientOrderID || r.ClientOrderID == "") && !r.Time.Before(since) {
			return r, true
		}
	}
	return Record{}, false
}

// Submissions counts raw order submissions per client order ID, whatever
// their outcome; a count above 1 is a client repeat (retry, resend, replay).
func (l AuditLog) Submissions() map[string]int {
	out := map[string]int{}
	for _, r := range l.Orders() {
		out[r.ClientOrderID]++
	}
	return out
}

// Rejected returns the order submissions refused by a strict-broker
// policy: OutcomeFenced, OutcomeStaleToken and OutcomeMissingToken.
func (l AuditLog) Rejected() AuditLog {
	return l.Filter(func(r Record) bool {
		return r.Kind == KindOrder && (r.Outcome == OutcomeFenced || r.Outcome == OutcomeStaleToken || r.Outcome == OutcomeMissingToken)
	})
}

// FenceSpan is one interval during which a region was fenced for the
// account by the broker (FenceEnforced).
type FenceSpan struct {
	Region string `json:"region"`
	// From is when the fence began; FromSeq the Seq of its KindRegionFenced
	// record. Every order record through Region with a higher Seq (and below
	// UntilSeq) was decided under the fence.
	From    time.Time `json:"from"`
	FromSeq uint64    `json:"from_seq"`
	// Until is when it was lifted, zero while it holds; UntilSeq likewise 0.
	Until    time.Time `json:"until,omitzero"`
	UntilSeq uint64    `json:"until_seq,omitempty"`
	// Cause is the fence record's Detail (what fenced the region).
	Cause string `json:"cause,omitempty"`
}

// Covers reports whether the span holds at audit sequence number seq.
func (s FenceSpan) Covers(seq uint64) bool {
	return seq > s.FromSeq && (s.UntilSeq == 0 || seq < s.UntilSeq)
}

// FenceSpans returns every interval in which a region was fenced by the
// broker, in the order they began (from KindRegionFenced and
// KindRegionUnfenced records).
func (l AuditLog) FenceSpans() []FenceSpan {
	var out []FenceSpan
	open := map[string]int{} // region → index in out
	for _, r := range l {
		switch r.Kind {
		case KindRegionFenced:
			if _, ok := open[r.Region]; ok {
				continue
			}
			open[r.Region] = len(out)
			out = append(out, FenceSpan{Region: r.Region, From: r.Time, FromSeq: r.Seq, Cause: r.Detail})
		case KindRegionUnfenced:
			if i, ok := open[r.Region]; ok {
				out[i].Until, out[i].UntilSeq = r.Time, r.Seq
				delete(open, r.Region)
			}
		}
	}
	return out
}

// FencedAt reports whether region was fenced by the broker at audit
// sequence number seq (use a Record's Seq: records are totally ordered).
func (l AuditLog) FencedAt(region string, seq uint64) bool {
	for _, s := range l.FenceSpans() {
		if s.Region == region && s.Covers(seq) {
			return true
		}
	}
	return false
}

// BookedWhileFenced returns booked submissions decided while their region
// was fenced by the broker. With FenceEnforced it stays empty (a non-empty
// result is a broker bug).
func (l AuditLog) BookedWhileFenced() AuditLog {
	spans := l.FenceSpans()
	return l.Booked().Filter(func(r Record) bool {
		for _, s := range spans {
			if s.Region == r.Region && s.Covers(r.Seq) {
				return true
			}
		}
		return false
	})
}

// audit is the broker's append-only log.
type audit struct {
	mu   sync.Mutex
	recs []Record
}

func (a *audit) add(r Record) Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	r.Seq = uint64(len(a.recs)) + 1
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	a.recs = append(a.recs, r)
	return r
}

func (a *audit) snapshot() AuditLog {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append(AuditLog(nil), a.recs...)
}
