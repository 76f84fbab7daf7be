package simbroker

import (
	"time"

	"github.com/brokerpath/brokerpath/venue"
)

// Profile states what the simulated broker guarantees under the given
// policies, as a venue profile: lookups see an order once it is booked (no
// false negatives), client order IDs are deduplicated as DedupPolicy says
// (across regions: in every state, for ever), the kill switch fences an
// account's region when FenceEnforced, and tokens are checked when
// TokensChecked. Every fact cites this package, the simulated broker's own
// documentation.
func Profile(dedup DedupPolicy, fence FencePolicy, tokens TokenPolicy) venue.Profile {
	const doc, q = "https://pkg.go.dev/github.com/brokerpath/brokerpath/internal/simbroker", "the simulated broker's policy"
	p := venue.Conservative()
	p.Name, p.Scope = "simbroker", "the simulated broker (internal/simbroker)"
	p.LookupFalseNegative = venue.Documented(time.Duration(0), doc, "an order is visible to lookups once booked")
	switch dedup {
	case DedupAcrossRegions:
		p.DedupScope = venue.Documented(venue.DedupAllStates, doc, q)
		p.DedupWindow = venue.Documented(venue.Forever, doc, q)
	case DedupOpenOnly:
		p.DedupScope = venue.Documented(venue.DedupOpenOrders, doc, q)
	default:
		p.DedupScope = venue.Documented(venue.DedupNone, doc, q)
	}
	if fence == FenceEnforced {
		p.BrokerFence = venue.Documented(venue.FenceKillSwitch, doc, q)
	}
	// The simulated broker answers lookups without a rate limit; the
	// profile states a generous budget so re-queries are not spaced out.
	p.LookupBudget = venue.Documented(venue.Budget{Requests: 10000, Per: time.Second, LookupCost: 1, Scope: venue.PerAccount, Exceeded: venue.Throttled}, doc, "no rate limit on lookups")
	if tokens == TokensChecked {
		p.FencingTokens = venue.Documented(venue.Supported, doc, q)
	}
	return p
}

// Profile is the venue profile of this broker's policies (see Profile), or
// the (scaled) profile it plays (Config.Venue).
func (b *Broker) Profile() venue.Profile {
	if b.cfg.Venue != nil && b.cfg.Venue.Profile.Name != "" {
		return b.cfg.Venue.Profile
	}
	c := b.Config()
	return Profile(c.Dedup, c.Fence, c.Tokens)
}
