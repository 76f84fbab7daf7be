package rest

import (
	"errors"
	"fmt"

	"github.com/brokerpath/brokerpath/pathdialer"
)

var (
	// ErrInvalidOptions: an Options field cannot work as written.
	ErrInvalidOptions = errors.New("rest: invalid options")
	// ErrBreakerOpen: reads to the endpoint fail fast because its circuit
	// breaker is open (or half-open and at its probe limit). Reconcile lookups
	// (WithReconcile) never get it.
	ErrBreakerOpen = errors.New("rest: circuit breaker open, reads failing fast")
	// ErrNoOrderID: a submission carried no client order ID that Options.OrderID
	// could find; it was not sent (it could not be reconciled).
	ErrNoOrderID = errors.New("rest: submission has no client order ID")
	// ErrNotSent: the submission failed before any byte of it could reach the
	// broker (for example the dial failed); it is safe to send again.
	ErrNotSent = errors.New("rest: submission not sent")
)

// UnknownOutcomeError is returned for a submission whose fate is unknown: the
// request may have reached the broker (timeout, reset or EOF after it was written,
// or a 5xx answer). The order has been handed to the Path's reconciliation;
// do not resend it under a new client order ID. errors.Is(err,
// pathdialer.ErrUnknownOutcome) is true.
type UnknownOutcomeError struct {
	// OrderID is the client order ID.
	OrderID string
	// Endpoint is the endpoint the order was sent to.
	Endpoint string
	// Generation is the generation it was sent under.
	Generation uint64
	// StatusCode is the HTTP status when the broker answered 5xx, else 0.
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

// Unwrap returns the cause and pathdialer.ErrUnknownOutcome.
func (e *UnknownOutcomeError) Unwrap() []error {
	if e.Cause != nil {
		return []error{pathdialer.ErrUnknownOutcome, e.Cause}
	}
	return []error{pathdialer.ErrUnknownOutcome}
}
