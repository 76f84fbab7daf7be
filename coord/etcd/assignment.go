package etcdcoord

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Phase says what an Assignment lets followers do.
type Phase string

const (
	// PhaseActive: flow goes to Endpoint; the record's revision is the token.
	PhaseActive Phase = "active"
	// PhaseFencing: a switch from Endpoint to Target is under way. Followers
	// hold submissions and acknowledge; no ticket is granted under this record.
	PhaseFencing Phase = "fencing"
	// PhaseHalted: no endpoint is eligible; followers refuse submissions.
	PhaseHalted Phase = "halted"
	// PhaseRefused appears only in a follower's Ack: it refused the record
	// at Ack.Token (see State.Refused) and holds until a record it accepts
	// replaces it.
	PhaseRefused Phase = "refused"
)

// Assignment is the account's shared decision, stored at <prefix>assignment and
// written only by the elected decider. Its etcd ModRevision is the fencing
// token under which followers grant tickets (PhaseActive only).
type Assignment struct {
	Phase Phase `json:"phase"`
	// Endpoint carries the flow (PhaseActive), or carried it until the fence
	// (PhaseFencing) or the halt (PhaseHalted).
	Endpoint string `json:"endpoint"`
	// Target is where a switch goes (PhaseFencing).
	Target   string `json:"target,omitempty"`
	Failback bool   `json:"failback,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Decider and Term (its election key's create revision) wrote it; Lease
	// is its election session's lease (its election key is
	// <prefix>election/<Lease in hex>). A follower accepts the record only
	// if that key was the leader at the record's revision.
	Decider string `json:"decider"`
	Term    int64  `json:"term"`
	Lease   int64  `json:"lease"`
	// Created and Version bind the record to the one write of the key the
	// decider committed: Created is the key's etcd CreateRevision (0: this
	// write created the key) and Version the key's etcd Version after the
	// write. The decider's transaction compares the key's ModRevision with
	// the one it read, so the write lands exactly there. A follower accepts
	// the record only if the key, at the record's revision, has that
	// CreateRevision and Version: the same bytes written again (a replay, a
	// copy) land at another Version or under another CreateRevision. A record
	// that created the key (Created 0) is accepted only in PhaseFencing or
	// PhaseHalted: after a delete it could be replayed onto a new key.
	Created int64 `json:"created,omitempty"`
	Version int64 `json:"version"`
	// At is the decider's wall-clock time of the write, for humans only.
	At time.Time `json:"at"`
}

// Record bounds. A record beyond them is refused (etcd's own request limit
// is 1.5 MiB by default).
const (
	maxRecordBytes = 64 << 10
	maxNameBytes   = 128
	maxReasonBytes = 4 << 10
)

// decodeAssignment decodes and checks an assignment record. Every error wraps
// ErrBadRecord and never quotes the record beyond a short excerpt.
func decodeAssignment(b []byte) (Assignment, error) {
	var a Assignment
	if len(b) > maxRecordBytes {
		return Assignment{}, fmt.Errorf("%w: assignment is %d bytes, above the %d-byte limit", ErrBadRecord, len(b), maxRecordBytes)
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return Assignment{}, fmt.Errorf("%w: decode assignment: %w", ErrBadRecord, err)
	}
	if err := a.check(); err != nil {
		return Assignment{}, fmt.Errorf("%w: assignment: %w", ErrBadRecord, err)
	}
	return a, nil
}

// check names the first field of a decoded assignment that cannot be acted on.
func (a Assignment) check() error {
	switch a.Phase {
	case PhaseActive, PhaseFencing, PhaseHalted:
	default:
		return fmt.Errorf("unknown phase %s", excerpt(string(a.Phase)))
	}
	if err := recordName("endpoint", a.Endpoint); err != nil {
		return err
	}
	switch {
	case a.Phase == PhaseFencing && a.Target != "":
		if err := recordName("target", a.Target); err != nil {
			return err
		}
	case a.Phase != PhaseFencing && a.Target != "":
		return fmt.Errorf("target set in phase %s", a.Phase)
	}
	if err := recordName("decider", a.Decider); err != nil {
		return err
	}
	if a.Term <= 0 {
		return fmt.Errorf("term %d is not positive", a.Term)
	}
	if a.Lease <= 0 {
		return fmt.Errorf("lease %d is not positive", a.Lease)
	}
	if a.Version <= 0 || a.Created < 0 {
		return fmt.Errorf("version %d / created %d do not bind the record to a write of its key (a decider of an older release?)", a.Version, a.Created)
	}
	if len(a.Reason) > maxReasonBytes {
		return fmt.Errorf("reason is %d bytes, above the %d-byte limit", len(a.Reason), maxReasonBytes)
	}
	return nil
}

// recordName checks a name read from a record: what checkName allows in a
// configuration, printable, and at most maxNameBytes.
func recordName(field, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s is empty", field)
	case len(s) > maxNameBytes:
		return fmt.Errorf("%s is %d bytes, above the %d-byte limit", field, len(s), maxNameBytes)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not UTF-8", field)
	case strings.ContainsFunc(s, func(r rune) bool { return r == '/' || unicode.IsSpace(r) || !unicode.IsPrint(r) }):
		return fmt.Errorf("%s %s contains '/', white space or a control character", field, excerpt(s))
	}
	return nil
}

// excerpt quotes at most 40 bytes of s, escaped, noting what was cut.
func excerpt(s string) string {
	const n = 40
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}

// clip shortens a reason the decider writes to the record's limit.
func clip(s string) string {
	if len(s) <= maxReasonBytes {
		return s
	}
	cut := maxReasonBytes - 16
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (cut)"
}

// Ack is a follower's acknowledgement, stored at <prefix>followers/<name> under the
// follower's lease: it has applied the Assignment written at Token (held or
// halted submissions for PhaseFencing and PhaseHalted, released them on
// Endpoint for PhaseActive). Token 0: registered, nothing applied yet.
//
// A follower that refused the record at Token acknowledges it with
// PhaseRefused: it holds until a record it accepts replaces it.
type Ack struct {
	Token    uint64 `json:"token"`
	Phase    Phase  `json:"phase,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
}
