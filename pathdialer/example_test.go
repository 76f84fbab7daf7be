package pathdialer_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// One broker account reached through two regions, each a real TCP server on
// loopback that shares one order book with the other. Region eu goes silent
// while an order is on the wire: its probes time out, the Path holds orders,
// fences eu (closing the order's connection), switches to us, settles the
// order whose answer was lost by asking us, and only then lets the next order
// through, on us.
func Example() {
	book := &orderBook{booked: map[string]string{}}
	eu, err := serveRegion("eu", book, "order-2") // eu goes silent once order-2 is on the wire
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eu.close()
	us, err := serveRegion("us", book, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer us.close()

	var p *pathdialer.Path
	released := make(chan struct{})
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Priority: 0, Primary: true, Services: map[string]string{"orders": eu.addr()}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"orders": us.addr()}},
	}
	// The probe asks the order service itself (a TCP connect would prove nothing).
	// Probes dial directly: they must reach fenced endpoints too.
	cfg.Probe = func(ctx context.Context, ep pathdialer.Endpoint) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", ep.Services["orders"])
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = ask(ctx, c, "PING")
		return err
	}
	cfg.ProbeInterval, cfg.ProbeTimeout, cfg.ProbeJitter = 250*time.Millisecond, 200*time.Millisecond, 0
	cfg.Engine.FailureThreshold = 2
	cfg.InflightGrace = time.Second        // after the fence, wait this long for orders on the wire to finish
	cfg.Fencer = pathdialer.LocalFenceOnly // this process is the only one trading the account
	// Before flow is released on us, every order whose fate is unknown is
	// looked up in the broker's book, through us.
	cfg.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
		var settled []pathdialer.Settlement
		for _, t := range r.Tickets {
			to, _ := p.Endpoint(r.To)
			c, err := p.DialEndpoint(ctx, r.To, "tcp", to.Services["orders"])
			if err != nil {
				return settled, err // the Path keeps holding and retries
			}
			answer, err := ask(ctx, c, "STATUS "+t.OrderID)
			c.Close()
			if err != nil {
				return settled, err
			}
			s := pathdialer.Settlement{OrderID: t.OrderID, Service: t.Service, Fate: pathdialer.FateNotReceived}
			if by, ok := strings.CutPrefix(answer, "BOOKED "); ok {
				s.Fate, s.Detail = pathdialer.FateFilled, "booked by "+by
			}
			settled = append(settled, s)
		}
		return settled, nil
	}
	// Events arrive in order, from one goroutine.
	cfg.OnEvent = func(e pathdialer.Event) {
		switch e.Kind {
		case pathdialer.EventDecision:
			if !e.Decision.Failback {
				fmt.Println("decision:", e.From, "→", e.To, e.Decision.Outcome)
			}
		case pathdialer.EventFenceSuccess:
			fmt.Println("fenced:", e.Endpoint)
		case pathdialer.EventSwitch:
			fmt.Println("switched:", e.From, "→", e.To, "token", e.Token)
		case pathdialer.EventReconcileSuccess:
			for _, s := range e.Settlements {
				fmt.Println("settled:", s.OrderID, s.Fate, "("+s.Detail+")")
			}
		case pathdialer.EventRelease:
			fmt.Println("orders flow again on", e.Endpoint)
			close(released)
		}
	}
	if p, err = pathdialer.New(cfg); err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}

	fmt.Println(place(ctx, p, "order-1"))
	lost := make(chan string)
	go func() { lost <- place(ctx, p, "order-2") }()
	select {
	case <-released:
	case <-ctx.Done():
		fmt.Println("no switch:", ctx.Err())
		return
	}
	fmt.Println(<-lost)
	fmt.Println(place(ctx, p, "order-3"))
	// Output:
	// order-1: ACK from eu
	// decision: eu → us FENCE_REQUIRED
	// fenced: eu
	// decision: eu → us SWITCHED
	// switched: eu → us token 1
	// settled: order-2 FILLED (booked by eu)
	// orders flow again on us
	// order-2: outcome unknown, handed to reconciliation
	// order-3: ACK from us
}

// place submits one order the way a transport does: a ticket from the gate,
// a connection to the ticket's endpoint (tracked, so the fence can close it),
// then Done for an answer or Unknown when the answer was lost.
func place(ctx context.Context, p *pathdialer.Path, id string) string {
	t, err := p.Acquire(ctx, "orders", id) // held during a switch; ErrTradingHalted at once when halted
	if err != nil {
		return id + ": not sent: " + err.Error()
	}
	ep, _ := p.Endpoint(t.Endpoint)
	c, err := p.DialEndpoint(ctx, t.Endpoint, "tcp", ep.Services["orders"])
	if err != nil {
		t.Done() // nothing was written: the order was not sent
		return id + ": not sent: " + err.Error()
	}
	defer c.Close()
	answer, err := ask(ctx, c, "ORDER "+id)
	if err != nil {
		t.Unknown(err) // written, never answered: it may be booked
		return id + ": outcome unknown, handed to reconciliation"
	}
	t.Done()
	return id + ": " + answer
}

// ask writes one line and reads the one-line answer, within ctx.
func ask(ctx context.Context, c net.Conn, line string) (string, error) {
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	}
	if _, err := fmt.Fprintln(c, line); err != nil {
		return "", err
	}
	answer, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(answer, "\n"), err
}

// orderBook is the broker's one account book: every region sees every order.
type orderBook struct {
	mu     sync.Mutex
	booked map[string]string // client order ID → region that booked it
}

// region is one region of the broker: a TCP server on loopback speaking
// lines. "PING" → "PONG"; "ORDER id" books id (once) → "ACK from <region>";
// "STATUS id" → "BOOKED <region>" or "NONE". Once it has booked the order
// silentAfter it goes silent: it still books orders but answers nothing.
type region struct {
	name        string
	silentAfter string
	ln          net.Listener
	book        *orderBook
	silent      atomic.Bool
	wg          sync.WaitGroup
	mu          sync.Mutex
	conns       map[net.Conn]bool
}

func serveRegion(name string, book *orderBook, silentAfter string) (*region, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &region{name: name, silentAfter: silentAfter, ln: ln, book: book, conns: map[net.Conn]bool{}}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.conns[c] = true
			r.mu.Unlock()
			r.wg.Add(1)
			go r.serve(c)
		}
	}()
	return r, nil
}

func (r *region) addr() string { return r.ln.Addr().String() }

func (r *region) serve(c net.Conn) {
	defer r.wg.Done()
	defer c.Close()
	lines := bufio.NewScanner(c)
	for lines.Scan() {
		verb, id, _ := strings.Cut(lines.Text(), " ")
		r.book.mu.Lock()
		if _, dup := r.book.booked[id]; verb == "ORDER" && !dup {
			r.book.booked[id] = r.name
		}
		by, booked := r.book.booked[id]
		r.book.mu.Unlock()
		if verb == "ORDER" && id == r.silentAfter {
			r.silent.Store(true)
		}
		switch {
		case r.silent.Load():
		case verb == "PING":
			fmt.Fprintln(c, "PONG")
		case verb == "ORDER":
			fmt.Fprintln(c, "ACK from", r.name)
		case verb == "STATUS" && booked:
			fmt.Fprintln(c, "BOOKED", by)
		case verb == "STATUS":
			fmt.Fprintln(c, "NONE")
		}
	}
}

func (r *region) close() {
	r.ln.Close()
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
