package pathdialer

import (
	"errors"
	"fmt"
)

// Sentinel errors; every error pathdialer returns wraps one of these (or one of the
// engine's), with context, for errors.Is.
var (
	// ErrInvalidConfig: a Config field cannot work as written.
	ErrInvalidConfig = errors.New("pathdialer: invalid config")
	// ErrTradingHalted: submissions are refused at once because there is nowhere
	// to send them (no eligible target) or the switch could not be completed
	// (fence or reconcile kept failing). The wrapped cause says which.
	ErrTradingHalted = errors.New("pathdialer: trading halted")
	// ErrClosed: the Path was closed.
	ErrClosed = errors.New("pathdialer: closed")
	// ErrNotStarted: Acquire or a dial was called before Start.
	ErrNotStarted = errors.New("pathdialer: not started")
	// ErrFenced: a dial to an endpoint that is fenced (switched away from and not
	// active again) was refused.
	ErrFenced = errors.New("pathdialer: endpoint is fenced")
	// ErrSwitched: the active endpoint changed while the dial was in progress; the
	// connection was closed and the caller should dial again.
	ErrSwitched = errors.New("pathdialer: active endpoint changed during the dial")
	// ErrUnknownService: no endpoint address is configured for the service.
	ErrUnknownService = errors.New("pathdialer: unknown service")
	// ErrUnknownEndpoint: no endpoint with that name.
	ErrUnknownEndpoint = errors.New("pathdialer: unknown endpoint")
	// ErrProbeTimeout: a probe did not return within Config.ProbeTimeout.
	ErrProbeTimeout = errors.New("pathdialer: probe timed out")
	// ErrProbeRejected marks a probe's error when the endpoint's answer proves
	// the probe's request itself wrong rather than the endpoint unhealthy:
	// credentials refused, a request the server calls malformed, a path or
	// method the server does not have (transports/rest's Probe wraps it for HTTP
	// 400, 401, 403, 404, 405 and 410). A ProbeFunc of your own wraps it (%w)
	// for such answers only: never for a timeout, a refused connection, a 5xx
	// or a rate limit, which a healthy configuration also meets. When every
	// endpoint's probe answers so, Start fails within one probe round instead
	// of waiting StartWait; a running Path treats it as any probe failure.
	ErrProbeRejected = errors.New("pathdialer: probe rejected: the request is wrong, not the endpoint")
	// ErrUnknownOutcome marks an order whose fate is unknown (timeout, reset after
	// the request was written, 5xx): it may or may not have reached the broker.
	// Transports wrap it in their typed errors; Ticket.Unknown hands the order to
	// reconciliation.
	ErrUnknownOutcome = errors.New("pathdialer: order outcome unknown")
	// ErrTicketExpired: the decision a ticket was granted under may have lapsed
	// (its ValidUntil passed, e.g. a coordinated Path's lease expired while the
	// process was paused), or the ticket was handed to reconciliation before
	// its order was sent; the order must not be sent.
	ErrTicketExpired = errors.New("pathdialer: ticket's decision expired")
)

// ConfigError is the error New and Config.Validate return for a configuration
// that cannot work (every such error is a *ConfigError); the transports'
// constructors (ws.NewStream, rest.NewTransport, rest.Probe, ...) return it
// too, with their own sentinel as Kind. It names the field at fault, and the
// endpoint when the fault is one endpoint's, so a program can point at the
// setting without parsing text:
//
//	var ce *pathdialer.ConfigError
//	if errors.As(err, &ce) {
//		log.Printf("fix %s (endpoint %q)", ce.Field, ce.Endpoint)
//	}
//
// It matches Kind with errors.Is, and any sentinel its cause wraps
// (engine.ErrNoPrimary, engine.ErrDuplicateEndpoint, ...). Its text never
// repeats a service address (addresses may carry credentials).
type ConfigError struct {
	// Field is the field at fault as a Go expression on the configuration
	// the constructor was given ("ProbeTimeout" on a Config,
	// "Dialer.TLSClientConfig.RootCAs" on a ws.StreamConfig,
	// "ProbeOptions.Path"); a Path's endpoints are written as on Config
	// (`Endpoints[1].Services["ws"]`). When fields conflict, all of them,
	// the last joined by " and " ("BrokerFencesViaFencer and Fencer").
	Field string
	// Endpoint is the name of the endpoint at fault, "" when the fault is not
	// one endpoint's.
	Endpoint string
	// Err says what is wrong and what would work; it may wrap a sentinel.
	Err error
	// Kind is the sentinel of the configuration at fault, which the error
	// matches and its text begins with: nil means ErrInvalidConfig (a
	// Config); the transports set their own (ws.ErrInvalidConfig,
	// rest.ErrInvalidOptions).
	Kind error
}

func (e *ConfigError) kind() error {
	if e.Kind == nil {
		return ErrInvalidConfig
	}
	return e.Kind
}

// Error returns Kind's text ("pathdialer: invalid config") and what is
// wrong, naming the field.
func (e *ConfigError) Error() string { return e.kind().Error() + ": " + e.Err.Error() }

// Unwrap returns Kind (ErrInvalidConfig when nil) and the cause.
func (e *ConfigError) Unwrap() []error { return []error{e.kind(), e.Err} }

// configError returns a *ConfigError for field (and endpoint, "" when none),
// whose text is the formatted message; %w in format wraps a cause.
func configError(field, endpoint, format string, args ...any) error {
	return &ConfigError{Field: field, Endpoint: endpoint, Err: fmt.Errorf(format, args...)}
}
