package pathdialer

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerpath/brokerpath/venue"
)

// FenceMode is how a switch leaves the old path, as chosen in
// Config.FenceMode: what the venue's cancel-on-disconnect does to the orders
// resting on the book depends on it.
type FenceMode uint8

const (
	// FenceModeDefault takes the mode that loses no order silently for the
	// venue in Config.Venue (venue.Profile.DefaultFenceMode): FencePreserve
	// where the venue documents a way to leave without cancelling resting
	// orders (or has no cancel-on-disconnect at all), FenceFlatten everywhere
	// else — including venues where orders are kept only by a choice made at
	// logon (Coinbase without 8013, Kraken 8674=1), which a switch cannot
	// see. Flatten is the default where
	// nothing is documented because a graceful leave the venue does not
	// promise to honour would leave the outcome to chance; letting
	// cancel-on-disconnect fire and then confirming each cancel against the
	// venue's open-order list (Config.OpenOrders) makes every lost order a
	// reported one.
	FenceModeDefault FenceMode = iota
	// FencePreserve leaves the old path the way the venue keeps resting
	// orders (venue.CancelOnDisconnect.KeepOrders): the Fencer is told so
	// (Fence.Mode), and each tracked connection with a farewell
	// (Conn.SetFarewell, e.g. a FIX Logout carrying the venue's opt-out tag)
	// says it before the local fence closes it. New refuses it for a venue
	// that documents no such way.
	FencePreserve
	// FenceFlatten lets cancel-on-disconnect fire: the old path's
	// connections are aborted, and the cancels are confirmed by the
	// open-order reconcile that follows every switch.
	FenceFlatten
)

var fenceModeNames = [...]string{"default", "preserve", "flatten"}

// String returns "default", "preserve" or "flatten".
func (m FenceMode) String() string {
	if int(m) < len(fenceModeNames) {
		return fenceModeNames[m]
	}
	return fmt.Sprintf("FenceMode(%d)", int(m))
}

// MarshalText renders the mode as its String form.
func (m FenceMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// FenceChoice is the fence mode a Path uses and what it does to resting
// orders at its venue (shown in Snapshot).
type FenceChoice struct {
	// Mode is the mode in force (never the default: the default resolved).
	Mode venue.FenceMode `json:"mode"`
	// Chosen is how it was chosen: "configured" or "venue default".
	Chosen string `json:"chosen"`
	// Effect is what leaving a path in Mode does to resting orders, and Why
	// the venue's profile says so.
	Effect venue.SwitchEffect `json:"effect"`
	Why    string             `json:"why"`
}

// fenceChoice resolves Config.FenceMode against the venue (the resolved
// profile: Conservative when none was given).
func (c Config) fenceChoice() (FenceChoice, error) {
	prof := c.venueProfile()
	keeps, _ := prof.FenceEffect(venue.Preserve)
	var fc FenceChoice
	switch c.FenceMode {
	case FenceModeDefault:
		fc.Chosen = "venue default"
		fc.Mode, _ = prof.DefaultFenceMode()
	case FencePreserve:
		if keeps != venue.EffectNone {
			_, why := prof.FenceEffect(venue.Preserve)
			return fc, configError("FenceMode", "", "FenceMode is preserve, but venue %q documents no way to leave a path without cancelling resting orders (%s): choose FenceFlatten, or a venue profile that documents one", prof.Name, why)
		}
		fc.Chosen, fc.Mode = "configured", venue.Preserve
	case FenceFlatten:
		fc.Chosen, fc.Mode = "configured", venue.Flatten
	default:
		return fc, configError("FenceMode", "", "FenceMode %d is not a FenceMode (FenceModeDefault, FencePreserve or FenceFlatten)", c.FenceMode)
	}
	fc.Effect, fc.Why = prof.FenceEffect(fc.Mode)
	return fc, nil
}

// Farewell is how a connection leaves gracefully (see Conn.SetFarewell). It
// must write what it has to by deadline and return; the Path aborts the
// connection right after it returns.
type Farewell func(deadline time.Time) error

// SetFarewell registers how this connection leaves the venue without
// cancelling its resting orders, for a switch in preserve mode: a FIX Logout
// carrying the venue's opt-out tag (Deribit's DontCancelOnDisconnect 9003=Y),
// a WebSocket logout call. The local fence calls it, bounded by
// Config.FarewellTimeout, before it aborts the connection; in flatten mode it
// is not called. The connection refuses further orders from then on only if
// the farewell makes it so: write nothing but the farewell. A nil fn removes
// the farewell.
func (c *Conn) SetFarewell(fn Farewell) {
	if fn == nil {
		c.farewell.Store(nil)
		return
	}
	c.farewell.Store(&fn)
}

// farewells says goodbye on every connection of conns that has a farewell,
// concurrently, each bounded by deadline, and then aborts it; connections
// without one are aborted at once by the caller. The returned channel closes
// when every farewell returned (nil when there is none).
//
// Every goroutine it starts is counted in track (the controller's, so Close
// waits for them: each ends by deadline when its farewell honours it).
func farewells(log interface {
	Warn(msg string, args ...any)
}, conns []*Conn, deadline time.Time, track *sync.WaitGroup) (rest []*Conn, done <-chan struct{}) {
	var wg sync.WaitGroup
	for _, c := range conns {
		fp := c.farewell.Load()
		if fp == nil {
			rest = append(rest, c)
			continue
		}
		wg.Add(1)
		track.Add(1)
		go func() {
			defer track.Done()
			defer wg.Done()
			_ = c.Conn.SetWriteDeadline(deadline)
			if err := callFarewell(*fp, deadline); err != nil {
				log.Warn("pathdialer: farewell failed; the connection is aborted (cancel-on-disconnect may fire)", "endpoint", c.rt.ep.Name, "err", err)
			}
			abort(c)
		}()
	}
	if len(rest) == len(conns) {
		return rest, nil
	}
	ch := make(chan struct{})
	track.Add(1)
	go func() {
		defer track.Done()
		wg.Wait()
		close(ch)
	}()
	return rest, ch
}

// SetCODWithin declares how long after this connection is cut the venue's
// cancel-on-disconnect may still act on the orders it reaches: a venue that
// detects a drop by a missed heartbeat cancels only when it times the
// silent connection out (the FIX transport declares 2.5 × HeartBtInt plus
// 500 ms for every session it relays). After a fence of the connection's
// endpoint (whether the fence cut the connection or it had ended before,
// within d), the open-order reconcile (Config.OpenOrders) reads the
// venue's orders CODSettle after the fence and, when the declared time is
// later, once more when it has passed, reporting every order cancelled
// since as cancelled by that switch. d <= 0 removes the declaration.
func (c *Conn) SetCODWithin(d time.Duration) {
	c.codWithin.Store(int64(max(d, 0)))
}

func callFarewell(fn Farewell, deadline time.Time) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("farewell panicked: %v", r)
		}
	}()
	return fn(deadline)
}

// abort closes c discarding what is still in the host's send buffer.
func abort(c *Conn) {
	if tc, ok := c.Conn.(interface{ SetLinger(int) error }); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// restingState is what the Path shows about resting orders across switches:
// the fence mode, the dead-man timer and the last open-order reconciles.
type restingState struct {
	fence     FenceChoice
	cancelled atomic.Uint64 // orders found cancelled by a switch
	mu        sync.Mutex
	deadman   *DeadManStatus
	reports   map[string]OpenOrderReport // by service
}

// farewellHolder is an atomic holder for a Conn's farewell.
type farewellHolder = atomic.Pointer[Farewell]

// snapshot fills the resting-order section of s.
func (r *restingState) snapshot(s *Snapshot) {
	s.Fence = r.fence
	s.RestingCancelled = r.cancelled.Load()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deadman != nil {
		d := *r.deadman
		s.DeadMan = &d
	}
	for _, svc := range slices.Sorted(maps.Keys(r.reports)) {
		rep := r.reports[svc]
		rep.Diffs = slices.Clone(rep.Diffs)
		s.OpenOrders = append(s.OpenOrders, rep)
	}
}
