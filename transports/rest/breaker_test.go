package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// stallable is a broker whose every answer can be withheld: while stalled,
// a request waits until its client gives up (or the server closes). Healthy,
// GET /v1/orders/{id} answers the order as filled and anything else 200.
type stallable struct {
	stalled atomic.Bool
}

func (s *stallable) handle(w http.ResponseWriter, r *http.Request) {
	if s.stalled.Load() {
		<-r.Context().Done()
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v1/orders/") {
		_ = json.NewEncoder(w).Encode(map[string]string{"client_order_id": path.Base(r.URL.Path), "status": "filled"})
		return
	}
	w.WriteHeader(http.StatusOK)
}

func orderLookup(t *testing.T) *rest.Reconciler {
	t.Helper()
	rec, err := rest.NewReconciler(rest.ReconcileOptions{URL: "https://broker.invalid/v1/orders/" + rest.OrderIDPlaceholder, IDField: "client_order_id"})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// timedOutRead sends one application read that gives up after d and returns
// its error.
func timedOutRead(c *http.Client, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://broker.invalid/v1/account", nil)
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// tripByTimeouts sends application reads that time out on the stalled eu
// until its read breaker opens (the default trips after 5 in a row).
func tripByTimeouts(t *testing.T, c *http.Client, rt *rest.Transport) {
	t.Helper()
	for i := range 5 {
		if err := timedOutRead(c, 50*time.Millisecond); err == nil || errors.Is(err, rest.ErrBreakerOpen) {
			t.Fatalf("read %d on the stalled endpoint: err = %v, want a timeout", i, err)
		}
	}
	if st, _ := rt.BreakerState("eu"); st != gobreaker.StateOpen {
		t.Fatalf("after 5 timed-out reads the breaker is %v, want open", st)
	}
}

// The reads that decide whether the gate opens are not refused by the breaker
// that the outage opened: once the broker answers again, the reconcile
// succeeds on its first attempt. Application reads stay refused fast until
// then, and the reconcile's success closes the breaker for them.
func TestReconcileReadsAreNotRefusedByTheOpenBreaker(t *testing.T) {
	broker := &stallable{}
	eu := newServer(t, "eu", true, broker.handle)
	us := newServer(t, "us", true, broker.handle)
	h := newHarness(t, eu.URL, us.URL, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 1000 })
	var mu sync.Mutex
	var changes []string
	c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), Breaker: gobreaker.Settings{
		Timeout: time.Hour, // never half-open by itself within the test
		OnStateChange: func(name string, from, to gobreaker.State) {
			mu.Lock()
			changes = append(changes, name+": "+from.String()+" -> "+to.String())
			mu.Unlock()
		},
	}})
	rec := orderLookup(t)
	rec.SendLookupsVia(rt)

	broker.stalled.Store(true)
	tripByTimeouts(t, c, rt)
	// A reconcile during the outage fails too (its lookups time out).
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	if _, err := rec.Reconcile(ctx, tickets("o-1", "o-2", "o-3")); err == nil {
		t.Fatal("a reconcile against the stalled broker succeeded")
	}
	cancel()

	broker.stalled.Store(false) // the broker answers again
	// Ordinary reads are still refused fast by the open breaker.
	reads := eu.n("GET /v1/account")
	if err := timedOutRead(c, 5*time.Second); !errors.Is(err, rest.ErrBreakerOpen) {
		t.Fatalf("application read with the breaker open: err = %v, want ErrBreakerOpen", err)
	}
	if n := eu.n("GET /v1/account"); n != reads {
		t.Fatalf("the open breaker let an application read through (%d -> %d)", reads, n)
	}

	// The reconcile's first attempt after the heal succeeds.
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := rec.Reconcile(ctx, tickets("o-1", "o-2", "o-3"))
	if err != nil {
		t.Fatalf("first reconcile after the heal: %v", err)
	}
	for id, f := range fates(t, got) {
		if f != pathdialer.FateFilled {
			t.Fatalf("order %s: fate %v, want FILLED", id, f)
		}
	}
	// Its success closed the breaker (and said so); reads flow again.
	if st, _ := rt.BreakerState("eu"); st != gobreaker.StateClosed {
		t.Fatalf("breaker after a successful reconcile read: %v, want closed", st)
	}
	mu.Lock()
	last := changes[len(changes)-1]
	mu.Unlock()
	if last != "rest/eu: open -> closed" {
		t.Fatalf("last breaker state change %q, want the close reported; all: %v", last, changes)
	}
	if err := timedOutRead(c, 5*time.Second); err != nil {
		t.Fatalf("application read after the reconcile: %v", err)
	}
	if n := eu.n("GET /v1/account"); n != reads+1 {
		t.Fatalf("the application read did not reach the broker (%d -> %d)", reads, n)
	}
}

// A reconcile's failed lookups do not feed the read breaker: they are bounded
// and retried by the Path, and eight of them at once would otherwise trip it
// by themselves and refuse the application's reads after the broker recovers.
func TestReconcileFailuresDoNotTripTheBreaker(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	handler := func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
	eu := newServer(t, "eu", true, handler)
	us := newServer(t, "us", true, handler)
	h := newHarness(t, eu.URL, us.URL, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 1000 })
	c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), Breaker: gobreaker.Settings{Timeout: time.Hour}})
	rec := orderLookup(t)
	rec.SendLookupsVia(rt)
	ids := []string{"o-1", "o-2", "o-3", "o-4", "o-5", "o-6", "o-7", "o-8"}
	for range 3 { // three attempts, as the Path's retries would make
		if _, err := rec.Reconcile(context.Background(), tickets(ids...)); !errors.Is(err, rest.ErrReconcileIncomplete) {
			t.Fatalf("reconcile against a failing broker: err = %v, want ErrReconcileIncomplete", err)
		}
	}
	if n := eu.n("GET /v1/orders/o-1"); n != 3 {
		t.Fatalf("the broker saw %d lookups of o-1, want 3 (one per attempt)", n)
	}
	if st, _ := rt.BreakerState("eu"); st != gobreaker.StateClosed {
		t.Fatalf("breaker after 24 failed reconcile lookups: %v, want closed", st)
	}
	// They are still evidence for the Path.
	if st, _ := h.path.Engine().Status("eu"); st.ConsecutiveFailures == 0 || st.LastProbeError == nil {
		t.Fatalf("the failed lookups were not passed to the Path as evidence: %+v", st)
	}
	failing.Store(false)
	reads := eu.n("GET /v1/account")
	if err := timedOutRead(c, 5*time.Second); err != nil {
		t.Fatalf("application read after the broker recovered: %v", err)
	}
	if n := eu.n("GET /v1/account"); n != reads+1 {
		t.Fatalf("the application read did not reach the broker (%d -> %d)", reads, n)
	}
}

// The whole cycle on a real Path: an order's outcome is unknown, both regions
// fail and trading halts, the application's reads time out until the read
// breaker opens; then the broker answers again and the resume's reconcile
// (this package's Reconciler) succeeds on its first attempt and releases flow.
func TestResumeAfterHaltIsNotHeldByTheReadBreaker(t *testing.T) {
	broker := &stallable{}
	eu := newServer(t, "eu", true, broker.handle)
	us := newServer(t, "us", true, broker.handle)
	rec := orderLookup(t)
	h := newHarness(t, eu.URL, us.URL, func(c *pathdialer.Config) {
		c.Reconcile = rec.Reconcile
		c.SettleUnknown = 0 // the unknown order waits for the resume
		c.ReconcileTimeout = 2 * time.Second
	})
	c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), Breaker: gobreaker.Settings{Timeout: time.Hour}})
	rec.SendLookupsVia(rt)

	tk, err := h.path.Acquire(context.Background(), pathdialer.ServiceREST, "o-cut")
	if err != nil {
		t.Fatal(err)
	}
	tk.Unknown(errors.New("connection cut after the order was written"))

	broker.stalled.Store(true)
	h.down["eu"].Store(true)
	h.down["us"].Store(true)
	h.waitEvent(t, pathdialer.EventHalt)
	tripByTimeouts(t, c, rt)

	broker.stalled.Store(false)
	h.down["eu"].Store(false)
	h.waitEvent(t, pathdialer.EventResume)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-h.events.C():
			switch ev.Kind {
			case pathdialer.EventReconcileFailure:
				t.Fatalf("the resume's reconcile failed (attempt %d): %v", ev.Attempt, ev.Err)
			case pathdialer.EventReconcileSuccess:
				if ev.Attempt != 1 || len(ev.Settlements) != 1 || ev.Settlements[0].Fate != pathdialer.FateFilled {
					t.Fatalf("resume reconciled on attempt %d with %+v, want attempt 1 finding o-cut FILLED", ev.Attempt, ev.Settlements)
				}
				h.waitEvent(t, pathdialer.EventRelease)
				return
			}
		case <-deadline:
			t.Fatalf("no reconcile outcome within 10s of the resume; snapshot: %+v", h.path.Snapshot())
		}
	}
}

// WithReconcile marks a lookup of a reconciler of one's own: a read whatever
// its method (no ticket, no order ID), let through an open breaker. A later
// WithSubmission overrides it.
func TestWithReconcileMarksAReadThatPassesTheOpenBreaker(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	handler := func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte(`{"status":"filled"}`))
	}
	eu := newServer(t, "eu", true, handler)
	us := newServer(t, "us", true, handler)
	h := newHarness(t, eu.URL, us.URL, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 1000 })
	c, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), Breaker: gobreaker.Settings{Timeout: time.Hour}})
	for range 5 {
		if err := timedOutRead(c, 5*time.Second); err != nil {
			t.Fatal(err) // a 500 answer is a response, and a breaker failure
		}
	}
	if st, _ := rt.BreakerState("eu"); st != gobreaker.StateOpen {
		t.Fatalf("breaker %v, want open", st)
	}
	failing.Store(false)
	lookup := func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://broker.invalid/v1/orders:query", strings.NewReader(`{"ids":["o-1"]}`))
		return c.Do(req)
	}
	// Marked a submission last: a POST without an order ID, refused unsent.
	if _, err := lookup(rest.WithSubmission(rest.WithReconcile(context.Background()), true)); !errors.Is(err, rest.ErrNoOrderID) {
		t.Fatalf("WithSubmission(true) over WithReconcile: err = %v, want ErrNoOrderID", err)
	}
	resp, err := lookup(rest.WithReconcile(context.Background()))
	if err != nil {
		t.Fatalf("reconcile lookup with the breaker open: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || eu.n("POST /v1/orders:query") != 1 {
		t.Fatalf("reconcile lookup: HTTP %d, broker saw %d", resp.StatusCode, eu.n("POST /v1/orders:query"))
	}
	if st, _ := rt.BreakerState("eu"); st != gobreaker.StateClosed {
		t.Fatalf("breaker after the lookup succeeded: %v, want closed", st)
	}
	if s := rt.Stats(); s.Reads.Load() != 6 || s.ReadSuccesses.Load() != 1 || s.BreakerRejections.Load() != 0 {
		t.Fatalf("stats: %d reads, %d successes, %d breaker rejections; want 6, 1, 0", s.Reads.Load(), s.ReadSuccesses.Load(), s.BreakerRejections.Load())
	}
}

// The read breaker decides exactly as before whether reads go straight out
// while it is closed and clean: five failures in a row open it, a success
// between them starts the count again, and a ReadyToTrip of the
// application's own sees every read, successes included.
func TestReadBreakerCountsEveryOutcomeThatDecides(t *testing.T) {
	var failing atomic.Bool
	h := func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
	read := func(t *testing.T, c *http.Client) error {
		t.Helper()
		resp, err := c.Get("https://broker.invalid/v1/account")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	reads := func(t *testing.T, c *http.Client, n int, fail bool) {
		t.Helper()
		failing.Store(fail)
		for i := range n {
			if err := read(t, c); err != nil {
				t.Fatalf("read %d (failing %v): %v", i, fail, err)
			}
		}
	}
	t.Run("default", func(t *testing.T) {
		eu, us := newServer(t, "eu", true, h), newServer(t, "us", true, nil)
		hs := newHarness(t, eu.URL, us.URL, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 1000 })
		c, rt := newClient(t, hs, rest.Options{TLSConfig: rootsOf(eu, us)})
		reads(t, c, 20, false)
		reads(t, c, 4, true)
		reads(t, c, 1, false) // the count starts again
		reads(t, c, 4, true)
		if st, _ := rt.BreakerState("eu"); st != gobreaker.StateClosed {
			t.Fatalf("after 4 failures, a success and 4 failures the breaker is %v, want closed", st)
		}
		reads(t, c, 1, true) // the fifth in a row
		if st, _ := rt.BreakerState("eu"); st != gobreaker.StateOpen {
			t.Fatalf("after 5 failures in a row the breaker is %v, want open", st)
		}
		if err := read(t, c); !errors.Is(err, rest.ErrBreakerOpen) {
			t.Fatalf("read with the breaker open: %v, want ErrBreakerOpen", err)
		}
		if got := eu.n("GET /v1/account"); got != 30 {
			t.Fatalf("the server saw %d reads, want 30 (the open breaker refuses the last)", got)
		}
	})
	t.Run("own ReadyToTrip", func(t *testing.T) {
		eu, us := newServer(t, "eu", true, h), newServer(t, "us", true, nil)
		hs := newHarness(t, eu.URL, us.URL, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 1000 })
		var last atomic.Pointer[gobreaker.Counts]
		trip := func(c gobreaker.Counts) bool {
			last.Store(&c)
			return c.TotalFailures*2 > c.Requests // more than half failed
		}
		c, rt := newClient(t, hs, rest.Options{TLSConfig: rootsOf(eu, us), Breaker: gobreaker.Settings{ReadyToTrip: trip}})
		reads(t, c, 10, false)
		reads(t, c, 1, true)
		got := last.Load()
		if got == nil || got.Requests != 11 || got.TotalSuccesses != 10 || got.TotalFailures != 1 {
			t.Fatalf("ReadyToTrip saw %+v, want 11 requests, 10 successes, 1 failure", got)
		}
		reads(t, c, 9, true) // 10 of 20 failed: not more than half
		if st, _ := rt.BreakerState("eu"); st != gobreaker.StateClosed {
			t.Fatalf("with 10 of 20 reads failed the breaker is %v, want closed", st)
		}
		reads(t, c, 1, true)
		if st, _ := rt.BreakerState("eu"); st != gobreaker.StateOpen {
			t.Fatalf("with 11 of 21 reads failed the breaker is %v, want open", st)
		}
	})
}
