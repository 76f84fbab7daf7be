// Package venue states what a broker or exchange guarantees, and the rules
// that read it.
//
// # Start here
//
// Pick the profile of your venue (or Conservative for one nobody described)
// and set it as pathdialer.Config.Venue: the Path's verdicts (MayResend,
// final or provisional NOT_RECEIVED, how long to watch for late landings)
// then follow the venue's facts. To ask the rules yourself:
//
//	binance := venue.BinanceSpot()
//	q := binance.MinQuarantine(hold)
//	e := venue.Evidence{LookupAfterSend: q, MaxCopyHold: hold, SinceFirstSend: q}
//	final, _ := binance.FinalNotReceived(e)
//	safe, why := binance.ResendSafe(e)
//	unknown := venue.Conservative()
//	fmt.Println("unknown venue quarantine:", unknown.MinQuarantine(hold))
//
// A lookup that finds nothing after the quarantine is final at Binance
// spot, yet a resend is not safe there: the venue refuses a duplicate client
// order ID only among open orders. The Example prints each answer and its
// reason; every fact of a profile names the public page it comes from
// (Source).
//
// # Facts and rules
//
// Whether a resend can book an order twice, how long a lookup may wrongly
// answer "not found", what a dropped connection cancels: these are facts
// about the venue, not about the network path. A Profile records them, each
// with the public page and sentence it comes from (Source). A fact nobody
// documents is unknown (BasisUnknown, the zero value), and every rule then
// takes the safe side; Conservative() is the profile of a venue nobody
// described.
//
// The rules:
//
//   - MinQuarantine: the shortest wait after which a lookup that finds
//     nothing proves an unfenced order was not booked (false-negative horizon
//     plus the longest a copy can be held).
//   - FinalNotReceived: whether such a lookup is final — on a broker fence or a
//     token check the venue offers, or past MinQuarantine.
//   - ResendSafe: whether a resend under the same client order ID can never
//     book twice — only where the venue refuses the copy itself in every
//     state for long enough, or where a fence or token check backs the
//     verdict. A quarantine alone never does: a copy held longer than any
//     quarantine is a second order wherever deduplication does not cover it.
//   - LateLandingHorizon, RequerySchedule, LookupInterval: how long and how
//     often to keep looking after a final verdict, within the venue's budget.
//   - FenceEffect: what leaving a path (Preserve or Flatten) does to resting
//     orders, from the venue's cancel-on-disconnect; with DeadManTimer, it is
//     what the README's resting-orders table of the shipped profiles is
//     generated from.
//
// Shipped returns the profiles shipped with the package (Alpaca, Binance
// spot, Coinbase Advanced Trade, Coinbase Exchange FIX, Deribit, IBKR Client
// Portal, Kraken spot, OANDA v20). They are starting points: check each fact
// against the venue's current documentation. The package is pure data and
// functions: no I/O, no goroutines, stdlib only.
package venue
