package dst

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// Invariants of a second process (Scenario.Proc2), judged from the broker's
// record.
const (
	// InvOneProcess: after the second process's first order reached the
	// broker, nothing of the first process is booked (tokens checked; with
	// tokens not checked such a booking is a note, "booked on a lapsed
	// lease").
	InvOneProcess = "one-process-at-a-time"
	// InvTakeoverReconciles: every order of the first process that was in
	// flight or of unknown outcome at the takeover was looked up at the
	// broker, after the takeover began, before the second process's first
	// order reached the broker.
	InvTakeoverReconciles = "takeover-reconciles-first"
)

// proc2ID is the prefix of the second process's client order IDs.
const proc2ID = "p2-"

// drawProc2 decides Scenario.Proc2 from a source of its own (every other
// field of every seed stays as drawn): three in four coordinated seeds
// without resting orders (a process halted for good never runs the
// open-order check its last switch owes, after that switch's release).
func drawProc2(s *Scenario) {
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x70726f6332706332))
	s.Proc2 = s.Coordinated && !s.Resting.On && r.IntN(4) > 0
}

// proc2 is the second process of a Proc2 scenario: its own Path (started
// with the first, held until the coordinator assigns it), REST transport,
// reconcile and traders, over the same network and broker. It is the
// standby: when the first process's lease lapses the coordinator assigns it
// the active endpoint under the next token (the takeover); its reconcile
// looks up, before its flow is released, every order the first process's
// journal shows in flight or of unknown outcome at that instant; then its
// traders place orders, and it looks up every order of the first process
// that finishes unknown later. It is never paused.
type proc2 struct {
	a *world // the first process
	w *world // the second
	c *coordinator

	mu       sync.Mutex
	took     bool
	at       time.Time // the coordinator assigned the second process
	token    uint64
	endpoint string
	pending  []string            // the first process's journal at the takeover
	looked   bool                // every pending order was looked up
	swept    map[string]struct{} // orders of the first process looked up after they finished
	closed   bool
	sem      chan struct{} // one Assign at a time (the second process's follower)
}

func newProc2(c *coordinator) *proc2 {
	a := c.w
	s := a.s
	// The moves act through the first process's hooks; the second sees
	// the network's and the broker's faults only.
	s.Moves, s.Pauses, s.H2, s.Identity, s.Resting = nil, nil, false, false, RestingSim{}
	w := &world{s: s, o: Options{TraceDetail: a.o.TraceDetail}, start: a.start, net: a.net, b: a.b, orders: map[string]*orderRec{}}
	w.dc = &http.Client{Transport: &http.Transport{DialContext: a.net.Dial, DisableKeepAlives: true}}
	p := &proc2{a: a, w: w, c: c, swept: map[string]struct{}{}, sem: make(chan struct{}, 1)}
	w.takeover = p
	return p
}

// start builds the second process and starts its Path (held until the
// takeover's Assign), a few microseconds after the first's.
func (p *proc2) start() error {
	if err := p.w.buildClient(); err != nil {
		return fmt.Errorf("dst: second process: %w", err)
	}
	p.c.wg.Add(1)
	go func() {
		defer p.c.wg.Done()
		if !p.c.sleepUntil(p.a.start.Add(41 * time.Microsecond)) {
			return
		}
		if err := p.w.path.Start(p.c.ctx); err != nil {
			p.w.tracef(time.Now(), "start: %v", err)
		}
	}()
	return nil
}

// close closes the second process's Path (after the checks).
func (p *proc2) close() {
	p.mu.Lock()
	done := p.closed
	p.closed = true
	p.mu.Unlock()
	if !done {
		p.w.close()
	}
}

// closeProc2 closes the second process, if any.
func (c *coordinator) closeProc2() {
	if c == nil || c.p2 == nil {
		return
	}
	c.p2.close()
}

// live returns the second process once it has taken over (nil before, and
// outside Proc2 scenarios).
func (c *coordinator) live() *proc2 {
	if c == nil || c.p2 == nil {
		return nil
	}
	c.p2.mu.Lock()
	defer c.p2.mu.Unlock()
	if !c.p2.took {
		return nil
	}
	return c.p2
}

// proc2Sent reports whether id is an order of the second process.
func (c *coordinator) proc2Sent(id string) bool {
	return c != nil && c.p2 != nil && strings.HasPrefix(id, proc2ID)
}

// takeOver is the lease's server side at the first lapse of a Proc2
// scenario: the second process is assigned endpoint under tok. Its
// reconcile reads the first process's journal as it is now.
func (p *proc2) takeOver(tok uint64, endpoint string) {
	now := time.Now()
	var pending []string
	p.a.mu.Lock()
	for id, o := range p.a.orders {
		if o.end.Before(o.start) || (o.outcome == "unknown" && !o.settledSinceEnd()) {
			pending = append(pending, id)
		}
	}
	p.a.mu.Unlock()
	sort.Strings(pending)
	p.mu.Lock()
	p.took, p.at, p.token, p.endpoint, p.pending = true, now, tok, endpoint, pending
	p.mu.Unlock()
	p.a.tracef(now, "coord: process 2 takes over %s under token %d; process 1's journal has %d order(s) in flight or unknown %v", endpoint, tok, len(pending), pending)
	p.c.wg.Add(1)
	go func() {
		defer p.c.wg.Done()
		p.assign(endpoint, tok, "takeover")
	}()
	end := p.a.start.Add(p.a.s.Duration)
	if e := now.Add(1500 * time.Millisecond); e.After(end) {
		end = e
	}
	for i := 0; i < p.w.s.Traders; i++ {
		p.c.wg.Add(1)
		go func() {
			defer p.c.wg.Done()
			p.trade(i, now, end)
		}()
	}
	p.c.wg.Add(1)
	go func() {
		defer p.c.wg.Done()
		p.sweep()
	}()
}

// assign calls the second process's Path.Assign (its follower is never
// paused), retrying while another switch is in progress.
func (p *proc2) assign(endpoint string, tok uint64, why string) {
	c := p.c
	select {
	case p.sem <- struct{}{}:
	case <-c.stop:
		return
	}
	defer func() { <-p.sem }()
	for {
		err := p.w.path.Assign(c.ctx, endpoint, tok)
		if c.ctx.Err() != nil {
			return
		}
		p.w.tracef(time.Now(), "coord assign %s token %d (%s): %v", endpoint, tok, why, errText(err))
		if !errors.Is(err, pathdialer.ErrSwitchInProgress) {
			return
		}
		if !c.sleepUntil(time.Now().Add(c.s.KeepAlive + 17*time.Microsecond)) {
			return
		}
	}
}

// trade is trader i of the second process: from the takeover until end, on
// a grid of its own.
func (p *proc2) trade(i int, from, end time.Time) {
	s := p.w.s
	if !p.c.sleepUntil(from.Add(time.Duration(i)*s.OrderEvery/time.Duration(s.Traders) + time.Duration(2*i+1)*43*time.Microsecond)) {
		return
	}
	tk := time.NewTicker(s.OrderEvery)
	defer tk.Stop()
	for k := 1; ; k++ {
		select {
		case <-tk.C:
		case <-p.c.stop:
			return
		}
		if !time.Now().Before(end) {
			return
		}
		p.w.place(fmt.Sprintf("%st%d-%d", proc2ID, i, k), k%s.LimitEvery == 0)
		select {
		case <-tk.C:
		default:
		}
	}
}

// lookups is the second process's reconcile of the first process's orders
// (called first in each of its reconciles): until every order of the first
// process's journal at the takeover has been looked up once, it looks them
// up, through the second process's Path; a lookup that fails fails the
// reconcile (it is retried, and the flow stays held). Nil outside the
// second process, and before the takeover.
func (p *proc2) lookups(ctx context.Context) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	todo := !p.looked && p.took
	ids := p.pending
	p.mu.Unlock()
	if !todo {
		return nil
	}
	var got []string
	for _, id := range ids {
		fate, err := p.lookup(ctx, id)
		if err != nil {
			return fmt.Errorf("takeover: process 1's order %s: %w", id, err)
		}
		got = append(got, id+"="+fate.String())
	}
	p.mu.Lock()
	p.looked = true
	p.mu.Unlock()
	p.w.tracef(time.Now(), "takeover: looked up %d order(s) of process 1 %v", len(got), got)
	return nil
}

// lookup asks the broker, through the second process's Path, for an order
// of the first, and records the fate in the first process's journal when
// the order had finished.
func (p *proc2) lookup(ctx context.Context, id string) (pathdialer.Fate, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://broker.invalid/v1/orders/"+url.PathEscape(id), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-API-Key", apiKey)
	req.Close = true
	resp, err := p.w.hc.Do(req)
	if err != nil {
		return 0, err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	fate := pathdialer.FateNotReceived
	switch resp.StatusCode {
	case http.StatusOK:
		var o simbroker.Order
		if err := json.Unmarshal(raw, &o); err != nil {
			return 0, err
		}
		fate = pathdialer.FateUndetermined
		switch o.Status {
		case simbroker.StatusFilled:
			fate = pathdialer.FateFilled
		case simbroker.StatusNew:
			fate = pathdialer.FateResting
		case simbroker.StatusCanceled:
			fate = pathdialer.FateCanceled
		}
	case http.StatusNotFound:
	default:
		return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	now := time.Now()
	p.a.mu.Lock()
	if o := p.a.orders[id]; o != nil && !o.end.Before(o.start) && !o.end.After(now) && o.outcome == "unknown" {
		o.settled = append(o.settled, fate)
		o.settleAt = now
		p.mu.Lock()
		p.swept[id] = struct{}{}
		p.mu.Unlock()
	}
	p.a.mu.Unlock()
	return fate, nil
}

// sweep looks up, every SettleUnknown after the takeover's lookups, each
// order of the first process that finished unknown and that nothing has
// settled: the first process is halted and settles nothing more.
func (p *proc2) sweep() {
	next := time.Now().Add(p.w.s.SettleUnknown + 47*time.Microsecond)
	for {
		if !p.c.sleepUntil(next) {
			return
		}
		next = next.Add(p.w.s.SettleUnknown)
		p.mu.Lock()
		looked := p.looked
		p.mu.Unlock()
		if !looked {
			continue
		}
		var ids []string
		p.a.mu.Lock()
		for id, o := range p.a.orders {
			if o.outcome == "unknown" && !o.end.Before(o.start) && !o.settledSinceEnd() {
				p.mu.Lock()
				_, done := p.swept[id]
				p.mu.Unlock()
				if !done {
					ids = append(ids, id)
				}
			}
		}
		p.a.mu.Unlock()
		sort.Strings(ids)
		for _, id := range ids {
			ctx, cancel := context.WithTimeout(p.c.ctx, time.Second)
			fate, err := p.lookup(ctx, id)
			cancel()
			p.w.tracef(time.Now(), "sweep: process 1's %s: %v %v", id, fate, errText(err))
		}
	}
}

// restState is the Path state judged at rest: the second process's once
// it has taken over (the first stays halted), else the first's.
func (w *world) restState() ([]pathdialer.TicketInfo, pathdialer.GateState, error) {
	path := w.path
	if p := w.co.live(); p != nil {
		path = p.w.path
	}
	gate, err := path.GateState()
	return path.Unknown(), gate, err
}

// takeoverTruth is what the second process's invariants are judged on:
// the takeover (when, under which token, the first process's journal then)
// and which client order IDs are whose.
type takeoverTruth struct {
	at      time.Time
	token   uint64
	pending []string
	first   func(id string) bool // the first process's orders
	second  func(id string) bool // the second's
}

// judgeTakeover judges one-process-at-a-time and takeover-reconciles-first
// on the broker's record; it returns the lapsed bookings it noted.
func judgeTakeover(t takeoverTruth, audit simbroker.AuditLog, checked bool, off func(time.Time) time.Duration,
	viol func(inv, format string, a ...any), note func(string)) (lapsed int) {
	var firstB simbroker.Record
	found := false
	for _, r := range audit {
		if r.Kind == simbroker.KindOrder && t.second(r.ClientOrderID) {
			firstB, found = r, true
			break
		}
	}
	if !found {
		return 0
	}
	for _, id := range t.pending {
		ok := false
		for _, r := range audit {
			if r.Seq >= firstB.Seq {
				break
			}
			if r.Kind == simbroker.KindLookup && (r.ClientOrderID == id || r.ClientOrderID == "") && !r.Time.Before(t.at) {
				ok = true
				break
			}
		}
		if ok {
			// A lookup of an order still on its way is not final: one that
			// found nothing may be followed by the order's booking.
			if lk, _ := audit.FirstLookup(id, t.at); lk.Outcome == simbroker.OutcomeFailed && lk.ClientOrderID == id {
				for _, r := range audit.Booked() {
					if r.ClientOrderID == id && r.Seq > lk.Seq {
						note(fmt.Sprintf("late landing after the takeover: process 1's %s not found by the lookup at %v, booked through %s at %v", id, off(lk.Time), r.Region, off(r.Time)))
						break
					}
				}
			}
		} else {
			viol(InvTakeoverReconciles, "process 1's %s was in flight or of unknown outcome at the takeover (%v, token %d); process 2's first order %s reached the broker through %s at %v before any lookup of it since",
				id, off(t.at), t.token, firstB.ClientOrderID, firstB.Region, off(firstB.Time))
		}
	}
	for _, r := range audit {
		if r.Seq <= firstB.Seq || r.Kind != simbroker.KindOrder || !t.first(r.ClientOrderID) || (r.Outcome != simbroker.OutcomeNew && r.Outcome != simbroker.OutcomeCut) {
			continue
		}
		if checked {
			viol(InvOneProcess, "process 1's %s booked through %s at %v with token %d, after process 2's first order %s (token %d) reached the broker at %v",
				r.ClientOrderID, r.Region, off(r.Time), r.Token, firstB.ClientOrderID, firstB.Token, off(firstB.Time))
			continue
		}
		lapsed++
		note(fmt.Sprintf("booked on a lapsed lease: process 1's %s through %s at %v with token %d, after process 2's first order (token %d) at %v (the broker does not check tokens)",
			r.ClientOrderID, r.Region, off(r.Time), r.Token, firstB.Token, off(firstB.Time)))
	}
	return lapsed
}

// checkProc2Orders judges the second process's own orders as the first's
// are judged, against its own record (w.mu is held).
func (w *world) checkProc2Orders(res *Result, bookedAt map[string][]simbroker.Record, viol func(inv, format string, a ...any)) {
	if w.co == nil || w.co.p2 == nil {
		return
	}
	bw := w.co.p2.w
	bw.mu.Lock()
	defer bw.mu.Unlock()
	bw.checkOrders(res, bookedAt, viol)
}

// checkProc2 judges the takeover's invariants (w.mu is held); the second
// process's trace joins the first's.
func (w *world) checkProc2(res *Result, audit simbroker.AuditLog, viol func(inv, format string, a ...any)) {
	if w.co == nil || w.co.p2 == nil {
		return
	}
	p := w.co.p2
	bw := p.w
	bw.mu.Lock()
	for _, l := range bw.trace {
		w.trace = append(w.trace, tline{at: l.at, text: "p2 " + l.text})
	}
	bw.mu.Unlock()
	p.mu.Lock()
	t := takeoverTruth{at: p.at, token: p.token, pending: p.pending,
		first:  func(id string) bool { return w.orders[id] != nil },
		second: func(id string) bool { return strings.HasPrefix(id, proc2ID) }}
	took := p.took
	p.mu.Unlock()
	if !took {
		return
	}
	res.Stats.LapsedBookings += judgeTakeover(t, audit, w.s.Tokens == simbroker.TokensChecked, w.off, viol,
		func(n string) { res.Notes = append(res.Notes, n) })
}
