// Package faultnet is a fault-injecting TCP relay for tests and drills.
//
// A Relay listens on a loopback port of its own and forwards every accepted
// connection to one target address. Its Fault can be switched at run time:
//
//   - None: forward as fast as bytes arrive.
//   - Down: close the listener (new dials get "connection refused") and reset
//     every live connection on both sides with SO_LINGER 0. Leaving Down
//     listens again on the very same address, so clients that keep the
//     endpoint address reconnect without being told anything.
//   - Blackhole: accept, then silence. Nothing is forwarded in either
//     direction, on new and on live connections; closes and resets are held
//     too, so neither side learns the other went away. Held bytes are
//     delivered in order when the fault clears, as TCP would after a healed
//     partition. The relay keeps reading what it holds (up to 4 MiB a
//     direction), so its record says when each byte left the sender and
//     when the sender closed (ConnRecord.EndSeen), not when the fault let
//     them through.
//   - Latency{Delay, Jitter}: every chunk is delivered Delay plus a uniform
//     draw in [0, Jitter] after it was read, in each direction; the draw is
//     seeded (Config.Seed) so runs repeat.
//   - Reset: reset every live connection once, then behave as None.
//
// Flapping is a Schedule (Run, Flap) that switches a Relay's fault on a
// timer until stopped. A Relay also tells a server behind it which relayed
// connection a socket belongs to (LookupUpstream): the server's view of the
// peer address is the relay's upstream local address, and the relay records
// it before it forwards the first byte. This is how simbroker attributes a
// FIX message or an HTTP request to a region and a connection ID.
//
// The kernel used in CI has no netem qdisc and no iptables, so faults are
// injected in-process, in user space, on 127.0.0.1 only.
//
// # Why not toxiproxy
//
// github.com/Shopify/toxiproxy/v2 (v2.12.0 resolves here) can be embedded as
// a library, and it was weighed. We chose this small relay of our own:
//
//   - Dependencies: this package imports the standard library only, as the
//     layout in DESIGN.md requires of it. Toxiproxy as a library brings its
//     HTTP API server, Prometheus metrics, zerolog and more into every test
//     binary that needs a relay.
//   - Semantics: toxiproxy's toxics act on byte streams (latency, bandwidth,
//     slicer, timeout, reset_peer). What drills here need is connection- and
//     listener-level: "refuse new dials but keep the port for later", "accept,
//     then hold everything including FIN/RST", "reset this one connection"
//     (how simbroker fences a FIX session or cuts an order's answer), and the
//     mapping from a server-side socket back to the relayed connection. Those
//     would be work-arounds on top of toxiproxy, and the last is not exposed.
//   - Lifecycle: every goroutine a Relay starts has returned when Close
//     returns, which keeps goleak-checked test packages clean; toxiproxy's
//     link goroutines and its server are not built around that guarantee.
//
// The cost of owning it is this package (a few hundred lines with tests).
package faultnet
