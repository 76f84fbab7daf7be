package engine

import "errors"

// Sentinel errors. Every error the engine returns wraps one of these, with context
// naming the field or endpoint, so callers test with errors.Is.
var (
	// ErrInvalidConfig: a Config field cannot work as written.
	ErrInvalidConfig = errors.New("engine: invalid config")
	// ErrMissingProbe: Config.Probe is nil. There is no default "always healthy" probe.
	// Config.Validate returns it wrapped together with ErrInvalidConfig.
	ErrMissingProbe = errors.New("engine: Config.Probe is required")
	// ErrBlankField: an Endpoint's Name, Address or Region is empty or only white space.
	ErrBlankField = errors.New("engine: blank endpoint field")
	// ErrDuplicateEndpoint: an endpoint with that name is already registered.
	ErrDuplicateEndpoint = errors.New("engine: duplicate endpoint name")
	// ErrSecondPrimary: a primary endpoint is already registered.
	ErrSecondPrimary = errors.New("engine: a primary endpoint is already registered")
	// ErrNoPrimary: Validate found no primary endpoint.
	ErrNoPrimary = errors.New("engine: no primary endpoint registered")
	// ErrNothingToFailOver: Validate found fewer than two endpoints.
	ErrNothingToFailOver = errors.New("engine: nothing to fail over to")
	// ErrUnknownEndpoint: no endpoint with that name is registered.
	ErrUnknownEndpoint = errors.New("engine: unknown endpoint")
	// ErrNoActiveEndpoint: an evaluation was asked for before a primary (the first
	// active endpoint) was registered.
	ErrNoActiveEndpoint = errors.New("engine: no active endpoint")
	// ErrStaleToken: Assign was given a token that is not after the
	// current one (a deposed coordinator's, or a replay).
	ErrStaleToken = errors.New("engine: stale fencing token")
	// ErrProbePanic: the probe panicked. The panic is counted as a failure and kept
	// in Status.LastProbeError wrapped in this error (and in the panic value, when
	// that is an error).
	ErrProbePanic = errors.New("engine: probe panicked")
)
