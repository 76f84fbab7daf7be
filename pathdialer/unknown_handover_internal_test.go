package pathdialer

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// The promise: an order that finishes with an unknown outcome (Ticket.Unknown)
// is, at every instant, either among the orders in flight or among the
// unknown ones, so a switch's reconcile that takes the tickets at any moment
// hands it over; it never falls between the two (it would miss that
// reconcile, and the switch would release with its fate unknown).
//
// The finish is stopped at its one hand-over point: the list of unknown
// orders is busy (the test holds its lock) when the finish reaches it. There
// the test looks at what a reconcile taking the tickets would find at that
// instant: either the order's shard is still held by the finish (a reconcile
// waits for it), or the order is in flight or unknown. Then the finish
// completes and the reconcile takes the order, as unknown.
func TestUnknownOrderNeverBetweenInFlightAndUnknown(t *testing.T) {
	p, err := New(twoEndpointConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	p.setGate(GateOpen, "eu", 1, nil)
	tk, err := p.Acquire(ctx, ServiceFIX, "o-1")
	if err != nil {
		t.Fatal(err)
	}
	p.setGate(GateHeld, "", 1, errors.New("switch in progress"))

	p.unknownMu.Lock()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tk.Unknown(errors.New("connection cut after the order was written"))
	}()
	awaitLockWait(t, "(*Path).addUnknown")

	// What a reconcile taking the tickets now would see.
	var held []*ticketShard
	free := true
	for i := range p.shards {
		s := &p.shards[i]
		if !s.mu.TryLock() {
			free = false // the finish still holds the order's shard: a reconcile waits for it
			break
		}
		held = append(held, s)
	}
	inFlight := false
	for _, s := range held {
		for _, e := range s.infos {
			inFlight = inFlight || e.orderID == "o-1"
		}
	}
	unknown := slices.Contains(p.unknown, tk)
	for _, s := range held {
		s.mu.Unlock()
	}
	p.unknownMu.Unlock()
	<-finished
	if free && !inFlight && !unknown {
		t.Fatal("order o-1 is neither in flight nor among the unknown orders, and no lock keeps a reconcile from looking: a reconcile taking the tickets now would miss it")
	}

	taken := p.takeTickets()
	if len(taken) != 1 || taken[0].OrderID != "o-1" || taken[0].State != TicketUnknown {
		t.Fatalf("the reconcile took %+v; want o-1 as unknown", taken)
	}
	if n := p.inflightCount(); n != 0 {
		t.Fatalf("%d orders still counted in flight", n)
	}
}

// awaitLockWait returns once a goroutine is blocked acquiring a sync.Mutex
// inside fn (a function name as goroutine stacks print it). The limit only
// turns a hang into a failure; nothing is timed.
func awaitLockWait(t *testing.T, fn string) {
	t.Helper()
	limit := time.Now().Add(2 * time.Minute)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.Contains(g, "[sync.Mutex.Lock") && strings.Contains(g, fn) {
				return
			}
		}
		if time.Now().After(limit) {
			t.Fatalf("no goroutine blocked on a lock in %s; stacks:\n%s", fn, buf[:n])
		}
		runtime.Gosched()
	}
}
