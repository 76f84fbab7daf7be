package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Only a rejection that came as the probe's answer counts for Start's fast
// failure: one that a probe returned after its timeout was recorded as a
// timeout (the endpoint's answer is still pending), and an endpoint with no
// answer yet, or a transient one, keeps Start waiting.
func TestRejectedAtStartCountsOnlyAnsweredRejections(t *testing.T) {
	rejected := func(ep string) error {
		return fmt.Errorf("probe of %q answered HTTP 401: %w", ep, ErrProbeRejected)
	}
	// What runProbe records for a probe that returned a rejection after its
	// ProbeTimeout.
	late := func(ep string) error {
		return fmt.Errorf("%w after %v: %w", ErrProbeTimeout, time.Second, fmt.Errorf("%w (probe returned: %w)", context.DeadlineExceeded, rejected(ep)))
	}
	for name, tc := range map[string]struct {
		eu, us error // nil: nothing recorded
		want   bool
	}{
		"both rejected":          {rejected("eu"), rejected("us"), true},
		"one late":               {rejected("eu"), late("us"), false},
		"both late":              {late("eu"), late("us"), false},
		"one not answered yet":   {rejected("eu"), nil, false},
		"one transient":          {rejected("eu"), errors.New("connection reset by peer"), false},
		"one timed out, no text": {rejected("eu"), fmt.Errorf("%w after 1s: %w", ErrProbeTimeout, context.DeadlineExceeded), false},
	} {
		t.Run(name, func(t *testing.T) {
			s := newStalledPath(t, nil)
			for ep, err := range map[string]error{"eu": tc.eu, "us": tc.us} {
				if err != nil {
					s.p.observe(ep, err, time.Millisecond, false)
				}
			}
			err := s.p.rejectedAtStart()
			if (err != nil) != tc.want {
				t.Fatalf("rejectedAtStart() = %v, want an error: %v", err, tc.want)
			}
			if err != nil && (!errors.Is(err, ErrProbeRejected) || !errors.Is(err, ErrNoEligibleEndpoint)) {
				t.Fatalf("rejectedAtStart() = %v: want ErrProbeRejected and ErrNoEligibleEndpoint in its chain", err)
			}
		})
	}
}
