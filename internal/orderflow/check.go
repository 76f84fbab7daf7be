package orderflow

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// TransportSummary counts one transport's orders.
type TransportSummary struct {
	Transport string
	// Placed: orders the application placed; Sent: those that left (or may
	// have left); NotSent: refused before leaving (halt, held past deadline).
	Placed, Sent, NotSent int
	// Acked: accepted by the broker; Rejected: answered with a rejection;
	// Unknown: an attempt ended with an unknown outcome.
	Acked, Rejected, Unknown int
	// Reconciled counts settlements by fate (FILLED, RESTING, NOT_RECEIVED...).
	Reconciled map[string]int
	// Resent: orders sent again (same ID) after a NOT_RECEIVED settlement.
	Resent int
	// Duplicated: orders the broker booked more than once (must be 0).
	// Repeats: client order IDs submitted more than once (resends, refused
	// resends: not bookings).
	Duplicated, Repeats int
	// Lost: sent, never answered, never settled (must be 0).
	Lost int
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
	// FenceDone is when the old endpoint's fence completed (since the start).
	FenceDone time.Duration
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
	// Checked names the invariants checked; Violations those that broke.
	Checked    []string
	Violations []string
	// Notes explain the run (why a partial fault did or did not fail over).
	Notes []string
}

// OK reports whether every invariant held.
func (s Summary) OK() bool { return len(s.Violations) == 0 }

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
}

// Check evaluates the invariants over the client's records, the Path's
// events and, when given, the broker's audit.
func (c *Client) Check(opts CheckOptions) Summary {
	rec := c.rec
	orders := c.Orders()
	events := rec.Events()
	sum := Summary{FaultAt: -1, FIX: c.FIXSeq()}
	sum.ReadsOK, sum.ReadsFail = c.Reads()
	if opts.Scenario != nil {
		sum.Fault = opts.Scenario.Kind
	}
	if !opts.FaultAt.IsZero() {
		sum.FaultAt = opts.FaultAt.Sub(rec.Start())
	}
	if c.prices != nil {
		sum.Streams = c.prices.Stats()
	}
	violate := func(format string, a ...any) { sum.Violations = append(sum.Violations, fmt.Sprintf(format, a...)) }
	checked := func(s string) { sum.Checked = append(sum.Checked, s) }
	rel := func(t time.Time) time.Duration { return t.Sub(rec.Start()) }
	regionOf := map[string]string{}
	for _, e := range c.cfg.Endpoints {
		regionOf[e.Name] = e.Region
	}

	// Audit views.
	var dupIDs map[string]bool
	booked := map[string]simbroker.Record{}
	submissions := map[string]int{}
	if opts.Audit != nil {
		dupIDs = map[string]bool{}
		for _, id := range opts.Audit.Duplicates() {
			dupIDs[id] = true
		}
		for _, r := range opts.Audit.Orders().Booked() {
			if _, ok := booked[r.ClientOrderID]; !ok {
				booked[r.ClientOrderID] = r
			}
		}
		submissions = opts.Audit.Submissions()
	}

	// Per transport.
	byT := map[string]*TransportSummary{}
	var tnames []string
	for _, o := range orders {
		ts, ok := byT[o.Transport]
		if !ok {
			ts = &TransportSummary{Transport: o.Transport, Reconciled: map[string]int{}, AckedBy: map[string]int{}, FirstAckOnBackup: -1}
			byT[o.Transport] = ts
			tnames = append(tnames, o.Transport)
		}
		ts.Placed++
		if o.Sent {
			ts.Sent++
		} else {
			ts.NotSent++
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
		if o.Resent > 0 {
			ts.Resent++
		}
		if o.Sent && !o.Answered() {
			ts.Lost++
			violate("LOST: %s order %s was sent and never answered nor settled by reconcile", o.Transport, o.ClOrdID)
		}
		if dupIDs[o.ClOrdID] {
			ts.Duplicated++
			violate("DUPLICATE: order %s was booked more than once", o.ClOrdID)
		}
		if submissions[o.ClOrdID] > 1 {
			ts.Repeats++
		}
		if opts.Audit != nil {
			b, isBooked := booked[o.ClOrdID]
			switch {
			case o.Acked && !isBooked:
				violate("order %s was acknowledged by %s but the broker never booked it", o.ClOrdID, o.AckEndpoint)
			case o.Settled && (o.Fate == pathdialer.FateFilled || o.Fate == pathdialer.FateResting) && !isBooked:
				violate("reconcile found order %s %s but the broker never booked it", o.ClOrdID, o.Fate)
			case o.Settled && o.Fate == pathdialer.FateNotReceived && isBooked && o.Resent == 0:
				violate("reconcile found order %s NOT_RECEIVED, but the broker booked it at %s through %s (%s)",
					o.ClOrdID, fmtDur(rel(b.Time)), b.Region, b.Service)
			case !o.Sent && isBooked:
				violate("order %s was counted not sent, but the broker booked it through %s", o.ClOrdID, b.Region)
			}
		}
	}
	sort.Strings(tnames)
	for _, n := range tnames {
		sum.Transports = append(sum.Transports, *byT[n])
	}
	checked("no lost order (every order sent was answered or settled by reconcile)")
	if opts.Audit != nil {
		checked("no duplicate booking (broker audit)")
		checked("client's view agrees with the broker's book")
		for _, id := range opts.Audit.Duplicates() {
			if !containsOrder(orders, id) {
				violate("DUPLICATE: order %s (not ours) was booked more than once", id)
			}
		}
		possdup := opts.Audit.Orders().Filter(func(r simbroker.Record) bool { return r.PossDup })
		for _, r := range possdup {
			violate("order %s reached the broker with PossDupFlag=Y through %s (orders must never be replayed)", r.ClientOrderID, r.Region)
		}
		checked("no order replayed with PossDupFlag=Y")
	}

	// Switches: fence completion, and the window in which the old region must
	// not book anything.
	var lastFence = map[string]time.Time{}
	primary := ""
	for _, e := range c.cfg.Endpoints {
		if e.Primary {
			primary = e.Name
		}
	}
	type window struct {
		from       string
		start, end time.Time
	}
	var windows []window
	for _, e := range events {
		switch e.Kind {
		case pathdialer.EventFenceSuccess:
			lastFence[e.Endpoint] = e.Time
		case pathdialer.EventSwitch:
			fd, ok := lastFence[e.From]
			if !ok || fd.After(e.Time) {
				fd = e.Time // the broker fences (BrokerFences): the switch is the fence
			}
			sum.Switches = append(sum.Switches, SwitchSummary{At: rel(e.Time), From: e.From, To: e.To, Failback: e.To == primary, FenceDone: rel(fd)})
			for i := range windows {
				if windows[i].end.IsZero() && windows[i].from == e.To {
					windows[i].end = e.Time
				}
			}
			windows = append(windows, window{from: e.From, start: fd})
		}
	}
	if opts.Audit != nil {
		inFlight := c.InFlightLandings(opts.Audit, sum.Switches)
		for _, w := range windows {
			region := regionOf[w.from]
			var stale []string
			for _, r := range opts.Audit.AcceptedThrough(region, w.start) {
				if !w.end.IsZero() && !r.Time.Before(w.end) {
					continue
				}
				if r.Service != string(simbroker.REST) && r.Service != string(simbroker.FIX) {
					continue
				}
				if inFlight[r.ClientOrderID] {
					stale = append(stale, r.ClientOrderID)
					continue
				}
				violate("TWO LIVE PATHS: order %s booked through %s (%s) at %s, after %s was fenced at %s",
					r.ClientOrderID, region, r.Service, fmtDur(rel(r.Time)), w.from, fmtDur(rel(w.start)))
			}
			if len(stale) > 0 {
				sum.Notes = append(sum.Notes, fmt.Sprintf("%d order(s) in flight on %s when it was fenced were booked there just after the fence (bytes already sent cannot be recalled; reconcile settled them): %s",
					len(stale), region, strings.Join(stale, " ")))
			}
			late := opts.Audit.Orders().Filter(func(r simbroker.Record) bool {
				return r.Region == region && !r.Time.Before(w.start) && (w.end.IsZero() || r.Time.Before(w.end)) &&
					r.Outcome != simbroker.OutcomeNew && r.Outcome != simbroker.OutcomeCut
			})
			if len(late) > 0 {
				var ids []string
				for _, r := range late {
					ids = append(ids, fmt.Sprintf("%s(%s)", r.ClientOrderID, r.Outcome))
				}
				sum.Notes = append(sum.Notes, fmt.Sprintf("%d stale submission(s) reached %s after its fence and booked nothing: %s",
					len(late), region, strings.Join(ids, " ")))
			}
		}
		checked("no order booked through the old region after its fence completed")
	}

	// Halts: exactly when no target is eligible.
	var lastDecision *engine.Decision
	for _, e := range events {
		switch e.Kind {
		case pathdialer.EventDecision:
			lastDecision = e.Decision
		case pathdialer.EventHalt:
			sum.Halts++
			if lastDecision == nil || lastDecision.Outcome != engine.NoTargetAvailable {
				violate("HALT at %s without a NO_TARGET_AVAILABLE decision (cause: %s)", fmtDur(rel(e.Time)), e.Cause)
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
			violate("NO_TARGET_AVAILABLE at %s but trading did not halt", fmtDur(rel(e.Time)))
		}
	}
	checked("halt exactly when no target is eligible")

	// Streams.
	for _, st := range sum.Streams {
		if st.Duplicates > 0 || st.Gaps > 0 || st.Missed > 0 {
			violate("stream %s: %d duplicate(s), %d gap(s), %d tick(s) missed", st.Stream, st.Duplicates, st.Gaps, st.Missed)
		}
	}
	if len(c.cfg.Streams) > 0 {
		if len(sum.Streams) < len(c.cfg.Streams) {
			violate("only %d of %d streams delivered anything", len(sum.Streams), len(c.cfg.Streams))
		}
		checked("every price once and in order, none missed")
	}
	if c.app != nil {
		if sum.FIX.Backward > 0 {
			violate("FIX: incoming MsgSeqNum went back %d time(s) without a reset", sum.FIX.Backward)
		}
		if c.cfg.Sequence == SequenceContinue && sum.FIX.Resets > 0 {
			violate("FIX: %d logon(s) reset the sequence numbers under the continue model", sum.FIX.Resets)
		}
		checked("FIX sequence numbers continuous (" + c.cfg.Sequence + " model)")
	}

	// Scenario expectations.
	if sc := opts.Scenario; sc != nil {
		failovers, failbacks := 0, 0
		for _, s := range sum.Switches {
			if s.Failback {
				failbacks++
			} else {
				failovers++
			}
		}
		expect := func(what string, e Expect, n int) {
			switch {
			case e == Must && n == 0:
				violate("expected a %s, none happened", what)
			case e == MustNot && n > 0:
				violate("expected no %s, %d happened", what, n)
			}
		}
		expect("failover", sc.Failover, failovers)
		if failovers > 0 {
			expect("failback", sc.Failback, failbacks)
		}
		expect("halt", sc.Halt, sum.Halts)
		checked("scenario expectations (failover, failback, halt)")
		if sc.Kind == "partial" {
			if failovers > 0 {
				sum.Notes = append(sum.Notes, "partial: the probe stayed green; the failover came from passive signals — the REST transport reported the 503s on orders to the Path, and FailureThreshold of them in a row took "+sc.Primary+" DOWN")
			} else {
				sum.Notes = append(sum.Notes, "partial: the probe stayed green and passive 503s never reached FailureThreshold in a row between two successful probes, so "+sc.Primary+" was never DOWN: no failover. Orders there were refused (503 → unknown → reconciled) or rejected (FIX)")
			}
		}
	}
	return sum
}

func containsOrder(orders []OrderRecord, id string) bool {
	for _, o := range orders {
		if o.ClOrdID == id {
			return true
		}
	}
	return false
}

func fmtDur(d time.Duration) string { return fmt.Sprintf("+%.3fs", d.Seconds()) }

func fmtMs(d time.Duration) string {
	if d < 0 {
		return "—"
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

// Write prints the summary for a terminal.
func (s Summary) Write(w io.Writer) {
	fmt.Fprintln(w, "SUMMARY")
	if s.Fault != "" {
		fmt.Fprintf(w, "  fault            %s at %s\n", s.Fault, fmtDur(s.FaultAt))
	}
	for _, sw := range s.Switches {
		kind := "failover"
		if sw.Failback {
			kind = "failback"
		}
		fmt.Fprintf(w, "  %-16s %s → %s at %s (fence of %s done at %s)\n", kind, sw.From, sw.To, fmtDur(sw.At), sw.From, fmtDur(sw.FenceDone))
	}
	fmt.Fprintf(w, "  halts            %d\n", s.Halts)
	fmt.Fprintf(w, "  account reads    %d ok, %d failed\n", s.ReadsOK, s.ReadsFail)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  %-5s %6s %6s %8s %6s %6s %7s %6s %5s %4s  %-30s %s\n",
		"", "placed", "sent", "not-sent", "acked", "rejct", "unknown", "resent", "dup", "lost", "reconciled", "fault→first ack on backup")
	for _, t := range s.Transports {
		var rec []string
		for _, f := range []string{"FILLED", "RESTING", "CANCELED", "REJECTED", "NOT_RECEIVED", "UNDETERMINED"} {
			if n := t.Reconciled[f]; n > 0 {
				rec = append(rec, fmt.Sprintf("%s %d", strings.ToLower(f), n))
			}
		}
		if len(rec) == 0 {
			rec = []string{"none"}
		}
		fmt.Fprintf(w, "  %-5s %6d %6d %8d %6d %6d %7d %6d %5d %4d  %-30s %s\n", t.Transport, t.Placed, t.Sent, t.NotSent,
			t.Acked, t.Rejected, t.Unknown, t.Resent, t.Duplicated, t.Lost, strings.Join(rec, ", "), fmtMs(t.FirstAckOnBackup))
	}
	for _, t := range s.Transports {
		var by []string
		for ep, n := range t.AckedBy {
			by = append(by, fmt.Sprintf("%s %d", ep, n))
		}
		sort.Strings(by)
		fmt.Fprintf(w, "  %-5s answers by endpoint: %s\n", t.Transport, strings.Join(by, ", "))
	}
	fmt.Fprintln(w)
	for _, st := range s.Streams {
		fmt.Fprintf(w, "  ws %-11s seq %d..%d, %d delivered, %d duplicate, %d gap, %d snapshot after start, ticks missed %d, longest silence %s, via %s\n",
			st.Stream, st.First, st.Last, st.Messages, st.Duplicates, st.Gaps, st.Snapshots, st.Missed, st.MaxStall.Round(time.Millisecond), strings.Join(st.Endpoints, "→"))
	}
	if s.FIX.Logons > 0 {
		fmt.Fprintf(w, "  fix seq          %d logons, %d resets, last incoming %d, %d gaps repaired by resend (%d PossDup, %d gap-fills), %d backwards\n",
			s.FIX.Logons, s.FIX.Resets, s.FIX.LastIn, s.FIX.Gaps, s.FIX.PossDup, s.FIX.GapFills, s.FIX.Backward)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  invariants checked: %d\n", len(s.Checked))
	for _, c := range s.Checked {
		fmt.Fprintf(w, "    - %s\n", c)
	}
	if s.OK() {
		fmt.Fprintln(w, "  RESULT: OK — every invariant held")
		return
	}
	fmt.Fprintf(w, "  RESULT: FAILED — %d violation(s):\n", len(s.Violations))
	for _, v := range s.Violations {
		fmt.Fprintf(w, "    ✗ %s\n", v)
	}
}

// InFlightLandings returns the client order IDs that the broker booked through a
// region after that region's fence completed, but whose latest attempt began
// before the fence, on a connection the broker first saw before it: orders in
// flight across the fence (or held by a partition and delivered when it
// healed). A local fence closes connections but cannot recall bytes already in
// the network; these are settled by reconciliation (they were handed over as in
// flight) and are not a second live path. Any other booking through a fenced
// region is one.
func (c *Client) InFlightLandings(audit simbroker.AuditLog, switches []SwitchSummary) map[string]bool {
	start := c.rec.Start()
	byID := map[string]OrderRecord{}
	for _, o := range c.Orders() {
		byID[o.ClOrdID] = o
	}
	regionOf := map[string]string{}
	for _, e := range c.cfg.Endpoints {
		regionOf[e.Name] = e.Region
	}
	firstSeen := map[string]time.Time{}
	for _, r := range audit {
		if _, ok := firstSeen[r.ConnID]; r.ConnID != "" && !ok {
			firstSeen[r.ConnID] = r.Time
		}
	}
	out := map[string]bool{}
	for _, sw := range switches {
		fencedAt := start.Add(sw.FenceDone)
		for _, r := range audit.AcceptedThrough(regionOf[sw.From], fencedAt) {
			o, ok := byID[r.ClientOrderID]
			if !ok || o.AttemptAt.IsZero() || !o.AttemptAt.Before(fencedAt) {
				continue
			}
			if seen, ok := firstSeen[r.ConnID]; r.ConnID != "" && (!ok || !seen.Before(fencedAt)) {
				continue
			}
			out[r.ClientOrderID] = true
		}
	}
	return out
}
