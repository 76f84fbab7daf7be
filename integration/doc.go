// Package integration holds brokerpath's end-to-end tests: one test per fault
// kind of internal/orderflow (plus the monitor-only partition), each against
// its own simulated broker (real quickfix acceptor, gorilla WebSocket server,
// net/http HTTP/2 server behind faultnet relays). Each run ends with
// orderflow's checker (CheckHistory), which takes the broker's audit as the
// truth and checks ten numbered invariants — among them no order booked
// twice, none lost, never two live paths, every late landing reported and
// none after a final NOT_RECEIVED, the client's record matching the book —
// and the tests assert the same from the audit directly where they can.
//
// Budgets on a loaded host: the tests run beside compilers and other tests
// on two cores, and what load does to them is delay goroutines (a probe that
// crosses ten wake-ups each waiting for a CPU times out, in both regions at
// once). A monitor in the test binary measures that delay all along (how
// late a goroutine sleeping 5 ms wakes up); each test derives its probe
// timeout and interval, its order, FIX-answer, HTTP/2 ping and reconcile
// timeouts, its quarantine and its trading rate from the delay measured over
// the minute before it starts, and every wait is extended by the time lost
// waiting for a CPU meanwhile (up to three times its budget). What the
// process asks of the CPU shrinks with what the host gives it: a test on a
// loaded host trades more slowly and takes more of the three broker slots
// (alone from a budget stretched 3.5 times on). A blackhole is healed once
// every order is answered or judged, while the NOT_RECEIVED verdicts are
// still provisional, so the copies it held land before any re-send. On a
// quiet host the budgets are the fixed ones these tests always had;
// budget_test.go says how each is derived, and every test logs its budgets,
// its slots and the delay it saw.
//
// The long randomized run lives in integration/chaos (make chaos): one
// seeded fault schedule run once per broker policy of a matrix, one table.
// Its fault schedule generator is integration/chaos/plan.
//
// What a seed fixes and what it does not: the seed fixes the fault schedule
// (which faults, on which regions and services, when and for how long; the
// digest printed first proves it) and the simulated broker's prices. It
// cannot fix what real sockets and goroutines decide: which orders are on
// the wire when a fault begins, how many are held by a blackholed relay,
// whether a probe on a loaded machine times out (a halt, an extra switch),
// how many orders are refused while held. So orders, halts, late landings and
// not-sent counts vary from run to run of one seed; the invariants must not:
// a violation count other than 0 is a finding whatever the run.
package integration
