package dst

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/internal/venuepace"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
	"github.com/brokerpath/brokerpath/transports/ws"
	"github.com/brokerpath/brokerpath/venue"
)

const (
	apiKey = "sim-key-0123456789"
	stream = "px.EURUSD"
)

// quarantine covers the longest a copy of an order can be held in the
// simulated network: a blackhole (at most 5 s) then a latency fault (at most
// 1 s), plus margin.
const quarantine = 7 * time.Second

// simQuarantine is the Path's Config.Quarantine: longer than the venue's
// minimum (the simulated broker's lookups have no false-negative horizon, so
// its minimum is MaxCopyHold), as a real venue's is (15 min and more), so
// that the early looks of provisional verdicts (every MaxCopyHold) are
// what reports a late landing, not the quarantine's end.
const simQuarantine = 15 * time.Second

// wsBackoff is the Stream's reconnect window in the simulation: small, and
// not so small that a round with no candidate spins without time passing.
var wsBackoff = ws.Backoff{Base: time.Millisecond, Cap: time.Millisecond}

// Options changes how a scenario runs (not what it is).
type Options struct {
	// ReconcileBudget, when > 0, is how many orders one reconcile attempt
	// may look up before it fails as over the venue's lookup budget, with
	// the answers it has (progress_check.go).
	ReconcileBudget int
	// DropSwitchUnknowns plants a defect for the checker to find: the
	// reconciler silently drops the orders that finished with an unknown
	// outcome after the fence of the endpoint being left began, as if they
	// had slipped between "in flight" and "unknown" while the switch took
	// its tickets (the runtime's unknown-at-switch race). A run with it must
	// fail whenever such an order existed.
	DropSwitchUnknowns bool
	// ResendNotReceived resends an order once, under the same client order
	// ID, when the Path says it may (Path.MayResend, asked whenever a
	// reconcile or re-query settles it NOT_RECEIVED as final). The run then
	// waits a quarantine longer before the checks, so that re-queries and
	// resends happen.
	ResendNotReceived bool
	// ResendNaive resends, once and under the same client order ID, every
	// order any reconcile settled NOT_RECEIVED, provisional or not, without
	// asking the Path: against a broker that does not deduplicate, a late
	// landing then books the order twice (no-duplicate-order has teeth).
	ResendNaive bool
	// LibraryToken sends the library's fencing token (rest.Options.TokenHeader:
	// the ticket's Token) instead of the simulation's own (the active
	// generation + 1, read before the order) in every standalone seed whose
	// broker checks tokens, not only in those that draw Scenario.LibToken.
	LibraryToken bool
	// ExtendOnResume plants a defect in a coordinated scenario's follower:
	// on resuming after its lease expired at the coordinator it extends the
	// Path's decision by an hour instead of halting and re-assigning under a
	// new token. Orders started after the lapse then reach the broker under
	// the lapsed token (no-order-after-lease-lapsed fails).
	ExtendOnResume bool
	// NoExtend plants a defect in a coordinated scenario's follower: it
	// never calls Path.Extend, so the Path's decisions never expire and
	// nothing but the follower's Halt stops orders on a lapsed lease. With
	// Scenario.FollowerLast the traders resume before it halts, and their
	// orders reach the broker under the lapsed token.
	NoExtend bool
	// BrokerIgnoresTokens plants a defect in the broker of a scenario that
	// checks fencing tokens: it accepts every token (TokensOff) while
	// the checker still expects stale tokens rejected. A write paused past
	// Ticket.Valid across a lease lapse is then booked (stale-token-rejected
	// fails).
	BrokerIgnoresTokens bool
	// TraceDetail adds every probe result, and each event's error and
	// cause, to the trace: for finding where two runs of a seed part.
	TraceDetail bool
}

// Stats counts what a run did.
type Stats struct {
	Orders, Acked, Rejected, Unknown, NotSent, Halted int
	Booked, Duplicates, LateLandings, Switches        int
	Settlements, Ticks, Probes, Resends               int
	// Coordinated scenarios: process pauses begun, leases that expired at
	// the coordinator, orders refused with ErrTicketExpired, orders the
	// broker rejected for a stale token, and orders booked on a lapsed
	// lease by a broker that does not check tokens (reported in Notes).
	Pauses, Lapses, Expired, StaleRejected, LapsedBookings int
	// Yields taken at the Path's yield points (builds with -tags dstyield).
	Yields int
	// H2 scenarios: TLS connections the front ends accepted, connections
	// they drained (GOAWAY) and orders the pool replayed (h2sim.go).
	H2Conns, H2Drains, H2Replays int
	// FIX scenarios: orders the broker booked through its FIX door.
	FIXBooked int
	// NotSentJudged: orders the library called not sent, each judged
	// against the broker's audit (notsent_check.go). LibTokens: orders
	// that reached the broker carrying the library's own fencing token
	// (tokens_check.go).
	NotSentJudged, LibTokens int
	// LongRecon scenarios: orders a switch's reconcile settled from the
	// old connection's last report, older than its fence (longrecon.go).
	OldReports int
	// Liveness moves' unknown-outcome faults (movecuts.go): cuts the broker
	// made after their move had ended (none may: a move's end disarms what
	// is left), cuts a move's end disarmed, and cuts left armed because
	// another fault shared the door.
	LateMoveCuts, DisarmedCuts, SkippedCuts int
}

// Result is one run: its trace, what the checker found and the counts.
type Result struct {
	Scenario   Scenario
	Trace      []string // sorted by virtual time, then text: the same seed gives the same lines
	Violations []string // broken invariants; empty is a pass
	Notes      []string // reported, not violations (late landings)
	Stats      Stats
	// Avail: gate-open-while-usable's figure (composed seeds; zero else).
	Avail AvailFigure
}

// TraceText is the trace as one text, one line each.
func (r *Result) TraceText() string { return strings.Join(r.Trace, "\n") + "\n" }

// TraceHash is a 64-bit FNV-1a hash of TraceText.
func (r *Result) TraceHash() uint64 {
	h := fnv.New64a()
	_, _ = io.WriteString(h, r.TraceText())
	return h.Sum64()
}

// orderRec is the client's record of one order.
type orderRec struct {
	id       string
	first    time.Time // first send (a resend keeps it)
	start    time.Time // latest send
	end      time.Time
	outcome  string // acked | rejected | unknown | not-sent | halted
	region   string // acked: the region that answered (X-Region)
	code     int
	errCode  string
	settled  []pathdialer.Fate
	settleAt time.Time // when the latest settlement was made (the event's time)
	// unknownAt: when a reconcile was first handed its ticket as finished
	// unknown (TicketUnknown) since its latest send; zero if never. A FIX
	// order's record ends only when it is answered or the run ends, later
	// than the Path knew it unknown (see finishedUnknownAt).
	unknownAt time.Time
	runEnded  bool // a FIX order never answered: its record was ended by the run's end (fixSim.finish)
	ticketGn  uint64
	settleSq  uint64 // Seq of the first event that settled it (0: none)
	limit     bool
	resent    bool
	// notSent is the library's word that its latest send never reached the
	// broker (rest.Outcome's NotSent, fix.ErrNotSent, a halt, an expired
	// ticket): what it said, for not-sent-never-received; "" otherwise.
	notSent  string
	resentAt time.Time // when the client resent it (late_check.go)
	nrAt     time.Time // the Path's first NOT_RECEIVED verdict of it (its event's time)
	// bookedAt: the first settlement after nrAt saying it is booked (a
	// switch's or settle's reconcile that took it again, late_check.go)
	bookedAt time.Time
	regions  []string // the endpoints (regions) its tickets named: where it was sent
}

// sentThrough adds the endpoint a ticket of o named, for a send before any
// resend (w.mu is held).
func (o *orderRec) sentThrough(endpoint string) {
	if endpoint != "" && !o.resent && !slices.Contains(o.regions, endpoint) {
		o.regions = append(o.regions, endpoint)
	}
}

// world is one run's state.
type world struct {
	yield *yielder // the seed's yield points (builds with -tags dstyield)
	s     Scenario
	o     Options
	start time.Time
	net   *faultnet.MemNetwork
	b     *simbroker.Broker
	path  *pathdialer.Path
	rt    *rest.Transport
	hc    *http.Client // orders and reads through the Path
	dc    *http.Client // direct: probes and the broker's kill switch
	strm  *ws.Stream
	co    *coordinator // coordinated scenarios only
	h2    *h2front     // H2 scenarios only (h2sim.go)
	fx    *fixSim      // FIX scenarios only (fixsim.go)
	lr    longRecon    // LongRecon scenarios' record (longrecon.go)
	lrest *lateRest    // LateRest scenarios only (lateresting.go)

	mu       sync.Mutex
	trace    []tline
	orders   map[string]*orderRec
	fv       finalRecord // final verdicts and resting reports (final_check.go)
	fences   []fenceSpan // the client's fences, by endpoint
	lastSeq  uint64
	ticks    int
	probes   int
	switches int
	wsBad    []string
	wsPaceMu sync.Mutex
	wsNext   time.Time
	releases []release    // EventRelease, in order
	held     *heldAnswers // halt-with-unknown's orders whose answers are held (halthold.go)
	slow     *slowReads   // halt-with-unknown's slow reads (halthold.go)
	resends  sync.WaitGroup
	resendN  int
	cx       composed        // the composed moves' record (composed.go)
	px       []progressEvent // reconcile attempts' kept answers (progress_check.go)
	// late_check.go: the re-queries begun with each order among their
	// tickets, and each order's EventLateLanding.
	looks        map[string][]time.Time
	lateReported map[string]time.Time

	rs *restingSim // resting orders across switches (resting_sim.go)
	// pathDials: every connection the Path's dialer handed out, but
	// lookups' (fenceconn.go).
	pathDials []pathDial

	takeover *proc2       // the second process only: its takeover's lookups (proc2.go)
	race     *releaseRace // MoveReleaseRace, armed (releaserace.go)

	started  time.Time // Start returned (gate-open-while-usable is judged from here)
	healedAt time.Time // healAll
	stallMu  sync.Mutex
	stallEnd time.Time // MoveStall: the client's hook points wait until then
}

type release struct {
	seq, gen uint64
	at       time.Time
}

type tline struct {
	at   time.Duration
	text string
}

type fenceSpan struct {
	endpoint   string
	start, end time.Time // end zero: still fenced
}

func (w *world) tracef(at time.Time, format string, a ...any) {
	w.mu.Lock()
	w.trace = append(w.trace, tline{at: at.Sub(w.start), text: fmt.Sprintf(format, a...)})
	w.mu.Unlock()
}

func addr(region string, svc simbroker.Service) string {
	return fmt.Sprintf("%s.%s.sim:80", region, svc)
}

// Run runs scenario s and checks it. It must be called inside a
// testing/synctest bubble (synctest.Test): it starts the broker, the Path,
// the REST transport and the WebSocket stream over an in-memory network,
// drives the load and the faults in virtual time, stops everything, and
// returns the checked Result. err is for a world that could not be built.
func Run(s Scenario, o Options) (*Result, error) {
	w := &world{s: s, o: o, start: time.Now(), net: faultnet.NewMemNetwork(s.Seed, s.BaseLatency), orders: map[string]*orderRec{}}
	// Plain HTTP bytes are deterministic; WebSocket client frames are masked
	// with random keys, so ws chunks draw by connection (ws dials are paced
	// one at a time, so their connection numbers are deterministic).
	// TLS bytes (H2 seeds) are random too: they draw by connection.
	w.net.SetBaseJitter(s.BaseLatency, func(a string) bool { return !strings.Contains(a, ".ws.") && !strings.Contains(a, ".h2.") })
	w.net.SetTimeKeyed(func(a string) bool { return strings.Contains(a, ".h2.") })
	if err := w.build(); err != nil {
		w.close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	startCtx := ctx
	for _, m := range s.Moves {
		if m.Kind == MoveStartCut {
			// Start's context ends during the first probe round.
			// Cancelled, not a deadline: the probes' own deadlines (see
			// ownDeadline) would otherwise end them just before it.
			var stop context.CancelFunc
			startCtx, stop = context.WithCancel(ctx)
			tm := time.AfterFunc(m.For, stop)
			defer tm.Stop()
			defer stop()
		}
	}
	if err := w.path.Start(startCtx); err != nil && startCtx == ctx {
		w.close()
		return nil, fmt.Errorf("dst: path start: %w", err)
	} else if err != nil {
		w.tracef(time.Now(), "path start: %v", err)
	}
	w.started = time.Now()
	if s.Coordinated {
		w.co = newCoordinator(w)
		if err := w.co.start(); err != nil {
			w.co.close()
			w.close()
			return nil, err
		}
	}
	if err := w.strm.Start(ctx); err != nil {
		w.co.close()
		w.close()
		return nil, fmt.Errorf("dst: stream start: %w", err)
	}
	var wg sync.WaitGroup
	for _, f := range s.Faults {
		wg.Add(1)
		go func() { defer wg.Done(); w.runFault(f) }()
	}
	for _, m := range s.Moves {
		wg.Add(1)
		go func() { defer wg.Done(); w.runMove(m) }()
	}
	for i := 0; i < s.Traders; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); w.trade(i) }()
	}
	w.startResting(&wg, w.start.Add(s.Duration)) // resting_sim.go
	w.startLateRest(&wg)                         // lateresting.go
	wg.Wait()
	w.healAll()
	time.Sleep(s.Quiet)
	// Let the re-queries report the late landings the book shows and (with
	// resends) the quarantine of the last provisional verdicts end, their
	// re-queries run and the resends they allow land (late_check.go).
	w.settleLate()
	w.resends.Wait()
	w.co.close()
	w.fx.finish() // fixsim.go
	res := w.check()
	w.close()
	res.Stats.Yields = w.yields()
	return res, nil
}

func (w *world) build() error {
	s := w.s
	bc := simbroker.DefaultConfig()
	bc.Regions = append([]string(nil), s.Regions...)
	bc.APIKey = apiKey
	bc.Streams = []string{stream}
	bc.TickInterval = s.TickEvery
	bc.PingInterval = time.Second
	bc.HandshakesPerSecond = 0
	bc.Dedup, bc.Fence, bc.Tokens = s.Dedup, s.Fence, s.Tokens
	if w.o.BrokerIgnoresTokens {
		bc.Tokens = simbroker.TokensOff // the planted defect (see Options)
	}
	bc.Seed = s.Seed
	bc.PlainHTTP = true
	bc.Listen = func(region string, svc simbroker.Service) (net.Listener, error) {
		return w.net.Listen(addr(region, svc))
	}
	w.fixBrokerConfig(&bc) // fixsim.go
	var err error
	if w.b, err = simbroker.Start(context.Background(), bc); err != nil {
		return fmt.Errorf("dst: broker: %w", err)
	}
	w.dc = &http.Client{Transport: &http.Transport{DialContext: w.net.Dial, DisableKeepAlives: true}}
	if err := w.buildH2(); err != nil { // h2sim.go
		return err
	}
	return w.buildClient()
}

// buildClient builds the process's Path, REST transport and stream over
// the broker w.b (the second process of proc2.go builds its own).
func (w *world) buildClient() error {
	s := w.s
	var err error
	pc := pathdialer.DefaultConfig()
	pc.AllowPlaintext = true // the in-memory network carries plain HTTP
	for i, r := range s.Regions {
		rg := w.b.Region(r)
		pc.Endpoints = append(pc.Endpoints, pathdialer.Endpoint{Name: r, Region: r, Priority: i, Primary: i == 0,
			Services: map[string]string{pathdialer.ServiceREST: rg.RESTURL(), "probe": rg.ProbeURL(), pathdialer.ServiceWS: rg.WSURL()}})
		if w.h2 != nil {
			pc.Endpoints[i].Services[h2Service] = "https://" + h2Addr(r)
		}
	}
	if err := w.buildFIX(&pc); err != nil { // fixsim.go
		return err
	}
	pc.Probe = w.probe
	if !s.NoTradePathCheck {
		pc.TradePathCheck = w.tradePathCheck
	}
	pc.ProbeInterval, pc.ProbeTimeout, pc.ProbeJitter = s.ProbeInterval, s.ProbeTimeout, 0
	pc.Engine.FailureThreshold = s.FailureThreshold
	pc.Engine.MaxHealthAge = s.MaxHealthAge
	pc.Engine.Cooldown = s.Cooldown
	pc.Engine.FailbackSuccessThreshold = s.FailbackSuccess
	// A failback given up (its dead-man arm or identity re-proof failed, or
	// its fence) is tried again on the run's scale: Cooldown, doubling.
	pc.FailbackBackoff = pathdialer.Backoff{Initial: s.Cooldown, Max: 8 * s.Cooldown}
	pc.Engine.FlapLimit = 50
	pc.Fencer = pathdialer.LocalFenceOnly
	if s.Fence == simbroker.FenceEnforced {
		pc.Fencer = w.fence(true)
		pc.Unfence = w.fence(false)
	}
	for _, m := range s.Moves {
		if m.Kind == MoveHaltSwitch {
			// The kill switch for a dying region hangs for m.Lead (or
			// until the Path gives up on it).
			inner := pc.Fencer
			pc.Fencer = func(ctx context.Context, f pathdialer.Fence) error {
				if w.armedNow(f.Endpoint.Region, spanFenceHang) {
					t := time.NewTimer(m.Lead)
					select {
					case <-t.C:
					case <-ctx.Done():
						t.Stop()
						return fmt.Errorf("kill switch %s: no answer: %w", f.Endpoint.Region, ctx.Err())
					}
				}
				return inner(ctx, f)
			}
		}
	}
	pc.Fencer = w.recordFences(pc.Fencer)
	pc.FenceTimeout = time.Second
	pc.FenceBackoff = pathdialer.Backoff{Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond}
	pc.ReconcileTimeout = 2 * time.Second
	if s.ReconcileTimeout > 0 {
		pc.ReconcileTimeout = s.ReconcileTimeout
	}
	if s.Has(MoveStartCut) {
		pc.StartWait = 0 // Start opens the gate after its (cut) first round
	}
	if s.Identity {
		pc.Identity = w.identity
		pc.ExpectedIdentity = pathdialer.Identity{Account: simbroker.DefaultConfig().AccountID}
		pc.IdentityInterval = s.IdentityInterval
		pc.IdentityTimeout = s.ProbeTimeout
	}
	pc.ReconcileBackoff = pathdialer.Backoff{Initial: 100 * time.Millisecond, Max: 500 * time.Millisecond}
	pc.Reconcile = w.reconcile
	// The sim's Fencer is the broker's kill switch when the broker enforces
	// fences: a NOT_RECEIVED through a fenced region is then final at once.
	pc.BrokerFencesViaFencer = s.Fence == simbroker.FenceEnforced
	pc.Quarantine = simQuarantine
	pc.Venue, pc.MaxCopyHold = simVenue(s), quarantine
	pc.InflightGrace = s.InflightGrace
	pc.SettleUnknown = s.SettleUnknown
	pc.Dial = w.dial
	pc.OnEvent = w.onEvent
	// A coordinated Path is driven by the simulated coordinator (coord.go).
	pc.ExternalDecisions = s.Coordinated
	w.buildResting(&pc) // resting_sim.go: last, it wraps the hooks
	if w.path, err = pathdialer.New(pc); err != nil {
		return fmt.Errorf("dst: path: %w", err)
	}
	if s.NoTradePathCheck && !s.NoCheckAtAll {
		// What a quick start has: the REST Reconciler given its transport
		// with SendLookupsVia offers the Path its trade-path check.
		w.path.OfferTradePathCheck("rest.Reconciler", w.offeredTradePathCheck(venuepace.New(pc.Venue)))
	}
	w.installYield() // seeded yield points (builds with -tags dstyield)
	ro := rest.Options{Hosts: []string{"broker.invalid"}}
	if w.libToken() {
		// The library's fencing token: each order carries the generation
		// its ticket was granted under (tokens_check.go).
		ro.TokenHeader = simbroker.TokenHeader
	}
	if s.Coordinated {
		// Each order carries the coordinator's token its ticket was granted
		// under, whatever the broker's policy (the audit records it).
		ro.TokenHeader = simbroker.TokenHeader
	}
	if w.rt, err = rest.NewTransport(w.path, ro); err != nil {
		return fmt.Errorf("dst: rest transport: %w", err)
	}
	w.hc = &http.Client{Transport: w.rt}
	if err := w.h2.startClient(); err != nil {
		return err
	}
	if err := w.fx.startClient(); err != nil { // fixsim.go
		return err
	}
	sc := ws.DefaultStreamConfig()
	sc.Streams = []string{stream}
	sc.Handler = w.onTick
	sc.Dialer = &websocket.Dialer{HandshakeTimeout: time.Second}
	sc.Header = http.Header{"X-API-Key": {apiKey}}
	// The Stream's full-jitter draw comes from the seed (wsRand); its window
	// stays below the dial grid of StreamPaced (see dial), which paces the
	// dials.
	sc.Backoff = wsBackoff
	sc.Rand = w.wsRand()
	sc.FailuresBeforeFallback = 1
	sc.DialTimeout = time.Second
	sc.PingInterval, sc.PongTimeout = 500*time.Millisecond, 500*time.Millisecond
	sc.MigrateTimeout = 2 * time.Second
	sc.MaxRetryAfter = 2 * time.Second
	if w.strm, err = ws.NewStream(w.path, sc); err != nil {
		return fmt.Errorf("dst: stream: %w", err)
	}
	return nil
}

// wsRand is the Stream's full-jitter source, seeded by the scenario: the
// process's own source would move WebSocket dials (and the handshake
// deadlines that start with them) by a draw no seed controls.
func (w *world) wsRand() func() float64 {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(w.s.Seed, 0x5eed5eed))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}

// dial is the Path's dialer: the in-memory network, with WebSocket dials
// paced by the scenario (see build).
func (w *world) dial(ctx context.Context, network, a string) (net.Conn, error) {
	if strings.Contains(a, ".ws.") && ctx.Value(sessionKey{}) == nil { // the resting session dials on its own grid
		// WebSocket dials happen on a grid of StreamPaced from the start,
		// at most one per point: the Stream's random wait before a round
		// (under wsBackoff, below the grid step) is absorbed, so when the
		// dial happens does not depend on the draw.
		w.wsPaceMu.Lock()
		now := time.Now()
		p := w.s.StreamPaced
		k := now.Sub(w.start)/p + 1
		at := w.start.Add(k * p)
		if !at.After(w.wsNext) {
			at = w.wsNext.Add(p)
		}
		w.wsNext = at
		w.wsPaceMu.Unlock()
		t := time.NewTimer(at.Sub(now))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	id, _ := ctx.Value(orderKey{}).(string)
	name := id
	if name == "" {
		name = a
		if ctx.Value(sessionKey{}) != nil {
			name = "resting session " + a // resumes from a pause in a slot of its own, not with the stream's dial
		}
	}
	acq := time.Now() // the ticket was granted here, before a pause's wait
	w.co.wait(resumeDial, name)
	w.stallWait(resumeDial, name)
	if id != "" && strings.Contains(a, ".rest.") {
		// The order's ticket was granted at this instant (the transport
		// dials right after Acquire): the grant's record.
		w.mu.Lock()
		w.cx.grants = append(w.cx.grants, grantRec{id: id, endpoint: a[:strings.Index(a, ".")], at: time.Now(), acq: acq})
		w.mu.Unlock()
		if w.armedNow(a[:strings.Index(a, ".")], spanDialHang) {
			// A dying region (MoveHaltSwitch): the dial gets no answer
			// until the order's deadline; the order stays in flight.
			<-ctx.Done()
			return nil, fmt.Errorf("dial %s: no answer: %w", a, ctx.Err())
		}
	}
	if ctx.Value(lookupKey{}) != nil && strings.Contains(a, ".rest.") && w.armedNow(a[:strings.Index(a, ".")], spanLookup) {
		return answer503(), nil // MoveLookup5xx: the region's order lookups answer 503
	}
	c, err := w.net.Dial(ctx, network, a)
	if err == nil {
		w.notePathDial(ctx, c, a) // fenceconn.go
	}
	if err == nil && id != "" {
		if strings.Contains(a, ".rest.") {
			c = w.holdConn(w.trackConn(c, id, a[:strings.Index(a, ".")]), id) // halthold.go
		}
		w.co.inWrite(id) // the order's ticket passed Valid; its bytes not yet written
	}
	return c, err
}

// ownDeadline gives a probe (or trade-path check) of ep its own deadline,
// a few microseconds before the one the Path gave it, different for every
// endpoint (salt tells the probe from the check): the Path times out the
// probes of one round at one virtual instant, and which endpoint's timeout
// it would record first is the scheduler's choice. A probe that gives up
// before its deadline is a user's choice (an inner timeout); the Path
// records its error as it comes, one endpoint after another.
func ownDeadline(ctx context.Context, ep pathdialer.Endpoint, salt int) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	off := time.Duration(2*(ep.Priority*2+salt)+1) * 1777 * time.Nanosecond
	return context.WithDeadline(ctx, dl.Add(-off))
}

func (w *world) probe(ctx context.Context, ep pathdialer.Endpoint) error {
	w.co.wait(resumeProbe, ep.Name+"/probe")
	w.stallWait(resumeProbe, ep.Name+"/probe")
	ctx, cancel := ownDeadline(ctx, ep, 0)
	defer cancel()
	if w.s.Has(MoveStartCut) && time.Since(w.start) < w.s.ProbeTimeout {
		// The first round's probes finish their round trip although their
		// context ends (a probe slow to notice): bounded by the deadline only.
		dl, _ := ctx.Deadline()
		var c2 context.CancelFunc
		ctx, c2 = context.WithDeadline(context.WithoutCancel(ctx), dl)
		defer c2()
	}
	rec := probeRec{endpoint: ep.Name, start: time.Now()}
	defer func() {
		rec.end = time.Now()
		w.mu.Lock()
		w.cx.probes = append(w.cx.probes, rec)
		w.mu.Unlock()
	}()
	u, _ := ep.Address("probe")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/v1/account", nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", apiKey)
	resp, err := w.dc.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", ep.Name, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: HTTP %d", ep.Name, resp.StatusCode)
	}
	rec.ok = true
	if w.s.Has(MoveStartCut) && rec.start.Sub(w.start) < w.s.ProbeTimeout {
		// A slow first round: the answer is delivered at the last moment.
		<-ctx.Done()
		rec.end = time.Now()
	}
	return nil
}

// beginCheck starts a trade-path check of ep (Config.TradePathCheck's or the
// offered one): it waits where a paused or stalled process would, and gives
// the check its own deadline; done records its answer with the others
// (ground.go) and ends the deadline.
func (w *world) beginCheck(ctx context.Context, ep pathdialer.Endpoint) (context.Context, func(error)) {
	w.co.wait(resumeProbe, ep.Name+"/trade-path")
	w.stallWait(resumeProbe, ep.Name+"/trade-path")
	began := time.Now()
	ctx, cancel := ownDeadline(ctx, ep, 1)
	return ctx, func(err error) {
		cancel()
		w.mu.Lock()
		w.cx.checks = append(w.cx.checks, probeRec{endpoint: ep.Name, start: began, end: time.Now(), ok: err == nil})
		w.mu.Unlock()
	}
}

// tradePathCheck is the Path's trade-path check: an authenticated
// order-status query, through the endpoint's REST address, of a client order
// ID that was never sent. It passes on the broker's 404 (the order path
// authenticated, routed and answered) and fails on anything else.
func (w *world) tradePathCheck(ctx context.Context, ep pathdialer.Endpoint) (err error) {
	ctx, done := w.beginCheck(ctx, ep)
	defer func() { done(err) }()
	u, _ := ep.Address(pathdialer.ServiceREST)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/v1/orders/dst-trade-path-check", nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", apiKey)
	resp, err := w.dc.Do(req)
	if err != nil {
		return fmt.Errorf("trade-path check %s: %w", ep.Name, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		return fmt.Errorf("trade-path check %s: HTTP %d, want 404", ep.Name, resp.StatusCode)
	}
	if w.armedNow(ep.Region, spanGray) {
		// A gray failure: the order path is broken while status reads and
		// the probe pass (a check that exercises the order path fails).
		return fmt.Errorf("trade-path check %s: the order path fails", ep.Name)
	}
	return nil
}

// offeredTradePathCheck is, in seeds with no Config.TradePathCheck, the
// check rest.Reconciler offers the Path from SendLookupsVia (the quick
// start's), made as that check makes it: paced by the venue's lookup budget
// (the bucket lb), one lookup of rest.TradePathOrderID, an order ID never
// sent, through the endpoint checked on a fresh read-only connection of the
// Path (Path.DialReadOnly), bounded by the Path's context only. An answer
// that settles the order ID passes: the broker's 404, or 200 with an order.
// Anything else fails: another status (a 5xx, a refusal), no answer, a
// timeout. It is a lookup like the reconcile's (MoveLookup5xx's 503s reach
// it), and it does not see a gray failure that breaks only order
// submission (MoveGray: the broker's Partial fault answers reads): that is
// what a user of the offered check has. The check's answers are recorded
// with the probes' (ground.go), as Config.TradePathCheck's are.
func (w *world) offeredTradePathCheck(lb *venuepace.Bucket) pathdialer.ProbeFunc {
	return func(ctx context.Context, ep pathdialer.Endpoint) (err error) {
		ctx, done := w.beginCheck(ctx, ep)
		defer func() { done(err) }()
		if err := lb.Wait(ctx); err != nil {
			return fmt.Errorf("trade-path check %s: the venue's lookup budget leaves no room for it: %w", ep.Name, err)
		}
		u, _ := ep.Address(pathdialer.ServiceREST)
		req, err := http.NewRequestWithContext(context.WithValue(ctx, lookupKey{}, rest.TradePathOrderID), http.MethodGet, u+"/v1/orders/"+url.PathEscape(rest.TradePathOrderID), nil)
		if err != nil {
			return err
		}
		req.Header.Set("X-API-Key", apiKey)
		tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return w.path.DialReadOnly(ctx, ep.Name, network, addr)
		}}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			return fmt.Errorf("trade-path check %s: the lookup failed: %w", ep.Name, err)
		}
		raw, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		switch {
		case rerr != nil:
			return fmt.Errorf("trade-path check %s: reading the answer: %w", ep.Name, rerr)
		case resp.StatusCode == http.StatusNotFound:
			return nil
		case resp.StatusCode == http.StatusOK:
			var o simbroker.Order
			if json.Unmarshal(raw, &o) != nil || o.Status == "" {
				return fmt.Errorf("trade-path check %s: the lookup's answer is not an order", ep.Name)
			}
			return nil
		}
		return fmt.Errorf("trade-path check %s: the lookup answered HTTP %d", ep.Name, resp.StatusCode)
	}
}

// fence returns the Fencer (on) or Unfence that calls the broker's kill
// switch through the target endpoint's REST address (the old one may be
// unreachable).
func (w *world) fence(on bool) pathdialer.FenceFunc {
	verb := "unfence"
	if on {
		verb = "fence"
	}
	return func(ctx context.Context, f pathdialer.Fence) error {
		via := f.To
		if !on || via == "" {
			via = f.Endpoint.Name
		}
		body, _ := json.Marshal(map[string]string{"region": f.Endpoint.Region})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.b.Region(via).RESTURL()+"/v1/account/"+verb, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("X-API-Key", apiKey)
		resp, err := w.dc.Do(req)
		if err != nil {
			return fmt.Errorf("kill switch %s %s via %s: %w", verb, f.Endpoint.Region, via, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("kill switch %s %s via %s: HTTP %d", verb, f.Endpoint.Region, via, resp.StatusCode)
		}
		return nil
	}
}

// finishedDuringFence reports whether the order finished (unknown) after
// the fence of endpoint began: the window of the unknown-at-switch race.
func (w *world) finishedDuringFence(id, endpoint string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := w.orders[id]
	if o == nil || o.end.IsZero() {
		return false
	}
	for i := len(w.fences) - 1; i >= 0; i-- {
		if f := w.fences[i]; f.endpoint == endpoint {
			return !o.end.Before(f.start)
		}
	}
	return false
}

// reconcile settles REST tickets by reading the order through the Path.
func (w *world) reconcile(ctx context.Context, r pathdialer.Reconciliation) (out []pathdialer.Settlement, err error) {
	defer w.noteHookAnswers(ctx, r, &out, &err) // progress_check.go
	defer w.raceRelease(ctx, r, &err)           // MoveReleaseRace (releaserace.go)
	w.fx.noteHanded(r)                          // fixhanded.go
	w.co.wait(resumeReconcile, "reconcile "+r.From+"->"+r.To)
	w.stallWait(resumeReconcile, "reconcile "+r.From+"->"+r.To)
	if err := w.takeover.lookups(ctx); err != nil { // proc2.go: the predecessor's orders first
		return nil, err
	}
	if to, ok := w.path.Endpoint(r.To); ok && w.armedNow(to.Region, spanHang) {
		// A dying region: the reads through it hang until the Reconciler's
		// context ends.
		<-ctx.Done()
		return nil, fmt.Errorf("reconcile through %s: reads hang: %w", r.To, ctx.Err())
	}
	// The Path hands tickets over in no particular order (its gate keeps
	// them in shards picked at random); query them in order of client order
	// ID, so that when each read happens does not depend on that order.
	stale, tickets, err := w.logonWait(ctx, r) // longrecon.go: a long FIX-like reconcile
	if err != nil {
		return nil, err
	}
	out = stale
	tickets = slices.Clone(tickets)
	slices.SortFunc(tickets, func(a, b pathdialer.TicketInfo) int { return strings.Compare(a.OrderID, b.OrderID) })
	for _, t := range tickets {
		if w.overBudget(len(out)) {
			return out, errLookupBudget
		}
		if w.o.DropSwitchUnknowns && t.State == pathdialer.TicketUnknown && w.finishedDuringFence(t.OrderID, r.From) {
			continue // the planted defect: this order missed the switch's reconcile
		}
		req, err := http.NewRequestWithContext(context.WithValue(ctx, lookupKey{}, t.OrderID), http.MethodGet, "http://broker.invalid/v1/orders/"+url.PathEscape(t.OrderID), nil)
		if err != nil {
			return out, err
		}
		req.Header.Set("X-API-Key", apiKey)
		req.Close = true // leave no idle connection for an order to race for
		resp, err := w.hc.Do(req)
		if err != nil {
			return out, fmt.Errorf("reconcile %s: %w", t.OrderID, err)
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			var o simbroker.Order
			if err := json.Unmarshal(raw, &o); err != nil {
				return out, fmt.Errorf("reconcile %s: %w", t.OrderID, err)
			}
			fate := pathdialer.FateUndetermined
			switch o.Status {
			case simbroker.StatusFilled:
				fate = pathdialer.FateFilled
			case simbroker.StatusNew:
				fate = pathdialer.FateResting
			case simbroker.StatusCanceled:
				fate = pathdialer.FateCanceled
			}
			out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: fate, Detail: o.Region})
		case http.StatusNotFound:
			out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: pathdialer.FateNotReceived})
		default:
			return out, fmt.Errorf("reconcile %s: HTTP %d", t.OrderID, resp.StatusCode)
		}
		if to, ok := w.path.Endpoint(r.To); ok {
			if d := w.slowAfter(to.Region, t); d > 0 { // halthold.go
				tm := time.NewTimer(d)
				select {
				case <-tm.C:
				case <-ctx.Done():
					tm.Stop()
					return out, fmt.Errorf("reconcile through %s: a slow read: %w", r.To, ctx.Err())
				}
			}
		}
	}
	return out, nil
}

func (w *world) onEvent(ev pathdialer.Event) {
	w.recordEvent(ev)
	w.noteProgress(ev)
	w.fv.note(ev) // final_check.go
	switch ev.Kind {
	case pathdialer.EventProbe:
		w.mu.Lock()
		w.probes++
		w.mu.Unlock()
		if w.o.TraceDetail {
			w.tracef(ev.Time, "path probe %s err=%v", ev.Endpoint, ev.Err)
		}
		return
	case pathdialer.EventFenceStart:
		w.mu.Lock()
		open := false
		for _, f := range w.fences {
			open = open || (f.endpoint == ev.Endpoint && f.end.IsZero())
		}
		if !open {
			w.fences = append(w.fences, fenceSpan{endpoint: ev.Endpoint, start: ev.Time})
		}
		w.mu.Unlock()
	case pathdialer.EventRelease:
		w.mu.Lock()
		w.releases = append(w.releases, release{seq: ev.Seq, gen: ev.Token, at: ev.Time})
		w.releaseHeld(ev.Time) // halthold.go
		w.mu.Unlock()
	case pathdialer.EventSwitch, pathdialer.EventUnfence:
		to := ev.To
		if ev.Kind == pathdialer.EventUnfence {
			to = ev.Endpoint
		}
		w.mu.Lock()
		if ev.Kind == pathdialer.EventSwitch {
			w.switches++
		}
		for i := range w.fences {
			if w.fences[i].endpoint == to && w.fences[i].end.IsZero() {
				w.fences[i].end = ev.Time
			}
		}
		w.mu.Unlock()
	case pathdialer.EventReconcileStart:
		w.mu.Lock()
		for _, t := range ev.Tickets {
			if o := w.orders[t.OrderID]; o != nil && t.State == pathdialer.TicketUnknown && (o.unknownAt.IsZero() || o.unknownAt.Before(o.start)) {
				o.unknownAt = ev.Time
			}
			if o := w.orders[t.OrderID]; o != nil {
				o.sentThrough(t.Endpoint)
			}
			if ev.Cause == pathdialer.ReasonRequery {
				if w.looks == nil {
					w.looks = map[string][]time.Time{}
				}
				w.looks[t.OrderID] = append(w.looks[t.OrderID], ev.Time)
			}
		}
		w.mu.Unlock()
	case pathdialer.EventLateLanding:
		w.mu.Lock()
		if w.lateReported == nil {
			w.lateReported = map[string]time.Time{}
		}
		if _, ok := w.lateReported[ev.OrderID]; !ok {
			w.lateReported[ev.OrderID] = ev.Time
		}
		w.mu.Unlock()
		w.lateRestLanded(ev) // lateresting.go
	case pathdialer.EventReconcileSuccess, pathdialer.EventReconcileFailure: // a failed attempt's answers are kept
		var ask []string
		w.mu.Lock()
		for _, st := range ev.Settlements {
			o := w.orders[st.OrderID]
			if o == nil {
				continue
			}
			o.settled = append(o.settled, st.Fate)
			o.settleAt = ev.Time
			if st.Fate == pathdialer.FateNotReceived && o.nrAt.IsZero() {
				o.nrAt = ev.Time
			}
			if booked := st.Fate == pathdialer.FateFilled || st.Fate == pathdialer.FateResting || st.Fate == pathdialer.FateCanceled; booked && !o.nrAt.IsZero() && o.bookedAt.IsZero() {
				o.bookedAt = ev.Time
			}
			if o.settleSq == 0 {
				o.settleSq = ev.Seq
			}
			if st.Fate != pathdialer.FateNotReceived || o.resent {
				continue
			}
			switch {
			case w.o.ResendNaive:
				w.resendLocked(o, "naive")
			case w.o.ResendNotReceived && st.Final:
				ask = append(ask, o.id)
			}
		}
		w.mu.Unlock()
		for _, id := range ask {
			r, err := w.path.MayResend(id)
			w.mu.Lock()
			if o := w.orders[id]; err == nil && r.Allowed && !o.resent {
				w.resendLocked(o, "may-resend")
			} else {
				w.trace = append(w.trace, tline{at: ev.Time.Sub(w.start), text: fmt.Sprintf("may-resend %s: no (%s)", id, r.Reason)})
			}
			w.mu.Unlock()
		}
	}
	if ev.Kind == pathdialer.EventDecision && ev.Decision != nil {
		switch ev.Decision.Outcome {
		case engine.CooldownActive, engine.PrimaryNotStable:
			// A failback not yet due, announced when the outcome changes:
			// when that is noticed depends on how many evaluations the
			// controller ran at one instant (kicks from several goroutines
			// coalesce), not on anything the Path does. It changes nothing:
			// left out of the trace.
			return
		}
	}
	line := ev.Kind.String()
	if ev.Endpoint != "" {
		line += " " + ev.Endpoint
	}
	if ev.From != "" || ev.To != "" {
		line += " " + ev.From + "->" + ev.To
	}
	switch ev.Kind {
	case pathdialer.EventStateChange:
		line += fmt.Sprintf(" %v->%v", ev.PrevState, ev.State)
	case pathdialer.EventSwitch, pathdialer.EventRelease:
		line += fmt.Sprintf(" gen=%d", ev.Token)
	case pathdialer.EventReconcileStart:
		ids := make([]string, 0, len(ev.Tickets))
		for _, t := range ev.Tickets {
			ids = append(ids, t.OrderID+"/"+t.State.String())
		}
		sort.Strings(ids)
		line += fmt.Sprintf(" %q tickets=%v", ev.Cause, ids)
	case pathdialer.EventReconcileSuccess:
		ss := make([]string, 0, len(ev.Settlements))
		for _, st := range ev.Settlements {
			ss = append(ss, st.OrderID+"="+st.Fate.String())
		}
		sort.Strings(ss)
		line += fmt.Sprintf(" %v", ss)
	}
	if ev.Attempt > 0 {
		line += fmt.Sprintf(" attempt=%d", ev.Attempt)
	}
	if w.o.TraceDetail && ev.Err != nil {
		line += " err=" + ev.Err.Error()
	}
	if w.o.TraceDetail && ev.Cause != "" {
		line += " cause=" + ev.Cause
	}
	w.tracef(ev.Time, "path %s", line)
}

// resendLocked resends o once, under its client order ID; w.mu is held.
func (w *world) resendLocked(o *orderRec, why string) {
	o.resent, o.resentAt = true, time.Now()
	w.resendN++
	w.resends.Add(1)
	w.trace = append(w.trace, tline{at: time.Since(w.start), text: fmt.Sprintf("resend %s (%s)", o.id, why)})
	go func(id string, limit bool) {
		defer w.resends.Done()
		w.place(id, limit)
	}(o.id, o.limit)
}

// onTick checks that ticks arrive once and in order (a snapshot restarts the
// count).
func (w *world) onTick(m ws.Message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ticks++
	if !m.Snapshot && w.lastSeq != 0 && m.Seq != w.lastSeq+1 {
		w.wsBad = append(w.wsBad, fmt.Sprintf("tick %d after %d from %s at %v", m.Seq, w.lastSeq, m.Endpoint, time.Since(w.start)))
	}
	w.lastSeq = m.Seq
}

func (w *world) runFault(f ScheduledFault) {
	if f.BookAfter > 0 {
		// The broker books slowly from BookAfter before the reset (not a
		// fault of the path: not recorded for the composed invariants).
		lead := min(f.BookAfter, f.At)
		time.Sleep(f.At - lead)
		_ = w.b.SetFault(f.Region, simbroker.REST, simbroker.BookingDelay{Delay: f.BookAfter})
		time.Sleep(lead)
	} else {
		time.Sleep(f.At)
	}
	w.tracef(time.Now(), "fault %s", f)
	if f.For == 0 {
		// Reset acts once; unknown outcomes cut the next orders: count them
		// armed for two seconds.
		w.mu.Lock()
		w.cx.spans = append(w.cx.spans, span{region: f.Region, kind: spanOfFault(f.Kind), from: time.Now(), to: time.Now().Add(2 * time.Second), cuts: f.N})
		w.mu.Unlock()
	}
	w.apply(f, false)
	if f.BookAfter > 0 {
		_ = w.b.SetFault(f.Region, simbroker.REST, simbroker.BookingDelay{}) // those already booking go on
	}
	if f.For > 0 {
		un := w.arm(f.Region, spanOfFault(f.Kind))
		time.Sleep(f.For)
		w.tracef(time.Now(), "heal %s on %s", f.Kind, f.Region)
		w.apply(f, true)
		un()
	}
}

func (w *world) apply(f ScheduledFault, heal bool) {
	nf := f.netFault()
	if heal {
		nf = faultnet.None()
	}
	switch f.Kind {
	case FaultUnknown:
		w.brokerFault(f.Region, simbroker.REST, simbroker.UnknownOutcome{N: f.N})
	case FaultPartition:
		w.netFault(addr(f.Region, simbroker.Probe), nf)
	default:
		for _, svc := range []simbroker.Service{simbroker.REST, simbroker.Probe, simbroker.WS} {
			w.netFault(addr(f.Region, svc), nf)
		}
		if w.h2 != nil {
			w.netFault(h2Addr(f.Region), nf)
		}
	}
	w.fx.apply(f, nf) // fixsim.go
}

func (w *world) healAll() {
	for _, r := range w.s.Regions {
		for _, svc := range []simbroker.Service{simbroker.REST, simbroker.Probe, simbroker.WS} {
			w.netFault(addr(r, svc), faultnet.None())
		}
		if w.h2 != nil {
			w.netFault(h2Addr(r), faultnet.None())
		}
		w.brokerFault(r, simbroker.REST, simbroker.None{})
		w.fx.heal(r) // fixsim.go
	}
	w.mu.Lock()
	w.healedAt = time.Now()
	w.mu.Unlock()
	w.tracef(time.Now(), "heal all; quiet for %v", w.s.Quiet)
}

func (w *world) trade(i int) {
	end := w.start.Add(w.s.Duration)
	// Traders are staggered so that no two orders start at one virtual
	// instant: goroutines runnable at the same instant run in an order no
	// seed controls.
	time.Sleep(time.Duration(i)*w.s.OrderEvery/time.Duration(w.s.Traders) + time.Duration(i)*37*time.Microsecond)
	tk := time.NewTicker(w.s.OrderEvery)
	defer tk.Stop()
	for k := 1; ; k++ {
		<-tk.C
		if !time.Now().Before(end) {
			return
		}
		w.placeBy(i, fmt.Sprintf("t%d-%d", i, k), k%w.s.LimitEvery == 0) // fixsim.go
		// An order that took longer than OrderEvery left a tick behind,
		// which would start the next order at the instant this one ended:
		// often the instant the Path acted on its failure (a hold, a
		// fence), where which goroutine runs first is the scheduler's
		// choice. Drop it: orders start on the trader's grid only.
		select {
		case <-tk.C:
		default:
		}
	}
}

func (w *world) place(id string, limit bool) { w.placeWithin(id, limit, w.s.OrderTimeout) }

// placeWithin is place with the order's own timeout.
func (w *world) placeWithin(id string, limit bool, timeout time.Duration) {
	body := map[string]string{"client_order_id": id, "symbol": "EURUSD", "side": "buy", "qty": "1", "type": "market"}
	if limit {
		body["type"], body["price"] = "limit", "0.5"
	}
	raw, _ := json.Marshal(body)
	w.co.wait(resumeTrader, id) // no order starts while the process is paused
	w.stallWait(resumeTrader, id)
	ctx, cancel := w.co.orderContext(timeout, id)
	defer cancel()
	hc, u, pooled := w.orderClient() // h2sim.go
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(raw))
	req.Header.Set("X-API-Key", apiKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Client-Order-ID", id)
	// A connection per order: which of two orders released at one instant
	// gets a pooled connection is a scheduling race no seed controls.
	req.Close = !pooled // a pooled HTTP/2 connection multiplexes: no race for it
	if w.s.Tokens == simbroker.TokensChecked && !w.libToken() {
		// The generation the client believes is active, +1: tokens are
		// positive and a standalone Path starts at generation 0.
		_, gen := w.path.Active()
		req.Header.Set(simbroker.TokenHeader, strconv.FormatUint(gen+1, 10))
	}
	w.mu.Lock()
	rec := w.orders[id]
	if rec == nil {
		rec = &orderRec{id: id, limit: limit, first: time.Now()}
		w.orders[id] = rec
	}
	rec.start = time.Now()
	w.mu.Unlock()
	w.h2.sent(id)
	resp, err := hc.Do(req)
	if v := rest.Outcome(resp, err); v.Order != nil && err == nil {
		// Answered 5xx: handed to reconciliation as unknown.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		resp, err = nil, v.Order
	}
	var answer []byte
	read := func() {
		answer, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}
	if err == nil && pooled {
		// Read before taking w.mu: over HTTP/2 the body is a frame of its
		// own, which a fault can hold after the headers arrived.
		read()
	}
	now := time.Now()
	var line string
	w.mu.Lock()
	rec.end = now
	rec.notSent = ""
	if err != nil && rest.Outcome(nil, err).Kind == rest.NotSent {
		rec.notSent = err.Error() // notsent_check.go judges it against the book
	}
	var uo *rest.UnknownOutcomeError
	switch {
	case errors.As(err, &uo):
		rec.outcome, rec.ticketGn = "unknown", uo.Token
		rec.sentThrough(uo.Endpoint)
		line = fmt.Sprintf("order %s unknown on %s gen=%d", id, uo.Endpoint, uo.Token)
	case errors.Is(err, pathdialer.ErrTradingHalted):
		rec.outcome = "halted"
	case errors.Is(err, pathdialer.ErrTicketExpired):
		rec.outcome = "expired"
	case err != nil:
		rec.outcome = "not-sent"
	default:
		if !pooled {
			read() // HTTP/1: the body came with the headers
		}
		rec.code = resp.StatusCode
		rec.region = resp.Header.Get("X-Region")
		if resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK {
			rec.outcome = "acked"
			// Where the order is booked is the order's region, not the
			// region that answered: a repeat answered 200 by us may name an
			// order booked through eu.
			var o simbroker.Order
			if json.Unmarshal(answer, &o) == nil && o.Region != "" {
				rec.region = o.Region
			}
			if o.FencingToken > 0 { // the token it was placed under (resting_sim.go)
				rec.ticketGn = o.FencingToken
			}
		} else {
			rec.outcome = "rejected"
			var e struct{ Code string }
			_ = json.Unmarshal(answer, &e)
			rec.errCode = e.Code
		}
		line = fmt.Sprintf("order %s %s %d %s %s", id, rec.outcome, rec.code, rec.region, rec.errCode)
	}
	if line == "" {
		line = fmt.Sprintf("order %s %s", id, rec.outcome)
	}
	w.mu.Unlock()
	w.tracef(now, "%s (sent at +%v)", line, rec.start.Sub(w.start))
}

func (w *world) close() {
	w.fx.close()      // fixsim.go: logs out before the Path and the broker go
	w.co.closeProc2() // proc2.go
	if w.strm != nil {
		_ = w.strm.Close()
	}
	if w.path != nil {
		_ = w.path.Close()
		w.removeYield()
	}
	if w.rt != nil {
		w.rt.CloseIdleConnections()
	}
	w.h2.close()
	if w.b != nil {
		_ = w.b.Close()
	}
	if w.dc != nil {
		w.dc.CloseIdleConnections()
	}
}

// simVenue is the simulated broker's profile under the scenario's policies.
func simVenue(s Scenario) venue.Profile { return simbroker.Profile(s.Dedup, s.Fence, s.Tokens) }
