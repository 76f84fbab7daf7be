package metrics_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// A failover and then a halt, driven through a real Path on fake time: the
// event-fed counters and the scrape-time gauges follow, and no label value ever
// carries the API key or the order ID the test used.
func TestFailoverThenHalt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		ctx := context.Background()
		if err := h.path.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer h.path.Close()

		h.until(t, "both endpoints healthy", func() bool {
			return h.value(t, "brokerpath_endpoint_eligible", map[string]string{"endpoint": "us"}) == 1
		})
		for _, c := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"brokerpath_gate_state", map[string]string{"state": "open"}, 1},
			{"brokerpath_gate_state", map[string]string{"state": "held"}, 0},
			{"brokerpath_endpoint_active", map[string]string{"endpoint": "eu", "region": "eu-west-1"}, 1},
			{"brokerpath_endpoint_state", map[string]string{"endpoint": "eu", "state": "healthy"}, 1},
			{"brokerpath_switches_total", nil, 0},
			{"brokerpath_generation", nil, 0},
		} {
			if got, ok := sample(t, h.reg, c.name, c.labels); (ok || c.want != 0) && got != c.want {
				t.Errorf("before: %s%v = %v, want %v", c.name, c.labels, got, c.want)
			}
		}

		tk, err := h.path.Acquire(ctx, pathdialer.ServiceREST, secretOrder)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.value(t, "brokerpath_tickets_in_flight", nil); got != 1 {
			t.Errorf("tickets_in_flight = %v, want 1", got)
		}
		tk.Done()

		h.down["eu"].Store(true)
		h.until(t, "failover to us, flow released", func() bool {
			s := h.path.Snapshot()
			return s.Active == "us" && s.Gate == pathdialer.GateOpen
		})
		synctest.Wait() // every event delivered
		for _, c := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"brokerpath_switches_total", map[string]string{"kind": "failover"}, 1},
			{"brokerpath_generation", nil, 1},
			{"brokerpath_decisions_total", map[string]string{"kind": "failover", "outcome": "fence_required"}, 1},
			{"brokerpath_decisions_total", map[string]string{"kind": "failover", "outcome": "switched"}, 1},
			{"brokerpath_fence_duration_seconds", map[string]string{"endpoint": "eu", "region": "eu-west-1", "outcome": "success"}, 1},
			{"brokerpath_reconcile_duration_seconds", map[string]string{"outcome": "success"}, 1},
			{"brokerpath_gate_hold_duration_seconds", map[string]string{"endpoint": "us", "region": "us-east-1"}, 1},
			{"brokerpath_endpoint_active", map[string]string{"endpoint": "us"}, 1},
			{"brokerpath_endpoint_active", map[string]string{"endpoint": "eu"}, 0},
			{"brokerpath_endpoint_fenced", map[string]string{"endpoint": "eu"}, 1},
			{"brokerpath_endpoint_state", map[string]string{"endpoint": "eu", "state": "down"}, 1},
			{"brokerpath_endpoint_state", map[string]string{"endpoint": "eu", "state": "healthy"}, 0},
			{"brokerpath_endpoint_state_changes_total", map[string]string{"endpoint": "eu", "state": "down"}, 1},
			{"brokerpath_gate_state", map[string]string{"state": "open"}, 1},
			{"brokerpath_events_total", map[string]string{"kind": "switch"}, 1},
			{"brokerpath_tickets_in_flight", nil, 0},
		} {
			if got := h.value(t, c.name, c.labels); got != c.want {
				t.Errorf("after failover: %s%v = %v, want %v", c.name, c.labels, got, c.want)
			}
		}
		if got := h.value(t, "brokerpath_endpoint_consecutive_failures", map[string]string{"endpoint": "eu"}); got < 2 {
			t.Errorf("eu consecutive failures = %v, want >= 2", got)
		}
		if got := h.value(t, "brokerpath_probe_duration_seconds", map[string]string{"endpoint": "eu", "outcome": "failure"}); got < 2 {
			t.Errorf("eu failed probes observed = %v, want >= 2", got)
		}
		if got := h.value(t, "brokerpath_endpoint_last_success_age_seconds", map[string]string{"endpoint": "us"}); got > 0.1 {
			t.Errorf("us last success age = %vs, want fresh", got)
		}

		h.down["us"].Store(true)
		h.until(t, "halt", func() bool { return h.path.Snapshot().Gate == pathdialer.GateHalted })
		synctest.Wait()
		if got := h.value(t, "brokerpath_gate_state", map[string]string{"state": "halted"}); got != 1 {
			t.Errorf("gate_state{halted} = %v, want 1", got)
		}
		if got := h.value(t, "brokerpath_halts_total", nil); got != 1 {
			t.Errorf("halts_total = %v, want 1", got)
		}
		if got := h.value(t, "brokerpath_decisions_total", map[string]string{"outcome": "no_target_available"}); got < 1 {
			t.Errorf("decisions_total{no_target_available} = %v, want >= 1", got)
		}
		if got := h.value(t, "brokerpath_switches_total", map[string]string{"kind": "failover"}); got != 1 {
			t.Errorf("a halt is not a switch: switches_total = %v", got)
		}
		// The eu endpoint has been failing for a while: its staleness grows.
		if got := h.value(t, "brokerpath_endpoint_last_success_age_seconds", map[string]string{"endpoint": "eu"}); got <= 0 {
			t.Errorf("eu last success age = %v, want > 0", got)
		}

		lint(t, h.m)
		for _, lv := range labelValues(t, h.reg) {
			if hasSecret(lv) || strings.Contains(lv, "broker.example") {
				t.Errorf("label %q carries a secret or an address", lv)
			}
			name, _, _ := strings.Cut(lv, "=")
			switch name {
			case "endpoint", "region", "outcome", "kind", "state", "le":
			default:
				t.Errorf("unexpected label name in %q", lv)
			}
		}
	})
}

// Before Watch, Metrics collects only event-fed metrics and still lints clean;
// after Close the gate reads closed.
func TestUnwatchedAndClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.m.Watch(nil)
		for _, mf := range families(t, h.reg) {
			if strings.HasPrefix(mf.GetName(), "brokerpath_endpoint_") && mf.GetName() != "brokerpath_endpoint_state_changes_total" {
				t.Errorf("unwatched Metrics collected %s", mf.GetName())
			}
		}
		lint(t, h.m)
		h.m.Watch(h.path)
		if got := h.value(t, "brokerpath_gate_state", map[string]string{"state": "not_started"}); got != 1 {
			t.Errorf("gate_state{not_started} = %v, want 1", got)
		}
		if got := h.value(t, "brokerpath_endpoint_last_success_age_seconds", map[string]string{"endpoint": "eu"}); got < 1e300 {
			t.Errorf("never probed: last success age = %v, want +Inf", got)
		}
		if err := h.path.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := h.path.Close(); err != nil {
			t.Fatal(err)
		}
		if got := h.value(t, "brokerpath_gate_state", map[string]string{"state": "closed"}); got != 1 {
			t.Errorf("gate_state{closed} = %v, want 1", got)
		}
	})
}
