package pathdialer_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// answered503 is a transport's error for an order the broker answered 503
// (as rest.UnknownOutcomeError is).
type answered503 struct{ server bool }

func (e answered503) Error() string        { return "order answered: HTTP 503" }
func (e answered503) ServerAnswered() bool { return e.server }

// ordersUnknownOn sends FailureThreshold orders on the active endpoint, each
// answered 503 as a transport reports it: the failure to the Path (Report),
// then the order's outcome unknown (Ticket.Unknown) with an error that says
// the broker answered (server true) or not (false: a cut answer).
func ordersUnknownOn(t *testing.T, h *harness, prefix string, server bool) {
	t.Helper()
	for i := range baseConfig().Engine.FailureThreshold {
		tk := mustAcquire(t, h.p, prefix+string(rune('a'+i)))
		h.p.Report(tk.Endpoint, tk.Token, errors.New("rest: HTTP 503"), time.Millisecond)
		tk.Unknown(fmt.Errorf("rest: outcome unknown: %w", answered503{server: server}))
	}
}

// A gray failure of order submission (orders answered 503 while the probe
// and reads pass) is not ended by a check a transport offers
// (OfferTradePathCheck): that check is a lookup, which such a failure does
// not break, so its success says nothing about submission. Flow stays off
// the endpoint: no failback onto it. Only when trading would otherwise halt
// is it tried again, as a last resort, at most once per failback cooldown
// since its last failure. Config.TradePathCheck, which the application
// writes to exercise the order path, ends it at once (next test).
func TestOfferedLookupDoesNotEndSubmissionGray(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const cooldown = 5 * time.Second
		h := newHarness(t, func(c *pathdialer.Config) { c.Engine.Cooldown = cooldown })
		defer h.close()
		lookup := &tradePath{} // reads work: the lookup passes all along
		h.p.OfferTradePathCheck("test transport", lookup.check)
		h.start()
		ordersUnknownOn(t, h, "o", true)
		if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
			t.Fatalf("switch %v", sw)
		}
		h.await(pathdialer.EventRelease, nil)
		<-time.After(30 * time.Second) // eu's probe and lookup pass; cooldown 5 s
		synctest.Wait()
		lookup.mu.Lock()
		calls := lookup.calls
		lookup.mu.Unlock()
		eu := snapshotOf(h.p, "eu")
		if !eu.GrayFailure || !eu.SubmissionFailed || eu.State != engine.Down || calls < 10 {
			t.Fatalf("30 s after eu's orders failed, its probe and the offered lookup (%d calls) passing: want eu still in its gray failure of submission (DOWN), got %+v; events:\n%s",
				calls, eu, timeline(h.rec.all()))
		}
		if a, _ := h.p.Active(); a.Name != "us" {
			t.Fatalf("active %q: flow went back onto eu, whose orders failed", a.Name)
		}
		// The backup dies: eu as the last resort, through a halt when us is
		// DOWN before eu's next check has passed, or at once when the two
		// come in the same instant (no halt is needed then).
		from := h.cursor
		h.probes.set("us", probeFail)
		sw := h.await(pathdialer.EventSwitch, nil)
		var stop pathdialer.Event // the halt, or else the hold as us went DOWN
		for _, e := range h.rec.all()[from:h.cursor] {
			if e.Kind == pathdialer.EventHalt || (e.Kind == pathdialer.EventHold && stop.Kind != pathdialer.EventHalt) {
				stop = e
			}
		}
		if stop.Kind == pathdialer.EventHalt && !strings.Contains(stop.Cause, "gray failure") {
			t.Fatalf("halt cause %q does not name eu's gray failure", stop.Cause)
		}
		if stop.Time.IsZero() || sw.To != "eu" || sw.Time.Sub(stop.Time) > 2*baseConfig().ProbeInterval {
			t.Fatalf("switch %v, %v after the %v: want eu tried as the last resort within two probe rounds; events:\n%s", sw, sw.Time.Sub(stop.Time), stop.Kind, timeline(h.rec.all()[from:]))
		}
		h.await(pathdialer.EventRelease, nil)
		// Its orders still fail: out again, and not tried again before the
		// cooldown has passed since that failure.
		ordersUnknownOn(t, h, "p", true)
		failed := time.Now()
		h.await(pathdialer.EventHalt, nil)
		res := h.await(pathdialer.EventResume, nil)
		if d := res.Time.Sub(failed); res.Endpoint != "eu" || d < cooldown || d > cooldown+2*baseConfig().ProbeInterval {
			t.Fatalf("second try %v, %v after eu's orders failed again: want trading resumed on eu after the cooldown (%v), within two probe rounds of it", res, d, cooldown)
		}
	})
}

// Config.TradePathCheck is the application's check of the order path: its
// success ends a gray failure of order submission at once.
func TestTradePathCheckEndsSubmissionGray(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		check := &tradePath{err: errors.New("test order: HTTP 503")}
		h := newHarness(t, func(c *pathdialer.Config) { c.TradePathCheck = check.check })
		defer h.close()
		h.start()
		ordersUnknownOn(t, h, "o", true)
		if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
			t.Fatalf("switch %v", sw)
		}
		h.await(pathdialer.EventGray, func(e pathdialer.Event) bool { return e.Endpoint == "eu" })
		<-time.After(5 * time.Second)
		synctest.Wait()
		if eu := snapshotOf(h.p, "eu"); !eu.GrayFailure {
			t.Fatalf("eu while its TradePathCheck fails: %+v", eu)
		}
		check.set(nil)
		healed := time.Now()
		back := h.await(pathdialer.EventGray, func(e pathdialer.Event) bool { return e.Endpoint == "eu" })
		if !strings.Contains(back.Cause, "back") {
			t.Fatalf("gray event %v", back)
		}
		if d := back.Time.Sub(healed); d > 2*baseConfig().ProbeInterval {
			t.Fatalf("eu back %v after its TradePathCheck passed, want within two probe rounds", d)
		}
	})
}

// Orders whose answers were cut (no server error) are not marked as a
// failure of submission: a lookup through the endpoint crosses the same
// way, and the offered check's success ends the gray failure as before.
func TestOfferedLookupEndsGrayOfCutAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		lookup := &tradePath{err: errors.New("order status: HTTP 503")}
		h.p.OfferTradePathCheck("test transport", lookup.check)
		h.start()
		ordersUnknownOn(t, h, "o", false)
		if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
			t.Fatalf("switch %v", sw)
		}
		h.await(pathdialer.EventGray, func(e pathdialer.Event) bool { return e.Endpoint == "eu" })
		if eu := snapshotOf(h.p, "eu"); eu.SubmissionFailed {
			t.Fatalf("eu marked a failure of submission for cut answers: %+v", eu)
		}
		lookup.set(nil)
		healed := time.Now()
		back := h.await(pathdialer.EventGray, func(e pathdialer.Event) bool { return e.Endpoint == "eu" })
		if d := back.Time.Sub(healed); !strings.Contains(back.Cause, "back") || d > 2*baseConfig().ProbeInterval {
			t.Fatalf("gray event %v, %v after the lookup passed; want eu back within two probe rounds", back, d)
		}
	})
}
