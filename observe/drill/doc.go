// Package drill turns one game day — a region outage played against a Path —
// into a self-contained HTML report.
//
// # Start here
//
// Collect an Input while the drill runs — the Path's events from its
// OnEvent hook, the orders you placed, your own notes — then compute the
// figures or write the report:
//
//	in := drill.Input{
//		Title: "game day: blackhole on eu",
//		Start: start, End: at(5 * time.Second),
//		Fault: "eu: rest=blackhole", FaultAt: at(2000 * ms),
//		Primary: "eu", Survivor: "us",
//	}
//	// In a drill: cfg.OnEvent = observe.Tee(..., func(e pathdialer.Event) { in.Events = append(in.Events, e) })
//	f := drill.Compute(in)
//	fmt.Println("down:", f.OnCall.Endpoint, "detected after", f.OnCall.Detect)
//	if err := drill.WriteHTML(&report, in); err != nil {
//		log.Fatal(err)
//	}
//
// The Example computes the figures of a short synthetic run. Compute and
// WriteHTML are pure functions of the Input; a figure the Input cannot
// support is reported as not measured, never as zero.
//
// # What the report shows
//
// The report leads with what on-call asks first, the worst first: the halts (how many,
// how long), the transport whose orders came back last after the fault, and
// the share of orders that failed — in the header too, where "invariants OK"
// is green only when none of these is bad; then the first switch's time to
// detect (fault → endpoint declared down), time to switch, how long orders
// were held and why, orders refused, unknown and settled per transport, ticks
// missed and the longest silence of the price stream; then the invariants
// checked (and any broken), the date, seed and commit of the run, an SVG
// timeline (probe results per endpoint, health states, verdicts, fence,
// reconcile, hold and release, halts, order errors by kind) and the game-day
// figures: time until flow landed on the surviving endpoint, the peak
// handshake rate there against its budget, the fraction of reconnecting
// WebSocket clients that resumed from a sequence versus fetched a snapshot,
// error rates before, during and after the fault, and the orders held and for
// how long.
//
// # Driving a drill
//
// A drill driver collects an Input (the Path's events, its own notes, its
// orders, Samples of counters it took during the run, and the Stats of any
// crowd of reconnecting ws.Streams it ran), then calls Compute for the
// figures or WriteHTML for the report:
//
//	... run the scenario, taking a Sample every 100 ms ...
//	in.Samples, in.Population = samples, crowdStats
//	err := drill.WriteHTML(f, in)
//
// # What it guarantees
//
//   - The report is one HTML file: inline CSS and inline SVG, no script, no
//     external asset. Every name, cause and note is escaped by html/template,
//     and every SVG element is well-formed XML.
//   - Client order IDs are never shown (only counts and durations); nor are
//     addresses: lanes are endpoint names.
//   - Compute and WriteHTML are pure functions of the Input: no clock, no I/O
//     other than the writer.
//   - A figure that cannot be computed from the Input (no fault, no broker
//     counters on real endpoints, no population) is reported as not measured,
//     never as zero.
package drill
