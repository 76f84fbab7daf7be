// Package sdktest holds what the SDK examples' tests share: a record of the
// Path's events, and the judgment of a failover with orders in flight from
// the stub's book and the transport's verdicts.
package sdktest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/examples/sdk/internal/venuestub"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// Events records a Path's events for the tests.
type Events struct {
	mu  sync.Mutex
	all []pathdialer.Event
}

// Hook records ev (a pathdialer.Config.OnEvent).
func (e *Events) Hook(ev pathdialer.Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
}

// Wait returns the first event of kind for which ok holds, waiting up to 30 s.
func (e *Events) Wait(t *testing.T, kind pathdialer.EventKind, ok func(pathdialer.Event) bool) pathdialer.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		e.mu.Lock()
		for _, ev := range e.all {
			if ev.Kind == kind && (ok == nil || ok(ev)) {
				e.mu.Unlock()
				return ev
			}
		}
		e.mu.Unlock()
		if time.Now().After(deadline) {
			e.mu.Lock()
			var seen []string
			for _, ev := range e.all {
				if ev.Kind != pathdialer.EventStateChange {
					seen = append(seen, fmt.Sprintf("%v %s%s→%s %s %v", ev.Kind, ev.Endpoint, ev.From, ev.To, ev.Cause, ev.Err))
				}
			}
			e.mu.Unlock()
			t.Fatalf("no %v event within 30 s; events:\n%s", kind, strings.Join(seen, "\n"))
		}
		<-time.After(10 * time.Millisecond)
	}
}

// Kinds lists the events seen, for a failure message.
func (e *Events) Kinds() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.all {
		if ev.Kind != pathdialer.EventStateChange {
			out = append(out, fmt.Sprintf("%v %s%s→%s %s", ev.Kind, ev.Endpoint, ev.From, ev.To, ev.Cause))
		}
	}
	return out
}

// Settlements is the last settlement of each order the reconciles reported.
func (e *Events) Settlements() map[string]pathdialer.Settlement {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]pathdialer.Settlement{}
	for _, ev := range e.all {
		if ev.Kind == pathdialer.EventReconcileSuccess || ev.Kind == pathdialer.EventReconcileFailure {
			for _, s := range ev.Settlements {
				out[s.OrderID] = s
			}
		}
	}
	return out
}

// Result is one order call's client order ID and the SDK's error.
type Result struct {
	ID  string
	Err error
}

// JudgeFailover judges a failover (name) with orders in flight, once every
// call returned (results closed) and flow was released on the survivor:
// each order's SDK error agrees with the transport's verdict (orders, from
// rest.Options.OnOrder), an acknowledged order is booked once, an unknown
// one is reconciled to what the book holds (a copy the fenced region read
// after its lookup said "not found" reported as a late landing), a not-sent
// one is not booked, nothing is booked twice, and nothing reached the fenced
// region after its fence (fenced) but orders already in flight.
func JudgeFailover(t *testing.T, name string, stub *venuestub.Stub, orders chan rest.OrderEvent, ev *Events, fenced pathdialer.Event, results <-chan Result) {
	t.Helper()
	booked := stub.Booked()
	settled := ev.Settlements()
	// The transport's verdict on each order (OnOrder), which no SDK
	// error can hide: an order whose answer was cut while the SDK
	// read its body is accepted (the broker's status arrived), though
	// the SDK reports a read error.
	verdict := map[string]rest.Verdict{}
	for len(orders) > 0 {
		e := <-orders
		verdict[e.OrderID] = e.Verdict
	}
	var ok, cutBody, unknown, notSent int
	var late []string
	unknownIDs := map[string]bool{}
	for r := range results {
		v, found := verdict[r.ID]
		if !found {
			t.Errorf("%s: no verdict reported", r.ID)
			continue
		}
		var uo *rest.UnknownOutcomeError
		switch sdkUnknown := errors.As(r.Err, &uo); {
		case sdkUnknown != (v.Kind == rest.Unknown),
			errors.Is(r.Err, rest.ErrNotSent) != (v.Kind == rest.NotSent),
			r.Err == nil && v.Kind != rest.Accepted:
			t.Errorf("%s: the SDK's error %v disagrees with the verdict %v", r.ID, r.Err, v.Kind)
		}
		switch v.Kind {
		case rest.Accepted:
			ok++
			if r.Err != nil {
				cutBody++
			}
			if booked[r.ID] != 1 {
				t.Errorf("%s acknowledged, booked %d times", r.ID, booked[r.ID])
			}
		case rest.Unknown:
			unknown++
			unknownIDs[r.ID] = true
			s, found := settled[r.ID]
			switch {
			case !found:
				t.Errorf("%s: unknown outcome never reconciled", r.ID)
			case s.Fate == pathdialer.FateNotReceived && booked[r.ID] == 1:
				// Read by the fenced region after its lookup said "not
				// found" (provisional): the late-landing watch must say so.
				late = append(late, r.ID)
			case (s.Fate == pathdialer.FateResting || s.Fate == pathdialer.FateFilled) != (booked[r.ID] == 1):
				t.Errorf("%s: reconciled %v, booked %d times", r.ID, s.Fate, booked[r.ID])
			}
		case rest.NotSent:
			notSent++
			if booked[r.ID] != 0 {
				t.Errorf("%s: not sent, yet booked", r.ID)
			}
		default:
			t.Errorf("%s: verdict %v (%v)", r.ID, v.Kind, r.Err)
		}
	}
	for _, id := range late {
		ev.Wait(t, pathdialer.EventLateLanding, func(e pathdialer.Event) bool { return e.OrderID == id })
	}
	for id, n := range booked {
		if n > 1 {
			t.Errorf("%s booked %d times", id, n)
		}
	}
	// Nothing is sent through the fenced region after the fence: an
	// order the venue books there after it was already in flight
	// (written before, read by the venue after), its outcome unknown
	// to the client and settled by reconciliation.
	var inFlight int
	for _, o := range stub.Orders() {
		if o.Region != "eu" || !o.At.After(fenced.Time) {
			continue
		}
		inFlight++
		if !unknownIDs[o.ClientOrderID] {
			t.Errorf("%s booked through the fenced region after the fence, and not an order in flight at the fence", o.ClientOrderID)
		}
	}
	t.Logf("%s: %d acknowledged (%d of them cut while the SDK read the answer), %d unknown (reconciled; %d landed late, reported), %d not sent; %d booked, %d of them read by the fenced region after the fence (in flight)",
		name, ok, cutBody, unknown, len(late), notSent, len(booked), inFlight)
}
