// Package pathdialer is the runtime around brokerpath's decision engine: it probes
// every endpoint of one broker account, lets engine.Manager decide, and performs
// what it decides, so that order flow only ever goes over one fenced, reconciled
// path.
//
// A Path owns one account's endpoints (regions, base endpoints, lines), each with
// an address per service ("rest", "ws", "fix"); a switch moves every service
// together. Transports (packages rest, ws and fix under transports/) are built on
// it:
//
//   - Submissions (orders) take a Ticket from the gate with Acquire and finish it
//     with Done or Unknown. Reads never take tickets and are never held.
//   - Connections come from Dial (the active endpoint's address for a service) or
//     from EndpointDialer (one pool per endpoint). Every connection is tracked.
//   - Live-traffic results go back through Report: a failure that takes the active
//     endpoint DOWN is evaluated at once, not at the next probe round.
//
// # What it guarantees
//
//  1. At most one path can submit at any moment. Before a switch the gate holds
//     submissions, the old endpoint is fenced locally (every tracked connection to
//     it closed, new dials to it refused while it is not active) and then by the
//     user's FenceFunc; only a confirmed fence lets the engine switch. A failing
//     fence switches nothing: the gate stays held, the fence is retried with
//     backoff, and after Config.FenceAttempts failures in a row the hold becomes a
//     loud halt.
//  2. No submission is released on the new path before the ReconcileFunc has
//     succeeded, called with every ticket that was in flight or finished with an
//     unknown outcome. After every switch, and before leaving a halt even on the
//     same endpoint. A failing reconcile keeps holding, is retried with backoff,
//     and halts after Config.ReconcileAttempts failures in a row.
//  3. Halt is loud: while no endpoint is eligible, Acquire returns
//     ErrTradingHalted at once, wrapping the reason; events say why.
//  4. A ticket is never granted while the gate is held or halted, and only ever for
//     the endpoint that is active at that instant.
//  5. A stalled monitor, or stale health of the active endpoint, is reported
//     (EventMonitorStale, Snapshot.Monitor.Stale), never acted on.
//  6. Results from an older generation are dropped: a connection dialed before a
//     switch finishes under the old generation, and its passive reports no longer
//     count.
//  7. Events are delivered in order, from one goroutine, never under a lock; none
//     is dropped.
//  8. Close stops every goroutine the Path started, fails waiting Acquires with
//     ErrClosed, and closes every tracked connection.
//
// With Config.ExternalDecisions a coordinator (coord/etcd: a quorum of observers
// and one elected decider) makes the switches instead of this process; the Path
// performs them through Assign (fence, switch under the coordinator's fencing
// token, reconcile, release), Hold, Halt and Resume, with the same guarantees.
//
// The configuration has no silent defaults for what matters: Probe, Fencer (or
// Engine.BrokerFences, or the explicit LocalFenceOnly) and Reconciler (or the
// explicit NoReconcile) must be chosen.
package pathdialer
