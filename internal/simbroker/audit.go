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
	// OutcomeDuplicate: the client order ID was already booked; the existing
	// order was returned and nothing was booked.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeRejected: invalid request; nothing booked.
	OutcomeRejected Outcome = "rejected"
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
	Outcome       Outcome    `json:"outcome"`
	PossDup       bool       `json:"poss_dup,omitempty"` // FIX PossDupFlag=Y on the message
	Detail        string     `json:"detail,omitempty"`
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
// their second booking. The book is idempotent, so this stays empty; a
// non-empty result is a broker bug. Repeated submissions are counted by
// Submissions instead.
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

// Submissions counts raw order submissions per client order ID, whatever
// their outcome; a count above 1 is a client repeat (retry, resend, replay).
func (l AuditLog) Submissions() map[string]int {
	out := map[string]int{}
	for _, r := range l.Orders() {
		out[r.ClientOrderID]++
	}
	return out
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
