package simbroker

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRESTPlacementIsIdempotentAcrossRegions(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	c := client(t, b, true, 5*time.Second)
	eu, us := b.Region("eu"), b.Region("us")
	key := b.APIKey()

	first := mustDo(t, c, "POST", eu.RESTURL()+"/v1/orders", key, marketOrder("c-1"))
	if first.code != http.StatusCreated || first.proto != 2 {
		t.Fatalf("first placement: %d over HTTP/%d, body %s; want 201 over HTTP/2", first.code, first.proto, first.body)
	}
	o := first.order(t)
	if o.Status != StatusFilled || o.Region != "eu" || o.FilledQty != "1000" || o.AvgPrice == "" {
		t.Fatalf("market order = %+v; want filled in eu", o)
	}
	if got := first.header.Get("X-Region"); got != "eu" {
		t.Fatalf("X-Region = %q", got)
	}
	// A repeat (same client order ID) through the other region returns the
	// existing order: 200, same order ID, nothing booked.
	again := mustDo(t, c, "POST", us.RESTURL()+"/v1/orders", key, marketOrder("c-1"))
	if again.code != http.StatusOK {
		t.Fatalf("repeat: %d %s; want 200", again.code, again.body)
	}
	if o2 := again.order(t); o2.OrderID != o.OrderID || o2.Region != "eu" {
		t.Fatalf("repeat returned %+v; want the existing order %s booked in eu", o2, o.OrderID)
	}
	if n := len(b.Book()); n != 1 {
		t.Fatalf("book has %d orders, want 1", n)
	}
	// Every region sees the same book.
	for _, rg := range b.Regions() {
		r := mustDo(t, c, "GET", rg.RESTURL()+"/v1/orders/c-1", key, nil)
		if r.code != 200 || r.order(t).OrderID != o.OrderID {
			t.Fatalf("%s GET order: %d %s", rg.Name(), r.code, r.body)
		}
	}
	log := b.Audit()
	if subs := log.Submissions()["c-1"]; subs != 2 {
		t.Fatalf("Submissions[c-1] = %d, want 2", subs)
	}
	if d := log.Duplicates(); len(d) != 0 {
		t.Fatalf("Duplicates = %v, want none", d)
	}
	orders := log.Orders()
	if len(orders) != 2 || orders[0].Outcome != OutcomeNew || orders[1].Outcome != OutcomeDuplicate ||
		orders[0].Region != "eu" || orders[1].Region != "us" || !strings.HasPrefix(orders[1].ConnID, "us/rest/") {
		t.Fatalf("audit orders = %+v", orders)
	}
}

func TestRESTBookOperationsAndAuditCounts(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	c := client(t, b, false, 5*time.Second) // HTTP/1.1 path
	eu, us := b.Region("eu"), b.Region("us")
	key := b.APIKey()

	if r := mustDo(t, c, "POST", eu.RESTURL()+"/v1/orders", key, limitOrder("l-1")); r.code != 201 || r.proto != 1 {
		t.Fatalf("limit: %d HTTP/%d %s", r.code, r.proto, r.body)
	} else if o := r.order(t); o.Status != StatusNew || o.Price != "1.2" || o.Qty != "5" {
		t.Fatalf("limit order = %+v; want resting at 1.2 qty 5", o)
	}
	switchAt := time.Now()
	if r := mustDo(t, c, "POST", us.RESTURL()+"/v1/orders", key, marketOrder("m-1")); r.code != 201 {
		t.Fatalf("market via us: %d %s", r.code, r.body)
	}
	// Open orders: only the resting limit.
	var list struct{ Orders []Order }
	r := mustDo(t, c, "GET", us.RESTURL()+"/v1/orders?status=open", key, nil)
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Orders) != 1 || list.Orders[0].ClientOrderID != "l-1" {
		t.Fatalf("open orders = %s (%v)", r.body, err)
	}
	if r := mustDo(t, c, "GET", us.RESTURL()+"/v1/orders?status=bogus", key, nil); r.code != 400 {
		t.Fatalf("bad status filter: %d", r.code)
	}
	if r := mustDo(t, c, "GET", eu.RESTURL()+"/v1/orders/nope", key, nil); r.code != 404 {
		t.Fatalf("unknown order: %d", r.code)
	}
	// Cancel: open → 200 canceled; filled → 409; unknown → 404.
	if r := mustDo(t, c, "DELETE", us.RESTURL()+"/v1/orders/l-1", key, nil); r.code != 200 || r.order(t).Status != StatusCanceled {
		t.Fatalf("cancel open: %d %s", r.code, r.body)
	}
	if r := mustDo(t, c, "DELETE", us.RESTURL()+"/v1/orders/m-1", key, nil); r.code != 409 {
		t.Fatalf("cancel filled: %d %s", r.code, r.body)
	}
	if r := mustDo(t, c, "DELETE", us.RESTURL()+"/v1/orders/zzz", key, nil); r.code != 404 {
		t.Fatalf("cancel unknown: %d", r.code)
	}
	// Invalid orders are rejected and audited, nothing booked.
	bad := map[string]any{"client_order_id": "bad-1", "symbol": "EURUSD", "side": "hold", "qty": "1", "type": "market"}
	if r := mustDo(t, c, "POST", eu.RESTURL()+"/v1/orders", key, bad); r.code != 400 || !strings.Contains(string(r.body), "side") {
		t.Fatalf("invalid side: %d %s", r.code, r.body)
	}
	log := b.Audit()
	if got := len(log.AcceptedThrough("us", switchAt)); got != 1 {
		t.Fatalf("AcceptedThrough(us) = %d, want 1", got)
	}
	if got := len(log.AcceptedThrough("eu", switchAt)); got != 0 {
		t.Fatalf("AcceptedThrough(eu, after switch) = %d, want 0", got)
	}
	if got := len(log.AcceptedThrough("eu", time.Time{})); got != 1 {
		t.Fatalf("AcceptedThrough(eu, ever) = %d, want 1", got)
	}
	cancels := log.Filter(func(r Record) bool { return r.Kind == KindCancel })
	if len(cancels) != 3 || cancels[0].Outcome != OutcomeOK || cancels[1].Outcome != OutcomeFailed {
		t.Fatalf("cancel audit = %+v", cancels)
	}
	rej := log.Filter(func(r Record) bool { return r.Outcome == OutcomeRejected })
	if len(rej) != 1 || rej[0].ClientOrderID != "bad-1" {
		t.Fatalf("rejected audit = %+v", rej)
	}
	for i, r := range log {
		if r.Seq != uint64(i+1) {
			t.Fatalf("audit seq %d at index %d", r.Seq, i)
		}
	}
}

func TestRESTAuthStatusAndAccount(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	c := client(t, b, true, 5*time.Second)
	eu := b.Region("eu")
	for _, key := range []string{"", "wrong-key-that-must-not-echo"} {
		r := mustDo(t, c, "GET", eu.RESTURL()+"/v1/account", key, nil)
		if r.code != http.StatusUnauthorized {
			t.Fatalf("key %q: %d", key, r.code)
		}
		if key != "" && strings.Contains(string(r.body), key) {
			t.Fatalf("401 body echoes the key: %s", r.body)
		}
		if strings.Contains(string(r.body), b.APIKey()) {
			t.Fatalf("401 body leaks the real key")
		}
	}
	r := mustDo(t, c, "GET", eu.ProbeURL()+"/v1/account", b.APIKey(), nil)
	var acct struct {
		AccountID    string   `json:"account_id"`
		Entity       string   `json:"entity"`
		Entitlements []string `json:"entitlements"`
	}
	if err := json.Unmarshal(r.body, &acct); err != nil || r.code != 200 || acct.AccountID != "ACC-0001" || len(acct.Entitlements) != 2 {
		t.Fatalf("account via probe: %d %s", r.code, r.body)
	}
	if r := mustDo(t, c, "GET", eu.RESTURL()+"/status", "", nil); r.code != 200 {
		t.Fatalf("status without key: %d", r.code)
	}
}

func TestREST503BurstThenRecovers(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	c := client(t, b, true, 5*time.Second)
	eu := b.Region("eu")
	key := b.APIKey()
	if err := b.SetFault("eu", REST, Fault503{N: 2, RetryAfter: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if r := mustDo(t, c, "GET", eu.RESTURL()+"/status", "", nil); r.code != 200 {
		t.Fatalf("status during 503 burst: %d (the status page must stay 200)", r.code)
	}
	r1 := mustDo(t, c, "POST", eu.RESTURL()+"/v1/orders", key, marketOrder("b-1"))
	r2 := mustDo(t, c, "GET", eu.ProbeURL()+"/v1/account", key, nil)
	for i, r := range []resp{r1, r2} {
		if r.code != 503 || r.header.Get("Retry-After") != "3" {
			t.Fatalf("request %d in burst: %d Retry-After %q", i, r.code, r.header.Get("Retry-After"))
		}
	}
	if _, ok := b.Order("b-1"); ok {
		t.Fatal("order refused with 503 was booked")
	}
	if r := mustDo(t, c, "POST", eu.RESTURL()+"/v1/orders", key, marketOrder("b-1")); r.code != 201 {
		t.Fatalf("after burst of 2: %d", r.code)
	}
	unavail := b.Audit().Filter(func(r Record) bool { return r.Outcome == OutcomeUnavailable })
	if len(unavail) != 1 || unavail[0].ClientOrderID != "b-1" {
		t.Fatalf("unavailable audit = %+v", unavail)
	}
	// Time-bound burst ends by itself.
	if err := b.SetFault("eu", REST, Fault503{Until: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if r := mustDo(t, c, "GET", eu.RESTURL()+"/v1/account", key, nil); r.code != 200 {
		t.Fatalf("expired Until still 503: %d", r.code)
	}
}

func TestRESTPartialHealthyProbeBrokenOrders(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	c := client(t, b, true, 5*time.Second)
	eu := b.Region("eu")
	key := b.APIKey()
	mustDo(t, c, "POST", eu.RESTURL()+"/v1/orders", key, limitOrder("p-0"))
	if err := b.SetFault("eu", REST, Partial{}); err != nil {
		t.Fatal(err)
	}
	if r := mustDo(t, c, "GET", eu.RESTURL()+"/status", "", nil); r.code != 200 {
		t.Fatalf("status: %d", r.code)
	}
	if r := mustDo(t, c, "GET", eu.ProbeURL()+"/v1/account", key, nil); r.code != 200 {
		t.Fatalf("probe: %d", r.code)
	}
	if r := mustDo(t, c, "POST", eu.RESTURL()+"/v1/orders", key, marketOrder("p-1")); r.code != 503 {
		t.Fatalf("order under partial: %d", r.code)
	}
	if r := mustDo(t, c, "DELETE", eu.RESTURL()+"/v1/orders/p-0", key, nil); r.code != 503 {
		t.Fatalf("cancel under partial: %d", r.code)
	}
	if _, ok := b.Order("p-1"); ok {
		t.Fatal("order booked under partial")
	}
	// The other region is unaffected.
	if r := mustDo(t, c, "POST", b.Region("us").RESTURL()+"/v1/orders", key, marketOrder("p-1")); r.code != 201 {
		t.Fatalf("us under eu partial: %d", r.code)
	}
	if err := b.SetFault("eu", REST, None{}); err != nil {
		t.Fatal(err)
	}
	if r := mustDo(t, c, "POST", eu.RESTURL()+"/v1/orders", key, marketOrder("p-2")); r.code != 201 {
		t.Fatalf("after clearing partial: %d", r.code)
	}
}

func TestRESTUnknownOutcomeBooksThenCuts(t *testing.T) {
	t.Parallel()
	for _, h2 := range []bool{true, false} {
		name := map[bool]string{true: "http2", false: "http1"}[h2]
		t.Run(name, func(t *testing.T) {
			b := startBroker(t, nil)
			c := client(t, b, h2, 5*time.Second)
			eu := b.Region("eu")
			if err := b.SetFault("eu", REST, UnknownOutcome{N: 1}); err != nil {
				t.Fatal(err)
			}
			_, err := do(c, "POST", eu.RESTURL()+"/v1/orders", b.APIKey(), marketOrder("u-1"))
			if err == nil {
				t.Fatal("placement under UnknownOutcome got an answer")
			}
			o, ok := b.Order("u-1")
			if !ok || o.Status != StatusFilled {
				t.Fatalf("order not booked despite the cut: %+v %v", o, ok)
			}
			cut := b.Audit().Filter(func(r Record) bool { return r.Outcome == OutcomeCut })
			if len(cut) != 1 || cut[0].ClientOrderID != "u-1" {
				t.Fatalf("audit cut = %+v", cut)
			}
			// N=1: the retry (same ID) is answered with the existing order.
			r := mustDo(t, c, "POST", eu.RESTURL()+"/v1/orders", b.APIKey(), marketOrder("u-1"))
			if r.code != 200 || r.order(t).OrderID != o.OrderID {
				t.Fatalf("retry after cut: %d %s", r.code, r.body)
			}
			if d := b.Audit().Duplicates(); len(d) != 0 {
				t.Fatalf("Duplicates = %v", d)
			}
		})
	}
}

// BookingDelay: an order is booked Delay after it arrived even though its
// client gave up (its connection cut) meanwhile; a lookup before then says
// "not found".
func TestRESTBookingDelayBooksAfterTheCut(t *testing.T) {
	t.Parallel()
	const delay = 3 * time.Second
	b := startBroker(t, nil)
	eu := b.Region("eu")
	if err := b.SetFault("eu", REST, BookingDelay{Delay: delay}); err != nil {
		t.Fatal(err)
	}
	if f := b.Faults()["eu"][REST]; len(f) != 1 || f[0] != "booking-delay(3s)" {
		t.Fatalf("Faults = %v", f)
	}
	sent := time.Now()
	// The client gives up long after its request reached the broker (on a
	// loaded host too), long before the booking.
	if _, err := do(client(t, b, false, 500*time.Millisecond), "POST", eu.RESTURL()+"/v1/orders", b.APIKey(), marketOrder("d-1")); err == nil {
		t.Fatal("the order was answered before its booking delay")
	}
	c := client(t, b, false, 10*time.Second)
	if r := mustDo(t, c, "GET", eu.RESTURL()+"/v1/orders/d-1", b.APIKey(), nil); r.code != 404 {
		t.Fatalf("lookup while booking: %d %s, want 404", r.code, r.body)
	}
	// A second order takes its own delay: by its answer the first is booked.
	if r := mustDo(t, c, "POST", eu.RESTURL()+"/v1/orders", b.APIKey(), marketOrder("d-2")); r.code != 201 || time.Since(sent) < delay {
		t.Fatalf("second order: %d after %v", r.code, time.Since(sent))
	}
	booked := b.Audit().Booked().Filter(func(r Record) bool { return r.ClientOrderID == "d-1" })
	if len(booked) != 1 || booked[0].Time.Sub(sent) < delay {
		t.Fatalf("d-1 booked %+v, want once, at least %v after it was sent", booked, delay)
	}
	if err := b.SetFault("eu", REST, BookingDelay{}); err != nil || len(b.Faults()["eu"][REST]) != 0 {
		t.Fatalf("BookingDelay{} did not end it: %v %v", err, b.Faults()["eu"])
	}
}

func TestNetworkFaultsOnREST(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	eu := b.Region("eu")
	key := b.APIKey()

	t.Run("down refuses then recovers on the same URL", func(t *testing.T) {
		c := client(t, b, true, 2*time.Second)
		url := eu.RESTURL()
		if err := b.SetFault("eu", REST, Down{}); err != nil {
			t.Fatal(err)
		}
		_, err := do(c, "GET", url+"/v1/account", key, nil)
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("request while down: %v; want connection refused", err)
		}
		if err := b.SetFault("eu", REST, None{}); err != nil {
			t.Fatal(err)
		}
		if eu.RESTURL() != url {
			t.Fatalf("URL changed: %s -> %s", url, eu.RESTURL())
		}
		if r := mustDo(t, c, "GET", url+"/v1/account", key, nil); r.code != 200 {
			t.Fatalf("after recovery: %d", r.code)
		}
	})
	t.Run("blackhole times out", func(t *testing.T) {
		c := client(t, b, true, 300*time.Millisecond)
		if err := b.SetFault("eu", REST, Blackhole{}); err != nil {
			t.Fatal(err)
		}
		defer b.SetFault("eu", REST, None{})
		_, err := do(c, "GET", eu.RESTURL()+"/v1/account", key, nil)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("request into blackhole: %v; want timeout", err)
		}
	})
	t.Run("latency slows every request", func(t *testing.T) {
		c := client(t, b, true, 5*time.Second)
		mustDo(t, c, "GET", eu.RESTURL()+"/status", "", nil) // warm the connection
		if err := b.SetFault("eu", REST, Latency{Delay: 80 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		defer b.SetFault("eu", REST, None{})
		start := time.Now()
		mustDo(t, c, "GET", eu.RESTURL()+"/status", "", nil)
		if d := time.Since(start); d < 160*time.Millisecond {
			t.Fatalf("request took %v under 80ms each-way latency", d)
		}
	})
	t.Run("reset cuts live connections", func(t *testing.T) {
		conn, err := tls.Dial("tcp", eu.Addr(REST), b.ClientTLSConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		waitFor(t, "relay to track the conn", func() bool { return len(eu.Relay(REST).Conns()) > 0 })
		if err := b.SetFault("eu", REST, Reset{}); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("read after Reset = %v; want ECONNRESET", err)
		}
		c := client(t, b, true, 5*time.Second)
		if r := mustDo(t, c, "GET", eu.RESTURL()+"/status", "", nil); r.code != 200 {
			t.Fatalf("after reset: %d", r.code)
		}
	})
	t.Run("monitor-only partition", func(t *testing.T) {
		c := client(t, b, true, 300*time.Millisecond)
		if err := b.PartitionMonitor("eu"); err != nil {
			t.Fatal(err)
		}
		defer b.SetFault("eu", Probe, None{})
		if _, err := do(c, "GET", eu.ProbeURL()+"/v1/account", key, nil); err == nil {
			t.Fatal("probe through a partitioned monitor path succeeded")
		}
		if r := mustDo(t, c, "POST", eu.RESTURL()+"/v1/orders", key, marketOrder("split-1")); r.code != 201 {
			t.Fatalf("trading during monitor partition: %d", r.code)
		}
		recs := b.Audit().AcceptedThrough("eu", time.Time{})
		if len(recs) == 0 || recs[len(recs)-1].ClientOrderID != "split-1" {
			t.Fatalf("audit = %+v", recs)
		}
	})
	t.Run("flap alternates down and up", func(t *testing.T) {
		c := client(t, b, false, time.Second)
		if err := b.SetFault("eu", REST, Flap{Period: 150 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		var sawDown, sawUpAfterDown bool
		waitFor(t, "flap to go down and come back", func() bool {
			c.Transport.(*http.Transport).CloseIdleConnections()
			_, err := do(c, "GET", eu.RESTURL()+"/status", "", nil)
			if err != nil {
				sawDown = true
			} else if sawDown {
				sawUpAfterDown = true
			}
			return sawUpAfterDown
		})
		if f := b.Faults()["eu"][REST]; len(f) == 0 || f[0] != "flap" {
			t.Fatalf("Faults = %v", b.Faults())
		}
		if err := b.SetFault("eu", REST, None{}); err != nil {
			t.Fatal(err)
		}
		if f := b.Faults()["eu"][REST]; len(f) != 0 {
			t.Fatalf("faults after None = %v", f)
		}
		if r := mustDo(t, c, "GET", eu.RESTURL()+"/status", "", nil); r.code != 200 {
			t.Fatalf("after flap stopped: %d", r.code)
		}
	})
}
