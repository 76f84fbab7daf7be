// Package fix runs a quickfixgo/quickfix initiator over a pathdialer.Path, so a
// FIX application moves with the path in well under a second and never replays
// an order into another region.
//
// # Start here
//
// Give each endpoint of the Path a "fix" address, probe with a FIX Logon,
// reconcile with status requests, and pass quickfix's own arguments plus
// the Path to NewInitiator. Your settings name no SocketConnectHost: the
// Path chooses the host.
//
//	rec, err := fix.NewReconciler(fix.ReconcileOptions{
//		AnswerTimeout: 2 * time.Second,
//		// Fallback: restReconcile, // when the broker does not answer OrderStatusRequest
//	})
//	probe, err := fix.Probe(fix.ProbeOptions{
//		SessionID: quickfix.SessionID{BeginString: "FIX.4.4", SenderCompID: "ACME-PROBE", TargetCompID: "BROKER"},
//	})
//	cfg.Probe = probe
//	cfg.Fencer = pathdialer.LocalFenceOnly
//	cfg.Reconcile = rec.Reconcile // or pathdialer.ReconcileAll(restReconcile, rec.Reconcile)
//	path, err := pathdialer.New(cfg)
//	in, err := fix.NewInitiator(app, quickfix.NewMemoryStoreFactory(), settings, quickfix.NewNullLogFactory(), path,
//		fix.Options{
//			Sequence:   fix.SequenceContinue, // the broker's model: see the package documentation
//			Reconciler: rec,
//		})
//	defer in.Close()
//	if err := in.WaitLoggedOn(ctx, sid, ""); err != nil {
//		log.Fatal(err)
//	}
//	if err := in.SendOrder(ctx, nos, sid); err != nil {
//		log.Fatal(err) // pathdialer.ErrTradingHalted, fix.ErrNotSent (send again, same ClOrdID), ...
//	}
//
// Options.Sequence has no default: choose the broker's model from the table
// under "Sequence numbers" below. The memory store loses sequence numbers on
// restart; in production pass a durable quickfix store factory. The package
// Example runs this against an acceptor on loopback (each call's error
// checked).
//
// # How it connects
//
// quickfix's initiator cannot be handed a dialer, and its own failover is a blind
// round-robin over SocketConnectHost<n> every ReconnectInterval (30 s by
// default) with no health, fence or halt. NewInitiator takes quickfix's own
// arguments (application, store factory, settings, log factory) plus the Path,
// and returns a started initiator that dials only through the Path.
//
// # What it guarantees
//
//   - Routing: every session connects to a relay of its own on 127.0.0.1, and
//     every connection quickfix opens there is spliced to the active endpoint's
//     "fix" address through the Path's tracked dial. quickfix v0.9.10 cannot be
//     given a dialer; it reaches its relay as a SOCKS5 proxy (ProxyType=socks)
//     with a random password that only its own rewritten settings hold, so any
//     other local client of the relay is refused before anything is dialed.
//     The settings name no address: SocketConnectHost/Port are refused
//     unless Options.ReplaceSocketConnect says to replace them.
//     quickfix reconnects to its relay at once; the relay holds the
//     connection and paces dials to one endpoint by Options.ReconnectInterval
//     (100 ms by default), but dials the new endpoint as soon as the path
//     switches. TLS, when
//     Options.TLSConfig is set, is done by the relay toward the endpoint with
//     the endpoint's host name. The relay holds at most 16 local connections
//     in their handshake at once, each for at most 3 s, and backs off on
//     accept errors (5 ms doubling to 1 s), so a local process exhausting file
//     descriptors or connections cannot make it spin.
//   - Bounded input: the relay frames what the endpoint sends (BeginString,
//     BodyLength, the body's fields, CheckSum) as it passes, without buffering
//     or copying it, and cuts the connection at the first message longer than
//     Options.MaxMessageSize (1 MiB by default; ErrMessageTooLarge) or that is
//     not well formed (ErrMalformedStream): bytes where a message must start,
//     a BodyLength that does not end on a field or is not followed by the
//     CheckSum, an empty tag or value, an XmlData field that runs past its
//     message. quickfix's own reader has no size limit, and its parser
//     panics on some of those messages. The cut is reported to the Path as a
//     failure of the endpoint. Probe reads its answer the same way.
//   - Switch: the Path's local fence closes the relay's connections to the old
//     endpoint; the relay holds quickfix's reconnection until the path has
//     switched and dials the new endpoint then, without waiting
//     ReconnectInterval (a few milliseconds from the switch to the logon in
//     this package's tests). When the Path leaves in preserve mode and
//     Options.PreserveLogout is set, the session first logs out with the
//     venue's opt-out fields (Deribit: DontCancelOnDisconnect 9003=Y), in
//     sequence, and the connection closes once the counterparty answers (at
//     most pathdialer.Config.FarewellTimeout): its resting orders stay.
//     After the switch, Initiator.OpenOrders lists the venue's orders with an
//     OrderMassStatusRequest, for the Path's open-order reconcile
//     (pathdialer.Config.OpenOrders), where the venue supports it. A venue
//     that detects the cut by missed heartbeats cancels when it times the
//     session out, about 2.4 × HeartBtInt after the last message: every
//     session's connection declares 2.5 × HeartBtInt + 500 ms
//     (pathdialer.Conn.SetCODWithin), and the Path reads the venue's orders
//     again once that has passed after the fence.
//   - Hot standby (Options.Standby, off by default): where the venue gives
//     each region a session of its own (its own CompIDs) and allows a second
//     live session (venue.Profile.StandbyAllowed: binance-spot and deribit
//     do; coinbase-exchange-fix and ibkr-client-portal, one session per
//     identity, do not, and NewInitiator refuses them), every endpoint keeps
//     its own session logged on and heartbeating. Orders go over the session
//     of the ticket's endpoint only, so the standby carries none until the
//     switch, and a switch costs no logon.
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
//     (quickfix returns ErrDoNotSend to the caller). Admin messages, Send and the
//     reconciler's status requests never wait.
//   - Tickets finish when the ExecutionReport, OrderCancelReject or
//     BusinessMessageReject for the ClOrdID arrives; orders still unanswered at
//     a switch are handed to reconciliation by the Path.
//   - Reconciler settles those orders after logon on the new path with
//     OrderStatusRequest and their ExecutionReports (FateOf), within a deadline;
//     it plugs into pathdialer.Config.Reconcile and composes with
//     pathdialer.ReconcileAll. Rejects are matched to what they refer to by
//     RefSeqNum (45) and RefMsgType (372), or BusinessRejectRefID (379), and
//     classified by reason: "unknown ID" (380=1) is FateNotReceived, any
//     other reason is no verdict. A counterparty that answers "unsupported
//     message type" (380=3, as quickfix does for an application that handles
//     NewOrderSingle only) is asked once: one EventStatusUnsupported, then
//     ReconcileOptions.MassStatus asks once with OrderMassStatusRequest, then
//     ReconcileOptions.Fallback (for example a REST reconciler) settles the
//     rest, or AcceptUndetermined releases flow with them undetermined; with
//     none of these, the reconcile fails at once with ErrStatusUnsupported,
//     whose text names the options, until the Path halts. An "unknown order"
//     from a region whose session cannot see the order's (the models with a
//     session per region, unless ReconcileOptions.SharedBook) is no verdict.
//   - Each order is handed to reconciliation once, however often its session
//     drops, and a late answer finishes it once.
//   - Logons: a refused or unanswered logon is diagnosed (Options.OnEvent,
//     EventLogonFailed with a LogonCause: the counterparty's numbers too low,
//     ours refused, credentials, rejected, no answer) and the next connection
//     waits a full-jitter backoff (Options.LogonBackoff, at most 5 s by
//     default) that never runs past 2 × HeartBtInt after the last message
//     heard on the session (when a broker that keeps one session per
//     identity releases it) and is at most ReconnectInterval from then on,
//     the interval of quickfix's own flat reconnect. After Options.LogonFailureLimit failures in a row (10), the
//     last refused with a reason (sequence numbers, credentials, a Logout),
//     the session stops connecting and SendOrder fails at once with
//     ErrLogonHalted (wrapping pathdialer.ErrTradingHalted) naming the cause
//     and the SequenceModel to choose, until Initiator.Resume or until the
//     Path moves to another endpoint. Unanswered logons back off, never halt.
//   - Fencing tokens: with Options.TokenTag set, every order carries the
//     ticket's fencing token (the coordinator's, on a coordinated Path) in that tag, and
//     the ticket's validity (pathdialer.Ticket.Valid) is checked immediately
//     before quickfix stores and sends the order: an expired ticket is not
//     sent (ErrNotSent wrapping pathdialer.ErrTicketExpired).
//   - Credentials: the log factory given to NewInitiator is wrapped so
//     Username (553), Password (554), NewPassword (925) and RawData (96)
//     never reach quickfix's logs.
//   - Probe is a logon-level probe: a FIX Logon must be answered. A TCP connect
//     proves nothing (QuickFIX/J users who treated it as success never failed
//     over).
//
// # Sequence numbers: choose the broker's model
//
// Options.Sequence has no default. What the broker must offer for each model:
//
//	model                  broker's sessions                logon          reconcile needs
//	SequenceContinue       one session shared by regions    no reset       OrderStatusRequest, or a Fallback
//	SequenceResetOnSwitch  one per region, numbers kept     141=Y when     OrderStatusRequest answered from a
//	                       across reconnects to a region    region changes book every region sees (SharedBook),
//	                                                                       or a Fallback
//	SequenceResetOnLogon   resets at every logon            141=Y always   as SequenceResetOnSwitch
//	                       (acceptor ResetOnLogon=Y)
//
// A broker that implements NewOrderSingle only (OrderStatusRequest answered
// "unsupported message type") needs ReconcileOptions.MassStatus (if it
// answers OrderMassStatusRequest), ReconcileOptions.Fallback, typically its
// REST API looked up by client order ID, or AcceptUndetermined (flow resumes
// and the orders are reported undetermined). The wrong model shows as logons
// refused with a sequence-number diagnosis (EventLogonFailed) and, after
// LogonFailureLimit, a halt whose reason names the model to choose.
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
// SequenceResetOnLogon is for a broker whose acceptor resets at every logon
// (ResetOnLogon=Y; many crypto and gateway FIX APIs require 141=Y on every
// Logon): every logon carries ResetSeqNumFlag=Y on any endpoint. Nothing is
// ever recovered by resend; orders unanswered when a connection ends are
// reconciled.
//
// # Time to trade again on the new region
//
// Where the broker fences (the old region's connection is closed, or the
// region is gone), FIX logs on to the new region as soon as the path
// switches. With a hot standby there is no logon at all: failover costs
// detection, the switch and the reconcile. Where the broker does not fence
// (one session across regions, the old connection silently held), it refuses
// the session on the new region until it times the old connection out
// (quickfix acceptors: about 2.4 × HeartBtInt; Binance: 2 × HeartBtInt, per
// https://developers.binance.com/docs/binance-spot-api-docs/fix-api); the
// logon backoff is cut at 2 × HeartBtInt after the last message heard and is
// at most ReconnectInterval from then on, so FIX trades within about one
// ReconnectInterval of that release.
//
// BenchmarkFIXResume measures fault → first execution report on the backup
// against the compatibility suite's acceptors (an executor-style quickfix
// acceptor in its own process per region; probes every 150 ms, so detection
// is most of it):
//
//	go test -run '^$' -bench FIXResume -benchtime=1x ./transports/fix/
//
//	scenario (5 runs each, 2 cores, load 15-16)              median (min-max)
//	fence: region killed, order in flight                    125 ms (57-161)
//	hot standby: the same, standby logged on to the backup   73 ms (66-146)
//	fence, the backup 40 ms away (round trip)                181 ms (166-205)
//	hot standby, the backup 40 ms away                       145 ms (136-389)
//	no fence: one session, HeartBtInt 1 s (release           2.47 s (2.42-2.54)
//	  about 2.4 s after the cut)
//
// Where the old region is on loopback, the logon on it takes a few
// milliseconds, so the standby saves little there; it saves the logon's
// round trip to a distant region (36 ms at the median above), and the logon
// a broker could refuse.
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
