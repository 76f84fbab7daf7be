package rest_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// Successes under load are passed to the Path at most once a millisecond per
// endpoint, but never at the expense of evidence: every failure is passed,
// and so is the first success after one, however soon it follows (it ends
// the endpoint's run of failures).
func TestSuccessAfterFailureAlwaysReported(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	eu := newServer(t, "eu", true, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(status.Load())) })
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, func(c *pathdialer.Config) {
		// Probes out of the way: only the requests' reports move the counts.
		c.ProbeInterval, c.ProbeTimeout, c.Engine.MaxHealthAge = time.Minute, time.Second, 5*time.Minute
	})
	c, _ := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})
	get := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://broker.invalid/v1/account", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for range 50 {
		// A burst of successes (thinned), a failure, and a success right
		// after it: the failure counts, and the success ends the run of
		for range 5 {
			get()
		}
		status.Store(http.StatusServiceUnavailable)
		get()
		if st, _ := h.path.Engine().Status("eu"); st.ConsecutiveFailures != 1 || st.LastProbeError == nil {
			t.Fatalf("a 503 right after a burst of successes was not passed to the Path: %+v", st)
		}
		status.Store(http.StatusOK)
		get()
		if st, _ := h.path.Engine().Status("eu"); st.ConsecutiveFailures != 0 {
			t.Fatalf("the success right after a failure was not passed to the Path: %+v", st)
		}
	}
}
