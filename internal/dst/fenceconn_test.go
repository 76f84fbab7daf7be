package dst

import (
	"strings"
	"testing"
)

func judgedConns(fences []fenceCall, conns []pathConn) []string {
	var out []string
	judgeFenceConns(t0, failover(130), fences, conns, func(inv, format string, a ...any) { out = append(out, inv) })
	return out
}

// fence-leaves-no-connection-open has teeth: a connection to the endpoint
// left, opened before its fence, that the network's record shows open after
// the switch (never closed, or closed only later: a farewell the venue
// answered late) is caught; one closed by the switch, one opened after the
// fence began, one to another endpoint, and a switch with no confirmed fence
// (switch-after-fence-confirmed's to judge) are not.
func TestFenceConnsCheckFindsOpenConnection(t *testing.T) {
	fences := []fenceCall{{endpoint: "eu", to: "us", start: at(110), end: at(125), ok: true}}
	session := func(opened, closed int) pathConn {
		c := pathConn{kind: "resting session", endpoint: "eu", addr: "eu.ws.sim:80", netID: 1, opened: at(opened)}
		if closed >= 0 {
			c.closed, c.closedBy = at(closed), "client"
		}
		return c
	}
	// Clean: closed by the farewell's abort before the Fencer was called,
	// exactly at the switch, or opened after the fence began (refused by
	// the Path, closed at once, or never judged).
	wantNone(t, judgedConns(fences, []pathConn{session(10, 105), session(20, 130), session(115, -1)}))
	wantNone(t, judgedConns(fences, []pathConn{{kind: "order t0-1", endpoint: "us", addr: "us.rest.sim:80", netID: 3, opened: at(50)}}))
	// No Fencer call returned nil for eu before the switch.
	wantNone(t, judgedConns([]fenceCall{{endpoint: "eu", start: at(110), end: at(125), ok: false}}, []pathConn{session(10, -1)}))
	wantNone(t, judgedConns([]fenceCall{{endpoint: "eu", start: at(110), end: at(140), ok: true}}, []pathConn{session(10, -1)}))

	// Planted: never closed; closed by the server well after the switch.
	for _, c := range []pathConn{session(10, -1), session(10, 900), {kind: "FIX session", endpoint: "eu", addr: "eu.fix.sim:80", netID: 2, opened: at(40)}} {
		var msgs []string
		judgeFenceConns(t0, failover(130), fences, []pathConn{c}, func(inv, format string, a ...any) {
			if inv != InvFenceLeavesNoConn {
				t.Fatalf("caught %s, want %s", inv, InvFenceLeavesNoConn)
			}
			msgs = append(msgs, format)
		})
		if len(msgs) != 1 {
			t.Fatalf("%s connection open after the switch: %d violation(s), want 1", c.kind, len(msgs))
		}
		if !strings.Contains(msgs[0], "still open at the switch") {
			t.Fatalf("violation %q does not say what is wrong", msgs[0])
		}
	}
}
