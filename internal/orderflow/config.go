package orderflow

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/brokerpath/brokerpath/venue"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// ErrInvalidConfig: a Config field cannot work as written.
var ErrInvalidConfig = errors.New("orderflow: invalid config")

// Endpoint is one path to the broker account with the address of every
// service the client uses.
type Endpoint struct {
	Name     string `json:"name"`
	Region   string `json:"region"`
	Priority int    `json:"priority"`
	Primary  bool   `json:"primary"`
	// REST is the trading base URL (https://api-eu.broker.example).
	REST string `json:"rest"`
	// Probe is the base URL health probes use; empty means REST. The probe
	// requests GET Probe+ProbePath with the API key.
	Probe string `json:"probe,omitempty"`
	// WS is the market data URL (wss://stream-eu.broker.example/ws).
	WS string `json:"ws,omitempty"`
	// FIX is the FIX acceptor's host:port.
	FIX string `json:"fix,omitempty"`
}

// Where Config.FencingTokens writes the token: the REST header and the FIX
// tag (a user-defined tag number) the simulated broker reads.
const (
	FencingTokenHeader = "X-Fencing-Token"
	FencingTokenTag    = 9901
)

// Sequence models (Config.Sequence) and session policies (Config.SessionPolicy).
const (
	SequenceContinue      = "continue"
	SequenceResetOnSwitch = "reset-on-switch"
	PolicyConcurrent      = "concurrent"
	PolicyOnePerCred      = "one-per-credential"
)

// Timing holds the knobs of the Path and the client. DefaultTiming is
// demo-speed: a region outage is detected in well under a second.
type Timing struct {
	ProbeInterval            time.Duration
	ProbeTimeout             time.Duration
	ProbeJitter              time.Duration
	FailureThreshold         int
	MaxHealthAge             time.Duration
	Cooldown                 time.Duration
	FailbackSuccessThreshold int
	FlapLimit                int
	FlapWindow               time.Duration
	// GrayFailbackWait is how long an endpoint taken DOWN by live-traffic
	// evidence while its probe passed (a gray failure: the probe cannot see
	// what breaks the orders) stays out when no trade-path check clears it,
	// multiplied by the number of times it was taken out that way. A
	// Config.TradePathCheck success clears it sooner.
	GrayFailbackWait time.Duration
	// BounceWindow: a failover away from an endpoint within this long after a
	// failback to it is a bounce; each bounce doubles that endpoint's failback
	// cooldown, and FlapBounces bounces within FlapWindow suppress failback.
	BounceWindow time.Duration
	FlapBounces  int
	// DegradedLatency and MaxDegradedDuration: 0 turns latency awareness off.
	DegradedLatency     time.Duration
	MaxDegradedDuration time.Duration
	InflightGrace       time.Duration
	// Quarantine is how long a provisional NOT_RECEIVED (an order sent
	// through an endpoint the broker did not fence) waits before the Path's
	// re-query can make it final; until then the order is not re-sent. It
	// must exceed the longest a copy written before the fence can be held
	// on the way (3 s by default, for the demo's short faults; a run whose
	// faults hold connections longer needs more: the chaos run uses twice
	// its longest fault). Too short, and a broker without deduplication
	// books the re-send and the late copy both (the checker's I1 and I4).
	Quarantine        time.Duration
	ReconcileTimeout  time.Duration
	ReconcileAttempts int
	// FIXAnswerTimeout bounds the FIX reconcile's wait for the answers to
	// its status requests once the session is logged on (0: 1 s); the
	// orders it has no answer for are then looked up through REST.
	FIXAnswerTimeout time.Duration
	// OrderTimeout bounds one order from Acquire to its answer (REST) or to
	// its hand-off to quickfix (FIX).
	OrderTimeout time.Duration
	// ReadTimeout bounds one account read.
	ReadTimeout time.Duration
	// HTTP2PingTimeout is the REST transport's HTTP/2 health check: after
	// this long without a frame a ping is sent, and a ping unanswered this
	// long closes the connection (0: the transport's default, 1 s).
	HTTP2PingTimeout time.Duration
	// HeartBtInt is the FIX heartbeat interval (whole seconds). The broker
	// notices a silent session after about 2.4 of them.
	HeartBtInt int
	// StreamBackoff is the WebSocket reconnect backoff base (cap 10×).
	StreamBackoff time.Duration
}

// DefaultTiming returns demo-speed timing: probes every 300 ms (timeout
// 250 ms: a healthy TLS probe on a loaded 2-core host can take 200 ms, and a
// backup whose one probe timed out is not a failover target, so a tighter
// timeout halts trading when the primary fails at the same moment), Down
// after 2 failures (a blackhole is detected in about 0.6–0.9 s), failback after a 3 s cooldown and 5 consecutive successes of the
// primary, at most 4 switches a minute before failback is suppressed.
func DefaultTiming() Timing {
	return Timing{
		ProbeInterval:            300 * time.Millisecond,
		ProbeTimeout:             250 * time.Millisecond,
		ProbeJitter:              20 * time.Millisecond,
		FailureThreshold:         2,
		MaxHealthAge:             2 * time.Second,
		Cooldown:                 3 * time.Second,
		FailbackSuccessThreshold: 10,
		FlapLimit:                4,
		FlapWindow:               time.Minute,
		GrayFailbackWait:         60 * time.Second,
		BounceWindow:             30 * time.Second,
		FlapBounces:              2,
		DegradedLatency:          0,
		MaxDegradedDuration:      0,
		InflightGrace:            200 * time.Millisecond,
		Quarantine:               3 * time.Second,
		ReconcileTimeout:         3 * time.Second,
		ReconcileAttempts:        40,
		FIXAnswerTimeout:         time.Second,
		OrderTimeout:             1 * time.Second,
		ReadTimeout:              1 * time.Second,
		HeartBtInt:               1,
		StreamBackoff:            100 * time.Millisecond,
	}
}

// Config configures a Client. Start from DefaultConfig (or FromSimBroker, or
// LoadConfig) and fill Endpoints and the credentials.
type Config struct {
	Endpoints []Endpoint
	// APIKeyHeader carries the API key on REST and WebSocket requests
	// (default X-API-Key). APIKey is the key; it is never printed.
	APIKeyHeader string
	APIKey       string
	// ProbePath is the authenticated request the health probe makes on the
	// probe base URL (default /v1/account: the trade path, not a status page).
	ProbePath string
	// TradePathCheck, optional, is the path of a request on the order path
	// that a working broker refuses in a known way: a DELETE of it must answer
	// 404 (the cancel of a client order ID that does not exist, default
	// /v1/orders/brokerpath-trade-path-check). The Path runs it on an endpoint
	// taken out by a gray failure: a 404 is the trade-path evidence that lets
	// the endpoint back before Timing.GrayFailbackWait; a broken order path
	// (a 503, a refused connection) keeps it out. Empty: no check.
	TradePathCheck string
	// FIX session: BeginString (default FIX.4.4), our SenderCompID, the
	// broker's TargetCompID. Empty SenderCompID: no FIX session.
	FIXBeginString   string
	FIXSenderCompID  string
	FIXTargetCompID  string
	FIXResetOnLogon  bool
	FIXAcceptUndeter bool
	// FIXTLS makes the FIX session speak TLS (with RootCAs) to the broker.
	FIXTLS bool
	// RootCAs verifies the broker's certificates; nil means the system roots.
	RootCAs *x509.CertPool
	// Sequence is the broker's FIX sequence model: SequenceContinue (one
	// session across regions) or SequenceResetOnSwitch. Required with FIX.
	Sequence string
	// SessionPolicy is what the broker does with a second logon of the same
	// credentials: PolicyConcurrent (nothing: the client fences itself,
	// pathdialer.LocalFenceOnly) or PolicyOnePerCred (the broker fences:
	// engine BrokerFencesAtLogon).
	SessionPolicy string
	// BrokerFence, optional, is the broker's kill switch for this account:
	// called with a region and true when the Path fences the endpoint of that
	// region (after its local fence), with false when the endpoint becomes
	// active again. With it the broker itself refuses orders that reach a
	// fenced region, so a NOT_RECEIVED found for an order sent there is final
	// at once (pathdialer's BrokerFencesViaFencer). Nil: the client fences only
	// itself.
	BrokerFence func(ctx context.Context, region string, fenced bool) error
	// FencingTokens writes each order's fencing token (its ticket's
	// generation) into the order: the REST header FencingTokenHeader and the
	// FIX tag FencingTokenTag, for a broker that rejects a token lower than
	// the highest it has seen.
	FencingTokens bool
	// Streams are the market data streams to subscribe to (none: no stream).
	Streams []string
	// Symbol traded by the demo orders (default EURUSD).
	Symbol string
	Timing Timing
	// Recorder receives every event and the client's notes; nil: one is made.
	Recorder *Recorder
	// OnEvent, optional, also receives every Path event (after the Recorder).
	OnEvent func(pathdialer.Event)
	// Logger for the Path and transports; nil discards.
	Logger *slog.Logger
	// DeadManTimeout, when positive, arms the broker's dead-man timer (POST
	// /v1/account/cancel-all-after) with this timeout at Start and refreshes
	// it every DeadManRefresh (required then, shorter than the timeout)
	// until StopDeadMan or Close.
	DeadManTimeout, DeadManRefresh time.Duration
	// PathResting hands resting orders to the Path's own mechanisms (see
	// pathresting.go): FenceMode, the dead-man timer armed through the
	// endpoint a switch goes to (pathdialer.Config.DeadMan, with
	// DeadManTimeout), and the open-order reconcile after every switch
	// (pathdialer.Config.OpenOrders, one check per transport, after
	// CODSettle) in place of the client's own ReconcileOpen.
	PathResting bool
	FenceMode   pathdialer.FenceMode
	CODSettle   time.Duration
	// FIXLogon: fields every FIX Logon carries (a venue's
	// cancel-on-disconnect choice: 8013, 8674, 9001). FIXPreserveLogout:
	// the Logout fields that keep resting orders (fix.Options.PreserveLogout).
	FIXLogon, FIXPreserveLogout map[int]string
	// Venue is what the broker guarantees (pathdialer.Config.Venue); the zero
	// value is the most conservative venue, whose minimum quarantine is far
	// longer than Timing's. FromSimBroker sets the simulated broker's.
	Venue venue.Profile
}

// DefaultConfig returns a Config with every field but Endpoints and the
// credentials set.
func DefaultConfig() Config {
	return Config{
		APIKeyHeader:   "X-API-Key",
		ProbePath:      "/v1/account",
		TradePathCheck: "/v1/orders/brokerpath-trade-path-check",
		FIXBeginString: "FIX.4.4",
		Sequence:       SequenceContinue,
		SessionPolicy:  PolicyConcurrent,
		Symbol:         "EURUSD",
		Timing:         DefaultTiming(),
	}
}

// FromSimBroker returns a Config for the simulated broker b: its regions as
// endpoints (the first primary), probes through Region.ProbeURL (so a
// monitor-only partition reaches the monitor), its API key, CA, FIX CompIDs,
// session policy and streams. The FIX sequence model is SequenceContinue: the
// simulated broker keeps one session across regions.
func FromSimBroker(b *simbroker.Broker) Config {
	cfg := DefaultConfig()
	bc := b.Config()
	for i, rg := range b.Regions() {
		cfg.Endpoints = append(cfg.Endpoints, Endpoint{
			Name: rg.Name(), Region: rg.Name(), Priority: 10 * i, Primary: i == 0,
			REST: rg.RESTURL(), Probe: rg.ProbeURL(), WS: rg.WSURL(), FIX: rg.FIXAddr(),
		})
	}
	cfg.APIKey = b.APIKey()
	cfg.RootCAs = b.CertPool()
	sid := b.FIXSessionID()
	cfg.FIXBeginString, cfg.FIXSenderCompID, cfg.FIXTargetCompID = sid.BeginString, sid.SenderCompID, sid.TargetCompID
	cfg.FIXResetOnLogon = bc.ResetOnLogon
	if bc.SessionPolicy == simbroker.SessionOnePerCredential {
		cfg.SessionPolicy = PolicyOnePerCred
	}
	cfg.Streams = append([]string(nil), bc.Streams...)
	if bc.Fence == simbroker.FenceEnforced {
		// The broker's kill switch for the account, per region.
		cfg.BrokerFence = func(_ context.Context, region string, fenced bool) error {
			if fenced {
				return b.FenceRegion(region)
			}
			return b.UnfenceRegion(region)
		}
	}
	cfg.FencingTokens = bc.Tokens == simbroker.TokensChecked
	cfg.Venue = b.Profile()
	return cfg
}

// Validate names the first field that cannot work.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, a...)...)
	}
	if len(c.Endpoints) < 2 {
		return bad("Endpoints: need at least 2, got %d", len(c.Endpoints))
	}
	for i, e := range c.Endpoints {
		if e.Name == "" || e.Region == "" {
			return bad("Endpoints[%d]: name and region are required", i)
		}
		if e.REST == "" {
			return bad("Endpoints[%d] (%s): rest is required", i, e.Name)
		}
		if len(c.Streams) > 0 && e.WS == "" {
			return bad("Endpoints[%d] (%s): ws is required when streams are configured", i, e.Name)
		}
		if c.FIXSenderCompID != "" && e.FIX == "" {
			return bad("Endpoints[%d] (%s): fix is required when a FIX session is configured", i, e.Name)
		}
	}
	if c.APIKeyHeader == "" {
		return bad("APIKeyHeader is empty")
	}
	if !strings.HasPrefix(c.ProbePath, "/") {
		return bad("ProbePath %q must start with /", c.ProbePath)
	}
	if c.TradePathCheck != "" && !strings.HasPrefix(c.TradePathCheck, "/") {
		return bad("TradePathCheck %q must start with /", c.TradePathCheck)
	}
	if c.FIXSenderCompID != "" {
		if c.FIXTargetCompID == "" || c.FIXBeginString == "" {
			return bad("FIX: begin string and target comp ID are required with a sender comp ID")
		}
		if c.Sequence != SequenceContinue && c.Sequence != SequenceResetOnSwitch {
			return bad("Sequence %q: choose %q or %q", c.Sequence, SequenceContinue, SequenceResetOnSwitch)
		}
	}
	if c.SessionPolicy != PolicyConcurrent && c.SessionPolicy != PolicyOnePerCred {
		return bad("SessionPolicy %q: choose %q or %q", c.SessionPolicy, PolicyConcurrent, PolicyOnePerCred)
	}
	t := c.Timing
	if t.OrderTimeout <= 0 || t.ReadTimeout <= 0 {
		return bad("Timing: OrderTimeout and ReadTimeout must be > 0")
	}
	if t.HTTP2PingTimeout < 0 {
		return bad("Timing.HTTP2PingTimeout must be >= 0")
	}
	if t.HeartBtInt < 1 {
		return bad("Timing.HeartBtInt must be >= 1")
	}
	if t.StreamBackoff <= 0 {
		return bad("Timing.StreamBackoff must be > 0")
	}
	if c.DeadManTimeout < 0 {
		return bad("DeadManTimeout %v is negative", c.DeadManTimeout)
	}
	if c.DeadManTimeout > 0 && (c.DeadManRefresh <= 0 || c.DeadManRefresh >= c.DeadManTimeout) {
		return bad("DeadManRefresh %v must be > 0 and shorter than DeadManTimeout %v", c.DeadManRefresh, c.DeadManTimeout)
	}
	return nil
}

// fileConfig is the JSON form of a Config (see LoadConfig).
type fileConfig struct {
	Endpoints     []Endpoint `json:"endpoints"`
	APIKeyHeader  string     `json:"api_key_header"`
	APIKeyEnv     string     `json:"api_key_env"`
	ProbePath     string     `json:"probe_path"`
	TradePath     *string    `json:"trade_path_check"`
	CAFile        string     `json:"ca_file"`
	Sequence      string     `json:"sequence"`
	SessionPolicy string     `json:"session_policy"`
	Streams       []string   `json:"streams"`
	Symbol        string     `json:"symbol"`
	FIX           *struct {
		BeginString  string `json:"begin_string"`
		SenderCompID string `json:"sender_comp_id"`
		TargetCompID string `json:"target_comp_id"`
		TLS          bool   `json:"tls"`
	} `json:"fix"`
	Timing map[string]string `json:"timing"`
}

// LoadConfig reads a Config from a JSON file:
//
//	{
//	  "endpoints": [
//	    {"name":"eu","region":"eu-west-1","priority":0,"primary":true,
//	     "rest":"https://api-eu.broker.example","probe":"https://api-eu.broker.example",
//	     "ws":"wss://stream-eu.broker.example/ws","fix":"fix-eu.broker.example:9880"},
//	    {"name":"us","region":"us-east-1","priority":10, ...}
//	  ],
//	  "api_key_header": "X-API-Key",        // default X-API-Key
//	  "api_key_env": "BROKER_API_KEY",      // the key is read from this variable
//	  "probe_path": "/v1/account",          // authenticated, on the trade path
//	  "trade_path_check": "/v1/orders/x",   // DELETE answers 404 when orders work ("" = none)
//	  "ca_file": "/etc/broker/ca.pem",      // optional; system roots otherwise
//	  "sequence": "continue",               // or "reset-on-switch"
//	  "session_policy": "concurrent",       // or "one-per-credential"
//	  "streams": ["px.EURUSD"],
//	  "symbol": "EURUSD",
//	  "fix": {"begin_string":"FIX.4.4","sender_comp_id":"ACME","target_comp_id":"BROKER","tls":true},
//	  "timing": {"probe_interval":"1s","probe_timeout":"500ms","failure_threshold":"3",
//	             "cooldown":"60s","failback_success_threshold":"5", ...}
//	}
//
// Secrets never live in the file: api_key_env names the environment variable
// that holds the API key (getenv reads it; nil means os.Getenv). Timing keys
// are the Timing field names in snake_case; values are Go durations or
// integers.
func LoadConfig(file string, getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return Config{}, fmt.Errorf("orderflow: read config: %w", err)
	}
	var fc fileConfig
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		return Config{}, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, file, err)
	}
	cfg := DefaultConfig()
	cfg.Endpoints = fc.Endpoints
	if fc.APIKeyHeader != "" {
		cfg.APIKeyHeader = fc.APIKeyHeader
	}
	if fc.APIKeyEnv != "" {
		cfg.APIKey = getenv(fc.APIKeyEnv)
		if cfg.APIKey == "" {
			return Config{}, fmt.Errorf("%w: environment variable %s (api_key_env) is empty", ErrInvalidConfig, fc.APIKeyEnv)
		}
	}
	if fc.ProbePath != "" {
		cfg.ProbePath = fc.ProbePath
	}
	if fc.TradePath != nil {
		cfg.TradePathCheck = *fc.TradePath
	}
	if fc.CAFile != "" {
		pem, err := os.ReadFile(fc.CAFile)
		if err != nil {
			return Config{}, fmt.Errorf("orderflow: ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return Config{}, fmt.Errorf("%w: ca_file %s holds no certificate", ErrInvalidConfig, fc.CAFile)
		}
		cfg.RootCAs = pool
	}
	if fc.Sequence != "" {
		cfg.Sequence = fc.Sequence
	}
	if fc.SessionPolicy != "" {
		cfg.SessionPolicy = fc.SessionPolicy
	}
	cfg.Streams = fc.Streams
	if fc.Symbol != "" {
		cfg.Symbol = fc.Symbol
	}
	if fc.FIX != nil {
		if fc.FIX.BeginString != "" {
			cfg.FIXBeginString = fc.FIX.BeginString
		}
		cfg.FIXSenderCompID, cfg.FIXTargetCompID = fc.FIX.SenderCompID, fc.FIX.TargetCompID
		cfg.FIXTLS = fc.FIX.TLS
	}
	if err := applyTiming(&cfg.Timing, fc.Timing); err != nil {
		return Config{}, err
	}
	return cfg, cfg.Validate()
}

func applyTiming(t *Timing, m map[string]string) error {
	durs := map[string]*time.Duration{
		"probe_interval": &t.ProbeInterval, "probe_timeout": &t.ProbeTimeout, "probe_jitter": &t.ProbeJitter,
		"max_health_age": &t.MaxHealthAge, "cooldown": &t.Cooldown, "flap_window": &t.FlapWindow,
		"degraded_latency": &t.DegradedLatency, "max_degraded_duration": &t.MaxDegradedDuration,
		"inflight_grace": &t.InflightGrace, "quarantine": &t.Quarantine, "reconcile_timeout": &t.ReconcileTimeout,
		"order_timeout": &t.OrderTimeout, "read_timeout": &t.ReadTimeout, "stream_backoff": &t.StreamBackoff,
		"gray_failback_wait": &t.GrayFailbackWait, "bounce_window": &t.BounceWindow,
	}
	ints := map[string]*int{
		"failure_threshold": &t.FailureThreshold, "failback_success_threshold": &t.FailbackSuccessThreshold,
		"flap_limit": &t.FlapLimit, "reconcile_attempts": &t.ReconcileAttempts, "heart_bt_int": &t.HeartBtInt,
		"flap_bounces": &t.FlapBounces,
	}
	for k, v := range m {
		if d, ok := durs[k]; ok {
			x, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%w: timing.%s: %v", ErrInvalidConfig, k, err)
			}
			*d = x
			continue
		}
		if n, ok := ints[k]; ok {
			if _, err := fmt.Sscanf(v, "%d", n); err != nil {
				return fmt.Errorf("%w: timing.%s: %q is not an integer", ErrInvalidConfig, k, v)
			}
			continue
		}
		return fmt.Errorf("%w: timing.%s: unknown key", ErrInvalidConfig, k)
	}
	return nil
}
