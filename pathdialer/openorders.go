package pathdialer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/internal/safetext"
	"github.com/brokerpath/brokerpath/venue"
)

// OpenOrder is one order the application believes rests on the book.
type OpenOrder struct {
	OrderID string `json:"order_id"`
	Symbol  string `json:"symbol,omitempty"`
	// Endpoint the order was placed through ("" when not known): a
	// cancel-on-disconnect scoped to a connection or session reaches only the
	// old endpoint's orders.
	Endpoint string `json:"endpoint,omitempty"`
	// Token the order was placed under (Ticket.Token; 0 when not known):
	// with it a cancel is attributed to a switch the order was placed
	// before, or, at a venue that cancels every order of the profile, to
	// the last switch before it whose late cancel took it.
	Token uint64 `json:"token,omitempty"`
	// Placed is when the order was sent (zero when not known); it places
	// the order among the switches more exactly than Token.
	Placed time.Time `json:"placed,omitzero"`
}

// VenueOrderState is an order's state as the venue reports it.
type VenueOrderState uint8

const (
	// VenueOpen: the order rests on the book.
	VenueOpen VenueOrderState = iota
	// VenueFilled: the order filled (fully) since.
	VenueFilled
	// VenueCancelled: the venue cancelled it (cancel-on-disconnect, a
	// dead-man timer, a cancel request).
	VenueCancelled
	// VenueNotFound: the venue has no record of it.
	VenueNotFound
)

var venueOrderStateNames = [...]string{"open", "filled", "cancelled", "not-found"}

// String returns "open", "filled", "cancelled" or "not-found".
func (s VenueOrderState) String() string {
	if int(s) < len(venueOrderStateNames) {
		return venueOrderStateNames[s]
	}
	return fmt.Sprintf("VenueOrderState(%d)", int(s))
}

// MarshalText renders the state as its String form.
func (s VenueOrderState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses the String form.
func (s *VenueOrderState) UnmarshalText(b []byte) error {
	for i, name := range venueOrderStateNames {
		if string(b) == name {
			*s = VenueOrderState(i)
			return nil
		}
	}
	return fmt.Errorf("pathdialer: %q is not a venue order state (open, filled, cancelled, not-found)", safetext.Bound(string(b)))
}

// VenueOrder is one order as the venue reports it.
type VenueOrder struct {
	OrderID string          `json:"order_id"`
	Symbol  string          `json:"symbol,omitempty"`
	State   VenueOrderState `json:"state"`
}

// OpenOrderQuery is what an OpenOrderCheck's Venue function is asked after a
// switch.
type OpenOrderQuery struct {
	// Service whose orders are reconciled.
	Service string
	// Endpoint to read through: the active endpoint (reads are never held).
	Endpoint Endpoint
	// From is the endpoint that was fenced; To the one flow resumed on.
	From, To string
	Token    uint64
	// Mode and Effect: how the old path was left, and what the venue's
	// profile says that does to resting orders.
	Mode   venue.FenceMode
	Effect venue.SwitchEffect
	// Ours is the application's open orders (from OpenOrderCheck.Ours).
	Ours []OpenOrder
	// Attempt counts from 1.
	Attempt int
}

// OpenOrderCheck reconciles one service's resting orders after a switch.
type OpenOrderCheck struct {
	// Ours returns the orders the application's own record holds open for
	// the service. Required.
	Ours func(ctx context.Context, service string) ([]OpenOrder, error)
	// Venue returns the venue's open orders for the account, read through
	// q.Endpoint (a REST open-orders list, a FIX OrderMassStatusRequest), in
	// one request where the venue allows it: it runs within the venue's
	// lookup budget. It may also report, for orders of q.Ours that are no
	// longer open, whether they filled, were cancelled or are unknown to the
	// venue; an order of q.Ours it does not mention is taken as not open.
	// Required.
	Venue func(ctx context.Context, q OpenOrderQuery) ([]VenueOrder, error)
}

// DiffCause is why an order differs between the application's record and
// the venue's book after a switch.
type DiffCause uint8

const (
	// DiffCancelledBySwitch: the application holds it open; the venue
	// cancelled it (its cancel-on-disconnect fired as the old path was left),
	// or, Presumed, it is no longer open and the fence mode's
	// cancel-on-disconnect reaches it.
	DiffCancelledBySwitch DiffCause = iota + 1
	// DiffFilled: the application holds it open; it filled meanwhile.
	DiffFilled
	// DiffUnknownToVenue: the application holds it open; the venue has no
	// record of it (or it is not open, and nothing in the fence mode cancels
	// it).
	DiffUnknownToVenue
	// DiffNotOurs: open at the venue, not in the application's record.
	DiffNotOurs
)

var diffCauseNames = [...]string{"", "cancelled-by-switch", "filled", "unknown-to-venue", "not-ours"}

// String returns a short name such as "cancelled-by-switch".
func (d DiffCause) String() string {
	if d > 0 && int(d) < len(diffCauseNames) {
		return diffCauseNames[d]
	}
	return fmt.Sprintf("DiffCause(%d)", int(d))
}

// MarshalText renders the cause as its String form.
func (d DiffCause) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// OrderDiff is one difference found by an open-order reconcile.
type OrderDiff struct {
	OrderID string    `json:"order_id"`
	Service string    `json:"service"`
	Symbol  string    `json:"symbol,omitempty"`
	Cause   DiffCause `json:"cause"`
	// Presumed: the venue did not report the order's state; the cause is
	// inferred from the fence mode's effect (Detail says so).
	Presumed bool   `json:"presumed,omitempty"`
	Detail   string `json:"detail,omitempty"`
	// From, To and Token name the switch whose fence cut the order, for
	// DiffCancelledBySwitch: the fence of the endpoint it was placed
	// through, else the first fence whose cancel-on-disconnect reaches it.
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
	Token uint64 `json:"token,omitempty"`
}

// FenceLeft is one fence an open-order reconcile judged: the endpoint
// left, the one flow resumed on, the token and when.
type FenceLeft struct {
	From  string    `json:"from"`
	To    string    `json:"to"`
	Token uint64    `json:"token"`
	At    time.Time `json:"at"`
}

// OpenOrderReport is the result of one service's open-order reconcile
// (Snapshot.OpenOrders keeps the last per service).
type OpenOrderReport struct {
	Service string `json:"service"`
	// From, To and Token are the last fence judged; Fences lists every
	// fence since the previous reconcile, each judged on its own.
	From   string             `json:"from"`
	To     string             `json:"to"`
	Token  uint64             `json:"token"`
	Fences []FenceLeft        `json:"fences,omitempty"`
	Mode   venue.FenceMode    `json:"mode"`
	Effect venue.SwitchEffect `json:"effect"`
	// At is when the reconcile ended.
	At time.Time `json:"at"`
	// Ours and Open count the application's open orders and those the venue
	// holds open.
	Ours     int         `json:"ours"`
	Open     int         `json:"open"`
	Attempts int         `json:"attempts"`
	Diffs    []OrderDiff `json:"diffs,omitempty"`
	// Recheck: a second read of the same fences, when the cancel-on-disconnect
	// of a connection cut was due after the first (Conn.SetCODWithin); Diffs
	// holds only what the first read did not report.
	Recheck bool `json:"recheck,omitempty"`
	// Error is the last failure when every attempt failed ("" on success):
	// the orders were not reconciled, and a human should look.
	Error string `json:"error,omitempty"`
}

// ooFence is one fence an open-order reconcile is owed for: the endpoint
// left, when, when the venue's cancel-on-disconnect of what it cut is due,
// and the switch it belongs to (set at the release that follows it).
type ooFence struct {
	from     string
	fencedAt time.Time
	due      time.Time // fencedAt + CODSettle, or later when a connection cut declared a later cancel (Conn.SetCODWithin)
	to       string    // the endpoint flow resumed on ("" until the release)
	token    uint64    // the token flow resumed under
	released time.Time // when
}

// ooSwitch is what an open-order reconcile is owed for: every fence since
// the last reconcile that judged it (each judged on its own), and the
// orders the switches' own reconciles settled RESTING, by service (read
// with the application's own, which may not record them yet).
type ooSwitch struct {
	fences  []ooFence
	resting map[string][]OpenOrder
	// late, in a run's own copy, are the orders settled RESTING after the
	// run started (oweSettledResting), for its reads still to come; nil
	// elsewhere, and not cloned.
	late *ooLate
}

// ooLate is what the controller hands a running open-order reconcile: the
// orders settled RESTING since it started, read by its goroutine at each
// read of the venue.
type ooLate struct {
	mu     sync.Mutex
	orders []OpenOrder
}

func (l *ooLate) add(o OpenOrder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.orders = append(l.orders, o)
	if n := len(l.orders) - maxOwedResting; n > 0 {
		l.orders = slices.Delete(l.orders, 0, n)
	}
}

func (l *ooLate) snapshot() []OpenOrder {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.orders)
}

func (o *ooSwitch) clone() *ooSwitch {
	c := &ooSwitch{fences: slices.Clone(o.fences), resting: map[string][]OpenOrder{}}
	for k, v := range o.resting {
		c.resting[k] = slices.Clone(v)
	}
	return c
}

// oweOpenOrders records that a fence cut the endpoint's connections: the
// next release reconciles resting orders. codUntil is when the venue's
// cancel-on-disconnect is due for the endpoint's connections cut, by this
// fence or before it, that declared it (Conn.SetCODWithin).
func (c *controller) oweOpenOrders(from string, codUntil time.Time) {
	if len(c.p.cfg.OpenOrders) == 0 {
		return
	}
	if c.ooDue == nil {
		c.ooDue = &ooSwitch{}
	}
	now := time.Now()
	due := later(now.Add(c.p.cfg.CODSettle), codUntil)
	if n := len(c.ooDue.fences); n > 0 {
		// The same switch's fence again (a retry): one fence, the later
		// time, the latest due.
		if f := &c.ooDue.fences[n-1]; f.from == from && f.to == "" {
			f.fencedAt = now
			f.due = later(f.due, due)
			return
		}
	}
	c.ooDue.fences = append(c.ooDue.fences, ooFence{from: from, fencedAt: now, due: due})
}

// maxOwedResting bounds, per service, the orders settled RESTING kept for
// the next open-order reconcile (the oldest go first).
const maxOwedResting = 4096

// oweSettledResting adds the orders a reconcile settled RESTING (a switch's,
// or one that settled unknown outcomes on the active endpoint) to the
// open-order reconcile owed (their service's check, or every check when
// their service has none): the application may not have recorded them when
// the venue is read, and a fence may cancel them. With no fence owed yet
// they wait for the next one. A run in progress for their service is given
// them too, for its reads still to come (a late landing found while it
// waits for a cancel-on-disconnect due later is cancelled by that switch);
// the next fence is owed them all the same, unless that run reports them
// closed (openOrdersDone).
func (c *controller) oweSettledResting(r Reconciliation, settled []Settlement) {
	if len(c.p.cfg.OpenOrders) == 0 {
		return
	}
	if c.ooDue == nil {
		if !slices.ContainsFunc(settled, func(s Settlement) bool { return s.Fate == FateResting }) {
			return
		}
		c.ooDue = &ooSwitch{}
	}
	via := make(map[string]TicketInfo, len(r.Tickets))
	for _, t := range r.Tickets {
		via[t.OrderID] = t
	}
	for _, s := range settled {
		if s.Fate != FateResting {
			continue
		}
		if c.ooDue.resting == nil {
			c.ooDue.resting = map[string][]OpenOrder{}
		}
		o := OpenOrder{OrderID: s.OrderID, Endpoint: via[s.OrderID].Endpoint, Token: via[s.OrderID].Token}
		add := func(svc string) {
			l := append(c.ooDue.resting[svc], o)
			if n := len(l) - maxOwedResting; n > 0 {
				l = slices.Delete(l, 0, n)
			}
			c.ooDue.resting[svc] = l
			if run := c.ooRuns[svc]; run != nil && run.oo != nil && run.oo.late != nil {
				run.oo.late.add(o)
			}
		}
		if _, ok := c.p.cfg.OpenOrders[s.Service]; ok {
			add(s.Service)
			continue
		}
		// A service without a check of its own: every check reads the
		// account's orders, so each is given it.
		for svc := range c.p.cfg.OpenOrders {
			add(svc)
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// startOpenOrders starts the open-order reconcile owed, one run per service,
// beside the controller; called when flow is released.
func (c *controller) startOpenOrders(ctx context.Context) {
	p := c.p
	due := c.ooDue
	if due == nil || len(due.fences) == 0 || ctx.Err() != nil {
		return // nothing owed, or only orders settled RESTING: they wait for a fence
	}
	c.ooDue = nil
	a := p.active.Load()
	for i := range due.fences {
		if due.fences[i].to == "" {
			due.fences[i].to, due.fences[i].token, due.fences[i].released = a.rt.ep.Name, a.gen, time.Now()
		}
	}
	if c.ooRuns == nil {
		c.ooRuns = map[string]*bgRun{}
	}
	for _, svc := range slices.Sorted(maps.Keys(p.cfg.OpenOrders)) {
		c.ooRuns[svc] = c.runOpenOrders(ctx, svc, due, a.rt.ep, a.gen)
	}
}

// stopOpenOrders supersedes the open-order reconciles in progress; what
// they were owed is owed again, to the next release, before any fence
// owed since.
func (c *controller) stopOpenOrders() {
	var back *ooSwitch
	for _, svc := range slices.Sorted(maps.Keys(c.ooRuns)) {
		run := c.ooRuns[svc]
		run.cancel()
		if back == nil {
			back = run.oo.clone()
		}
		last := run.oo.fences[len(run.oo.fences)-1]
		c.p.events.emit(Event{Kind: EventOpenOrderDiff, From: last.from, To: run.r.To, Token: run.r.Token, Service: svc, Duration: time.Since(run.start), Err: errSuperseded, Cause: "open-order reconcile superseded: it runs again after the next release"})
		delete(c.ooRuns, svc)
	}
	if back == nil {
		return
	}
	if c.ooDue != nil {
		back.fences = append(back.fences, c.ooDue.fences...)
		for k, v := range c.ooDue.resting {
			if back.resting == nil {
				back.resting = map[string][]OpenOrder{}
			}
			back.resting[k] = append(back.resting[k], v...)
		}
	}
	c.ooDue = back
}

// runOpenOrders waits until CODSettle after the last fence owed, then
// compares the service's open orders, retrying a failure
// (ReconcileBackoff, and never faster than the venue's lookup interval) up
// to ReconcileAttempts times; when a fence's cancel-on-disconnect is due
// later than that read began (Conn.SetCODWithin), it reads once more then
// and reports what it had not reported.
func (c *controller) runOpenOrders(ctx context.Context, svc string, owed *ooSwitch, ep Endpoint, gen uint64) *bgRun {
	p := c.p
	// The run reads its own copy: the controller may owe the same fences
	// again (stopOpenOrders) while this run's goroutine still reads them.
	due := owed.clone()
	due.late = &ooLate{}
	last := due.fences[len(due.fences)-1]
	c.bgSeq++
	run := &bgRun{id: c.bgSeq, start: time.Now(), oo: due, r: Reconciliation{From: last.from, To: ep.Name, Token: gen, Service: svc}}
	rctx, cancel := context.WithCancel(ctx)
	run.cancel = cancel
	check := p.cfg.OpenOrders[svc]
	fc := p.rest.fence
	first, codDue := ooReadTimes(due.fences, p.cfg.CODSettle)
	c.hooks.Add(1)
	go func() {
		defer c.hooks.Done()
		defer cancel()
		reported := map[string]bool{}
		at := first
		for read := 1; ; read++ {
			if !sleepCtx(rctx, time.Until(at)) {
				return
			}
			began := time.Now()
			again := codDue.After(began)
			rep, err := c.readOpenOrders(rctx, svc, check, due, due.late.snapshot(), ep, gen, fc)
			if rctx.Err() != nil {
				return
			}
			rep.Recheck = read > 1
			if err == nil {
				var fresh []OrderDiff
				for _, d := range rep.Diffs {
					// Only what the earlier read did not say: an order it
					// found open but not in the application's record
					// (placed just before it) may be cancelled since.
					if key := d.OrderID + "\x00" + d.Cause.String(); !reported[key] {
						reported[key] = true
						fresh = append(fresh, d)
					}
				}
				rep.Diffs = fresh
			}
			rep.At = time.Now()
			select {
			case c.bg <- bgResult{kind: bgOpenOrders, id: run.id, key: svc, start: run.start, report: rep, err: err, more: again}:
			case <-rctx.Done():
				return
			}
			if !again {
				return
			}
			at = codDue
		}
	}()
	return run
}

// ooReadTimes returns when the venue is first read for fences, CODSettle
// after the last, and when every fence's cancel-on-disconnect is due (a
// read that begins before it is followed by another then).
func ooReadTimes(fences []ooFence, settle time.Duration) (first, due time.Time) {
	for _, f := range fences {
		first = later(first, f.fencedAt.Add(settle))
		due = later(due, f.due)
	}
	return first, due
}

// readOpenOrders is one read of the venue's open orders for svc, with its
// retries, judged against every fence owed; late are the orders settled
// RESTING since the run started.
func (c *controller) readOpenOrders(ctx context.Context, svc string, check OpenOrderCheck, due *ooSwitch, late []OpenOrder, ep Endpoint, gen uint64, fc FenceChoice) (*OpenOrderReport, error) {
	p := c.p
	last := due.fences[len(due.fences)-1]
	rep := &OpenOrderReport{Service: svc, From: last.from, To: ep.Name, Token: gen, Mode: fc.Mode, Effect: fc.Effect}
	for _, f := range due.fences {
		rep.Fences = append(rep.Fences, FenceLeft{From: f.from, To: f.to, Token: f.token, At: f.fencedAt})
	}
	var err error
	for attempt := 1; attempt <= p.cfg.ReconcileAttempts; attempt++ {
		rep.Attempts = attempt
		err = callHook(ctx, func(ctx context.Context) error {
			tctx, tcancel := context.WithTimeout(ctx, p.cfg.ReconcileTimeout)
			defer tcancel()
			ours, err := check.Ours(tctx, svc)
			if err != nil {
				return fmt.Errorf("the application's open orders: %w", err)
			}
			ours = withSettled(ours, due.resting[svc])
			ours = withSettled(ours, late)
			q := OpenOrderQuery{Service: svc, Endpoint: ep, From: last.from, To: ep.Name, Token: gen, Mode: fc.Mode, Effect: fc.Effect, Ours: slices.Clone(ours), Attempt: attempt}
			theirs, err := check.Venue(tctx, q)
			if err != nil {
				return fmt.Errorf("the venue's open orders: %w", err)
			}
			rep.Ours = len(ours)
			rep.Open = 0
			for _, o := range theirs {
				if o.State == VenueOpen {
					rep.Open++
				}
			}
			rep.Diffs = diffOpenOrders(svc, ours, theirs, due.fences, fc)
			return nil
		})
		if err == nil || ctx.Err() != nil || attempt == p.cfg.ReconcileAttempts {
			break
		}
		if !sleepCtx(ctx, max(p.cfg.ReconcileBackoff.delay(attempt), p.lookupPause(1))) {
			break
		}
	}
	if err != nil {
		rep.Error = boundText(fmt.Sprintf("open orders of %q not reconciled after %d attempts: %v", svc, rep.Attempts, err))
		rep.Diffs = nil
	}
	return rep, err
}

// withSettled adds to the application's open orders those a switch's
// reconcile settled RESTING that it does not list yet.
func withSettled(ours, settled []OpenOrder) []OpenOrder {
	if len(settled) == 0 {
		return ours
	}
	ours = slices.Clone(ours)
	for _, o := range settled {
		if !slices.ContainsFunc(ours, func(m OpenOrder) bool { return m.OrderID == o.OrderID }) {
			ours = append(ours, o)
		}
	}
	return ours
}

// openOrdersDone takes one service's open-order reconcile on the controller:
// the report, its event, and one EventRestingCancelled per order the switch
// cancelled.
func (c *controller) openOrdersDone(res bgResult) {
	p := c.p
	rep := res.report
	p.rest.mu.Lock()
	if p.rest.reports == nil {
		p.rest.reports = map[string]OpenOrderReport{}
	}
	p.rest.reports[rep.Service] = *rep
	p.rest.mu.Unlock()
	c.unoweReported(rep)
	// Counted before any event says so: a Snapshot taken on the event agrees.
	for _, d := range rep.Diffs {
		if d.Cause == DiffCancelledBySwitch {
			p.rest.cancelled.Add(1)
		}
	}
	e := Event{Kind: EventOpenOrderDiff, From: rep.From, To: rep.To, Token: rep.Token, Service: rep.Service, Attempt: rep.Attempts, Duration: time.Since(res.start), Diffs: rep.Diffs}
	if res.err != nil {
		e.Err = fmt.Errorf("pathdialer: open orders of %q not reconciled after %d attempts: %w", rep.Service, rep.Attempts, res.err)
	} else {
		e.Cause = fmt.Sprintf("%d open in the application's record, %d open at the venue, %d difference(s); left in %s mode (%s)", rep.Ours, rep.Open, len(rep.Diffs), rep.Mode, rep.Effect)
		if rep.Recheck {
			e.Cause = "read again when the cancel-on-disconnect of the connections cut was due (new differences only): " + e.Cause
		}
	}
	p.events.emit(e)
	for _, d := range rep.Diffs {
		if d.Cause != DiffCancelledBySwitch {
			continue
		}
		p.events.emit(Event{Kind: EventRestingCancelled, From: d.From, To: d.To, Token: d.Token, Service: d.Service, OrderID: d.OrderID, Cause: d.Detail, Diffs: []OrderDiff{d}})
	}
}

// unoweReported drops from the orders settled RESTING owed to the next
// fence (oweSettledResting) those rep found closed (filled, cancelled, or
// unknown to the venue): reported once, by the switch whose read found it.
func (c *controller) unoweReported(rep *OpenOrderReport) {
	if c.ooDue == nil || len(c.ooDue.resting[rep.Service]) == 0 {
		return
	}
	closed := map[string]bool{}
	for _, d := range rep.Diffs {
		if d.Cause != DiffNotOurs {
			closed[d.OrderID] = true
		}
	}
	if len(closed) == 0 {
		return
	}
	c.ooDue.resting[rep.Service] = slices.DeleteFunc(c.ooDue.resting[rep.Service], func(o OpenOrder) bool {
		return closed[safetext.Bound(o.OrderID)]
	})
}

// diffOpenOrders compares the application's open orders with the venue's
// report, naming each difference's cause. fences are the fences judged
// (oldest first): an order cancelled by a cancel-on-disconnect is
// attributed to the switch whose fence cut it (codFence).
func diffOpenOrders(svc string, ours []OpenOrder, theirs []VenueOrder, fences []ooFence, fc FenceChoice) []OrderDiff {
	byID := make(map[string]VenueOrder, len(theirs))
	for _, o := range theirs {
		byID[o.OrderID] = o
	}
	mine := make(map[string]bool, len(ours))
	ours = slices.Clone(ours)
	slices.SortFunc(ours, func(a, b OpenOrder) int { return strings.Compare(a.OrderID, b.OrderID) })
	var out []OrderDiff
	for _, o := range ours {
		mine[o.OrderID] = true
		v, reported := byID[o.OrderID]
		d := OrderDiff{OrderID: safetext.Bound(o.OrderID), Service: svc, Symbol: safetext.Bound(o.Symbol)}
		f, reaches := codFence(fc.Effect, o, fences)
		from := f.from
		switch {
		case reported && v.State == VenueOpen:
			continue
		case reported && v.State == VenueFilled:
			d.Cause, d.Detail = DiffFilled, "filled meanwhile"
		case reported && v.State == VenueCancelled && reaches:
			d.Cause = DiffCancelledBySwitch
			d.Detail = fmt.Sprintf("cancelled by the switch's cancel-on-disconnect (left %q in %s mode: %s)", from, fc.Mode, fc.Why)
		case reported && v.State == VenueCancelled:
			d.Cause = DiffCancelledBySwitch
			d.Detail = fmt.Sprintf("cancelled during the switch, although leaving %q in %s mode should have kept it (%s): check how the old path was left", from, fc.Mode, fc.Why)
		case reported && v.State == VenueNotFound:
			d.Cause, d.Detail = DiffUnknownToVenue, "the venue has no record of it"
		case reaches:
			d.Cause, d.Presumed = DiffCancelledBySwitch, true
			d.Detail = fmt.Sprintf("no longer open at the venue, and leaving %q in %s mode cancels it (%s); the venue did not say whether it filled instead", from, fc.Mode, fc.Why)
		default:
			d.Cause = DiffUnknownToVenue
			d.Detail = fmt.Sprintf("not open at the venue, and the venue reported neither a fill nor a cancel (left %q in %s mode: %s)", from, fc.Mode, fc.Effect)
		}
		if d.Cause == DiffCancelledBySwitch {
			d.From, d.To, d.Token = f.from, f.to, f.token
		}
		d.Detail = safetext.BoundN(d.Detail, safetext.DetailMax)
		out = append(out, d)
	}
	var extra []OrderDiff
	for _, v := range theirs {
		if v.State == VenueOpen && !mine[v.OrderID] {
			extra = append(extra, OrderDiff{OrderID: safetext.Bound(v.OrderID), Service: svc, Symbol: safetext.Bound(v.Symbol), Cause: DiffNotOurs,
				Detail: "open at the venue, not in the application's record"})
		}
	}
	slices.SortFunc(extra, func(a, b OrderDiff) int { return strings.Compare(a.OrderID, b.OrderID) })
	return append(out, extra...)
}

// codFence returns the fence that cancelled o, and whether the fence
// mode's cancel-on-disconnect reaches it there. Where the cancel reaches
// only the old path's orders, it is the first fence of the endpoint o was
// placed through after o was placed (o.Placed before the fence, or its
// Token lower than the token flow resumed under after the fence; any, when
// neither is known). Where it
// reaches every order, it is the first fence whose cancel could still
// come after o was placed: not one whose cancel was due before the release
// o was placed under. Where nothing reaches o (the mode should have kept
// it), the first fence whose cancel could still come after it was placed,
// else the first fence.
func codFence(eff venue.SwitchEffect, o OpenOrder, fences []ooFence) (ooFence, bool) {
	after := func(f ooFence) bool { return o.Token == 0 || f.token == 0 || o.Token < f.token }
	placed := o.Placed // else the release o was placed under, when it was one of these
	if !placed.IsZero() {
		after = func(f ooFence) bool { return placed.Before(f.fencedAt) }
	}
	for _, f := range fences {
		if placed.IsZero() && o.Token != 0 && f.token == o.Token {
			placed = f.released
		}
	}
	if eff != venue.EffectAllOrders {
		for _, f := range fences {
			if after(f) && o.Endpoint != "" && f.from == o.Endpoint && codReaches(eff, o, f.from) {
				return f, true
			}
		}
	}
	could := func(f ooFence) bool { return after(f) || placed.IsZero() || !f.due.Before(placed) }
	if eff != venue.EffectOldPathOrders {
		for _, f := range fences {
			if codReaches(eff, o, f.from) && could(f) {
				return f, true
			}
		}
	}
	for _, f := range fences {
		if could(f) {
			return f, false
		}
	}
	return fences[0], false
}

// codReaches reports whether leaving the old path, with the given effect,
// cancels o.
func codReaches(eff venue.SwitchEffect, o OpenOrder, from string) bool {
	switch eff {
	case venue.EffectNone:
		return false
	case venue.EffectOldPathOrders:
		return o.Endpoint == "" || o.Endpoint == from
	}
	return true // every open order, or unknown
}

// sleepCtx waits d, or until ctx ends (false then).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// validateResting checks the fields of fence mode, dead-man timer and
// open-order reconcile.
func (c Config) validateResting() error {
	if _, err := c.fenceChoice(); err != nil {
		return err
	}
	switch {
	case c.FarewellTimeout <= 0:
		return configError("FarewellTimeout", "", "FarewellTimeout is %v, must be > 0", c.FarewellTimeout)
	case c.DeadMan != nil && c.DeadManTimeout <= 0:
		return configError("DeadManTimeout", "", "DeadManTimeout is %v, must be > 0 with a DeadMan hook", c.DeadManTimeout)
	case c.DeadMan != nil && c.Engine.BrokerFencesAtLogon:
		return configError("DeadMan", "", "DeadMan needs a fence step to run before, and with Engine.BrokerFencesAtLogon the venue fences the old path at the new logon: arm the timer when the new session logs on instead")
	case c.CODSettle < 0:
		return configError("CODSettle", "", "CODSettle is %v, must be >= 0", c.CODSettle)
	}
	for _, svc := range slices.Sorted(maps.Keys(c.OpenOrders)) {
		chk := c.OpenOrders[svc]
		switch {
		case strings.TrimSpace(svc) == "":
			return configError("OpenOrders", "", "OpenOrders has a blank service name")
		case chk.Ours == nil:
			return configError(fmt.Sprintf("OpenOrders[%q].Ours", svc), "", "OpenOrders[%q].Ours is nil: the application's open orders are what the venue's are compared with", svc)
		case chk.Venue == nil:
			return configError(fmt.Sprintf("OpenOrders[%q].Venue", svc), "", "OpenOrders[%q].Venue is nil: the venue's open-order list is required", svc)
		}
	}
	return nil
}

func boundText(s string) string { return safetext.BoundN(s, safetext.FieldMax) }
