//go:build dstfix

package dst

import (
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// fixSupported: this build runs FIX seeds (-tags dstfix with the patched
// quickfix of internal/dst/qfhook, see fixsim.go).
const fixSupported = true

func startBrokerFIX(b *simbroker.Broker) error { return b.StartFIX() }

// simHooks sees each order's ticket with f and seeds the logon backoff's
// jitter; the returned func forgets the seed (after Close).
func simHooks(in *fix.Initiator, f func(*pathdialer.Ticket), seed uint64) func() {
	in.SimOnAcquire(f)
	in.SimSeed(seed)
	return in.SimUnseed
}
