package dst

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// The resting-order invariants: judged from the broker's own record of the
// orders its cancel-on-disconnect cancelled when a switch left a path, and
// from the sim's record of its DeadMan hook and Fencer calls, against the
// Path's events.
const (
	// InvRestingCancelReported: every resting order the broker cancelled
	// because a switch left a path is reported, by an EventRestingCancelled
	// naming it and the switch that caused it (its From: the endpoint whose
	// fence cut the session, or one left after the order was placed and
	// before the cancel), or (loudly, without naming it) by an open-order
	// reconcile that failed, after the cancel.
	InvRestingCancelReported = "resting-cancel-reported"
	// InvNoDeadManGap: where the venue's profile requires a dead-man timer,
	// no path is fenced before the timer was armed on the endpoint the switch
	// goes to (an arm that returned nil, begun after the previous fence), so
	// at no moment is the account left with no armed timer.
	InvNoDeadManGap = "no-dead-man-gap"
)

// codCancel is one order the broker cancelled because a path was left.
type codCancel struct {
	orderID string
	at      time.Time
	// causes: the endpoints whose switch a report may name (nil: any);
	// left: when the fence that caused it began.
	causes []string
	left   time.Time
}

// armCall is one call of the sim's DeadMan hook.
type armCall struct {
	endpoint   string // the endpoint armed (the switch's target)
	start, end time.Time
	ok         bool
}

// leaveCall is one call of the sim's Fencer, with the switch's target.
type leaveCall struct {
	from, to string
	start    time.Time
}

// restingGround is what the resting-order invariants are judged from.
type restingGround struct {
	start         time.Time
	cancels       []codCancel        // the broker's truth
	events        []pathdialer.Event // the Path's events (EventRestingCancelled, EventOpenOrderDiff)
	arms          []armCall
	leaves        []leaveCall
	timerRequired bool // the profile requires a dead-man timer
}

// judge reports every violation of the two invariants.
func (g restingGround) judge(viol func(inv, format string, a ...any)) {
	off := func(t time.Time) time.Duration { return t.Sub(g.start) }
	for _, c := range g.cancels {
		reported := false
		var misnamed []string
		for _, e := range g.events {
			if e.Time.Before(c.at) {
				continue
			}
			if e.Kind == pathdialer.EventRestingCancelled && e.OrderID == c.orderID {
				if c.causes == nil || slices.Contains(c.causes, e.From) {
					reported = true
					break
				}
				misnamed = append(misnamed, fmt.Sprintf("%s→%s", e.From, e.To))
				continue
			}
			if e.Kind == pathdialer.EventOpenOrderDiff && e.Err != nil && !isSuperseded(e) {
				reported = true
				break
			}
		}
		switch {
		case reported:
		case len(misnamed) > 0:
			viol(InvRestingCancelReported, "order %s cancelled by the broker at %v when a path was left (%s; fenced at %v), reported cancelled by another switch: %s", c.orderID, off(c.at), strings.Join(c.causes, " or "), off(c.left), strings.Join(misnamed, ", "))
		default:
			viol(InvRestingCancelReported, "order %s cancelled by the broker at %v when a path was left, never reported cancelled by the switch", c.orderID, off(c.at))
		}
	}
	if !g.timerRequired {
		return
	}
	var prev time.Time
	for _, l := range g.leaves {
		armed := slices.ContainsFunc(g.arms, func(a armCall) bool {
			return a.ok && a.endpoint == l.to && !a.start.Before(prev) && !a.end.IsZero() && !a.end.After(l.start)
		})
		if !armed && l.from != l.to {
			viol(InvNoDeadManGap, "%s fenced at %v (switch to %s) with no dead-man timer armed on %s since the previous fence", l.from, off(l.start), l.to, l.to)
		}
		prev = l.start
	}
}

// isSuperseded reports whether an open-order event only says its reconcile
// was superseded (it runs again: not a report).
func isSuperseded(e pathdialer.Event) bool {
	return e.Err != nil && strings.Contains(e.Error, "superseded")
}

// restingRecord records, for the resting-order invariants, the sim's DeadMan
// hook and Fencer calls and the Path's resting-order events. Safe for
// concurrent use.
type restingRecord struct {
	mu     sync.Mutex
	arms   []armCall
	leaves []leaveCall
	events []pathdialer.Event
}

// deadMan wraps the sim's DeadMan hook.
func (r *restingRecord) deadMan(inner pathdialer.DeadManFunc) pathdialer.DeadManFunc {
	return func(ctx context.Context, a pathdialer.DeadManArm) error {
		r.mu.Lock()
		r.arms = append(r.arms, armCall{endpoint: a.Endpoint.Name, start: time.Now()})
		i := len(r.arms) - 1
		r.mu.Unlock()
		err := inner(ctx, a)
		r.mu.Lock()
		r.arms[i].end, r.arms[i].ok = time.Now(), err == nil
		r.mu.Unlock()
		return err
	}
}

// fencer wraps the sim's Fencer.
func (r *restingRecord) fencer(inner pathdialer.FenceFunc) pathdialer.FenceFunc {
	return func(ctx context.Context, f pathdialer.Fence) error {
		r.mu.Lock()
		r.leaves = append(r.leaves, leaveCall{from: f.Endpoint.Name, to: f.To, start: time.Now()})
		r.mu.Unlock()
		return inner(ctx, f)
	}
}

// onEvent keeps the resting-order events.
func (r *restingRecord) onEvent(e pathdialer.Event) {
	if e.Kind != pathdialer.EventRestingCancelled && e.Kind != pathdialer.EventOpenOrderDiff {
		return
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// ground returns what the invariants are judged from, with the broker's
// cancels.
func (r *restingRecord) ground(start time.Time, cancels []codCancel, timerRequired bool) restingGround {
	r.mu.Lock()
	defer r.mu.Unlock()
	return restingGround{start: start, cancels: cancels, events: slices.Clone(r.events), arms: slices.Clone(r.arms), leaves: slices.Clone(r.leaves), timerRequired: timerRequired}
}
