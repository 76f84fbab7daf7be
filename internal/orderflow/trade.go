package orderflow

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// TradeOptions paces Trade.
type TradeOptions struct {
	// RESTEvery, FIXEvery and ReadEvery: one REST order, one FIX order, one
	// account read per interval (0: none of that kind).
	RESTEvery, FIXEvery, ReadEvery time.Duration
	// LimitEvery: every n-th order is a limit buy at LimitPrice, far below the
	// market, so it rests (0: market orders only).
	LimitEvery int
	LimitPrice string
	// Prefix of the client order IDs ("R" and "F" are appended per transport).
	Prefix string
}

// DefaultTradeOptions: a REST order every 50 ms, a FIX order every 100 ms, an
// account read every 250 ms, every third order a resting limit buy.
func DefaultTradeOptions() TradeOptions {
	return TradeOptions{RESTEvery: 50 * time.Millisecond, FIXEvery: 100 * time.Millisecond, ReadEvery: 250 * time.Millisecond,
		LimitEvery: 3, LimitPrice: "0.5000", Prefix: "o"}
}

// Trader places orders on a Client at a steady pace, each order on its own
// goroutine (so orders stuck on a dead path do not stop the others), until
// Stop. The client order IDs are unique per Trader.
type Trader struct {
	c      *Client
	opts   TradeOptions
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	n  map[string]int
}

// StartTrading starts a Trader on c.
func StartTrading(c *Client, opts TradeOptions) *Trader {
	ctx, cancel := context.WithCancel(context.Background())
	t := &Trader{c: c, opts: opts, cancel: cancel, n: map[string]int{}}
	loop := func(every time.Duration, f func(ctx context.Context)) {
		if every <= 0 {
			return
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			tk := time.NewTicker(every)
			defer tk.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tk.C:
					t.wg.Add(1)
					go func() { defer t.wg.Done(); f(ctx) }()
				}
			}
		}()
	}
	if c.cfg.FIXSenderCompID == "" {
		opts.FIXEvery = 0
	}
	loop(opts.RESTEvery, func(ctx context.Context) { t.place(ctx, REST, "R") })
	loop(opts.FIXEvery, func(ctx context.Context) { t.place(ctx, FIX, "F") })
	loop(opts.ReadEvery, func(ctx context.Context) { _, _ = c.Account(ctx) })
	return t
}

func (t *Trader) place(ctx context.Context, transport, letter string) {
	t.mu.Lock()
	t.n[transport]++
	n := t.n[transport]
	t.mu.Unlock()
	o := OrderSpec{ClOrdID: fmt.Sprintf("%s%s%04d", t.opts.Prefix, letter, n)}
	if t.opts.LimitEvery > 0 && n%t.opts.LimitEvery == 0 {
		o.Limit = t.opts.LimitPrice
	}
	// Orders are not canceled by Stop: each runs to its own deadline, so an
	// order in flight at Stop is still answered, settled or counted not sent.
	_ = ctx
	_ = t.c.Place(context.Background(), transport, o)
}

// Stop stops placing orders and waits for those in progress to return.
func (t *Trader) Stop() {
	t.cancel()
	t.wg.Wait()
}

// Drain waits, bounded by ctx, until every order sent has been answered or
// settled, reconciling in place (without a switch) the orders that ended with
// an unknown outcome, and re-sending those found NOT_RECEIVED once their
// verdict is final. It returns the IDs still pending.
func (c *Client) Drain(ctx context.Context) []string {
	tk := time.NewTicker(100 * time.Millisecond)
	defer tk.Stop()
	for {
		pending := c.Pending()
		if len(pending) == 0 {
			return nil
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, _ = c.ReconcileUnknown(rctx)
		cancel()
		c.kickResend() // verdicts that became final since the last release
		select {
		case <-ctx.Done():
			return c.Pending()
		case <-tk.C:
		}
	}
}
