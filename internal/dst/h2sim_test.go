package dst

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// h2Seeds are the first n seeds whose orders go over TLS and pooled HTTP/2.
func h2Seeds(n int) []uint64 {
	var out []uint64
	for seed := uint64(1); len(out) < n; seed++ {
		if scenarioOf(seed).H2 {
			out = append(out, seed)
		}
	}
	return out
}

// TestSimH2 runs H2 seeds: orders are booked over pooled TLS connections,
// the front ends drain some of them, and no order is replayed.
func TestSimH2(t *testing.T) {
	var conns, drains, acked, orders int
	for _, seed := range h2Seeds(4) {
		res := runSeed(t, seed, Options{})
		for _, v := range res.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		conns += res.Stats.H2Conns
		drains += res.Stats.H2Drains
		acked += res.Stats.Acked
		orders += res.Stats.Orders
		t.Logf("seed %d: %d orders, %d acked, %d TLS connections, %d drained, %d unknown", seed, res.Stats.Orders, res.Stats.Acked, res.Stats.H2Conns, res.Stats.H2Drains, res.Stats.Unknown)
	}
	if drains == 0 {
		t.Errorf("no connection drained in 4 H2 seeds: the replay risk was never exercised")
	}
	if conns == 0 || conns*2 > orders {
		t.Errorf("%d TLS connections for %d orders: the pool does not carry several orders per connection", conns, orders)
	}
}

// The check itself: an order that arrived on two connections and was sent
// once is a replay; sent twice (a resend by the client), it is not.
func TestH2CheckFindsReplay(t *testing.T) {
	f := &h2front{arrivals: map[string][]int{"a": {1, 2}, "b": {3, 4}, "c": {5, 5}}, sends: map[string]int{"a": 1, "b": 2, "c": 1}}
	res := &Result{}
	var got []string
	f.check(res, func(inv, format string, a ...any) { got = append(got, inv+": "+fmt.Sprintf(format, a...)) })
	if len(got) != 1 || !strings.Contains(got[0], invH2Replay) || !strings.Contains(got[0], "order a ") {
		t.Fatalf("violations %q, want one %s for order a", got, invH2Replay)
	}
	if res.Stats.H2Replays != 1 {
		t.Fatalf("H2Replays = %d, want 1", res.Stats.H2Replays)
	}
}

// no-drain-as-evidence: a state change the Path made on a graceful GOAWAY
// is a violation; one on any other failure is not.
func TestH2CheckFindsDrainAsEvidence(t *testing.T) {
	w := &world{}
	f := &h2front{w: w}
	goAway := errors.New("rest: submission on endpoint \"eu\": http2: Transport: cannot retry err [http2: Transport received Server's graceful shutdown GOAWAY] after Request.Body was written")
	f.noteEvent(pathdialer.Event{Kind: pathdialer.EventStateChange, Endpoint: "eu", PrevState: engine.Healthy, State: engine.Down, Err: goAway})
	f.noteEvent(pathdialer.Event{Kind: pathdialer.EventStateChange, Endpoint: "us", PrevState: engine.Healthy, State: engine.Down, Err: errors.New("connection refused")})
	f.noteEvent(pathdialer.Event{Kind: pathdialer.EventProbe, Endpoint: "eu", Err: goAway})
	var got []string
	f.check(&Result{}, func(inv, format string, a ...any) { got = append(got, inv+": "+fmt.Sprintf(format, a...)) })
	if len(got) != 1 || !strings.Contains(got[0], invH2DrainEvidence) || !strings.Contains(got[0], "endpoint eu ") {
		t.Fatalf("violations %q, want one %s for eu", got, invH2DrainEvidence)
	}
}
