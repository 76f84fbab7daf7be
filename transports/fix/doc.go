// Package fix runs a quickfixgo/quickfix initiator over a pathdialer.Path, so a
// FIX application moves with the path in well under a second and never replays
// an order into another region.
//
// quickfix's initiator cannot be handed a dialer, and its own failover is a blind
// round-robin over SocketConnectHost<n> every ReconnectInterval (30 s by
// default) with no health, fence or halt. NewInitiator takes quickfix's own
// arguments (application, store factory, settings, log factory) plus the Path,
// and returns a started initiator:
//
//	rec, _ := fix.NewReconciler(fix.ReconcileOptions{})
//	cfg.Reconciler = rec.Reconcile // or pathdialer.ReconcileAll(restRec, rec.Reconcile)
//	path, _ := pathdialer.New(cfg)
//	_ = path.Start(ctx)
//	in, err := fix.NewInitiator(app, quickfix.NewMemoryStoreFactory(), settings,
//		quickfix.NewNullLogFactory(), path, fix.Options{Sequence: fix.SequenceContinue, Reconciler: rec})
//	defer in.Close()
//	err = in.SendOrder(ctx, newOrderSingle, sessionID)
//
// # What it guarantees
//
//   - Routing: every session connects to a relay of its own on 127.0.0.1, and
//     every connection quickfix opens there is spliced to the active endpoint's
//     "fix" address through the Path's tracked dial. The settings name no
//     address (SocketConnectHost/Port are overwritten; ReconnectInterval comes
//     from Options, 100 ms by default). TLS, when Options.TLSConfig is set, is
//     done by the relay toward the endpoint with the endpoint's host name.
//   - Switch: the Path's local fence closes the relay's connections to the old
//     endpoint, so quickfix reconnects at once and lands on the new endpoint
//     (about 0.1 s from the switch to logon in this package's tests, with the
//     default 100 ms ReconnectInterval).
//   - Orders are never replayed. When the counterparty asks for a resend,
//     quickfix offers each stored message to ToApp with PossDupFlag=Y; orders
//     (NewOrderSingle, OrderCancelRequest, OrderCancelReplaceRequest and the
//     multileg equivalents) are refused with quickfix.ErrDoNotSend, so quickfix
//     gap-fills them, and their tickets are finished as unknown
//     (ErrResendRefused) for the Path's next reconciliation. Other application
//     messages are resent as usual. An order carrying PossDupFlag=Y is never
//     sent at all.
//   - Submission gate: SendOrder takes a ticket from the Path's gate (waits
//     while held, pathdialer.ErrTradingHalted at once while halted), records the
//     ClOrdID on it, and sends only over a session logged on to the ticket's
//     endpoint. Orders sent around SendOrder (quickfix.SendToTarget) are refused
//     unless Options.AllowUngatedOrders. Admin messages, Send and the
//     reconciler's status requests never wait.
//   - Tickets finish when the ExecutionReport, OrderCancelReject or
//     BusinessMessageReject for the ClOrdID arrives; orders still unanswered at
//     a switch are handed to reconciliation by the Path.
//   - Reconciler settles those orders after logon on the new path with
//     OrderStatusRequest and their ExecutionReports (FateOf), within a deadline;
//     it plugs into pathdialer.Config.Reconciler and composes with
//     pathdialer.ReconcileAll.
//   - Probe is a logon-level probe: a FIX Logon must be answered. A TCP connect
//     proves nothing (QuickFIX/J users who treated it as success never failed
//     over).
//
// # Sequence numbers: choose the broker's model
//
// Options.Sequence has no default.
//
// SequenceContinue is for a broker that keeps one session across its regions
// (one sequence space, shared state). The session logs on to the new region with
// the numbers it had. What the old region had sent and we missed (execution
// reports) comes back by ResendRequest, as PossDup; what we had sent and the
// broker missed is repaired by resend for non-orders and by gap-fill plus
// reconcile for orders. This loses nothing, but it relies on the broker really
// sharing the session state: a broker that does not will reject the logon or
// ask for an impossible resend.
//
// SequenceResetOnSwitch is for a broker whose regions are separate sessions.
// The first logon on an endpoint other than the last one logged on carries
// ResetSeqNumFlag=Y (quickfix resets its store; both sides start at 1);
// reconnects to the same endpoint keep their numbers, so in-region resends
// still work. Nothing from the old region is recovered by resend, not even the
// execution reports we missed there: reconcile (FIX status requests, or the
// REST reconciler, if the new region's session cannot see the old one's
// orders) is the only source of truth, and fills that happened in the old
// region during the cut are learned only through it. The first logon after a
// process start follows the store as configured.
//
// # quickfix specifics
//
// The store factory is wrapped so every store is safe for concurrent use:
// quickfix v0.9.10 reads the store while answering a ResendRequest and writes it
// from SendToTarget under different locks, a data race this package would
// otherwise trigger on every switch. quickfix starts each session on the next
// whole second, so the first logon takes up to a second after NewInitiator.
//
// quickfix keeps a global session registry: one Initiator per session ID per
// process, and Close unregisters its sessions.
package fix
