package simbroker

import (
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// The dead-man timer cancels every open order when it lapses, not before:
// a refresh through another region keeps it armed, and the audit shows one
// protected span that lapsed at the last refresh's expiry.
func TestDeadManFiresOnlyWhenItLapses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, hc, _ := bubbleBroker(t)
		eu, us := b.Region("eu"), b.Region("us")
		start := time.Now()
		for _, id := range []string{"A", "B"} {
			if r := mustDo(t, hc, http.MethodPost, eu.RESTURL()+"/v1/orders", b.APIKey(), limitOrder(id)); r.code != 201 {
				t.Fatalf("limit %s: %d %s", id, r.code, r.body)
			}
		}
		arm := func(rg *Region, secs float64) resp {
			return mustDo(t, hc, http.MethodPost, rg.RESTURL()+"/v1/account/cancel-all-after", b.APIKey(), map[string]any{"timeout": secs})
		}
		if r := arm(eu, 60); r.code != 200 {
			t.Fatalf("arm: %d %s", r.code, r.body)
		}
		time.Sleep(40 * time.Second)
		if r := arm(us, 60); r.code != 200 { // refresh from the new path
			t.Fatalf("refresh: %d %s", r.code, r.body)
		}
		refreshed := time.Now()
		time.Sleep(59 * time.Second) // past the first arm's expiry (60s)
		if got := openCIDs(b); !slices.Equal(got, []string{"A", "B"}) {
			t.Fatalf("open after refresh %v: the first arm fired", got)
		}
		near := func(a, b time.Time) bool { return a.Sub(b).Abs() < 10*time.Millisecond } // one in-memory round trip
		if armed, exp := b.DeadMan(); !armed || !near(exp, refreshed.Add(60*time.Second)) {
			t.Fatalf("DeadMan() = %v %v", armed, exp)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := openCIDs(b); len(got) != 0 {
			t.Fatalf("open after lapse %v", got)
		}
		a := b.Audit()
		if got := cancelsBy(a, CauseDeadMan); !slices.Equal(got, []string{"A", "B"}) {
			t.Fatalf("dead-man cancels %v", got)
		}
		spans := a.DeadManSpans(time.Now())
		if len(spans) != 1 || spans[0].Ended != "lapsed" || !near(spans[0].From, start) ||
			!near(spans[0].Until, refreshed.Add(60*time.Second)) || len(spans[0].ArmedVia) != 2 {
			t.Fatalf("spans %+v", spans)
		}
	})
}

// Disarming (timeout 0) stops the timer: nothing is cancelled later.
func TestDeadManDisarm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, hc, _ := bubbleBroker(t)
		eu := b.Region("eu")
		mustDo(t, hc, http.MethodPost, eu.RESTURL()+"/v1/orders", b.APIKey(), limitOrder("A"))
		if _, err := b.ArmDeadMan(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		if r := mustDo(t, hc, http.MethodPost, eu.RESTURL()+"/v1/account/cancel-all-after", b.APIKey(), map[string]any{"timeout": 0}); r.code != 200 {
			t.Fatalf("disarm: %d %s", r.code, r.body)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := openCIDs(b); !slices.Equal(got, []string{"A"}) {
			t.Fatalf("open %v after disarm", got)
		}
		if spans := b.Audit().DeadManSpans(time.Now()); len(spans) != 1 || spans[0].Ended != "disarmed" {
			t.Fatalf("spans %+v", spans)
		}
		for _, body := range []any{map[string]any{}, map[string]any{"timeout": -1}, map[string]any{"timeout": 1e9}} {
			if r := mustDo(t, hc, http.MethodPost, eu.RESTURL()+"/v1/account/cancel-all-after", b.APIKey(), body); r.code != 400 {
				t.Errorf("body %v: %d %s, want 400", body, r.code, r.body)
			}
		}
	})
}

// DeadManSpans reads a hand-built log: a refresh after expiry starts a new
// span (the gap between is unprotected); a span armed at the end is open.
func TestDeadManSpansFromLog(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	l := AuditLog{
		{Kind: KindDeadMan, Time: at(0), Detail: "arm timeout=10s", ConnID: "eu/rest/1"},
		{Kind: KindDeadMan, Time: at(8), Detail: "arm timeout=10s", ConnID: "eu/rest/1"},
		{Kind: KindDeadMan, Time: at(25), Detail: "arm timeout=10s", ConnID: "us/rest/2"},
	}
	got := l.DeadManSpans(at(30))
	if len(got) != 2 || got[0].Until != at(18) || got[0].Ended != "lapsed" || got[1].From != at(25) || got[1].Ended != "open" || got[1].Until != at(35) {
		t.Fatalf("spans %+v", got)
	}
	// A recorded firing ends the span when it cancelled, a moment after
	// the expiry.
	fired := append(l[:2:2], Record{Kind: KindDeadMan, Time: at(18).Add(time.Millisecond), Detail: "fired"})
	if got := fired.DeadManSpans(at(30)); len(got) != 1 || got[0].Until != at(18).Add(time.Millisecond) || got[0].Ended != "lapsed" {
		t.Fatalf("spans with a firing %+v", got)
	}
}

// FillCrossing fills exactly the limits the price reaches; FillResting one
// order at a chosen time; both audited as fills.
func TestFillRestingOrders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, hc, _ := bubbleBroker(t)
		eu := b.Region("eu")
		place := func(id, side, price string) {
			o := map[string]any{"client_order_id": id, "symbol": "EURUSD", "side": side, "qty": "1", "type": "limit", "price": price}
			if r := mustDo(t, hc, http.MethodPost, eu.RESTURL()+"/v1/orders", b.APIKey(), o); r.code != 201 {
				t.Fatalf("%s: %d %s", id, r.code, r.body)
			}
		}
		place("buy-hi", "buy", "1.10")
		place("buy-lo", "buy", "1.00")
		place("sell-lo", "sell", "1.04")
		place("sell-hi", "sell", "1.20")
		filled, err := b.FillCrossing("EURUSD", "1.05")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range filled {
			ids = append(ids, o.ClientOrderID)
			if o.Status != StatusFilled || o.AvgPrice != "1.05" {
				t.Errorf("filled %+v", o)
			}
		}
		if !slices.Equal(ids, []string{"buy-hi", "sell-lo"}) {
			t.Fatalf("FillCrossing filled %v", ids)
		}
		if o, err := b.FillResting("buy-lo", ""); err != nil || o.AvgPrice != "1" {
			t.Fatalf("FillResting = %+v, %v", o, err)
		}
		if _, err := b.FillResting("buy-lo", ""); err == nil {
			t.Fatal("second fill of a filled order accepted")
		}
		if _, err := b.FillCrossing("EURUSD", "x"); err == nil {
			t.Fatal("bad price accepted")
		}
		if got := openCIDs(b); !slices.Equal(got, []string{"sell-hi"}) {
			t.Fatalf("open %v", got)
		}
		if n := len(b.Audit().Fills()); n != 3 {
			t.Fatalf("%d fill records, want 3", n)
		}
		r := mustDo(t, hc, http.MethodDelete, eu.RESTURL()+"/v1/orders", b.APIKey(), nil)
		if r.code != 200 || len(b.OpenOrders()) != 0 {
			t.Fatalf("cancel all: %d %s, open %v", r.code, r.body, openCIDs(b))
		}
		if got := cancelsBy(b.Audit(), CauseUser); !slices.Equal(got, []string{"sell-hi"}) {
			t.Fatalf("user cancels %v", got)
		}
	})
}
