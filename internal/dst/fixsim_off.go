//go:build !dstfix

package dst

import (
	"errors"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// fixSupported: without -tags dstfix quickfix opens operating-system
// sockets, which cannot join the bubble; no seed is a FIX seed.
const fixSupported = false

var errNoFIX = errors.New("dst: FIX seeds need -tags dstfix and the patched quickfix (internal/dst/qfhook)")

func startBrokerFIX(*simbroker.Broker) error { return errNoFIX }

func simHooks(*fix.Initiator, func(*pathdialer.Ticket), uint64) func() { return func() {} }
