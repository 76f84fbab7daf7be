// Package ws carries WebSocket market data over a pathdialer.Path with
// gorilla/websocket: a Dialer that connects to an endpoint's "ws" address
// through the Path's tracked dial, and a Stream client that survives
// reconnects and region switches without losing or repeating a message (full
// jitter, endpoint fallback, resume from sequence), never stalls silently, and
// survives a server that restarts its numbering.
//
// # Start here
//
// Give each endpoint of the Path a "ws" address (ws:// or wss://), name the
// streams, and handle messages; the Stream does the rest:
//
//	cfg := ws.DefaultStreamConfig()
//	cfg.Streams = []string{"px.EURUSD"}
//	cfg.Handler = func(m ws.Message) { got <- m }
//	s, err := ws.NewStream(path, cfg)
//	if err != nil {
//		panic(err)
//	}
//	if err := s.Start(context.Background()); err != nil {
//		panic(err)
//	}
//	fmt.Println(s.Health())
//	_ = s.Close()
//
// The Handler sees each stream's messages once, in sequence order, across
// reconnects and switches; a resume the server cannot replay arrives as a
// snapshot (Message.Snapshot). Health says whether the data is live; read it
// before trusting a price. The wire protocol is StreamConfig.Protocol:
// JSONProtocol by default; a real feed's shape needs a Protocol of its own
// (see Protocol: the promises rest on the server's sequence numbers and
// epochs).
//
// The package Example runs this against a server on loopback. The Stream
// only ever dials read-only connections, which the fence leaves open; for a
// connection that carries orders, use Dialer.
//
// # What it guarantees
//
//   - Routing: every connection goes to one endpoint's "ws" URL (ws:// or
//     wss://), rebuilt from the endpoint so the Host header and TLS server name
//     are that endpoint's (an address with user information, such as
//     ws://user:password@host/ws, is refused by NewDialer and NewStream with
//     ErrAddressCredentials: credentials go in the handshake's header); the
//     base *websocket.Dialer's TLS config,
//     subprotocols, compression and buffer sizes are kept. Connections are
//     tracked by the Path. Dialer.Dial and DialEndpoint hand out ordinary
//     connections: the fence closes them and a fenced endpoint is refused
//     (pathdialer.ErrFenced). Dialer.DialReadOnly hands out read-only ones
//     (market data): the fence leaves them open; Path.Close closes them. The
//     Stream only ever dials read-only.
//   - A handshake answered 503 or 429 returns a *HandshakeError carrying
//     Retry-After; the Stream still tries the round's other candidates, and
//     waits at least that long (capped by StreamConfig.MaxRetryAfter) before
//     its next round. It is not a path failure.
//   - Order and exactly-once: the Handler is called from one goroutine with
//     each stream's messages in strictly increasing sequence, once per
//     sequence number, across reconnects, fallbacks and switches. Duplicates
//     (seq <= last) are dropped; a gap is repaired by a resume on the same
//     connection, and a resume the server cannot replay is answered with a
//     snapshot that is handed over with Message.Snapshot set.
//   - Never a silent stall: a stream that is broken (a gap, a subscription
//     unanswered, a server behind the client) is repaired within a deadline
//     that escalates (StreamConfig.GapTimeout, T): a gap is resumed at once
//     and again at T/8, 3T/8 and 7T/8; at T a snapshot is asked for; at 2T
//     the connection is dropped as a failure and the stream reconnects with
//     backoff, falling back to other endpoints. Every rung is an event
//     (OnEvent), counted (Stats), and shows in Health: LIVE, RECOVERING, then
//     SUSPENDED after StreamConfig.SuspendAfter (treat the data as stale).
//   - Restarts: a server whose numbering starts over (a new epoch in
//     Frame.Epoch, or without epochs a message more than ReplayWindow below
//     the last, or a requested snapshot still below it after T) is followed
//     by a snapshot of the new numbering, handed over with Message.Restart
//     set; nothing new is dropped as a duplicate of the old numbering, and
//     no tick of the new numbering is handed over as if it continued the old.
//   - Reconnect: in rounds. Before round n (rounds failed
//     in a row) one full-jitter wait, rand(0, min(Cap, Base·2^n)) (1 s and
//     60 s by default), or the largest Retry-After of the last round (capped
//     by StreamConfig.MaxRetryAfter) when longer; then the round's candidates
//     back to back: the Path's active endpoint first, then, when the lost
//     connection's Path has not switched yet (or after FailuresBeforeFallback
//     failed rounds), every other fresh-healthy, unfenced endpoint (reads may
//     use any healthy path); an endpoint whose connect failed in the round
//     before is tried after the others. A switch does not cut a wait short, so a
//     population cut at one instant reaches the survivor uniformly over the
//     first round's window. A 503/429 is not a path failure. A stream that
//     landed on an endpoint other than the active one stays there until the
//     Path switches. A connection lost within HealthyAfter of its handshake
//     counts as a failed round (so its first window is 2·Base, and so on);
//     after a server's fault (a stall, bad or oversized frames) the next
//     round tries that endpoint last. A round with no candidate at all is
//     followed by at least 50 ms. StreamConfig.Rand replaces the
//     jitter source (a seeded one makes a simulation reproducible).
//   - Make-before-break: the Stream watches Path.ActiveChanged (no polling).
//     When the active endpoint changes while it is connected elsewhere, its
//     read-only connection stays up through the fence; it connects and resumes
//     on the new endpoint first, takes each stream from the new connection as
//     soon as it answers for it, and closes the old connection when the new
//     one has answered for every stream (or after MigrateTimeout). No gap.
//   - Liveness: pings every PingInterval; a connection silent for
//     PingInterval+PongTimeout is dead. A connection that dies within
//     HealthyAfter of its handshake counts as a failed round, so a server
//     that accepts and drops meets the backoff up to its Cap, not a
//     reconnect loop.
//   - Market data never moves the orders (see Evidence below): the Stream
//     reports nothing to Path.Report. Its lost connections and failed
//     connects move the Stream only (its rounds, its fallback, the order in
//     which it tries endpoints) and show in OnEvent
//     (StreamEventConnectionLost, StreamEventDialFailed) and Stats.
//   - Bounded memory: a message over ReadLimit (1 MiB by default) is an
//     error: counted (Stats.OversizedFrames), the connection replaced; its
//     body is never read. With compression (Dialer.EnableCompression) the
//     limit holds for the message as decompressed too: a message that
//     expands past ReadLimit is refused once ReadLimit bytes of it were
//     read (gorilla's own limit counts only the bytes on the wire). A Conn
//     from the Dialer does the same for its own SetReadLimit, read through
//     its NextReader, ReadMessage or ReadJSON. At most QueueLength (16) messages wait for the
//     Handler, plus one per connection being read (two during a
//     make-before-break move) and the one being handled. Worst case per
//     Stream, whatever the server sends: (QueueLength+3) × ReadLimit of
//     message bytes, up to about 1.25× that as allocations round up (about
//     24 MiB with the defaults), plus each connection's gorilla buffers
//     (ReadBufferSize + WriteBufferSize of the Dialer, 4 KiB each by
//     default) and, per subscribed stream, its name, position and epoch.
//     Message.Data the Handler keeps is the application's.
//   - Nothing the server wrote is logged or exported: error messages, close
//     reasons and unreadable handshake responses are reduced to their length
//     or type; errors keep the original for errors.Is/As. No
//     address is printed with its credentials (RedactURL, for other
//     packages that print a Path's ws addresses).
//   - Stats counts what a failover drill asks for: reconnects, resumes vs
//     snapshots, messages, duplicates, gaps repaired, time disconnected,
//     restarts, escalations, bad and oversized frames, short-lived
//     connections, and the Health.
//   - The Handler runs on the Stream's loop: a slow Handler delays everything
//     else and, after QueueLength queued frames, stops reading (see Handler).
//   - Close (or the end of Start's context) stops every goroutine the Stream
//     started and closes its connections. When the Path is closed the Stream
//     stops by itself and Err wraps pathdialer.ErrClosed.
//
// # Evidence: what market data may move
//
// Evidence is weighed by what it proves. A WebSocket market data connection
// shares little with the path orders take but the region's front door: its
// server, its handshake, its dial timeout on this host are its own. So:
//
//   - A Stream's failures (a dial refused or timed out, a handshake that
//     fails, a connection lost or silent) move the Stream: its next round,
//     its fallback to another fresh-healthy endpoint, the order it tries
//     endpoints in. They are never reported to the Path, so they never take
//     an endpoint DOWN for orders, start a gray failure, make a switch or
//     halt submissions, even at engine.Config.FailureThreshold 1 and even
//     on a host too loaded to finish a handshake in time.
//   - A Stream's successes (a connect, messages) are not reported either: a
//     market data server that answers says nothing about the order path, and
//     counting it would end a gray failure (orders failing while probes
//     pass) or reset the count of failed orders.
//   - Orders move only on the Path's own evidence: probes, trade-path checks
//     and the results of orders and authenticated reads that the order
//     transports report (packages rest and fix). When the region really is
//     down, its probes say so and the Path switches; the Stream follows the
//     switch make-before-break.
//   - The same holds for Dialer: it never calls Path.Report. A connection
//     from DialReadOnly carries market data and its owner should not report
//     it either. A connection from Dial or DialEndpoint may carry orders (a
//     broker's WebSocket order API): its owner reports the orders' results
//     with Path.Report (Conn.Endpoint, Conn.Token), as the order
//     transports do, and not the connection's own failures.
//
// The wire protocol is the Protocol interface (with an optional epoch per
// message); JSONProtocol is a ready one. Errors from this package start with
// "ws:".
package ws
