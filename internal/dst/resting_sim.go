package dst

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// RestingSim is what a seed does with resting orders across switches: the
// traders' limit orders rest on the book (price far from the market); a
// session connection, dialed through the Path like an order-entry session,
// asks the broker for a profile-wide cancel-on-disconnect, so a fence that
// closes it (flatten) or an outage that kills it cancels every open order of
// the account; in preserve mode its farewell is the venue's logout, which
// keeps them. The Path reconciles open orders after every switch
// (Config.OpenOrders), and with DeadMan arms the broker's dead-man timer
// through the endpoint a switch goes to before the old one is fenced
// (Config.DeadMan), while the client refreshes it through the active path.
type RestingSim struct {
	On        bool
	Preserve  bool          // Config.FenceMode preserve (else flatten)
	CODSettle time.Duration // Config.CODSettle
	// DeadMan: the venue requires a dead-man timer of DeadManTimeout.
	DeadMan        bool
	DeadManTimeout time.Duration
	// ArmFailAt, ArmFailFor: the dead-man arms fail in that window (a loud
	// hold of any switch then; 0 For: never).
	ArmFailAt, ArmFailFor time.Duration
	// HeartBt, when set: the broker detects the session's drop by missed
	// heartbeats, and cancels CODLate (about 2.4 × HeartBt) after the
	// connection ended; the session declares codWithin(HeartBt) on its
	// connection (Conn.SetCODWithin), as the FIX transport does.
	HeartBt time.Duration
	CODLate time.Duration
}

// codWithin is the FIX transport's rule (transports/fix: 2.5 × HeartBtInt
// plus 500 ms).
func codWithin(hb time.Duration) time.Duration {
	if hb <= 0 {
		return 0
	}
	return hb*5/2 + 500*time.Millisecond
}

func (r RestingSim) String() string {
	if !r.On {
		return "off"
	}
	mode := "flatten"
	if r.Preserve {
		mode = "preserve"
	}
	s := fmt.Sprintf("profile-wide cancel-on-disconnect, fence mode %s, open orders read %v after the fence", mode, r.CODSettle)
	if r.HeartBt > 0 {
		s += fmt.Sprintf(", the broker cancels %v after the session's drop (heartbeat %v; declared %v)", r.CODLate, r.HeartBt, codWithin(r.HeartBt))
	}
	if r.DeadMan {
		s += fmt.Sprintf(", dead-man timer %v", r.DeadManTimeout)
		if r.ArmFailFor > 0 {
			s += fmt.Sprintf(" (arms fail from %v for %v)", r.ArmFailAt, r.ArmFailFor)
		}
	}
	return s
}

// drawResting draws the seed's RestingSim from a source of its own, so
// every field drawn before it is as it was.
func drawResting(s *Scenario) {
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x7e57196e7e57196e))
	dur := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	rs := RestingSim{On: r.IntN(2) == 0}
	rs.Preserve = r.IntN(2) == 0
	rs.CODSettle = dur(100*time.Millisecond, 600*time.Millisecond) + 43*time.Microsecond
	rs.DeadMan = r.IntN(2) == 0
	rs.DeadManTimeout = dur(2*time.Second, 6*time.Second)
	if r.IntN(2) == 0 && s.Duration > 2*time.Second {
		rs.ArmFailAt = dur(500*time.Millisecond, s.Duration-time.Second) + 47*time.Microsecond
		rs.ArmFailFor = dur(100*time.Millisecond, 2*time.Second)
	}
	// Drawn last, so every field above is as it was. A venue that detects
	// the drop by missed heartbeats (half the seeds): it cancels about
	// 2.4 × HeartBtInt after the drop (2.3–2.45 ×). A longer settle (a third
	// of the seeds): two switches within it are judged each.
	if r.IntN(2) == 0 {
		rs.HeartBt = dur(500*time.Millisecond, 2*time.Second).Round(100 * time.Millisecond)
		rs.CODLate = rs.HeartBt * time.Duration(230+r.IntN(16)) / 100
	}
	if r.IntN(3) == 0 {
		rs.CODSettle = dur(time.Second, 4*time.Second) + 43*time.Microsecond
	}
	if rs.On {
		s.Resting = rs
	}
}

// sessionConn is one connection of the resting session.
type sessionConn struct {
	region     string
	start, end time.Time
}

// restingSim is a run's resting-order machinery and record.
type restingSim struct {
	w   *world
	rec restingRecord

	mu       sync.Mutex
	conns    []sessionConn
	closed   map[string]bool // orders the Path reported no longer open
	armFails int
}

// sessionKey marks the session's dials (not paced with the stream's).
type sessionKey struct{}

// buildResting configures the Path's resting-order mechanisms and wraps
// its hooks for the invariants' record. Called last before pathdialer.New.
func (w *world) buildResting(pc *pathdialer.Config) {
	rs := &restingSim{w: w, closed: map[string]bool{}}
	w.rs = rs
	inner := pc.OnEvent
	pc.OnEvent = func(e pathdialer.Event) {
		inner(e)
		rs.rec.onEvent(e)
		rs.onEvent(e)
	}
	pc.Fencer = rs.rec.fencer(pc.Fencer)
	if !w.s.Resting.On {
		return
	}
	pc.Venue = restingVenue(pc.Venue, w.s.Resting)
	pc.FenceMode = pathdialer.FenceFlatten
	if w.s.Resting.Preserve {
		pc.FenceMode = pathdialer.FencePreserve
	}
	pc.CODSettle = w.s.Resting.CODSettle
	if w.s.Resting.CODLate > 0 {
		_ = w.b.SetCODDelay(simbroker.WS, w.s.Resting.CODLate)
	}
	pc.OpenOrders = map[string]pathdialer.OpenOrderCheck{pathdialer.ServiceREST: {Ours: rs.ours, Venue: rs.venueOrders}}
	if w.s.Resting.DeadMan {
		pc.DeadMan = rs.rec.deadMan(rs.arm)
		pc.DeadManTimeout = time.Second
	}
}

// restingVenue is the simulated broker's profile with the session's
// cancel-on-disconnect (profile-wide, kept by a logout) and, when the seed
// has one, a dead-man timer.
func restingVenue(p venue.Profile, rs RestingSim) venue.Profile {
	const doc = "https://pkg.go.dev/github.com/brokerpath/brokerpath/internal/simbroker"
	p.CancelOnDisconnect = venue.Documented(venue.CancelOnDisconnect{Scope: venue.CODProfile, Control: "WebSocket enable_cancel_on_disconnect scope profile",
		Trigger: "the end of the session's connection", KeepOrders: "WebSocket logout"}, doc, "cancel-on-disconnect")
	if rs.DeadMan {
		p.DeadMan = venue.Documented(venue.DeadMan{Available: true, API: "POST /v1/account/cancel-all-after", Timeout: rs.DeadManTimeout, Refresh: rs.DeadManTimeout / 4}, doc, "dead-man timer")
	}
	return p
}

// startResting starts the session and the dead-man refresher (until end).
func (w *world) startResting(wg *sync.WaitGroup, end time.Time) {
	if !w.s.Resting.On {
		return
	}
	wg.Add(1)
	go func() { defer wg.Done(); w.rs.session(end) }()
	if w.s.Resting.DeadMan {
		wg.Add(1)
		go func() { defer wg.Done(); w.rs.refresher(end) }()
	}
}

// session keeps one session connection open through the Path, on the
// active endpoint, until end; dials happen on a grid of its own (odd
// offsets, apart from the stream's).
func (rs *restingSim) session(end time.Time) {
	w := rs.w
	step := w.s.ProbeInterval
	for {
		// The next point of the session's grid.
		k := time.Since(w.start)/step + 1
		at := w.start.Add(k*step + 41*time.Microsecond)
		if !at.Before(end) {
			return
		}
		time.Sleep(time.Until(at))
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), sessionKey{}, true), time.Second)
		ep, _ := w.path.Active()
		c, err := w.path.Dial(ctx, pathdialer.ServiceWS)
		if err != nil {
			cancel()
			continue
		}
		u, _ := ep.Address(pathdialer.ServiceWS)
		pu, perr := url.Parse(u)
		if perr != nil {
			cancel()
			_ = c.Close()
			continue
		}
		_ = c.SetDeadline(time.Now().Add(time.Second))
		wc, _, err := websocket.NewClient(c, pu, http.Header{"X-API-Key": {apiKey}}, 4096, 4096)
		cancel()
		if err != nil {
			_ = c.Close()
			continue
		}
		err = wc.WriteMessage(websocket.TextMessage, []byte(`{"type":"enable_cancel_on_disconnect","scope":"profile"}`))
		_ = c.SetDeadline(time.Time{})
		if err != nil {
			_ = c.Close()
			continue
		}
		// Preserve: the venue's logout (the broker keeps the orders). The
		// farewell (the Path's fence) and the run's end may both write:
		// gorilla allows one writer at a time.
		var wmu sync.Mutex
		logout := func(deadline time.Time) error {
			wmu.Lock()
			defer wmu.Unlock()
			_ = c.SetWriteDeadline(deadline)
			return wc.WriteMessage(websocket.TextMessage, []byte(`{"type":"logout"}`))
		}
		c.SetFarewell(logout)
		c.SetCODWithin(codWithin(w.s.Resting.HeartBt))
		rs.mu.Lock()
		rs.conns = append(rs.conns, sessionConn{region: ep.Region, start: time.Now()})
		i := len(rs.conns) - 1
		rs.mu.Unlock()
		w.tracef(time.Now(), "resting session on %s", ep.Name)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if _, _, err := wc.NextReader(); err != nil {
					return
				}
			}
		}()
		stop := time.NewTimer(time.Until(end))
		select {
		case <-done:
			stop.Stop()
		case <-stop.C:
			// The run's end: leave the venue's way (the orders stay).
			_ = logout(time.Now().Add(time.Second))
			bye := time.NewTimer(time.Second)
			select {
			case <-done:
			case <-bye.C: // no answer (a region down): close it
			}
			bye.Stop()
		}
		_ = c.Close()
		<-done
		rs.mu.Lock()
		rs.conns[i].end = time.Now()
		rs.mu.Unlock()
	}
}

// refresher keeps the dead-man timer armed through the active endpoint,
// every quarter of its timeout, until end; then disarms it.
func (rs *restingSim) refresher(end time.Time) {
	w := rs.w
	t := w.s.Resting.DeadManTimeout
	for k := 0; ; k++ {
		at := w.start.Add(time.Duration(k)*t/4 + 53*time.Microsecond)
		if !at.Before(end) {
			break
		}
		time.Sleep(time.Until(at))
		ep, _ := w.path.Active()
		_ = rs.post(ep, t)
	}
	ep, _ := w.path.Active()
	_ = rs.post(ep, 0)
}

// arm is the Path's DeadMan hook: arm the timer through a.Endpoint; it
// fails in the seed's arm-failure window.
func (rs *restingSim) arm(ctx context.Context, a pathdialer.DeadManArm) error {
	w := rs.w
	if f := w.s.Resting; f.ArmFailFor > 0 {
		now := time.Since(w.start)
		if now >= f.ArmFailAt && now < f.ArmFailAt+f.ArmFailFor {
			rs.mu.Lock()
			rs.armFails++
			rs.mu.Unlock()
			return fmt.Errorf("dead-man arm through %s refused (the seed's arm-failure window)", a.Endpoint.Name)
		}
	}
	if w.armedNow(a.Endpoint.Region, spanArmFail) { // MoveArmFail
		rs.mu.Lock()
		rs.armFails++
		rs.mu.Unlock()
		return fmt.Errorf("dead-man arm through %s refused (the broker refuses arms there)", a.Endpoint.Name)
	}
	return rs.postCtx(ctx, a.Endpoint, w.s.Resting.DeadManTimeout)
}

func (rs *restingSim) post(ep pathdialer.Endpoint, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return rs.postCtx(ctx, ep, timeout)
}

func (rs *restingSim) postCtx(ctx context.Context, ep pathdialer.Endpoint, timeout time.Duration) error {
	u, _ := ep.Address(pathdialer.ServiceREST)
	body := fmt.Sprintf(`{"timeout":%g}`, timeout.Seconds())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u+"/v1/account/cancel-all-after", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := rs.w.dc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("cancel-all-after through %s: HTTP %d", ep.Name, resp.StatusCode)
	}
	return nil
}

// appLag is how long the client takes to record an order a reconcile
// settled RESTING after the event that says so: its record, read by the
// open-order reconcile that starts at the release, may not hold the switch's
// own verdicts yet (the Path reads those with it).
const appLag = 50 * time.Millisecond

// lateLag is how long the client takes to record an order a re-query found
// booked after all (a late landing, reported RESTING): the late-landing
// alarm is handled by a person, so until then only the Path holds it for
// the open-order reconcile of a fence.
const lateLag = 3 * time.Second

// ours is the client's record of its resting orders: limit orders the
// broker acknowledged, or a reconcile settled RESTING (appLag after the
// event; lateLag after a late landing's), not reported closed since.
func (rs *restingSim) ours(context.Context, string) ([]pathdialer.OpenOrder, error) {
	w := rs.w
	rs.mu.Lock()
	closed := make(map[string]bool, len(rs.closed))
	for k := range rs.closed {
		closed[k] = true
	}
	rs.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []pathdialer.OpenOrder
	now := time.Now()
	for id, o := range w.orders {
		lag := appLag
		if _, late := w.lateReported[id]; late {
			lag = lateLag
		}
		held := o.outcome == "acked" || (o.outcome == "unknown" && settledResting(o.settled) && !o.settleAt.After(now.Add(-lag)))
		if o.limit && held && !closed[id] {
			out = append(out, pathdialer.OpenOrder{OrderID: id, Endpoint: o.region, Token: w.placedUnder(o), Placed: o.start})
		}
	}
	slices.SortFunc(out, func(a, b pathdialer.OpenOrder) int { return strings.Compare(a.OrderID, b.OrderID) })
	return out, nil
}

// placedUnder is the token an order was placed under, as the client's
// ticket had it: the broker's record of it where the order carried one,
// else the token of the last release before the answer (the REST orders
// of a run without token headers). w.mu held.
func (w *world) placedUnder(o *orderRec) uint64 {
	if o.ticketGn > 0 {
		return o.ticketGn
	}
	var gen uint64
	for _, r := range w.releases {
		if !r.at.After(o.end) {
			gen = r.gen
		}
	}
	return gen
}

// venueOrders reads the broker's open orders through q.Endpoint, and looks
// up each of q.Ours missing from the list.
func (rs *restingSim) venueOrders(ctx context.Context, q pathdialer.OpenOrderQuery) ([]pathdialer.VenueOrder, error) {
	base, _ := q.Endpoint.Address(pathdialer.ServiceREST)
	get := func(path string, v any) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("X-API-Key", apiKey)
		resp, err := rs.w.dc.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode, nil
		}
		return resp.StatusCode, json.NewDecoder(resp.Body).Decode(v)
	}
	var list struct {
		Orders []simbroker.Order `json:"orders"`
	}
	if code, err := get("/v1/orders?status=open", &list); err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("open orders through %s: HTTP %d: %v", q.Endpoint.Name, code, err)
	}
	var out []pathdialer.VenueOrder
	open := map[string]bool{}
	for _, o := range list.Orders {
		open[o.ClientOrderID] = true
		out = append(out, pathdialer.VenueOrder{OrderID: o.ClientOrderID, State: pathdialer.VenueOpen})
	}
	for _, o := range q.Ours {
		if open[o.OrderID] {
			continue
		}
		var got simbroker.Order
		code, err := get("/v1/orders/"+url.PathEscape(o.OrderID), &got)
		st := pathdialer.VenueOpen
		switch {
		case err != nil:
			return nil, err
		case code == http.StatusNotFound:
			st = pathdialer.VenueNotFound
		case code != http.StatusOK:
			return nil, fmt.Errorf("order %s through %s: HTTP %d", o.OrderID, q.Endpoint.Name, code)
		case got.Status == simbroker.StatusCanceled:
			st = pathdialer.VenueCancelled
		case got.Status == simbroker.StatusFilled:
			st = pathdialer.VenueFilled
		}
		out = append(out, pathdialer.VenueOrder{OrderID: o.OrderID, State: st})
	}
	return out, nil
}

// onEvent keeps the orders the Path reported no longer open (they leave
// the client's record of open orders) and traces the resting events.
func (rs *restingSim) onEvent(e pathdialer.Event) {
	switch e.Kind {
	case pathdialer.EventOpenOrderDiff:
		rs.mu.Lock()
		for _, d := range e.Diffs {
			if d.Cause != pathdialer.DiffNotOurs {
				rs.closed[d.OrderID] = true
			}
		}
		rs.mu.Unlock()
		if e.Err != nil {
			rs.w.tracef(e.Time, "open orders %s→%s: %v", e.From, e.To, e.Err)
		} else {
			ds := make([]string, 0, len(e.Diffs))
			for _, d := range e.Diffs {
				ds = append(ds, d.OrderID+"="+d.Cause.String())
			}
			rs.w.tracef(e.Time, "open orders %s→%s: %d difference(s) %v", e.From, e.To, len(e.Diffs), ds)
		}
	case pathdialer.EventRestingCancelled:
		rs.w.tracef(e.Time, "resting-cancelled %s (%s→%s)", e.OrderID, e.From, e.To)
	}
}

// checkResting judges the resting-order invariants: the broker's
// cancel-on-disconnect cancels of resting orders the client holds open
// (acknowledged, or settled RESTING by a switch's reconcile) whose session
// a switch left (a fence of its endpoint after the session began, before
// the region's next session: a session the network cut whose venue
// cancelled late is no later switch's; the
// cancel no later than CODSettle after that fence began, or the time the
// session declared for its venue's late cancel if later: later still, the
// venue's detection outlasted what the Path was told, a note), each to be
// reported as cancelled by that switch (or by a switch that left after the
// order was placed and before the cancel); and the dead-man arms before
// every fence.
func (w *world) checkResting(res *Result, audit simbroker.AuditLog, viol func(inv, format string, a ...any)) {
	rs := w.rs
	rs.mu.Lock()
	conns := slices.Clone(rs.conns)
	rs.mu.Unlock()
	g := rs.rec.ground(w.start, nil, w.s.Resting.On && w.s.Resting.DeadMan)
	bound := max(w.s.Resting.CODSettle, codWithin(w.s.Resting.HeartBt))
	late := 0
	for _, r := range audit {
		switch r.Kind {
		case simbroker.KindCODCancel, simbroker.KindCODKept, simbroker.KindDeadManCancel:
			w.trace = append(w.trace, tline{at: r.Time.Sub(w.start), text: fmt.Sprintf("broker %s %s via %s %s", r.Kind, r.ClientOrderID, r.Region, r.Detail)})
		}
		if r.Kind != simbroker.KindCODCancel {
			continue
		}
		o := w.orders[r.ClientOrderID] // w.mu held by check
		if o == nil || !o.limit || !(o.outcome == "acked" || (o.outcome == "unknown" && settledResting(o.settled))) {
			continue // not an order the client holds open
		}
		cause := codCause(conns, g.leaves, r.Region, r.Time)
		if cause == nil {
			continue
		}
		if r.Time.After(cause.start.Add(bound)) {
			late++
			continue
		}
		// A profile-wide cancel does not say which session's end fired it:
		// the report may name any switch whose cancel could still come
		// after the order was sent (its fence no later than the cancel,
		// and due, by what the Path was told, no earlier than the order:
		// the FIX session declares its own, HeartBtInt 1 s).
		told := bound
		if w.fx != nil {
			told = max(told, codWithin(time.Second))
		}
		causes := []string{cause.from}
		for _, l := range g.leaves {
			if !l.start.After(r.Time) && !l.start.Add(told).Before(o.start) && !slices.Contains(causes, l.from) {
				causes = append(causes, l.from)
			}
		}
		g.cancels = append(g.cancels, codCancel{orderID: r.ClientOrderID, at: r.Time, causes: causes, left: cause.start})
	}
	if late > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d resting order(s) cancelled by cancel-on-disconnect later than the Path was told after the fence that left their session (the broker saw the drop late): not judged", late))
	}
	g.judge(viol)
}

// settledResting reports whether a switch's reconcile settled the order
// RESTING last.
func settledResting(fates []pathdialer.Fate) bool {
	return len(fates) > 0 && fates[len(fates)-1] == pathdialer.FateResting
}

// codCause returns the fence that left the session whose end fired a
// cancel-on-disconnect on region at at (nil: none). That session is the
// last of the region to have ended by the cancel (else, none having ended,
// the last begun before it); the fence is the first of the region since
// that session began and before the region's next session began: a fence
// of a later session did not end this one (a session the network cut,
// whose venue cancelled late, is no later switch's).
func codCause(conns []sessionConn, leaves []leaveCall, region string, at time.Time) *leaveCall {
	sc, ended := -1, -1
	for i := range conns {
		if conns[i].region != region || conns[i].start.After(at) {
			continue
		}
		sc = i
		if !conns[i].end.IsZero() && !conns[i].end.After(at) {
			ended = i
		}
	}
	if ended >= 0 {
		sc = ended
	}
	if sc < 0 {
		return nil
	}
	var next time.Time // when the region's next session began (zero: none)
	for _, c := range conns[sc+1:] {
		if c.region == region {
			next = c.start
			break
		}
	}
	for i, l := range leaves {
		if l.from == region && !l.start.Before(conns[sc].start) {
			if !next.IsZero() && !l.start.Before(next) {
				return nil
			}
			return &leaves[i]
		}
	}
	return nil
}
