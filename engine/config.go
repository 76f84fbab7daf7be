package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Endpoint is one path to the broker account: a region, a base endpoint, a line.
type Endpoint struct {
	// Name identifies the endpoint; unique within a Manager. Required.
	Name string
	// Address is what the probe reaches (a URL, host:port, or a label the probe
	// understands). Required.
	Address string
	// Region is where the path lands (for humans and jurisdiction rules). Required.
	Region string
	// Priority orders failover targets, lowest first. Make it explicit on every
	// backup: the nearest region and the cheapest are not the same choice.
	Priority int
	// Primary marks the preferred endpoint: active at start and the failback target.
	// Exactly one endpoint must be primary.
	Primary bool
}

// ProbeFunc checks one endpoint over the path orders actually take (authenticated,
// order-path aware; a TCP connect proves neither). A nil error is a success; any
// error, or a panic, is a failure. It must honour ctx.
type ProbeFunc func(ctx context.Context, ep Endpoint) error

// Clock supplies the engine's readings of time. Intervals are differences of two
// readings (Time.Sub), so readings must be monotonic: the default, time.Now, carries
// Go's monotonic clock. Tests inject a fake.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Config is the engine's configuration. Start from DefaultConfig and set Probe.
type Config struct {
	// Probe is required; there is no default.
	Probe ProbeFunc
	// FailureThreshold consecutive failures make an endpoint Down. Must be >= 1.
	FailureThreshold int
	// MaxHealthAge: a success older than this is not fresh, so the endpoint is not
	// a target. Must be > 0, and comfortably above your probe interval.
	MaxHealthAge time.Duration
	// Cooldown: failback only after this long since the last switch. Must be >= 0.
	Cooldown time.Duration
	// FailbackSuccessThreshold consecutive successes of the primary before failback.
	// Must be >= 1.
	FailbackSuccessThreshold int
	// FlapLimit switches within FlapWindow trip the flap limiter, which suppresses
	// failback (never failover). Must be >= 1.
	FlapLimit int
	// FlapWindow is the flap limiter's window. Must be > 0.
	FlapWindow time.Duration
	// BrokerFences is true ONLY when the broker enforces one session per credential,
	// so that connecting through the new path provably disconnects the old. With it,
	// switches skip FenceRequired. Verify it in your broker's documentation.
	BrokerFences bool
	// DegradedLatency: a successful probe slower than this is Degraded evidence.
	// 0 turns latency awareness off. Must be >= 0.
	DegradedLatency time.Duration
	// MaxDegradedDuration: an active endpoint Degraded this long warrants failover.
	// 0 = never. Must be >= 0.
	MaxDegradedDuration time.Duration
	// Clock; nil means the system's monotonic clock.
	Clock Clock
	// RequireAdmission: an endpoint is a target only after an identity check
	// verified it (Manager.Admit with nil). Without it, only a proven mismatch
	// excludes an endpoint.
	RequireAdmission bool
	// TargetJurisdictions, when set, lists the jurisdictions a failover target
	// may lie in (Manager.SetJurisdiction); the primary is always a valid
	// failback target. Empty means any.
	TargetJurisdictions []string
}

// DefaultConfig returns a configuration in which every field but Probe is sane for a
// monitor probing about once a second: Down after 3 consecutive failures, fresh for
// 5 s, failback after 60 s of cooldown and 5 consecutive primary successes, at most
// 3 switches in 10 minutes before failback is suppressed, a client-side fence
// required, latency awareness off.
func DefaultConfig() Config {
	return Config{
		FailureThreshold:         3,
		MaxHealthAge:             5 * time.Second,
		Cooldown:                 60 * time.Second,
		FailbackSuccessThreshold: 5,
		FlapLimit:                3,
		FlapWindow:               10 * time.Minute,
	}
}

// Validate checks every field as written and returns an error naming the first one
// that cannot work; the error wraps ErrInvalidConfig (and ErrMissingProbe for a nil
// Probe). New calls it.
func (c Config) Validate() error {
	switch {
	case c.Probe == nil:
		return fmt.Errorf("%w: %w", ErrInvalidConfig, ErrMissingProbe)
	case c.FailureThreshold < 1:
		return fmt.Errorf("%w: FailureThreshold is %d, must be >= 1", ErrInvalidConfig, c.FailureThreshold)
	case c.MaxHealthAge <= 0:
		return fmt.Errorf("%w: MaxHealthAge is %v, must be > 0", ErrInvalidConfig, c.MaxHealthAge)
	case c.Cooldown < 0:
		return fmt.Errorf("%w: Cooldown is %v, must be >= 0", ErrInvalidConfig, c.Cooldown)
	case c.FailbackSuccessThreshold < 1:
		return fmt.Errorf("%w: FailbackSuccessThreshold is %d, must be >= 1", ErrInvalidConfig, c.FailbackSuccessThreshold)
	case c.FlapLimit < 1:
		return fmt.Errorf("%w: FlapLimit is %d, must be >= 1", ErrInvalidConfig, c.FlapLimit)
	case c.FlapWindow <= 0:
		return fmt.Errorf("%w: FlapWindow is %v, must be > 0", ErrInvalidConfig, c.FlapWindow)
	case c.DegradedLatency < 0:
		return fmt.Errorf("%w: DegradedLatency is %v, must be >= 0 (0 = off)", ErrInvalidConfig, c.DegradedLatency)
	case slices.ContainsFunc(c.TargetJurisdictions, func(j string) bool { return strings.TrimSpace(j) == "" }):
		return fmt.Errorf("%w: TargetJurisdictions has a blank entry", ErrInvalidConfig)
	case c.MaxDegradedDuration < 0:
		return fmt.Errorf("%w: MaxDegradedDuration is %v, must be >= 0 (0 = never)", ErrInvalidConfig, c.MaxDegradedDuration)
	}
	return nil
}
