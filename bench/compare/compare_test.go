package compare_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/bench/compare"
)

func TestMain(m *testing.M) {
	compare.ChildMain() // the throughput runs re-execute this binary as the broker
	os.Exit(m.Run())
}

// One quick iteration of every scenario (the 30 s quickfix row is skipped),
// so the comparison does not rot. About a minute and a half; not part of the
// root `make test` (which vets this module).
func TestQuickComparison(t *testing.T) {
	rep, err := compare.Run(compare.Options{Quick: true, Progress: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.Markdown)
	for _, e := range rep.Errors {
		t.Error(e)
	}
	must := func(key string) float64 {
		t.Helper()
		v, ok := rep.Medians[key]
		if !ok {
			t.Errorf("no measurement for %s", key)
		}
		return v
	}
	for _, proto := range []string{"HTTP/2", "HTTP/1.1"} {
		row := "rest/brokerpath rest.Transport (" + proto + ")"
		must(row + "/failover_s")
		must(row + "/rps")
		must(row + "/cpu_us")
		if v := must(row + "/unknown_resent"); v != 0 {
			t.Errorf("brokerpath (%s) resent %v orders of unknown outcome", proto, v)
		}
		if v := must("rest/brokerpath rest.Transport, 150ms per order (" + proto + ")/unknown_resent"); v != 0 {
			t.Errorf("brokerpath with 150 ms orders (%s) resent %v orders of unknown outcome", proto, v)
		}
		if v := must(row + "/slow_resent"); v != 0 {
			t.Errorf("brokerpath (%s) resent %v orders to a slow primary", proto, v)
		}
	}
	for _, key := range []string{
		"rest/failsafe-go failsafehttp v0.9.8 (HTTP/2)/failover_s",
		"rest/hashicorp/go-retryablehttp v0.7.8 (HTTP/2)/failover_s",
		"defaults/rest/failsafe-go failsafehttp v0.9.8 (HTTP/2)/failover_s",
		"defaults/rest/hashicorp/go-retryablehttp v0.7.8 (HTTP/2)/failover_s",
		"fix/quickfix SocketConnectHost1/ack_s",
		"ws/reconnect loop (same URL, resubscribe, then B)/first_s",
	} {
		must(key)
	}
	// Every table says what each row ran with.
	for _, cell := range []string{"ReconnectInterval 200ms", "150ms per attempt, 3 attempt(s) on A", "wait 1s–30s", "probes every 200ms, timeout 150ms, DOWN after 3", "silence 200ms"} {
		if !strings.Contains(rep.Markdown, cell) {
			t.Errorf("the tables do not state %q", cell)
		}
	}
	must("fix/brokerpath transports/fix/ack_s")
	if v := must("ws/brokerpath ws.Stream/missed"); v != 0 {
		t.Errorf("ws.Stream missed %v ticks", v)
	}
	must("ws/brokerpath ws.Stream/first_s")
}

// The equal budget gives up on the dead region after as many failed
// attempts, as long apart, as brokerpath's probes.
func TestEqualPeersFollowTheProbeSettings(t *testing.T) {
	s := compare.DefaultSettings()
	s.ProbeInterval, s.ProbeTimeout, s.FailureThreshold = 100*time.Millisecond, 80*time.Millisecond, 2
	s.EqualPeers()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	wait := 20 * time.Millisecond
	if s.PeerAttemptTimeout != 80*time.Millisecond || s.WSConnectTimeout != 80*time.Millisecond {
		t.Errorf("attempt limits %v / %v, want the probe timeout 80ms", s.PeerAttemptTimeout, s.WSConnectTimeout)
	}
	if s.FailsafeAttempts != 2 || s.RetryableAttempts != 2 || s.FailsafeBreaker != 2 || s.WSSwitchAfter != 1 {
		t.Errorf("attempts failsafe %d retryable %d breaker %d ws %d+silence, want 2 each", s.FailsafeAttempts, s.RetryableAttempts, s.FailsafeBreaker, s.WSSwitchAfter)
	}
	if s.FailsafeDelay != wait || s.RetryableWaitMin != wait || s.RetryableWaitMax != wait || s.WSBackoffBase != wait || s.WSBackoffMax != wait {
		t.Errorf("waits %v %v %v %v %v, want %v (interval − timeout)", s.FailsafeDelay, s.RetryableWaitMin, s.RetryableWaitMax, s.WSBackoffBase, s.WSBackoffMax, wait)
	}
	if s.QuickfixReconnect != 100*time.Millisecond || s.WSSilence != 100*time.Millisecond {
		t.Errorf("quickfix reconnect %v, ws silence %v, want the probe interval", s.QuickfixReconnect, s.WSSilence)
	}
	d := s.PeerDefaults(150 * time.Millisecond)
	if d.QuickfixReconnect != 30*time.Second || d.RetryableWaitMin != time.Second || d.WSSilence != 2*time.Second || d.ProbeInterval != s.ProbeInterval {
		t.Errorf("defaults: %+v", d)
	}
}

func TestSettingsValidateNamesTheFlag(t *testing.T) {
	s := compare.DefaultSettings()
	s.ProbeTimeout = s.ProbeInterval
	s.WSJitter = 2
	err := s.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"-probe-timeout", "-ws-jitter"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
}
