package orderflow

import (
	"testing"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// A region's faults reach its session connections before its order path
// (injectOrder), and every service of simbroker.Services is set.
func TestInjectOrderSessionsFirst(t *testing.T) {
	if len(injectOrder) != len(simbroker.Services) {
		t.Fatalf("injectOrder has %d services, simbroker.Services %d", len(injectOrder), len(simbroker.Services))
	}
	seen := map[simbroker.Service]int{}
	for i, svc := range injectOrder {
		seen[svc] = i
	}
	for _, svc := range simbroker.Services {
		if _, ok := seen[svc]; !ok {
			t.Fatalf("injectOrder lacks %s", svc)
		}
	}
	for _, session := range []simbroker.Service{simbroker.FIX, simbroker.WS} {
		for _, order := range []simbroker.Service{simbroker.REST, simbroker.Probe} {
			if seen[session] > seen[order] {
				t.Errorf("%s is set after %s: a farewell could pass through it after the orders failed", session, order)
			}
		}
	}
}
