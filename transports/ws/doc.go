// Package ws carries WebSocket market data over a pathdialer.Path with
// gorilla/websocket: a Dialer that connects to an endpoint's "ws" address
// through the Path's tracked dial, and a Stream client that survives
// reconnects and region switches without losing or repeating a message
// (seed 002: full jitter, endpoint fallback, resume from sequence).
//
//	s, err := ws.NewStream(path, cfg) // cfg from ws.DefaultStreamConfig()
//	err = s.Start(ctx)
//	defer s.Close()
//
// # What it guarantees
//
//   - Routing: every connection goes to one endpoint's "ws" URL (ws:// or
//     wss://), rebuilt from the endpoint so the Host header and TLS server name
//     are that endpoint's; the base *websocket.Dialer's TLS config,
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
//   - Reconnect (ReconnectPolicy): in rounds. Before round n (rounds failed
//     in a row) one full-jitter wait, rand(0, min(Cap, Base·2^n)) (1 s and
//     60 s by default), or the largest Retry-After of the last round (capped
//     by StreamConfig.MaxRetryAfter) when longer; then the round's candidates
//     back to back: the Path's active endpoint first, then, when the lost
//     connection's Path has not switched yet (or after FailuresBeforeFallback
//     failed rounds), every other fresh-healthy, unfenced endpoint (reads may
//     use any healthy path). A switch does not cut a wait short, so a
//     population cut at one instant reaches the survivor uniformly over the
//     first round's window. A 503/429 is not a path failure. A stream that
//     landed on an endpoint other than the active one stays there until the
//     Path switches.
//   - Make-before-break: the Stream watches Path.ActiveChanged (no polling).
//     When the active endpoint changes while it is connected elsewhere, its
//     read-only connection stays up through the fence; it connects and resumes
//     on the new endpoint first, takes each stream from the new connection as
//     soon as it answers for it, and closes the old connection when the new
//     one has answered for every stream (or after MigrateTimeout). No gap.
//   - Liveness: pings every PingInterval; a connection silent for
//     PingInterval+PongTimeout is dead. Lost connections and failed dials are
//     reported to the Path as passive signals (Path.Report).
//   - Stats counts what seed 002's drill asks for: reconnects, resumes vs
//     snapshots, messages, duplicates, gaps repaired, time disconnected.
//   - The Handler runs on the Stream's loop: a slow Handler delays everything
//     else and, after 64 queued frames, stops reading (see Handler).
//   - Close (or the end of Start's context) stops every goroutine the Stream
//     started and closes its connections. When the Path is closed the Stream
//     stops by itself and Err wraps pathdialer.ErrClosed.
//
// The wire protocol is the Protocol interface; JSONProtocol is the one the
// simulated broker speaks.
package ws
