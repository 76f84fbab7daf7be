package simbroker

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
)

// Reasons an order is refused by a strict-broker policy (wrapped in the
// error placeOrder returns; the handlers map them to answers).
var (
	errRegionFenced = errors.New("region fenced")
	errStaleToken   = errors.New("stale fencing token")
	errMissingToken = errors.New("missing fencing token")
	errBadToken     = errors.New("invalid fencing token")
)

// subToken is the fencing token a submission carried, as received.
type subToken struct {
	value   uint64
	present bool
	raw     string // as sent, when it did not parse
}

// parseToken reads a token as sent ("" = none). A token is a non-negative
// decimal integer that fits in 64 bits (0 is a path's first generation).
func parseToken(s string) subToken {
	s = strings.TrimSpace(s)
	if s == "" {
		return subToken{}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		if len(s) > 32 {
			s = s[:32] + "..."
		}
		return subToken{present: true, raw: s}
	}
	return subToken{value: v, present: true}
}

// admitLocked applies the fence and token policies to one order submission
// through rg; b.orderMu is held. A nil error lets the order go on to the book.
func (b *Broker) admitLocked(rg *Region, tok subToken) (Outcome, error) {
	if b.cfg.Fence == FenceEnforced {
		if since, ok := b.fenced[rg.name]; ok {
			return OutcomeFenced, fmt.Errorf("%w: region %s is fenced for account %s since %s (broker kill switch): order rejected, nothing booked",
				errRegionFenced, rg.name, b.cfg.AccountID, since.UTC().Format(time.RFC3339Nano))
		}
	}
	if b.cfg.Tokens != TokensChecked {
		return "", nil
	}
	if tok.present && tok.raw != "" {
		return OutcomeRejected, fmt.Errorf("%w %q: want a non-negative integer (header %s, FIX tag %d): order rejected, nothing booked",
			errBadToken, tok.raw, TokenHeader, TokenTag)
	}
	if !tok.present {
		return OutcomeMissingToken, fmt.Errorf("%w: this account requires a fencing token on every order (REST header %s, FIX tag %d): order rejected, nothing booked",
			errMissingToken, TokenHeader, TokenTag)
	}
	if tok.value < b.highestToken {
		return OutcomeStaleToken, fmt.Errorf("%w %d: the account has seen token %d (tokens are checked account-wide): order rejected, nothing booked",
			errStaleToken, tok.value, b.highestToken)
	}
	b.highestToken = tok.value
	return "", nil
}

// FenceRegion fences region for the account, as a broker kill switch does:
// from the moment it returns, every order and cancel through that region
// (REST and FIX) is rejected and books nothing, until UnfenceRegion. Reads
// keep working. It is idempotent (fencing a fenced region changes nothing)
// and audited (KindRegionFenced). It fails with ErrFenceNotOffered unless
// Config.Fence is FenceEnforced, and with ErrUnknownRegion or ErrClosed.
func (b *Broker) FenceRegion(region string) error {
	_, err := b.setFence(region, true, "go api")
	return err
}

// UnfenceRegion lifts the fence on region: orders through it are accepted
// again. Idempotent and audited (KindRegionUnfenced); errors as FenceRegion.
func (b *Broker) UnfenceRegion(region string) error {
	_, err := b.setFence(region, false, "go api")
	return err
}

// FencedRegions returns the regions fenced now, with when each fence began.
// Always empty with FenceNone.
func (b *Broker) FencedRegions() map[string]time.Time {
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	return maps.Clone(b.fenced)
}

// HighestToken returns the highest fencing token the account has accepted
// (0 before any). Only TokensChecked raises it.
func (b *Broker) HighestToken() uint64 {
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	return b.highestToken
}

// RaiseToken raises the account's highest fencing token to t (a new leader
// announcing its token before its first order), so that orders carrying a
// lower token are rejected from now on. A t at or below the highest changes
// nothing. It fails with ErrInvalidConfig unless Config.Tokens is
// TokensChecked, and with ErrInvalidToken for t == 0.
func (b *Broker) RaiseToken(t uint64) error {
	_, err := b.raiseToken(t, "go api")
	return err
}

func (b *Broker) raiseToken(t uint64, by string) (uint64, error) {
	if b.cfg.Tokens != TokensChecked {
		return 0, fmt.Errorf("%w: RaiseToken needs Tokens checked (it is %s)", ErrInvalidConfig, b.cfg.Tokens)
	}
	if t == 0 {
		return 0, fmt.Errorf("%w: 0 (tokens are positive integers)", ErrInvalidToken)
	}
	if b.isClosed() {
		return 0, ErrClosed
	}
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	if t > b.highestToken {
		b.highestToken = t
		b.audit.add(Record{Time: time.Now(), Kind: KindToken, Token: t, Outcome: OutcomeOK, Detail: by})
	}
	return b.highestToken, nil
}

// setFence fences (on) or unfences region; it returns when the fence began
// (zero after an unfence).
func (b *Broker) setFence(region string, on bool, by string) (time.Time, error) {
	if b.cfg.Fence != FenceEnforced {
		return time.Time{}, ErrFenceNotOffered
	}
	rg, err := b.region(region)
	if err != nil {
		return time.Time{}, err
	}
	if b.isClosed() {
		return time.Time{}, ErrClosed
	}
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	return b.setFenceLocked(rg, on, by), nil
}

func (b *Broker) setFenceLocked(rg *Region, on bool, by string) time.Time {
	since, fenced := b.fenced[rg.name]
	switch {
	case on && !fenced:
		now := time.Now()
		b.fenced[rg.name] = now
		b.audit.add(Record{Time: now, Kind: KindRegionFenced, Region: rg.name, Outcome: OutcomeOK, Detail: by})
		b.log.Info("region fenced", "region", rg.name, "by", by)
		return now
	case !on && fenced:
		delete(b.fenced, rg.name)
		b.audit.add(Record{Time: time.Now(), Kind: KindRegionUnfenced, Region: rg.name, Outcome: OutcomeOK, Detail: by})
		b.log.Info("region unfenced", "region", rg.name, "by", by)
		return time.Time{}
	case on:
		return since
	}
	return time.Time{}
}

// fenceForLogon applies FenceEnforced + SessionOnePerCredential to a FIX
// logon through rg: the region of the previous logon, if another, is fenced.
func (b *Broker) fenceForLogon(rg *Region, connID string) {
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	prev := b.lastLogon
	b.lastLogon = rg
	if b.cfg.Fence != FenceEnforced || b.cfg.SessionPolicy != SessionOnePerCredential || prev == nil || prev == rg {
		return
	}
	b.setFenceLocked(prev, true, "FIX logon through "+connID+" (one session per credential)")
}

// cancelAllowed applies the fence to a cancel through rg.
func (b *Broker) cancelAllowed(rg *Region) error {
	if b.cfg.Fence != FenceEnforced {
		return nil
	}
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	if since, ok := b.fenced[rg.name]; ok {
		return fmt.Errorf("%w: region %s is fenced for account %s since %s (broker kill switch): cancel rejected",
			errRegionFenced, rg.name, b.cfg.AccountID, since.UTC().Format(time.RFC3339Nano))
	}
	return nil
}
