package engine

import "strconv"

// HealthState is what the engine believes about one endpoint, from counted evidence.
type HealthState int

const (
	// Unknown: registered, never probed (or observed). Never a failover target.
	Unknown HealthState = iota
	// Healthy: the last result was a success within Config.DegradedLatency.
	Healthy
	// Degraded: failing below Config.FailureThreshold, or answering slower than
	// Config.DegradedLatency. Not a target; not by itself a reason to fail over.
	Degraded
	// Down: Config.FailureThreshold consecutive failures.
	Down
)

// String returns "UNKNOWN", "HEALTHY", "DEGRADED" or "DOWN".
func (s HealthState) String() string {
	switch s {
	case Unknown:
		return "UNKNOWN"
	case Healthy:
		return "HEALTHY"
	case Degraded:
		return "DEGRADED"
	case Down:
		return "DOWN"
	}
	return "HealthState(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText renders the state as its String form (so JSON shows "HEALTHY").
func (s HealthState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Outcome is the verdict of one evaluation. Callers must read the outcome, not the
// presence of a switch: NoAction and NoTargetAvailable are both "no switch" and
// demand opposite responses.
type Outcome int

const (
	// NoAction: keep trading on the active path. It is fine, or Degraded below what
	// warrants a switch, or Degraded with nowhere better to go (Decision.Notes say
	// which); for failback, the primary is already active.
	NoAction Outcome = iota
	// Switched: the active endpoint changed; reconcile before releasing flow.
	Switched
	// FenceRequired: a switch is warranted, but nothing changed. Fence Decision.From
	// and evaluate again with fenceConfirmed true.
	FenceRequired
	// NoTargetAvailable: the active endpoint is Down and no endpoint is eligible.
	// Halt trading (Decision.RequiresTradingHalt is true); the active endpoint is
	// unchanged.
	NoTargetAvailable
	// CooldownActive: failback refused, the last switch was less than
	// Config.Cooldown ago.
	CooldownActive
	// FlapSuppressed: failback refused, Config.FlapLimit switches happened within
	// Config.FlapWindow. An escalation: a human should look at the primary.
	FlapSuppressed
	// PrimaryNotStable: failback refused, the primary is not yet a fresh, healthy
	// endpoint with Config.FailbackSuccessThreshold consecutive successes.
	PrimaryNotStable
)

var outcomeNames = [...]string{
	NoAction:          "NO_ACTION",
	Switched:          "SWITCHED",
	FenceRequired:     "FENCE_REQUIRED",
	NoTargetAvailable: "NO_TARGET_AVAILABLE",
	CooldownActive:    "COOLDOWN_ACTIVE",
	FlapSuppressed:    "FLAP_SUPPRESSED",
	PrimaryNotStable:  "PRIMARY_NOT_STABLE",
}

// String returns the upper-case name, e.g. "NO_TARGET_AVAILABLE".
func (o Outcome) String() string {
	if o >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// MarshalText renders the outcome as its String form.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }
