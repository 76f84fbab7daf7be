// Package observe is how a running brokerpath Path is watched from outside:
// Prometheus metrics (package observe/metrics), a status page (package
// observe/status), and the small glue they share.
//
// # Start here
//
// pathdialer.Config has one event hook, OnEvent. Tee fans it out to several
// consumers (metrics, a status page's recorder, a logger) without either
// knowing about the other:
//
//	m := metrics.New()
//	rec := status.NewRecorder()
//	cfg := pathdialer.DefaultConfig()
//	cfg.OnEvent = observe.Tee(m.OnEvent, rec.OnEvent, logger) // before pathdialer.New
//
// Each hook sees every event, in order, on the Path's event goroutine: keep
// them quick. Then see observe/metrics for Prometheus,
// observe/status for the on-call page and observe/drill for game-day
// reports.
//
// # Dependencies
//
// This package imports only pathdialer; it never pulls client_golang into a
// program's import graph (observe/status does not either; observe/metrics
// does, and only it).
package observe
