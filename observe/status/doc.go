// Package status serves a Path's state to the people on call and to scripts:
// a small, self-contained HTML page (no external assets, no JavaScript) and
// the same figures as JSON. It imports no metrics library.
//
// # Start here
//
// Chain a Recorder into the Path's hook before pathdialer.New, then serve
// the Handler wherever on-call can reach it:
//
//	rec := status.NewRecorder()
//	cfg.OnEvent = observe.Tee(rec.OnEvent) // before pathdialer.New
//	path, err := pathdialer.New(cfg)
//	mux.Handle("/status/", http.StripPrefix("/status", status.Handler(path, status.Options{
//		Recorder:   rec, // and REST, FIX, Stream, Ticks: each adds its part of the page
//		MetricsURL: "/metrics",
//	})))
//
// The page is at /status/; scripts read /status/status.json (or any path
// with ?format=json). Options' zero value works: every source is optional
// and adds its part (the REST transport, the FIX initiator and the Stream
// their order counts; Ticks the ticks missed). The Example serves the page
// and reads its JSON.
//
// # What the page leads with
//
//   - Where orders go now, whether they flow, are held or are refused, for
//     how long and why; and where the way back to the primary stands, in
//     words ("waiting for eu to recover (DOWN)").
//   - The worst since start, led by the orders NOT_RECEIVED only
//     provisionally (a copy through the old path could still be booked),
//     then halts and the longest hold (dated by its switch); then those
//     orders, when each is looked up again, and what to do about them:
//     nothing until Path.MayResend says yes (their IDs need
//     Options.ShowOrderIDs).
//   - The last switch, at the time it switched, with each step's time (first
//     failed probe, declared down, held, switched, released): time to detect
//     (first failed probe → endpoint declared down), time to switch (declared
//     down → the new path chosen), how long orders were held, where that went
//     (cutting the old path off, checking orders with the broker), how long
//     each service waited when services are released one by one, every
//     reason they were held, and how many orders per transport had to be
//     checked with the broker and what was found, each order once under its
//     last fate (needs a Recorder).
//   - Orders per transport: sent, answered, refused (not sent), outcome
//     unknown now, checked after a switch (needs the transports).
//   - The market data stream: ticks missed, longest silence, reconnects
//     (needs a Stream and a Ticks).
//   - Then every endpoint, recent switches, and recent events in plain words.
//
// # What it guarantees
//
//   - JSON at "/status.json", or at any path with "?format=json" or
//     "Accept: application/json": snake_case keys, every duration in
//     milliseconds under a key ending in _ms, times in RFC 3339, a time that
//     was never set left out, states as upper-case strings ("HEALTHY",
//     "HELD"), events most recent first.
//   - HTML otherwise, with human durations ("68 ms", "2.2 s", "1 m") and links
//     to the JSON and (Options.MetricsURL) the metrics. Everything is escaped
//     by html/template.
//   - Client order IDs are left out unless Options.ShowOrderIDs; the page
//     shows counts. Neither output shows endpoint addresses, only names and
//     service names. Causes and errors are shown as the Path reports them
//     (the transports redact credentials from theirs).
//   - Read-only: only GET and HEAD are answered; the page never acts on the Path.
package status
