// Package metrics exports a brokerpath Path and its transports to Prometheus
// (client_golang): the failover system watched from outside (state
// transitions, health-check staleness, reconnection rate) and what a game day
// measures (resumes versus snapshots, gaps).
//
// # Start here
//
// Chain the hook before pathdialer.New, watch the Path after, register once:
//
//	m := metrics.New()
//	cfg.OnEvent = observe.Tee(m.OnEvent)
//	path, err := pathdialer.New(cfg)
//	m.Watch(path)
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(m)
//	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Add m.WatchREST(rt), m.WatchStream(s) and m.WatchFIX(in) for the
// transports' counters. The Example scrapes the handler and prints the
// active endpoint's gauge. Every name starts with brokerpath_; labels are
// only endpoint and region names and fixed enums, never an address, order
// ID or error text. REFERENCE.md, beside this package's source, lists every
// series with its type, labels, meaning and an alert worth setting; a test
// keeps it equal to what the collector exports.
//
// # Two halves
//
// A Metrics value is one prometheus.Collector with two halves:
//
//   - Gauges and transport counters are read at scrape time from
//     Path.Snapshot and the transports' Stats: no goroutine, no polling, nothing
//     to stop. They need Watch (and WatchREST, WatchStream, WatchFIX).
//   - Probe latency, decisions, switches, fence, reconcile and hold durations
//     come from the Path's events: chain Metrics.OnEvent into
//     pathdialer.Config.OnEvent (observe.Tee fans the one hook out).
//
// # What it guarantees
//
//   - Every name starts with brokerpath_, counters end in _total, durations
//     are in seconds; testutil.CollectAndLint finds no problem.
//   - Labels are only endpoint, region, outcome, kind and state, whose values
//     are endpoint and region names from the configuration and fixed enums.
//     No address, credential, order ID, error text or cause is ever a label
//     value, so cardinality is bounded by the number of endpoints.
//   - The set of descriptors is fixed (Describe sends all of them whatever is
//     watched), so a Metrics registers once and Watch* may be called later.
//   - Collect never blocks on the network; it takes a Snapshot and reads
//     atomic counters.
//
// One Metrics describes one Path: register one per Path (in separate
// registries, or wrapped with prometheus.WrapRegistererWith and a const label).
package metrics
