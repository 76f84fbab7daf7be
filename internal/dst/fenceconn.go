package dst

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// InvFenceLeavesNoConn: once a fence of an endpoint is complete (the switch
// away from it is made), no connection the Path dialed to it before the
// fence (orders, the resting session, the FIX session; not the read-only
// ones: lookups and the WebSocket stream) is still
// open in the network's own record (faultnet.MemNetwork.History), in either
// fence mode: preserve says its farewell first, then closes; flatten closes
// at once. Judged in every seed.
const InvFenceLeavesNoConn = "fence-leaves-no-connection-open"

// pathConn is one connection the Path dialed through the sim's network (not
// a lookup's: read-only connections are not fenced), as the network
// recorded it.
type pathConn struct {
	kind     string // "order t0-3", "resting session", "FIX session", ...
	endpoint string // the region (the endpoint's name)
	netID    uint64 // the network's connection number on addr
	addr     string
	opened   time.Time
	closed   time.Time // zero: never closed
	closedBy string
}

// pathDial is one connection the Path's dialer handed out (w.dial), keyed
// to the network's record by address and connection number.
type pathDial struct {
	kind, endpoint, addr string
	netID                uint64
}

// notePathDial records a connection the Path's dialer got from the network
// (world.dial), unless it is read-only: a lookup's (the reconcile's reads,
// the offered trade-path check) or the WebSocket stream's (market data,
// ws.Dialer.DialReadOnly), which the fence leaves open by design.
func (w *world) notePathDial(ctx context.Context, c net.Conn, a string) {
	session := ctx.Value(sessionKey{}) != nil
	if ctx.Value(lookupKey{}) != nil || strings.Contains(a, ".ws.") && !session {
		return
	}
	var id uint64
	if _, err := fmt.Sscanf(c.LocalAddr().String(), "client-%d.", &id); err != nil {
		return
	}
	kind := "connection"
	switch oid, _ := ctx.Value(orderKey{}).(string); {
	case oid != "":
		kind = "order " + oid
	case session:
		kind = "resting session"
	case strings.Contains(a, ".fix."):
		kind = "FIX session"
	case strings.Contains(a, ".h2."):
		kind = "HTTP/2 orders"
	}
	w.mu.Lock()
	w.pathDials = append(w.pathDials, pathDial{kind: kind, endpoint: a[:strings.Index(a, ".")], addr: a, netID: id})
	w.mu.Unlock()
}

// pathConns joins the Path's dials with the network's record of them.
func (w *world) pathConns() []pathConn {
	type key struct {
		addr string
		id   uint64
	}
	hist := map[key]int{}
	recs := w.net.History()
	for i, r := range recs {
		hist[key{r.Addr, r.ID}] = i
	}
	var out []pathConn
	for _, d := range w.pathDials {
		i, ok := hist[key{d.addr, d.netID}]
		if !ok {
			continue
		}
		r := recs[i]
		out = append(out, pathConn{kind: d.kind, endpoint: d.endpoint, netID: d.netID, addr: d.addr, opened: r.Opened, closed: r.Closed, closedBy: r.ClosedBy})
	}
	return out
}

// judgeFenceConns: at every switch away from an endpoint, after the
// Fencer's call for it that returned nil (the fence complete), every
// connection the Path dialed to that endpoint before that call began is
// closed in the network's record, at or before the switch. gates must be in
// the Path's order (by seq).
func judgeFenceConns(start time.Time, gates []gateRec, fences []fenceCall, conns []pathConn, viol func(inv, format string, a ...any)) {
	off := func(t time.Time) time.Duration { return t.Sub(start) }
	var prev time.Time
	for _, g := range gates {
		if g.kind != pathdialer.EventSwitch {
			continue
		}
		since := prev
		prev = g.at
		if g.from == "" || g.from == g.to {
			continue
		}
		// The fence the switch proceeded on: the last call for g.from that
		// returned nil by the switch (switch-after-fence-confirmed judges
		// a switch without one).
		var f *fenceCall
		for i := range fences {
			c := &fences[i]
			if c.endpoint == g.from && c.ok && !c.start.Before(since) && !c.end.IsZero() && !c.end.After(g.at) {
				f = c
			}
		}
		if f == nil {
			continue
		}
		for _, c := range conns {
			if c.endpoint != g.from || !c.opened.Before(f.start) {
				continue
			}
			if !c.closed.IsZero() && !c.closed.After(g.at) {
				continue
			}
			state := "never closed"
			if !c.closed.IsZero() {
				state = fmt.Sprintf("closed at %v by the %s", off(c.closed), c.closedBy)
			}
			viol(InvFenceLeavesNoConn, "%s connection %s#%d (opened at %v) still open at the switch from %s to %s at %v, after the fence of %s (Fencer call %v–%v returned nil): %s",
				c.kind, c.addr, c.netID, off(c.opened), g.from, g.to, off(g.at), g.from, off(f.start), off(f.end), state)
		}
	}
}

// checkFenceConns judges fence-leaves-no-connection-open (w.mu held).
func (w *world) checkFenceConns(viol func(inv, format string, a ...any)) {
	gates := slices.Clone(w.cx.gates)
	slices.SortStableFunc(gates, func(a, b gateRec) int { return cmp.Compare(a.seq, b.seq) })
	judgeFenceConns(w.start, gates, w.cx.fences, w.pathConns(), viol)
}
