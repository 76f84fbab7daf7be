package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sony/gobreaker/v2"

	"github.com/brokerpath/brokerpath/observe/metrics"
	"github.com/brokerpath/brokerpath/transports/fix"
	"github.com/brokerpath/brokerpath/transports/rest"
	"github.com/brokerpath/brokerpath/transports/ws"
)

type fakeREST struct {
	st      rest.Stats
	breaker map[string]gobreaker.State
}

func (f *fakeREST) Stats() *rest.Stats { return &f.st }
func (f *fakeREST) BreakerState(ep string) (gobreaker.State, bool) {
	s, ok := f.breaker[ep]
	return s, ok
}

type fakeStream struct{ st ws.Stats }

func (f *fakeStream) Stats() ws.Stats { return f.st }

type fakeFIX struct{ st fix.Stats }

func (f *fakeFIX) Stats() *fix.Stats { return &f.st }

// Transport counters are read at scrape time and summed over the watched
// transports; breaker state is the worst per endpoint.
func TestTransportMetrics(t *testing.T) {
	h := newHarness(t)
	defer h.path.Close()
	r1 := &fakeREST{breaker: map[string]gobreaker.State{"eu": gobreaker.StateOpen, "us": gobreaker.StateClosed}}
	r2 := &fakeREST{breaker: map[string]gobreaker.State{"eu": gobreaker.StateHalfOpen}}
	r1.st.Reads.Add(10)
	r1.st.ReadFailures.Add(2)
	r2.st.BreakerRejections.Add(3)
	r1.st.Submissions.Add(7)
	r1.st.Acknowledged.Add(4)
	r2.st.Unknown.Add(1)
	r2.st.NotSent.Add(1)
	r2.st.Halted.Add(1)
	s1 := &fakeStream{ws.Stats{Endpoint: "us", Connects: 3, Reconnects: 2, Resumes: 2, Snapshots: 1, Gaps: 4, GapsRepaired: 4, Disconnected: 1500 * time.Millisecond,
		Health: ws.HealthLive, Restarts: 1, Escalations: 3, SnapshotRequests: 1, StallReconnects: 1, OversizedFrames: 2, BadFrames: 1, ShortLived: 4, Held: 9}}
	s2 := &fakeStream{ws.Stats{Endpoint: "", Connects: 1, DialFailures: 5, Health: ws.HealthSuspended, Restarts: 1, Escalations: 2, ShortLived: 1, Held: 1}}
	f := &fakeFIX{}
	f.st.Logons.Add(2)
	f.st.Resets.Add(1)
	h.m.WatchREST(r1, nil, r2)
	h.m.WatchStream(s1, s2)
	h.m.WatchFIX(f)

	want := `
# HELP brokerpath_rest_breaker_state State of an endpoint's REST read breaker: 1 for the current state (closed, half_open, open), 0 for the others.
# TYPE brokerpath_rest_breaker_state gauge
brokerpath_rest_breaker_state{endpoint="eu",region="eu-west-1",state="closed"} 0
brokerpath_rest_breaker_state{endpoint="eu",region="eu-west-1",state="half_open"} 0
brokerpath_rest_breaker_state{endpoint="eu",region="eu-west-1",state="open"} 1
brokerpath_rest_breaker_state{endpoint="us",region="us-east-1",state="closed"} 1
brokerpath_rest_breaker_state{endpoint="us",region="us-east-1",state="half_open"} 0
brokerpath_rest_breaker_state{endpoint="us",region="us-east-1",state="open"} 0
# HELP brokerpath_rest_requests_total REST requests started through the transport, by kind (read or submission).
# TYPE brokerpath_rest_requests_total counter
brokerpath_rest_requests_total{kind="read"} 10
brokerpath_rest_requests_total{kind="submission"} 7
# HELP brokerpath_ws_reconnects_total Successful WebSocket connections after the first of each stream.
# TYPE brokerpath_ws_reconnects_total counter
brokerpath_ws_reconnects_total 2
# HELP brokerpath_ws_streams_connected WebSocket streams connected to an endpoint now.
# TYPE brokerpath_ws_streams_connected gauge
brokerpath_ws_streams_connected{endpoint="eu",region="eu-west-1"} 0
brokerpath_ws_streams_connected{endpoint="us",region="us-east-1"} 1
# HELP brokerpath_fix_logons_total Successful FIX logons.
# TYPE brokerpath_fix_logons_total counter
brokerpath_fix_logons_total 2
`
	if err := testutil.CollectAndCompare(h.m, strings.NewReader(want),
		"brokerpath_rest_breaker_state", "brokerpath_rest_requests_total", "brokerpath_ws_reconnects_total",
		"brokerpath_ws_streams_connected", "brokerpath_fix_logons_total"); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"brokerpath_rest_request_outcomes_total", map[string]string{"kind": "read", "outcome": "failure"}, 2},
		{"brokerpath_rest_request_outcomes_total", map[string]string{"kind": "read", "outcome": "breaker_open"}, 3},
		{"brokerpath_rest_request_outcomes_total", map[string]string{"kind": "submission", "outcome": "acknowledged"}, 4},
		{"brokerpath_rest_request_outcomes_total", map[string]string{"kind": "submission", "outcome": "unknown"}, 1},
		{"brokerpath_rest_request_outcomes_total", map[string]string{"kind": "submission", "outcome": "not_sent"}, 1},
		{"brokerpath_rest_request_outcomes_total", map[string]string{"kind": "submission", "outcome": "halted"}, 1},
		{"brokerpath_ws_connects_total", nil, 4},
		{"brokerpath_ws_dial_failures_total", nil, 5},
		{"brokerpath_ws_resumes_total", nil, 2},
		{"brokerpath_ws_snapshots_total", nil, 1},
		{"brokerpath_ws_gaps_total", nil, 4},
		{"brokerpath_ws_gaps_repaired_total", nil, 4},
		{"brokerpath_ws_disconnected_seconds_total", nil, 1.5},
		{"brokerpath_ws_restarts_total", nil, 2},
		{"brokerpath_ws_escalations_total", nil, 5},
		{"brokerpath_ws_snapshot_requests_total", nil, 1},
		{"brokerpath_ws_stall_reconnects_total", nil, 1},
		{"brokerpath_ws_oversized_frames_total", nil, 2},
		{"brokerpath_ws_bad_frames_total", nil, 1},
		{"brokerpath_ws_short_lived_connections_total", nil, 5},
		{"brokerpath_ws_held_messages_total", nil, 10},
		{"brokerpath_ws_streams_health", map[string]string{"state": "live"}, 1},
		{"brokerpath_ws_streams_health", map[string]string{"state": "suspended"}, 1},
		{"brokerpath_ws_streams_health", map[string]string{"state": "connecting"}, 0},
		{"brokerpath_ws_streams_health", map[string]string{"state": "recovering"}, 0},
		{"brokerpath_ws_streams_health", map[string]string{"state": "closed"}, 0},
		{"brokerpath_fix_sequence_resets_total", nil, 1},
		{"brokerpath_fix_orders_total", nil, 0},
	} {
		if got := h.value(t, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	lint(t, h.m)
}

// Describe is fixed: a Metrics registers before anything is watched, and the
// pedantic registry accepts what it collects once everything is.
func TestDescribeIsFixed(t *testing.T) {
	m := metrics.New()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(metrics.New()); err == nil {
		t.Error("a second Metrics in one registry was accepted; its series would collide")
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}
