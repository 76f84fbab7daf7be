package pathdialer_test

import (
	"time"

	"github.com/brokerpath/brokerpath/venue"
)

// testBrokerDoc stands for the contract of the brokers these tests imagine
// (the fake books below): the facts are the test's own, not a real venue's.
const testBrokerDoc = "https://brokerpath.invalid/test-broker"

// labVenue is the broker the verdict tests imagine: its lookups are exact at
// once (false-negative horizon 0), it refuses a duplicate client order ID in
// every state for ever, and it has a kill switch. With it the minimum
// quarantine is MaxCopyHold alone, and a final NOT_RECEIVED may be resent.
func labVenue() venue.Profile {
	p := venue.Conservative()
	p.Name, p.Scope = "test-broker", "the fake books of pathdialer's tests"
	p.LookupFalseNegative = venue.Documented(time.Duration(0), testBrokerDoc, "an order is visible to lookups as soon as it is booked")
	p.DedupScope = venue.Documented(venue.DedupAllStates, testBrokerDoc, "a client order ID is refused once used, in every state")
	p.DedupWindow = venue.Documented(venue.Forever, testBrokerDoc, "used client order IDs are never forgotten")
	p.BrokerFence = venue.Documented(venue.FenceKillSwitch, testBrokerDoc, "the kill switch disables the old path's sessions")
	return p
}

// noDedupVenue is a broker like cmd/simbroker -dedup none: exact lookups, but
// no check of client order IDs (a copy is a second order) and no fence.
func noDedupVenue() venue.Profile {
	p := venue.Conservative()
	p.Name, p.Scope = "test-broker-no-dedup", "a fake book that books every copy"
	p.LookupFalseNegative = venue.Documented(time.Duration(0), testBrokerDoc, "an order is visible to lookups as soon as it is booked")
	p.DedupScope = venue.Documented(venue.DedupNone, testBrokerDoc, "client order IDs are not checked for duplicates")
	p.BrokerFence = venue.Documented(venue.FenceNone, testBrokerDoc, "several sessions may submit at once")
	return p
}
