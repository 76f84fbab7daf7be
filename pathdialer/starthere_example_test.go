package pathdialer_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// The package documentation's "Start here": a Path over two regions (here
// two servers on loopback sharing one book), and what a transport does for
// each order. (The package Example runs a switch.)
func ExampleNew() {
	book := &orderBook{booked: map[string]string{}}
	eu, err := serveRegion("eu", book, "")
	if err != nil {
		log.Fatal(err)
	}
	defer eu.close()
	us, err := serveRegion("us", book, "")
	if err != nil {
		log.Fatal(err)
	}
	defer us.close()
	euAddr, usAddr := eu.addr(), us.addr() // in production: "orders-eu.broker.example:7000", ...

	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Priority: 0, Primary: true, Services: map[string]string{"orders": euAddr}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"orders": usAddr}},
	}
	cfg.Probe = askOrderService            // asks the order service: a TCP connect proves nothing
	cfg.Fencer = pathdialer.LocalFenceOnly // this process alone trades the account
	cfg.Reconcile = lookUpInBook           // settles orders of unknown fate from the broker's book
	p, err := pathdialer.New(cfg)
	if err != nil {
		log.Fatal(err) // names what is missing or wrong
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		log.Fatal(err)
	}
	answer, err := submit(ctx, p, "order-1")
	fmt.Println(answer, err)
	// Output: ACK from eu <nil>
}

func submit(ctx context.Context, p *pathdialer.Path, orderID string) (string, error) {
	t, err := p.Acquire(ctx, "orders", orderID) // held during a switch; ErrTradingHalted when halted
	if err != nil {
		return "", err // not sent
	}
	ep, _ := p.Endpoint(t.Endpoint)
	c, err := p.DialEndpoint(ctx, t.Endpoint, "tcp", ep.Services["orders"]) // tracked: the fence closes it
	if err != nil {
		t.Done() // nothing was written
		return "", err
	}
	defer c.Close()
	answer, err := ask(ctx, c, "ORDER "+orderID)
	if err != nil {
		t.Unknown(err) // written, never answered: it may be booked; the reconcile function settles it
		return "", err
	}
	t.Done()
	return answer, nil
}

func askOrderService(ctx context.Context, ep pathdialer.Endpoint) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", ep.Services["orders"])
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = ask(ctx, c, "PING")
	return err
}

func lookUpInBook(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
	return nil, errors.New("ask the broker's book through r.To about each of r.Tickets")
}
