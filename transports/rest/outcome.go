package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// OutcomeKind is what became of a request sent through a Transport.
type OutcomeKind uint8

const (
	// Unknown: the request may have reached the broker and nobody knows
	// whether it was booked (a 5xx answer, a timeout, a connection cut after
	// it was written). An order of unknown outcome is in the Path's
	// reconciliation; never send it again under a new client order ID.
	Unknown OutcomeKind = iota
	// Accepted: the broker answered below 400 (the response is the broker's
	// account of the order).
	Accepted
	// Rejected: the broker answered 4xx; it refused the request and did not
	// book it. The response body says why.
	Rejected
	// NotSent: no byte of the request reached the broker (trading halted, the
	// dial failed, the ticket lapsed, no client order ID, a foreign host, an
	// open read breaker).
	NotSent
)

func (k OutcomeKind) String() string {
	switch k {
	case Accepted:
		return "accepted"
	case Rejected:
		return "rejected"
	case NotSent:
		return "not sent"
	}
	return "unknown"
}

// Verdict is Outcome's answer.
type Verdict struct {
	Kind OutcomeKind
	// StatusCode is the broker's HTTP status, 0 when it did not answer.
	StatusCode int
	// MayResend answers, at once and for this one attempt, whether the
	// broker cannot have booked it: true exactly for NotSent and Rejected,
	// so sending it again, under the same client order ID, cannot book it
	// twice. It is false for Accepted (booked) and Unknown: resend nothing
	// on those now.
	//
	// It is not pathdialer.Path.MayResend, which answers later, after
	// reconciliation, for an order whose attempt was Unknown: whether the
	// broker's book and the venue's guarantees now prove that order will
	// never be booked (a final NOT_RECEIVED the venue cannot book twice),
	// and grants one resend. The two never both apply to one attempt: this
	// one is true only where nothing reached the book, and Path.MayResend is
	// the one to ask only where something may have (Unknown, Order set).
	MayResend bool
	// Reason says why, in words fit for logs (credentials redacted). The
	// broker's own words are in the response body.
	Reason string
	// Order is set when an order's outcome is unknown and it was handed to
	// reconciliation: its client order ID, endpoint and token.
	Order *UnknownOutcomeError
}

// unknownKey marks the request of a response whose order was handed to
// reconciliation; its value is the *UnknownOutcomeError.
type unknownKey struct{}

// markUnknown records on resp (through resp.Request's context, which net/http
// never reads back) that its order's outcome is unknown.
func markUnknown(resp *http.Response, sent *http.Request, uerr *UnknownOutcomeError) {
	r := resp.Request
	if r == nil {
		r = sent
	}
	resp.Request = r.WithContext(context.WithValue(r.Context(), unknownKey{}, uerr))
}

// notSentBehindClientTimeout reports whether err is net/http's
// http.Client.Timeout error standing in for the Transport's ErrNotSent:
// when the client's deadline has passed, net/http replaces what RoundTrip
// returned with text ("<error> (Client.Timeout exceeded while awaiting
// headers)"), which keeps the Transport's own words. Only a not-sent error
// is recognised so; an unknown outcome stays unknown.
func notSentBehindClientTimeout(err error) bool {
	if !errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "(Client.Timeout exceeded") && strings.Contains(s, ErrNotSent.Error()+": order ") &&
		!strings.Contains(s, "rest: outcome of order")
}

// Outcome returns the verdict on what http.Client.Do (or RoundTrip) returned
// for a request sent through a Transport. Use it to decide, after each order,
// whether anything may be sent again: only when MayResend is true.
//
// An error it does not recognise as the Transport's gives Unknown (never a
// resend).
func Outcome(resp *http.Response, err error) Verdict {
	if err != nil {
		reason := RedactError(err).Error()
		var uo *UnknownOutcomeError
		switch {
		case errors.As(err, &uo):
			return Verdict{Kind: Unknown, StatusCode: uo.StatusCode, Reason: reason, Order: uo}
		case errors.Is(err, ErrNotSent), errors.Is(err, ErrNoOrderID), errors.Is(err, ErrForeignHost),
			errors.Is(err, ErrBreakerOpen), errors.Is(err, ErrInvalidOptions),
			errors.Is(err, pathdialer.ErrTradingHalted), errors.Is(err, pathdialer.ErrTicketExpired):
			return Verdict{Kind: NotSent, MayResend: true, Reason: reason}
		case notSentBehindClientTimeout(err):
			return Verdict{Kind: NotSent, MayResend: true, Reason: reason}
		}
		return Verdict{Kind: Unknown, Reason: "unrecognised failure, treat as unknown: " + reason}
	}
	if resp == nil {
		return Verdict{Kind: Unknown, Reason: "no response and no error"}
	}
	code := resp.StatusCode
	status := fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	if resp.Request != nil {
		if uo, ok := resp.Request.Context().Value(unknownKey{}).(*UnknownOutcomeError); ok {
			return Verdict{Kind: Unknown, StatusCode: code, Order: uo,
				Reason: fmt.Sprintf("%s: order %q on endpoint %q may have been booked; handed to reconciliation", status, uo.OrderID, uo.Endpoint)}
		}
	}
	switch {
	case code >= 500:
		return Verdict{Kind: Unknown, StatusCode: code, Reason: status + ": the broker may have acted on it"}
	case code >= 400:
		return Verdict{Kind: Rejected, StatusCode: code, MayResend: true, Reason: status + ": refused by the broker"}
	}
	return Verdict{Kind: Accepted, StatusCode: code, Reason: status}
}
