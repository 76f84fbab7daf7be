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
	// Jurisdiction the endpoint lies in ("EU", "UK", "US"), compared with
	// Config.TargetJurisdictions exactly as written (case-sensitive). Optional;
	// Register refuses one with leading or trailing white space.
	Jurisdiction string
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
// Through pathdialer it is pathdialer.Config.Engine: there leave Probe and
// Clock nil, and every other field keeps its default until a threshold needs
// tuning; BrokerFencesAtLogon is the one fence choice made here.
type Config struct {
	// ===== Set by pathdialer: leave nil there. =====
	// Using the engine directly, set Probe (required) and, in tests, Clock.
	//
	// Probe is required; there is no default.
	Probe ProbeFunc
	// Clock; nil means the system's monotonic clock.
	Clock Clock

	// ===== Decision thresholds: defaults from DefaultConfig. =====
	//
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
	// DegradedLatency: a successful probe slower than this is Degraded evidence.
	// 0 turns latency awareness off. Must be >= 0.
	DegradedLatency time.Duration
	// MaxDegradedDuration: an active endpoint Degraded this long warrants failover.
	// 0 = never. Must be >= 0.
	MaxDegradedDuration time.Duration

	// ===== The fence choice. =====
	//
	// BrokerFencesAtLogon is true ONLY when the broker enforces one session
	// per credential, so that logging on through the new path provably
	// disconnects the old: the broker's logon is the fence. With it, switches
	// skip FenceRequired. Verify it in your broker's documentation. (Through
	// pathdialer, its sibling Config.BrokerFencesViaFencer declares instead
	// that the broker confirms the Fencer's fence.)
	BrokerFencesAtLogon bool

	// ===== Admission and jurisdictions, optional. =====
	//
	// RequireAdmission: an endpoint is a target only after an identity check
	// verified it (Manager.Admit with nil). Without it, only a proven mismatch
	// excludes an endpoint.
	RequireAdmission bool
	// TargetJurisdictions, when set, lists the jurisdictions a failover target
	// may lie in (Endpoint.Jurisdiction); the primary is always a valid
	// failback target. Empty means any. Entries are compared exactly as
	// written: blank or white-space-padded entries are refused, and
	// Manager.Validate refuses a rule that names a jurisdiction no registered
	// endpoint lies in, a backup without a jurisdiction, and a rule no backup
	// satisfies.
	TargetJurisdictions []string
	// VerificationMaxAge: a verification (Manager.Admit with nil) older than
	// this no longer counts: with RequireAdmission the endpoint is not a target
	// until it is verified again (Status.VerificationExpired). 0 = verifications
	// never expire. Must be >= 0.
	VerificationMaxAge time.Duration
	// SwitchVerificationAge: with RequireAdmission, a switch (failover,
	// failback) makes an endpoint active only if its verification is younger
	// than this. An older one is stale evidence: the decision lists the
	// endpoint in Decision.Stale so the caller re-checks it before switching.
	// 0 = no extra requirement. Must be >= 0.
	SwitchVerificationAge time.Duration

	// ===== Gray failures and bounces: defaults from DefaultConfig. =====
	//
	// BounceWindow: a failover away from an endpoint within this long after a
	// failback to it is a bounce. Every bounce within FlapWindow multiplies
	// the endpoint's failback cooldown by BounceFactor (at most
	// MaxFailbackCooldown). 0 = bounces are not counted. Must be >= 0.
	BounceWindow time.Duration
	// BounceFactor multiplies the failback cooldown per bounce. Must be >= 1
	// when BounceWindow is set.
	BounceFactor int
	// MaxFailbackCooldown bounds the multiplied cooldown; a bound below
	// Cooldown leaves Cooldown unmultiplied. Must be >= 0.
	MaxFailbackCooldown time.Duration
	// FlapBounces bounces of one endpoint within FlapWindow trip the flap
	// limiter whatever FlapLimit says. 0 = off. Must be >= 0.
	FlapBounces int
	// GrayFailbackWait: an endpoint taken DOWN by live-traffic evidence while
	// its probe passed (a gray failure: the probe cannot see what breaks the
	// orders) comes back only on trade-path evidence (ObserveTradePath,
	// or live traffic succeeding), or after this wait times the number of
	// times it was taken out that way (at most MaxGrayFailbackWait), counted
	// from when it was taken out. 0 = no wait: the next probe success clears
	// it. Must be >= 0.
	GrayFailbackWait time.Duration
	// MaxGrayFailbackWait bounds the growing wait. Must be >= GrayFailbackWait.
	MaxGrayFailbackWait time.Duration
}

// DefaultConfig returns a configuration in which every field but Probe is sane for a
// monitor probing about once a second: Down after 3 consecutive failures, fresh for
// 5 s, failback after 60 s of cooldown and 5 consecutive primary successes, at most
// 3 switches in 10 minutes (or a second bounce) before failback is suppressed,
// a failback cooldown doubled by every bounce up to 30 minutes, an endpoint
// that failed on live traffic while its probe passed kept out for 5 minutes
// per such failure (up to 1 hour) unless trade-path evidence clears it, a
// client-side fence required, latency awareness off, verifications that never
// expire.
func DefaultConfig() Config {
	return Config{
		FailureThreshold:         3,
		MaxHealthAge:             5 * time.Second,
		Cooldown:                 60 * time.Second,
		FailbackSuccessThreshold: 5,
		FlapLimit:                3,
		FlapWindow:               10 * time.Minute,
		BounceWindow:             5 * time.Minute,
		BounceFactor:             2,
		MaxFailbackCooldown:      30 * time.Minute,
		FlapBounces:              2,
		GrayFailbackWait:         5 * time.Minute,
		MaxGrayFailbackWait:      time.Hour,
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
	case slices.ContainsFunc(c.TargetJurisdictions, func(j string) bool { return strings.TrimSpace(j) != j }):
		return fmt.Errorf("%w: TargetJurisdictions has an entry with leading or trailing white space (%q); jurisdictions are compared exactly as written", ErrInvalidConfig, c.TargetJurisdictions)
	case c.VerificationMaxAge < 0:
		return fmt.Errorf("%w: VerificationMaxAge is %v, must be >= 0 (0 = never expires)", ErrInvalidConfig, c.VerificationMaxAge)
	case c.SwitchVerificationAge < 0:
		return fmt.Errorf("%w: SwitchVerificationAge is %v, must be >= 0 (0 = off)", ErrInvalidConfig, c.SwitchVerificationAge)
	case c.BounceWindow < 0:
		return fmt.Errorf("%w: BounceWindow is %v, must be >= 0 (0 = bounces not counted)", ErrInvalidConfig, c.BounceWindow)
	case c.BounceWindow > 0 && c.BounceFactor < 1:
		return fmt.Errorf("%w: BounceFactor is %d, must be >= 1 when BounceWindow is set", ErrInvalidConfig, c.BounceFactor)
	case c.MaxFailbackCooldown < 0:
		return fmt.Errorf("%w: MaxFailbackCooldown is %v, must be >= 0", ErrInvalidConfig, c.MaxFailbackCooldown)
	case c.FlapBounces < 0:
		return fmt.Errorf("%w: FlapBounces is %d, must be >= 0 (0 = off)", ErrInvalidConfig, c.FlapBounces)
	case c.GrayFailbackWait < 0:
		return fmt.Errorf("%w: GrayFailbackWait is %v, must be >= 0", ErrInvalidConfig, c.GrayFailbackWait)
	case c.MaxGrayFailbackWait < c.GrayFailbackWait:
		return fmt.Errorf("%w: MaxGrayFailbackWait (%v) must be >= GrayFailbackWait (%v)", ErrInvalidConfig, c.MaxGrayFailbackWait, c.GrayFailbackWait)
	case c.MaxDegradedDuration < 0:
		return fmt.Errorf("%w: MaxDegradedDuration is %v, must be >= 0 (0 = never)", ErrInvalidConfig, c.MaxDegradedDuration)
	}
	return nil
}
