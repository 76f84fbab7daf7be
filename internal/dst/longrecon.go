package dst

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// LongRecon is the long FIX-like reconcile move: a switch's reconcile with
// orders to settle waits for the new session's logon before it can ask
// anything (Wait at
// most, a draw per reconcile between half of it and all of it, and never
// more than half the Reconciler's timeout), then settles each order sent
// through the endpoint left from the last execution report the old
// connection carried before its fence, where there is one, and asks the
// book (an order status request) about the rest. Such a report is older
// than the fence: an order it calls new may have been cancelled since by
// the fence's own cancel-on-disconnect, and the verdict it grounds
// (RESTING) is one the open-order check must read again.
type LongRecon struct {
	On   bool
	Wait time.Duration
}

func (l LongRecon) String() string {
	if !l.On {
		return "off"
	}
	return fmt.Sprintf("a switch's reconcile waits up to %v for the new session's logon and settles from the old connection's last execution report", l.Wait)
}

// drawLongRecon gives half of the resting seeds the long reconcile, from a
// source of its own, so every other field of every seed is as it was. Wait
// is 1.5–4 × CODSettle: the open-order read then starts at the release.
func drawLongRecon(s *Scenario) {
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x6c6f6e677265636e))
	if !s.Resting.On || r.IntN(2) != 0 {
		return
	}
	s.LongRecon = LongRecon{On: true, Wait: s.Resting.CODSettle*3/2 + time.Duration(r.Int64N(int64(s.Resting.CODSettle*5/2)+1))}
}

// longRecon is a run's record of the long reconciles.
type longRecon struct {
	mu      sync.Mutex
	waits   int
	longest time.Duration
	stale   int // orders settled from a report older than the fence
}

// logonWait is the long reconcile's first part, for a switch's reconcile
// (r.From != r.To) with orders to settle in a LongRecon seed (with none it
// has nothing to ask, and returns at once): it waits for the new session's
// logon, then settles from the old connection's last execution report
// each order sent through r.From that the broker had booked there by the
// start of r.From's last fence and that was open then. It returns those
// settlements and the tickets still to be asked about.
func (w *world) logonWait(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, []pathdialer.TicketInfo, error) {
	if !w.s.LongRecon.On || r.From == r.To || len(r.Tickets) == 0 {
		return nil, r.Tickets, nil // nothing to ask: nothing to wait for
	}
	rt := w.s.ReconcileTimeout
	if rt == 0 {
		rt = 2 * time.Second
	}
	pr := rand.New(rand.NewPCG(w.s.Seed^r.Token, uint64(r.Attempt)))
	half := w.s.LongRecon.Wait / 2
	d := min(half+time.Duration(pr.Int64N(int64(half)+1)), rt/2)
	w.lr.mu.Lock()
	w.lr.waits++
	w.lr.longest = max(w.lr.longest, d)
	w.lr.mu.Unlock()
	w.tracef(time.Now(), "reconcile %s->%s waits %v for the new session's logon", r.From, r.To, d)
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return nil, nil, fmt.Errorf("reconcile through %s: no logon: %w", r.To, ctx.Err())
	}
	var fenced time.Time // the start of r.From's last fence
	w.mu.Lock()
	for _, f := range w.fences {
		if f.endpoint == r.From && !f.start.After(time.Now()) {
			fenced = f.start
		}
	}
	w.mu.Unlock()
	from, _ := w.path.Endpoint(r.From)
	tickets := slices.Clone(r.Tickets)
	slices.SortFunc(tickets, func(a, b pathdialer.TicketInfo) int { return strings.Compare(a.OrderID, b.OrderID) })
	var out []pathdialer.Settlement
	var ask []pathdialer.TicketInfo
	for _, tk := range tickets {
		o, ok := w.b.Order(tk.OrderID)
		report := !fenced.IsZero() && ok && tk.Endpoint == r.From && o.Region == from.Region &&
			!o.CreatedAt.After(fenced) && (o.Status == simbroker.StatusNew || o.UpdatedAt.After(fenced))
		if !report {
			ask = append(ask, tk)
			continue
		}
		out = append(out, pathdialer.Settlement{OrderID: tk.OrderID, Service: tk.Service, Fate: pathdialer.FateResting,
			Detail: fmt.Sprintf("%s: the old connection's last execution report (new), sent before its fence", o.Region)})
		w.tracef(time.Now(), "reconcile %s->%s settles %s RESTING from the old connection's report (book: %s)", r.From, r.To, tk.OrderID, o.Status)
		w.lr.mu.Lock()
		w.lr.stale++
		w.lr.mu.Unlock()
	}
	return out, ask, nil
}

// noteLongRecon counts the long reconciles in Notes.
func (w *world) noteLongRecon(res *Result) {
	if !w.s.LongRecon.On {
		return
	}
	w.lr.mu.Lock()
	defer w.lr.mu.Unlock()
	res.Stats.OldReports = w.lr.stale
	res.Notes = append(res.Notes, fmt.Sprintf("long reconcile: %d switch reconcile(s) waited for the logon (longest %v); %d order(s) settled from the old connection's report", w.lr.waits, w.lr.longest, w.lr.stale))
}
