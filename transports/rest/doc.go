// Package rest is a drop-in http.RoundTripper for broker REST APIs that sends every
// request over the active endpoint of a pathdialer.Path.
//
// # Start here
//
// The application keeps its http.Client and broker SDK and swaps in the
// transport, built on a started pathdialer.Path:
//
//	rt, err := rest.NewTransport(path, rest.Options{
//		TLSConfig: &tls.Config{RootCAs: pool},
//		Hosts:     []string{"broker"}, // the name your URLs use: https://broker/v2/orders
//		Rules:     rest.AlpacaRules(), // which requests are orders
//	})
//	client := &http.Client{Transport: rt}
//
// RoundTrip keeps net/http's contract: whenever the broker answered, the
// response comes back with err == nil, 5xx included, body intact. Ask
// Outcome what became of each order, and send it again only when MayResend
// is true — never on Unknown, which a 5xx is: the order may be booked, and
// the Path's reconciliation settles it.
//
//	resp, err := client.Do(req)
//	v := rest.Outcome(resp, err)
//	switch v.Kind {
//	case rest.Accepted: // resp.Body is the broker's account of the order
//	case rest.Rejected: // 4xx: refused, not booked; resp.Body says why
//	case rest.Unknown: // 5xx or no answer: handed to reconciliation; do not resend
//	case rest.NotSent: // nothing left the process (halted, dial failed, ...)
//	}
//	if resp != nil {
//		resp.Body.Close()
//	}
//	if v.MayResend {
//		log.Println("may send again, under the same client order ID:", v.Reason)
//	}
//
// ExampleOutcome holds this code; the package Example runs an order and a
// reconcile against two regions. For the Path's reconciler, see
// NewReconciler; for probes, Probe.
//
// # Logging errors
//
// http.Client wraps every RoundTrip error in a *url.Error that repeats the
// URL as you wrote it, query signature included: log RedactError(err) or
// v.Reason, not err.
//
// # What it guarantees
//
//   - Routing: a request for the broker — an endpoint's own host, or a name in
//     Options.Hosts — has its scheme, host and base path rewritten to the
//     active endpoint's "rest" address. A request for any other host never
//     reaches the broker: it fails with ErrForeignHost, or goes unchanged
//     through Options.Other when set. Every
//     endpoint has its own connection pool, dialed through the Path's tracked
//     dialer, so the fence really closes the old endpoint's connections. TLS
//     verifies the endpoint's own host name, or TLSConfig.ServerName when set
//     (an endpoint dialled by IP address, verified as the broker's host name);
//     verification is never skipped (NewTransport refuses InsecureSkipVerify).
//   - HTTP/2 where the server offers it (HTTP/1.1 otherwise, or always with
//     Options.DisableHTTP2), with a ping after
//     Options.ReadIdleTimeout of silence and Options.PingTimeout to answer, so a
//     silently dead connection is found in about a second.
//   - Submissions (orders: the requests Options.Rules names as orders, and
//     every other method but GET, HEAD and OPTIONS that Rules does not name
//     as a non-order; see Rules and WithSubmission) take a ticket from the
//     Path's gate: they wait while a switch is held, fail at once with
//     pathdialer.ErrTradingHalted while halted, and go to the ticket's endpoint.
//     A submission is never retried, by this package or by net/http (it goes
//     out without GetBody, so neither the HTTP/1.1 nor the HTTP/2 transport can
//     send its body twice, Idempotency-Key header or not). When its outcome is
//     unknown — a timeout, reset or EOF after the request was written, or any
//     5xx answer (502, 503 and 504 above all) — it is handed to
//     reconciliation: without an answer RoundTrip returns an
//     *UnknownOutcomeError; with a 5xx it returns the response, and
//     Outcome reports Unknown (with Options.UnknownAsError, the
//     *UnknownOutcomeError instead).
//   - Every submission is tracked under one ID: what its rule says
//     identifies it (Rule.OrderID: the client order ID, or for a cancel by
//     the venue's order ID, VenueOrderID), else Options.OrderID. Where the
//     venue accepts a client-chosen ID and the request carries none, its rule
//     may assign one (Rule.AssignID); otherwise it is refused before anything
//     is sent (ErrNoOrderID, counted in Stats.NotSent, the message naming the
//     rule to add). Options.OnOrder is told every submission's ID and verdict.
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
//     failures, and neither is a request failed by the server retiring its
//     HTTP/2 connection gracefully (GOAWAY with NO_ERROR, as a load balancer
//     does routinely): the connection goes away, not the endpoint. An order
//     failed that way is still an unknown outcome, settled by reconciliation.
//   - Errors and logs never contain credentials: API-key and authorization headers
//     and key/token/signature query parameters are masked in every error
//     RoundTrip returns and every line it logs (see RedactError).
//
// Cost: an order or read leaves as net/http would send it for a bare
// http.Transport (an in-memory body stays in memory, so HTTP/1.1 writes headers
// and body in one go; a request already aimed at the endpoint is not copied);
// a submission adds a request copy, its order ID and its ticket.
//
// Reconciler is a ready pathdialer.ReconcileFunc that looks orders up by client
// order ID through a URL template (by the venue's order ID through
// ReconcileOptions.VenueURL, for an order tracked as VenueOrderID) and maps
// the broker's status field to a fate, with presets for Alpaca's and
// Binance's order queries. A cancel's outcome is the state of the order it
// names.
//
// Under a broker's own SDK (one that takes an *http.Client), set
// Options.Hosts to the SDK's base URL host, Options.Rules to the venue's
// preset, and Options.UnknownAsError (the SDK would turn a 5xx into its own
// error) or Options.OnOrder; do not set http.Client.Timeout, which turns
// typed errors into text (Outcome still reads a not-sent order from it):
// use Options.GateWait and ResponseHeaderTimeout.
//
// Probe returns a ready pathdialer.ProbeFunc that performs an authenticated request
// of your choice on every endpoint, the trade path, not a status page. An
// unexpected status is a ProbeStatusError, which names the endpoint, the status
// and the URL without credentials (no user information, the query masked). A
// status that proves the request itself wrong (400, 401, 403, 404, 405, 410)
// also wraps pathdialer.ErrProbeRejected: a wrong API key answered 401 by every
// endpoint fails Path.Start within one probe round instead of after StartWait.
// Rate limits (429), 5xx and redirects are an endpoint's trouble, not a
// rejection.
//
// # Failed lookups and the trade-path check
//
// A failed reconcile lookup (a 5xx, or no answer) is evidence against the
// endpoint it went to, like any failed read: it is an authenticated request
// through the path orders take. engine.Config.FailureThreshold of them in a
// row while the endpoint's probe passes take it out as a gray failure, which a
// probe cannot end. So that such an outage costs its own length and a probe round or
// two, a Reconciler given this package's Transport (SendLookupsVia) offers the
// Path a trade-path check: the lookup of an order ID never sent
// (TradePathOrderID), to the endpoint checked, the broker's "not found" being
// a success. It runs every probe round on an endpoint in or after a gray
// failure, and ends the gray failure at its first success: when a switch's
// lookups answer 503 for a while and trading halts, trading resumes within a
// probe round or two of the lookups answering again, not after
// engine.Config.GrayFailbackWait. A pathdialer.Config.TradePathCheck of your
// own takes its place. A lookup sees what a read sees: for a broker whose
// order submissions can fail while its order queries answer, set
// Config.TradePathCheck to a request on the submission path that the broker
// refuses in a known way (the cancel of an order ID never sent).
package rest
