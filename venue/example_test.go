package venue_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/venue"
)

// A verdict "not received" at Binance spot, found by a re-query after the
// quarantine, and the same at IBKR after its one-session fence.
func Example() {
	const hold = 5 * time.Second // the longest a copy can sit in buffers and gateways

	binance := venue.BinanceSpot()
	q := binance.MinQuarantine(hold)
	fmt.Println("binance quarantine:", q)

	e := venue.Evidence{LookupAfterSend: q, MaxCopyHold: hold, SinceFirstSend: q}
	final, _ := binance.FinalNotReceived(e)
	safe, why := binance.ResendSafe(e)
	fmt.Println("binance final:", final, "resend safe:", safe)
	reason, _, _ := strings.Cut(why, " (") // the rest quotes the source
	fmt.Println(reason)

	ibkr := venue.IBKRClientPortal()
	e = venue.Evidence{BrokerFenced: true, LookupAfterCutoff: ibkr.FalseNegative(), MaxCopyHold: hold, SinceFirstSend: time.Hour}
	safe, _ = ibkr.ResendSafe(e)
	fmt.Println("ibkr resend safe after its fence:", safe)

	unknown := venue.Conservative()
	fmt.Println("unknown venue quarantine:", unknown.MinQuarantine(hold))
	// Output:
	// binance quarantine: 10m5s
	// binance final: true resend safe: false
	// binance-spot: a duplicate client order ID is refused only among open orders
	// ibkr resend safe after its fence: true
	// unknown venue quarantine: 15m5s
}

// What leaving a path does to resting orders, per venue and fence mode.
func ExampleProfile_FenceEffect() {
	for _, p := range []venue.Profile{venue.CoinbaseExchangeFIX(), venue.Deribit(), venue.Alpaca()} {
		keep, _ := p.FenceEffect(venue.Preserve)
		flat, _ := p.FenceEffect(venue.Flatten)
		fmt.Printf("%s: preserve → %v; flatten → %v\n", p.Name, keep, flat)
	}
	// Output:
	// coinbase-exchange-fix: preserve → none; flatten → every open order cancelled
	// deribit: preserve → none; flatten → old path's orders cancelled
	// alpaca: preserve → unknown: reconcile every open order; flatten → unknown: reconcile every open order
}
