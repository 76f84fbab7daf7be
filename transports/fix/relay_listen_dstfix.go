//go:build dstfix

package fix

import (
	"net"

	"github.com/brokerpath/brokerpath/internal/dst/qfhook/qfnet"
)

// relayListen, in the simulation's build (-tags dstfix with the patched
// quickfix of internal/dst/qfhook), is an in-memory listener that quickfix
// dials through qfnet: the relay, its SOCKS5 handshake and everything it
// does through the Path stay as they are, and no goroutine of the session
// blocks on an operating-system socket (testing/synctest could not advance
// virtual time past one).
func relayListen() (net.Listener, error) {
	qfnet.Install()
	return qfnet.Pipe("relay.fix.sim"), nil
}
