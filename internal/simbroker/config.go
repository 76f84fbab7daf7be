package simbroker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"time"
)

// Sentinel errors. Check them with errors.Is; messages name the bad field or value.
var (
	// ErrInvalidConfig is returned by Start for a Config that cannot work.
	ErrInvalidConfig = errors.New("simbroker: invalid config")
	// ErrUnknownRegion is returned for a region name the broker does not serve.
	ErrUnknownRegion = errors.New("simbroker: unknown region")
	// ErrUnknownService is returned for a service other than rest, probe, ws or fix.
	ErrUnknownService = errors.New("simbroker: unknown service")
	// ErrUnknownStream is returned for a market data stream not in Config.Streams.
	ErrUnknownStream = errors.New("simbroker: unknown stream")
	// ErrFaultNotSupported is returned when a fault does not apply to the service
	// (for example UnknownOutcome on ws, or any application fault on probe).
	ErrFaultNotSupported = errors.New("simbroker: fault not supported by service")
	// ErrInvalidFault is returned for a fault whose fields cannot work.
	ErrInvalidFault = errors.New("simbroker: invalid fault")
	// ErrClosed is returned by calls made after Close.
	ErrClosed = errors.New("simbroker: broker closed")
	// ErrFIXSessionInUse is returned by Start when another acceptor in this
	// process already holds the FIX session ID (quickfix keeps a
	// process-wide session registry); give each broker its own CompIDs.
	ErrFIXSessionInUse = errors.New("simbroker: FIX session ID already registered in this process")
)

// SessionPolicy says what the broker does when the account's credentials
// log on in a second region while a session is up in another.
type SessionPolicy int

const (
	// SessionsConcurrent: the broker does not fence. REST and WebSocket
	// accept traffic in every region at once, so two live order paths are
	// possible and the client must fence itself. The FIX session (one
	// session ID, continuous sequence numbers) refuses a second logon while
	// the first connection is logged on: the client must log out of (or
	// drop) region A before it can log on through region B.
	SessionsConcurrent SessionPolicy = iota
	// SessionOnePerCredential: the broker fences. A FIX logon through any
	// region drops the connection that holds the session (the old region's
	// connection is reset before the new logon is accepted), and the audit
	// records a "fence" entry.
	SessionOnePerCredential
)

// String returns "concurrent" or "one-per-credential".
func (p SessionPolicy) String() string {
	switch p {
	case SessionsConcurrent:
		return "concurrent"
	case SessionOnePerCredential:
		return "one-per-credential"
	default:
		return fmt.Sprintf("SessionPolicy(%d)", int(p))
	}
}

// ParseSessionPolicy accepts "concurrent" or "one-per-credential" (also "one").
func ParseSessionPolicy(s string) (SessionPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "concurrent":
		return SessionsConcurrent, nil
	case "one-per-credential", "one", "single":
		return SessionOnePerCredential, nil
	}
	return 0, fmt.Errorf("%w: SessionPolicy %q: want concurrent or one-per-credential", ErrInvalidConfig, s)
}

// Config configures a Broker. Start from DefaultConfig.
type Config struct {
	// Regions are the region names, at least two, unique, matching
	// [a-z][a-z0-9-]*. The first is conventionally the primary.
	Regions []string
	// APIKey is the only key the REST and WebSocket endpoints accept
	// (header X-API-Key). Empty: Start generates a random one (Broker.APIKey).
	APIKey string
	// AccountID, Entity and Entitlements are what GET /v1/account returns.
	AccountID    string
	Entity       string
	Entitlements []string
	// BrokerCompID is the broker's FIX CompID (tag 49 on what it sends);
	// ClientCompID is the account's (tag 49 on what the client sends).
	BrokerCompID string
	ClientCompID string
	// ResetOnLogon makes the acceptor reset sequence numbers on every logon.
	ResetOnLogon bool
	// Streams are the market data streams ("px.EURUSD"); a stream named
	// px.SYMBOL also prices market orders for SYMBOL.
	Streams []string
	// TickInterval publishes one tick on every stream per interval; 0 means
	// ticks are published only by Broker.PublishTick (deterministic tests).
	TickInterval time.Duration
	// ReplayBuffer is how many recent ticks per stream each region keeps for resume.
	ReplayBuffer int
	// ReplicationLag delays a region's copy of every tick (keys are region
	// names; missing regions have no lag). A client resuming from a sequence
	// the region has not received yet gets a snapshot.
	ReplicationLag map[string]time.Duration
	// HandshakesPerSecond is each region's WebSocket handshake budget (a
	// token bucket); over it the handshake gets 503 with Retry-After. 0 = no limit.
	HandshakesPerSecond float64
	// HandshakeBurst is the bucket size; 0 means max(1, HandshakesPerSecond).
	HandshakeBurst int
	// PingInterval is how often the WebSocket server pings each client.
	PingInterval time.Duration
	// SessionPolicy is concurrent (client fences) or one-per-credential (broker fences).
	SessionPolicy SessionPolicy
	// FenceTimeout bounds how long a one-per-credential FIX logon waits for
	// the old session to drop before it is refused.
	FenceTimeout time.Duration
	// Dedup is when a repeated client order ID books nothing (default
	// DedupAcrossRegions: never twice).
	Dedup DedupPolicy
	// Fence is whether the broker offers a per-region fence (a kill switch)
	// that rejects the account's orders (default FenceNone).
	Fence FencePolicy
	// Tokens is whether orders must carry a fencing token, checked
	// account-wide (default TokensOff).
	Tokens TokenPolicy
	// Venue, optional, plays a venue profile's facts (lookup lag, lookup
	// budget, dedup window, lockout): see VenuePlay and FromVenue.
	Venue *VenuePlay
	// Listen, optional, makes the broker serve on listeners it is given
	// instead of 127.0.0.1 sockets behind faultnet relays: it is called once
	// per region for REST, Probe and WS (Probe is served by the same REST
	// server). Meant for simulations over an in-memory network
	// (faultnet.MemNetwork under testing/synctest): the broker then opens no
	// socket and starts no FIX acceptor (quickfix listens by itself and
	// cannot take a listener), network faults are the injected network's
	// business (SetFault refuses them with ErrFaultNotSupported; application
	// faults work), and URLs use the listeners' addresses.
	Listen func(region string, svc Service) (net.Listener, error)
	// PlainHTTP serves REST and WebSocket without TLS (http://, ws://;
	// HTTP/1.1 only). Only with Listen.
	PlainHTTP bool
	// Seed makes prices and latency jitter reproducible.
	Seed uint64
	// Logger receives the broker's logs; nil discards them. FIXVerbose also
	// sends quickfix's own session log to it (debug level).
	Logger     *slog.Logger
	FIXVerbose bool
}

// DefaultConfig returns a two-region ("eu", "us") broker configuration that
// publishes ticks every 250ms, has no replication lag, no handshake budget,
// concurrent sessions, and the forgiving policies: deduplication across
// regions, no broker fence, no fencing tokens.
func DefaultConfig() Config {
	return Config{
		Regions:        []string{"eu", "us"},
		AccountID:      "ACC-0001",
		Entity:         "Simulated Brokerage Ltd",
		Entitlements:   []string{"trade", "marketdata"},
		BrokerCompID:   "SIMBROKER",
		ClientCompID:   "CLIENT",
		Streams:        []string{"px.EURUSD", "px.GBPUSD"},
		TickInterval:   250 * time.Millisecond,
		ReplayBuffer:   1024,
		ReplicationLag: map[string]time.Duration{},
		PingInterval:   5 * time.Second,
		SessionPolicy:  SessionsConcurrent,
		FenceTimeout:   5 * time.Second,
		Dedup:          DedupAcrossRegions,
		Fence:          FenceNone,
		Tokens:         TokensOff,
		Seed:           1,
	}
}

var (
	regionNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)
	compIDRE     = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)
	streamRE     = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)
)

// Validate reports, wrapping ErrInvalidConfig, the first field that cannot work.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, a...)...)
	}
	if len(c.Regions) < 2 {
		return bad("Regions: need at least 2, got %d", len(c.Regions))
	}
	seen := map[string]bool{}
	for _, r := range c.Regions {
		if !regionNameRE.MatchString(r) {
			return bad("Regions: %q must match %s", r, regionNameRE)
		}
		if seen[r] {
			return bad("Regions: %q listed twice", r)
		}
		seen[r] = true
	}
	if c.APIKey != "" && (len(c.APIKey) < 8 || strings.ContainsAny(c.APIKey, " \t\r\n")) {
		return bad("APIKey: must be at least 8 characters without whitespace")
	}
	if c.AccountID == "" {
		return bad("AccountID is empty")
	}
	if !compIDRE.MatchString(c.BrokerCompID) {
		return bad("BrokerCompID %q must match %s", c.BrokerCompID, compIDRE)
	}
	if !compIDRE.MatchString(c.ClientCompID) {
		return bad("ClientCompID %q must match %s", c.ClientCompID, compIDRE)
	}
	if c.BrokerCompID == c.ClientCompID {
		return bad("BrokerCompID and ClientCompID are both %q", c.BrokerCompID)
	}
	if len(c.Streams) == 0 {
		return bad("Streams is empty")
	}
	seenS := map[string]bool{}
	for _, s := range c.Streams {
		if !streamRE.MatchString(s) {
			return bad("Streams: %q must match %s", s, streamRE)
		}
		if seenS[s] {
			return bad("Streams: %q listed twice", s)
		}
		seenS[s] = true
	}
	if c.TickInterval < 0 {
		return bad("TickInterval %v is negative", c.TickInterval)
	}
	if c.TickInterval > 0 && c.TickInterval < time.Millisecond {
		return bad("TickInterval %v is below 1ms", c.TickInterval)
	}
	if c.ReplayBuffer < 1 {
		return bad("ReplayBuffer %d must be at least 1", c.ReplayBuffer)
	}
	for r, d := range c.ReplicationLag {
		if !seen[r] {
			return bad("ReplicationLag: region %q is not in Regions", r)
		}
		if d < 0 {
			return bad("ReplicationLag[%s] %v is negative", r, d)
		}
	}
	if c.HandshakesPerSecond < 0 {
		return bad("HandshakesPerSecond %v is negative", c.HandshakesPerSecond)
	}
	if c.HandshakeBurst < 0 {
		return bad("HandshakeBurst %d is negative", c.HandshakeBurst)
	}
	if c.PingInterval <= 0 {
		return bad("PingInterval %v must be positive", c.PingInterval)
	}
	if c.SessionPolicy != SessionsConcurrent && c.SessionPolicy != SessionOnePerCredential {
		return bad("SessionPolicy %d is unknown", int(c.SessionPolicy))
	}
	if c.FenceTimeout <= 0 {
		return bad("FenceTimeout %v must be positive", c.FenceTimeout)
	}
	if c.Dedup < DedupAcrossRegions || c.Dedup > DedupNone {
		return bad("Dedup %d is unknown", int(c.Dedup))
	}
	if c.Fence != FenceNone && c.Fence != FenceEnforced {
		return bad("Fence %d is unknown", int(c.Fence))
	}
	if c.PlainHTTP && c.Listen == nil {
		return bad("PlainHTTP needs Listen (the relayed loopback broker always serves TLS)")
	}
	if c.Tokens != TokensOff && c.Tokens != TokensChecked {
		return bad("Tokens %d is unknown", int(c.Tokens))
	}
	if err := c.Venue.validate(); err != nil {
		return bad("%v", err)
	}
	return nil
}
