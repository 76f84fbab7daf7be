package venue

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// UnknownFalseNegative is the lookup false-negative horizon the rules assume
// for a venue whose LookupFalseNegative is unknown: longer than the longest
// measured at any venue we know of (about 10 minutes at Binance spot).
const UnknownFalseNegative = 15 * time.Minute

// DefaultLateLandingHorizon is the shortest LateLandingHorizon: how long an
// order stays watched after a final NOT_RECEIVED.
const DefaultLateLandingHorizon = 15 * time.Minute

// UnknownLookupInterval is the spacing between lookups the rules assume for a
// venue whose LookupBudget is unknown.
const UnknownLookupInterval = time.Second

// UnknownRetentionGap is the longest gap between two lookups of a watched
// order when the venue's LookupRetention is unknown: an order that lands and
// finishes between two lookups may otherwise be forgotten before the next.
const UnknownRetentionGap = 5 * time.Minute

// UnknownLockout is added to two heartbeat intervals as the lockout after a
// dropped session when the venue's Lockout is unknown.
const UnknownLockout = time.Minute

// LookupShare is the share of a venue's budget the rules let lookups use: the
// rest is left to the application's orders and its own reads.
const LookupShare = 0.25

// HarshLookupShare replaces LookupShare where overrunning the budget bans the
// client or terminates its session (which fires cancel-on-disconnect on the
// path still trading).
const HarshLookupShare = LookupShare / 2

// ErrInvalidProfile: Validate found a fact without a source, or a value that
// cannot be right.
var ErrInvalidProfile = errors.New("venue: invalid profile")

// Conservative returns the profile used for a venue nobody described: every
// fact unknown, so every rule takes the safe side (no resend without a fence
// the caller proves, the longest false-negative horizon, the slowest lookup
// pace, and any open order may have been cancelled by a switch).
func Conservative() Profile {
	const note = "no profile given for this venue: unknown, the safe side is taken"
	return Profile{
		Name:                "conservative",
		Scope:               "a venue without a profile",
		DedupScope:          Unknown[DedupScope](note),
		DedupWindow:         Unknown[time.Duration](note),
		LookupFalseNegative: Unknown[time.Duration](note),
		LookupRetention:     Unknown[time.Duration](note),
		LookupBudget:        Unknown[Budget](note),
		BrokerFence:         Unknown[FenceKind](note),
		FencingTokens:       Unknown[Support](note),
		CancelOnDisconnect:  Unknown[CancelOnDisconnect](note),
		DeadMan:             Unknown[DeadMan](note),
		SessionsPerIdentity: Unknown[int](note),
		Lockout:             Unknown[Lockout](note),
		HotStandby:          Unknown[Support](note),
	}
}

// Evidence is what the caller knows about one order whose lookup found
// nothing, for FinalNotReceived and ResendSafe.
type Evidence struct {
	// BrokerFenced: the venue's own fence (BrokerFence) cut the path the
	// order went out on off before the lookup.
	BrokerFenced bool
	// TokenChecked: the venue checks fencing tokens and the old path's token
	// was superseded before the lookup.
	TokenChecked bool
	// LookupAfterCutoff: from the fence or token cutover to the lookup that
	// found nothing (used with BrokerFenced or TokenChecked).
	LookupAfterCutoff time.Duration
	// LookupAfterSend: from the order's first send to the lookup that found
	// nothing.
	LookupAfterSend time.Duration
	// MaxCopyHold: the longest a copy of the order can be held between the
	// application and the venue's book (socket buffers, proxies, gateways).
	MaxCopyHold time.Duration
	// SinceFirstSend: from the order's first send to the resend being
	// considered (ResendSafe).
	SinceFirstSend time.Duration
}

// FalseNegative returns how long a lookup may wrongly say "not found":
// LookupFalseNegative when known, UnknownFalseNegative otherwise.
func (p Profile) FalseNegative() time.Duration {
	if p.LookupFalseNegative.Known() && p.LookupFalseNegative.Basis != BasisRequirement && p.LookupFalseNegative.Value >= 0 {
		return p.LookupFalseNegative.Value
	}
	return UnknownFalseNegative
}

// MinQuarantine returns the shortest quarantine after which a lookup that
// finds nothing proves the order was not booked, when nothing fenced the old
// path: a copy may land up to maxCopyHold after the send, and the venue may
// answer "not found" for FalseNegative after that.
func (p Profile) MinQuarantine(maxCopyHold time.Duration) time.Duration {
	return satAdd(p.FalseNegative(), max(maxCopyHold, 0))
}

// LateLandingHorizon returns how long an order stays watched after a final
// NOT_RECEIVED: MinQuarantine(maxCopyHold), and never less than
// DefaultLateLandingHorizon.
func (p Profile) LateLandingHorizon(maxCopyHold time.Duration) time.Duration {
	return max(DefaultLateLandingHorizon, p.MinQuarantine(maxCopyHold))
}

// CanFence reports whether the venue can cut the old path off itself
// (BrokerFence reliably one session per identity or a kill switch).
func (p Profile) CanFence() bool {
	return p.BrokerFence.Reliable() && (p.BrokerFence.Value == FenceOneSession || p.BrokerFence.Value == FenceKillSwitch)
}

// CanCheckTokens reports whether the venue reliably refuses stale fencing
// tokens.
func (p Profile) CanCheckTokens() bool {
	return p.FencingTokens.Reliable() && p.FencingTokens.Value == Supported
}

// FinalNotReceived reports whether a lookup that found nothing proves, on
// what this venue guarantees, that the order is not booked and never will
// be, and says why (or why not). It is final on a broker fence or a token
// check followed by a lookup at least the false-negative horizon later, or on
// a lookup at least MinQuarantine(MaxCopyHold) after the send.
func (p Profile) FinalNotReceived(e Evidence) (bool, string) {
	fn := p.FalseNegative()
	if ok, why := p.cutoffFinal(e); ok {
		return true, why
	}
	q := p.MinQuarantine(e.MaxCopyHold)
	if e.LookupAfterSend >= q {
		return true, fmt.Sprintf("%s: looked up %v after the send, past the quarantine %v (%s false-negative horizon + %v longest copy hold)", p.Name, e.LookupAfterSend, q, p.describeFN(fn), e.MaxCopyHold)
	}
	why := fmt.Sprintf("%s: provisional: looked up %v after the send, before the quarantine %v (%s false-negative horizon + %v longest copy hold)", p.Name, e.LookupAfterSend, q, p.describeFN(fn), e.MaxCopyHold)
	if e.BrokerFenced || e.TokenChecked {
		_, cut := p.cutoffFinal(e)
		why += "; " + cut
	}
	return false, why
}

// cutoffFinal: the fence or token route to a final verdict.
func (p Profile) cutoffFinal(e Evidence) (bool, string) {
	fn := p.FalseNegative()
	var notes []string
	if e.BrokerFenced {
		switch {
		case !p.CanFence():
			notes = append(notes, fmt.Sprintf("a broker fence is claimed but %s's fence is %s", p.Name, describe(p.BrokerFence, p.BrokerFence.Value.String())))
		case e.LookupAfterCutoff < fn:
			notes = append(notes, fmt.Sprintf("fenced, but looked up %v after the fence, within the %s false-negative horizon %v", e.LookupAfterCutoff, p.Name, fn))
		default:
			return true, fmt.Sprintf("%s: the venue fenced the old path (%s) and a lookup %v later (past the %v false-negative horizon) found nothing", p.Name, describe(p.BrokerFence, p.BrokerFence.Value.String()), e.LookupAfterCutoff, fn)
		}
	}
	if e.TokenChecked {
		switch {
		case !p.CanCheckTokens():
			notes = append(notes, fmt.Sprintf("a token check is claimed but %s's fencing tokens are %s", p.Name, describe(p.FencingTokens, p.FencingTokens.Value.String())))
		case e.LookupAfterCutoff < fn:
			notes = append(notes, fmt.Sprintf("token superseded, but looked up %v later, within the %s false-negative horizon %v", e.LookupAfterCutoff, p.Name, fn))
		default:
			return true, fmt.Sprintf("%s: the venue refuses the old path's fencing token (%s) and a lookup %v later (past the %v false-negative horizon) found nothing", p.Name, describe(p.FencingTokens, "supported"), e.LookupAfterCutoff, fn)
		}
	}
	return false, strings.Join(notes, "; ")
}

// dedupCovers reports whether the venue itself refuses a copy of an order
// first sent `since` ago, when a copy may be held up to maxCopyHold: the
// dedup is over all states, reliably known, and its window spans both.
func (p Profile) dedupCovers(since, maxCopyHold time.Duration) bool {
	return p.DedupScope.Reliable() && p.DedupScope.Value == DedupAllStates &&
		p.DedupWindow.Reliable() && p.DedupWindow.Value > 0 &&
		p.DedupWindow.Value >= satAdd(max(since, 0), max(maxCopyHold, 0))
}

// ResendSafe reports whether resending the order under the same client order
// ID can never book it twice at this venue, and says why, naming the venue
// fact relied on or missing. It is safe when the venue refuses the copy
// itself (its deduplication covers the copy), or when the "not received" verdict is final by a
// broker fence or a token check (a quarantine alone never is: a copy held
// longer than any quarantine would be booked as a second order wherever the
// venue's deduplication does not cover it).
func (p Profile) ResendSafe(e Evidence) (bool, string) {
	if p.dedupCovers(e.SinceFirstSend, e.MaxCopyHold) {
		return true, fmt.Sprintf("%s refuses a duplicate client order ID in every state for %s (%s): a copy cannot book twice", p.Name, windowString(p.DedupWindow.Value), p.DedupScope.URL)
	}
	if ok, why := p.cutoffFinal(e); ok {
		return true, why
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", p.Name, p.dedupGap(e))
	_, cut := p.cutoffFinal(e)
	if cut != "" {
		fmt.Fprintf(&b, "; %s", cut)
	} else {
		b.WriteString("; the verdict is not backed by a broker fence or a token check, and a quarantine cannot rule out a copy held longer")
	}
	return false, b.String()
}

// dedupGap says why the venue's deduplication does not make a resend safe.
func (p Profile) dedupGap(e Evidence) string {
	d := p.DedupScope
	switch {
	case !d.Known():
		return "client-order-ID deduplication is not documented" + noteSuffix(d.Source) + ", so a copy may book a second order"
	case d.Basis == BasisRequirement:
		return fmt.Sprintf("the venue only asks clients to keep client order IDs unique (%s), it does not say it refuses a duplicate", quoteOf(d.Source))
	}
	switch d.Value {
	case DedupNone, DedupUnknown:
		return fmt.Sprintf("the venue does not check client order IDs for duplicates (%s), so a copy is a second order", quoteOf(d.Source))
	case DedupOpenOrders:
		return fmt.Sprintf("a duplicate client order ID is refused only among open orders (%s), so a copy of an order that filled or was cancelled unseen books a second order", quoteOf(d.Source))
	}
	w := p.DedupWindow
	if !w.Reliable() || w.Value <= 0 {
		return fmt.Sprintf("a duplicate client order ID is refused in every state (%s), but for how long is not documented", quoteOf(d.Source))
	}
	need := satAdd(max(e.SinceFirstSend, 0), max(e.MaxCopyHold, 0))
	return fmt.Sprintf("a duplicate client order ID is refused for %s (%s), shorter than the %v since the first send plus the %v longest copy hold", windowString(w.Value), quoteOf(w.Source), e.SinceFirstSend, e.MaxCopyHold) + fmt.Sprintf(" (%v needed)", need)
}

// LookupInterval returns the spacing between order lookups that keeps them
// within LookupShare of the venue's budget (HarshLookupShare where an overrun
// bans or terminates the session; UnknownLookupInterval when the budget is
// unknown).
func (p Profile) LookupInterval() time.Duration {
	b := p.LookupBudget
	if !b.Reliable() || b.Value.Requests <= 0 || b.Value.Per <= 0 {
		return UnknownLookupInterval
	}
	cost := max(b.Value.LookupCost, 1)
	share := LookupShare
	if b.Value.Exceeded == Banned || b.Value.Exceeded == SessionTerminated {
		share = HarshLookupShare
	}
	per := float64(b.Value.Per) * float64(cost) / (float64(b.Value.Requests) * share)
	return time.Duration(math.Ceil(per))
}

// RequerySchedule returns when to look an order up again after a final
// NOT_RECEIVED, as offsets from the verdict: first, then doubling gaps, the
// last at horizon. A gap never exceeds the venue's LookupRetention (an order
// that lands and finishes between two lookups must still be findable) nor is
// shorter than LookupInterval; with the retention unknown, a gap never
// exceeds UnknownRetentionGap.
func (p Profile) RequerySchedule(first, horizon time.Duration) ([]time.Duration, error) {
	if first <= 0 || horizon < first {
		return nil, fmt.Errorf("venue: RequerySchedule(%v, %v): need 0 < first <= horizon", first, horizon)
	}
	maxGap := min(horizon, UnknownRetentionGap)
	if r := p.LookupRetention; r.Reliable() && r.Value > 0 {
		maxGap = min(horizon, r.Value)
	}
	first = max(first, p.LookupInterval())
	var out []time.Duration
	at, gap := first, first
	for at < horizon {
		out = append(out, at)
		gap = min(gap*2, maxGap)
		at = satAdd(at, gap)
	}
	return append(out, horizon), nil
}

// DeadManTimer returns the venue's cancel-all-after timer, and false when the
// venue offers none or it is unknown (nothing to arm: a switch must not count
// on one).
func (p Profile) DeadManTimer() (DeadMan, bool) {
	if p.DeadMan.Reliable() && p.DeadMan.Value.Available {
		return p.DeadMan.Value, true
	}
	return DeadMan{}, false
}

// StandbyAllowed reports whether a second region may hold its own live
// order-entry session with the same identity (false when unknown).
func (p Profile) StandbyAllowed() bool {
	return p.HotStandby.Reliable() && p.HotStandby.Value == Supported
}

// AllowsSessions reports whether n concurrent order-entry sessions of one
// identity are allowed: n <= 1 always, more only when the venue documents a
// limit of at least n.
func (p Profile) AllowsSessions(n int) bool {
	if n <= 1 {
		return true
	}
	return p.SessionsPerIdentity.Reliable() && p.SessionsPerIdentity.Value >= n
}

// LockoutAfterDrop returns how long a session dropped without a logout may
// keep its identity from logging on again, for a session with the given
// heartbeat interval: the venue's Lockout when known, otherwise two
// heartbeats plus UnknownLockout.
func (p Profile) LockoutAfterDrop(heartbeat time.Duration) time.Duration {
	if p.Lockout.Known() {
		return p.Lockout.Value.For(heartbeat)
	}
	return 2*max(heartbeat, 0) + UnknownLockout
}

// FenceMode is how a path switch leaves the old path.
type FenceMode uint8

const (
	// Preserve leaves the old path the way the venue keeps resting orders
	// (CancelOnDisconnect.KeepOrders).
	Preserve FenceMode = iota
	// Flatten lets cancel-on-disconnect fire, then confirms the cancels.
	Flatten
)

// SwitchEffect is what leaving a path does to resting orders.
type SwitchEffect uint8

const (
	// EffectUnknown: any open order may have been cancelled; reconcile them
	// all against the venue's open-order list.
	EffectUnknown SwitchEffect = iota
	// EffectNone: resting orders stay.
	EffectNone
	// EffectOldPathOrders: the orders placed over the old connection or
	// session are cancelled.
	EffectOldPathOrders
	// EffectAllOrders: every open order of the profile or account is
	// cancelled, including orders placed over the new path.
	EffectAllOrders
)

// FenceEffect returns what leaving a path in the given mode does to resting
// orders at this venue, and why. Preserve is EffectNone only where the venue
// documents how to leave without cancelling.
func (p Profile) FenceEffect(mode FenceMode) (SwitchEffect, string) {
	c := p.CancelOnDisconnect
	if !c.Reliable() {
		return EffectUnknown, fmt.Sprintf("%s: cancel-on-disconnect is not documented%s", p.Name, noteSuffix(c.Source))
	}
	v := c.Value
	if v.Scope == CODNone {
		return EffectNone, fmt.Sprintf("%s: no cancel-on-disconnect (%s)", p.Name, quoteOf(c.Source))
	}
	if mode == Preserve {
		switch {
		case v.KeepOrders != "":
			return EffectNone, fmt.Sprintf("%s: leave with %s (%s)", p.Name, v.KeepOrders, c.URL)
		case v.KeepAtLogon != "":
			return EffectNone, fmt.Sprintf("%s: nothing cancelled only if the session chose so at logon: %s (%s); a switch cannot see that choice", p.Name, v.KeepAtLogon, c.URL)
		}
		return EffectUnknown, fmt.Sprintf("%s: no documented way to leave without cancelling", p.Name)
	}
	switch v.Scope {
	case CODConnection, CODSession:
		return EffectOldPathOrders, fmt.Sprintf("%s: cancel-on-disconnect cancels the %s's orders (%s)", p.Name, v.Scope, quoteOf(c.Source))
	case CODProfile, CODAccount:
		return EffectAllOrders, fmt.Sprintf("%s: cancel-on-disconnect cancels every open order of the %s, including the new path's (%s)", p.Name, v.Scope, quoteOf(c.Source))
	}
	return EffectUnknown, fmt.Sprintf("%s: cancel-on-disconnect scope unknown", p.Name)
}

// DefaultFenceMode returns the fence mode that loses no resting order
// silently at this venue, and why: Preserve where the venue has no
// cancel-on-disconnect or documents a way to keep orders at the moment of
// leaving (KeepOrders); Flatten everywhere else — where nothing is
// documented, and where keeping orders needs a choice made at logon
// (KeepAtLogon), which a switch can neither make nor see. Flatten lets
// cancel-on-disconnect fire and the open-order reconcile confirms each
// cancel, so every lost order is a reported one.
func (p Profile) DefaultFenceMode() (FenceMode, string) {
	c := p.CancelOnDisconnect
	switch {
	case !c.Reliable():
		return Flatten, fmt.Sprintf("%s: cancel-on-disconnect is not documented: let it fire and confirm the cancels", p.Name)
	case c.Value.Scope == CODNone:
		return Preserve, fmt.Sprintf("%s: no cancel-on-disconnect", p.Name)
	case c.Value.KeepOrders != "":
		return Preserve, fmt.Sprintf("%s: the old path can leave with %s", p.Name, c.Value.KeepOrders)
	case c.Value.KeepAtLogon != "":
		return Flatten, fmt.Sprintf("%s: orders are kept only by a choice made at logon (%s), which a switch cannot see: let cancel-on-disconnect fire and confirm the cancels", p.Name, c.Value.KeepAtLogon)
	}
	return Flatten, fmt.Sprintf("%s: no documented way to leave without cancelling: let cancel-on-disconnect fire and confirm the cancels", p.Name)
}

// Validate checks that every known fact has a source (URL and quote), that an
// unknown fact carries no value, and that values can be right. The error
// wraps ErrInvalidProfile and names every problem.
func (p Profile) Validate() error {
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
	if strings.TrimSpace(p.Name) == "" {
		add("Name is empty")
	}
	checkFact(&probs, "DedupScope", p.DedupScope)
	checkFact(&probs, "DedupWindow", p.DedupWindow)
	checkFact(&probs, "LookupFalseNegative", p.LookupFalseNegative)
	checkFact(&probs, "LookupRetention", p.LookupRetention)
	checkFact(&probs, "LookupBudget", p.LookupBudget)
	checkFact(&probs, "BrokerFence", p.BrokerFence)
	checkFact(&probs, "FencingTokens", p.FencingTokens)
	checkFact(&probs, "CancelOnDisconnect", p.CancelOnDisconnect)
	checkFact(&probs, "DeadMan", p.DeadMan)
	checkFact(&probs, "SessionsPerIdentity", p.SessionsPerIdentity)
	checkFact(&probs, "Lockout", p.Lockout)
	checkFact(&probs, "HotStandby", p.HotStandby)

	if p.DedupScope.Value > DedupAllStates {
		add("DedupScope %d is not a DedupScope", p.DedupScope.Value)
	}
	if p.DedupWindow.Known() {
		if p.DedupScope.Known() && p.DedupScope.Value != DedupAllStates {
			add("DedupWindow is known but DedupScope is %s (a window applies to DedupAllStates only)", p.DedupScope.Value)
		}
		if p.DedupWindow.Value <= 0 {
			add("DedupWindow is %v, must be > 0 when known (leave it unknown when not documented)", p.DedupWindow.Value)
		}
	}
	if p.LookupFalseNegative.Known() && p.LookupFalseNegative.Value < 0 {
		add("LookupFalseNegative is %v, must be >= 0", p.LookupFalseNegative.Value)
	}
	if p.LookupRetention.Known() && p.LookupRetention.Value <= 0 {
		add("LookupRetention is %v, must be > 0 when known", p.LookupRetention.Value)
	}
	if b := p.LookupBudget; b.Known() {
		if b.Value.Requests <= 0 || b.Value.Per <= 0 || b.Value.LookupCost <= 0 {
			add("LookupBudget is %d per %v at lookup cost %d: all must be > 0 when known", b.Value.Requests, b.Value.Per, b.Value.LookupCost)
		}
		if b.Value.Scope > PerConnection {
			add("LookupBudget.Scope %d is not a BudgetScope", b.Value.Scope)
		}
		if b.Value.Exceeded > SessionTerminated {
			add("LookupBudget.Exceeded %d is not an Overrun", b.Value.Exceeded)
		}
	}
	if p.BrokerFence.Value > FenceKillSwitch {
		add("BrokerFence %d is not a FenceKind", p.BrokerFence.Value)
	}
	if p.FencingTokens.Value > Supported || p.HotStandby.Value > Supported {
		add("FencingTokens or HotStandby is not a Support value")
	}
	if c := p.CancelOnDisconnect; c.Known() && c.Value.Scope > CODAccount {
		add("CancelOnDisconnect.Scope %d is not a CODScope", c.Value.Scope)
	}
	if d := p.DeadMan; d.Known() && (d.Value.Timeout < 0 || d.Value.Refresh < 0) {
		add("DeadMan timeout %v / refresh %v must be >= 0", d.Value.Timeout, d.Value.Refresh)
	}
	if s := p.SessionsPerIdentity; s.Known() && s.Value <= 0 {
		add("SessionsPerIdentity is %d, must be > 0 when known", s.Value)
	}
	if l := p.Lockout; l.Known() && (l.Value.Fixed < 0 || l.Value.HeartbeatMultiple < 0 || math.IsNaN(l.Value.HeartbeatMultiple)) {
		add("Lockout %+v must be >= 0", l.Value)
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("%w %q: %s", ErrInvalidProfile, p.Name, strings.Join(probs, "; "))
}

func checkFact[T comparable](probs *[]string, name string, f Fact[T]) {
	var zero T
	switch {
	case f.Basis > BasisReported:
		*probs = append(*probs, fmt.Sprintf("%s: Basis %d is not a Basis", name, f.Basis))
	case !f.Known():
		if f.Value != zero {
			*probs = append(*probs, fmt.Sprintf("%s has a value (%v) but its Basis is unknown: give its source or drop the value", name, f.Value))
		}
	default:
		if !strings.HasPrefix(f.URL, "https://") && !strings.HasPrefix(f.URL, "http://") {
			*probs = append(*probs, fmt.Sprintf("%s is %s but has no source URL", name, f.Basis))
		}
		if strings.TrimSpace(f.Quote) == "" {
			*probs = append(*probs, fmt.Sprintf("%s is %s but quotes nothing from its source", name, f.Basis))
		}
	}
}

func (p Profile) describeFN(fn time.Duration) string {
	if p.FalseNegative() == UnknownFalseNegative && !p.LookupFalseNegative.Known() {
		return fmt.Sprintf("%v (unknown, assumed)", fn)
	}
	return fmt.Sprintf("%v", fn)
}

func describe[T any](f Fact[T], value string) string {
	if !f.Known() {
		return "unknown" + noteSuffix(f.Source)
	}
	return fmt.Sprintf("%s, %s: %s", value, f.Basis, f.URL)
}

func quoteOf(s Source) string {
	if s.Basis == BasisUnknown {
		return "not documented"
	}
	return fmt.Sprintf("%s: %q", s.URL, s.Quote)
}

func noteSuffix(s Source) string {
	if s.Note == "" {
		return ""
	}
	return " (" + s.Note + ")"
}

func windowString(d time.Duration) string {
	if d == Forever {
		return "ever"
	}
	return d.String()
}

// satAdd adds two non-negative durations without overflowing.
func satAdd(a, b time.Duration) time.Duration {
	if a > Forever-b {
		return Forever
	}
	return a + b
}
