// Package rest is a drop-in http.RoundTripper for broker REST APIs that sends every
// request over the active endpoint of a pathdialer.Path.
//
// The application keeps its http.Client and broker SDK and swaps in the transport:
//
//	rt, err := rest.NewTransport(path, rest.Options{TLSConfig: &tls.Config{RootCAs: pool}})
//	client := &http.Client{Transport: rt}
//
// # What it guarantees
//
//   - Routing: each request's scheme, host and base path are rewritten to the
//     active endpoint's "rest" address, whatever host the application wrote. Every
//     endpoint has its own connection pool, dialed through the Path's tracked
//     dialer, so the fence really closes the old endpoint's connections. TLS
//     verifies the endpoint's own host name, or TLSConfig.ServerName when set
//     (an endpoint dialled by IP address, verified as the broker's host name);
//     verification is never skipped (NewTransport refuses InsecureSkipVerify).
//   - HTTP/2 where the server offers it (HTTP/1.1 otherwise, or always with
//     Options.DisableHTTP2), with a ping after
//     Options.ReadIdleTimeout of silence and Options.PingTimeout to answer, so a
//     silently dead connection is found in about a second.
//   - Submissions (by default every method but GET, HEAD and OPTIONS; see
//     Options.IsSubmission and WithSubmission) take a ticket from the Path's gate:
//     they wait while a switch is held, fail at once with
//     pathdialer.ErrTradingHalted while halted, and go to the ticket's endpoint.
//     A submission is never retried, by this package or by net/http (it goes
//     out without GetBody, so neither the HTTP/1.1 nor the HTTP/2 transport can
//     send its body twice, Idempotency-Key header or not). When its outcome is
//     unknown — a timeout, reset or EOF after the request was written, or any
//     5xx answer (502, 503 and 504 above all) — RoundTrip returns an
//     *UnknownOutcomeError and hands the order to reconciliation.
//   - Fencing: immediately before a submission is handed to net/http (after
//     any wait for the gate) the ticket's validity is checked
//     (pathdialer.Ticket.Valid); an order whose decision has lapsed is not sent
//     and RoundTrip returns ErrNotSent wrapping pathdialer.ErrTicketExpired.
//     With Options.TokenHeader each order carries the ticket's fencing token,
//     so a broker or gateway that checks tokens refuses a stale writer.
//   - Idempotent reads go through a circuit breaker per endpoint
//     (sony/gobreaker): a tripped breaker fails reads fast with ErrBreakerOpen. The
//     breaker never switches paths; only the engine does.
//   - Reconcile lookups are never refused by the read breaker. They decide
//     whether held order flow is released, and the Path already bounds them
//     (ReconcileTimeout) and retries them with backoff, so a breaker opened
//     during an outage must not hold trading once the broker answers again.
//     They bypass the breaker: their failures are reported to the Path as
//     evidence but do not count towards tripping it, and a lookup that
//     succeeds closes the endpoint's breaker (it is the trial a half-open
//     breaker would have let through). Reconciler's lookups are marked so;
//     WithReconcile marks those of a reconciler of your own. Probe,
//     IdentityCheck and trade-path checks built from Probe use their own
//     connections and never meet the breaker.
//   - Passive signals: connection errors, timeouts and 5xx are reported to the
//     Path for the endpoint they happened on (successes too); 4xx are not path
//     failures.
//   - Errors and logs never contain credentials: API-key and authorization headers
//     and key/token/signature query parameters are masked (see Redact).
//
// Cost: an order or read leaves as net/http would send it for a bare
// http.Transport (an in-memory body stays in memory, so HTTP/1.1 writes headers
// and body in one go; a request already aimed at the endpoint is not copied);
// a submission adds a request copy, its order ID and its ticket.
//
// Reconciler is a ready pathdialer.ReconcileFunc that looks orders up by client
// order ID through a URL template and maps the broker's status field to a fate,
// with presets for Alpaca's and Binance's order queries.
//
// Probe returns a ready pathdialer.ProbeFunc that performs an authenticated request
// of your choice on every endpoint, the trade path, not a status page.
package rest
