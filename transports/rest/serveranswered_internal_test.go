package rest

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// An order answered 5xx says the broker's order service failed; a cut answer
// or no answer does not (the Path tells a lookup's evidence from it).
func TestUnknownOutcomeServerAnswered(t *testing.T) {
	for _, tc := range []struct {
		err  *UnknownOutcomeError
		want bool
	}{
		{&UnknownOutcomeError{OrderID: "a", StatusCode: 503}, true},
		{&UnknownOutcomeError{OrderID: "b", Cause: io.ErrUnexpectedEOF}, false},
		{&UnknownOutcomeError{OrderID: "c"}, false},
	} {
		var sa pathdialer.ServerAnswered
		wrapped := fmt.Errorf("order: %w", tc.err)
		if !errors.As(wrapped, &sa) || sa.ServerAnswered() != tc.want {
			t.Errorf("%v: ServerAnswered = %v, want %v", tc.err, sa != nil && sa.ServerAnswered(), tc.want)
		}
	}
}
