package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// Evidence rules: what moves orders, what ends a gray failure, what a broken
// probe does. Probe results and live-traffic results (Report) are counted
// apart by the engine (engine.Status.ProbeFailures and TrafficFailures), so an
// order success never cancels probe failures and a probe success never resets
// the count of failed orders.
//
//   - Live traffic failing moves orders: Engine.FailureThreshold failed orders
//     in a row take the endpoint DOWN whatever its probe says, and the active
//     endpoint fails over at once (the Report that makes it DOWN triggers the
//     evaluation).
//   - A probe failing while orders succeed does not move orders: while live
//     traffic on the endpoint has succeeded since its probe began failing, none
//     has failed since, and the last success is younger than
//     Engine.MaxHealthAge, the probe is the suspect (EventBrokenProbe,
//     EndpointSnapshot.BrokenProbe) and the endpoint is DEGRADED, not DOWN: no
//     failover. One failed order ends that at once (DOWN, failover), and so
//     does a hung order: one on the active endpoint still unanswered
//     ProbeTimeout after it was found late (SuspectAfter), no order having
//     succeeded there since (suspicion.go) — so a blackhole that follows a
//     probe blip is DOWN within the probes' budget, not at the application's
//     order timeout. Traffic that goes quiet for MaxHealthAge lets the probe
//     count again (failover at the next probe round). Orders and probe failing together is an outage,
//     never a broken probe. A probe that has never succeeded is reported as
//     broken too (check its address and credentials).
//   - A gray failure is an endpoint whose probe passed after its orders began
//     to fail. Orders failing before any probe was sent since the first of
//     them (the usual order while orders flow) leave the cause undetermined
//     (engine.Status.GrayUndetermined): the endpoint is DOWN at once (failover
//     is not delayed) and the next probe decides — it fails, and it is an
//     ordinary outage that the probe's next success ends (a region that died
//     and healed is a failover target again, its trade path checked as
//     below until an order succeeds on it); it passes, and it is a gray
//     failure. A probe in flight when the orders began to fail decides
//     nothing.
//   - A gray failure ends only on trade-path evidence (Config.TradePathCheck
//     succeeding, or live traffic succeeding; a check a transport offers is
//     a lookup, which ends it only when no order there was answered with a
//     server error since one last succeeded — a broker that refuses orders
//     may still answer reads — or, as the last resort, when trading would
//     otherwise halt, at most once per failback cooldown) or after
//     engine.Config.GrayFailbackWait times the number of its gray failures
//     with no failed trade-path check within MaxHealthAge. Probe results end
//     nothing: a probe blip (failures, then successes) during a gray failure
//     leaves it standing. TradePathCheck runs every probe round on an
//     endpoint that is or was gray, or came back from an outage its orders
//     met (engine.Status.WatchTradePath), until live traffic succeeds on it
//     again — also while it is considered for failback: a failed check makes
//     it DEGRADED (no failback), FailureThreshold of them (its probe passing)
//     a gray failure again.

// record routes one result to the engine: probes as probe evidence, passive
// reports as live-traffic evidence.
func (p *Path) record(endpoint string, err error, latency time.Duration, passive bool) (engine.Status, error) {
	if passive {
		return p.eng.ObserveTraffic(endpoint, err, latency)
	}
	return p.eng.Observe(endpoint, err, latency)
}

// offeredCheck is a trade-path check offered by a transport
// (OfferTradePathCheck), and who offered it.
type offeredCheck struct {
	by    string
	check ProbeFunc
}

// OfferTradePathCheck gives the Path a trade-path check to run when
// Config.TradePathCheck is nil: a check of the path orders take that the
// caller can make from what it already has. A transport calls it (the REST
// transport's Reconciler does, from SendLookupsVia: a lookup of an order ID
// never sent, through the endpoint checked); an application sets
// Config.TradePathCheck instead, which always takes precedence. by names who
// offers the check, in events ("rest.Reconciler"). The latest offer replaces
// any earlier one; a nil check withdraws it. Safe for concurrent use, before
// or after Start.
//
// See Config.TradePathCheck for when a trade-path check runs and what its
// result does.
func (p *Path) OfferTradePathCheck(by string, check ProbeFunc) {
	if check == nil {
		p.tradePathOffer.Store(nil)
		return
	}
	if by == "" {
		by = "a transport"
	}
	p.tradePathOffer.Store(&offeredCheck{by: by, check: check})
}

// tradePathCheck returns the check the probe rounds run on endpoints in or
// after a gray failure, and how to name it: Config.TradePathCheck, else the
// offered one (OfferTradePathCheck), else nil. The probe never stands in for
// one: it could not see the failure when it began, so its success proves
// nothing about it, halted or not.
func (p *Path) tradePathCheck() (check ProbeFunc, name string) {
	if c := p.cfg.TradePathCheck; c != nil {
		return c, "TradePathCheck"
	}
	if o := p.tradePathOffer.Load(); o != nil {
		return o.check, "the trade-path check of " + o.by
	}
	return nil, ""
}

// tradePathChecks runs the trade-path check (tradePathCheck), concurrently
// and bounded by ProbeTimeout, on every endpoint in a gray failure, or that
// was in one and has not carried a successful order since
// (engine.Status.WatchTradePath). Config.TradePathCheck's results are
// trade-path evidence (engine.Manager.ObserveTradePath); an offered check's
// are a lookup's (engine.Manager.ObserveLookup), whose success does not end
// a failure in which an order submission's outcome went unknown.
func (p *Path) tradePathChecks(ctx context.Context) {
	check, _ := p.tradePathCheck()
	if check == nil {
		return
	}
	observe := p.eng.ObserveTradePath
	if p.cfg.TradePathCheck == nil {
		observe = p.eng.ObserveLookup
	}
	var wg sync.WaitGroup
	for _, st := range p.eng.Statuses() {
		if !st.GrayFailure && !st.WatchTradePath {
			continue
		}
		rt := p.eps[st.Endpoint.Name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, p.cfg.ProbeTimeout)
			defer cancel()
			res := make(chan error, 1)
			p.probeWG.Add(1)
			go func() {
				defer p.probeWG.Done()
				res <- callProbe(cctx, check, rt.ep)
			}()
			var err error
			select {
			case err = <-res:
				if err == nil && cctx.Err() != nil {
					err = cctx.Err()
				}
			case <-cctx.Done():
				err = cctx.Err()
			}
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				err = fmt.Errorf("trade-path check of %q: %w", rt.ep.Name, err)
			}
			rt.obsMu.Lock()
			st, oerr := observe(rt.ep.Name, err)
			if oerr == nil {
				rt.state.Store(int32(st.State))
			}
			rt.obsMu.Unlock()
		}()
	}
	wg.Wait()
}

// ServerAnswered is implemented by a transport's unknown-outcome error
// (rest.UnknownOutcomeError) to say whether the broker answered the order
// with a server error (a 5xx) rather than cutting the answer or not
// answering. Ticket.Unknown looks for it in the cause's chain (errors.As).
type ServerAnswered interface {
	ServerAnswered() bool
}

// orderUnknown tells the engine that the broker answered an order submitted
// on endpoint with a server error (Ticket.Unknown, its cause a
// ServerAnswered that says so): its order service failed, which a lookup
// passing does not vouch for (engine.Manager.ObserveSubmissionFailed). A cut
// answer or a timeout may be the network's, which a lookup through the same
// endpoint does cross: it is not marked.
func (p *Path) orderUnknown(endpoint string, cause error) {
	var sa ServerAnswered
	if p.eps[endpoint] == nil || !errors.As(cause, &sa) || !sa.ServerAnswered() {
		return
	}
	_, _ = p.eng.ObserveSubmissionFailed(endpoint)
}

// noteEvidence announces, on change, broken probes and gray failures.
func (p *Path) noteEvidence() {
	gen := p.active.Load().gen
	for _, st := range p.eng.Statuses() {
		name := st.Endpoint.Name
		p.adm.mu.Lock()
		p.adm.init()
		wasBroken, wasGray := p.adm.brokenProbe[name], p.adm.gray[name]
		p.adm.brokenProbe[name], p.adm.gray[name] = st.BrokenProbe, st.GrayFailure
		p.adm.mu.Unlock()
		switch {
		case st.BrokenProbe && !wasBroken:
			cause := fmt.Sprintf("the probe of %q fails while live traffic on it succeeds (%d probe failures; last traffic success %v ago, no traffic failure since): the probe, not the endpoint, is suspect; flow stays on it until an order fails or hangs, or traffic is quiet for Engine.MaxHealthAge; last probe error: %v",
				name, st.ProbeFailures, time.Since(st.LastTrafficSuccess).Round(time.Millisecond), st.LastProbeError)
			if st.ProbeNeverSucceeded {
				cause = fmt.Sprintf("the probe of %q has never succeeded (%d failures in a row): check its address and credentials; last error: %v", name, st.ProbeFailures, st.LastProbeError)
			}
			p.events.emit(Event{Kind: EventBrokenProbe, Endpoint: name, Token: gen, Err: st.LastProbeError, Cause: cause})
		case !st.BrokenProbe && wasBroken:
			p.events.emit(Event{Kind: EventBrokenProbe, Endpoint: name, Token: gen, Cause: fmt.Sprintf("the probe of %q agrees with live traffic again", name)})
		}
		switch {
		case st.GrayFailure && !wasGray:
			how := "no TradePathCheck is configured and no transport offers a trade-path check: it waits"
			if _, check := p.tradePathCheck(); check != "" {
				how = check + " runs every probe round; without a success it waits"
				if st.SubmissionFailed && p.cfg.TradePathCheck == nil {
					how = "the broker answered orders there with a server error, and " + check + " is a lookup, which cannot vouch for them (it is tried again only when trading would halt, at most once per failback cooldown): it waits for an order to succeed there, or"
				}
			}
			p.events.emit(Event{Kind: EventGray, Endpoint: name, Token: gen, Err: st.LastProbeError, Cause: fmt.Sprintf(
				"%q is DOWN on live-traffic evidence while its probe passes (gray failure #%d): probe results do not bring it back; %s until %s (%v)",
				name, st.GrayFailures, how, st.GrayWaitUntil.Format(time.RFC3339), time.Until(st.GrayWaitUntil).Round(time.Second))})
		case !st.GrayFailure && wasGray:
			p.events.emit(Event{Kind: EventGray, Endpoint: name, Token: gen, Cause: fmt.Sprintf("%q is back from its gray failure (%v)", name, st.State)})
		}
	}
}

// EndpointEvidence is what the engine knows about an endpoint's evidence, as
// shown in a Snapshot: probe and live-traffic failures counted apart, a broken
// probe, a gray failure and its wait, bounces and the failback cooldown they
// set.
type EndpointEvidence struct {
	// ProbeFailures and TrafficFailures: consecutive failures of each kind.
	ProbeFailures   int `json:"probe_failures"`
	TrafficFailures int `json:"traffic_failures"`
	// BrokenProbe: the probe has never succeeded, or fails while live traffic
	// vouches for the endpoint (it succeeded since the probe began failing,
	// none failed or hung since, the last success younger than
	// Engine.MaxHealthAge):
	// the endpoint is then DEGRADED, not DOWN, and keeps the flow.
	// ProbeNeverSucceeded says which.
	BrokenProbe         bool `json:"broken_probe"`
	ProbeNeverSucceeded bool `json:"probe_never_succeeded"`
	// GrayFailure: DOWN on live-traffic evidence while its probe passed; it
	// needs trade-path evidence, or waits until GrayWaitUntil.
	GrayFailure   bool      `json:"gray_failure"`
	GrayWaitUntil time.Time `json:"gray_wait_until"`
	GrayFailures  int       `json:"gray_failures"`
	// WatchTradePath: it is or was in a gray failure and no order has
	// succeeded on it since: the trade-path check (Config.TradePathCheck, or
	// the one a transport offers) runs on it every probe round.
	WatchTradePath bool `json:"watch_trade_path"`
	// SubmissionFailed: the broker answered an order there with a server
	// error in its current failures: the check a transport offers (a
	// lookup) does not end them; Config.TradePathCheck, an order succeeding
	// or the gray wait does.
	SubmissionFailed bool `json:"submission_failed"`
	// Bounces: failovers within engine.Config.BounceWindow of a failback to
	// it; FailbackCooldown the cooldown they set for a failback to it.
	Bounces          int           `json:"bounces"`
	FailbackCooldown time.Duration `json:"failback_cooldown"`
	// VerificationExpired: verified once, longer ago than
	// engine.Config.VerificationMaxAge.
	VerificationExpired bool `json:"verification_expired"`
	// Jurisdiction as the engine sees it.
	EngineJurisdiction string `json:"engine_jurisdiction,omitempty"`
}

func evidenceOf(st engine.Status) EndpointEvidence {
	return EndpointEvidence{
		ProbeFailures: st.ProbeFailures, TrafficFailures: st.TrafficFailures,
		BrokenProbe: st.BrokenProbe, ProbeNeverSucceeded: st.ProbeNeverSucceeded,
		GrayFailure: st.GrayFailure, GrayWaitUntil: st.GrayWaitUntil, GrayFailures: st.GrayFailures,
		WatchTradePath: st.WatchTradePath, SubmissionFailed: st.SubmissionFailed,
		Bounces: st.Bounces, FailbackCooldown: st.FailbackCooldown,
		VerificationExpired: st.VerificationExpired, EngineJurisdiction: st.Jurisdiction,
	}
}
