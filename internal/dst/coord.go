package dst

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// errSessionLost is the cause the simulated follower halts the Path with
// when it learns, on resuming, that its lease expired at the coordinator.
var errSessionLost = errors.New("dst: coordinator session lost (the lease expired while the process was paused)")

// Where the goroutines of a paused process resume, after the pause's end:
// the follower first (it halts the Path before anything else can trade on
// the lapsed decision; with Scenario.FollowerLast after the traders), then
// dials, reconciles, probes, traders and last the process's own timers (an
// order's deadline), each class a fixed offset after the end plus a slot
// drawn from a hash of the goroutine's name, so that no two resume at one
// virtual instant.
const (
	resumeFollower     = 0
	resumeDial         = 250 * time.Microsecond
	resumeReconcile    = 600 * time.Microsecond
	resumeProbe        = 1200 * time.Microsecond
	resumeTrader       = 1800 * time.Microsecond
	resumeFollowerLast = 2400 * time.Microsecond
	resumeTimer        = 3 * time.Millisecond
)

// orderKey carries an order's client order ID in its request's context, so
// that the dial can tell an order's connection from a read's.
type orderKey struct{}

// session is one lease of the simulated follower. Every token the
// coordinator hands this process belongs to the session it was issued in.
type session struct {
	id       int
	expiry   time.Time // at the coordinator (renewed by keep-alives)
	deadline time.Time // given to Path.Extend: expiry - Margin
	lost     bool
	lostAt   time.Time // when the coordinator expired it
	lostDL   time.Time // the deadline in force when it was lost
}

type tokenRaise struct {
	at    time.Time
	token uint64
}

type armedPause struct {
	p       Pause
	trigger chan string // the order whose dial begins the pause
}

// coordinator is the simulated coordinator of a coordinated Scenario: the
// decider and the lease's server side (another process: never paused), and
// this process's follower (keep-alives, Extend, Halt, Assign: paused with
// the process). It also holds the process's pause state.
type coordinator struct {
	w    *world
	s    Scenario
	stop chan struct{}
	ctx  context.Context // cancelled at the end of the run
	quit context.CancelFunc
	wg   sync.WaitGroup
	once sync.Once

	mu       sync.Mutex
	paused   bool
	pauseEnd time.Time
	resumed  chan struct{} // closed when the current pause ends
	armed    []*armedPause
	token    uint64
	sess     *session
	sessions []*session
	tokSess  map[uint64]*session
	raises   []tokenRaise
	kick     chan struct{} // a new session for the server side to watch
	pauses   int
	lapses   int
	defected bool // Options.ExtendOnResume took effect
	refused  bool // the last Assign was refused (the decider assigns again)
	retired  bool // Proc2: the lease was lost to the second process; this one stays halted

	// p2 is the second process (Scenario.Proc2, proc2.go): the standby that
	// takes over at the first lapse.
	p2 *proc2

	// One Assign at a time, as one follower applies them. A channel, not a
	// sync.Mutex: a goroutine waiting on a mutex is not durably blocked, so
	// virtual time would stop while the holder waits for it to advance.
	assignSem chan struct{}
	// The follower's Assign in progress (or waiting for its turn): its
	// token, its endpoint and how to interrupt it. A newer decision
	// interrupts it, as the etcd follower's newer record does: Path.Assign
	// returns (the switch goes on in the Path) and the newer one is applied
	// next, which a Path takes over a switch stuck reconciling with.
	assignTok    uint64
	assignTarget string
	assignStop   context.CancelFunc
}

func newCoordinator(w *world) *coordinator {
	ctx, cancel := context.WithCancel(context.Background())
	return &coordinator{w: w, s: w.s, stop: make(chan struct{}), ctx: ctx, quit: cancel,
		tokSess: map[uint64]*session{}, kick: make(chan struct{}, 1), assignSem: make(chan struct{}, 1)}
}

// start opens the first session and assigns the primary under token 1
// (a coordinated Path holds submissions until its first Assign), then
// starts the follower's keep-alives, the lease's server side, the decider
// and the scheduled pauses.
func (c *coordinator) start() error {
	now := time.Now()
	c.mu.Lock()
	c.token = 1
	c.sess = &session{id: 1, expiry: now.Add(c.s.LeaseTTL), deadline: now.Add(c.s.LeaseTTL - c.s.Margin)}
	c.sessions = append(c.sessions, c.sess)
	c.tokSess[1] = c.sess
	dl := c.sess.deadline
	c.mu.Unlock()
	if err := c.extend(dl); err != nil {
		return fmt.Errorf("dst: coordinator: extend: %w", err)
	}
	c.w.tracef(now, "coord session 1 (lease %v), assign %s token 1", c.s.LeaseTTL, c.s.Regions[0])
	if err := c.w.path.Assign(c.ctx, c.s.Regions[0], 1); err != nil {
		return fmt.Errorf("dst: coordinator: first assign: %w", err)
	}
	c.w.noteCoord("assigned")
	if c.s.Proc2 {
		c.p2 = newProc2(c)
		if err := c.p2.start(); err != nil {
			return err
		}
	}
	c.wg.Add(3)
	go c.keepAlives()
	go c.server()
	go c.decider()
	for i, p := range c.s.Pauses {
		c.wg.Add(1)
		go c.runPause(i, p)
	}
	return nil
}

// close stops every goroutine of the coordinator and waits for them.
func (c *coordinator) close() {
	if c == nil {
		return
	}
	c.once.Do(func() {
		close(c.stop)
		c.quit()
		c.wg.Wait()
	})
}

// sleepUntil waits until t or the end of the run (false).
func (c *coordinator) sleepUntil(t time.Time) bool {
	tm := time.NewTimer(time.Until(t))
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-c.stop:
		return false
	}
}

// slot is where a goroutine named name resumes after a pause, past the end.
func slot(class time.Duration, name string) time.Duration {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return class + time.Duration(h.Sum32()%199)*time.Microsecond + time.Microsecond
}

// wait is a hook point: while the process is paused, the calling goroutine
// stops here until the pause ends, then resumes in its slot. Outside a
// coordinated scenario (c nil) it returns at once.
func (c *coordinator) wait(class time.Duration, name string) {
	if c == nil {
		return
	}
	for {
		c.mu.Lock()
		if !c.paused {
			c.mu.Unlock()
			return
		}
		ch := c.resumed
		c.mu.Unlock()
		<-ch
		time.Sleep(slot(class, name))
	}
}

// extend is the follower's Path.Extend (none under Options.NoExtend).
func (c *coordinator) extend(until time.Time) error {
	if c.w.o.NoExtend {
		return nil
	}
	return c.w.path.Extend(until)
}

// follower is the follower's resume class.
func (c *coordinator) follower() time.Duration {
	if c.s.FollowerLast {
		return resumeFollowerLast
	}
	return resumeFollower
}

// beginPause pauses the process for d from now (a pause already in force
// is lengthened when this one ends later).
func (c *coordinator) beginPause(d time.Duration, why string) {
	now := time.Now()
	end := now.Add(d)
	c.mu.Lock()
	c.pauses++
	if c.paused {
		if end.After(c.pauseEnd) {
			c.pauseEnd = end
		}
		c.mu.Unlock()
		c.w.tracef(now, "pause for %v (%s), within a pause", d, why)
		return
	}
	c.paused, c.pauseEnd, c.resumed = true, end, make(chan struct{})
	c.mu.Unlock()
	c.w.noteCoord("pause")
	c.w.tracef(now, "pause for %v (%s)", d, why)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			c.mu.Lock()
			end := c.pauseEnd
			c.mu.Unlock()
			// The end wakes nothing at an instant another goroutine wakes:
			// the resumed goroutines each sleep their own slot first.
			time.Sleep(time.Until(end))
			c.mu.Lock()
			if !time.Now().Before(c.pauseEnd) {
				c.paused = false
				close(c.resumed)
				c.mu.Unlock()
				c.w.noteCoord("resume")
				c.w.tracef(time.Now(), "pause ends")
				return
			}
			c.mu.Unlock()
		}
	}()
}

// runPause schedules pause i: at its instant, or (InWrite) at the dial of
// the first order after it, at most a second later.
func (c *coordinator) runPause(i int, p Pause) {
	defer c.wg.Done()
	if !c.sleepUntil(c.w.start.Add(p.At + time.Duration(2*i+1)*11*time.Microsecond)) {
		return
	}
	if !p.InWrite {
		c.beginPause(p.For, "scheduled")
		return
	}
	a := &armedPause{p: p, trigger: make(chan string, 1)}
	c.mu.Lock()
	c.armed = append(c.armed, a)
	c.mu.Unlock()
	tm := time.NewTimer(time.Second + 7*time.Microsecond)
	defer tm.Stop()
	select {
	case <-a.trigger: // begun by the order's dial
	case <-tm.C:
		c.mu.Lock()
		taken := true
		for k, x := range c.armed {
			if x == a {
				c.armed = append(c.armed[:k], c.armed[k+1:]...)
				taken = false
				break
			}
		}
		c.mu.Unlock()
		if !taken {
			c.beginPause(p.For, "no order dialled within 1s")
		}
	case <-c.stop:
	}
}

// inWrite is called by an order's dial once the connection is made (after
// Ticket.Valid, before the order's bytes): an armed pause begins here, and
// the order waits for its end like every paused goroutine.
func (c *coordinator) inWrite(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	var a *armedPause
	if len(c.armed) > 0 {
		a = c.armed[0]
		c.armed = c.armed[1:]
	}
	c.mu.Unlock()
	if a != nil {
		a.trigger <- id
		// Not named: orders released at one instant reach their dials at
		// one instant, and which of them arms the pause is the scheduler's
		// choice; all of them wait for its end and resume in a fixed order.
		c.beginPause(a.p.For, "between Ticket.Valid and the write of an order")
	}
	c.wait(resumeDial, id)
}

// orderContext is an order's context: its deadline is a timer of the
// process, so a deadline that passes during a pause fires only after the
// process resumed (after the goroutines that were running). Outside a
// coordinated scenario it is context.WithTimeout.
func (c *coordinator) orderContext(d time.Duration, id string) (context.Context, context.CancelFunc) {
	if c == nil {
		return context.WithTimeout(context.WithValue(context.Background(), orderKey{}, id), d)
	}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), orderKey{}, id))
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		tm := time.NewTimer(d)
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-ctx.Done():
			return
		}
		c.wait(resumeTimer, id)
		cancel()
	}()
	return ctx, cancel
}

// keepAlives is the follower's keep-alive loop (paused with the process).
func (c *coordinator) keepAlives() {
	defer c.wg.Done()
	ka := c.s.KeepAlive
	next := c.w.start.Add(ka + 13*time.Microsecond)
	for {
		if !c.sleepUntil(next) {
			return
		}
		c.wait(c.follower(), "keep-alive")
		c.keepAlive()
		c.mu.Lock()
		retired := c.retired
		c.mu.Unlock()
		if retired {
			return
		}
		for now := time.Now(); !next.After(now); {
			next = next.Add(ka)
		}
	}
}

// keepAlive renews the lease, or learns that it was lost: then it halts the
// Path, opens a new session and assigns the active endpoint under a new
// token (reconcile, release), as coord/etcd's Follower does.
func (c *coordinator) keepAlive() {
	now := time.Now()
	c.mu.Lock()
	sess := c.sess
	if !sess.lost {
		sess.expiry = now.Add(c.s.LeaseTTL)
		sess.deadline = now.Add(c.s.LeaseTTL - c.s.Margin)
		dl := sess.deadline
		c.mu.Unlock()
		_ = c.extend(dl)
		return
	}
	if c.w.o.ExtendOnResume {
		// The planted defect: carry on under the lapsed decision.
		c.defected = true
		c.mu.Unlock()
		_ = c.extend(now.Add(time.Hour))
		return
	}
	if c.live() != nil {
		// Proc2: the second process took over under a later token. This
		// one halts and stays halted (its follower stops): it trades
		// again only when restarted.
		c.retired = true
		c.mu.Unlock()
		c.w.noteCoord("retire")
		err := c.w.path.Halt(errSessionLost)
		c.w.tracef(time.Now(), "coord session %d lost: halted, process 2 holds the lease (%s)", sess.id, errText(err))
		return
	}
	c.mu.Unlock()
	c.w.noteCoord("halt")
	err := c.w.path.Halt(errSessionLost)
	now = time.Now()
	c.w.tracef(now, "coord session %d lost: halted (%s)", sess.id, errText(err))
	c.mu.Lock()
	c.token++
	tok := c.token
	c.sess = &session{id: sess.id + 1, expiry: now.Add(c.s.LeaseTTL), deadline: now.Add(c.s.LeaseTTL - c.s.Margin)}
	c.sessions = append(c.sessions, c.sess)
	c.tokSess[tok] = c.sess
	id, dl := c.sess.id, c.sess.deadline
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	_ = c.extend(dl)
	ep, _ := c.w.path.Active()
	c.w.tracef(now, "coord session %d, assign %s token %d", id, ep.Name, tok)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.assign(ep.Name, tok, "re-established")
	}()
}

// assign calls Path.Assign as the follower (paused with the process),
// retrying while another switch is in progress. A later call with a newer
// token interrupts it (the decision it applies is no longer the newest); a
// call with an older token than the one in progress is dropped.
func (c *coordinator) assign(endpoint string, tok uint64, why string) {
	c.mu.Lock()
	if tok < c.assignTok {
		c.mu.Unlock()
		c.w.tracef(time.Now(), "coord drops assign %s token %d (%s): token %d is newer", endpoint, tok, why, c.assignTok)
		return
	}
	if c.assignStop != nil {
		c.assignStop()
	}
	ctx, stop := context.WithCancel(c.ctx)
	c.assignTok, c.assignTarget, c.assignStop = tok, endpoint, stop
	c.mu.Unlock()
	defer func() {
		stop()
		c.mu.Lock()
		if c.assignTok == tok {
			c.assignTarget, c.assignStop = "", nil
		}
		c.mu.Unlock()
	}()
	select {
	case c.assignSem <- struct{}{}:
	case <-c.stop:
		return
	case <-ctx.Done():
		return // a newer decision came first
	}
	defer func() { <-c.assignSem }()
	for {
		if ctx.Err() != nil {
			return
		}
		c.wait(c.follower(), "assign")
		c.mu.Lock()
		stale := c.tokSess[tok] != c.sess || c.sess.lost
		c.mu.Unlock()
		if stale {
			// A decision of a session lost meanwhile (the process was
			// paused past its lease): the follower applies the current
			// session's assignment, never an older one.
			c.w.tracef(time.Now(), "coord drops assign %s token %d (%s): its session was lost", endpoint, tok, why)
			return
		}
		c.w.noteCoord("assign:" + endpoint)
		err := c.w.path.Assign(ctx, endpoint, tok)
		if c.ctx.Err() != nil {
			return
		}
		if ctx.Err() != nil || errors.Is(err, pathdialer.ErrSuperseded) {
			c.w.tracef(time.Now(), "coord assign %s token %d (%s): interrupted by a newer decision (%v)", endpoint, tok, why, errText(err))
			return
		}
		c.w.tracef(time.Now(), "coord assign %s token %d (%s): %v", endpoint, tok, why, errText(err))
		if err == nil {
			c.w.noteCoord("assigned")
		}
		if !errors.Is(err, pathdialer.ErrSwitchInProgress) {
			if len(c.s.Moves) > 0 {
				// Composed seeds only (the others' traces stay as they
				// were): a refused Assign (the endpoint fronts another
				// account) leaves the process without an assignment; the
				// decider assigns again.
				c.mu.Lock()
				c.refused = err != nil
				c.mu.Unlock()
			}
			return
		}
		if !c.sleepUntil(time.Now().Add(c.s.KeepAlive + 17*time.Microsecond)) {
			return
		}
	}
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// server is the lease's server side: a lease not renewed by its expiry is
// lost. Another process then takes over under the next token, and its
// orders raise the broker's token (simbroker RaiseToken), so that a write of
// this process paused past its check is rejected by a broker that checks
// tokens.
func (c *coordinator) server() {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		sess := c.sess
		exp := sess.expiry
		lost := sess.lost
		c.mu.Unlock()
		if lost {
			select {
			case <-c.kick:
				continue
			case <-c.stop:
				return
			}
		}
		if !c.sleepUntil(exp.Add(7 * time.Microsecond)) {
			return
		}
		now := time.Now()
		c.mu.Lock()
		if c.sess != sess || now.Before(sess.expiry) {
			c.mu.Unlock()
			continue // renewed, or replaced
		}
		sess.lost, sess.lostAt, sess.lostDL = true, now, sess.deadline
		c.lapses++
		c.token++
		tok := c.token
		if c.p2 != nil && c.live() == nil {
			// Proc2: the second process takes over under tok; its own
			// orders carry it to the broker (no raise of our own).
			c.mu.Unlock()
			c.w.noteCoord("lapse")
			ep, _ := c.w.path.Active()
			c.w.tracef(now, "coord lease of session %d expired", sess.id)
			c.p2.takeOver(tok, ep.Name)
			continue
		}
		c.raises = append(c.raises, tokenRaise{at: now, token: tok})
		c.mu.Unlock()
		c.w.noteCoord("lapse")
		raised := "the broker does not check tokens"
		if c.s.Tokens == simbroker.TokensChecked {
			// Under Options.BrokerIgnoresTokens the broker refuses (it
			// does not check tokens): the checker still has c.raises.
			raised = "broker token raised: " + errText(c.w.b.RaiseToken(tok))
		}
		c.w.tracef(now, "coord lease of session %d expired; another process takes token %d (%s)", sess.id, tok, raised)
	}
}

// decider switches away from an active endpoint that is DOWN to the first
// eligible one, from the Path's own evidence (standing in for the
// observers'). It does not decide while the process is paused (the
// evidence is stale) or without a live session; it never fails back by
// itself.
func (c *coordinator) decider() {
	defer c.wg.Done()
	every := c.s.ProbeInterval
	next := c.w.start.Add(every/2 + 29*time.Microsecond)
	for {
		if !c.sleepUntil(next) {
			return
		}
		next = next.Add(every)
		// After a takeover (Proc2) the decider steers the second process,
		// which is never paused and never loses its lease.
		p2 := c.live()
		path := c.w.path
		c.mu.Lock()
		skip := c.paused || c.sess.lost || c.defected
		refused := c.refused
		c.mu.Unlock()
		if p2 != nil {
			path, skip, refused = p2.w.path, false, false
		}
		if skip {
			continue
		}
		eng := path.Engine()
		ep, _ := path.Active()
		st, _ := eng.Status(ep.Name)
		if st.State != engine.Down && !(len(c.s.Moves) > 0 && st.IdentityMismatch) && !refused {
			continue
		}
		target := ""
		for _, t := range eng.Targets() {
			if t.Name != ep.Name || (refused && !st.IdentityMismatch && st.State != engine.Down) {
				target = t.Name
				break
			}
		}
		if target == "" {
			continue
		}
		c.mu.Lock()
		if p2 == nil && (c.paused || c.sess.lost) {
			c.mu.Unlock()
			continue
		}
		if p2 == nil && c.assignTarget == target {
			// That decision is still being applied (fenced, reconciled):
			// no newer one for the same target.
			c.mu.Unlock()
			continue
		}
		c.token++
		tok := c.token
		if p2 == nil {
			c.tokSess[tok] = c.sess
		}
		c.mu.Unlock()
		if p2 != nil {
			p2.w.tracef(time.Now(), "coord decides %s->%s token %d", ep.Name, target, tok)
			p2.assign(target, tok, "decided")
		} else {
			c.w.tracef(time.Now(), "coord decides %s->%s token %d", ep.Name, target, tok)
			// The decider does not wait for the switch: a switch stuck
			// on a target that died meanwhile is taken over by its next
			// decision (assign interrupts the one in progress).
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				c.assign(target, tok, "decided")
			}()
		}
		for now := time.Now(); !next.After(now); {
			next = next.Add(every)
		}
	}
}

// pauseStats returns the counts for Stats.
func (c *coordinator) pauseStats() (pauses, lapses int) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pauses, c.lapses
}

// raisesByTime returns the tokens other processes took, by time.
func (c *coordinator) raisesByTime() []tokenRaise {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]tokenRaise(nil), c.raises...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// sessionOf returns the session token was issued in (nil: not this
// process's).
func (c *coordinator) sessionOf(tok uint64) *session {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tokSess[tok]
}
