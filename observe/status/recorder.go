package status

import (
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/safetext"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// maxIncidents is how many switches (and halts) a Recorder remembers.
const maxIncidents = 20

// Recorder remembers, from a Path's events, what one Snapshot cannot tell:
// for every switch or halt, when the trouble was first seen (the first failed
// probe), when the endpoint was declared down, when orders were held and why,
// when the switch happened and when orders flowed again; and, per transport,
// how many orders were handed to reconciliation and what it found.
//
// Chain OnEvent into pathdialer.Config.OnEvent (observe.Tee fans one hook
// out) and pass the Recorder in Options.Recorder. It keeps the last 20
// incidents and no client order ID (it tells orders apart by a keyed 64-bit
// hash of their IDs); it is safe for concurrent use.
//
// An order the Path asks the broker about more than once (a later attempt, a
// provisional NOT_RECEIVED looked up again) counts once, under its last fate.
type Recorder struct {
	mu        sync.Mutex
	seed      maphash.Seed
	firstFail map[string]time.Time // endpoint → first failed probe of its current failure streak
	downAt    map[string]time.Time // endpoint → when it was last declared DOWN
	cur       *incident            // the switch or halt not yet released
	done      []incident           // oldest first, at most maxIncidents
	handed    orderSet             // orders handed to reconciliation
	settled   orderFates
	failback  *engine.Decision // the last failback verdict
	worst     worstSoFar
}

// worstSoFar is the worst since the Recorder started: halts (how many, how
// long in all and at most, the last one's start, one in progress) and the
// longest hold released.
type worstSoFar struct {
	Halts                int
	Halted, LongestHalt  time.Duration
	LastHaltAt, HaltOpen time.Time // HaltOpen: the start of a halt in progress
	LongestHold          time.Duration
	LongestHoldWhat      string // "failover from eu to us at 14:00:01.000, released 14:00:03.100"
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{seed: maphash.MakeSeed(), firstFail: map[string]time.Time{}, downAt: map[string]time.Time{},
		handed: orderSet{}, settled: orderFates{}}
}

// orderKey tells one order of one service apart without keeping its ID.
type orderKey struct {
	service string
	id      uint64 // keyed hash of the client order ID
}

func (r *Recorder) key(service, orderID string) orderKey {
	return orderKey{service, maphash.String(r.seed, orderID)}
}

// orderSet is a set of orders; counts gives how many per service.
type orderSet map[orderKey]bool

func (s orderSet) counts() map[string]int {
	if s == nil {
		return nil
	}
	out := map[string]int{}
	for k := range s {
		out[k.service]++
	}
	return out
}

// orderFates is each order's last fate; counts gives service → fate → orders.
type orderFates map[orderKey]string

func (f orderFates) counts() map[string]map[string]int {
	if f == nil {
		return nil
	}
	out := map[string]map[string]int{}
	for k, fate := range f {
		add(out, k.service, fate)
	}
	return out
}

// recCheck is one service's reconciliation within an incident ("" for one
// reconcile of every service): its first start, the orders it was asked
// about over its attempts, and how long until its success.
type recCheck struct {
	start  time.Time
	orders orderSet
	took   time.Duration
}

// incident is one switch (or halt) from the first sign of it to the release.
type incident struct {
	From, To   string
	Failback   bool
	TroubleAt  time.Time // first failed probe of From in the streak that took it down
	DownAt     time.Time // From declared DOWN
	DecidedAt  time.Time // first decision of the incident
	HeldAt     time.Time // orders held (or halted) first
	SwitchedAt time.Time
	ReleasedAt time.Time
	Held       time.Duration // as the Path measured it at release
	Causes     []string      // why orders were held or halted, each once, in order
	FenceAt    time.Time     // first fence attempt
	FenceTook  time.Duration // first fence attempt → fence confirmed
	RecAt      time.Time     // first reconciliation after the switch
	RecTook    time.Duration // → the last service's success
	// RecSlowest is the service whose check took longest (RecSlowestTook),
	// and how many orders it was asked about (RecSlowestOrders).
	RecSlowest       string
	RecSlowestTook   time.Duration
	RecSlowestOrders int
	recChecks        map[string]*recCheck
	RecFailed        int
	RecErrors        []string // distinct reconcile errors
	Halted           bool
	// ServiceHeld is each service's hold, in release order, when the Path
	// releases services one by one; the last is released with the gate.
	ServiceHeld []serviceHold
	Handed      map[string]int            // service → orders handed to reconciliation (set by clone)
	Settled     map[string]map[string]int // service → fate → orders (set by clone)
	handed      orderSet
	settled     orderFates
	reconciled  map[string]bool // services whose reconcile succeeded, not yet released
}

// serviceHold is how long one service's orders were held.
type serviceHold struct {
	Service string
	Held    time.Duration
}

// OnEvent records one event. It never blocks on anything but the Recorder's
// own lock.
func (r *Recorder) OnEvent(e pathdialer.Event) {
	// A Path's events come bounded; one built elsewhere is bounded here.
	e.Cause, e.Error = safetext.BoundN(e.Cause, safetext.FieldMax), safetext.BoundN(e.Error, safetext.FieldMax)
	r.mu.Lock()
	defer r.mu.Unlock()
	w := &r.worst
	switch e.Kind {
	case pathdialer.EventHalt:
		if w.HaltOpen.IsZero() {
			w.Halts++
			w.HaltOpen, w.LastHaltAt = e.Time, e.Time
		}
	case pathdialer.EventResume, pathdialer.EventRelease:
		if !w.HaltOpen.IsZero() {
			d := e.Time.Sub(w.HaltOpen)
			w.Halted += d
			w.LongestHalt = max(w.LongestHalt, d)
			w.HaltOpen = time.Time{}
		}
		if e.Kind == pathdialer.EventRelease && e.Service == "" && e.Duration > w.LongestHold && r.cur != nil {
			w.LongestHold = e.Duration
			kind := "failover from " + r.cur.From + " to " + r.cur.To
			switch {
			case r.cur.Failback:
				kind = "failback from " + r.cur.From + " to " + r.cur.To
			case r.cur.Halted:
				kind = "halt, then resume on " + e.Endpoint
			}
			// Dated by the switch (a halt: by when orders were first held),
			// not by the release that ends the hold.
			began := r.cur.SwitchedAt
			if began.IsZero() || (r.cur.Halted && !r.cur.HeldAt.IsZero()) {
				began = r.cur.HeldAt
			}
			if began.IsZero() {
				began = e.Time
			}
			w.LongestHoldWhat = kind + " at " + began.UTC().Format(clock) + ", released " + e.Time.UTC().Format(clock)
		}
	}
	switch e.Kind {
	case pathdialer.EventProbe:
		if e.Err == nil && e.Error == "" {
			delete(r.firstFail, e.Endpoint)
		} else if _, ok := r.firstFail[e.Endpoint]; !ok {
			r.firstFail[e.Endpoint] = e.Time
		}
	case pathdialer.EventStateChange:
		if e.State == engine.Down {
			r.downAt[e.Endpoint] = e.Time
		}
	case pathdialer.EventDecision:
		if e.Decision == nil {
			return
		}
		d := *e.Decision
		if d.Failback && d.Outcome != engine.FenceRequired && d.Outcome != engine.Switched {
			r.failback = &d
			return
		}
		in := r.open(e.Time, d.From)
		if in.To == "" {
			in.To, in.Failback = d.To, d.Failback
		}
		if in.DecidedAt.IsZero() {
			in.DecidedAt = e.Time
		}
		if d.Failback {
			r.failback = &d
		}
	case pathdialer.EventHold, pathdialer.EventHalt:
		in := r.open(e.Time, e.Endpoint)
		if in.HeldAt.IsZero() {
			in.HeldAt = e.Time
		}
		in.Halted = in.Halted || e.Kind == pathdialer.EventHalt
		if e.Cause != "" && !slices.Contains(in.Causes, e.Cause) {
			in.Causes = append(in.Causes, e.Cause)
		}
	case pathdialer.EventFenceStart:
		if r.cur != nil && r.cur.FenceAt.IsZero() {
			r.cur.FenceAt = e.Time
		}
	case pathdialer.EventFenceSuccess:
		if r.cur != nil && !r.cur.FenceAt.IsZero() && r.cur.FenceTook == 0 {
			r.cur.FenceTook = max(e.Time.Sub(r.cur.FenceAt), time.Nanosecond)
		}
	case pathdialer.EventReconcileFailure:
		if r.cur != nil {
			r.cur.RecFailed++
			if e.Error != "" && !slices.Contains(r.cur.RecErrors, e.Error) && len(r.cur.RecErrors) < 5 {
				r.cur.RecErrors = append(r.cur.RecErrors, e.Error)
			}
		}
	case pathdialer.EventSwitch:
		in := r.open(e.Time, e.From)
		in.To, in.SwitchedAt = e.To, e.Time
	case pathdialer.EventReconcileStart:
		if r.cur == nil {
			return // settling unknown outcomes in place: no incident
		}
		if r.cur.RecAt.IsZero() {
			r.cur.RecAt = e.Time
		}
		if r.cur.recChecks == nil {
			r.cur.recChecks = map[string]*recCheck{}
		}
		c := r.cur.recChecks[e.Service]
		if c == nil {
			c = &recCheck{start: e.Time, orders: orderSet{}}
			r.cur.recChecks[e.Service] = c
		}
		for _, t := range e.Tickets {
			k := r.key(t.Service, t.OrderID)
			if r.cur.handed == nil {
				r.cur.handed = orderSet{}
			}
			r.cur.handed[k], r.handed[k], c.orders[k] = true, true, true
		}
	case pathdialer.EventReconcileSuccess:
		if r.cur != nil && !r.cur.RecAt.IsZero() {
			// Services reconcile on their own: the check took until the last.
			r.cur.RecTook = max(e.Time.Sub(r.cur.RecAt), r.cur.RecTook, time.Nanosecond)
			if c := r.cur.recChecks[e.Service]; c != nil && c.took == 0 {
				c.took = max(e.Time.Sub(c.start), time.Nanosecond)
				if c.took > r.cur.RecSlowestTook {
					r.cur.RecSlowest, r.cur.RecSlowestTook, r.cur.RecSlowestOrders = e.Service, c.took, len(c.orders)
				}
			}
			if e.Service != "" {
				if r.cur.reconciled == nil {
					r.cur.reconciled = map[string]bool{}
				}
				r.cur.reconciled[e.Service] = true
			}
		}
		for _, s := range e.Settlements {
			k := r.key(s.Service, s.OrderID)
			r.settled[k] = fateKey(s.Fate)
			if r.cur != nil {
				if r.cur.settled == nil {
					r.cur.settled = orderFates{}
				}
				r.cur.settled[k] = fateKey(s.Fate)
			} else {
				r.handed[k] = true // settled in place, or looked up again
			}
		}
	case pathdialer.EventRelease:
		if r.cur == nil {
			return
		}
		if e.Service != "" { // one service flows again; the others are still held
			r.cur.ServiceHeld = append(r.cur.ServiceHeld, serviceHold{e.Service, e.Duration})
			delete(r.cur.reconciled, e.Service)
			return
		}
		if len(r.cur.ServiceHeld) > 0 { // the services still held were released with the gate
			for _, svc := range slices.Sorted(maps.Keys(r.cur.reconciled)) {
				r.cur.ServiceHeld = append(r.cur.ServiceHeld, serviceHold{svc, e.Duration})
			}
		}
		r.cur.reconciled = nil
		r.cur.ReleasedAt, r.cur.Held = e.Time, e.Duration
		r.done = append(r.done, *r.cur)
		if len(r.done) > maxIncidents {
			r.done = r.done[len(r.done)-maxIncidents:]
		}
		r.cur = nil
	}
}

// open returns the incident in progress, starting one that leaves from.
func (r *Recorder) open(at time.Time, from string) *incident {
	if r.cur != nil {
		return r.cur
	}
	in := &incident{From: from}
	if down, ok := r.downAt[from]; ok && !down.After(at) && at.Sub(down) < time.Minute {
		in.DownAt = down
		if t, ok := r.firstFail[from]; ok && !t.After(down) {
			in.TroubleAt = t
		}
	}
	r.cur = in
	return in
}

// view copies what the handler needs.
func (r *Recorder) view() (incidents []incident, open *incident, handed map[string]int, settled map[string]map[string]int, failback *engine.Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, in := range r.done {
		incidents = append(incidents, in.clone())
	}
	if r.cur != nil {
		c := r.cur.clone()
		open = &c
	}
	handed = r.handed.counts()
	settled = r.settled.counts()
	if r.failback != nil {
		d := *r.failback
		failback = &d
	}
	return
}

// worstView copies the worst since start.
func (r *Recorder) worstView() worstSoFar {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.worst
}

func (in incident) clone() incident {
	in.Causes = slices.Clone(in.Causes)
	in.RecErrors = slices.Clone(in.RecErrors)
	in.ServiceHeld = slices.Clone(in.ServiceHeld)
	in.reconciled = maps.Clone(in.reconciled)
	in.Handed = in.handed.counts()
	in.Settled = in.settled.counts()
	in.handed, in.settled, in.recChecks = nil, nil, nil
	return in
}

func add(m map[string]map[string]int, k, f string) {
	if m[k] == nil {
		m[k] = map[string]int{}
	}
	m[k][f]++
}

// fateKey is a fate as a JSON key: "filled", "not_received".
func fateKey(f pathdialer.Fate) string { return strings.ToLower(f.String()) }
