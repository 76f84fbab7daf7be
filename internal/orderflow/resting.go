package orderflow

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// Causes a RestingReport gives for a resting order that is no longer open.
const (
	RestingCancelled = "cancelled"        // the broker cancelled it (the client did not ask)
	RestingFilled    = "filled"           // it filled meanwhile
	RestingUnknown   = "unknown to venue" // the broker does not know it
)

// RestingReport is one difference the client's open-order reconcile found
// between its own record of resting orders and the broker's open-order
// list: what the client was told happened to a resting order.
type RestingReport struct {
	At    time.Time
	Order string
	// Cause is RestingCancelled, RestingFilled or RestingUnknown.
	Cause string
	// After names the endpoint flow was on when the reconcile ran.
	After string
}

// DeadManWindow is the span in which the client meant an armed dead-man
// timer to protect the account: from its first successful arm until it
// disarmed (or the history was taken). Zero From: no dead-man in this run.
type DeadManWindow struct {
	From, Until time.Time
	// Rearm bounds how long after a region's trade path opens again the
	// client arms the timer anew (its refresh interval plus a read's
	// timeout): a timer that lapsed while no region could carry a refresh
	// is excused until then (zero: never excused).
	Rearm time.Duration
}

// restingState is the Client's record of its resting orders' reconciles
// and of its dead-man timer.
type restingState struct {
	mu         sync.Mutex
	reports    []RestingReport
	reconciles []time.Time
	closed     map[string]bool // resting orders reported no longer open
	kick       chan string
	dm         DeadManWindow
	dmStopped  bool
	// With Config.PathResting: the generation of the last release of the
	// whole gate (released: there was one).
	lastGen  uint64
	released bool
}

// startResting starts the open-order reconciler (run after every release)
// and, with Config.DeadManTimeout, arms the dead-man timer and starts
// refreshing it.
func (c *Client) startResting(ctx context.Context) error {
	kick := make(chan string, 1)
	c.rst.mu.Lock() // the Path may already deliver events
	c.rst.kick = kick
	c.rst.closed = map[string]bool{}
	c.rst.mu.Unlock()
	c.wg.Add(1)
	go c.openReconciler(kick)
	if c.cfg.DeadManTimeout <= 0 {
		return nil
	}
	if err := c.armDeadMan(ctx, c.cfg.DeadManTimeout); err != nil {
		return fmt.Errorf("orderflow: arm the dead-man timer: %w", err)
	}
	c.wg.Add(1)
	go c.deadManRefresher()
	return nil
}

// kickOpenReconcile asks for an open-order reconcile (after a release on
// endpoint).
func (c *Client) kickOpenReconcile(endpoint string) {
	c.rst.mu.Lock()
	kick := c.rst.kick
	c.rst.mu.Unlock()
	if kick == nil {
		return
	}
	select {
	case kick <- endpoint:
	default:
	}
}

func (c *Client) openReconciler(kick <-chan string) {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case ep := <-kick:
			// A few tries: the first may meet the endpoint still settling.
			for try := 1; ; try++ {
				_, err := c.ReconcileOpen(c.ctx, ep)
				if err == nil || c.ctx.Err() != nil {
					break
				}
				if try == 5 {
					c.rec.Note(Info, "client", "open-order reconcile after the switch to %s failed %d times: %v", ep, try, err)
					break
				}
				select {
				case <-c.ctx.Done():
					return
				case <-time.After(time.Duration(try) * 100 * time.Millisecond):
				}
			}
		}
	}
}

// ReconcileOpen compares the client's resting orders (limit orders the
// broker acknowledged, not yet reported closed) with the broker's open-order
// list, looks up each one missing from it, and reports why it is no longer
// open. It returns the new reports; each is also kept for History.
func (c *Client) ReconcileOpen(ctx context.Context, after string) ([]RestingReport, error) {
	ctx, cancel := context.WithTimeout(rest.WithReconcile(ctx), c.cfg.Timing.ReadTimeout)
	defer cancel()
	var list struct {
		Orders []restOrder `json:"orders"`
	}
	if code, err := c.getJSON(ctx, "/v1/orders?status=open", &list); err != nil || code != http.StatusOK {
		return nil, errors.Join(err, httpErr("open orders", code))
	}
	open := map[string]bool{}
	for _, o := range list.Orders {
		open[o.ClientOrderID] = true
	}
	c.mu.Lock()
	c.rst.mu.Lock()
	var missing []string
	for _, id := range c.ids {
		r := c.orders[id]
		resting := r.Spec.Limit != "" && !r.Rejected && (r.Acked || (r.Settled && r.Fate == pathdialer.FateResting))
		if resting && !c.rst.closed[id] && !open[id] {
			missing = append(missing, id)
		}
	}
	c.rst.mu.Unlock()
	c.mu.Unlock()
	var out []RestingReport
	for _, id := range missing {
		var o restOrder
		code, err := c.getJSON(ctx, "/v1/orders/"+url.PathEscape(id), &o)
		var cause string
		switch {
		case err != nil:
			return out, err
		case code == http.StatusNotFound:
			cause = RestingUnknown
		case code != http.StatusOK:
			return out, httpErr("order "+id, code)
		case o.Status == simbroker.StatusCanceled:
			cause = RestingCancelled
		case o.Status == simbroker.StatusFilled:
			cause = RestingFilled
		default:
			continue // open again by now (a listing older than the lookup)
		}
		rep := RestingReport{At: time.Now(), Order: id, Cause: cause, After: after}
		out = append(out, rep)
		c.rec.NoteOrder(Info, "client", id, "resting order %s: no longer open, %s (open-order reconcile on %s)", id, cause, after)
	}
	c.rst.mu.Lock()
	if c.rst.closed == nil {
		c.rst.closed = map[string]bool{}
	}
	for _, r := range out {
		c.rst.closed[r.Order] = true
	}
	c.rst.reports = append(c.rst.reports, out...)
	c.rst.reconciles = append(c.rst.reconciles, time.Now())
	c.rst.mu.Unlock()
	return out, nil
}

func httpErr(what string, code int) error {
	if code == 0 || code == http.StatusOK || code == http.StatusNotFound {
		return nil
	}
	return fmt.Errorf("orderflow: %s: HTTP %d", what, code)
}

// getJSON reads path through the Client's REST transport into v and
// returns the status (v is decoded only for 200).
func (c *Client) getJSON(ctx context.Context, path string, v any) (int, error) {
	if err := c.lk.wait(ctx); err != nil { // within the venue's lookup budget (lookups.go)
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(c.cfg.APIKeyHeader, c.cfg.APIKey)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, rest.RedactError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(v)
}

// RestingReports returns the open-order reconciles' reports so far.
func (c *Client) RestingReports() []RestingReport {
	c.rst.mu.Lock()
	defer c.rst.mu.Unlock()
	return append([]RestingReport(nil), c.rst.reports...)
}

// armDeadMan arms (refreshes) the broker's dead-man timer; a read for the
// gate (never held by a switch), so the refresh goes out on whichever path
// reads are on, marked as a reconcile's (rest.WithReconcile): a read breaker
// an outage opened never refuses it once the endpoint answers again.
func (c *Client) armDeadMan(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(rest.WithReconcile(ctx), c.cfg.Timing.ReadTimeout)
	defer cancel()
	body := fmt.Sprintf(`{"timeout":%g}`, timeout.Seconds())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/v1/account/cancel-all-after", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(c.cfg.APIKeyHeader, c.cfg.APIKey)
	resp, err := c.http.Do(req)
	if err != nil {
		return rest.RedactError(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("orderflow: cancel-all-after: HTTP %d", resp.StatusCode)
	}
	c.rst.mu.Lock()
	if timeout > 0 && c.rst.dm.From.IsZero() {
		c.rst.dm.From = time.Now()
	}
	c.rst.mu.Unlock()
	return nil
}

func (c *Client) deadManRefresher() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.DeadManRefresh)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		c.rst.mu.Lock()
		stopped := c.rst.dmStopped
		c.rst.mu.Unlock()
		if stopped {
			return
		}
		err := c.refreshDeadMan(c.ctx)
		switch {
		case err != nil && !failing && c.ctx.Err() == nil:
			failing = true
			c.rec.Note(Info, "client", "dead-man refresh failed: %v", err)
		case err == nil && failing:
			failing = false
			c.rec.Note(Info, "client", "dead-man refresh works again")
		}
	}
}

// refreshDeadMan refreshes the dead-man timer (one tick of the refresher)
// through the path reads are on; when that fails, straight through the
// other endpoints in priority order, until one arms it: the timer is the
// account's, whichever region arms it, and a trade path that fails before
// the Path has switched (its probes still pass) must not let it lapse while
// another region answers. It returns the first error when none did.
func (c *Client) refreshDeadMan(ctx context.Context) error {
	err := c.armDeadMan(ctx, c.cfg.DeadManTimeout)
	if err == nil || ctx.Err() != nil {
		return err
	}
	read, _ := c.path.ReadEndpoint()
	eps := slices.Clone(c.cfg.Endpoints)
	slices.SortStableFunc(eps, func(a, b Endpoint) int { return cmp.Compare(a.Priority, b.Priority) })
	for _, ep := range eps {
		if ep.Name == read.Name || ep.REST == "" {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, c.cfg.Timing.ReadTimeout)
		ferr := postDeadMan(actx, c.direct, c.directHdr, ep.Name, ep.REST, c.cfg.DeadManTimeout)
		cancel()
		if ferr == nil {
			c.rec.Note(Info, "client", "dead-man refresh through %s failed (%s): refreshed through %s instead", read.Name, shortErr(err), ep.Name)
			return nil
		}
	}
	return err
}

// StopDeadMan stops refreshing the dead-man timer and disarms it: from now
// on the run no longer needs one.
func (c *Client) StopDeadMan(ctx context.Context) error {
	c.rst.mu.Lock()
	if c.rst.dmStopped || c.rst.dm.From.IsZero() {
		c.rst.mu.Unlock()
		return nil
	}
	c.rst.dmStopped = true
	c.rst.dm.Until = time.Now()
	c.rst.mu.Unlock()
	return c.armDeadMan(ctx, 0)
}

// restingHistory fills h's resting-order fields.
func (c *Client) restingHistory(h *History) {
	c.rst.mu.Lock()
	defer c.rst.mu.Unlock()
	h.Resting = append([]RestingReport(nil), c.rst.reports...)
	h.OpenReconciles = append([]time.Time(nil), c.rst.reconciles...)
	h.DeadMan = c.rst.dm
	if !h.DeadMan.From.IsZero() {
		// The refresher's next tick, and that refresh's round trip.
		h.DeadMan.Rearm = c.cfg.DeadManRefresh + c.cfg.Timing.ReadTimeout
	}
	if !h.DeadMan.From.IsZero() && h.DeadMan.Until.IsZero() {
		h.DeadMan.Until = time.Now()
	}
}

// restingOrders reports whether the history has resting (limit) orders.
func (ck *checker) restingOrders() bool {
	for _, o := range ck.h.Orders {
		if o.Spec.Limit != "" {
			return true
		}
	}
	return false
}

// restingReported checks that every resting order the broker cancelled by
// itself (cancel-on-disconnect, the dead-man timer) before the last release
// or the last open-order reconcile was reported after the cancel (by an
// open-order reconcile, or a CANCELED verdict), and that no report says
// "cancelled" of an order the broker did not cancel.
func (ck *checker) restingReported() {
	var judgedUntil time.Time
	for _, e := range ck.h.Events {
		if e.Kind == pathdialer.EventRelease && e.Time.After(judgedUntil) {
			judgedUntil = e.Time
		}
	}
	for _, t := range ck.h.OpenReconciles {
		if t.After(judgedUntil) {
			judgedUntil = t
		}
	}
	unjudged := 0
	reports := map[string][]RestingReport{}
	for _, r := range ck.h.Resting {
		reports[r.Order] = append(reports[r.Order], r)
	}
	cancelled := map[string]simbroker.Cancel{}
	for _, c := range ck.h.Audit.Cancels() {
		cancelled[c.ClientOrderID] = c
		o, ours := ck.byID[c.ClientOrderID]
		if c.Cause == simbroker.CauseUser || !ours || o.Spec.Limit == "" {
			continue
		}
		ck.sum.RestingCancelled++
		told := false
		for _, r := range reports[c.ClientOrderID] {
			if r.Cause == RestingCancelled && !r.At.Before(c.Time) {
				told = true
				break
			}
		}
		// A reconcile of an order whose outcome was unknown tells the
		// client too: a CANCELED verdict after the cancel.
		for _, v := range o.Verdicts {
			if v.Fate == pathdialer.FateCanceled && !v.At.Before(c.Time) {
				told = true
			}
		}
		if told {
			ck.sum.RestingReported++
			continue
		}
		if !c.Time.Before(judgedUntil) {
			unjudged++
			continue
		}
		{
			ck.violate(InvRestingReported, c.ClientOrderID, "SILENT CANCEL: resting order %s was cancelled by %s (%s, connection %s) at +%v and no open-order reconcile reported it",
				c.ClientOrderID, c.Cause, c.Detail, c.ConnID, ck.rel(c.Time).Round(time.Millisecond))
		}
	}
	if unjudged > 0 {
		ck.sum.Notes = append(ck.sum.Notes, fmt.Sprintf("%d resting order(s) cancelled by the broker after the last release and the last open-order reconcile, not reported: not judged", unjudged))
	}
	for _, r := range ck.h.Resting {
		if r.Cause != RestingCancelled {
			continue
		}
		if c, ok := cancelled[r.Order]; !ok || c.Time.After(r.At) {
			ck.violate(InvRestingReported, r.Order, "WRONG REPORT: resting order %s reported cancelled at +%v, but the broker shows no cancel of it by then",
				r.Order, ck.rel(r.At).Round(time.Millisecond))
		}
	}
}

// deadManGap checks that an armed dead-man timer protected the account
// throughout the window the client meant it to (h.DeadMan), from the
// broker's record of arms, refreshes and firings.
func (ck *checker) deadManGap() {
	w := ck.h.DeadMan
	spans := ck.h.Audit.DeadManSpans(w.Until)
	sort.Slice(spans, func(i, j int) bool { return spans[i].From.Before(spans[j].From) })
	covered := w.From
	unreachable := ck.unreachable()
	report := func(from, to time.Time, why string) {
		for _, u := range unreachable {
			// No region's trade path could carry a refresh from before the
			// timer lapsed until u ended: it fired as it should (during u, or
			// after it before the refresher's next tick), and the client
			// armed it again within its bound of a path opening.
			if w.Rearm > 0 && !u.From.After(from) && !to.After(u.Until.Add(w.Rearm)) {
				ck.sum.Notes = append(ck.sum.Notes, fmt.Sprintf("no armed dead-man timer from +%v to +%v: it lapsed while no region's trade path could carry a refresh (every region down from +%v to +%v) and was armed again within %v of that",
					ck.rel(from).Round(time.Millisecond), ck.rel(to).Round(time.Millisecond), ck.rel(u.From).Round(time.Millisecond), ck.rel(u.Until).Round(time.Millisecond), w.Rearm))
				return
			}
		}
		id := ck.openDuring(from, to)
		if id == "" {
			ck.sum.Notes = append(ck.sum.Notes, fmt.Sprintf("no armed dead-man timer from +%v to +%v (%s), but no resting order was open then",
				ck.rel(from).Round(time.Millisecond), ck.rel(to).Round(time.Millisecond), why))
			return
		}
		ck.sum.DeadManGaps++
		ck.violate(InvDeadMan, "", "DEAD-MAN GAP: no armed timer protected the account from +%v to +%v (%s) while resting order %s was open",
			ck.rel(from).Round(time.Millisecond), ck.rel(to).Round(time.Millisecond), why, id)
	}
	for _, s := range spans {
		if !s.Until.After(covered) {
			continue
		}
		if s.From.After(covered) && s.From.Before(w.Until) {
			report(covered, s.From, "the timer lapsed or was disarmed before the next arm")
		}
		if s.Until.After(covered) {
			covered = s.Until
		}
		if !covered.Before(w.Until) {
			return
		}
	}
	if covered.Before(w.Until) {
		report(covered, w.Until, "no arm covers the end of the window")
	}
}

// unreachable returns the spans in which every region's trade path (its
// REST door: what arms and refreshes the dead-man timer) was failing by an
// injected fault (CheckOptions.Faults), in order. A fault never healed lasts
// until the end.
func (ck *checker) unreachable() []timeSpan {
	regions := map[string]bool{}
	for _, r := range ck.regionOf {
		regions[r] = true
	}
	if len(regions) == 0 || len(ck.opts.Faults) == 0 {
		return nil
	}
	var all []timeSpan
	first := true
	for region := range regions {
		var own []timeSpan
		for _, f := range ck.opts.Faults {
			if f.Region != region || !f.FailsTradePath {
				continue
			}
			end := f.Recovered
			if end.IsZero() {
				end = f.At.Add(1000 * time.Hour)
			}
			own = append(own, timeSpan{f.At, end})
		}
		own = mergeSpans(own)
		if first {
			all, first = own, false
			continue
		}
		var both []timeSpan
		for _, x := range all {
			for _, y := range own {
				from, until := maxTime(x.From, y.From), minTime(x.Until, y.Until)
				if from.Before(until) {
					both = append(both, timeSpan{from, until})
				}
			}
		}
		all = mergeSpans(both)
	}
	return all
}

// mergeSpans sorts spans and merges those that overlap or touch.
func mergeSpans(in []timeSpan) []timeSpan {
	sort.Slice(in, func(i, j int) bool { return in[i].From.Before(in[j].From) })
	var out []timeSpan
	for _, s := range in {
		if n := len(out); n > 0 && !s.From.After(out[n-1].Until) {
			out[n-1].Until = maxTime(out[n-1].Until, s.Until)
			continue
		}
		out = append(out, s)
	}
	return out
}

// timeSpan is [From, Until).
type timeSpan struct{ From, Until time.Time }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// openDuring returns a resting order of the client's that was open on the
// broker at some moment of [from, to): booked before to, and not cancelled
// or filled before from ("" when none).
func (ck *checker) openDuring(from, to time.Time) string {
	closed := map[string]time.Time{} // order ID → first cancel or fill
	for _, r := range ck.h.Audit {
		if r.Kind == simbroker.KindFill || r.Kind == simbroker.KindCODCancel || r.Kind == simbroker.KindDeadManCancel ||
			(r.Kind == simbroker.KindCancel && r.Outcome == simbroker.OutcomeOK) {
			key := r.OrderID
			if key == "" {
				key = "cid:" + r.ClientOrderID
			}
			if _, ok := closed[key]; !ok {
				closed[key] = r.Time
			}
		}
	}
	for _, o := range ck.h.Orders {
		if o.Spec.Limit == "" {
			continue
		}
		for _, b := range ck.bookings[o.ClOrdID] {
			if !b.Time.Before(to) {
				continue
			}
			key := b.OrderID
			if key == "" {
				key = "cid:" + o.ClOrdID
			}
			if end, ok := closed[key]; !ok || end.After(from) {
				return o.ClOrdID
			}
		}
	}
	return ""
}

// RestingSwitch is what one switch did to the client's resting orders: the
// broker's own cancels and the fills nearest in time to it, and how many of
// the cancels the client was told of.
type RestingSwitch struct {
	// From, To: the switch (both empty: a run without a switch).
	From, To string
	At       time.Duration
	// CancelledBy counts the broker's own cancels by cause and connection
	// ("cod eu/fix/1", "dead-man").
	CancelledBy map[string]int
	Cancelled   int
	Reported    int
	Filled      int
}

// restingBySwitch splits the broker's cancels and fills of resting orders
// over the switches whose reconcile covers them.
func (ck *checker) restingBySwitch() {
	type span struct{ sw RestingSwitch }
	var spans []*span
	for _, e := range ck.h.Events {
		if e.Kind == pathdialer.EventSwitch {
			spans = append(spans, &span{sw: RestingSwitch{From: e.From, To: e.To, At: ck.rel(e.Time), CancelledBy: map[string]int{}}})
		}
	}
	after := &span{sw: RestingSwitch{CancelledBy: map[string]int{}}}
	// Each cancel or fill goes to the switch nearest in time: a drop that
	// fires cancel-on-disconnect comes shortly before the switch it causes
	// (an outage) or shortly after (the fence of the old path).
	spanOf := func(t time.Time) *span {
		best := after
		var bestD time.Duration
		for _, s := range spans {
			d := (ck.h.Start.Add(s.sw.At)).Sub(t).Abs()
			if best == after || d < bestD {
				best, bestD = s, d
			}
		}
		return best
	}
	told := map[string]bool{}
	for _, r := range ck.h.Resting {
		if r.Cause == RestingCancelled {
			told[r.Order] = true
		}
	}
	for _, o := range ck.h.Orders {
		for _, v := range o.Verdicts {
			if v.Fate == pathdialer.FateCanceled {
				told[o.ClOrdID] = true
			}
		}
	}
	for _, r := range ck.h.Audit {
		o, ours := ck.byID[r.ClientOrderID]
		if !ours || o.Spec.Limit == "" {
			continue
		}
		switch r.Kind {
		case simbroker.KindFill:
			spanOf(r.Time).sw.Filled++
		case simbroker.KindCODCancel, simbroker.KindDeadManCancel:
			s := spanOf(r.Time)
			key := "dead-man"
			if r.Kind == simbroker.KindCODCancel {
				key = "cod " + r.ConnID
			}
			s.sw.CancelledBy[key]++
			s.sw.Cancelled++
			if told[r.ClientOrderID] {
				s.sw.Reported++
			}
		}
	}
	for _, s := range spans {
		ck.sum.RestingBySwitch = append(ck.sum.RestingBySwitch, s.sw)
	}
	if after.sw.Cancelled+after.sw.Filled > 0 {
		ck.sum.RestingBySwitch = append(ck.sum.RestingBySwitch, after.sw)
	}
}
