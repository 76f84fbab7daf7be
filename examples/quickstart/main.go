// Command quickstart is the README's quick start as a program: it starts the
// simulated two-region broker in process and runs the quick start against it
// (one order over REST, one over FIX, one price over WebSocket, all through
// one brokerpath Path).
//
//	go run ./examples/quickstart
//
// quickstart.go is exactly the code the README shows; a test keeps the two
// the same.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := simulated(ctx, func(_ *simbroker.Broker, b Broker) error { return run(ctx, b, os.Stdout) }); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// simulated starts the simulated broker, describes it as a Broker and calls f.
func simulated(ctx context.Context, f func(*simbroker.Broker, Broker) error) error {
	sim, err := simbroker.Start(ctx, simbroker.DefaultConfig())
	if err != nil {
		return err
	}
	defer sim.Close()
	b := Broker{RootCAs: sim.CertPool(), APIKey: sim.APIKey(), FIX: sim.FIXSessionID(), Stream: "px.EURUSD"}
	for _, r := range sim.Regions() {
		b.Regions = append(b.Regions, Region{Name: r.Name(), REST: r.RESTURL(), WS: r.WSURL(), FIX: r.FIXAddr()})
	}
	return f(sim, b)
}
