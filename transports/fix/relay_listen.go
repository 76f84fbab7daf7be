//go:build !dstfix

package fix

import "net"

// relayListen is the relay's listener: a loopback socket that quickfix
// reaches as its SOCKS5 proxy.
func relayListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
