package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/integration/chaos/plan"
	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// The venue matrix (-venues): the same seeded schedule once per venue
// profile, the simulated broker playing the profile (simbroker.FromVenue:
// its deduplication scope and window, its lookup lag, its lookup budget, its
// fence, a FIX lockout after a drop) with venue time running -venue-scale
// times faster, and the client judging by the same (scaled) profile with the
// Path's own defaults: the quarantine is the profile's minimum. On top of
// the schedule, copies are held twice: once the schedule is over, the region
// flow is on is blackholed (every service) for half of MaxCopyHold, so the
// copies it held land while their verdict is provisional and must be reported
// within the row's target, and then for the quarantine plus a few seconds, so
// the copies it held land after the verdict was final. Such a landing cannot
// be prevented where the venue neither
// fences nor deduplicates; it must be reported (by the late-landing watch)
// and must not have been re-sent: the row counts it as "after final", and it
// is a violation only when it was never reported.

// parseVenues reads -venues: "all" or profile names separated by commas.
func parseVenues(s string) ([]venue.Profile, error) {
	if strings.TrimSpace(s) == "all" {
		return venue.Shipped(), nil
	}
	var out []venue.Profile
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		p, err := venue.ByName(name)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no venue profile in %q", s)
	}
	return out, nil
}

// VenueRow is one profile's line of the venue matrix.
type VenueRow struct {
	Venue string
	// Played summarises what the simulated broker did with the profile.
	Played                string
	Orders, Faults, Holds int
	// ResendsAllowed: orders re-sent after MayResend allowed it.
	ResendsAllowed int
	// BookedTwice: client order IDs booked more than once; AfterResend: of
	// those, caused by a re-send MayResend allowed (the target is 0).
	BookedTwice, AfterResend int
	// Late landings: reported before any final verdict, reported after a
	// final NOT_RECEIVED (the watch's alarm), never reported (the target is 0).
	LateReported, LateAfterFinal, LateUnreported int
	// LateReportMax: the longest from the moment the venue's lookups could
	// first show a late landing (its booking plus LookupLag) to the
	// library's report of it, over the landings booked while their verdict
	// was provisional; LateTarget: MaxCopyHold plus the profile's budgeted
	// lookup interval, the bound the Path keeps for such a landing
	// (lateTarget). LookupLag: how long the broker's lookups answer "not
	// found" for a booked order (the profile's false-negative horizon, as
	// played): no lookup can find a landing sooner.
	LateReportMax, LateTarget, LookupLag time.Duration
	// LateMeasured: the late landings LateReportMax is over.
	LateMeasured int
	Halts        int
	// Throttled lookups and refused logons (lockouts) at the broker.
	Throttled, Lockouts int
	Violations          int
	Result              string
}

// runVenues runs the schedule once per profile and prints the venue table.
func runVenues(ctx context.Context, o options, regions []string, sched plan.Schedule, w io.Writer, profiles []venue.Profile) int {
	code := 0
	var rows []VenueRow
	for _, p := range profiles {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(w, "\n=== venue %s\n", p.Name)
		r, err := newVenueRunner(ctx, o, regions, sched, w, p)
		if err != nil {
			fmt.Fprintln(w, "chaos:", err)
			rows = append(rows, VenueRow{Venue: p.Name, Result: "not run: " + err.Error()})
			code = 1
			continue
		}
		c, row := r.run(ctx)
		rows = append(rows, r.venueRow(row))
		code = max(code, c)
	}
	fmt.Fprintf(w, "\nCHAOS VENUE MATRIX — seed %d, schedule digest %s, venue time ×%g (replay: make chaos-venues SEED=%d)\n", o.seed, sched.Digest(), o.venueScale, o.seed)
	WriteVenueTable(w, rows)
	return code
}

// newVenueRunner starts a broker playing p and a client judging by it.
func newVenueRunner(ctx context.Context, o options, regions []string, sched plan.Schedule, w io.Writer, p venue.Profile) (*runner, error) {
	hb := time.Duration(orderflow.DefaultTiming().HeartBtInt) * time.Second
	// The client keeps the Path's default MaxCopyHold; its quarantine is the
	// profile's minimum for it.
	const maxCopyHold = pathdialer.DefaultMaxCopyHold
	probe, err := simbroker.FromVenue(p, simbroker.VenueOptions{TimeScale: o.venueScale, Heartbeat: hb})
	if err != nil {
		return nil, err
	}
	hold := probe.Venue.Profile.MinQuarantine(maxCopyHold) + 3*time.Second
	bcfg, err := simbroker.FromVenue(p, simbroker.VenueOptions{TimeScale: o.venueScale, Heartbeat: hb, MaxCopyHold: maxCopyHold, CopyHold: hold})
	if err != nil {
		return nil, err
	}
	bcfg.Regions = regions
	bcfg.Seed = o.seed
	bcfg.TickInterval = 50 * time.Millisecond
	bcfg.Streams = []string{"px.EURUSD"}
	bcfg.ReplayBuffer = 16384
	bcfg.PingInterval = time.Second
	bcfg.ClientCompID = "CHAOS"
	b, err := simbroker.Start(ctx, bcfg)
	if err != nil {
		return nil, err
	}
	for _, m := range bcfg.Venue.Mapping {
		fmt.Fprintf(w, "chaos: %s plays %s\n", p.Name, m)
	}
	cfg := orderflow.FromSimBroker(b)
	cfg.Timing.FlapLimit = 12
	cfg.Timing.FlapWindow = 30 * time.Second
	cfg.Timing.Cooldown = 2 * time.Second
	// The Path's defaults: the quarantine is the venue's minimum (its
	// false-negative horizon plus MaxCopyHold).
	cfg.Timing.Quarantine = 0
	c, err := orderflow.New(cfg)
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := c.Start(sctx); err != nil {
		_ = c.Close()
		_ = b.Close()
		return nil, fmt.Errorf("start client: %w", err)
	}
	pol := orderflow.BrokerPolicy{Dedup: bcfg.Dedup.String(), Fence: bcfg.Fence.String(), Tokens: bcfg.Tokens.String()}
	q := b.Profile().MinQuarantine(maxCopyHold)
	fmt.Fprintf(w, "chaos: %s: quarantine %v (the profile's minimum), copies held %v, then %v, in the run\n", p.Name, q, shortHold(maxCopyHold), hold)
	r := &runner{o: o, pol: pol, w: w, sched: sched, b: b, c: c, venue: &p, hold: hold, quarantine: q, shortHold: shortHold(maxCopyHold)}
	r.extra = r.holdCopies
	return r, nil
}

// shortHold is the first hold of the venue matrix: half of MaxCopyHold. The
// copies it holds land after the switch's lookups called them not received
// (provisional) and before the quarantine ends, so the venue's lookups show
// them (its lookup lag after the landing) while the verdict is still
// provisional: the re-queries every MaxCopyHold must report them, within the
// row's target.
func shortHold(maxCopyHold time.Duration) time.Duration { return maxCopyHold / 2 }

// holdCopies blackholes the region flow is on, twice, once the schedule is
// over (a scheduled fault's recovery would end a hold early), 5 s apart:
// first for shortHold, so its copies land while their verdict is
// provisional, then for the hold, longer than the quarantine, so its copies
// land after the verdict is final (the late-landing watch's alarm). run
// starts it with trading and cancels ctx when trading stops (a hold then
// ends at once).
func (r *runner) holdCopies(ctx context.Context) {
	next := r.start.Add(r.planned() + 2*time.Second)
	for i := range holdsPlanned {
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		ep, _ := r.c.Path().Active()
		region := ep.Region
		hold, than := r.hold, "longer than the quarantine"
		if i == 0 {
			hold, than = r.shortHold, "shorter than MaxCopyHold, within the quarantine"
		}
		r.c.Recorder().Note(orderflow.Info, "chaos", "HOLD %s: every byte held for %v (%s %v), then delivered", region, hold, than, r.quarantine)
		err := r.b.HoldCopies(ctx, region, hold, simbroker.Services...)
		r.mu.Lock()
		r.holds++
		if err != nil && !errors.Is(err, context.Canceled) {
			r.errs = append(r.errs, fmt.Sprintf("hold on %s: %v", region, err))
		}
		r.mu.Unlock()
		r.c.Recorder().Note(orderflow.Info, "chaos", "RELEASE HOLD %s", region)
		next = time.Now().Add(5 * time.Second)
	}
}

// holdsPlanned is how many holds holdCopies makes.
const holdsPlanned = 2

// extraDone reports whether the venue matrix's holds are over (always true
// in the policy matrix): trading goes on until they are, so every held copy
// is delivered while the client still trades.
func (r *runner) extraDone() bool {
	if r.venue == nil {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.holds >= holdsPlanned
}

// awaitReports waits, after the drain, until every late landing so far is
// reported (the late-landing watch looks again at doubling intervals after
// a final verdict), for at most twice the hold: what is still unreported
// then is counted as such.
func (r *runner) awaitReports() {
	deadline := time.Now().Add(2 * r.hold)
	tk := time.NewTicker(200 * time.Millisecond)
	defer tk.Stop()
	for time.Now().Before(deadline) {
		all := true
		for _, l := range r.c.Check(orderflow.CheckOptions{Audit: r.b.Audit()}).LateLandings {
			all = all && l.Reported
		}
		if all {
			return
		}
		<-tk.C
	}
	fmt.Fprintf(r.w, "chaos: late landings still unreported %v after the drain\n", 2*r.hold)
}

// reportedAlarms drops from sum's findings the late landings after a final
// NOT_RECEIVED that were reported (the watch's alarm): under the venue
// matrix copies are held longer than any quarantine on purpose, and such a
// landing is counted in the row, not failed. An unreported one stays.
func reportedAlarms(sum orderflow.Summary) orderflow.Summary {
	reported := map[string]bool{}
	for _, l := range sum.LateLandings {
		if l.AfterFinal && l.Reported {
			reported[l.Order] = true
		}
	}
	var kept []orderflow.Finding
	var vs []string
	for _, f := range sum.Findings {
		if f.Invariant == orderflow.InvLateLandings && reported[f.Order] && strings.Contains(f.Text, "AFTER A FINAL VERDICT") {
			continue
		}
		kept = append(kept, f)
		vs = append(vs, f.String())
	}
	dropped := len(sum.Findings) - len(kept)
	sum.Findings, sum.Violations = kept, vs
	sum.Invariants = slices.Clone(sum.Invariants)
	for i := range sum.Invariants {
		if sum.Invariants[i].ID == orderflow.InvLateLandings {
			sum.Invariants[i].Violations -= dropped
		}
	}
	rep, after, unrep := 0, 0, 0
	for _, l := range sum.LateLandings {
		switch {
		case !l.Reported:
			unrep++
		case l.AfterFinal:
			after++
		default:
			rep++
		}
	}
	if rep+after+unrep > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("%d late landing(s) (orders written before a fence, booked through the old region after it): %d reported, %d after a final NOT_RECEIVED (copies held longer than the quarantine; reported by the late-landing watch as alarms, never re-sent), %d unreported", rep+after+unrep, rep, after, unrep))
	}
	return sum
}

// venueRow is this run's line of the venue matrix.
func (r *runner) venueRow(row Row) VenueRow {
	sum := r.sum
	v := VenueRow{Venue: r.venue.Name, Played: fmt.Sprintf("dedup=%s fence=%s", r.pol.Dedup, r.pol.Fence), Orders: row.Orders,
		Faults: row.Faults, BookedTwice: sum.Duplicates, AfterResend: sum.DuplicatesAllowed, Halts: sum.Halts,
		Violations: row.Violations, Result: row.Result}
	if p := r.b.Play(); p != nil {
		if p.DedupWindow > 0 {
			v.Played += fmt.Sprintf(" (window %v)", p.DedupWindow)
		}
		v.LookupLag = p.LookupLag
		v.Played += fmt.Sprintf(" lookup lag %v", p.LookupLag)
	}
	r.mu.Lock()
	v.Holds = r.holds
	r.mu.Unlock()
	for _, t := range sum.Transports {
		v.ResendsAllowed += t.Resent
	}
	for _, l := range sum.LateLandings {
		switch {
		case !l.Reported:
			v.LateUnreported++
		case l.AfterFinal:
			v.LateAfterFinal++
		default:
			v.LateReported++
		}
	}
	v.LateReportMax, v.LateMeasured = lateReport(sum.LateLandings, v.LookupLag, func(order string) bool {
		pv, ok := r.c.Path().Verdict(order)
		return ok && pv.AfterFinal
	})
	v.LateTarget = lateTarget(pathdialer.DefaultMaxCopyHold, r.b.Profile(), 1)
	st := r.b.VenueStats()
	v.Throttled, v.Lockouts = st.Throttled, st.Lockouts
	return v
}

// lateReport returns the longest time from when the venue's lookups could
// first show a late landing (its booking plus lag) to the library's report
// of it, over the landings the target covers (n of them): reported after
// their booking, and found while their verdict was provisional — not after
// a final NOT_RECEIVED, whether the checker saw the verdict final before the
// booking (AfterFinal) or the Path made it final before its lookups could
// show the booking (alarm: pathdialer.Verdict.AfterFinal; a copy held longer
// than MaxCopyHold, found by the late-landing watch). One reported before its
// lookups could show it (the broker's own answer, an execution report)
// counts as 0.
func lateReport(lands []orderflow.LateLanding, lag time.Duration, alarm func(order string) bool) (longest time.Duration, n int) {
	for _, l := range lands {
		if l.ReportedAt <= 0 || l.AfterFinal || alarm != nil && alarm(l.Order) {
			continue
		}
		n++
		longest = max(longest, l.ReportedAt-(l.BookedAt+lag))
	}
	return longest, n
}

// lateTarget is the bound on reporting a late landing that lands while its
// verdict is provisional, counted from when the venue's lookups can first
// show it (its booking, plus the venue's lookup lag): the Path looks the
// order up again at least every maxCopyHold, and a look may wait one
// budgeted call for the venue's budget: one lookup interval
// (venue.Profile.LookupInterval), or listing's requests of them through a
// reconciler that reads order listings (pathdialer.Config.ReconcileListings;
// the demo client's listing is one request).
func lateTarget(maxCopyHold time.Duration, p venue.Profile, listing int) time.Duration {
	return maxCopyHold + time.Duration(max(listing, 1))*p.LookupInterval()
}

// WriteVenueTable prints the venue matrix as a Markdown table.
func WriteVenueTable(w io.Writer, rows []VenueRow) {
	head := []string{"venue", "played as", "orders", "faults (holds)", "resends allowed", "booked twice (after an allowed resend)",
		"late landings reported / after final / unreported", "late landing reported within (target), from when lookups show it", "halts", "lookups throttled", "logons locked out", "result"}
	cells := [][]string{head}
	for _, r := range rows {
		res := r.Result
		if res == "OK" || res == "FAILED" || res == "interrupted" {
			res = fmt.Sprintf("%s (%d violations)", res, r.Violations)
		}
		cells = append(cells, []string{r.Venue, r.Played, fmt.Sprint(r.Orders), fmt.Sprintf("%d (%d)", r.Faults, r.Holds),
			fmt.Sprint(r.ResendsAllowed), fmt.Sprintf("%d (%d)", r.BookedTwice, r.AfterResend),
			fmt.Sprintf("%d / %d / %d", r.LateReported, r.LateAfterFinal, r.LateUnreported), lateWithin(r), fmt.Sprint(r.Halts),
			fmt.Sprint(r.Throttled), fmt.Sprint(r.Lockouts), res})
	}
	writeTable(w, cells, 2)
}

// lateWithin renders the longest time from when a late landing could first
// be looked up to its report, against the target ("–" when none was
// reported after its booking while its verdict was provisional).
func lateWithin(r VenueRow) string {
	if r.LateMeasured == 0 {
		return fmt.Sprintf("– (%v)", r.LateTarget.Round(time.Millisecond))
	}
	return fmt.Sprintf("%v (%v)", r.LateReportMax.Round(time.Millisecond), r.LateTarget.Round(time.Millisecond))
}
