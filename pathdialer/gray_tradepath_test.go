package pathdialer_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// grayThenHalt takes eu out by a gray failure (orders fail while its probe
// passes), fails over to us, then takes us down by its probe: trading
// halts with eu the only candidate. It returns when the halt is announced.
func grayThenHalt(t *testing.T, h *harness) pathdialer.Event {
	t.Helper()
	for range 3 {
		h.p.Report("eu", 0, errors.New("HTTP 503 on order"), time.Millisecond)
	}
	if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
		t.Fatalf("switch %v", sw)
	}
	h.await(pathdialer.EventRelease, nil)
	h.probes.set("us", probeFail)
	return h.await(pathdialer.EventHalt, nil)
}

// Trading halted with a gray candidate and no TradePathCheck: a check offered
// by a transport (OfferTradePathCheck) runs every probe round on it, and
// once it passes trading resumes there within a few probe rounds, not after
// Engine.GrayFailbackWait. With nothing offered the probe does not stand in:
// the halt stands (eu's orders may still fail).
func TestGrayCandidateRecoversWhileHaltedWithOfferedCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		cfg := baseConfig()
		halt := grayThenHalt(t, h)
		if !strings.Contains(halt.Cause, "gray failure") {
			t.Fatalf("halt cause %q does not name eu's gray failure", halt.Cause)
		}
		<-time.After(30 * time.Second) // eu's probe passes all along
		synctest.Wait()
		if st := gateState(h.p); st != pathdialer.GateHalted {
			t.Fatalf("gate %v 30 s into the halt with nothing offered: the probe ended eu's gray failure", st)
		}
		tp := &tradePath{}
		h.p.OfferTradePathCheck("test transport", tp.check)
		offered := time.Now()
		bound := time.Duration(cfg.Engine.FailureThreshold+cfg.Engine.FailbackSuccessThreshold+2)*cfg.ProbeInterval + cfg.ReconcileTimeout
		<-time.After(bound)
		synctest.Wait()
		var released time.Time
		for _, e := range h.rec.all() {
			if e.Kind == pathdialer.EventRelease && !e.Time.Before(offered) && released.IsZero() {
				released = e.Time
			}
		}
		if released.IsZero() {
			t.Fatalf("still halted %v after a passing trade-path check was offered (Engine.GrayFailbackWait %v); eu %+v; events:\n%s",
				bound, cfg.Engine.GrayFailbackWait, snapshotOf(h.p, "eu"), timeline(h.rec.all()))
		}
		if a, _ := h.p.Active(); a.Name != "eu" {
			t.Fatalf("released on %q, want eu", a.Name)
		}
		if eu := snapshotOf(h.p, "eu"); eu.GrayFailure || eu.State != engine.Healthy {
			t.Fatalf("eu after the release: %+v", eu)
		}
		t.Logf("released %v after the check was offered (bound %v)", released.Sub(offered), bound)
	})
}

// Not halted, no TradePathCheck: the probe does not end the gray failure (it
// could not see it begin), but a check offered by a transport
// (OfferTradePathCheck) runs every probe round on the gray candidate: it
// keeps it out while it fails and lets it back at its first success.
func TestOfferedTradePathCheckEndsGrayFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		for range 3 {
			h.p.Report("eu", 0, errors.New("HTTP 503 on order"), time.Millisecond)
		}
		if sw := h.await(pathdialer.EventSwitch, nil); sw.To != "us" {
			t.Fatalf("switch %v", sw)
		}
		h.await(pathdialer.EventGray, nil)
		<-time.After(20 * time.Second) // eu's probe passes all along; nothing offered yet
		synctest.Wait()
		if eu := snapshotOf(h.p, "eu"); !eu.GrayFailure {
			t.Fatalf("the probe ended eu's gray failure while trading was not halted: %+v", eu)
		}
		tp := &tradePath{err: errors.New("order status: HTTP 503")}
		h.p.OfferTradePathCheck("test transport", tp.check)
		<-time.After(20 * time.Second)
		synctest.Wait()
		tp.mu.Lock()
		calls := tp.calls
		tp.mu.Unlock()
		if eu := snapshotOf(h.p, "eu"); !eu.GrayFailure || calls < 15 {
			t.Fatalf("failing offered check: %d calls in 20 s, eu %+v", calls, eu)
		}
		tp.set(nil)
		healed := time.Now()
		back := h.await(pathdialer.EventGray, func(e pathdialer.Event) bool { return e.Endpoint == "eu" })
		if !strings.Contains(back.Cause, "back") {
			t.Fatalf("gray event %v", back)
		}
		if d := back.Time.Sub(healed); d > 2*baseConfig().ProbeInterval {
			t.Fatalf("eu back %v after its check passed, want within two probe rounds", d)
		}
		// Config.TradePathCheck takes precedence over an offer.
		cfgCheck := &tradePath{err: errors.New("order status: HTTP 503")}
		h2 := newHarness(t, func(c *pathdialer.Config) { c.TradePathCheck = cfgCheck.check })
		defer h2.close()
		offered := &tradePath{}
		h2.p.OfferTradePathCheck("test transport", offered.check)
		h2.start()
		for range 3 {
			h2.p.Report("eu", 0, errors.New("HTTP 503 on order"), time.Millisecond)
		}
		<-time.After(5 * time.Second)
		synctest.Wait()
		cfgCheck.mu.Lock()
		offered.mu.Lock()
		if cfgCheck.calls == 0 || offered.calls != 0 {
			t.Errorf("Config.TradePathCheck ran %d times, the offered check %d: the configured one must be used", cfgCheck.calls, offered.calls)
		}
		offered.mu.Unlock()
		cfgCheck.mu.Unlock()
	})
}
