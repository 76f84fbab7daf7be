// Package simbroker is a simulated multi-region broker with one shared
// account book, fault injection and an audit log, for the demo, the
// integration and chaos tests and hand-run drills.
//
//	b, err := simbroker.Start(ctx, simbroker.DefaultConfig())
//	defer b.Close()
//	eu := b.Region("eu")
//	eu.RESTURL(), eu.ProbeURL(), eu.WSURL(), eu.FIXAddr()
//	b.SetFault("eu", simbroker.REST, simbroker.Down{})
//	b.Audit().AcceptedThrough("eu", switchedAt)
//
// # Shape
//
// Every region has a REST server (TLS, HTTP/2 and HTTP/1.1) and a WebSocket
// server (TLS, HTTP/1.1), and the broker has one FIX 4.4 acceptor. Nothing
// is reached directly: each service of each region sits behind its own
// faultnet relay on 127.0.0.1 with an OS-chosen port — rest, probe (a second
// relay in front of the same REST server), ws and fix. Addresses never
// change for the life of the broker, across Down and back. All servers share
// one book and one audit log, so every region sees the same orders.
//
// TLS: Start generates a throw-away CA and one server certificate for
// 127.0.0.1, ::1 and localhost. Trust it with CertPool, ClientTLSConfig,
// CACertPEM or the file at CAFile (removed by Close).
//
// # Monitors must probe ProbeURL
//
// A monitor-only partition (the split case: the monitor cannot reach
// a region that trading can) is a Blackhole on the probe relay
// (PartitionMonitor). It reaches a health monitor only if the monitor probes
// ProbeURL + "/v1/account"; trading clients use RESTURL.
//
// # REST API (JSON; authenticated endpoints need header X-API-Key)
//
//	POST   /v1/orders                    place; body {"client_order_id","symbol","side":"buy|sell",
//	                                     "qty","type":"market|limit","price"} (qty/price as JSON
//	                                     strings or numbers). 201 + order when booked; 200 + the
//	                                     EXISTING order when the dedup policy maps the
//	                                     client_order_id to one (default: always, never a second
//	                                     order); 400 invalid (code invalid_order or invalid_token);
//	                                     403 region_fenced; 409 stale_token; 428 missing_token.
//	                                     Header X-Fencing-Token carries the order's token.
//	GET    /v1/orders/{client_order_id}  200 order (the latest booking), 404 if never booked
//	GET    /v1/orders?status=open        {"orders":[...]} (status=all or absent: every order)
//	DELETE /v1/orders/{client_order_id}  200 canceled order; 409 {"error","order"} if not open; 404
//	GET    /v1/account                   {"account_id","entity","entitlements":[...],"region"}:
//	                                     authenticated and cheap, the probe to use
//	GET    /status                       public, ALWAYS 200 {"status":"ok","region"}, even when
//	                                     trading is broken: it shows why it is a bad probe
//	POST   /v1/account/fence             kill switch, on every region: body {"region":"eu"} fences
//	                                     that region for the account; 200 {"region","fenced":true,
//	                                     "since"}; 501 fence_not_offered with FenceNone; 400
//	                                     unknown_region. With TokensChecked an X-Fencing-Token header
//	                                     also raises the account's highest token.
//	POST   /v1/account/unfence           body {"region":"eu"}: lifts it; 200 {"region","fenced":false}
//	GET    /v1/account/fence             {"fence","tokens","dedup","fenced":{region:since},"highest_token"}
//
// An order is {"order_id","client_order_id","symbol","side","type","qty","price",
// "status":"new|filled|canceled","filled_qty","avg_price","region","service",
// "created_at","updated_at"}; "region" is the region that booked it. Market
// orders fill at once (at the last price of stream px.SYMBOL when there is
// one); limit orders rest. Errors are {"error": "..."}; a missing or wrong
// key gets 401 and the body never echoes a key. Every response carries
// X-Region. 503 answers carry Retry-After (seconds). Refusals by a
// strict-broker policy are {"error": "...", "code": "..."}; none books anything.
//
// # WebSocket market data (wss://127.0.0.1:PORT/ws, header X-API-Key)
//
// Client → server, JSON text messages:
//
//	{"type":"subscribe","streams":["px.EURUSD"]}     snapshot of the region's latest state, then ticks
//	{"type":"resume","streams":{"px.EURUSD":41}}      replay every tick after 41 from the region's
//	                                                  replay buffer, then live ticks; a snapshot
//	                                                  instead when 42 is no longer buffered, when 41
//	                                                  is ahead of what the region has (replication
//	                                                  lag), or nothing is known
//	{"type":"resume","streams":{"px.EURUSD":41},"epochs":{"px.EURUSD":"<hex>"}}
//	                                                  as above; answered with a snapshot when the
//	                                                  epoch is not the region's current one
//	{"type":"unsubscribe","streams":["px.EURUSD"]}
//	{"type":"ping"}                                   answered {"type":"pong"}
//
// Server → client:
//
//	{"type":"tick","stream":"px.EURUSD","seq":42,"epoch":"<hex>","price":"1.0843","time":"..."}
//	{"type":"snapshot","stream":"px.EURUSD","seq":N,"epoch":"<hex>","price":"...","time":"..."}   state as of N;
//	                                                  ticks continue from N+1
//	{"type":"error","message":"..."}
//	{"type":"pong"}
//
// Every region starts in the broker's epoch; Region.RestartFeed gives one
// region a new epoch and numbering from 0 and closes its WebSocket
// connections (a restart, or a failover to a replica with a new numbering).
//
// Sequence numbers are global per stream: ticks come from one central
// generator (every TickInterval, or PublishTick) and reach each region's
// replay buffer after that region's ReplicationLag, so the same tick has the
// same seq everywhere. Replay and live ticks are queued under one lock: no
// gap, no repeat. The server sends WebSocket pings every PingInterval and
// answers client pings (control frames). Each region has a handshake budget
// (token bucket, HandshakesPerSecond, HandshakeBurst): over it the upgrade
// request gets 503 with Retry-After before any upgrade. Region.WSStats
// counts handshakes, rejections, subscribes, resumes and snapshots.
//
// # FIX 4.4
//
// One quickfix acceptor (memory store, no file logs) holds one session:
// SenderCompID = Config.BrokerCompID, TargetCompID = Config.ClientCompID
// (FIXSessionID gives the initiator's view). quickfix keeps a process-wide
// session registry, so two acceptors with one session ID cannot share a
// process: every region reaches the same acceptor through its FIX relay,
// sequence numbers stay continuous for the account across regions, and a
// second Start with the same CompIDs fails with ErrFIXSessionInUse.
//
// Region attribution: each relay dials the acceptor from its own ephemeral
// port and records that local address before it forwards a byte; quickfix
// passes the accepted socket to the broker's ConnectionValidator after
// reading the Logon, and its remote address names the relay connection, so
// the region and ConnID ("eu/fix/3") are known at logon and used for every
// message until the session drops.
//
//	NewOrderSingle (D)         → ExecutionReport ExecType=NEW; market orders then a second
//	                             report ExecType=TRADE, OrdStatus=FILLED, LastPx/LastQty.
//	                             A repeated ClOrdID books nothing and gets the existing order's
//	                             status (ExecType=ORDER_STATUS). Invalid → ExecType=REJECTED,
//	                             OrdStatus=REJECTED, Text.
//	OrderStatusRequest (H)     → ExecutionReport ExecType=ORDER_STATUS; for an unknown ClOrdID
//	                             OrdStatus=REJECTED, OrdRejReason=5 (unknown order), OrderID=NONE.
//	OrderMassStatusRequest (AF)→ one ExecutionReport per order in the book (filtered by Symbol
//	                             if given), ExecType=ORDER_STATUS, MassStatusReqID,
//	                             TotNumReports, LastRptRequested=Y on the last; an empty book
//	                             gets one report with TotNumReports=0 and OrdStatus=REJECTED.
//
// Messages with PossDupFlag=Y are audited with PossDup=true. ResetOnLogon
// is configurable. OrderCancelRequest (F) cancels OrigClOrdID (see Resting orders).
// The optional second mode, one session per region in a child process, is
// not implemented.
//
// # Session policy
//
// SessionsConcurrent: the broker does not fence; REST and WS serve every
// region at once, and a second FIX logon is refused while the session is
// logged on through another connection (the client must fence itself).
// SessionOnePerCredential: a FIX logon through any region resets the
// connection holding the session first (audit kind "fence"), then accepts.
//
// # Strict-broker policies
//
// Real brokers differ, so the book and the gate in front of it are chosen per
// run (Config.Dedup, Config.Fence, Config.Tokens; Config.Policies prints them):
//
//	Dedup   across-regions (default): a client order ID books once, ever.
//	        open-only: a repeat maps to the first order only while it is open;
//	        once filled (market orders fill at once) or canceled, it books anew.
//	        none: every accepted submission books.
//	Fence   none (default): no kill switch; FenceRegion and POST /v1/account/fence
//	        answer ErrFenceNotOffered / 501.
//	        enforced: FenceRegion(region) / UnfenceRegion, or the REST kill switch
//	        on any region; a fenced region rejects the account's orders and
//	        cancels on REST (403, code region_fenced) and FIX (ExecutionReport
//	        OrdStatus=REJECTED, Text "rejected-fenced: region eu is fenced ...");
//	        reads keep working. With SessionOnePerCredential, a FIX logon through
//	        region B fences the region of the previous logon, before its session
//	        is reset.
//	Tokens  off (default): tokens are ignored (audited when sent).
//	        checked: every order carries a non-negative integer token, REST header
//	        X-Fencing-Token (TokenHeader), FIX tag 9901 (TokenTag). The broker
//	        keeps ONE highest token for the account (the book is one, so the
//	        check is account-wide, not per region) and rejects a lower token
//	        (409 stale_token / FIX reject); equal is accepted, higher raises it.
//	        No token: 428 missing_token / FIX reject. RaiseToken, or the header
//	        on the kill switch request, raises it without an order.
//
// An order passes the fence first, then the token check, then the book
// (validation and deduplication), all decided under one lock with its audit
// record.
//
// # Venue profiles
//
// FromVenue(profile, VenueOptions{TimeScale: 60}) returns a Config whose
// broker plays a venue.Profile (Config.Venue, a VenuePlay): its client-order-ID
// deduplication scope and window, a lookup lag (a booked order answers "not
// found" for the venue's false-negative horizon), a lookup rate limit (429
// with Retry-After; 418 bans where the venue bans), its fence, and a FIX
// lockout after a session dropped without a logout. HoldCopies blackholes a
// region for longer than a client of the profile quarantines, so copies land
// after the verdict. Broker.Profile is then the (scaled) profile a client
// should judge by; VenueStats counts throttled lookups and refused logons.
//
// # Faults
//
// SetFault(region, service, fault) with service rest, probe, ws or fix:
//
//	Down{}              listener closed (dials refused), live connections reset; None re-listens
//	Blackhole{}         accept, then silence both ways (new and live connections)
//	Latency{Delay,Jitter} each chunk delayed Delay+[0,Jitter], each way
//	Reset{}             live connections reset once
//	Flap{Period,Fault}  Fault (default Down) and None alternating every Period
//	Fault503{N,Until}   rest: every /v1 request 503 + Retry-After (status stays 200); ws: handshakes
//	Partial{}           rest: status and account 200, POST/DELETE orders 503 at once;
//	                    fix: orders rejected; ws: connected and subscribed, nothing delivered
//	UnknownOutcome{N}   rest, fix: the next N orders are booked, then the connection is cut
//	                    before the answer (HTTP/1: hijack+close; HTTP/2: handler abort, i.e.
//	                    RST_STREAM; FIX: relay reset before the ExecutionReport)
//	BookingDelay{Delay} rest: each order is booked Delay after it arrives, then answered; a
//	                    connection reset meanwhile does not stop the booking (Delay 0 ends it)
//	None{}              clears everything on the service
//
// PartitionMonitor(region) is Blackhole on probe. Network faults live in
// the faultnet relays; application faults in the handlers, per region.
//
// # Audit
//
// Audit returns every decision in order, numbered by Seq: order submissions
// (outcome new, cut, duplicate, rejected, unavailable, rejected-fenced,
// rejected-stale-token, rejected-missing-token) with region, service,
// ConnID, time, client order ID, the broker's OrderID (booked, or the one a
// duplicate was mapped to), the token carried, and PossDup; cancels; FIX
// logons, logouts, session fences and refusals; region fences and unfences
// (region-fenced, region-unfenced, with what fenced it) and token raises.
// AuditLog.AcceptedThrough(region, since) counts orders booked through a
// region after a switch ("two live paths"); Duplicates lists client order
// IDs booked more than once (empty with DedupAcrossRegions); Submissions
// counts raw submissions so tests can see repeats; FenceSpans, FencedAt and
// BookedWhileFenced give the broker's fences as intervals of Seq and time;
// Rejected lists the policy refusals. Bookings(clientOrderID) lists every
// order booked under one ID.
//
// # Resting orders
//
// Limit orders rest until a test fills them (FillResting, FillCrossing: a
// deterministic market) or something cancels them; OpenOrders and GET
// /v1/orders?status=open list them. Every cancel is audited with its cause
// (AuditLog.Cancels): the client (KindCancel: REST DELETE /v1/orders/{id}
// or DELETE /v1/orders for all, FIX OrderCancelRequest, WebSocket cancel),
// cancel-on-disconnect (KindCODCancel, naming the connection whose end
// fired it) or the dead-man timer (KindDeadManCancel).
//
// Cancel-on-disconnect: a FIX session chooses its scope at Logon with the
// venues' own tags — 8013 (Coinbase: S session, Y every order of the
// profile, N none), 8674 (Kraken: 0 session, 1 none), 9001 (Deribit: Y the
// connection's orders) — or gets the broker's default
// (SetCancelOnDisconnect; CODFor maps a venue profile). A FIX Logout with
// 9003=Y leaves without cancelling (KindCODKept), any other end fires it.
//
// WebSocket order entry (same connection as market data):
//
//	{"type":"order","client_order_id","symbol","side","qty","order_type":"limit|market","price"}
//	                                   → {"type":"order","order":{...}} or {"type":"rejected","error"}
//	{"type":"cancel","client_order_id"} → {"type":"canceled","order"} or {"type":"rejected"}
//	{"type":"enable_cancel_on_disconnect","scope":"connection|profile|off"} → {"type":"cod","scope"}
//	{"type":"logout"}                  the server closes the connection; its orders are kept
//	{"type":"cancel_all_after","timeout":60} → {"type":"cancel_all_after","expires"}
//
// Dead-man timer (Kraken cancelAllOrdersAfter style), one for the account:
// POST /v1/account/cancel-all-after {"timeout":60} (seconds; 0 disarms)
// answers {"armed","expires"}; arming again refreshes it, through any
// region; when it lapses every open order is cancelled. ArmDeadMan and
// DeadMan do the same from Go; AuditLog.DeadManSpans gives the intervals in
// which an armed timer protected the account.
//
// # Injected listeners (simulation)
//
// With Config.Listen the broker serves REST, probe and WebSocket on the
// listeners it is given (for example faultnet.MemNetwork's, inside a
// testing/synctest bubble) and opens no socket; Config.PlainHTTP drops TLS.
// No FIX acceptor runs then (quickfix listens by itself), network faults
// belong to the injected network (SetFault refuses them), application
// faults (Fault503, Partial, UnknownOutcome) and every policy work as
// usual. internal/dst runs the whole client stack against it this way.
//
// # Lifecycle
//
// Start returns with every endpoint accepting, in well under a second.
// Close resets every relay connection, stops the acceptor (after the session
// has dropped, so quickfix's logout timer is never armed), the servers, the
// feeds and the ticker, and removes the CA file; every goroutine the broker
// started has returned when it returns. quickfix's session loop waits for a
// whole second once at start, so Close may take up to a second. Logs go to
// Config.Logger (discarded by default).
package simbroker
