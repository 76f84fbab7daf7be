// Package pathdialer is the runtime around brokerpath's decision engine: it probes
// every endpoint of one broker account, lets engine.Manager decide, and performs
// what it decides, so that order flow only ever goes over one fenced, reconciled
// path.
//
// # Start here
//
// Describe the account's endpoints (one per region or line, an address per
// service), then choose the three things that have no safe default: a probe
// that asks the order service, a fence and a reconciler. DefaultConfig gives
// the rest.
//
//	cfg := pathdialer.DefaultConfig()
//	cfg.Endpoints = []pathdialer.Endpoint{
//		{Name: "eu", Region: "eu-west", Priority: 0, Primary: true, Services: map[string]string{"orders": euAddr}},
//		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"orders": usAddr}},
//	}
//	cfg.Probe = askOrderService            // asks the order service: a TCP connect proves nothing
//	cfg.Fencer = pathdialer.LocalFenceOnly // this process alone trades the account
//	cfg.Reconcile = lookUpInBook           // settles orders of unknown fate from the broker's book
//	p, err := pathdialer.New(cfg)
//	if err != nil {
//		log.Fatal(err) // names what is missing or wrong
//	}
//	defer p.Close()
//	if err := p.Start(ctx); err != nil {
//		log.Fatal(err)
//	}
//
// Start returns once an endpoint is eligible; when every endpoint rejects
// the probe (ErrProbeRejected: a refused key), it fails within one round.
//
// Most applications hand p to a transport (transports/rest, ws, fix). What
// a transport does for each order:
//
//	t, err := p.Acquire(ctx, "orders", orderID) // held during a switch; ErrTradingHalted when halted
//	if err != nil {
//		return "", err // not sent
//	}
//	ep, _ := p.Endpoint(t.Endpoint)
//	c, err := p.DialEndpoint(ctx, t.Endpoint, "tcp", ep.Services["orders"]) // tracked: the fence closes it
//	if err != nil {
//		t.Done() // nothing was written
//		return "", err
//	}
//	defer c.Close()
//	answer, err := ask(ctx, c, "ORDER "+orderID)
//	if err != nil {
//		t.Unknown(err) // written, never answered: it may be booked; the reconcile function settles it
//		return "", err
//	}
//	t.Done()
//
// ExampleNew runs this against two regions on loopback; the package Example
// runs a switch. Then read the guarantees, the table of what each promise
// relies on (it depends on your broker), and Config's fields.
//
// # How a Path is used
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
//     endpoint DOWN holds the gate before Report returns and is evaluated at once,
//     not at the next probe round. Report the results of orders and authenticated
//     reads only: a market-data connection's failures prove nothing about the
//     order path (transports/ws does not report them).
//   - A probe of the active endpoint that is late (Config.SuspectAfter) or times
//     out, an order on it unanswered for as long, and an order on it that
//     failed make it suspect: it is probed again at once rather than at the
//     next round, so a blackhole is found in about SuspectAfter +
//     ProbeTimeout, not a whole round later, and a refused region as soon as
//     its probe agrees with the failed order. A late answer is still a
//     success; DOWN still takes FailureThreshold failures in a row. An order
//     still unanswered ProbeTimeout after it was found late, none having
//     succeeded on the endpoint since, is hung: orders no longer vouch for a
//     failing probe there (a broken probe), so its failures count.
//
// # Configurations refused at New
//
// New (and Config.Validate) checks every field as written, then the
// configuration as a whole, and refuses what cannot work with a
// *ConfigError naming the field and, when the fault is one endpoint's, the
// endpoint (errors.Is(err, ErrInvalidConfig) holds). Besides each field's
// own range it refuses:
//
//   - a service some endpoint lacks: every endpoint names the same
//     services, since a switch moves them all together;
//   - a ReconcileByService key that no endpoint has as a service;
//   - BrokerFencesViaFencer with Fencer LocalFenceOnly: the local fence is
//     not one the broker confirms;
//   - a plain http:// "rest" or ws:// "ws" address to a host that is not
//     loopback, unless AllowPlaintext; an http(s):// URL as a "ws" address;
//     credentials in any address;
//   - a Config not started from DefaultConfig (the error says so).
//
// The transports refuse at construction what they could never connect
// with, with the same *ConfigError and their own sentinel as Kind:
// ws.NewStream a Path without "ws" addresses, or a wss:// address to a
// loopback or private host without the CA to verify it; rest.Probe a path
// without its leading "/".
//
// # The controller is never blocked
//
// One goroutine, the controller, takes every decision: a Report that took the
// active endpoint DOWN, a probe round's evaluation, a coordinator's Assign,
// Hold or Halt. No user hook that may wait on the network runs on it: every
// reconcile (a switch's, a settle of unknown outcomes, a re-query of
// provisional verdicts) runs in its own goroutine bounded by ReconcileTimeout,
// and its result comes back as a message. A settle or re-query in progress is
// superseded by anything that holds or halts the gate (EventReconcileFailure
// says so; its orders go to the next reconcile, so a ReconcileFunc may see an
// order again, as after a failed attempt that did not answer for it), and a
// switch's reconcile is superseded when its own target warrants failover or
// the coordinator halts. A failed attempt keeps the answers it returned with
// its error: the next attempt is asked only about the orders still open, so
// a reconciler that can settle only some orders within ReconcileTimeout (a
// venue's lookup budget) still settles them all over a few attempts.
// The fence (FenceFunc, bounded by FenceTimeout) still runs on the controller:
// the gate is held while it does.
//
// # What it guarantees
//
//  1. At most one path can submit at any moment. Before a switch the gate holds
//     submissions, the old endpoint is fenced locally (every tracked connection to
//     it closed, new dials to it refused while it is not active) and then by the
//     user's FenceFunc; only a confirmed fence lets the engine switch. A failing
//     fence switches nothing: the gate stays held, the fence is retried with
//     backoff, and after Config.FenceAttempts failures in a row the hold becomes a
//     loud halt (a failback is given up instead: see 9).
//  2. No submission is released on the new path before the ReconcileFunc has
//     succeeded, called with every ticket that was in flight or finished with an
//     unknown outcome. After every switch, and before leaving a halt even on the
//     same endpoint. A failing reconcile keeps holding, is retried with backoff,
//     and halts after Config.ReconcileAttempts failures in a row. Its reads
//     go through the endpoint flow will be released on; when
//     Engine.FailureThreshold attempts (at least two) in a row failed there
//     without answering for any order (lookups that fail or hang) while
//     another endpoint is eligible, that endpoint is taken DOWN as failed
//     trade-path checks would take it, and the switch goes to the eligible
//     one (fenced first, its orders reconciled there before release). With
//     no other endpoint eligible it is only retried.
//  3. Halt is loud: when the active endpoint is DOWN or fronts another
//     account and no other endpoint is eligible (after probing stale
//     candidates at once, with orders held), Acquire returns ErrTradingHalted
//     at once, wrapping the reason; events say why. A DEGRADED active endpoint
//     that still answers keeps trading.
//  4. A ticket is never granted while the gate is held or halted, only ever for
//     the endpoint that is active at that instant, and never on an endpoint after
//     the Report that took it DOWN returned.
//  5. A stalled monitor, or stale health of the active endpoint, is reported
//     (EventMonitorStale, Snapshot.Monitor.Stale), never acted on.
//  6. Results from an older token are dropped: a connection dialed before a
//     switch finishes under the old token, and its passive reports no longer
//     count.
//  7. Events are delivered in order, from one goroutine, never under a lock; none
//     is dropped. Event.Seq numbers them from 1 without a gap, Event.Time never
//     goes backwards, and each endpoint's state-change events chain.
//  8. Close stops every goroutine the Path started, fails waiting Acquires with
//     ErrClosed, and closes every tracked connection.
//  9. A failback that cannot be completed holds the backup that carries flow
//     at most once per try, only for its fence (at most FenceTimeout) and,
//     when that fails, the reconcile that resumes flow on the backup; a
//     preparation that fails holds nothing. What can fail in a failback is done
//     while the gate stays open on the backup: the primary's identity
//     re-proof (Config.SwitchIdentityCheck), then the dead-man arm over it
//     (Config.DeadMan); the trade-path check (Config.TradePathCheck) already
//     keeps a failing primary from being offered. When one of them fails,
//     or the fence that follows fails once, the failback is given up at once
//     (EventFailbackAbandoned, saying why and when the next try is; after a
//     failed fence, flow resumes on the backup through its reconcile) and
//     tried again only after Config.FailbackBackoff, which doubles with each
//     failback given up in a row. Failover never waits for it.
//
// # What each promise relies on
//
// The runtime closes this process's side of the old path. What happens to an
// order already on its way depends on the broker; the table says which promise
// holds with which broker, and Path.MayResend answers the only question a
// client must ask before sending an order again.
//
//	promise                             holds when                                   does not hold when
//	one path submits at a time          always for this process (local fence:        another process or host trades the
//	(this process)                      conns aborted, dials refused, gate held)     account and the Fencer does not stop it
//	no order booked through the old     the broker fences (BrokerFencesViaFencer:    only the local fence: an order already
//	path after the switch               kill switch, one session per credential,     in a proxy, the network or the broker's
//	                                    token advance), or checks fencing tokens     gateway can still be booked (a late
//	                                    (Ticket.Token written on each order)         landing; reported, see below)
//	no order lost                       the reconcile function reads the broker's    the reconcile function guesses, or the
//	                                    book; every unknown outcome is handed to it  broker loses orders it acknowledged
//	NOT_RECEIVED is final               on what Config.Venue guarantees: Broker-     the venue's facts are wrong (a lookup
//	                                    FencesViaFencer, a Fencer that succeeded     misses an order longer than its false-
//	                                    for the order's endpoint and a venue that    negative horizon) or a copy is held
//	                                    can fence or check tokens, then a lookup     longer than MaxCopyHold (then it is
//	                                    past its false-negative horizon; or          booked late: reported as an alarm,
//	                                    Quarantine (at least that horizon +          EventLateLanding "after a final
//	                                    MaxCopyHold; without a profile 15 min +      verdict", Snapshot.LateAfterFinal)
//	                                    MaxCopyHold) passed and a re-query found
//	                                    nothing
//	no order booked twice               the client resends only when MayResend       the client resends on its own, under a
//	                                    says Allowed: a final NOT_RECEIVED at a      new ID, or while a verdict is
//	                                    venue that refuses a duplicate client        provisional; a venue whose profile
//	                                    order ID in every state for long enough, or  overstates its deduplication or fence
//	                                    backed by its fence or token check (never
//	                                    on a quarantine alone); same client order ID
//	every late landing is reported      the order lands within the late-landing      it lands after the horizon, the Path
//	(EventLateLanding, Snapshot)        horizon (Venue.LateLandingHorizon, at        is closed first, the reconcile function
//	                                    least 15 min after the final verdict) and    keeps failing, or the venue forgets a
//	                                    the re-queries succeed; looks at growing     finished order between two looks
//	                                    intervals within the venue's lookup budget   (LookupRetention)
//	a late landing while the verdict    the re-queries succeed and no more orders    lookups fail, more orders wait than
//	is provisional is reported within   wait than one budgeted call asks about: the  the budget lets one call ask about (the
//	MaxCopyHold + one LookupInterval    order is looked up every MaxCopyHold (at     rest wait their turn, LookupInterval
//	of its booking                      least the venue's LookupInterval), and one   each), or a switch holds the gate
//	                                    LookupInterval after its old endpoint        meanwhile (its reconcile runs instead)
//	                                    recovers (DOWN to HEALTHY)
//	a fenced connection delivers        always for this process: the local fence     the bytes already left this host (in
//	nothing more                        aborts it (SO_LINGER 0, RST): bytes still    the network, a proxy, the gateway):
//	                                    in the send buffer are discarded             covered by MaxCopyHold and the watch
//	a paused process never books on a   the transport checks Ticket.Valid right      the pause falls between that check and
//	stale decision (coordinated Path)   before writing, Acquire refuses once the     the bytes leaving the host: only a
//	                                    deadline given to Extend has passed, and     broker that checks fencing tokens
//	                                    the monotonic clock runs during the pause    rejects that write
//
// Settlement.Final and Settlement.Provisional, the reconcile events (whose
// String lists each order's fate and whether it is final), Snapshot.Provisional
// and MayResend all show the same verdicts.
//
// # Decision validity
//
// A coordinated Path's decisions last only as long as the coordinator's lease:
// Path.Extend sets the instant (monotonic) until which the current decision is
// known valid, and coord/etcd's Follower moves it forward with every lease
// keep-alive (the lease's expiry as measured here, minus a margin). Acquire
// compares the clock with it, with no allocation, and refuses (ErrTicketExpired)
// once it has passed, even if no goroutine has yet run to halt the gate (a
// paused or starved process); every Ticket carries it as ValidUntil, and the
// transports check Ticket.Valid immediately before the bytes of an order are
// written. A Path that decides by itself has no such deadline.
//
// # Services released independently
//
// With Config.Reconcile alone, every service waits for the whole reconcile. With
// Config.ReconcileByService, a switch reconciles each named service with its own
// function, concurrently, and releases it as soon as its own reconcile
// succeeded:
//
//   - every ticket in flight or of unknown outcome is taken once, when the
//     reconcile begins, and grouped by service; a service named in ReconcileByService
//     is settled by its own function (Reconciliation.Service set, only its
//     tickets), the tickets of every other service by Config.Reconcile; every
//     function is called, with no tickets too, as Config.Reconcile alone is:
//     it is where the application settles what the Path cannot know, such as
//     the orders of a process it takes over from;
//   - a named service is released (Acquire grants its tickets on the new
//     endpoint; EventRelease with Service set; Snapshot.Released) when its own
//     reconcile succeeded; the other services only when every reconcile
//     succeeded (the gate opens: EventRelease with Service "");
//   - each reconcile retries on its own; ReconcileAttempts failures in a row of
//     any one halt the whole gate (released services too) until all succeed;
//   - a switch abandoned while a service is released holds it again; its orders
//     on the new endpoint go to the next reconcile with the rest.
//
// Guarantee 2 then holds per service: no order of a service is granted on the
// new path before that service's reconcile succeeded. What a released service
// may not know: the fate of the other services' orders still being reconciled
// (a FIX order of unknown fate may yet be filled while REST orders flow).
//
// # Resting orders across a switch
//
// Leaving a path closes its connections, and at many venues that cancels the
// orders resting on the book (cancel-on-disconnect), sometimes more than the
// old path's: at Coinbase Exchange every open order of the profile, including
// those already placed over the new path. Three mechanisms make a switch safe
// for them:
//
//   - Fence mode (Config.FenceMode, Snapshot.Fence). Preserve leaves the old
//     path the way the venue keeps resting orders: the Fencer is told so
//     (Fence.Mode), and every tracked connection with a farewell
//     (Conn.SetFarewell; transports/fix sends a Logout carrying the venue's
//     opt-out tag, Options.PreserveLogout) says it, bounded by
//     FarewellTimeout, before the local fence closes it and before the
//     Fencer runs. Flatten lets cancel-on-disconnect fire and confirms each
//     cancel afterwards. The default is preserve where the venue's profile
//     documents a way to keep orders (or has no cancel-on-disconnect), and
//     flatten everywhere else: a graceful leave the venue does not promise to
//     honour would leave the outcome to chance, while a flatten confirmed
//     against the venue's book reports every order it cost. New refuses
//     preserve for a venue that documents no way to honour it. A farewell
//     cannot be said over a path that no longer answers: its orders may be
//     cancelled by the venue's heartbeat timeout whatever the mode, and the
//     reconcile below reports them.
//   - Dead-man timer first (Config.DeadMan). Where the account is protected
//     by a cancel-all-after timer (Kraken cancelAllOrdersAfter, BitMEX
//     cancelAllAfter, Binance futures countdownCancelAll), the hook arms it
//     over the endpoint the switch goes to before the old path is fenced; the
//     fence waits for it, at most DeadManTimeout a try. A failure is a loud
//     hold (EventDeadManFailure, the gate's cause, Snapshot.DeadMan), retried
//     with FenceBackoff, and a halt after FenceAttempts in a row: the old path
//     is never left with no timer armed on the new one. A failover is not
//     pinned to its target: when the target goes DOWN, or its arm failed
//     FenceAttempts times in a row (it is then passed over for the rest of
//     the switch), the switch moves to the next eligible endpoint, arms the
//     timer there and fences the old path toward it; only with no other
//     eligible endpoint does it halt and keep retrying. A failback arms it
//     before anything is held, over a primary whose identity was re-proved,
//     and a failed arm gives the failback up (Config.FailbackBackoff), with
//     flow left on the backup. An arm still running when the switch is abandoned is
//     reported superseded.
//   - Open orders reconciled after every switch (Config.OpenOrders). For each
//     service, CODSettle after the fence (once cancel-on-disconnect has
//     acted) and after flow is released (submissions are not held for it),
//     the application's open orders are compared with the venue's, read
//     through the new path in one request where the venue allows it and
//     retried no faster than the venue's lookup budget allows (at Deribit,
//     running out of credits ends the session, which fires
//     cancel-on-disconnect on the new path). Each difference is reported with
//     its cause (EventOpenOrderDiff, Snapshot.OpenOrders): cancelled by the
//     switch, filled meanwhile, unknown to the venue, or open at the venue
//     but not in the application's record. Every order the switch cancelled
//     gets its own EventRestingCancelled, so a strategy can re-quote, and is
//     counted (Snapshot.RestingCancelled). A venue that lists only open
//     orders cannot say whether a missing order filled or was cancelled: the
//     difference is then marked Presumed, cancelled where the fence mode's
//     cancel-on-disconnect reaches the order, unknown where it does not. A
//     reconcile that fails ReconcileAttempts times is reported as a failure,
//     never as agreement; one superseded by the next hold runs again after
//     the next release. A venue that detects the drop by a missed heartbeat
//     cancels only when it times the silent connection out: a connection
//     that declares when (Conn.SetCODWithin; the FIX transport does, from
//     each session's HeartBtInt) has the venue read again once that time has
//     passed. Every fence is judged on its own, even two within CODSettle,
//     and each cancel is reported with the switch whose fence cut it (From,
//     To, Token; the new path's orders, at a venue that cancels the whole
//     profile, with the fence that fired it). Orders the switch's own
//     reconcile settled RESTING are read with the application's open
//     orders, so a cancel that followed the report they were settled from
//     is reported too.
//
// # Tickets and the cost of the gate
//
// Acquire allocates one Ticket; AcquireInto fills a Ticket the caller owns and
// allocates nothing. On an open gate either costs a few tens of nanoseconds: an
// atomic load of the gate, a lock of one of 64 independently locked shards
// chosen at random, and (on a coordinated Path) one reading of the monotonic
// clock. A switch takes every ticket in flight in time linear in their number,
// with one allocation.
//
// With Config.ExternalDecisions a coordinator (coord/etcd: a quorum of observers
// and one elected decider) makes the switches instead of this process; the Path
// performs them through Assign (fence, switch under the coordinator's fencing
// token, reconcile, release), Hold, Halt and Resume, with the same guarantees.
//
// The configuration has no silent defaults for what matters: Probe, Fencer (or
// Engine.BrokerFencesAtLogon, or the explicit LocalFenceOnly) and Reconcile (or the
// explicit NoReconcile) must be chosen.
package pathdialer
