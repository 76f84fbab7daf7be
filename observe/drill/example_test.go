package drill_test

import (
	"bytes"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/observe/drill"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// A game day in brief: eu blackholed two seconds in, the Path's events
// collected from its OnEvent hook, two orders; the figures on-call asks
// first, and the report.
func Example() {
	start := time.Date(2025, 3, 3, 8, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	ms := time.Millisecond

	in := drill.Input{
		Title: "game day: blackhole on eu",
		Start: start, End: at(5 * time.Second),
		Fault: "eu: rest=blackhole", FaultAt: at(2000 * ms),
		Primary: "eu", Survivor: "us",
	}
	// In a drill: cfg.OnEvent = observe.Tee(..., func(e pathdialer.Event) { in.Events = append(in.Events, e) })
	in.Events = []pathdialer.Event{
		{Kind: pathdialer.EventStateChange, Time: at(0), Endpoint: "eu", State: engine.Healthy},
		{Kind: pathdialer.EventStateChange, Time: at(0), Endpoint: "us", State: engine.Healthy},
		{Kind: pathdialer.EventStateChange, Time: at(2300 * ms), Endpoint: "eu", PrevState: engine.Healthy, State: engine.Down},
		{Kind: pathdialer.EventHold, Time: at(2300 * ms), Cause: "failover: fencing eu"},
		{Kind: pathdialer.EventFenceSuccess, Time: at(2400 * ms), Endpoint: "eu", Duration: 100 * ms},
		{Kind: pathdialer.EventSwitch, Time: at(2400 * ms), From: "eu", To: "us", Token: 1},
		{Kind: pathdialer.EventReconcileSuccess, Time: at(2600 * ms), Duration: 200 * ms},
		{Kind: pathdialer.EventRelease, Time: at(2600 * ms), Endpoint: "us", Duration: 300 * ms},
	}
	in.Orders = []drill.Order{
		{ID: "o-1", Transport: "rest", PlacedAt: at(1000 * ms), Acked: true, AckedAt: at(1010 * ms), AckEndpoint: "eu"},
		{ID: "o-2", Transport: "rest", PlacedAt: at(2500 * ms), Acked: true, AckedAt: at(2650 * ms), AckEndpoint: "us"},
	}

	f := drill.Compute(in)
	fmt.Println("down:", f.OnCall.Endpoint, "detected after", f.OnCall.Detect)
	fmt.Println("switched to", f.OnCall.To, "after", f.OnCall.Switch, "held", f.OnCall.Held)
	for _, l := range f.Landing {
		fmt.Println("landed:", l.Transport, l.After)
	}

	var report bytes.Buffer // in a drill: an .html file
	if err := drill.WriteHTML(&report, in); err != nil {
		log.Fatal(err)
	}
	fmt.Println("report titled:", strings.Contains(report.String(), "game day: blackhole on eu"),
		"order IDs shown:", strings.Contains(report.String(), "o-1"))
	// Output:
	// down: eu detected after 300ms
	// switched to us after 100ms held 300ms
	// landed: rest orders 650ms
	// landed: submission gate 600ms
	// report titled: true order IDs shown: false
}
