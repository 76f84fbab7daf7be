package compare_test

import (
	"os"
	"testing"

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
	must("fix/brokerpath transports/fix/ack_s")
	if v := must("ws/brokerpath ws.Stream/missed"); v != 0 {
		t.Errorf("ws.Stream missed %v ticks", v)
	}
	must("ws/brokerpath ws.Stream/first_s")
}
