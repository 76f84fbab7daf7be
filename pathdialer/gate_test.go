package pathdialer_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

func TestAcquireNeedsOrderID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		for _, id := range []string{"", "  "} {
			if _, err := h.p.Acquire(context.Background(), pathdialer.ServiceREST, id); !errors.Is(err, pathdialer.ErrInvalidConfig) {
				t.Errorf("Acquire(%q): %v", id, err)
			}
		}
	})
}

// A held Acquire honours its context: it returns the context's error when the
// deadline passes, not before, and says that it was held.
func TestAcquireHonoursContextWhileHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.FenceAttempts = 1000 })
		defer h.close()
		h.hooks.setFenceFails(-1)
		h.start()
		h.probes.set("eu", probeFail)
		h.await(pathdialer.EventHold, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		_, err := h.p.Acquire(ctx, pathdialer.ServiceREST, "o-1")
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "held") {
			t.Errorf("Acquire: %v", err)
		}
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("waited %v, want the 2s deadline", waited)
		}
	})
}

// Many goroutines acquire and finish tickets while the Path switches back and
// forth. Checked against a global sequence of what happened:
//   - a ticket of token g is granted only after the reconcile that released
//     g succeeded (never while held), and never by an Acquire that began after the
//     fence of g began (never once g was being left);
//   - its endpoint is the one active in token g, and so is every Dial's;
//   - every ticket handed to reconciliation was really granted by Acquire (with
//     that token), none is handed twice, and every ticket left in flight or of
//     unknown outcome on an earlier token was handed.
//
// A probe that misses its deadline on a loaded machine may halt trading for a
// round (both endpoints look DOWN); the halt and its resume are checked the same
// way. Real time and -race; goleak checks the package.
func TestConcurrentAcquireDuringSwitches(t *testing.T) {
	const (
		workers = 8
		cycles  = 15 // each a failover and a failback
	)
	var (
		euDown  atomic.Bool
		seq     atomic.Int64
		mu      sync.Mutex
		fenceAt = map[uint64]int64{} // token being left → first fence start
		// recAll: token → every reconcile success. A switch abandoned
		// after its fence (the endpoint answered again, as a loaded host's late
		// probe makes it) resumes on the same endpoint and token, through
		// a reconcile after the fence.
		recAll   = map[uint64][]int64{}
		recOK    = map[uint64]int64{} // token released → reconcile success
		genEP    = map[uint64]string{0: "eu"}
		handed   = map[string]uint64{} // order → token, as handed to reconciliation
		problems []string
	)
	problem := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	released := make(chan pathdialer.Event, 4*cycles+8)
	cfg := validConfig()
	cfg.Endpoints = []pathdialer.Endpoint{epEU, epUS}
	// A probe that misses its timeout on this busy machine makes an endpoint DOWN
	// (threshold 1) and may halt trading for a round: allowed, and checked too.
	cfg.ProbeInterval, cfg.ProbeTimeout, cfg.ProbeJitter = 5*time.Millisecond, 4*time.Millisecond, 0
	cfg.Engine.MaxHealthAge = time.Second
	cfg.Engine.FailureThreshold = 1
	cfg.Engine.Cooldown = 0
	cfg.Engine.FailbackSuccessThreshold = 1
	cfg.Engine.FlapLimit = 1 << 30
	cfg.Engine.FlapWindow = time.Nanosecond
	cfg.InflightGrace = 2 * time.Millisecond
	cfg.Probe = func(ctx context.Context, ep pathdialer.Endpoint) error {
		if ep.Name == "eu" && euDown.Load() {
			return errReset
		}
		return nil
	}
	cfg.Fencer = func(ctx context.Context, f pathdialer.Fence) error {
		s := seq.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if _, ok := fenceAt[f.Token]; !ok {
			fenceAt[f.Token] = s
		}
		return nil
	}
	cfg.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, tk := range r.Tickets {
			// An order may be handed again only after the reconcile that had it
			// was superseded (checked from the events: settled twice is wrong).
			handed[tk.OrderID] = tk.Token
			// A resume after a halt (From == To) reconciles its own token.
			if tk.Token > r.Token || tk.Token == r.Token && r.From != r.To {
				problems = append(problems, fmt.Sprintf("reconcile of token %d handed %s of token %d", r.Token, tk.OrderID, tk.Token))
			}
		}
		genEP[r.Token] = r.To
		at := seq.Add(1) // the last thing before success
		if _, ok := recOK[r.Token]; !ok {
			recOK[r.Token] = at
		}
		recAll[r.Token] = append(recAll[r.Token], at)
		return nil, nil
	}
	net := newPipeNet()
	defer net.close()
	cfg.Dial = net.dial
	var evMu sync.Mutex
	var events []pathdialer.Event
	// Events come from one dispatcher goroutine, in order.
	startTickets := map[string][]pathdialer.TicketInfo{}
	settled := map[string]uint64{}
	cfg.OnEvent = func(e pathdialer.Event) {
		if e.Kind != pathdialer.EventProbe {
			evMu.Lock()
			events = append(events, e)
			evMu.Unlock()
		}
		switch e.Kind {
		case pathdialer.EventReconcileStart:
			startTickets[reconcileKey(e)] = e.Tickets
		case pathdialer.EventReconcileSuccess:
			mu.Lock()
			for _, tk := range startTickets[reconcileKey(e)] {
				if g, dup := settled[tk.OrderID]; dup {
					problems = append(problems, fmt.Sprintf("order %s settled by two reconciles (tokens %d and %d)", tk.OrderID, g, e.Token))
				}
				settled[tk.OrderID] = e.Token
			}
			mu.Unlock()
		case pathdialer.EventRelease:
			released <- e
		}
	}
	defer func() {
		if t.Failed() {
			evMu.Lock()
			defer evMu.Unlock()
			t.Logf("timeline:\n%s", timeline(events))
		}
	}()
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	// gens[w][n] is 1 + the token of worker w's n-th ticket, 0 if none.
	gens := make([][]uint32, workers)
	var halted, grants atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				id := "w" + strconv.Itoa(w) + "-" + strconv.Itoa(n)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				before := seq.Add(1)
				tk, err := p.Acquire(ctx, pathdialer.ServiceREST, id)
				after := seq.Add(1)
				cancel()
				if err != nil {
					gens[w] = append(gens[w], 0)
					if errors.Is(err, pathdialer.ErrTradingHalted) {
						halted.Add(1)
						continue
					}
					problem("Acquire %s: %v", id, err)
					return
				}
				grants.Add(1)
				gens[w] = append(gens[w], uint32(tk.Token)+1)
				g := tk.Token
				mu.Lock()
				if ep, ok := genEP[g]; !ok || ep != tk.Endpoint {
					problems = append(problems, fmt.Sprintf("%s granted on %q in token %d, whose endpoint is %q", id, tk.Endpoint, g, ep))
				}
				if at, ok := recOK[g]; g > 0 && (!ok || at > after) {
					problems = append(problems, fmt.Sprintf("%s granted in token %d before its reconcile succeeded", id, g))
				}
				if at, ok := fenceAt[g]; ok && at < before && !slices.ContainsFunc(recAll[g], func(r int64) bool { return at < r && r < after }) {
					problems = append(problems, fmt.Sprintf("%s: Acquire began after the fence of token %d began and was still granted in it", id, g))
				}
				mu.Unlock()
				switch n % 8 {
				case 0:
					tk.Unknown(errors.New("read timeout"))
				case 1:
					// Left in flight for ever: must be handed to the next reconcile.
				case 2:
					runtime.Gosched()
					tk.Done()
				default:
					tk.Done()
				}
			}
		}()
	}
	// Reads dial all the time; every connection goes to its token's endpoint.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, err := p.Dial(context.Background(), pathdialer.ServiceFIX)
			if err != nil {
				if !errors.Is(err, pathdialer.ErrFenced) && !errors.Is(err, pathdialer.ErrSwitched) {
					problem("Dial: %v", err)
				}
				runtime.Gosched()
				continue
			}
			want := "eu" // tokens alternate: even on the primary, odd on the backup
			if c.Token()%2 == 1 {
				want = "us"
			}
			if c.Endpoint() != want {
				problem("conn of token %d on %q", c.Token(), c.Endpoint())
			}
			_ = c.Close()
		}
	}()

	waitRelease := func(ep string) {
		t.Helper()
		for {
			select {
			case e := <-released:
				if e.Endpoint == ep {
					return
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no release on %s", ep)
			}
		}
	}
	for range cycles {
		euDown.Store(true)
		waitRelease("us")
		euDown.Store(false)
		waitRelease("eu")
	}
	close(stop)
	wg.Wait()
	_, finalGen := p.Active()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, s := range problems {
		t.Error(s)
	}
	if finalGen < 2*cycles {
		t.Errorf("final token %d, want at least %d", finalGen, 2*cycles)
	}
	for id, g := range handed {
		var w, n int
		if _, err := fmt.Sscanf(strings.Replace(id, "-", " ", 1), "w%d %d", &w, &n); err != nil || w >= workers || n >= len(gens[w]) {
			t.Errorf("handed %q, which no Acquire returned", id)
			continue
		}
		if gens[w][n] != uint32(g)+1 {
			t.Errorf("handed %s as token %d; Acquire returned token %d (0 = none)", id, g, int(gens[w][n])-1)
		}
	}
	var inflightHanded int
	for w := range workers {
		for n, g1 := range gens[w] {
			if g1 == 0 || (n%8 != 0 && n%8 != 1) || uint64(g1-1) >= finalGen {
				continue
			}
			id := "w" + strconv.Itoa(w) + "-" + strconv.Itoa(n)
			if _, ok := handed[id]; !ok {
				t.Errorf("%s (token %d, never answered) not handed to reconciliation", id, g1-1)
			}
			inflightHanded++
		}
	}
	t.Logf("%d tickets granted, %d refused by a halt, %d handed to reconciliation, %d switches", grants.Load(), halted.Load(), len(handed), finalGen)
	if inflightHanded == 0 {
		t.Error("no ticket was ever in flight across a switch: the test proves nothing")
	}
}

// The reproduction of the hand-over race through the public API: 300 orders in
// flight on eu, each finishing Unknown as soon as the switch is seen, with no
// in-flight grace. Every one of them must reach the switch's reconcile (as in
// flight or as unknown), and none may be left in Unknown afterwards.
func TestOrdersFinishingUnknownDuringASwitchReachItsReconcile(t *testing.T) {
	for run := range 20 {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, func(c *pathdialer.Config) { c.InflightGrace = 0 })
			defer h.close()
			h.start()
			const n = 300
			changed := h.p.ActiveChanged()
			var wg sync.WaitGroup
			for i := range n {
				tk := mustAcquire(t, h.p, fmt.Sprintf("o-%d", i))
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-changed
					tk.Unknown(errReset)
				}()
			}
			h.probes.set("eu", probeBlackhole)
			h.await(pathdialer.EventRelease, nil)
			wg.Wait()
			recs := h.hooks.reconciliations()
			if len(recs) == 0 {
				t.Fatal("no reconciliation")
			}
			if got := len(recs[0].Tickets); got != n {
				t.Errorf("run %d: the switch's reconcile got %d of %d orders; %d left in Unknown()", run, got, n, len(h.p.Unknown()))
			}
		})
	}
}

// A switch waits for the tickets in flight only until the last one finishes,
// not for the whole InflightGrace.
func TestSwitchWaitsForInflightOnlyUntilTheyFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *pathdialer.Config) { c.InflightGrace = time.Minute })
		defer h.close()
		h.start()
		tk := mustAcquire(t, h.p, "o-1")
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventSwitch, nil)
		synctest.Wait()
		if n := len(h.hooks.reconciliations()); n != 0 {
			t.Fatalf("reconciled while a ticket was in flight and the grace runs")
		}
		finished := time.Now()
		tk.Done()
		rel := h.await(pathdialer.EventRelease, nil)
		if d := rel.Time.Sub(finished); d > time.Second {
			t.Fatalf("released %v after the last ticket finished", d)
		}
		if recs := h.hooks.reconciliations(); len(recs) != 1 || len(recs[0].Tickets) != 0 {
			t.Fatalf("reconciliations %+v: the finished ticket is not in doubt", recs)
		}
	})
}

// AcquireInto fills a caller-owned Ticket: refused while that ticket is in
// flight or waiting for reconciliation, allowed again after Done, and after a
// switch handed it to reconciliation (a late Done then reports it as late).
func TestAcquireIntoReuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		ctx := context.Background()
		var tk pathdialer.Ticket
		tk.Done() // a zero Ticket: nothing happens
		if err := h.p.AcquireInto(ctx, &tk, pathdialer.ServiceREST, "o-1"); err != nil || tk.Endpoint != "eu" || tk.OrderID != "o-1" {
			t.Fatalf("AcquireInto: %v, %+v", err, &tk)
		}
		if err := h.p.AcquireInto(ctx, &tk, pathdialer.ServiceREST, "o-2"); !errors.Is(err, pathdialer.ErrInvalidConfig) || tk.OrderID != "o-1" {
			t.Fatalf("refill while in flight: %v (order %s)", err, tk.OrderID)
		}
		tk.Done()
		if err := h.p.AcquireInto(ctx, &tk, pathdialer.ServiceREST, "o-2"); err != nil || tk.OrderID != "o-2" {
			t.Fatalf("refill after Done: %v", err)
		}
		tk.Unknown(errReset)
		if err := h.p.AcquireInto(ctx, &tk, pathdialer.ServiceREST, "o-3"); !errors.Is(err, pathdialer.ErrInvalidConfig) {
			t.Fatalf("refill while waiting for reconciliation: %v", err)
		}
		var inflight pathdialer.Ticket
		if err := h.p.AcquireInto(ctx, &inflight, pathdialer.ServiceREST, "o-4"); err != nil {
			t.Fatal(err)
		}
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, nil)
		recs := h.hooks.reconciliations()
		if len(recs) != 1 || !slices.Equal(orderIDs(recs[0].Tickets), []string{"o-2", "o-4"}) {
			t.Fatalf("reconciliation %+v", recs)
		}
		inflight.Done() // handed with its shard's epoch: a late finish
		if late := h.await(pathdialer.EventLateTicket, nil); late.OrderID != "o-4" {
			t.Fatalf("late ticket event %v", late)
		}
		for _, x := range []*pathdialer.Ticket{&tk, &inflight} {
			if err := h.p.AcquireInto(ctx, x, pathdialer.ServiceREST, "again-"+x.OrderID); err != nil || x.Endpoint != "us" {
				t.Fatalf("refill after the hand-over: %v, %+v", err, x)
			}
			x.Done()
		}
		if n := countKind(h.rec.all(), pathdialer.EventLateTicket); n != 1 {
			t.Errorf("%d late tickets, want 1 (refilled tickets finished normally are not late)", n)
		}
	})
}

// reconcileKey names one reconcile attempt in events.
func reconcileKey(e pathdialer.Event) string {
	return fmt.Sprintf("%s>%s g%d a%d %s %s", e.From, e.To, e.Token, e.Attempt, e.Service, e.Cause)
}
