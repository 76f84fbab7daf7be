package pathdialer

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The gate's register-then-recheck in Acquire against takeTickets, white-box:
// one goroutine holds the gate and takes the tickets, over and over, while others
// acquire. A ticket taken for reconciliation must be one that Acquire really
// granted (same order, same token), never one it was about to withdraw
// because the gate moved under it — that order would be settled as "not received"
// while the caller goes on to submit it under the next token.
func TestAcquireRecheckVersusTakeTickets(t *testing.T) {
	cfg := twoEndpointConfig()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.setGate(GateOpen, "eu", 0, nil)

	const workers = 4
	var (
		stop    atomic.Bool
		granted sync.Map // order ID → token
		wg      sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				id := strconv.Itoa(w) + "-" + strconv.Itoa(n)
				tk, err := p.Acquire(context.Background(), ServiceFIX, id)
				if err != nil {
					t.Errorf("Acquire: %v", err)
					return
				}
				granted.Store(id, tk.Token)
				if n%2 == 0 {
					tk.Done()
				}
			}
		}()
	}
	var handed []TicketInfo
	deadline := time.Now().Add(300 * time.Millisecond)
	for gen := uint64(1); time.Now().Before(deadline); gen++ {
		p.setGate(GateHeld, "", gen-1, errors.New("switch in progress"))
		handed = append(handed, p.takeTickets()...)
		p.setGate(GateOpen, "eu", gen, nil)
	}
	stop.Store(true)
	wg.Wait()
	handed = append(handed, p.takeTickets()...)
	if len(handed) == 0 {
		t.Fatal("nothing handed: the test proves nothing")
	}
	for _, ti := range handed {
		g, ok := granted.Load(ti.OrderID)
		if !ok || g.(uint64) != ti.Token {
			t.Fatalf("order %s handed to reconciliation as token %d, but Acquire granted it as %v (ok=%v)", ti.OrderID, ti.Token, g, ok)
		}
	}
}

// The hand-over from "in flight" to "unknown" is atomic with respect to what a
// reconcile takes: an order that finishes Unknown while takeTickets runs is
// either taken as in flight, or taken as unknown, never in neither set (which
// would make it miss the switch's reconcile and surface in Unknown afterwards).
func TestUnknownHandOverIsAtomicWithTakeTickets(t *testing.T) {
	cfg := twoEndpointConfig()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const orders = 300
	for round := range 200 {
		p.setGate(GateOpen, "eu", uint64(round), nil)
		tickets := make([]*Ticket, orders)
		for i := range tickets {
			tk, err := p.Acquire(context.Background(), ServiceFIX, "o-"+strconv.Itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			tickets[i] = tk
		}
		p.setGate(GateHeld, "", uint64(round), errors.New("switch in progress"))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, tk := range tickets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				tk.Unknown(errors.New("cut"))
			}()
		}
		close(start)
		taken := p.takeTickets()
		wg.Wait()
		if left := p.Unknown(); len(left) != 0 || len(taken) != orders {
			t.Fatalf("round %d: the reconcile took %d of %d orders; %d finished unknown outside it (missed the reconcile)", round, len(taken), orders, len(left))
		}
		if n := p.inflightCount(); n != 0 {
			t.Fatalf("round %d: %d still in flight", round, n)
		}
	}
}

// The switch's hand-off with 100,000 orders in flight: hold the gate, take
// every ticket for reconciliation. Target: well under 10 ms.
func BenchmarkSwitchHandOff100k(b *testing.B) {
	cfg := twoEndpointConfig()
	p, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	const n = 100_000
	tickets := make([]Ticket, n)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "o-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	for gen := uint64(0); b.Loop(); gen++ {
		b.StopTimer()
		p.setGate(GateOpen, "eu", gen, nil)
		for i := range tickets {
			tickets[i] = Ticket{}
			if err := p.AcquireInto(context.Background(), &tickets[i], ServiceFIX, ids[i]); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		p.setGate(GateHeld, "", gen, errors.New("switch"))
		if got := len(p.takeTickets()); got != n {
			b.Fatalf("took %d of %d", got, n)
		}
	}
}

// The floor of the hand-off, for a ratio on a loaded machine: copy 100,000
// tickets' fields into a fresh slice, with no lock, state change or gate.
func BenchmarkSwitchHandOff100kBaseline(b *testing.B) {
	const n = 100_000
	tickets := make([]Ticket, n)
	ptrs := make([]*Ticket, n)
	for i := range tickets {
		tickets[i].OrderID = "o-" + strconv.Itoa(i)
		ptrs[i] = &tickets[i]
	}
	b.ReportAllocs()
	for b.Loop() {
		out := make([]TicketInfo, 0, n)
		for _, t := range ptrs {
			out = append(out, t.info(TicketInFlight))
		}
		if len(out) != n {
			b.Fatal(len(out))
		}
	}
}

// A refilled ticket goes back to the shard it was last in while that shard is
// free (its memory is warm), to another shard when that one is busy, and never
// to a shard of another Path.
func TestAcquireIntoReusesTheTicketsShard(t *testing.T) {
	newOpen := func() *Path {
		cfg := twoEndpointConfig()
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		p.setGate(GateOpen, "eu", 0, nil)
		return p
	}
	p, q := newOpen(), newOpen()
	var tk Ticket
	if err := p.AcquireInto(context.Background(), &tk, ServiceFIX, "o-1"); err != nil {
		t.Fatal(err)
	}
	first := tk.shard
	tk.Done()
	for i := range 8 {
		if err := p.AcquireInto(context.Background(), &tk, ServiceFIX, "o-2-"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		if tk.shard != first {
			t.Fatalf("refill %d: the ticket moved to another shard although its own was free", i)
		}
		tk.Done()
	}

	first.mu.Lock() // busy: the refill must not wait for it
	done := make(chan error, 1)
	go func() { done <- p.AcquireInto(context.Background(), &tk, ServiceFIX, "o-3") }()
	select {
	case err := <-done:
		first.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		first.mu.Unlock()
		t.Fatal("AcquireInto waited for the ticket's busy shard")
	}
	if tk.shard == first {
		t.Fatal("the ticket was registered in a shard whose lock another goroutine held")
	}
	tk.Done()

	if err := q.AcquireInto(context.Background(), &tk, ServiceFIX, "o-4"); err != nil {
		t.Fatal(err)
	}
	inQ := false
	for i := range q.shards {
		inQ = inQ || tk.shard == &q.shards[i]
	}
	if !inQ {
		t.Fatal("a ticket refilled on another Path was registered in its old Path's shard")
	}
	tk.Done()
	if n := q.inflightCount() + p.inflightCount(); n != 0 {
		t.Fatalf("%d tickets still in flight after Done", n)
	}
}

// twoEndpointConfig is a valid Config over two endpoints (eu primary, us)
// whose probe always passes, with the local fence only and no reconcile: for
// tests that drive the gate and the fence directly.
func twoEndpointConfig() Config {
	cfg := DefaultConfig()
	cfg.Endpoints = []Endpoint{
		{Name: "eu", Region: "eu", Primary: true, Services: map[string]string{"fix": "eu.example:1"}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"fix": "us.example:1"}},
	}
	cfg.Probe = func(context.Context, Endpoint) error { return nil }
	cfg.Fencer = LocalFenceOnly
	cfg.Reconcile = NoReconcile
	return cfg
}
