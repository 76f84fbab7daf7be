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

func onAcquire(in *fix.Initiator, f func(*pathdialer.Ticket)) { in.SimOnAcquire(f) }
