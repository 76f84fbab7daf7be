// Package dst is a deterministic simulation of brokerpath: the runtime
// (pathdialer), the REST transport and the WebSocket stream, with the
// simulated broker, all in one testing/synctest bubble over an in-memory
// network (faultnet.MemNetwork), so that time is virtual and thousands of
// seeded fault schedules run in minutes.
//
// A seed decides everything (NewScenario): two or three regions, the
// broker's policies (deduplication, fence, fencing tokens), the one-way base
// latency, the probe and engine settings, the load (one to four traders,
// each placing an order every 40–250 ms, every n-th a resting limit order)
// and the fault schedule (down, blackhole, latency, reset, a monitor-only
// partition, and unknown outcomes: booked, then the answer cut). Run drives
// it, heals every fault, waits a quiet period and checks:
//
//	no-duplicate-order              no client order ID booked twice (the client never resends)
//	no-lost-order                   every order the broker acknowledged is in the book
//	client-matches-book             ...in the region the client recorded
//	no-phantom-order                every booking is an order the client sent
//	no-order-through-fenced-path    nothing sent after the client fenced a region is booked there;
//	                                sent before and booked after is a late landing, reported in Notes
//	broker-fence-holds              nothing booked through a region the broker had fenced
//	every-unknown-order-settled     each unknown outcome is settled by some reconcile
//	unknown-settled-before-release  no flow is released under a later generation before an
//	                                order that finished unknown under an earlier one is settled
//	settlement-matches-book         a settled fate other than NOT_RECEIVED is in the book
//	nothing-pending-at-rest         after the quiet period the Path holds no unknown order
//	ws-every-tick-once-in-order     the stream delivers each tick once, in order (a snapshot restarts)
//	flow-resumes-after-heal         with every fault healed, the gate is open again
//	orders-flow                     some order was acknowledged (a run that books nothing
//	                                proves nothing)
//
// The Path is given a trade-path check (Config.TradePathCheck): an
// authenticated order-status query, through the endpoint's REST address, of
// a client order ID never sent, which passes on the broker's 404. It is the
// evidence that brings back an endpoint taken DOWN by live-traffic failures
// while its probe passed (the unknown-outcome fault: orders cut, probes
// fine); without it such an endpoint waits five minutes, longer than a run.
// The check does not fail while an unknown-outcome fault is still armed
// (the broker cuts orders, not reads), so an endpoint can come back and be
// taken out again by the orders the fault still cuts.
//
// By default the client never resends. Options.ResendNotReceived (flag
// -sim.resend) resends, once and under the same client order ID, an order
// Path.MayResend allows (a final NOT_RECEIVED: through a region the broker's
// kill switch fenced, Config.FenceAtBroker, or after the quarantine's
// re-query); a sweep with it must find no duplicate. Options.ResendNaive
// resends every NOT_RECEIVED at once, provisional or not: against a broker
// that deduplicates only open orders or not at all, an order still in the
// network when the reconcile asked then books twice, and no-duplicate-order
// fails (TestSimNaiveResendFindsDuplicate).
//
// With a broker that checks fencing tokens, each order carries the active
// generation + 1, read before the order is sent. Options.LibraryToken (flag
// -sim.libtoken) sends the library's own token instead (the REST transport's
// TokenHeader: the ticket's Generation); a standalone Path's first
// generation is 0, which a broker that wants positive tokens refuses, so
// every order before the first switch is rejected (orders-flow fails).
//
// The runtime's own defects can be planted without changing the module:
// internal/dst/splitgate writes a go build overlay in which pathdialer's
// gate hands a ticket from "in flight" to "unknown" in two steps, as it
// once did (make sim-defect). The window between the steps is a few
// instructions; virtual time cannot open it by itself (the simulation has no
// preemption), so the overlay can put a yield (-gap=gosched) or a virtual
// pause there, standing in for a thread descheduled at that point.
//
// The driver is TestSimSeeds (make sim; a short run in make test). A
// failing seed prints the one command that replays it and writes its trace
// (the same trace as in the sweep, see below):
//
//	go test ./internal/dst -run 'TestSimSeeds$' -count=1 -v -args -sim.seed=N -sim.trace=sim-N.trace
//
// # Determinism, and where it stops
//
// synctest makes time virtual, not scheduling deterministic: goroutines
// runnable at the same virtual instant run in an order the Go scheduler
// picks (in parallel, with more than one P), and select, map iteration and
// the runtime's random source are not seeded. The simulation makes the
// trace of a seed the same in every run in three ways.
//
// It keeps events apart in virtual time. Every chunk of bytes gets a delay
// drawn from a hash of the seed and its content (plain HTTP; a close, and a
// reset, by a hash of what the connection carried; WebSocket chunks by
// connection, with WebSocket dials on a seeded time grid, one per point);
// held bytes are released one by one; a reset reaches each side of each
// connection after its own one-way delay, not all readers at once; traders
// are staggered and start orders on their own time grid only (an order that
// outlasts the interval does not start the next at the instant it ends,
// which is often the instant the Path acts on its failure); every order and
// reconcile read uses its own connection (no two requests race for a pooled
// one); the probes (and trade-path checks) of one round give up a few
// microseconds apart, each before the Path's deadline by an amount of its
// own endpoint, instead of all timing out at the instant the Path's timers
// fire; and the reconciler reads the tickets in order of client order ID
// (the Path hands them over in no particular order: its gate keeps them in
// shards picked at random).
//
// It seeds what draws: the WebSocket stream's full-jitter source
// (ws.StreamConfig.Rand) comes from the seed, so a reconnect and the
// handshake deadline that starts with it do not move by a draw of the
// process's source.
//
// And each test process runs on one P (TestMain, -sim.procs=1): goroutines
// still runnable at one instant run one after another in the run queue's
// order, which the steps above make the same in every run (the Path closes
// a fenced endpoint's connections in the order they were dialed, not a
// map's). make sim gets its throughput from several processes side by side
// (SIM_SHARDS, -sim.shard=i/n); a replay runs on one P like the sweep.
//
// The trace is sorted by virtual time, then text, and leaves out numbers
// assigned in arrival order (audit sequence numbers, broker order IDs).
// Measured on this code, every seed run twice (make sim SIM_ARGS=-sim.twice,
// seeds from 1), seeds whose two traces were byte-identical:
//
//	one P (the default), without -race   1000 of 1000
//	one P (the default), with -race      1000 of 1000
//	two Ps (-sim.procs=2), without -race 1000 of 1000
//	two Ps (-sim.procs=2), with -race     300 of 300
//
// One P stays the default although two measured the same: with two,
// goroutines runnable at one instant run at the same time, in no order at
// all, and any event the steps above miss shows at once.
//
// A failing seed names its trace's hash, and its replay command prints the
// same hash.
//
// TestSimDeterministic requires byte-identical traces for every one of 20
// seeds run twice; it runs in make test, under the race detector.
//
// What remains: the race detector randomises the scheduler (a goroutine
// made runnable runs next or not), and select among ready cases and map
// iteration stay random in every build. The traces are identical because
// the simulation keeps those choices from mattering to what it records, not
// because they are gone: a new source of events at one instant (a timer
// that meets another, a fault that acts on several connections at once)
// can bring variation back. -sim.twice finds it, and the first lines that
// differ name the events to pull apart.
//
// # What is not modelled
//
// A green run proves the invariants for the modelled world only:
//
//   - No kernel: no socket buffers, windows or backpressure (writes never
//     block), no Nagle, no SYN retries, no keep-alive probes, no half-open
//     connections beyond what Blackhole holds. A refused dial fails after one
//     round trip; a blackholed dial succeeds and then nothing moves.
//   - No TLS: the broker serves plain HTTP and ws:// (TLS bytes are random,
//     which would break content-keyed delays, and handshake CPU time is not
//     virtual anyway). Real TLS timing, certificate checks and ALPN (so
//     HTTP/2) are not exercised; the real-time integration tests cover them.
//   - No FIX: quickfix listens and dials by itself (it takes neither a
//     listener nor a dialer for its acceptor, and its session loop aligns to
//     wall-clock seconds), so it cannot join an in-memory bubble. It would
//     need an acceptor that serves a given net.Listener and an initiator
//     that dials through a given function, both honouring virtual time.
//   - CPU time, GC pauses and process pauses take no virtual time: a stalled
//     process is not modelled (time only advances when every goroutine in
//     the bubble is blocked), nor is preemption between two statements.
//     Pauses across a lease need a coordinated Path (Config.ExternalDecisions
//     with a coordinator calling Assign and Path.Extend), which the
//     simulation does not run: Ticket.ValidUntil and ErrTicketExpired are
//     not exercised here.
//   - The WebSocket stream's full-jitter reconnect draw is seeded, but the
//     simulation shrinks its window to 1 ms and places WebSocket dials on
//     its own seeded grid (100–500 ms apart), so
//     the Stream's backoff arithmetic is not what is exercised here. (A
//     window of 1 ns made a round with no candidate spin without time
//     passing: a livelock the per-seed wall-clock watchdog reports.)
//   - One client process, one account; no coordination between processes,
//     no DNS, no clock skew between client and broker (they share the
//     bubble's clock).
//   - Fencing tokens: by default the client sends the generation it
//     believes active + 1 (see Options.LibraryToken for why not the
//     library's own).
package dst
