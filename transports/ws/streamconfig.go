package ws

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// StreamConfig configures a Stream. Start from DefaultStreamConfig.
type StreamConfig struct {
	// Streams to subscribe to, e.g. []string{"px.EURUSD"}; required: at
	// least one, no duplicates.
	Streams []string
	// Handler receives every message; required.
	Handler Handler
	// Protocol is the wire protocol; nil means JSONProtocol.
	Protocol Protocol
	// Dialer is the base WebSocket dialer (TLS config, subprotocols, buffers);
	// nil means websocket.DefaultDialer's settings. See Dialer.
	Dialer *websocket.Dialer
	// Header is sent with every handshake (credentials go here, not in the URL).
	Header http.Header
	// Backoff between reconnect attempts, with full jitter.
	Backoff Backoff
	// FailuresBeforeFallback whole reconnect rounds failed in a row widen the
	// candidates from the active endpoint to every fresh-healthy endpoint (see
	// "Reconnect" in the package doc); as many failed make-before-break dials in a row keep
	// the stream where it is until the next switch. >= 1.
	FailuresBeforeFallback int
	// DialTimeout bounds one connect (TCP, TLS and handshake). > 0.
	DialTimeout time.Duration
	// PingInterval between client pings. > 0.
	PingInterval time.Duration
	// PongTimeout: a connection silent (no message, ping or pong) for
	// PingInterval+PongTimeout is dead. > 0.
	PongTimeout time.Duration
	// MigrateTimeout bounds how long a make-before-break move keeps the old
	// connection while waiting for the new one to answer every stream. > 0.
	MigrateTimeout time.Duration
	// MaxRetryAfter caps how long a server's Retry-After is honoured. > 0.
	MaxRetryAfter time.Duration
	// ReadLimit is the largest server message accepted, in bytes. A larger one
	// is an error: counted (Stats.OversizedFrames), the connection replaced,
	// the stream resumed. > 0; default 1 MiB.
	ReadLimit int64
	// QueueLength is how many read messages may wait for the Handler before
	// the connections stop being read. 1..4096; default 16.
	QueueLength int
	// GapTimeout is how long a stream may stay broken before its repair
	// escalates: a gap is resumed at once and again after 1/8, 3/8 and 7/8 of
	// it; at GapTimeout the Stream asks for a snapshot (so does a stream whose
	// subscription is unanswered or whose server stays behind the client);
	// at twice GapTimeout (once, for a restart) it drops the connection, as a
	// failure, and reconnects with backoff, trying other endpoints first.
	// Each rung is a StreamEventEscalation. > 0; default 5 s.
	GapTimeout time.Duration
	// SuspendAfter: disconnected, connecting or repairing for this long makes
	// the Stream's Health SUSPENDED (Health is on time; the event may come
	// late by a Handler or a dial in progress). > 0; default 30 s.
	SuspendAfter time.Duration
	// ReplayWindow: a message without an epoch more than this many sequence
	// numbers below the last delivered one means the server restarted its
	// numbering (a late duplicate, a replay or a lagging replica's snapshot
	// is closer). Servers with epochs (Frame.Epoch) are judged by the epoch
	// only. >= 1; default 64.
	ReplayWindow uint64
	// HealthyAfter: a connection that dies within this time of its handshake
	// counts as a failed reconnect round, so a server that accepts and then
	// drops (or feeds bad data) meets the full-jitter backoff up to its Cap
	// instead of a reconnect loop. A connection that lived longer resets the
	// count. 0 counts none. >= 0; default 10 s.
	HealthyAfter time.Duration
	// Rand, optional, draws the full-jitter fraction of each reconnect wait:
	// uniform in [0, 1) (values outside are clamped). nil means math/rand/v2's
	// Float64. Set it to a seeded source to make a simulation's reconnect
	// timing reproducible. It is called from the Stream's own goroutine only.
	Rand func() float64
	// OnEvent, optional, receives the Stream's events (health changes, gaps,
	// escalations, repairs, restarts, lost connections) on the Stream's loop,
	// like the Handler, never under a lock. Keep it short.
	OnEvent func(StreamEvent)
	// Logger; nil discards. Nothing logged holds server-sent text or an
	// address's credentials.
	Logger *slog.Logger
}

// DefaultStreamConfig returns full jitter from 1 s up to 60 s, fallback after
// 3 failed rounds in a row, pings every 5 s with 5 s to answer, 10 s to
// connect, 5 s to migrate, Retry-After honoured up to 2 minutes, a 1 MiB read
// limit and 16 queued frames, gaps escalating after 5 s, SUSPENDED after
// 30 s, a replay window of 64, connections shorter than 10 s counted as
// failures. It is not valid alone: set Streams (the names to subscribe to)
// and Handler (the func that receives the messages).
func DefaultStreamConfig() StreamConfig {
	return StreamConfig{
		Backoff:                defaultBackoff(),
		FailuresBeforeFallback: 3,
		DialTimeout:            10 * time.Second,
		PingInterval:           5 * time.Second,
		PongTimeout:            5 * time.Second,
		MigrateTimeout:         5 * time.Second,
		MaxRetryAfter:          2 * time.Minute,
		ReadLimit:              1 << 20,
		QueueLength:            16,
		GapTimeout:             5 * time.Second,
		SuspendAfter:           30 * time.Second,
		ReplayWindow:           64,
		HealthyAfter:           10 * time.Second,
	}
}

// Validate names the first field that cannot work and what to put in it;
// every error is a *pathdialer.ConfigError matching ErrInvalidConfig. A configuration not started from
// DefaultStreamConfig (its timing fields all zero) is refused saying so.
func (c StreamConfig) Validate() error {
	bad := func(f, why string) error { return configError(f, "", fmt.Errorf("%s %s", f, why)) }
	switch {
	case c.DialTimeout == 0 && c.PingInterval == 0 && c.PongTimeout == 0 && c.Backoff == (Backoff{}) && c.QueueLength == 0:
		// Not started from DefaultStreamConfig: naming the first missing
		// field would send the reader through every timing field in turn.
		return bad("Backoff, DialTimeout, PingInterval, PongTimeout, QueueLength and the other timing fields", "are all zero: start from DefaultStreamConfig() and set Streams and Handler on it")
	case len(c.Streams) == 0 && c.Handler == nil:
		return bad("Streams and Handler", `are not set: set Streams to the stream names to subscribe to (e.g. []string{"px.EURUSD"}) and Handler to a func(ws.Message) that receives them`)
	case len(c.Streams) == 0:
		return bad("Streams", `is empty: set it to the stream names to subscribe to (e.g. []string{"px.EURUSD"})`)
	case c.Handler == nil:
		return bad("Handler", "is nil: set it to a func(ws.Message) that receives the messages")
	case c.Backoff.Base <= 0:
		return bad("Backoff.Base", "must be > 0 (start from DefaultStreamConfig())")
	case c.Backoff.Cap < c.Backoff.Base:
		return bad("Backoff.Cap", "must be >= Backoff.Base")
	case c.FailuresBeforeFallback < 1:
		return bad("FailuresBeforeFallback", "must be >= 1")
	case c.DialTimeout <= 0, c.PingInterval <= 0, c.PongTimeout <= 0, c.MigrateTimeout <= 0, c.MaxRetryAfter <= 0,
		c.GapTimeout <= 0, c.SuspendAfter <= 0:
		return bad("DialTimeout, PingInterval, PongTimeout, MigrateTimeout, MaxRetryAfter, GapTimeout and SuspendAfter",
			"must be > 0 (start from DefaultStreamConfig())")
	case c.ReadLimit <= 0:
		return bad("ReadLimit", "must be > 0 bytes (default 1 MiB)")
	case c.QueueLength < 1 || c.QueueLength > 4096:
		return bad("QueueLength", "must be 1..4096 (default 16)")
	case c.ReplayWindow < 1:
		return bad("ReplayWindow", "must be >= 1 (default 64)")
	case c.HealthyAfter < 0:
		return bad("HealthyAfter", "must be >= 0")
	case c.Dialer != nil && c.Dialer.TLSClientConfig != nil && c.Dialer.TLSClientConfig.InsecureSkipVerify:
		return bad("Dialer.TLSClientConfig.InsecureSkipVerify", "is refused: trust the server's CA with RootCAs instead")
	}
	seen := map[string]bool{}
	for _, s := range c.Streams {
		if s == "" || seen[s] {
			return bad("Streams", fmt.Sprintf("has an empty or duplicate name %q", s))
		}
		seen[s] = true
	}
	return nil
}
