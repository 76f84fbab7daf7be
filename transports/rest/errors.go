package rest

import (
	"errors"
	"fmt"

	"github.com/brokerpath/brokerpath/pathdialer"
)

var (
	// ErrInvalidOptions: an Options field cannot work as written. The
	// constructors' refusals (NewTransport, Probe, NewReconciler,
	// IdentityCheck) are a *pathdialer.ConfigError with this Kind, whose
	// Field (and Endpoint) name what is wrong.
	ErrInvalidOptions = errors.New("rest: invalid options")
	// ErrBreakerOpen: reads to the endpoint fail fast because its circuit
	// breaker is open (or half-open and at its probe limit). Reconcile lookups
	// (WithReconcile) never get it.
	ErrBreakerOpen = errors.New("rest: circuit breaker open, reads failing fast")
	// ErrNoOrderID: a submission carried no client order ID that Options.OrderID
	// could find; it was not sent (it could not be reconciled).
	ErrNoOrderID = errors.New("rest: submission has no client order ID")
	// ErrNotSent: the submission failed before any byte of it could reach the
	// broker (for example the dial failed, or trading is halted: the cause is
	// wrapped too); it is safe to send again under the same client order ID.
	ErrNotSent = errors.New("rest: submission not sent")
	// ErrForeignHost: the request names a host that is not the broker's
	// (neither an endpoint's host nor in Options.Hosts) and no Options.Other
	// is set; it was not sent anywhere.
	ErrForeignHost = errors.New("rest: host is not the broker's")
)

// UnknownOutcomeError is returned for a submission whose fate is unknown and
// that got no answer: the request may have reached the broker (timeout, reset
// or EOF after it was written). The order has been handed to the Path's
// reconciliation; do not resend it under a new client order ID. errors.Is(err,
// pathdialer.ErrUnknownOutcome) is true. An order answered 5xx is unknown too,
// but its response is returned (err == nil): Outcome reports it, with this
// type in Verdict.Order.
type UnknownOutcomeError struct {
	// OrderID is the client order ID.
	OrderID string
	// Endpoint is the endpoint the order was sent to.
	Endpoint string
	// Token is the fencing token it was sent under.
	Token uint64
	// StatusCode is the HTTP status when the broker answered 5xx (found in
	// Verdict.Order), else 0.
	StatusCode int
	// Cause is the transport error (redacted), or nil for a status answer.
	Cause error
}

func (e *UnknownOutcomeError) Error() string {
	what := "no answer"
	if e.StatusCode != 0 {
		what = fmt.Sprintf("HTTP %d", e.StatusCode)
	}
	if e.Cause != nil {
		what += ": " + e.Cause.Error()
	}
	return fmt.Sprintf("rest: outcome of order %q on endpoint %q unknown (%s); handed to reconciliation", e.OrderID, e.Endpoint, what)
}

// ServerAnswered reports whether the broker answered the order with a server
// error (StatusCode 5xx), not a cut answer or no answer. The Path takes such
// an answer as a failure of order submission itself, which a lookup passing
// does not vouch for (pathdialer.Ticket.Unknown).
func (e *UnknownOutcomeError) ServerAnswered() bool {
	return e.StatusCode >= 500 && e.Cause == nil
}

// Unwrap returns the cause and pathdialer.ErrUnknownOutcome.
func (e *UnknownOutcomeError) Unwrap() []error {
	if e.Cause != nil {
		return []error{pathdialer.ErrUnknownOutcome, e.Cause}
	}
	return []error{pathdialer.ErrUnknownOutcome}
}

// optionsError is a *pathdialer.ConfigError of this package's options:
// Kind ErrInvalidOptions, the field (and the endpoint) at fault, the text
// formatted.
func optionsError(field, endpoint, format string, args ...any) error {
	return &pathdialer.ConfigError{Kind: ErrInvalidOptions, Field: field, Endpoint: endpoint, Err: fmt.Errorf(format, args...)}
}
