package etcdcoord

import (
	"encoding/json"
	"fmt"
	"time"
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
)

// Assignment is the account's shared decision, stored at Keys.Assignment and
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
	// Decider and Term (its election key's create revision) wrote it.
	Decider string `json:"decider"`
	Term    int64  `json:"term"`
	// At is the decider's wall-clock time of the write, for humans only.
	At time.Time `json:"at"`
}

func decodeAssignment(b []byte) (Assignment, error) {
	var a Assignment
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("etcdcoord: decode assignment: %w", err)
	}
	switch a.Phase {
	case PhaseActive, PhaseFencing, PhaseHalted:
	default:
		return a, fmt.Errorf("etcdcoord: assignment has unknown phase %q", a.Phase)
	}
	return a, nil
}

// Ack is a follower's acknowledgement, stored at Keys.Follower under the
// follower's lease: it has applied the Assignment written at Token (held or
// halted submissions for PhaseFencing and PhaseHalted, released them on
// Endpoint for PhaseActive). Token 0: registered, nothing applied yet.
type Ack struct {
	Token    uint64 `json:"token"`
	Phase    Phase  `json:"phase,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
}
