// Package status serves a Path's state to humans and scripts: a small,
// self-contained HTML page (no external assets, no JavaScript) and the same
// data as JSON. It imports no metrics library.
//
//	mux.Handle("/status/", http.StripPrefix("/status", status.Handler(path, status.Options{})))
//
// # What it guarantees
//
//   - JSON at "/status.json", or at any path with "?format=json" or
//     "Accept: application/json": the Path's Snapshot, health, gate and
//     ticket states as strings ("HEALTHY", "HELD").
//   - HTML otherwise: the active endpoint and generation, the gate's state,
//     cause and age, the monitor's staleness, every endpoint with its state and
//     the age of its last success, the recent switches, decisions and events.
//     Everything is escaped by html/template.
//   - The ticket and settlement lists of reconciliation events (client order
//     IDs) are left out unless Options.ShowOrderIDs; the page shows their
//     count. The HTML shows service names, not addresses; the JSON carries
//     the Snapshot's addresses as configured (keep credentials out of them,
//     as pathdialer requires). Causes and errors are shown as the Path reports
//     them (the transports redact credentials from theirs).
//   - Read-only: only GET and HEAD are answered; the page never acts on the Path.
package status
