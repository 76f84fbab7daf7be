package simbroker

import (
	"errors"
	"fmt"
	"strings"
)

// TokenHeader is the REST request header that carries an order's fencing
// token (a non-negative decimal integer) when Config.Tokens is TokensChecked.
const TokenHeader = "X-Fencing-Token"

// TokenTag is the user-defined FIX tag that carries an order's fencing token
// (a non-negative integer) on NewOrderSingle when Config.Tokens is TokensChecked.
const TokenTag = 9901

// More sentinel errors, for the strict-broker policies.
var (
	// ErrFenceNotOffered is returned by FenceRegion and UnfenceRegion (and
	// answered 501 by the REST kill switch) when Config.Fence is FenceNone:
	// such a broker has no fence of its own.
	ErrFenceNotOffered = errors.New("simbroker: broker offers no fence (fence policy none)")
	// ErrInvalidToken is returned for a fencing token that is not a positive integer.
	ErrInvalidToken = errors.New("simbroker: invalid fencing token")
)

// DedupPolicy says when the shared book treats an order as a repeat of one
// it already holds (same client order ID) instead of booking a new one.
// Real brokers differ; brokerpath must be safe against each.
type DedupPolicy int

const (
	// DedupAcrossRegions (the default): a client order ID is booked at most
	// once for the life of the broker, whichever region or service it comes
	// through; a repeat gets the existing order and books nothing.
	DedupAcrossRegions DedupPolicy = iota
	// DedupOpenOnly: a repeat is recognised only while the first order with
	// that ID is open (status new). Once it is filled or canceled — market
	// orders fill at once — the same client order ID books a NEW order.
	// Submissions that were rejected booked nothing, so they never count.
	DedupOpenOnly
	// DedupNone: every accepted submission books a new order; a resend is a
	// second order.
	DedupNone
)

// String returns "across-regions", "open-only" or "none".
func (p DedupPolicy) String() string {
	switch p {
	case DedupAcrossRegions:
		return "across-regions"
	case DedupOpenOnly:
		return "open-only"
	case DedupNone:
		return "none"
	}
	return fmt.Sprintf("DedupPolicy(%d)", int(p))
}

// ParseDedupPolicy accepts "across-regions" (also "across", "all"),
// "open-only" (also "open") or "none".
func ParseDedupPolicy(s string) (DedupPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "across-regions", "across", "all":
		return DedupAcrossRegions, nil
	case "open-only", "open":
		return DedupOpenOnly, nil
	case "none", "off":
		return DedupNone, nil
	}
	return 0, fmt.Errorf("%w: Dedup %q: want across-regions, open-only or none", ErrInvalidConfig, s)
}

// FencePolicy says whether the broker offers a fence of its own.
type FencePolicy int

const (
	// FenceNone (the default): the broker has no fence; every region takes
	// the account's orders at all times. FenceRegion and the REST kill switch
	// answer ErrFenceNotOffered (HTTP 501).
	FenceNone FencePolicy = iota
	// FenceEnforced: a region can be fenced for the account (FenceRegion, or
	// POST /v1/account/fence on any region — a broker kill switch). A fenced
	// region rejects every order and cancel of the account, on REST (HTTP
	// 403, code "region_fenced") and FIX (ExecutionReport
	// OrdStatus=REJECTED with Text), and books nothing, until unfenced.
	// Reads (GET orders, account, probes) keep working. With
	// SessionOnePerCredential, a FIX logon through region B also fences the
	// region of the previous logon.
	FenceEnforced
)

// String returns "none" or "enforced".
func (p FencePolicy) String() string {
	switch p {
	case FenceNone:
		return "none"
	case FenceEnforced:
		return "enforced"
	}
	return fmt.Sprintf("FencePolicy(%d)", int(p))
}

// ParseFencePolicy accepts "none" or "enforced".
func ParseFencePolicy(s string) (FencePolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "none", "off":
		return FenceNone, nil
	case "enforced", "on":
		return FenceEnforced, nil
	}
	return 0, fmt.Errorf("%w: Fence %q: want none or enforced", ErrInvalidConfig, s)
}

// TokenPolicy says whether orders must carry a fencing token.
type TokenPolicy int

const (
	// TokensOff (the default): tokens are ignored (still audited when sent).
	TokensOff TokenPolicy = iota
	// TokensChecked: every order must carry a fencing token (TokenHeader on
	// REST, TokenTag on FIX). The check is account-wide, because the book is
	// one: the broker keeps the highest token it has seen for the account,
	// across every region and service, and rejects an order whose token is
	// lower (REST 409, code "stale_token"; FIX reject with Text). An order
	// without a token is rejected (REST 428, code "missing_token"). A token
	// equal to the highest is accepted; a higher one raises it. A token can
	// also be raised without an order (Broker.RaiseToken, or the header on
	// the REST kill switch requests).
	TokensChecked
)

// String returns "off" or "checked".
func (p TokenPolicy) String() string {
	switch p {
	case TokensOff:
		return "off"
	case TokensChecked:
		return "checked"
	}
	return fmt.Sprintf("TokenPolicy(%d)", int(p))
}

// ParseTokenPolicy accepts "off" or "checked".
func ParseTokenPolicy(s string) (TokenPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off", "none":
		return TokensOff, nil
	case "checked", "on":
		return TokensChecked, nil
	}
	return 0, fmt.Errorf("%w: Tokens %q: want off or checked", ErrInvalidConfig, s)
}

// Policies summarises the strict-broker policies in one line, as the
// start-up output shows them: "dedup=across-regions fence=none tokens=off
// session=concurrent".
func (c Config) Policies() string {
	return fmt.Sprintf("dedup=%s fence=%s tokens=%s session=%s", c.Dedup, c.Fence, c.Tokens, c.SessionPolicy)
}
