// Package integration holds brokerpath's end-to-end tests: one test per fault
// kind of internal/orderflow (plus the monitor-only partition), each against
// its own simulated broker (real quickfix acceptor, gorilla WebSocket server,
// net/http HTTP/2 server behind faultnet relays), asserting the invariants
// through the broker's audit:
//
//   - no duplicate order (the audit books every client order ID at most once);
//   - no lost order (every order sent was acknowledged or settled by reconcile);
//   - no order accepted through the old region after its fence;
//   - halt exactly when no target is eligible;
//   - the WebSocket handler saw every sequence number once and in order;
//   - FIX sequence numbers continuous.
//
// The long randomized run lives in integration/chaos (make chaos); its fault
// schedule generator is integration/chaos/plan.
package integration
