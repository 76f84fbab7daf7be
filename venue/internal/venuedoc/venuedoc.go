// Package venuedoc writes the README's resting-orders table from the shipped
// venue profiles and checks that the README still says what they say.
package venuedoc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/brokerpath/brokerpath/venue"
)

// Begin and End mark the generated part of the README's "Resting orders
// across a switch" section. Everything between them is replaced by Section.
const (
	Begin = "<!-- resting-orders table: generated from the venue profiles by `go run ./venue/cmd/venuetable -w README.md`; do not edit by hand -->"
	End   = "<!-- end of the generated resting-orders table -->"
)

// Command is how to bring the README up to date.
const Command = "go run ./venue/cmd/venuetable -w README.md"

// NotShipped is a venue the library ships no profile for, with what its
// public documentation says happens to resting orders across a switch.
type NotShipped struct {
	Venue string
	Says  string
	URL   string
}

// Unprofiled lists venues users ask about that have no shipped profile: what
// their documentation says, one line each, with the source. They are not
// profiles: describe such a venue in a Profile of your own.
var Unprofiled = []NotShipped{
	{
		Venue: "CME Globex (iLink 3)",
		Says: "cancel-on-disconnect is on for every new session (a clearing firm administrator can turn it off) and, on an involuntary loss of connection, cancels the resting futures and options orders of the registered session and trader IDs, " +
			"but not GTC and GTD orders, which survive a switch in either mode; in a no-cancel period some orders may not be cancelled, so CME tells users to check order status after an ungraceful disconnect",
		URL: "https://cmegroupclientsite.atlassian.net/wiki/spaces/EPICSANDBOX/pages/46203696/Cancel+on+Disconnect",
	},
	{
		Venue: "BitMEX",
		Says: "`POST /order/cancelAllAfter` is a dead-man timer over all the account's orders (\"call this route at 15s intervals with an offset of 60000\"): " +
			"refresh it from the new path before the old path's last refresh lapses",
		URL: "https://www.bitmex.com/api/explorer/#!/Order/Order_cancelAllAfter",
	},
	{
		Venue: "Binance USDⓈ-M futures",
		Says: "`POST /fapi/v1/countdownCancelAll` is a dead-man timer per symbol (the example: every 30 s with a 120 s countdown): " +
			"the new path must refresh the timer of every symbol with resting orders before the old path's countdowns run out",
		URL: "https://developers.binance.com/docs/derivatives/usds-margined-futures/trade/rest-api/Auto-Cancel-All-Open-Orders",
	},
	{
		Venue: "Binance options",
		Says: "the kill switch (`POST /eapi/v1/countdownCancelAll`, per underlying) cancels every open order of the underlying when no heartbeat came in time, and then refuses new orders with -2010 " +
			"until a heartbeat (`POST /eapi/v1/countdownCancelAllHeartBeat`) is sent: the new path sends one before its first order",
		URL: "https://developers.binance.com/docs/derivatives/option/market-maker-endpoints/Set-Auto-Cancel-All-Open-Orders-Config",
	},
	{
		Venue: "Bybit",
		Says: "disconnection protection cancels every active order when no private WebSocket subscribed to `dcp` reconnects and resumes its ping within the window (10 s by default, 3–300 s); " +
			"a reconnect within the window resets it, so make-before-break keeps the orders",
		URL: "https://bybit-exchange.github.io/docs/v5/order/dcp",
	},
}

// Section returns the generated part of the README: the table of the shipped
// profiles and one line for each venue without a profile.
func Section() string {
	var b strings.Builder
	b.WriteString(Table(venue.Shipped()))
	b.WriteString("\nNo profile is shipped for these venues; what their documentation says:\n\n")
	for _, n := range Unprofiled {
		fmt.Fprintf(&b, "- **%s**: %s ([source](%s)).\n", n.Venue, n.Says, n.URL)
	}
	return b.String()
}

// ErrMarkers: the README lacks the markers around the generated section, or
// has them out of order or more than once.
var ErrMarkers = errors.New("venuedoc: README has no well-formed resting-orders markers")

// Splice returns readme with the text between Begin and End replaced by
// section.
func Splice(readme, section string) (string, error) {
	before, rest, ok := strings.Cut(readme, Begin)
	if !ok {
		return "", fmt.Errorf("%w: %q not found", ErrMarkers, Begin)
	}
	_, after, ok := strings.Cut(rest, End)
	if !ok {
		return "", fmt.Errorf("%w: %q not found after the begin marker", ErrMarkers, End)
	}
	if strings.Contains(after, Begin) || strings.Contains(after, End) {
		return "", fmt.Errorf("%w: the markers appear more than once", ErrMarkers)
	}
	return before + Begin + "\n\n" + section + "\n" + End + after, nil
}

// Check returns an error naming the first line where the README's generated
// section differs from what the profiles say, and how to fix it.
func Check(readme string) error {
	want, err := Splice(readme, Section())
	if err != nil {
		return err
	}
	if want == readme {
		return nil
	}
	got, wantL := strings.Split(readme, "\n"), strings.Split(want, "\n")
	for i := range min(len(got), len(wantL)) {
		if got[i] != wantL[i] {
			return fmt.Errorf("venuedoc: README line %d differs from the venue profiles:\n  README:   %s\n  profiles: %s\nrun %s", i+1, got[i], wantL[i], Command)
		}
	}
	return fmt.Errorf("venuedoc: README has %d lines where the venue profiles give %d; run %s", len(got), len(wantL), Command)
}
