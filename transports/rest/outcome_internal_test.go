package rest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
)

// clientTimeoutError is net/http's *timeoutError as http.Client.Do returns
// it when Client.Timeout fired: text, a timeout, errors.Is DeadlineExceeded.
type clientTimeoutError struct{ s string }

func (e *clientTimeoutError) Error() string   { return e.s }
func (e *clientTimeoutError) Timeout() bool   { return true }
func (e *clientTimeoutError) Is(t error) bool { return t == context.DeadlineExceeded }

func asClientTimeout(err error) error {
	return &url.Error{Op: "Post", URL: "https://broker/v2/orders",
		Err: &clientTimeoutError{err.Error() + " (Client.Timeout exceeded while awaiting headers)"}}
}

func TestOutcomeReadsNotSentBehindClientTimeout(t *testing.T) {
	notSent := fmt.Errorf("%w: order %q: %w", ErrNotSent, "t-1", context.DeadlineExceeded)
	unknown := &UnknownOutcomeError{OrderID: "t-2", Endpoint: "eu", Cause: context.DeadlineExceeded}
	for _, c := range []struct {
		err  error
		want OutcomeKind
	}{
		{asClientTimeout(notSent), NotSent},
		{asClientTimeout(unknown), Unknown},
		{asClientTimeout(errors.New("dial tcp: i/o timeout")), Unknown},
		{&url.Error{Op: "Post", URL: "u", Err: errors.New(notSent.Error())}, Unknown}, // the words without the timeout: not net/http's form
	} {
		if v := Outcome(nil, c.err); v.Kind != c.want || v.MayResend != (c.want == NotSent) {
			t.Errorf("Outcome(%v) = %+v, want %v", c.err, v, c.want)
		}
	}
}
