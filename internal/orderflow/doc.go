// Package orderflow is a small order client built on brokerpath: one
// pathdialer.Path carrying REST orders and account reads (transports/rest),
// a WebSocket price stream (transports/ws) and a FIX session
// (transports/fix), plus what a demo, an integration test or a drill needs
// around it:
//
//   - Client: built from a Config that lists the broker's endpoints, the
//     credentials, the TLS roots, the FIX sequence model, the session policy
//     and the timing knobs. FromSimBroker fills a Config for the simulated
//     broker (internal/simbroker); LoadConfig reads one from a JSON file whose
//     secrets come from environment variables.
//   - Recorder: every Path event with its time, and the client's own notes
//     (order acknowledged, stream resumed at sequence N, FIX logon on region
//     X), printed as a timeline with relative times.
//   - History and CheckHistory: a run as recorded (the client's record of
//     every order, each attempt and each verdict the library gave; the
//     Path's events; stream and FIX counters; the broker's audit) and the
//     checker that judges it with the broker's book as the truth, against
//     numbered invariants: no order booked twice, none lost, never two live
//     paths, late landings reported and never after a final NOT_RECEIVED,
//     the client's record matching the book, repeated submissions
//     explained, halt when no target is eligible and otherwise only for a
//     named cause (a reconcile, or a dead-man arm on the target, that keeps
//     failing), every price once,
//     FIX sequence numbers continuous, the scenario's expectations,
//     reconcile before release, no resting order cancelled by the broker
//     (cancel-on-disconnect, dead-man) left unreported, no dead-man gap
//     while a resting order is open (a timer that lapsed while no region's
//     trade path could carry a refresh is noted, not a gap, when the client
//     armed it again within DeadManWindow.Rearm). Client.Check runs it on the Client's
//     own History; tests feed it recorded histories with violations
//     planted. An order still unanswered or unsettled when the run ends is
//     lost, unless the host was too starved to judge (the Path halted for
//     want of a target while the broker was answering through the halted
//     endpoint) and the gate never stayed open for the reconcile's bound
//     after the order: then it is INCONCLUSIVE, with the run's figures
//     (Summary.Undecided, Summary.Starved).
//   - Resting orders: after every release the Client compares its resting
//     orders with the broker's open-order list (ReconcileOpen) and records
//     why each missing one is gone (cancelled, filled, unknown to the
//     venue); with Config.DeadManTimeout it keeps the broker's dead-man
//     timer armed (refreshed through the path reads are on, else straight
//     through another endpoint). The Summary says what each switch did to
//     them.
//   - Scenario: a scripted fault (blackhole, down, 503, latency, partial,
//     unknown-outcome, flapping, both) applied to every service of a region of
//     the simulated broker, and its recovery.
//
// What it guarantees
//
//   - Every order is sent once, by the transport it was placed on, through the
//     Path's submission gate. An order whose fate is unknown is never resent
//     under a new ID; an order that reconciliation found NOT_RECEIVED is sent
//     again with the same client order ID once flow is released (the broker's
//     idempotency on the client order ID makes that safe, and it neutralises a
//     stale copy that might still land through the old path later).
//   - Credentials never appear in the timeline, the Summary or errors.
//   - Close stops every goroutine the Client started.
package orderflow
