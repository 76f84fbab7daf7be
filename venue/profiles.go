package venue

import (
	"fmt"
	"slices"
	"time"
)

// The shipped profiles. Every known fact quotes the public page it comes
// from (in the Source, and as the comment above it); a fact we could not find
// documented is Unknown with a note saying what was looked for. Venues change
// their APIs: each profile is a starting point to check against the venue's
// current documentation, not a substitute for it.

// Shipped returns a fresh copy of every shipped profile, sorted by name.
func Shipped() []Profile {
	ps := []Profile{
		Alpaca(), BinanceSpot(), CoinbaseAdvancedTrade(), CoinbaseExchangeFIX(),
		Deribit(), IBKRClientPortal(), KrakenSpot(), OandaV20(),
	}
	slices.SortFunc(ps, func(a, b Profile) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return ps
}

// ByName returns the shipped profile with the given Name.
func ByName(name string) (Profile, error) {
	for _, p := range Shipped() {
		if p.Name == name {
			return p, nil
		}
	}
	names := make([]string, 0, 8)
	for _, p := range Shipped() {
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("venue: no shipped profile named %q (shipped: %v); describe the venue in a Profile of your own", name, names)
}

// Reported returns a fact measured or reported by a venue's users
// (BasisReported); note says by whom.
func Reported[T any](v T, url, quote, note string) Fact[T] {
	return Fact[T]{Value: v, Source: Source{URL: url, Quote: quote, Basis: BasisReported, Note: note}}
}

// Required returns a rule the venue states for its clients
// (BasisRequirement), which the rules never rely on the venue enforcing.
func Required[T any](v T, url, quote, note string) Fact[T] {
	return Fact[T]{Value: v, Source: Source{URL: url, Quote: quote, Basis: BasisRequirement, Note: note}}
}

// Alpaca is Alpaca's Trading API (REST v2, stocks and crypto).
func Alpaca() Profile {
	return Profile{
		Name:  "alpaca",
		Scope: "Alpaca Trading API v2 (REST)",
		// A cancelled order's client_order_id is refused on a new order
		// (users report HTTP 422 "client_order_id must be unique").
		DedupScope: Reported(DedupAllStates,
			"https://github.com/alpacahq/alpaca-py/issues/260",
			"when bot submits an order, then cancels it, then wants to submit it again? Alpaca responds 'client_order_id must be unique'",
			"refusal after cancel reported by users (HTTP 422, code 40010001); Alpaca's documentation states no window"),
		DedupWindow:         Unknown[time.Duration]("Alpaca documents no window for client_order_id uniqueness"),
		LookupFalseNegative: Unknown[time.Duration]("no statement on read-after-write consistency of GET /v2/orders:by_client_order_id found"),
		LookupRetention:     Unknown[time.Duration]("no retention for lookups by client_order_id found"),
		// "currently 200 requests per minute, per account" … "429".
		LookupBudget: Documented(Budget{Requests: 200, Per: time.Minute, LookupCost: 1, Scope: PerAccount, Exceeded: Throttled},
			"https://alpaca.markets/support/usage-limit-api-calls/",
			`the API is throttled, currently 200 requests per minute, per account … If your client exceeds this number, a "429- Too Many Requests" status will be returned`),
		BrokerFence:         Unknown[FenceKind]("no session limit or kill switch found for the REST Trading API (API keys are bearer credentials)"),
		FencingTokens:       Unknown[Support]("none found"),
		CancelOnDisconnect:  Unknown[CancelOnDisconnect]("REST only; no cancel-on-disconnect found"),
		DeadMan:             Unknown[DeadMan]("no cancel-all-after timer found"),
		SessionsPerIdentity: Unknown[int]("REST is sessionless; no limit found"),
		Lockout:             Unknown[Lockout]("none found"),
		HotStandby:          Unknown[Support]("REST is sessionless; not stated"),
	}
}

// BinanceSpot is Binance's spot exchange (REST, WebSocket API and FIX order
// entry).
func BinanceSpot() Profile {
	const fix = "https://developers.binance.com/docs/binance-spot-api-docs/fix-api"
	return Profile{
		Name:  "binance-spot",
		Scope: "Binance spot: REST /api/v3, WebSocket API, FIX order entry",
		// "A unique id among open orders … can be accepted only when the
		// previous one is filled".
		DedupScope: Documented(DedupOpenOrders,
			"https://developers.binance.com/docs/binance-spot-api-docs/rest-api/trading-endpoints",
			"newClientOrderId: A unique id among open orders. Automatically generated if not sent. Orders with the same newClientOrderID can be accepted only when the previous one is filled, otherwise the order will be rejected.").
			With("a copy of an order that filled is accepted as a second order"),
		DedupWindow: Unknown[time.Duration]("not applicable: deduplication is among open orders only"),
		// Query order reads memory, then the database; users see -2013 "Order
		// does not exist" for orders just placed, up to about 10 minutes.
		LookupFalseNegative: Reported(10*time.Minute,
			"https://developers.binance.com/docs/binance-spot-api-docs/rest-api/account-endpoints",
			"Query order (USER_DATA) … Data Source: Memory => Database",
			"the documentation names the two stores but no lag; users report -2013 \"Order does not exist\" for booked orders (github.com/JKorf/Binance.Net/issues/692, github.com/ccxt/ccxt/issues/1786), measured up to about 10 minutes"),
		LookupRetention: Unknown[time.Duration]("no retention for lookups by origClientOrderId found"),
		// Weights per IP; 429, then IP bans "from 2 minutes to 3 days".
		LookupBudget: Documented(Budget{Requests: 6000, Per: time.Minute, LookupCost: 4, Scope: PerIP, Exceeded: Banned},
			"https://developers.binance.com/docs/binance-spot-api-docs/rest-api/limits",
			"Repeatedly violating rate limits and/or failing to back off after receiving 429s will result in an automated IP ban (HTTP status 418). IP bans are tracked and scale in duration for repeat offenders, from 2 minutes to 3 days.").
			With("the current REQUEST_WEIGHT limit is in /api/v3/exchangeInfo (6000 per minute when read); query order weighs 4; limits are per IP, not per key"),
		// Five concurrent order-entry connections per account: several paths
		// can submit at once.
		BrokerFence: Documented(FenceNone, fix,
			"The limit is 5 concurrent TCP connections per account for the order entry sessions.").
			With("REST and WebSocket API keys are not session-bound either"),
		FencingTokens:      Unknown[Support]("none found"),
		CancelOnDisconnect: Unknown[CancelOnDisconnect]("no cancel-on-disconnect found in the spot REST, WebSocket API or FIX documentation read"),
		DeadMan:            Unknown[DeadMan]("no spot cancel-all-after timer found (USDⓈ-M futures has countdownCancelAll, per symbol)"),
		// Five order-entry connections per account.
		SessionsPerIdentity: Documented(5, fix,
			"The limit is 5 concurrent TCP connections per account for the order entry sessions."),
		// "Failure to send the logout message will result in the session's
		// SenderCompID (49) being unusable … for … 2x the HeartInt (108)".
		Lockout: Documented(Lockout{HeartbeatMultiple: 2}, fix,
			"Failure to send the logout message will result in the session’s SenderCompID (49) being unusable for new session establishment for a duration of 2x the HeartInt (108) interval."),
		// A second region may hold its own order-entry session.
		HotStandby: Documented(Supported, fix,
			"The limit is 5 concurrent TCP connections per account for the order entry sessions."),
	}
}

// CoinbaseAdvancedTrade is Coinbase's Advanced Trade REST API.
func CoinbaseAdvancedTrade() Profile {
	return Profile{
		Name:  "coinbase-advanced-trade",
		Scope: "Coinbase Advanced Trade API v3 (REST)",
		// "If the ID provided is not unique, the order will not be created and
		// the order corresponding with that ID will be returned instead."
		DedupScope: Documented(DedupAllStates,
			"https://docs.cdp.coinbase.com/api-reference/advanced-trade-api/rest-api/orders/create-order",
			"client_order_id: A unique ID provided for the order (used for identification purposes). If the ID provided is not unique, the order will not be created and the order corresponding with that ID will be returned instead.").
			With("a duplicate returns the original order"),
		DedupWindow:         Unknown[time.Duration]("the create-order reference states no expiry for client_order_id"),
		LookupFalseNegative: Unknown[time.Duration]("no statement on read-after-write consistency found"),
		LookupRetention:     Unknown[time.Duration]("the client_order_id filter of Get Order is marked deprecated; List Orders has none"),
		// 30 requests per second per user on private endpoints.
		LookupBudget: Reported(Budget{Requests: 30, Per: time.Second, LookupCost: 1, Scope: PerAPIKey, Exceeded: Throttled},
			"https://nautilustrader.io/docs/rust-api-latest/nautilus_coinbase/http/client/static.COINBASE_REST_QUOTA.html",
			"Default Coinbase Advanced Trade REST rate limit (30 requests per second).",
			"Coinbase's own rate-limit page was not read: check https://docs.cdp.coinbase.com/advanced-trade/docs/rest-api-rate-limits"),
		BrokerFence:         Unknown[FenceKind]("no session limit or kill switch found for the REST API"),
		FencingTokens:       Unknown[Support]("none found"),
		CancelOnDisconnect:  Unknown[CancelOnDisconnect]("REST only; no cancel-on-disconnect found"),
		DeadMan:             Unknown[DeadMan]("no cancel-all-after timer found"),
		SessionsPerIdentity: Unknown[int]("REST is sessionless; no limit found"),
		Lockout:             Unknown[Lockout]("none found"),
		HotStandby:          Unknown[Support]("not stated"),
	}
}

// CoinbaseExchangeFIX is Coinbase Exchange's FIX 5.0 order-entry gateway.
func CoinbaseExchangeFIX() Profile {
	const oe = "https://docs.cdp.coinbase.com/exchange/fix-api/order-entry-messages/order-entry-messages5"
	return Profile{
		Name:  "coinbase-exchange-fix",
		Scope: "Coinbase Exchange FIX 5.0 order entry (fix-ord.exchange.coinbase.com)",
		// The client is told not to reuse the ClOrdID of an open order; what
		// the gateway does with a duplicate is not stated.
		DedupScope: Required(DedupOpenOrders,
			"https://docs.cdp.coinbase.com/exchange/docs/fix-msg-order-entry",
			"ClOrdID: UUID selected by client to identify the order. This shouldn't match the ClOrdID of any open orders.",
			"stated as a rule for the client; the gateway's answer to a duplicate is not documented"),
		DedupWindow:         Unknown[time.Duration]("not applicable: the rule covers open orders only"),
		LookupFalseNegative: Unknown[time.Duration]("no statement on order status lookups found"),
		LookupRetention:     Unknown[time.Duration]("none found"),
		LookupBudget:        Unknown[Budget]("FIX rate limits exist (https://docs.cdp.coinbase.com/exchange/fix-api/rate-limits) but were not read"),
		// "only create one session per API Key": a rule for the client; whether
		// a second logon ends the first or is refused is not documented.
		BrokerFence: Required(FenceOneSession, oe,
			"For all LOGON messages use MsgSeqNum 1, set 553 Username to the api key, and only create one session per API Key.",
			"whether a second logon replaces the first or is refused is not documented; REST orders with the same key are not fenced"),
		FencingTokens: Unknown[Support]("none found"),
		// 8013=Y cancels every open order of the profile, including orders
		// placed over REST and over the new path.
		CancelOnDisconnect: Documented(CancelOnDisconnect{
			Scope:       CODProfile,
			OnByDefault: false,
			Control:     "Logon tag CancelOrdersOnDisconnect (8013): S = the session's orders, Y = every open order of the profile (recommended)",
			Trigger:     "disconnect of a session logged on with 8013",
			KeepAtLogon: "a session logged on without CancelOrdersOnDisconnect (8013); none documented once it is set",
		}, oe, "8013 CancelOrdersOnDisconnect: S = Cancel all session orders on disconnect; Y = Cancel all profile orders on disconnect (recommended)").
			With("no default for 8013 is stated: confirm that a logon without it cancels nothing; the retired FIX 4.2 gateway words the tag " +
				"\"S: Batch cancel all open orders placed during session; Y: Batch cancel all open orders for the current profile. The latter is more performant and recommended.\" " +
				"(https://docs.cdp.coinbase.com/exchange/changes/archive/order-entry-messages4)"),
		DeadMan: Unknown[DeadMan]("no cancel-all-after timer found"),
		// One session per API key (a rule for the client).
		SessionsPerIdentity: Required(1, oe,
			"only create one session per API Key", "a rule for the client"),
		Lockout: Unknown[Lockout]("none found"),
		// A standby region needs another API key.
		HotStandby: Required(Unsupported, oe,
			"only create one session per API Key",
			"a standby region needs its own API key (another identity, not fenced against this one)"),
	}
}

// Deribit is Deribit's JSON-RPC API (WebSocket and HTTP) and FIX gateway.
func Deribit() Profile {
	const cod = "https://docs.deribit.com/api-reference/session-management/private-enable_cancel_on_disconnect"
	const conn = "https://docs.deribit.com/articles/connection-management-best-practices"
	return Profile{
		Name:  "deribit",
		Scope: "Deribit API v2 (WebSocket, HTTP) and FIX",
		// Several open orders may share a label (and a FIX ClOrdID).
		DedupScope: Documented(DedupNone,
			"https://docs.deribit.com/api-reference/trading/private-edit_by_label",
			"Modifies an order identified by its label. This method works only when there is exactly one open order with the specified label.").
			With("FIX likewise: \"Multiple orders with the same ClOrdID or DeribitLabel won't be amended that way\" (https://docs.deribit.com/fix-api/production/order-cancel-replace)"),
		DedupWindow:         Unknown[time.Duration]("not applicable: no deduplication"),
		LookupFalseNegative: Unknown[time.Duration]("no statement on private/get_order_state_by_label consistency found"),
		LookupRetention:     Unknown[time.Duration]("get_order_state_by_label returns \"recent orders\"; how recent is not stated"),
		// Credits: running out terminates the session (and so fires
		// cancel-on-disconnect).
		LookupBudget: Documented(Budget{Requests: 10000, Per: time.Second, LookupCost: 500, Scope: PerAccount, Exceeded: SessionTerminated},
			"https://docs.deribit.com/articles/rate-limits",
			"If a request arrives when no credits remain, we immediately send a too_many_requests (code 10028) or similar error and terminate the session.").
			With("figures depend on the sub-account tier; 500 credits per non-matching-engine request, 10,000 credits/s refill, 50,000 pool as reported by nautilus_trader's Deribit adapter"),
		// Up to 16 sessions per API key: several paths can submit at once.
		BrokerFence:   Documented(FenceNone, conn, "Max number of sessions per API key: 16"),
		FencingTokens: Unknown[Support]("none found"),
		// COD cancels only the orders of the dropped connection; a graceful
		// private/logout keeps them.
		CancelOnDisconnect: Documented(CancelOnDisconnect{
			Scope:       CODConnection,
			OnByDefault: false,
			Control:     "private/enable_cancel_on_disconnect (scope connection, or account: on for every new connection); FIX Logon CancelOnDisconnect (9001)",
			Trigger:     "TCP termination, 10 minutes of inactivity, heartbeat loss, a FIX Logout(5) without DontCancelOnDisconnect (9003)=Y; not WebSocket private/logout",
			KeepOrders:  "WebSocket private/logout; FIX Logout(5) with DontCancelOnDisconnect (9003)=Y",
		}, cod, "Cancel-on-Disconnect does not affect orders created by other connections - they will remain active! … If the connection is gracefully closed using private/logout, cancel-on-disconnect will not be triggered.").
			With("on FIX even a graceful Logout cancels: \"if CancelOnDisconnect(9001) was set at Logon, all orders will be cancelled at Logout\", unless the Logout carries DontCancelOnDisconnect (9003)=Y (https://docs.deribit.com/fix-api/production/logout)"),
		DeadMan: Unknown[DeadMan]("no cancel-all-after timer found; cancel-on-disconnect with public/set_heartbeat is the documented mechanism"),
		// Sixteen sessions per API key, so a standby region may hold its own.
		SessionsPerIdentity: Documented(16, conn, "Max number of sessions per API key: 16"),
		Lockout:             Unknown[Lockout]("none found"),
		HotStandby:          Documented(Supported, conn, "Max number of sessions per API key: 16"),
	}
}

// IBKRClientPortal is Interactive Brokers' Client Portal Web API (/iserver).
func IBKRClientPortal() Profile {
	const oneSession = "https://ibkrcampus.com/ibkr-quant-news/tutorial-web-api-connect-to-brokerage-session/"
	const order = "https://www.interactivebrokers.com/campus/ibkr-api-page/web-api-trading/"
	return Profile{
		Name:  "ibkr-client-portal",
		Scope: "IBKR Client Portal Web API v1 (/iserver brokerage session)",
		// cOID "must be unique for a 24h span": a rule for the client.
		DedupScope: Required(DedupAllStates, order,
			"cOID: Customer Order ID. An arbitrary string that can be used to identify the order. The value must be unique for a 24h span.",
			"stated as a rule for the client; what the venue does with a duplicate is not documented"),
		// 24 hours (a rule for the client).
		DedupWindow: Required(24*time.Hour, order,
			"The value must be unique for a 24h span.", "a rule for the client"),
		LookupFalseNegative: Unknown[time.Duration]("no statement on /iserver/account/orders consistency found"),
		LookupRetention:     Unknown[time.Duration]("none found"),
		LookupBudget:        Unknown[Budget]("users report a global 10 requests/s limit; not found in the documentation read"),
		// One brokerage session per username: a new one (compete) displaces
		// the old on every IBKR platform.
		BrokerFence: Documented(FenceOneSession, oneSession,
			"Interactive Brokers only allows access to one brokerage session at a time.").
			With("per username, across TWS, Client Portal and IBKR Mobile; /iserver/auth/ssodh/init with compete=true takes the session over"),
		FencingTokens:      Unknown[Support]("none found"),
		CancelOnDisconnect: Unknown[CancelOnDisconnect]("none found for the Web API"),
		DeadMan:            Unknown[DeadMan]("none found"),
		// One brokerage session per username: no standby session.
		SessionsPerIdentity: Documented(1, oneSession,
			"Interactive Brokers only allows access to one brokerage session at a time."),
		Lockout: Unknown[Lockout]("none found"),
		HotStandby: Documented(Unsupported, oneSession,
			"Interactive Brokers only allows access to one brokerage session at a time."),
	}
}

// KrakenSpot is Kraken's spot exchange (REST, WebSocket v2 and FIX).
func KrakenSpot() Profile {
	const fixLogon = "https://docs.kraken.com/api/docs/fix-api/logon-fix"
	return Profile{
		Name:  "kraken-spot",
		Scope: "Kraken spot: REST, WebSocket v2, FIX",
		// "Kraken verifies cl_ord_id uniqueness across open orders for each
		// client."
		DedupScope: Documented(DedupOpenOrders,
			"https://docs.kraken.com/api/docs/guides/spot-clordid",
			"Kraken verifies cl_ord_id uniqueness across open orders for each client. FIX protocol extends this uniqueness check to across open orders and FIX session."),
		DedupWindow:         Unknown[time.Duration]("not applicable: deduplication is among open orders only"),
		LookupFalseNegative: Unknown[time.Duration]("no statement on QueryOrders consistency found"),
		LookupRetention:     Unknown[time.Duration]("none found"),
		// A per-key call counter: +1 per call, decaying 0.33/s (Starter) to
		// 1/s (Pro), maximum 15-20. The Starter tier is taken.
		LookupBudget: Documented(Budget{Requests: 1, Per: 3 * time.Second, LookupCost: 1, Scope: PerAPIKey, Exceeded: Throttled},
			"https://docs.kraken.com/api/docs/guides/spot-rest-ratelimits",
			"All other API calls increase this counter by 1 … Each API key's counter is separate, and if the counter exceeds the maximum value, subsequent calls using that API key would be rate limited.").
			With("decay 0.33/s (Starter), 0.5/s (Intermediate), 1/s (Pro); burst 15-20"),
		BrokerFence:   Unknown[FenceKind]("no session limit or kill switch found"),
		FencingTokens: Unknown[Support]("none found"),
		// FIX: on by default for the session's orders; only a drop without a
		// Logout fires it.
		CancelOnDisconnect: Documented(CancelOnDisconnect{
			Scope:       CODSession,
			OnByDefault: true,
			Control:     "FIX Logon CancelOrdersOnDisconnect (8674): 0 (default) cancels the session's open orders, 1 cancels none",
			Trigger:     "a FIX session that ends without a Logout exchange (an abnormal disconnection)",
			KeepAtLogon: "a logon with CancelOrdersOnDisconnect (8674)=1",
		}, fixLogon, "8674 - CancelOrdersOnDisconnect … Default value: 0 • 0 : Cancel all open orders from this session • 1: Cancel no orders even if the session is disconnected").
			With("FIX only (REST and WebSocket have the dead man's switch instead); " +
				"\"Abnormal disconnection without logout will activate cancel-on-disconnect on the session\" (https://docs.kraken.com/exchange/api-reference/unified-fix/logout): a FIX Logout(5) answered before the socket closes may keep the orders, but no page says so; confirm it on your account before relying on it (the profile does not); " +
				"\"Single-order cancels on FIX (OrderCancelRequest) only affect orders placed on the same FIX session\" (https://docs.kraken.com/exchange/api-reference/unified-fix): the new session reaches the old session's orders only by OrderMassCancelRequest (530=7: the account's open orders in the older reference, the SenderCompID's in the newer) or over REST"),
		// CancelAllOrdersAfter: every order of the account, refreshed every
		// 15-30 s with a 60 s timeout.
		DeadMan: Documented(DeadMan{
			Available: true,
			API:       "REST POST /0/private/CancelAllOrdersAfter {timeout}; WebSocket v2 cancel_all_orders_after",
			Timeout:   60 * time.Second,
			Refresh:   15 * time.Second,
		}, "https://docs.kraken.com/api-reference/trading/cancel-all-orders-after-x",
			"The client can send a request with a timeout (in seconds), that will start a countdown timer which will cancel all client orders when the timer expires. … The recommended use is to make a call every 15 to 30 seconds, providing a timeout of 60 seconds."),
		SessionsPerIdentity: Unknown[int]("none found"),
		Lockout:             Unknown[Lockout]("none found"),
		HotStandby:          Unknown[Support]("not stated"),
	}
}

// OandaV20 is OANDA's v20 REST API.
func OandaV20() Profile {
	return Profile{
		Name:  "oanda-v20",
		Scope: "OANDA v20 REST API (fxTrade)",
		// Refused only while an order with the client ID is pending.
		DedupScope: Documented(DedupOpenOrders,
			"https://developer.oanda.com/rest-live-v20/transaction-df/",
			"CLIENT_ORDER_ID_ALREADY_EXISTS: The client Order ID specified is already assigned to another pending Order").
			With("the client ID is clientExtensions.id; a market order is not pending once filled"),
		DedupWindow:         Unknown[time.Duration]("not applicable: deduplication is among pending orders only"),
		LookupFalseNegative: Unknown[time.Duration]("no statement on GET /orders/@{clientID} consistency found"),
		LookupRetention:     Unknown[time.Duration]("none found"),
		// "120 requests per second. Excess requests will receive HTTP 429".
		LookupBudget: Documented(Budget{Requests: 120, Per: time.Second, LookupCost: 1, Scope: BudgetScopeUnknown, Exceeded: Throttled},
			"https://developer.oanda.com/rest-live-v20/development-guide/",
			"Rate Limiting … REST API … 120 requests per second. Excess requests will receive …").
			With("the answer to excess requests is HTTP 429 (the page's sentence is cut here); counted per connection or client is not stated"),
		BrokerFence:         Unknown[FenceKind]("none found"),
		FencingTokens:       Unknown[Support]("none found"),
		CancelOnDisconnect:  Unknown[CancelOnDisconnect]("REST only; none found"),
		DeadMan:             Unknown[DeadMan]("none found"),
		SessionsPerIdentity: Unknown[int]("REST is sessionless; none found"),
		Lockout:             Unknown[Lockout]("none found"),
		HotStandby:          Unknown[Support]("not stated"),
	}
}
