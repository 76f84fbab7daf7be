package observe_test

import (
	"fmt"

	"github.com/brokerpath/brokerpath/observe"
	"github.com/brokerpath/brokerpath/observe/metrics"
	"github.com/brokerpath/brokerpath/observe/status"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// The usual consumers of a Path's events: Prometheus metrics, the status
// page's recorder and a log line, all on the one hook.
func ExampleTee_consumers() {
	m := metrics.New()
	rec := status.NewRecorder()
	logger := func(e pathdialer.Event) { fmt.Println("event:", e.Kind, e.Endpoint) }

	cfg := pathdialer.DefaultConfig()
	cfg.OnEvent = observe.Tee(m.OnEvent, rec.OnEvent, logger) // before pathdialer.New

	cfg.OnEvent(pathdialer.Event{Kind: pathdialer.EventFenceSuccess, Endpoint: "eu"}) // as the Path does
	// Output: event: fence-ok eu
}
