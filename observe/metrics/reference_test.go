package metrics_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/sony/gobreaker/v2"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/observe/metrics"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// updateReference rewrites REFERENCE.md from the collector:
//
//	go test ./observe/metrics -run TestReference -update
var updateReference = flag.Bool("update", false, "rewrite REFERENCE.md from the collector")

const referenceFile = "REFERENCE.md"

// alerts is the one thing REFERENCE.md holds that the collector does not: an
// alert worth setting on each series. TestReference fails when a series has
// none, or when one is given for a series the collector does not export.
var alerts = map[string]string{
	"brokerpath_probe_duration_seconds":                   "`histogram_quantile(0.99, sum by (endpoint, le) (rate(brokerpath_probe_duration_seconds_bucket[5m])))` above the engine's DegradedLatency for 10 m: the path is slow before it is down.",
	"brokerpath_endpoint_state_changes_total":             "`increase(...[15m]) > 6` for one endpoint: flapping; thresholds too tight or a gray failure.",
	"brokerpath_decisions_total":                          "`increase(...{outcome=\"no_target_available\"}[5m]) > 0`: no path to fail over to (page). `{outcome=\"flap_suppressed\"}` > 0: failback needs a human.",
	"brokerpath_switches_total":                           "`increase(...{kind=\"failover\"}[5m]) > 0`: a failover happened (notify); `increase(...[1h]) > 4`: switching too often.",
	"brokerpath_fence_duration_seconds":                   "`increase(..._count{outcome=\"failure\"}[5m]) > 0`: the old path could not be fenced; flow stays held (page).",
	"brokerpath_reconcile_duration_seconds":               "`increase(..._count{outcome=\"failure\"}[5m]) > 0`: orders of unknown outcome could not be settled; flow stays held (page).",
	"brokerpath_gate_hold_duration_seconds":               "`histogram_quantile(0.99, rate(..._bucket[1h]))` above the failover time you promised: holds are too long.",
	"brokerpath_events_total":                             "`increase(...{kind=\"late-landing\"}[15m]) > 0`: an order landed through a fenced path after it was settled (page: check the book).",
	"brokerpath_endpoint_state":                           "`max_over_time(...{state=\"down\"}[5m]) == 1` on any endpoint: redundancy lost even while flow is fine.",
	"brokerpath_endpoint_active":                          "`...{endpoint=\"<primary>\"} == 0` for 30 m: still on the secondary (failback not happening).",
	"brokerpath_endpoint_eligible":                        "`sum(...) < 2` for 10 m: fewer than two usable paths; a failure now would halt trading.",
	"brokerpath_endpoint_fenced":                          "`...== 1` for 30 m: a fenced endpoint that never came back into use.",
	"brokerpath_endpoint_consecutive_failures":            "`... > 0` on the active endpoint for 1 m: the active path is failing probes.",
	"brokerpath_endpoint_consecutive_successes":           "Informational (failback progress); no alert of its own.",
	"brokerpath_endpoint_last_success_age_seconds":        "`... > 3 * probe interval` on the active endpoint: its health is stale.",
	"brokerpath_endpoint_connections":                     "`...{endpoint=X} > 0` while `brokerpath_endpoint_fenced{endpoint=X} == 1`: connections left on a fenced path.",
	"brokerpath_generation":                               "`changes(...[1h]) > 4`: the active path changes too often.",
	"brokerpath_gate_state":                               "`...{state=\"halted\"} == 1` (page: trading halted); `...{state=\"held\"} == 1` for longer than the failover time you promised.",
	"brokerpath_gate_state_age_seconds":                   "`... > 30 and on() brokerpath_gate_state{state=~\"held|halted\"} == 1`: submissions held or halted for 30 s.",
	"brokerpath_halts_total":                              "`increase(...[5m]) > 0` (page: trading was halted).",
	"brokerpath_tickets_in_flight":                        "`... > 0` and unchanged for 5 m: submissions stuck in flight.",
	"brokerpath_tickets_unknown_outcome":                  "`... > 0` for 2 m: orders whose fate is unknown are waiting on reconciliation (page).",
	"brokerpath_monitor_stale":                            "`... == 1` (page: the health monitor stalled; no failover can be decided).",
	"brokerpath_monitor_last_round_age_seconds":           "`... > 3 * probe interval`: probe rounds are late (host starved or monitor stuck).",
	"brokerpath_dropped_reports_total":                    "`rate(...[5m])` well above zero for long: results from fenced paths still arriving.",
	"brokerpath_resting_orders_cancelled_by_switch_total": "`increase(...[15m]) > 0`: a switch cancelled resting orders (notify the trader).",
	"brokerpath_rest_requests_total":                      "Denominator for error ratios; no alert of its own.",
	"brokerpath_rest_request_outcomes_total":              "`increase(...{kind=\"submission\",outcome=~\"unknown|halted\"}[5m]) > 0`: orders with unknown fate or refused by a halt.",
	"brokerpath_rest_breaker_state":                       "`...{state=\"open\"} == 1` for 5 m on the active endpoint: reads failing on the order path.",
	"brokerpath_ws_connects_total":                        "Informational; see ws_reconnects_total.",
	"brokerpath_ws_reconnects_total":                      "`increase(...[10m]) > 10`: the market-data stream keeps reconnecting.",
	"brokerpath_ws_dial_failures_total":                   "`increase(...[5m]) > 5`: WebSocket connects failing.",
	"brokerpath_ws_fallbacks_total":                       "`increase(...[15m]) > 0`: a stream left the active endpoint after repeated failures.",
	"brokerpath_ws_migrations_total":                      "Informational (one per switch); no alert of its own.",
	"brokerpath_ws_subscribes_total":                      "Informational; no alert of its own.",
	"brokerpath_ws_resumes_total":                         "Informational; compare with ws_snapshots_total.",
	"brokerpath_ws_snapshots_total":                       "`increase(...[1h]) / increase(brokerpath_ws_resumes_total[1h]) > 0.5`: the server seldom replays; state is rebuilt from snapshots.",
	"brokerpath_ws_messages_total":                        "`rate(...[5m]) == 0` during market hours: no data delivered.",
	"brokerpath_ws_duplicates_total":                      "Informational (expected after resumes); no alert of its own.",
	"brokerpath_ws_gaps_total":                            "`increase(...[10m]) - increase(brokerpath_ws_gaps_repaired_total[10m]) > 0`: gaps not repaired.",
	"brokerpath_ws_gaps_repaired_total":                   "See ws_gaps_total.",
	"brokerpath_ws_server_errors_total":                   "`increase(...[5m]) > 0`: the server sent errors (subscription or auth).",
	"brokerpath_ws_disconnected_seconds_total":            "`rate(...[5m]) > 0.1`: streams without a connection more than 10% of the time.",
	"brokerpath_ws_restarts_total":                        "`increase(...[1h]) > 0`: the server restarted its numbering (notify).",
	"brokerpath_ws_escalations_total":                     "`increase(...[10m]) > 5`: repairs keep needing stronger measures.",
	"brokerpath_ws_snapshot_requests_total":               "`increase(...[10m]) > 3`: repairs not done in time.",
	"brokerpath_ws_stall_reconnects_total":                "`increase(...[10m]) > 0`: connections dropped because a repair stalled.",
	"brokerpath_ws_oversized_frames_total":                "`increase(...[1h]) > 0`: server messages over the read limit (raise the limit or check the feed).",
	"brokerpath_ws_bad_frames_total":                      "`increase(...[1h]) > 0`: unparseable server messages.",
	"brokerpath_ws_short_lived_connections_total":         "`increase(...[10m]) > 3`: connections dying right after the handshake (auth or rate limit).",
	"brokerpath_ws_held_messages_total":                   "Informational (messages held during repairs); no alert of its own.",
	"brokerpath_ws_streams_connected":                     "`sum(...) < <streams you run>` for 1 m: a stream is down.",
	"brokerpath_ws_streams_health":                        "`...{state=\"suspended\"} > 0`: a stream gave up reconnecting (page).",
	"brokerpath_fix_logons_total":                         "`increase(...[15m]) > 2`: the FIX session keeps logging on again.",
	"brokerpath_fix_sequence_resets_total":                "Informational (one per switch); no alert of its own.",
	"brokerpath_fix_orders_total":                         "Denominator for the FIX ratios; no alert of its own.",
	"brokerpath_fix_orders_not_sent_total":                "`increase(...[5m]) > 0`: FIX orders refused before leaving the process.",
	"brokerpath_fix_orders_answered_total":                "`increase(brokerpath_fix_orders_total[5m]) - increase(...[5m]) > 0` for 5 m: orders without an answer.",
	"brokerpath_fix_refused_resends_total":                "`increase(...[1h]) > 0`: the counterparty asked for orders again (they were gap-filled, never resent).",
	"brokerpath_fix_ungated_refused_total":                "`increase(...[5m]) > 0`: code sends orders around the submission gate (a bug to fix).",
}

// series is one row of the reference.
type series struct {
	name, typ, help string
	labels          []string
}

var (
	descName   = regexp.MustCompile(`fqName: "([^"]+)"`)
	descHelp   = regexp.MustCompile(`help: "((?:[^"\\]|\\.)*)"`)
	descLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
)

// described returns the series Describe sends, by name.
func described(t *testing.T, m *metrics.Metrics) map[string]series {
	t.Helper()
	ch := make(chan *prometheus.Desc)
	go func() { m.Describe(ch); close(ch) }()
	out := map[string]series{}
	for d := range ch {
		s := d.String()
		n, h, l := descName.FindStringSubmatch(s), descHelp.FindStringSubmatch(s), descLabels.FindStringSubmatch(s)
		if n == nil || h == nil || l == nil {
			t.Fatalf("cannot read descriptor %s", s)
		}
		var help string
		if _, err := fmt.Sscanf(`"`+h[1]+`"`, "%q", &help); err != nil {
			t.Fatalf("help of %s: %v", n[1], err)
		}
		sr := series{name: n[1], help: help}
		if l[1] != "" {
			sr.labels = strings.Split(l[1], ",")
		}
		if _, dup := out[sr.name]; dup {
			t.Fatalf("%s described twice", sr.name)
		}
		out[sr.name] = sr
	}
	return out
}

// everySeries makes a Metrics produce every series it has: a Path watched,
// one source of each transport, and one event of each kind that feeds a
// histogram or counter vector. It returns the gathered families.
func everySeries(t *testing.T) (*metrics.Metrics, []*dto.MetricFamily) {
	t.Helper()
	h := newHarness(t)
	t.Cleanup(func() { h.path.Close() })
	h.m.WatchREST(&fakeREST{breaker: map[string]gobreaker.State{"eu": gobreaker.StateClosed}})
	h.m.WatchStream(&fakeStream{ws.Stats{Endpoint: "eu", Health: ws.HealthLive}})
	h.m.WatchFIX(&fakeFIX{})
	for _, e := range []pathdialer.Event{
		{Kind: pathdialer.EventProbe, Endpoint: "eu", Duration: time.Millisecond},
		{Kind: pathdialer.EventStateChange, Endpoint: "eu", State: engine.Down},
		{Kind: pathdialer.EventDecision, Decision: &engine.Decision{}},
		{Kind: pathdialer.EventSwitch, Cause: "failover"},
		{Kind: pathdialer.EventFenceFailure, Endpoint: "eu", Err: errors.New("x")},
		{Kind: pathdialer.EventReconcileSuccess},
		{Kind: pathdialer.EventRelease, Endpoint: "us"},
	} {
		h.m.OnEvent(e)
	}
	return h.m, families(t, h.reg)
}

// reference renders REFERENCE.md from the collector's series and alerts.
func reference(rows []series) []byte {
	var b bytes.Buffer
	b.WriteString("# brokerpath metrics reference\n\n")
	b.WriteString("Every series the Prometheus collector of `observe/metrics` exports, generated from the\n")
	b.WriteString("collector itself (`go test ./observe/metrics -run TestReference -update`; the test fails\n")
	b.WriteString("when this page and the collector disagree). How to register the collector:\n")
	b.WriteString("[observe/metrics](https://pkg.go.dev/github.com/brokerpath/brokerpath/observe/metrics).\n\n")
	b.WriteString("Labels are only endpoint and region names from your configuration and fixed enums\n")
	b.WriteString("(`outcome`, `kind`, `state`), never an address, order ID or error text. The alerts are\n")
	b.WriteString("starting points: `...` stands for the series itself; set the thresholds from your own\n")
	b.WriteString("configuration (probe interval, the failover time you promise).\n\n")
	fmt.Fprintf(&b, "%d series.\n\n", len(rows))
	b.WriteString("| name | type | labels | meaning | an alert worth setting |\n")
	b.WriteString("|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, r := range rows {
		labels := "—"
		if len(r.labels) > 0 {
			labels = "`" + strings.Join(r.labels, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", r.name, r.typ, labels, cell(r.help), cell(alerts[r.name]))
	}
	return b.Bytes()
}

// TestReference: REFERENCE.md lists exactly the collector's series, each
// with the type, labels and help the collector gives it and an alert.
func TestReference(t *testing.T) {
	m, mfs := everySeries(t)
	desc := described(t, m)
	gathered := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		gathered[mf.GetName()] = mf
	}
	var rows []series
	for name, s := range desc {
		mf, ok := gathered[name]
		if !ok {
			t.Errorf("%s is described but was not collected; everySeries must make it appear", name)
			continue
		}
		s.typ = strings.ToLower(mf.GetType().String())
		if mf.GetHelp() != s.help {
			t.Errorf("%s: gathered help %q, described %q", name, mf.GetHelp(), s.help)
		}
		if _, ok := alerts[name]; !ok {
			t.Errorf("%s has no alert in reference_test.go's alerts", name)
		}
		rows = append(rows, s)
	}
	for name := range gathered {
		if _, ok := desc[name]; !ok {
			t.Errorf("%s is collected but not described", name)
		}
	}
	for name := range alerts {
		if _, ok := desc[name]; !ok {
			t.Errorf("alerts names %s, which the collector does not export", name)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	got := reference(rows)
	if *updateReference {
		if err := os.WriteFile(referenceFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatalf("%v (write it: go test ./observe/metrics -run TestReference -update)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs from the collector at line %d:\n file: %s\n want: %s\n(rewrite it: go test ./observe/metrics -run TestReference -update)", referenceFile, i+1, w, g)
			}
		}
	}
}
