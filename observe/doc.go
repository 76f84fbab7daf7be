// Package observe is how a running brokerpath Path is watched from outside:
// Prometheus metrics (package observe/metrics), a status page (package
// observe/status), and the small glue they share.
//
// pathdialer.Config has one event hook, OnEvent. Tee fans it out to several
// consumers (metrics, a logger, a timeline) without either knowing about the
// other:
//
//	m := metrics.New()
//	cfg.OnEvent = observe.Tee(m.OnEvent, timeline.Add)
//
// This package imports only pathdialer; it never pulls client_golang into a
// program's import graph (observe/status does not either; observe/metrics
// does, and only it).
package observe
