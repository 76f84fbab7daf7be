package fix

import (
	"errors"
	"fmt"

	"github.com/brokerpath/brokerpath/pathdialer"
)

var (
	// ErrInvalidOptions: an Options field, a ProbeOptions or ReconcileOptions
	// field, or a quickfix setting cannot work as written.
	ErrInvalidOptions = errors.New("fix: invalid options")
	// ErrNotOrder: SendOrder was given a message that is not an order
	// (NewOrderSingle, OrderCancelReplaceRequest, OrderCancelRequest, or the
	// multileg equivalents). Send it with Send.
	ErrNotOrder = errors.New("fix: message is not an order")
	// ErrNoClOrdID: the order carries no ClOrdID (tag 11); it was not sent,
	// because it could not be reconciled.
	ErrNoClOrdID = errors.New("fix: order has no ClOrdID")
	// ErrDuplicateClOrdID: an order with this ClOrdID is still awaiting its
	// answer; it was not sent.
	ErrDuplicateClOrdID = errors.New("fix: ClOrdID already in flight")
	// ErrUnknownSession: the session ID is not one of the Initiator's sessions.
	ErrUnknownSession = errors.New("fix: unknown session")
	// ErrNotSent: the order did not leave this process (the session was not
	// logged on to the ticket's endpoint, or quickfix or the application's ToApp
	// refused it). It is safe to send again with the same ClOrdID.
	ErrNotSent = errors.New("fix: order not sent")
	// ErrSessionLost: the FIX session ended (logout or lost connection) before
	// the order was answered; its fate is unknown and it is handed to
	// reconciliation (pathdialer settles it even without a switch).
	ErrSessionLost = errors.New("fix: session ended before the order was answered")
	// ErrResendRefused is the cause recorded on an order's ticket when the
	// counterparty asked for it to be resent and it was gap-filled instead.
	ErrResendRefused = errors.New("fix: resend of an order refused (gap-filled); outcome unknown")
	// ErrReconcileIncomplete: the reconciler did not learn every order's fate
	// before its deadline; the Path keeps holding and retries.
	ErrReconcileIncomplete = errors.New("fix: reconcile incomplete")
	// ErrClosed: the Initiator was closed.
	ErrClosed = errors.New("fix: initiator closed")
	// ErrNoInitiator: a method was called on a nil *Initiator (NewInitiator
	// failed and its error was not checked).
	ErrNoInitiator = errors.New("fix: nil Initiator (NewInitiator returned an error)")
	// ErrLogonHalted: Options.LogonFailureLimit consecutive logons failed; the
	// session no longer reconnects and SendOrder refuses orders at once until
	// Initiator.Resume. It is returned wrapped together with
	// pathdialer.ErrTradingHalted and names the diagnosis and what to change.
	ErrLogonHalted = errors.New("fix: logons keep failing; FIX halted")
	// ErrStatusUnsupported: the counterparty does not support
	// OrderStatusRequest (it answered "unsupported message type") and the
	// Reconciler has no fallback configured (ReconcileOptions.Fallback or
	// AcceptUndetermined).
	ErrStatusUnsupported = errors.New("fix: counterparty does not support OrderStatusRequest (35=H)")
	// ErrMessageTooLarge: the counterparty sent a message longer than
	// Options.MaxMessageSize (or declared one in its BodyLength). The
	// connection was cut before the message reached quickfix, and the failure
	// was reported to the Path against the endpoint.
	ErrMessageTooLarge = errors.New("fix: counterparty message larger than MaxMessageSize")
	// ErrMalformedStream: the counterparty sent bytes that are not a FIX
	// message where one must be (anything but "8=" where a message starts, a
	// BodyLength or CheckSum that is not a number). The connection was cut and
	// the failure reported to the Path against the endpoint.
	ErrMalformedStream = errors.New("fix: counterparty sent bytes that are not a FIX message")
)

// notSent wraps ErrNotSent with the order and the reason.
func notSent(clOrdID string, cause error) error {
	return fmt.Errorf("%w: order %q: %w", ErrNotSent, clOrdID, cause)
}

// resendRefused is the ticket cause for an order refused on resend.
func resendRefused(clOrdID, msgType string) error {
	return fmt.Errorf("%w (order %q, MsgType %s): %w", ErrResendRefused, clOrdID, msgType, pathdialer.ErrUnknownOutcome)
}
