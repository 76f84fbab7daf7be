package orderflow

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// The invariants CheckHistory checks, by number. Every violation names its
// invariant as "I<n>".
const (
	InvNoDuplicate  = 1  // no client order ID booked twice (the broker's book)
	InvNoLoss       = 2  // every order sent was answered or settled; every acknowledgement booked
	InvOneLivePath  = 3  // no order granted on a region after its fence began was booked there
	InvLateLandings = 4  // every late landing reported, none after a final NOT_RECEIVED
	InvClientBook   = 5  // the client's record of whether and where an order was booked matches the book
	InvRepeats      = 6  // every repeated submission is a re-send the client made; none replayed
	InvHalt         = 7  // halt exactly when no target is eligible
	InvStream       = 8  // every price once and in order, none missed
	InvFIXSeq       = 9  // FIX sequence numbers continuous
	InvScenario     = 10 // the scenario's expectations (failover, failback, halt)
	InvReconcile    = 11 // no order of a service reached the broker on the new endpoint before the reconcile's lookups were answered
	InvHeldGrant    = 12 // no order granted while its service's submissions were held (the client's record of its attempts)
	InvFenceFirst   = 13 // no switch before the broker's kill switch for the region being left answered (the broker's audit)
	InvFailback     = 14 // no failback within Cooldown of the failure injected on the primary, nor before it could answer FailbackSuccessThreshold probes since it healed
	InvHandedOver   = 15 // every order begun before a switch or resume and finished unknown before the release is among its reconciled orders (the client's record against the reconciles' orders)
	InvFenceCloses  = 16 // the local fence closes the client's order connections to the region (the network's record)
	// InvRestingReported: every resting order the broker cancelled by itself
	// (cancel-on-disconnect, dead-man) before the last release was reported.
	InvRestingReported = 17
	// InvDeadMan: an armed dead-man timer protected the account throughout
	// the window the client needed one.
	InvDeadMan = 18
)

// invLast is the highest invariant number.
const invLast = InvDeadMan

// relayLag is how late after the client's write the network may note
// bytes as having left (a relay's read of its socket on a loaded host):
// bytes noted this long after a confirmed fence were written after it.
const relayLag = 200 * time.Millisecond

var invariantNames = map[int]string{
	InvNoDuplicate:     "no order booked twice (broker's book: two bookings of one client order ID)",
	InvNoLoss:          "no order lost (every order sent answered or settled; every acknowledged order booked)",
	InvOneLivePath:     "never two live paths (no order sent to a region after its hold began, or on a connection its fence should have closed, was booked there)",
	InvLateLandings:    "late landings (sent before a fence, booked after it) reported, none after a final NOT_RECEIVED",
	InvClientBook:      "the client's record of whether and where each order was booked matches the broker's book",
	InvRepeats:         "repeated submissions are re-sends the client made, never replays or automatic retries",
	InvHalt:            "halt when no target is eligible, and otherwise only for a named cause (a reconcile that cannot complete, a dead-man timer that cannot be armed on the target)",
	InvStream:          "every price once and in order, none missed",
	InvFIXSeq:          "FIX sequence numbers continuous",
	InvScenario:        "the scenario's expectations (failover, failback, halt)",
	InvReconcile:       "reconcile before release (no order of a service reached the broker on the new endpoint before the broker had answered the reconcile's lookups of that service's orders)",
	InvHeldGrant:       "no order granted while its service's submissions were held (an attempt begun after a hold that was answered, refused as fenced or booked before the release)",
	InvFenceFirst:      "no switch before the broker's kill switch for the region being left had answered (the broker's record of its fence)",
	InvFailback:        "no failback within Cooldown of the failure injected on the primary, nor before the primary could have answered FailbackSuccessThreshold probes since that failure healed",
	InvHandedOver:      "every REST order begun before a switch (or a resume after a halt) that the client saw finish unknown before flow was released is among that switch's reconciled orders",
	InvFenceCloses:     "the local fence closes the client's order connections (REST, FIX) to the region being left (the network's record of each connection)",
	InvRestingReported: "no resting order cancelled by a switch goes unreported (every cancel the broker made by itself — cancel-on-disconnect, dead-man — reported by an open-order reconcile)",
	InvDeadMan:         "no dead-man gap (an armed timer protected the account throughout the window the client needed one)",
}

// InvariantName returns the text of invariant n.
func InvariantName(n int) string { return invariantNames[n] }

// Invariant is one invariant's result in a Summary.
type Invariant struct {
	ID   int
	Name string
	// Checked is false when the history lacks what the check needs
	// (NotChecked says what: no broker audit, no stream, no FIX session).
	Checked    bool
	NotChecked string
	// Violations counts the violations of this invariant; Inconclusive the
	// orders it could not judge on a host too starved to judge (starved.go).
	Violations, Inconclusive int
}

// Finding is one violation: its invariant, the order it is about (if any)
// and the sentence that explains it.
type Finding struct {
	Invariant int
	Order     string
	Text      string
}

// String renders "I3 TWO LIVE PATHS: ...".
func (f Finding) String() string { return fmt.Sprintf("I%d %s", f.Invariant, f.Text) }

// LateLanding is an order sent before a region's fence began and booked
// through that region after: bytes already in the network when the fence
// began, delivered later. It is safe only when the library says so: the
// order's fate was reported (a verdict that it is booked) and it was never
// called a final NOT_RECEIVED before it landed.
type LateLanding struct {
	Order    string
	Region   string
	Service  string
	SentAt   time.Duration // latest attempt begun before the fence (since the start)
	FenceAt  time.Duration // the fence of Region began
	BookedAt time.Duration
	// Reported: the library (reconcile, a re-query, a late-landing report) or
	// the broker's answer told the client the order is booked.
	Reported bool
	// AfterFinal: the library had called the order NOT_RECEIVED, final,
	// before it landed (a violation whatever happened next).
	AfterFinal bool
	// ReportedAt: the first verdict after the booking that says it is
	// booked (since the start); 0 when none came after it (the broker's own
	// answer, or an earlier verdict, told the client; or nothing did).
	ReportedAt time.Duration
}

// TransportSummary counts one transport's orders.
type TransportSummary struct {
	Transport string
	// Placed: orders the application placed; Sent: those that left (or may
	// have left); NotSent: never left (refused at once by a halt, held past
	// their deadline, no session on the ticket's endpoint).
	Placed, Sent, NotSent int
	// NotSentWhy counts NotSent orders by their reason.
	NotSentWhy map[string]int
	// Acked: accepted by the broker; Rejected: answered with a rejection;
	// Unknown: an attempt ended with an unknown outcome (handed to
	// reconciliation: see Reconciled for what became of them).
	Acked, Rejected, Unknown int
	// Reconciled counts settlements by fate (FILLED, RESTING, NOT_RECEIVED...);
	// Provisional counts NOT_RECEIVED verdicts that were provisional.
	Reconciled  map[string]int
	Provisional int
	// ProvisionalLanded: orders with a provisional NOT_RECEIVED verdict that
	// were booked after all through the fenced region (late landings).
	ProvisionalLanded int
	// Resent: orders sent again (same ID) after a NOT_RECEIVED settlement.
	Resent int
	// Duplicated: orders the broker booked more than once (must be 0).
	// Repeats: client order IDs submitted more than once (re-sends, refused
	// re-sends: not bookings); RepeatsResent: those of them re-sent with the
	// same ID after a NOT_RECEIVED verdict.
	Duplicated, Repeats, RepeatsResent int
	// Lost: sent, never answered, never settled (must be 0). Inconclusive:
	// sent, not answered nor settled yet when the run ended, on a host too
	// starved to judge (starved.go): neither lost nor known safe.
	Lost, Inconclusive int
	// AckedBy counts answers per endpoint.
	AckedBy map[string]int
	// FirstAckOnBackup: from the fault to the first answer from the backup
	// endpoint (-1: none).
	FirstAckOnBackup time.Duration
}

// SwitchSummary is one switch.
type SwitchSummary struct {
	At       time.Duration // since the timeline start
	From, To string
	Failback bool
	// FenceBegan and FenceDone are when the old endpoint's fence began and
	// completed (since the start); both equal At when the broker fences.
	FenceBegan, FenceDone time.Duration
	// Held is how long submissions were held until released on To (from the
	// hold to the release of the last service; -1: never released);
	// Reconcile how long the reconcile before that release took.
	Held, Reconcile time.Duration
	// Services is each service's own hold, in the order they were released,
	// when the Path releases services one by one (Config.ReconcileByService).
	Services []ServiceHold
}

// ServiceHold is how long one service's orders were held at a switch, and
// how long its reconcile took.
type ServiceHold struct {
	Service         string
	Held, Reconcile time.Duration
}

// Summary is the outcome of a run: counts per transport, the stream and FIX
// sequence checks, the switches and halts, and every invariant that broke.
type Summary struct {
	Fault      string
	FaultAt    time.Duration // since the timeline start (-1: no fault)
	Transports []TransportSummary
	Streams    []StreamStats
	FIX        FIXSeqStats
	Switches   []SwitchSummary
	Halts      int
	ReadsOK    int
	ReadsFail  int
	// Invariants lists every invariant, checked or not, with its count of
	// violations; Findings are the violations.
	Invariants []Invariant
	Findings   []Finding
	// Checked names the invariants checked ("I1 no order booked twice ...");
	// Violations renders the Findings.
	Checked    []string
	Violations []string
	// Counts over the whole run, from the broker's book: client order IDs
	// booked more than once (DuplicatesAllowed: of those, caused by a re-send
	// the library had allowed with a final NOT_RECEIVED), orders lost, orders
	// booked on a second live path, late landings, repeated submissions.
	Duplicates, DuplicatesAllowed int
	Losses                        int
	TwoLivePaths                  int
	LateLandings                  []LateLanding
	Repeats                       int
	// Resting orders: cancelled by the broker by itself (cancel-on-disconnect,
	// dead-man), of those reported by an open-order reconcile; dead-man gaps.
	RestingCancelled, RestingReported int
	DeadManGaps                       int
	// RestingBySwitch says what each switch did to the resting orders.
	RestingBySwitch []RestingSwitch
	// Notes explain the run (why a partial fault did or did not fail over,
	// what the repeated submissions were).
	Notes []string
	// Starved, when set, is the record of a host too starved to judge, and
	// Inconclusive the orders it left undecided (starved.go): not
	// violations, not known to be safe either.
	Starved      *Starvation
	Inconclusive []Finding
}

// OK reports whether every invariant held. A run may be OK and still
// Inconclusive.
func (s Summary) OK() bool { return len(s.Findings) == 0 }

// Undecided reports whether every invariant held except for orders the run
// could not judge on a host too starved to judge: the verdict is
// INCONCLUSIVE, neither a failure nor a pass.
func (s Summary) Undecided() bool { return s.OK() && len(s.Inconclusive) > 0 }

// LateReported and LateUnreported count the late landings by whether the
// client was told.
func (s Summary) LateReported() (reported, unreported int) {
	for _, l := range s.LateLandings {
		if l.Reported && !l.AfterFinal {
			reported++
		} else {
			unreported++
		}
	}
	return reported, unreported
}

// Transport returns one transport's summary.
func (s Summary) Transport(name string) TransportSummary {
	for _, t := range s.Transports {
		if t.Transport == name {
			return t
		}
	}
	return TransportSummary{Transport: name, FirstAckOnBackup: -1}
}

// TicksMissed is the total of ticks skipped over every stream.
func (s Summary) TicksMissed() uint64 {
	var n uint64
	for _, st := range s.Streams {
		n += st.Missed
	}
	return n
}

// CheckOptions are the inputs of Check besides the Client.
type CheckOptions struct {
	// Audit is the broker's audit log (simbroker.Broker.Audit); nil when the
	// broker is real: the checks that need it are reported as not checked.
	Audit simbroker.AuditLog
	// Scenario, when set, adds its expectations (failover, failback, halt).
	Scenario *Scenario
	// FaultAt is when the fault was injected (zero: none).
	FaultAt time.Time
	// Backup is the endpoint the fault should move flow to.
	Backup string
	// Faults are the faults the run injected (a chaos schedule), for the
	// failback check (I14); none: not checked.
	Faults []Fault
	// Connections are the network's record of every client connection to
	// the broker (simbroker.Broker.Connections), for the fence check (I16);
	// none: not checked.
	Connections []simbroker.Connection
}

// Check evaluates the invariants over the Client's History with the
// broker's audit from opts (CheckHistory).
func (c *Client) Check(opts CheckOptions) Summary {
	return CheckHistory(c.History(opts.Audit), opts)
}

// window is a span in which an endpoint was fenced: from the first fence
// attempt (or the switch, when the broker fences) until flow came back to it.
type window struct {
	endpoint, region string
	start, end       time.Time // end zero: still fenced
	// fenceAt: when the fence began (start is the hold before it, when the
	// events show one); fenceOK: when it was confirmed (zero: not yet).
	fenceAt, fenceOK time.Time
}

func (w window) contains(t time.Time) bool {
	return !t.Before(w.start) && (w.end.IsZero() || t.Before(w.end))
}

// CheckHistory evaluates every invariant over h, the broker's audit (when
// h has one) taken as the truth. opts.Audit is ignored (h.Audit is used);
// opts.Scenario, FaultAt and Backup add the scenario's expectations.
func CheckHistory(h History, opts CheckOptions) Summary {
	ck := &checker{h: h, opts: opts, sum: Summary{FaultAt: -1}}
	ck.run()
	return ck.sum
}

type checker struct {
	h    History
	opts CheckOptions
	sum  Summary

	regionOf    map[string]string // endpoint → region
	primary     string
	byID        map[string]*OrderRecord
	bookings    map[string]simbroker.AuditLog // client order ID → bookings, in order
	windows     []window
	late        map[string]bool // orders with a late landing finding
	unexplained map[string]bool
	// starved: the host was too starved to judge (nil: it was not); open:
	// the spans of open flow (starved.go)
	starved *Starvation
	open    []span
}

func (ck *checker) rel(t time.Time) time.Duration { return t.Sub(ck.h.Start) }

func (ck *checker) violate(inv int, order, format string, a ...any) {
	f := Finding{Invariant: inv, Order: order, Text: fmt.Sprintf(format, a...)}
	ck.sum.Findings = append(ck.sum.Findings, f)
	ck.sum.Violations = append(ck.sum.Violations, f.String())
}

func (ck *checker) run() {
	h, opts := ck.h, ck.opts
	sum := &ck.sum
	sum.ReadsOK, sum.ReadsFail = h.ReadsOK, h.ReadsFail
	sum.Streams = h.Streams
	if h.FIX != nil {
		sum.FIX = *h.FIX
	}
	if opts.Scenario != nil {
		sum.Fault = opts.Scenario.Kind
	}
	if !opts.FaultAt.IsZero() {
		sum.FaultAt = ck.rel(opts.FaultAt)
	}
	ck.regionOf = map[string]string{}
	for _, e := range h.Endpoints {
		ck.regionOf[e.Name] = e.Region
		if e.Primary {
			ck.primary = e.Name
		}
	}
	ck.byID = map[string]*OrderRecord{}
	for i := range h.Orders {
		ck.byID[h.Orders[i].ClOrdID] = &h.Orders[i]
	}
	ck.bookings = map[string]simbroker.AuditLog{}
	// Every booking counts, whatever door it came through (rest, fix, the
	// probe relay, a stream).
	for _, r := range h.Audit.Booked() {
		ck.bookings[r.ClientOrderID] = append(ck.bookings[r.ClientOrderID], r)
	}
	ck.late = map[string]bool{}
	ck.starvation()
	ck.sum.Starved = ck.starved

	ck.switches()
	ck.perTransport()
	audit := h.Audit != nil
	notChecked := map[int]string{}
	if audit {
		ck.duplicates()
		ck.livePaths()
		ck.clientBook()
		ck.repeats()
		ck.explainTransports()
		ck.reconcileFirst()
		if h.BrokerFence {
			ck.fenceFirst()
		} else {
			notChecked[InvFenceFirst] = "no broker kill switch"
		}
	} else {
		for _, n := range []int{InvNoDuplicate, InvOneLivePath, InvLateLandings, InvClientBook, InvRepeats, InvReconcile, InvFenceFirst, InvRestingReported, InvDeadMan} {
			notChecked[n] = "no broker audit"
		}
	}
	ck.heldGrants()
	ck.handedOver()
	if len(opts.Connections) > 0 {
		ck.fenceCloses()
	} else {
		notChecked[InvFenceCloses] = "no record of the connections"
	}
	if len(opts.Faults) > 0 && h.Failback.Cooldown > 0 {
		ck.failbacks()
	} else {
		notChecked[InvFailback] = "no injected faults or failback rule given"
	}
	switch {
	case !audit:
	case ck.restingOrders():
		ck.restingReported()
		ck.restingBySwitch()
	default:
		notChecked[InvRestingReported] = "no resting orders"
	}
	switch {
	case !audit:
	case !h.DeadMan.From.IsZero():
		ck.deadManGap()
	default:
		notChecked[InvDeadMan] = "no dead-man timer"
	}
	ck.halts()
	if h.StreamsConfigured > 0 {
		ck.streams()
	} else {
		notChecked[InvStream] = "no stream configured"
	}
	if h.FIX != nil {
		ck.fixSeq()
	} else {
		notChecked[InvFIXSeq] = "no FIX session"
	}
	if opts.Scenario != nil {
		ck.scenario()
	} else {
		notChecked[InvScenario] = "no scripted scenario"
	}
	for n := InvNoDuplicate; n <= invLast; n++ {
		inv := Invariant{ID: n, Name: invariantNames[n], Checked: notChecked[n] == "", NotChecked: notChecked[n]}
		for _, f := range sum.Findings {
			if f.Invariant == n {
				inv.Violations++
			}
		}
		for _, f := range sum.Inconclusive {
			if f.Invariant == n {
				inv.Inconclusive++
			}
		}
		sum.Invariants = append(sum.Invariants, inv)
		if inv.Checked {
			sum.Checked = append(sum.Checked, fmt.Sprintf("I%d %s", n, inv.Name))
		}
	}
	sort.SliceStable(sum.Findings, func(i, j int) bool { return sum.Findings[i].Invariant < sum.Findings[j].Invariant })
	sum.Violations = sum.Violations[:0]
	for _, f := range sum.Findings {
		sum.Violations = append(sum.Violations, f.String())
	}
	if len(sum.Violations) == 0 {
		sum.Violations = nil
	}
}

// switches finds the switches and the windows in which each endpoint was
// fenced.
func (ck *checker) switches() {
	open := map[string]int{} // endpoint → index of its open window
	// reconciled: the services whose reconcile succeeded since the last
	// switch and that are not released yet, with the reconcile's duration.
	reconciled := map[string]time.Duration{}
	// The active endpoint and when submissions to it were last held (the
	// hold before a fence: from then on no ticket may be granted on it).
	active := ck.primary
	holdAt := map[string]time.Time{}
	openW := func(ep string, t time.Time) {
		if _, ok := open[ep]; ok {
			return
		}
		start := t
		if h, ok := holdAt[ep]; ok && h.Before(t) {
			start = h
		}
		open[ep] = len(ck.windows)
		ck.windows = append(ck.windows, window{endpoint: ep, region: ck.regionOf[ep], start: start, fenceAt: t})
	}
	closeW := func(ep string, t time.Time) {
		delete(holdAt, ep)
		if i, ok := open[ep]; ok {
			ck.windows[i].end = t
			delete(open, ep)
		}
	}
	lastFence := map[string]time.Time{}
	for _, e := range ck.h.Events {
		switch e.Kind {
		case pathdialer.EventHold, pathdialer.EventHalt:
			if _, ok := holdAt[active]; !ok && active != "" {
				holdAt[active] = e.Time
			}
		case pathdialer.EventFenceStart:
			openW(e.Endpoint, e.Time)
		case pathdialer.EventFenceSuccess:
			lastFence[e.Endpoint] = e.Time
			if i, ok := open[e.Endpoint]; ok && ck.windows[i].fenceOK.IsZero() {
				ck.windows[i].fenceOK = e.Time
			}
		case pathdialer.EventSwitch:
			openW(e.From, e.Time) // the broker fences: the switch is the fence
			if i := open[e.From]; ck.windows[i].fenceOK.IsZero() {
				ck.windows[i].fenceOK = e.Time
			}
			active = e.To
			began := ck.windows[open[e.From]].fenceAt
			fd, ok := lastFence[e.From]
			if !ok || fd.After(e.Time) || fd.Before(began) {
				fd = e.Time
			}
			ck.sum.Switches = append(ck.sum.Switches, SwitchSummary{At: ck.rel(e.Time), From: e.From, To: e.To,
				Failback: e.To == ck.primary, FenceBegan: ck.rel(began), FenceDone: ck.rel(fd), Held: -1})
			closeW(e.To, e.Time)
		case pathdialer.EventReconcileSuccess:
			if n := len(ck.sum.Switches); n > 0 && ck.sum.Switches[n-1].Held < 0 {
				ck.sum.Switches[n-1].Reconcile = e.Duration
				if e.Service != "" {
					reconciled[e.Service] = e.Duration
				}
			}
		case pathdialer.EventUnfence, pathdialer.EventRelease, pathdialer.EventResume:
			closeW(e.Endpoint, e.Time)
			n := len(ck.sum.Switches)
			if e.Kind != pathdialer.EventRelease || n == 0 || ck.sum.Switches[n-1].Held >= 0 || ck.sum.Switches[n-1].To != e.Endpoint {
				break
			}
			sw := &ck.sum.Switches[n-1]
			if e.Service != "" { // one service released; the gate stays held for the others
				sw.Services = append(sw.Services, ServiceHold{Service: e.Service, Held: e.Duration, Reconcile: reconciled[e.Service]})
				delete(reconciled, e.Service)
				break
			}
			sw.Held = e.Duration
			if len(sw.Services) > 0 { // the services still held were released with the gate
				for _, svc := range slices.Sorted(maps.Keys(reconciled)) {
					sw.Services = append(sw.Services, ServiceHold{Service: svc, Held: e.Duration, Reconcile: reconciled[svc]})
				}
				for _, h := range sw.Services {
					sw.Reconcile = max(sw.Reconcile, h.Reconcile)
				}
			}
			clear(reconciled)
		}
	}
}

func answeredBy(o *OrderRecord) bool { return o.Acked || o.Rejected || o.Settled }

func (ck *checker) perTransport() {
	h, opts := ck.h, ck.opts
	byT := map[string]*TransportSummary{}
	var names []string
	for i := range h.Orders {
		o := &h.Orders[i]
		ts, ok := byT[o.Transport]
		if !ok {
			ts = &TransportSummary{Transport: o.Transport, Reconciled: map[string]int{}, AckedBy: map[string]int{},
				NotSentWhy: map[string]int{}, FirstAckOnBackup: -1}
			byT[o.Transport] = ts
			names = append(names, o.Transport)
		}
		ts.Placed++
		if o.Sent {
			ts.Sent++
		} else {
			ts.NotSent++
			why := quotedOrderRE.ReplaceAllString(o.NotSent, "the order")
			if why == "" {
				why = "not attempted"
			}
			ts.NotSentWhy[why]++
		}
		if o.Acked {
			ts.Acked++
		}
		if o.Rejected {
			ts.Rejected++
		}
		if o.Acked || o.Rejected {
			ts.AckedBy[o.AckEndpoint]++
			if !opts.FaultAt.IsZero() && opts.Backup != "" && o.AckEndpoint == opts.Backup && o.AckedAt.After(opts.FaultAt) {
				if d := o.AckedAt.Sub(opts.FaultAt); ts.FirstAckOnBackup < 0 || d < ts.FirstAckOnBackup {
					ts.FirstAckOnBackup = d
				}
			}
		}
		if o.Unknown {
			ts.Unknown++
		}
		if o.Settled {
			ts.Reconciled[o.Fate.String()]++
		}
		for _, v := range o.Verdicts {
			if v.Fate == pathdialer.FateNotReceived && !v.Final {
				ts.Provisional++
				break
			}
		}
		if o.Resent > 0 {
			ts.Resent++
		}
		if o.Sent && !answeredBy(o) && ck.inconclusive(o) {
			ts.Inconclusive++
			ck.undecided(InvNoLoss, o, "was sent and is neither answered nor settled yet")
		} else if o.Sent && !answeredBy(o) {
			ts.Lost++
			ck.sum.Losses++
			ck.violate(InvNoLoss, o.ClOrdID, "LOST: %s order %s was sent and never answered nor settled by reconcile", o.Transport, o.ClOrdID)
		}
		if len(ck.bookings[o.ClOrdID]) > 1 {
			ts.Duplicated++
		}
	}
	if h.Audit != nil {
		subs := h.Audit.Submissions()
		for i := range h.Orders {
			if subs[h.Orders[i].ClOrdID] > 1 {
				byT[h.Orders[i].Transport].Repeats++
			}
		}
	}
	sort.Strings(names)
	for _, n := range names {
		ck.sum.Transports = append(ck.sum.Transports, *byT[n])
	}
}

// attempts returns o's attempts (one from AttemptAt for records without).
func attempts(o *OrderRecord) []Attempt {
	if len(o.Attempts) > 0 || o.AttemptAt.IsZero() {
		return o.Attempts
	}
	return []Attempt{{At: o.AttemptAt, Sent: o.Sent}}
}

// finalNotReceivedBefore returns the first final NOT_RECEIVED verdict before t.
func finalNotReceivedBefore(o *OrderRecord, t time.Time) (Verdict, bool) {
	for _, v := range o.Verdicts {
		if v.Fate == pathdialer.FateNotReceived && v.Final && v.At.Before(t) {
			return v, true
		}
	}
	return Verdict{}, false
}

func (ck *checker) duplicates() {
	var ids []string
	for id, bs := range ck.bookings {
		if len(bs) > 1 {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ck.bookings[ids[i]][1].Seq < ck.bookings[ids[j]][1].Seq })
	for _, id := range ids {
		bs := ck.bookings[id]
		ck.sum.Duplicates++
		var where []string
		for _, b := range bs {
			where = append(where, fmt.Sprintf("%s/%s at %s", b.Region, b.Service, fmtDur(ck.rel(b.Time))))
		}
		cause := "the client sent it once: replayed or retried below the client"
		if o, ok := ck.byID[id]; !ok {
			cause = "an order the client never placed"
		} else {
			var resend *Attempt
			for i, a := range attempts(o) {
				if a.Resend && a.Sent {
					resend = &attempts(o)[i]
					break
				}
			}
			if resend != nil {
				if v, ok := finalNotReceivedBefore(o, resend.At.Add(time.Nanosecond)); ok {
					ck.sum.DuplicatesAllowed++
					cause = fmt.Sprintf("re-sent at %s, allowed by a final NOT_RECEIVED (%s at %s), while a copy of the original was still on its way",
						fmtDur(ck.rel(resend.At)), v.Source, fmtDur(ck.rel(v.At)))
				} else {
					cause = fmt.Sprintf("re-sent at %s on a NOT_RECEIVED that was not final (the library had not allowed it)", fmtDur(ck.rel(resend.At)))
				}
			} else if len(attempts(o)) > 1 {
				cause = fmt.Sprintf("placed %d times by the application", len(attempts(o)))
			}
		}
		ck.violate(InvNoDuplicate, id, "DUPLICATE: order %s booked %d times (%s): %s", id, len(bs), strings.Join(where, ", "), cause)
	}
}

// livePaths classifies every booking through a region whose endpoint was
// held and fenced: a late landing (its copy left before the hold, on a
// connection the fence closed) or a second live path. What was booked,
// where, on which connection, when the connection was opened and when the
// request's bytes left the client are the broker's and the network's
// record; only the hold and the fence times come from the Path's events.
func (ck *checker) livePaths() {
	firstSeen := map[string]time.Time{}
	for _, r := range ck.h.Audit {
		if _, ok := firstSeen[r.ConnID]; r.ConnID != "" && !ok {
			firstSeen[r.ConnID] = r.Time
		}
	}
	seen := map[uint64]bool{}
	for _, w := range ck.windows {
		var bs simbroker.AuditLog
		for _, list := range ck.bookings {
			for _, b := range list {
				if b.Region == w.region && w.contains(b.Time) && !seen[b.Seq] {
					bs = append(bs, b)
				}
			}
		}
		sort.Slice(bs, func(i, j int) bool { return bs[i].Seq < bs[j].Seq })
		for _, b := range bs {
			seen[b.Seq] = true
			o, ok := ck.byID[b.ClientOrderID]
			if !ok {
				ck.sum.TwoLivePaths++
				ck.violate(InvOneLivePath, b.ClientOrderID, "TWO LIVE PATHS: order %s, never placed by this client, booked through %s (%s) at %s, after %s was held at %s",
					b.ClientOrderID, w.region, b.Service, fmtDur(ck.rel(b.Time)), w.endpoint, fmtDur(ck.rel(w.start)))
				continue
			}
			var pre, granted *Attempt
			for i, a := range attempts(o) {
				if !a.Sent {
					continue
				}
				if a.At.Before(w.start) {
					pre = &attempts(o)[i]
				} else if a.Endpoint == w.endpoint && granted == nil {
					granted = &attempts(o)[i]
				}
			}
			// The connection's age: the network's record (ConnOpened) when
			// the broker has it; else when the broker first saw the
			// connection, if it could attribute it ("<region>/<service>/<id>";
			// "direct:..." means it could not: then only the attempt's time
			// can tell).
			connOld := true
			switch {
			case !b.ConnOpened.IsZero():
				connOld = b.ConnOpened.Before(w.fenceAt)
			case b.ConnID != "" && !strings.HasPrefix(b.ConnID, "direct:"):
				fs, ok := firstSeen[b.ConnID]
				connOld = ok && fs.Before(w.fenceAt)
			}
			// Bytes that left the client after the fence was confirmed (it
			// says every connection to the endpoint was closed) went over a
			// connection the fence did not close.
			// The earliest the bytes can have left (SentAfter), not the latest:
			// a blackholed relay reads bytes the client wrote before the hold
			// only when the fault heals.
			afterFence := !w.fenceOK.IsZero() && !b.SentAfter.IsZero() && b.SentAfter.After(w.fenceOK.Add(relayLag))
			var why string
			switch {
			case granted != nil:
				why = fmt.Sprintf("an attempt begun at %s, after the hold, was sent through %s itself", fmtDur(ck.rel(granted.At)), w.endpoint)
			case pre == nil:
				why = "every copy of it was sent after the hold began"
			case !connOld:
				why = "on connection " + b.ConnID + ", opened after the fence began"
			case afterFence:
				why = fmt.Sprintf("its bytes left the client after %s on connection %s, after the fence was confirmed at %s (a connection the fence did not close)",
					fmtDur(ck.rel(b.SentAfter)), b.ConnID, fmtDur(ck.rel(w.fenceOK)))
			}
			if why != "" {
				ck.sum.TwoLivePaths++
				ck.violate(InvOneLivePath, o.ClOrdID, "TWO LIVE PATHS: order %s booked through %s (%s) at %s, after %s was held at %s: %s",
					o.ClOrdID, w.region, b.Service, fmtDur(ck.rel(b.Time)), w.endpoint, fmtDur(ck.rel(w.start)), why)
				continue
			}
			ll := LateLanding{Order: o.ClOrdID, Region: w.region, Service: b.Service, SentAt: ck.rel(pre.At),
				FenceAt: ck.rel(w.fenceAt), BookedAt: ck.rel(b.Time)}
			for _, v := range o.Verdicts {
				if v.Booked() && (v.Region == "" || v.Region == w.region) {
					ll.Reported = true
					if at := ck.rel(v.At); !v.At.Before(b.Time) && (ll.ReportedAt == 0 || at < ll.ReportedAt) {
						ll.ReportedAt = at
					}
				}
			}
			if o.Acked && (o.BookedRegion == "" || o.BookedRegion == w.region) {
				ll.Reported = true
			}
			// Only a verdict given after the late copy was sent is wrong about
			// it: a re-send that an earlier final NOT_RECEIVED allowed can
			// itself be caught in flight by a later fence and land late.
			var v Verdict
			final := false
			for _, x := range o.Verdicts {
				if x.Fate == pathdialer.FateNotReceived && x.Final && !x.At.Before(pre.At) && x.At.Before(b.Time) {
					v, final = x, true
					break
				}
			}
			ll.AfterFinal = final
			ck.sum.LateLandings = append(ck.sum.LateLandings, ll)
			ck.late[o.ClOrdID] = true
			switch {
			case final:
				ck.violate(InvLateLandings, o.ClOrdID, "LATE LANDING AFTER A FINAL VERDICT: order %s, sent at %s before %s's fence (%s), booked through %s at %s, after the library had called it NOT_RECEIVED, final (%s at %s)",
					o.ClOrdID, fmtDur(ll.SentAt), w.endpoint, fmtDur(ll.FenceAt), w.region, fmtDur(ll.BookedAt), v.Source, fmtDur(ck.rel(v.At)))
			case !ll.Reported && ck.inconclusive(o):
				ck.undecided(InvLateLandings, o, fmt.Sprintf("landed late (booked through %s at %s) and the client had not been told yet", w.region, fmtDur(ll.BookedAt)))
			case !ll.Reported:
				ck.violate(InvLateLandings, o.ClOrdID, "UNREPORTED LATE LANDING: order %s, sent at %s before %s's fence (%s), booked through %s at %s; the client was never told (its record: %s)",
					o.ClOrdID, fmtDur(ll.SentAt), w.endpoint, fmtDur(ll.FenceAt), w.region, fmtDur(ll.BookedAt), o.belief())
			}
		}
	}
}

// belief renders what the client's record says of o's booking.
func (o *OrderRecord) belief() string {
	switch {
	case o.Acked:
		return "accepted by " + o.AckEndpoint
	case o.Settled:
		s := "reconciled " + o.Fate.String()
		if o.Provisional {
			s += " (provisional)"
		}
		return s
	case o.Rejected:
		return "rejected by " + o.AckEndpoint
	case !o.Sent:
		return "not sent (" + o.NotSent + ")"
	}
	return "no answer"
}

// clientBook compares each order's record with the book.
func (ck *checker) clientBook() {
	for i := range ck.h.Orders {
		o := &ck.h.Orders[i]
		bs := ck.bookings[o.ClOrdID]
		var believes, knows bool // believes booked; knows whether
		var region string
		switch {
		case o.Acked:
			believes, knows, region = true, true, o.BookedRegion
		case o.Settled:
			knows = true
			if n := len(o.Verdicts); n > 0 {
				last := o.Verdicts[n-1]
				believes, region = last.Booked(), last.Region
			} else {
				believes = o.Fate == pathdialer.FateFilled || o.Fate == pathdialer.FateResting || o.Fate == pathdialer.FateCanceled
			}
		case o.Rejected, !o.Sent:
			knows = true
		}
		if !knows {
			continue // I2 reports it
		}
		switch {
		case believes && len(bs) == 0:
			// The client believes the broker holds an order the broker
			// never booked: lost, whatever told the client.
			ck.sum.Losses++
			ck.violate(InvClientBook, o.ClOrdID, "CLIENT/BOOK MISMATCH: the client records %s as %s, but the broker never booked it", o.ClOrdID, o.belief())
		case !believes && len(bs) > 0 && !ck.late[o.ClOrdID] && o.Fate == pathdialer.FateNotReceived && ck.inconclusive(o):
			// Found NOT_RECEIVED, re-sent or re-queried since: the answer
			// was still to come.
			ck.undecided(InvClientBook, o, fmt.Sprintf("is recorded %s while the broker booked it through %s at %s", o.belief(), bs[0].Region, fmtDur(ck.rel(bs[0].Time))))
		case !believes && len(bs) > 0 && !ck.late[o.ClOrdID]:
			ck.violate(InvClientBook, o.ClOrdID, "CLIENT/BOOK MISMATCH: the client records %s as %s, but the broker booked it through %s (%s) at %s",
				o.ClOrdID, o.belief(), bs[0].Region, bs[0].Service, fmtDur(ck.rel(bs[0].Time)))
		case believes && region != "" && len(bs) > 0 && region != bs[0].Region:
			ck.violate(InvClientBook, o.ClOrdID, "CLIENT/BOOK MISMATCH: the client records %s as %s (region %s), but the broker booked it through %s (%s)",
				o.ClOrdID, o.belief(), region, bs[0].Region, bs[0].Service)
		}
	}
	for id, bs := range ck.bookings {
		if _, ok := ck.byID[id]; !ok && !ck.late[id] {
			ck.violate(InvClientBook, id, "CLIENT/BOOK MISMATCH: the broker booked %s through %s, an order the client never placed", id, bs[0].Region)
		}
	}
}

// explainTransports adds to each transport's counts what explains them: the
// repeated submissions that were re-sends after NOT_RECEIVED, and the
// provisional NOT_RECEIVED orders that landed late.
func (ck *checker) explainTransports() {
	late := map[string]bool{}
	for _, l := range ck.sum.LateLandings {
		late[l.Order] = true
	}
	subs := ck.h.Audit.Submissions()
	for _, o := range ck.h.Orders {
		i := slices.IndexFunc(ck.sum.Transports, func(t TransportSummary) bool { return t.Transport == o.Transport })
		if i < 0 {
			continue
		}
		ts := &ck.sum.Transports[i]
		if subs[o.ClOrdID] > 1 && o.Resent > 0 {
			ts.RepeatsResent++
		}
		if late[o.ClOrdID] && slices.ContainsFunc(o.Verdicts, func(v Verdict) bool { return v.Fate == pathdialer.FateNotReceived && !v.Final }) {
			ts.ProvisionalLanded++
		}
	}
}

// repeats counts and explains client order IDs submitted more than once.
func (ck *checker) repeats() {
	subs := ck.h.Audit.Submissions()
	var ids []string
	for id, n := range subs {
		// A submission without a client order ID is a request the broker
		// could not read (a body cut short): it names no order to repeat.
		if n > 1 && id != "" {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	resends, applied := 0, 0
	for _, id := range ids {
		ck.sum.Repeats++
		o, ok := ck.byID[id]
		if !ok {
			ck.violate(InvRepeats, id, "REPEAT: %s reached the broker %d times, an order the client never placed", id, subs[id])
			continue
		}
		sent := 0
		for _, a := range attempts(o) {
			if a.Sent {
				sent++
			}
		}
		if subs[id] > sent {
			ck.violate(InvRepeats, id, "REPEAT: %s reached the broker %d times, but the client sent it %d time(s): a replay or an automatic retry of an order",
				id, subs[id], sent)
			continue
		}
		if o.Resent > 0 {
			resends++
		} else {
			applied++
		}
	}
	if ck.sum.Repeats > 0 {
		ck.sum.Notes = append(ck.sum.Notes, fmt.Sprintf("repeated submissions: %d client order ID(s) reached the broker more than once — %d re-sent after a NOT_RECEIVED verdict, %d placed again by the application, %d unexplained",
			ck.sum.Repeats, resends, applied, ck.sum.Repeats-resends-applied))
	}
	for _, r := range ck.h.Audit.Orders().Filter(func(r simbroker.Record) bool { return r.PossDup }) {
		ck.violate(InvRepeats, r.ClientOrderID, "REPLAY: order %s reached the broker with PossDupFlag=Y through %s (orders must never be replayed)", r.ClientOrderID, r.Region)
	}
}

func (ck *checker) halts() {
	events := ck.h.Events
	var lastDecision *engine.Decision
	var lastReconcileFailure, lastArmFailure *pathdialer.Event
	for i, e := range events {
		switch e.Kind {
		case pathdialer.EventDecision:
			lastDecision = e.Decision
		case pathdialer.EventReconcileFailure:
			lastReconcileFailure = &events[i]
		case pathdialer.EventReconcileSuccess, pathdialer.EventRelease:
			lastReconcileFailure = nil
		case pathdialer.EventDeadManFailure:
			lastArmFailure = &events[i]
		case pathdialer.EventDeadManArmed, pathdialer.EventSwitch, pathdialer.EventResume:
			lastArmFailure = nil
		case pathdialer.EventHalt:
			ck.sum.Halts++
			switch {
			case lastDecision != nil && lastDecision.Outcome == engine.NoTargetAvailable:
			case lastReconcileFailure != nil && strings.Contains(e.Cause, "reconcile"):
				// The Path halts, loudly, when it cannot settle the orders of
				// unknown fate: a halt for a named cause, not an eligibility
				// halt. Reported, not a violation.
				ck.sum.Notes = append(ck.sum.Notes, fmt.Sprintf("halt at %s because the reconcile kept failing (%s)", fmtDur(ck.rel(e.Time)), shortErr(errors.New(e.Cause))))
			case lastArmFailure != nil && strings.Contains(e.Cause, "dead-man"):
				// The Path halts, loudly, rather than fence the old path while
				// no dead-man timer is armed on the new one (the arm failed
				// FenceAttempts times in a row and no other endpoint was
				// eligible): a named cause, as a reconcile's. Reported.
				ck.sum.Notes = append(ck.sum.Notes, fmt.Sprintf("halt at %s because the dead-man timer could not be armed on %s (last attempt %d at %s): the old path is not fenced before it is",
					fmtDur(ck.rel(e.Time)), lastArmFailure.Endpoint, lastArmFailure.Attempt, fmtDur(ck.rel(lastArmFailure.Time))))
			default:
				ck.violate(InvHalt, "", "HALT at %s without a NO_TARGET_AVAILABLE decision (cause: %s)", fmtDur(ck.rel(e.Time)), e.Cause)
			}
		}
	}
	for i, e := range events {
		if e.Kind != pathdialer.EventDecision || e.Decision == nil || e.Decision.Outcome != engine.NoTargetAvailable {
			continue
		}
		found := false
		for _, f := range events[i+1:] {
			if f.Kind == pathdialer.EventHalt {
				found = true
				break
			}
		}
		// An earlier halt still in force also counts.
		for j := i - 1; j >= 0 && !found; j-- {
			if events[j].Kind == pathdialer.EventHalt {
				found = true
			}
			if events[j].Kind == pathdialer.EventRelease || events[j].Kind == pathdialer.EventResume {
				break
			}
		}
		if !found {
			ck.violate(InvHalt, "", "NO_TARGET_AVAILABLE at %s but trading did not halt", fmtDur(ck.rel(e.Time)))
		}
	}
}

// haltViolated reports whether I7 found a violation.
func (ck *checker) haltViolated() bool {
	for _, f := range ck.sum.Findings {
		if f.Invariant == InvHalt {
			return true
		}
	}
	return false
}

func (ck *checker) streams() {
	for _, st := range ck.h.Streams {
		if st.Duplicates > 0 || st.Gaps > 0 || st.Missed > 0 {
			ck.violate(InvStream, "", "stream %s: %d duplicate(s), %d gap(s), %d tick(s) missed", st.Stream, st.Duplicates, st.Gaps, st.Missed)
		}
	}
	if len(ck.h.Streams) < ck.h.StreamsConfigured {
		ck.violate(InvStream, "", "only %d of %d streams delivered anything", len(ck.h.Streams), ck.h.StreamsConfigured)
	}
}

func (ck *checker) fixSeq() {
	fx := ck.h.FIX
	if fx.Backward > 0 {
		ck.violate(InvFIXSeq, "", "FIX: incoming MsgSeqNum went back %d time(s) without a reset", fx.Backward)
	}
	if ck.h.Sequence == SequenceContinue && fx.Resets > 0 {
		ck.violate(InvFIXSeq, "", "FIX: %d logon(s) reset the sequence numbers under the continue model", fx.Resets)
	}
}

func (ck *checker) scenario() {
	sc := ck.opts.Scenario
	failovers, failbacks := 0, 0
	for _, s := range ck.sum.Switches {
		if s.Failback {
			failbacks++
		} else {
			failovers++
		}
	}
	expect := func(what string, e Expect, n int) {
		switch {
		case e == Must && n == 0:
			ck.violate(InvScenario, "", "expected a %s, none happened", what)
		case e == MustNot && n > 0:
			ck.violate(InvScenario, "", "expected no %s, %d happened", what, n)
		}
	}
	expect("failover", sc.Failover, failovers)
	if failovers > 0 {
		expect("failback", sc.Failback, failbacks)
	}
	if sc.Halt == MustNot && ck.sum.Halts > 0 && !ck.haltViolated() {
		// Every halt came with a NO_TARGET_AVAILABLE decision (I7): the
		// backup was not eligible either — its own probes failed, which on
		// a loaded machine happens. Halting then is right; say so.
		ck.sum.Notes = append(ck.sum.Notes, fmt.Sprintf("%d halt(s) although the scenario expects none: each came with a NO_TARGET_AVAILABLE decision (the backup's own probes had failed too), so halting was right", ck.sum.Halts))
	} else {
		expect("halt", sc.Halt, ck.sum.Halts)
	}
	if sc.Kind == "unknown-outcome" && ck.h.Audit != nil {
		cut := map[string]int{}
		for _, r := range ck.h.Audit.Orders() {
			if r.Outcome == simbroker.OutcomeCut && r.Region == sc.Primary {
				cut[r.Service]++
			}
		}
		ck.sum.Notes = append(ck.sum.Notes, fmt.Sprintf("unknown-outcome: %d REST and %d FIX order(s) were booked on %s and their connections cut before the answer (the fault was armed for 3 and 2; a failover before that leaves the rest unused)",
			cut[string(simbroker.REST)], cut[string(simbroker.FIX)], sc.Primary))
	}
	if sc.Kind == "partial" {
		if failovers > 0 {
			ck.sum.Notes = append(ck.sum.Notes, "partial: the probe stayed green; the failover came from passive signals — the REST transport reported the 503s on orders to the Path, and FailureThreshold of them in a row took "+sc.Primary+" DOWN")
		} else {
			ck.sum.Notes = append(ck.sum.Notes, "partial: the probe stayed green and passive 503s never reached FailureThreshold in a row between two successful probes, so "+sc.Primary+" was never DOWN: no failover. Orders there were refused (503 → unknown → reconciled) or rejected (FIX)")
		}
	}
}

// reasonSettle is the Reason of the Path's settle of unknown outcomes
// (pathdialer.Config.SettleUnknown): submissions are not held for it.
const reasonSettle = "settle unknown outcomes"

// holdsFlow reports whether a reconcile with this reason holds submissions
// until it is done: not a re-query of provisional verdicts, nor a settle of
// unknown outcomes (both run while flow is open).
func holdsFlow(reason string) bool {
	return reason != pathdialer.ReasonRequery && reason != reasonSettle
}

// reconcileFirst judges guarantee 2 from the broker's audit: after a
// reconcile began (the Path's event names its orders), no order of a
// service reached the broker through the new endpoint's region before the
// broker had answered a lookup of every one of that service's orders being
// reconciled. Lookups and orders are ordered by the audit's Seq; an order
// whose bytes had left the client before the reconcile began (SentBy) is
// not judged (it was sent under an earlier decision).
func (ck *checker) reconcileFirst() {
	events := ck.h.Events
	for i, e := range events {
		if e.Kind != pathdialer.EventReconcileStart || !holdsFlow(e.Cause) || len(e.Tickets) == 0 {
			continue
		}
		to := e.To
		if to == "" {
			to = e.Endpoint
		}
		region := ck.regionOf[to]
		if region == "" {
			continue
		}
		// The span judged: until the next reconcile or switch decides again.
		var until time.Time
		for _, f := range events[i+1:] {
			if f.Kind == pathdialer.EventSwitch || f.Kind == pathdialer.EventHold || f.Kind == pathdialer.EventHalt ||
				(f.Kind == pathdialer.EventReconcileStart && holdsFlow(f.Cause)) {
				until = f.Time
				break
			}
		}
		byService := map[string][]string{}
		for _, t := range e.Tickets {
			byService[t.Service] = append(byService[t.Service], t.OrderID)
		}
		for svc, ids := range byService {
			// answered: the Seq by which the broker had answered for every
			// order (a lookup since the reconcile began, or its own answer to
			// a submission of it, which the client may have settled it by);
			// missing: an order it never answered for in the span.
			var answered uint64
			var answeredAt time.Time
			missing := ""
			for _, id := range ids {
				r, ok := ck.h.Audit.FirstLookup(id, e.Time)
				if !ok || (!until.IsZero() && !r.Time.Before(until)) {
					r, ok = simbroker.Record{}, false
				}
				for _, x := range ck.h.Audit.Orders() {
					if x.ClientOrderID == id && x.Outcome != simbroker.OutcomeCut && (!ok || x.Seq < r.Seq) {
						r, ok = x, true
						break
					}
				}
				if !ok {
					missing = id
					break
				}
				if r.Seq > answered {
					answered, answeredAt = r.Seq, r.Time
				}
			}
			for _, r := range ck.h.Audit.Orders() {
				if r.Region != region || doorService(r.Service) != svc || r.Time.Before(e.Time) || (!until.IsZero() && !r.Time.Before(until)) {
					continue
				}
				if !r.SentBy.IsZero() && r.SentBy.Before(e.Time) {
					continue
				}
				if missing == "" && r.Seq > answered {
					break // every later order came after the answers
				}
				what := fmt.Sprintf("before the broker had answered the lookup of %s", missing)
				if missing == "" {
					what = fmt.Sprintf("before the broker had answered the lookups of the %d %s order(s) being reconciled (the last at %s)",
						len(ids), svc, fmtDur(ck.rel(answeredAt)))
				}
				ck.violate(InvReconcile, r.ClientOrderID, "RELEASED BEFORE RECONCILE: %s order %s reached the broker through %s at %s, after the reconcile %s→%s began at %s, %s",
					svc, r.ClientOrderID, region, fmtDur(ck.rel(r.Time)), e.From, to, fmtDur(ck.rel(e.Time)), what)
				break
			}
		}
	}
}

// doorService maps the service an audit record came through to the
// client's service: the probe relay is a door of the REST service.
func doorService(s string) string {
	if s == string(simbroker.Probe) {
		return REST
	}
	return s
}

// heldMargin is how long before a release event an attempt must have been
// granted to be judged: the release event is stamped just after the gate
// opened (the controller may be descheduled between the two on a loaded
// host), when no reconcile success, stamped before the gate opens, bounds
// the opening more tightly.
const heldMargin = 100 * time.Millisecond

// heldSpan is a span in which a service's submissions were held: from the
// hold or halt event (stamped after the gate was held) until the release
// that let the service's orders flow again. openAfter is an instant the
// gate cannot have opened before (the last reconcile success of the span,
// stamped before the release; else the release minus heldMargin).
type heldSpan struct {
	service          string
	from, release    time.Time // release zero: never released
	openAfter        time.Time
	cause            string
	reconcileSuccess time.Time
}

// downHoldCause is how a hold taken by a Report on the reporting goroutine
// (not the controller) is worded; its event can be stamped after the
// controller reopened the gate, so it starts no span.
const downHoldCause = "held while the switch is decided"

// heldSpans returns, per service of the client's orders, the spans in which
// its submissions were held, from the Path's controller's events.
func (ck *checker) heldSpans() []heldSpan {
	services := map[string]bool{}
	for i := range ck.h.Orders {
		services[ck.h.Orders[i].Transport] = true
	}
	open := map[string]*heldSpan{}
	var out []heldSpan
	end := func(svc string, e pathdialer.Event) {
		s, ok := open[svc]
		if !ok {
			return
		}
		s.release = e.Time
		s.openAfter = e.Time.Add(-heldMargin)
		if !s.reconcileSuccess.IsZero() {
			s.openAfter = s.reconcileSuccess
		}
		out = append(out, *s)
		delete(open, svc)
	}
	for _, e := range ck.h.Events {
		switch e.Kind {
		case pathdialer.EventHold, pathdialer.EventHalt:
			if e.Kind == pathdialer.EventHold && strings.Contains(e.Cause, downHoldCause) {
				continue
			}
			for svc := range services {
				if _, ok := open[svc]; !ok {
					open[svc] = &heldSpan{service: svc, from: e.Time, cause: e.Cause}
				}
			}
		case pathdialer.EventReconcileSuccess:
			if !holdsFlow(e.Cause) {
				continue
			}
			for svc, s := range open {
				if e.Service == "" || e.Service == svc {
					s.reconcileSuccess = e.Time
				}
			}
		case pathdialer.EventRelease:
			if e.Service != "" {
				end(e.Service, e)
				continue
			}
			for svc := range services {
				end(svc, e)
			}
		}
	}
	for _, s := range open {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].from.Equal(out[j].from) {
			return out[i].from.Before(out[j].from)
		}
		return out[i].service < out[j].service
	})
	return out
}

// heldGrants judges guarantee 2 (and the gate's hold) from the client's own
// record: an attempt begun after its service's submissions were held (the
// hold's event is stamped after the gate was held, so Acquire began on a
// held gate) that was granted (answered, refused because its endpoint was
// fenced, or seen by the broker) before the gate can have opened was
// granted on a held gate.
func (ck *checker) heldGrants() {
	spans := ck.heldSpans()
	for i := range ck.h.Orders {
		o := &ck.h.Orders[i]
		as := attempts(o)
		for k, a := range as {
			granted, how := a.Granted, "the transport returned with it granted"
			if len(as) == 1 && ck.h.Audit != nil {
				// The broker's first record of the order (it came through
				// some door, so it had a ticket), when that is earlier.
				for _, r := range ck.h.Audit.Orders() {
					if r.ClientOrderID == o.ClOrdID && !r.Time.Before(a.At) {
						if granted.IsZero() || r.Time.Before(granted) {
							granted, how = r.Time, fmt.Sprintf("the broker received it through %s (%s, %s)", r.Region, r.Service, r.Outcome)
						}
						break
					}
				}
			}
			if granted.IsZero() {
				continue
			}
			for _, s := range spans {
				if s.service != o.Transport || !a.At.After(s.from) || !(s.release.IsZero() || granted.Before(s.openAfter)) {
					continue
				}
				rel := "never released"
				if !s.release.IsZero() {
					rel = "released at " + fmtDur(ck.rel(s.release))
				}
				ck.violate(InvHeldGrant, o.ClOrdID, "GRANTED WHILE HELD: %s order %s (attempt %d) began at %s, after %s submissions were held at %s (%s), and was granted by %s: %s; the hold was %s",
					o.Transport, o.ClOrdID, k+1, fmtDur(ck.rel(a.At)), o.Transport, fmtDur(ck.rel(s.from)), shortCause(s.cause), fmtDur(ck.rel(granted)), how, rel)
				break
			}
		}
	}
}

// shortCause cuts an event's cause to a readable length.
func shortCause(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// fenceFirst judges, from the broker's audit alone, that every switch away
// from an endpoint came after the broker's kill switch for its region had
// answered: the region is fenced at the broker (a span of its fence
// records) at the switch's instant. The switch event is stamped after the
// Path switched, the fence record when the broker fenced: a fence recorded
// after the switch was not waited for.
func (ck *checker) fenceFirst() {
	spans := ck.h.Audit.FenceSpans()
	for _, e := range ck.h.Events {
		if e.Kind != pathdialer.EventSwitch || e.From == "" || e.From == e.To {
			continue
		}
		region := ck.regionOf[e.From]
		if region == "" {
			continue
		}
		covered := false
		var later time.Time
		for _, s := range spans {
			if s.Region != region {
				continue
			}
			if !s.From.After(e.Time) && (s.Until.IsZero() || s.Until.After(e.Time)) {
				covered = true
				break
			}
			if s.From.After(e.Time) && later.IsZero() {
				later = s.From
			}
		}
		if covered {
			continue
		}
		what := "the broker never fenced it"
		if !later.IsZero() {
			what = fmt.Sprintf("the broker fenced it only at %s", fmtDur(ck.rel(later)))
		}
		ck.violate(InvFenceFirst, "", "SWITCH BEFORE THE KILL SWITCH: %s→%s at %s while region %s was not fenced at the broker: %s",
			e.From, e.To, fmtDur(ck.rel(e.Time)), region, what)
	}
}

// failbacks judges each failback (a switch to the primary whose cause is a
// failback) against the faults the run injected, not
// the Path's account of itself: flow comes back to the primary no sooner
// than Cooldown after the failure injected on it that it left for (the
// cooldown runs from a switch, which came after that failure was armed),
// and no sooner than the primary could have answered
// FailbackSuccessThreshold probes in a row after a failure of its probe
// healed (half a ProbeInterval apart, allowing for probes made on demand;
// two at a time with a trade-path check, whose successes count too). A
// flap is judged for the cooldown only: the primary answers between its
// phases. A fault armed less than one probe round (ProbeInterval +
// ProbeJitter + ProbeTimeout) before the failback is not judged here: no
// probe could have failed on it yet, so the failback rested on the answers
// before it (leaving the primary again is the failover's detection).
func (ck *checker) failbacks() {
	rule := ck.h.Failback
	faults := ck.opts.Faults
	// left[ep]: when flow last began to leave ep (the hold or fence before
	// the switch away from it: the engine's switch came after).
	left := map[string]time.Time{}
	holdAt := time.Time{}
	for _, e := range ck.h.Events {
		switch e.Kind {
		case pathdialer.EventHold, pathdialer.EventHalt, pathdialer.EventFenceStart:
			if holdAt.IsZero() {
				holdAt = e.Time
			}
		case pathdialer.EventRelease, pathdialer.EventResume:
			if e.Service == "" {
				holdAt = time.Time{}
			}
		case pathdialer.EventSwitch:
			from := holdAt
			if from.IsZero() {
				from = e.Time
			}
			left[e.From] = from
			to := e.To
			holdAt = time.Time{}
			// Only a failback is gated (the event's cause says which): a
			// failover to the primary, away from an active endpoint that
			// went DOWN, never waits.
			if to != ck.primary || e.From == to || e.Cause != "failback" {
				continue
			}
			region := ck.regionOf[to]
			since, ok := left[to]
			if !ok {
				continue
			}
			// The failure it left for: the latest fault on its region armed
			// before flow began to leave it.
			var cause *Fault
			for i := range faults {
				f := &faults[i]
				if f.Region == region && !f.At.After(since) && (cause == nil || f.At.After(cause.At)) {
					cause = f
				}
			}
			if cause != nil && e.Time.Before(cause.At.Add(rule.Cooldown)) {
				ck.violate(InvFailback, "", "FAILBACK WITHIN COOLDOWN: back to %s at %s, %s after the %s fault injected on %s at %s (Cooldown %s)",
					to, fmtDur(ck.rel(e.Time)), fmtDur(e.Time.Sub(cause.At)), cause.Kind, region, fmtDur(ck.rel(cause.At)), rule.Cooldown)
				continue
			}
			if rule.Successes > 1 && rule.ProbeInterval > 0 {
				// Answers at least half a ProbeInterval apart; with a
				// trade-path check two may come together (the probe's
				// and the check's, every round), so the pairs are.
				gaps := rule.Successes - 1
				if rule.TradePathCheck {
					gaps = (rule.Successes+1)/2 - 1
				}
				need := time.Duration(gaps) * rule.ProbeInterval / 2
				unseen := rule.ProbeInterval + rule.ProbeJitter + rule.ProbeTimeout
				for i := range faults {
					f := &faults[i]
					// Only a failure of both the probe and the trade path: either
					// one's answers count towards the successes in a row. Not a
					// flap: the primary answers between its phases (and through
					// blackhole phases shorter than the probe's timeout), and
					// those answers count, so its end is no heal the answers
					// in a row start from (its cooldown is judged above).
					if f.Region != region || !f.FailsProbe || !f.FailsTradePath || f.At.After(e.Time) || f.Kind == "flap" {
						continue
					}
					// Armed less than one probe round before the
					// failback, it may not have failed a probe yet: the
					// failback rests on the answers before it.
					if e.Time.Sub(f.At) < unseen {
						continue
					}
					if f.Recovered.IsZero() || e.Time.Before(f.Recovered.Add(need)) {
						healed := "still armed"
						if !f.Recovered.IsZero() && !f.Recovered.After(e.Time) {
							healed = fmt.Sprintf("%s after it healed at %s", fmtDur(e.Time.Sub(f.Recovered)), fmtDur(ck.rel(f.Recovered)))
						}
						ck.violate(InvFailback, "", "FAILBACK BEFORE THE PRIMARY COULD BE STABLE: back to %s at %s, %s, while %d answers in a row take at least %s (the %s fault injected on %s at %s)",
							to, fmtDur(ck.rel(e.Time)), healed, rule.Successes, need, f.Kind, region, fmtDur(ck.rel(f.At)))
						break
					}
				}
			}
		}
	}
}

// handedOver judges the hand-over of unknown outcomes to a switch's
// reconcile (or a resume's, after a halt) from the client's own record. A
// switch takes, after its event, every ticket in flight or of unknown
// outcome; the gate is held from before the event until the release. So a
// REST order whose one attempt began before the event and that was granted
// before the hold (it returned unknown before REST was released again, or
// the broker received it before the event) was, at the take, in flight or
// unknown: unless a reconcile begun earlier had it, or it was settled
// before the event, it must be among the orders of a reconcile begun after
// the event and before the release.
func (ck *checker) handedOver() {
	events := ck.h.Events
	listed := func(id string, from, to time.Time) bool {
		for _, e := range events {
			if e.Kind != pathdialer.EventReconcileStart || e.Time.Before(from) || !e.Time.Before(to) {
				continue
			}
			for _, t := range e.Tickets {
				if t.OrderID == id {
					return true
				}
			}
		}
		return false
	}
	for i := range ck.h.Orders {
		o := &ck.h.Orders[i]
		if o.Transport != REST || !o.Unknown || len(o.Attempts) != 1 || o.Attempts[0].Granted.IsZero() {
			continue
		}
		a := o.Attempts[0]
		u := a.Granted
		for j, w := range events {
			if w.Kind != pathdialer.EventSwitch && w.Kind != pathdialer.EventResume || !a.At.Before(w.Time) {
				continue
			}
			to, what := w.To, fmt.Sprintf("the switch %s→%s", w.From, w.To)
			if w.Kind == pathdialer.EventResume {
				to, what = w.Endpoint, "the resume on "+w.Endpoint
			}
			if listed(o.ClOrdID, a.At, w.Time) {
				break // an earlier reconcile took it
			}
			settled := false
			for _, v := range o.Verdicts {
				if v.At.Before(w.Time) {
					settled = true
				}
			}
			if settled || o.Acked && o.AckedAt.Before(w.Time) {
				break
			}
			// The release of REST on the switch's target after it.
			var release time.Time
			for _, e := range events[j+1:] {
				if e.Kind == pathdialer.EventSwitch || e.Kind == pathdialer.EventResume {
					break // decided again (the next reconcile carries the tickets over)
				}
				if e.Kind == pathdialer.EventRelease && e.Endpoint == to && (e.Service == "" || e.Service == REST) {
					release = e.Time
					break
				}
			}
			if release.IsZero() {
				break
			}
			if !u.Before(release) {
				seen := false
				for _, r := range ck.h.Audit.Orders() {
					if r.ClientOrderID == o.ClOrdID && !r.Time.Before(a.At) && r.Time.Before(w.Time) {
						seen = true
						break
					}
				}
				if !seen {
					break // it may have been granted after the release
				}
			}
			if !listed(o.ClOrdID, w.Time, release.Add(time.Nanosecond)) {
				ck.violate(InvHandedOver, o.ClOrdID, "NOT HANDED OVER: rest order %s, begun at %s before %s at %s and granted before its hold, finished unknown (returned at %s), and no reconcile of it had the order before REST flowed again on %s at %s",
					o.ClOrdID, fmtDur(ck.rel(a.At)), what, fmtDur(ck.rel(w.Time)), fmtDur(ck.rel(u)), to, fmtDur(ck.rel(release)))
			}
			break
		}
	}
}

// fenceSettle bounds how long after a local fence began the network may
// note the end of a connection it closed (a relay reading its socket on a
// loaded host); fenceRace leaves out connections opened just before it (a
// dial the fence met halfway is refused or closed by the Path, not judged).
const (
	fenceSettle = time.Second
	fenceRace   = 100 * time.Millisecond
)

// fenceCloses judges the local fence from the network's record: at every
// fence of an endpoint (its event comes just before the Path closes the
// endpoint's connections), every order connection to its region (REST or
// FIX, one that carried an order: not a probe's or a health check's own)
// opened well before and still open is closed within fenceSettle.
func (ck *checker) fenceCloses() {
	carried := map[string]bool{}
	for _, r := range ck.h.Audit.Orders() {
		carried[r.ConnID] = true
	}
	for _, e := range ck.h.Events {
		if e.Kind != pathdialer.EventFenceStart {
			continue
		}
		region := ck.regionOf[e.Endpoint]
		for _, c := range ck.opts.Connections {
			// The connection ended when the network first saw either side
			// end it (a blackhole passes a client's close on only when it
			// lifts: EndSeen is the client's close, Closed the relay's).
			closed := c.Closed
			if !c.EndSeen.IsZero() && (closed.IsZero() || c.EndSeen.Before(closed)) {
				closed = c.EndSeen
			}
			if c.Region != region || (c.Service != simbroker.REST && c.Service != simbroker.FIX) || !carried[c.ConnID] ||
				!c.Opened.Before(e.Time.Add(-fenceRace)) || !closed.IsZero() && closed.Before(e.Time) {
				continue
			}
			if !closed.IsZero() && closed.Before(e.Time.Add(fenceSettle)) {
				continue
			}
			end := "still open at the end"
			if !closed.IsZero() {
				end = fmt.Sprintf("closed by the %s only at %s", c.ClosedBy, fmtDur(ck.rel(closed)))
			}
			ck.violate(InvFenceCloses, "", "FENCE CLOSED NOTHING: %s connection %s to %s, opened at %s, was open when the fence of %s began at %s and %s",
				c.Service, c.ConnID, region, fmtDur(ck.rel(c.Opened)), e.Endpoint, fmtDur(ck.rel(e.Time)), end)
		}
	}
}
