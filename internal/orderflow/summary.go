package orderflow

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

func fmtDur(d time.Duration) string { return fmt.Sprintf("+%.3fs", d.Seconds()) }

func fmtMs(d time.Duration) string {
	if d < 0 {
		return "—"
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

// human renders a duration for a reader: "850 ms", "2.05 s", "1 min 30 s".
func human(d time.Duration) string {
	switch {
	case d < 0:
		return "—"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute && d%time.Second == 0:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Minute:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
}

// countList renders a map of counts, largest first: "8 trading halted, 2 held past its deadline".
func countList(m map[string]int) string {
	type kv struct {
		k string
		n int
	}
	var xs []kv
	for k, n := range m {
		if n > 0 {
			xs = append(xs, kv{k, n})
		}
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].n > xs[j].n || xs[i].n == xs[j].n && xs[i].k < xs[j].k })
	parts := make([]string, 0, len(xs))
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%d %s", x.n, x.k))
	}
	return strings.Join(parts, ", ")
}

var fateOrder = []string{"FILLED", "RESTING", "CANCELED", "REJECTED", "NOT_RECEIVED", "UNDETERMINED"}

// Write prints the summary for a terminal: first the result and the worst of
// the run (violations, halts, late landings, losses, double bookings), then
// every figure with what it counts, every invariant with its number and
// result, and the result again with every finding.
func (s Summary) Write(w io.Writer) {
	fmt.Fprintln(w, "SUMMARY")
	s.writeHead(w)
	if s.Fault != "" {
		fmt.Fprintf(w, "  fault            %s at %s\n", s.Fault, fmtDur(s.FaultAt))
	}
	for _, sw := range s.Switches {
		kind := "failover"
		if sw.Failback {
			kind = "failback"
		}
		fence := fmt.Sprintf("fence of %s began %s, done %s", sw.From, fmtDur(sw.FenceBegan), fmtDur(sw.FenceDone))
		if sw.FenceBegan == sw.At && sw.FenceDone == sw.At {
			fence = "the broker fences: the switch is the fence"
		}
		held := "orders held until released: not released"
		switch {
		case sw.Held >= 0 && len(sw.Services) > 0:
			// Services are released one by one: the hold is the longest.
			parts := make([]string, 0, len(sw.Services))
			for _, h := range sw.Services {
				parts = append(parts, fmt.Sprintf("%s %s (reconcile %s)", h.Service, human(h.Held), human(h.Reconcile)))
			}
			held = fmt.Sprintf("orders held %s: %s; the RELEASE lines in the timeline name each wait", human(sw.Held), strings.Join(parts, ", "))
		case sw.Held >= 0:
			held = fmt.Sprintf("orders held %s, of which reconcile %s (the RELEASE line in the timeline names the wait)", human(sw.Held), human(sw.Reconcile))
		}
		fmt.Fprintf(w, "  %-16s %s → %s at %s (%s; %s)\n", kind, sw.From, sw.To, fmtDur(sw.At), fence, held)
	}
	fmt.Fprintf(w, "  halts            %d (trading halts only when no endpoint is eligible)\n", s.Halts)
	fmt.Fprintf(w, "  account reads    %d ok, %d failed (reads are never held: a read sent to a failing endpoint before the switch fails; see \"account read failed\" in the timeline)\n",
		s.ReadsOK, s.ReadsFail)
	fmt.Fprintln(w)
	for _, t := range s.Transports {
		fmt.Fprintf(w, "  %-4s placed %d: sent %d, not sent %d", t.Transport, t.Placed, t.Sent, t.NotSent)
		if t.NotSent > 0 {
			fmt.Fprintf(w, " (%s: never left the process, safe to place again)", countList(t.NotSentWhy))
		}
		fmt.Fprintln(w)
		var by []string
		for ep, n := range t.AckedBy {
			by = append(by, fmt.Sprintf("%s %d", ep, n))
		}
		sort.Strings(by)
		fmt.Fprintf(w, "       answered by the broker: %d accepted, %d rejected (by endpoint: %s)\n", t.Acked, t.Rejected, strings.Join(by, ", "))
		var rec []string
		total := 0
		for _, f := range fateOrder {
			if n := t.Reconciled[f]; n > 0 {
				rec = append(rec, fmt.Sprintf("%s %d", strings.ToLower(f), n))
				total += n
			}
		}
		fmt.Fprintf(w, "       settled by reconcile: %d", total)
		if total > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(rec, ", "))
		}
		fmt.Fprintf(w, " — the orders handed to reconciliation: in flight at a switch, or finished with an unknown outcome (%d of them)", t.Unknown)
		if t.Provisional > 0 {
			fmt.Fprintf(w, "; %d NOT_RECEIVED verdict(s) were provisional", t.Provisional)
			if t.ProvisionalLanded > 0 {
				fmt.Fprintf(w, " (%d booked after all through the fenced region: late landing(s), listed below)", t.ProvisionalLanded)
			}
		}
		fmt.Fprintln(w)
		lost := fmt.Sprint(t.Lost)
		if t.Inconclusive > 0 {
			lost += fmt.Sprintf(" (%d inconclusive: not answered nor settled yet on a starved host)", t.Inconclusive)
		}
		repeats := fmt.Sprint(t.Repeats)
		if t.Repeats > 0 {
			repeats += fmt.Sprintf(" (%d re-sent with the same ID after a NOT_RECEIVED verdict, %d placed again by the application: submissions, not bookings — booked twice counts bookings)",
				t.RepeatsResent, t.Repeats-t.RepeatsResent)
		}
		fmt.Fprintf(w, "       re-sent with the same ID after NOT_RECEIVED %d; booked twice %d; lost %s; submitted more than once %s; first answer from the backup %s after the fault\n",
			t.Resent, t.Duplicated, lost, repeats, fmtMs(t.FirstAckOnBackup))
	}
	fmt.Fprintln(w)
	for _, st := range s.Streams {
		fmt.Fprintf(w, "  ws %-11s seq %d..%d, %d delivered, %d duplicate, %d gap, %d snapshot after start, ticks missed %d, longest silence %s, via %s\n",
			st.Stream, st.First, st.Last, st.Messages, st.Duplicates, st.Gaps, st.Snapshots, st.Missed, human(st.MaxStall), strings.Join(st.Endpoints, "→"))
	}
	if s.FIX.Logons > 0 {
		fmt.Fprintf(w, "  fix seq          %d logons, %d resets, last incoming %d, %d gaps repaired by resend (%d PossDup, %d gap-fills), %d backwards\n",
			s.FIX.Logons, s.FIX.Resets, s.FIX.LastIn, s.FIX.Gaps, s.FIX.PossDup, s.FIX.GapFills, s.FIX.Backward)
	}
	rep, unrep := s.LateReported()
	repeats := ""
	if s.Repeats > 0 {
		repeats = " (submissions, not bookings: the note below says whose)"
	}
	fmt.Fprintf(w, "  broker's book    %d booked twice (%d after a re-send the library allowed), %d lost, %d on a second live path, late landings %d reported / %d unreported, %d submitted more than once%s\n",
		s.Duplicates, s.DuplicatesAllowed, s.Losses, s.TwoLivePaths, rep, unrep, s.Repeats, repeats)
	for _, l := range s.LateLandings {
		status := "reported"
		switch {
		case l.AfterFinal:
			status = "AFTER A FINAL NOT_RECEIVED"
		case !l.Reported:
			status = "UNREPORTED"
		}
		fmt.Fprintf(w, "    late landing %s: sent %s, fence of %s began %s, booked there %s (%s) — %s\n",
			l.Order, fmtDur(l.SentAt), l.Region, fmtDur(l.FenceAt), fmtDur(l.BookedAt), l.Service, status)
	}
	s.writeResting(w)
	for _, n := range s.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "  INVARIANTS")
	for _, inv := range s.Invariants {
		res := "held"
		switch {
		case !inv.Checked:
			res = "not checked: " + inv.NotChecked
		case inv.Violations > 0:
			res = fmt.Sprintf("VIOLATED %d time(s)", inv.Violations)
		}
		if inv.Inconclusive > 0 {
			res += fmt.Sprintf(" where judged; %d order(s) INCONCLUSIVE (host too starved to judge)", inv.Inconclusive)
		}
		fmt.Fprintf(w, "    I%-2d %-s — %s\n", inv.ID, inv.Name, res)
	}
	switch {
	case s.Undecided():
		fmt.Fprintf(w, "  RESULT: INCONCLUSIVE: this host was too starved to judge (%s) — %d finding(s) could not be decided, every other invariant held:\n", s.Starved, len(s.Inconclusive))
		s.writeInconclusive(w)
		return
	case s.OK():
		fmt.Fprintln(w, "  RESULT: OK — every invariant checked held")
		return
	}
	fmt.Fprintf(w, "  RESULT: FAILED — %d violation(s):\n", len(s.Findings))
	for i, f := range s.Findings {
		if i == 40 {
			fmt.Fprintf(w, "    … %d more\n", len(s.Findings)-40)
			break
		}
		fmt.Fprintf(w, "    ✗ %s\n", f)
	}
	if len(s.Inconclusive) > 0 {
		fmt.Fprintf(w, "  and %d finding(s) INCONCLUSIVE: this host was too starved to judge (%s):\n", len(s.Inconclusive), s.Starved)
		s.writeInconclusive(w)
	}
}

// writeHead prints the result and the worst of the run, before the figures.
func (s Summary) writeHead(w io.Writer) {
	switch {
	case s.Undecided():
		fmt.Fprintf(w, "  RESULT: INCONCLUSIVE: this host was too starved to judge — %d finding(s) could not be decided (listed at the end)\n", len(s.Inconclusive))
	case s.OK():
		fmt.Fprintln(w, "  RESULT: OK — every invariant checked held (listed at the end)")
	default:
		fmt.Fprintf(w, "  RESULT: FAILED — %d violation(s), all listed at the end; the first:\n", len(s.Findings))
		for i, f := range s.Findings {
			if i == 3 {
				fmt.Fprintf(w, "    … %d more\n", len(s.Findings)-3)
				break
			}
			fmt.Fprintf(w, "    ✗ %s\n", f)
		}
	}
	if s.Halts > 0 {
		fmt.Fprintf(w, "  ! trading halted %d× (orders refused at once; the HALT lines in the timeline say why)\n", s.Halts)
	}
	if len(s.LateLandings) > 0 {
		var regions []string
		for _, l := range s.LateLandings {
			if !slices.Contains(regions, l.Region) {
				regions = append(regions, l.Region)
			}
		}
		rep, unrep := s.LateReported()
		fmt.Fprintf(w, "  ! %d late landing(s) through fenced %s: %d reported, %d unreported or after a final NOT_RECEIVED (listed below)\n",
			len(s.LateLandings), strings.Join(regions, ", "), rep, unrep)
	}
	if s.Losses > 0 {
		fmt.Fprintf(w, "  ! %d order(s) sent and never answered nor settled\n", s.Losses)
	}
	if s.Duplicates > 0 {
		fmt.Fprintf(w, "  ! %d order(s) booked twice by the broker\n", s.Duplicates)
	}
	if s.TwoLivePaths > 0 {
		fmt.Fprintf(w, "  ! %d order(s) booked through a second live path\n", s.TwoLivePaths)
	}
	fmt.Fprintln(w)
}

func (s Summary) writeInconclusive(w io.Writer) {
	for i, f := range s.Inconclusive {
		if i == 40 {
			fmt.Fprintf(w, "    … %d more\n", len(s.Inconclusive)-40)
			break
		}
		fmt.Fprintf(w, "    ? %s\n", f)
	}
}

// writeResting prints what each switch did to the resting orders.
func (s Summary) writeResting(w io.Writer) {
	if len(s.RestingBySwitch) == 0 {
		return
	}
	fmt.Fprintf(w, "  resting orders   %d cancelled by the broker itself (cancel-on-disconnect, dead-man), %d of them reported to the client\n",
		s.RestingCancelled, s.RestingReported)
	for _, r := range s.RestingBySwitch {
		what := "no switch"
		if r.To != "" {
			what = fmt.Sprintf("switch %s → %s at %s", r.From, r.To, fmtDur(r.At))
		}
		by := countList(r.CancelledBy)
		if by == "" {
			by = "none"
		}
		fmt.Fprintf(w, "    %s: cancelled %d (%s), reported %d, filled meanwhile %d\n", what, r.Cancelled, by, r.Reported, r.Filled)
	}
}
