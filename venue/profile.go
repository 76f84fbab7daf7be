package venue

import (
	"math"
	"time"
)

// Profile states what one venue (a broker or an exchange, through one API)
// guarantees, each fact with its public source. A fact left unknown takes the
// safe side in every rule; a Path without a profile uses Conservative().
//
// For a venue that is not shipped, check in its documentation, and fill in
// with the page and the sentence (or leave unknown):
//
//   - DedupScope, DedupWindow: is a second order with a client order ID
//     already used refused (or answered with the first)? Among open orders
//     only, or also after the first filled or was cancelled, and for how long?
//     Only "every state, for a known window" makes a resend safe by itself.
//   - LookupFalseNegative: can an order lookup answer "not found" for an order
//     the venue booked (replicas, memory then database)? For how long?
//   - LookupRetention: how long is a finished order findable by client ID?
//   - LookupBudget: how many requests per window, counted per what (account,
//     key, IP, session), what one lookup costs, and what happens past it (429,
//     IP ban, session terminated — the last fires cancel-on-disconnect).
//   - BrokerFence: can the venue cut the old path off — one live session per
//     identity (a new logon ends or is refused while another lives), or a kill
//     switch? For which APIs (a FIX fence does not stop REST)?
//   - FencingTokens: does the venue refuse requests carrying a stale token?
//   - CancelOnDisconnect: what a dropped connection cancels (its own orders,
//     the session's, every order of the profile or account), whether it is on
//     by default, what fires it, and how to leave without cancelling.
//   - DeadMan: a cancel-all-after timer, its scope and how it is refreshed.
//   - SessionsPerIdentity, Lockout, HotStandby: how many sessions one
//     credential may hold, how long a dropped session blocks a new logon, and
//     whether a second region may hold its own live session.
//
// Validate checks that every known fact has a source.
type Profile struct {
	// Name identifies the venue and API, e.g. "binance-spot".
	Name string `json:"name"`
	// Scope says which APIs and products the facts cover.
	Scope string `json:"scope,omitempty"`

	// DedupScope: which orders a duplicate client order ID is checked
	// against.
	DedupScope Fact[DedupScope] `json:"dedup_scope"`
	// DedupWindow (DedupAllStates only): how long a used client order ID
	// stays refused; Forever for no expiry. Unknown when not documented: the
	// rules then do not rely on the deduplication.
	DedupWindow Fact[time.Duration] `json:"dedup_window"`

	// LookupFalseNegative: how long after the venue booked an order a lookup
	// may still answer "not found". Unknown takes UnknownFalseNegative.
	LookupFalseNegative Fact[time.Duration] `json:"lookup_false_negative"`
	// LookupRetention: how long a finished (filled, cancelled) order stays
	// findable by its client order ID; Forever for no limit.
	LookupRetention Fact[time.Duration] `json:"lookup_retention"`
	// LookupBudget: the rate budget lookups draw from.
	LookupBudget Fact[Budget] `json:"lookup_budget"`

	// BrokerFence: how the venue can cut the old path off.
	BrokerFence Fact[FenceKind] `json:"broker_fence"`
	// FencingTokens: whether the venue refuses requests with a stale token.
	FencingTokens Fact[Support] `json:"fencing_tokens"`

	// CancelOnDisconnect: what a dropped connection cancels.
	CancelOnDisconnect Fact[CancelOnDisconnect] `json:"cancel_on_disconnect"`
	// DeadMan: the venue's cancel-all-after timer.
	DeadMan Fact[DeadMan] `json:"dead_man"`

	// SessionsPerIdentity: how many concurrent order-entry sessions one
	// credential may hold (> 0 when known).
	SessionsPerIdentity Fact[int] `json:"sessions_per_identity"`
	// Lockout: how long a session dropped without a logout keeps its identity
	// from logging on again.
	Lockout Fact[Lockout] `json:"lockout"`
	// HotStandby: whether a second region may hold its own live order-entry
	// session at the same time (a warm standby path).
	HotStandby Fact[Support] `json:"hot_standby"`
}

// Forever is a window or retention without expiry.
const Forever time.Duration = math.MaxInt64

// DedupScope is which orders a venue checks a new client order ID against.
type DedupScope uint8

const (
	// DedupUnknown: not documented; treated as DedupNone.
	DedupUnknown DedupScope = iota
	// DedupNone: the venue does not check; a copy is a second order.
	DedupNone
	// DedupOpenOrders: refused only while an order with the ID is open; a
	// copy of an order that filled or was cancelled is a second order.
	DedupOpenOrders
	// DedupAllStates: refused (or answered with the first order) whatever the
	// first order's state, for DedupWindow.
	DedupAllStates
)

// FenceKind is how a venue can make the old path unable to submit.
type FenceKind uint8

const (
	// FenceUnknown: not documented; treated as FenceNone.
	FenceUnknown FenceKind = iota
	// FenceNone: several sessions of one identity may submit at once.
	FenceNone
	// FenceOneSession: one live session per identity; a new logon ends the
	// old session or is refused while it lives, so a successful logon on the
	// new path proves the old one can no longer submit (on that API).
	FenceOneSession
	// FenceKillSwitch: an API call disables the old path's sessions or
	// credentials.
	FenceKillSwitch
)

// Budget is a rate budget: Requests units per Per, counted per Scope.
type Budget struct {
	Requests int           `json:"requests"`
	Per      time.Duration `json:"per"`
	// LookupCost is how many units one order lookup costs (a weight or
	// credits); 1 when every request counts once.
	LookupCost int         `json:"lookup_cost"`
	Scope      BudgetScope `json:"scope"`
	Exceeded   Overrun     `json:"exceeded"`
}

// BudgetScope is what a budget is counted per: the account, the API key, the
// client's IP address, the session or the connection.
type BudgetScope uint8

const (
	BudgetScopeUnknown BudgetScope = iota
	PerAccount
	PerAPIKey
	PerIP
	PerSession
	PerConnection
)

// Overrun is what a venue does to a client that exceeds its budget.
type Overrun uint8

const (
	// OverrunUnknown: not documented.
	OverrunUnknown Overrun = iota
	// Throttled: the request is refused (HTTP 429 or an error) and later
	// requests succeed once the window passes.
	Throttled
	// Banned: repeated overruns ban the client (IP or key) for a while.
	Banned
	// SessionTerminated: the venue closes the session, which fires
	// cancel-on-disconnect where it is on.
	SessionTerminated
)

// CODScope is what a venue's cancel-on-disconnect cancels.
type CODScope uint8

const (
	// CODUnknown: not documented; any open order may have been cancelled.
	CODUnknown CODScope = iota
	// CODNone: no API of the venue cancels orders on a disconnect.
	CODNone
	// CODConnection: the orders placed over the dropped connection.
	CODConnection
	// CODSession: the orders placed in the dropped session (FIX).
	CODSession
	// CODProfile: every open order of the profile or portfolio, whatever
	// placed it, including orders placed over the new path.
	CODProfile
	// CODAccount: every open order of the account.
	CODAccount
)

// CancelOnDisconnect describes a venue's cancel-on-disconnect.
type CancelOnDisconnect struct {
	// Scope is what a drop cancels when it is on.
	Scope CODScope `json:"scope"`
	// OnByDefault: on unless the client opts out (at logon or by a call).
	OnByDefault bool `json:"on_by_default"`
	// Control says how it is switched on or off (a logon tag, a call).
	Control string `json:"control,omitempty"`
	// Trigger says what fires it.
	Trigger string `json:"trigger,omitempty"`
	// KeepOrders says how to leave without cancelling, at the moment of
	// leaving (a Logout carrying an opt-out tag, a WebSocket logout): a way
	// a path switch can take whatever the session chose at logon. Empty when
	// no such way is documented.
	KeepOrders string `json:"keep_orders,omitempty"`
	// KeepAtLogon says how a session chooses, at logon, to have its end
	// cancel nothing (Kraken's 8674=1, a Coinbase logon without 8013). A
	// switch can neither make nor see that choice when it leaves: where it
	// is the only way to keep orders, the default fence mode is flatten
	// (DefaultFenceMode). Empty when there is none.
	KeepAtLogon string `json:"keep_at_logon,omitempty"`
}

// DeadMan describes a venue's cancel-all-after timer.
type DeadMan struct {
	// Available: the venue offers one on the APIs in Profile.Scope.
	Available bool `json:"available"`
	// API is the call that arms and refreshes it.
	API string `json:"api,omitempty"`
	// PerSymbol: one timer per symbol rather than one for the account.
	PerSymbol bool `json:"per_symbol,omitempty"`
	// Timeout and Refresh are the venue's recommended values (0 when none).
	Timeout time.Duration `json:"timeout,omitempty"`
	Refresh time.Duration `json:"refresh,omitempty"`
}

// Lockout is how long a dropped session blocks a new logon of its identity:
// Fixed plus HeartbeatMultiple times the session's heartbeat interval.
type Lockout struct {
	Fixed             time.Duration `json:"fixed,omitempty"`
	HeartbeatMultiple float64       `json:"heartbeat_multiple,omitempty"`
}

// For returns the lockout for a session with the given heartbeat interval.
func (l Lockout) For(heartbeat time.Duration) time.Duration {
	return l.Fixed + time.Duration(l.HeartbeatMultiple*float64(heartbeat))
}
