// Package engine is brokerpath's decision engine: it decides, from counted health
// evidence, whether order flow should move off the active path to a broker and to
// which path, and refuses every switch that is not evidenced.
//
// # Start here
//
// Most applications never use the engine directly: pathdialer runs it. Use
// it to test a configuration's decisions, or to build a runtime of your own.
// Register endpoints, feed it evidence, ask it to evaluate, and perform what
// it decides:
//
//	cfg := engine.DefaultConfig()
//	cfg.FailureThreshold = 2
//	cfg.Clock = clk
//	cfg.Probe = func(ctx context.Context, ep engine.Endpoint) error { return failing[ep.Name] }
//	m, err := engine.New(cfg)
//	if err != nil {
//		panic(err)
//	}
//	for _, ep := range []engine.Endpoint{
//		{Name: "eu", Address: "https://eu.broker.example", Region: "eu-west-1", Priority: 0, Primary: true},
//		{Name: "us", Address: "https://us.broker.example", Region: "us-east-1", Priority: 10},
//	} {
//		if err := m.Register(ep); err != nil {
//			panic(err)
//		}
//	}
//	if err := m.Validate(); err != nil { // before the probe loop starts
//		panic(err)
//	}
//	m.Probe(ctx, "eu")
//	d, _ := m.EvaluateFailover(false)
//	// ... make eu unable to submit (stop its sessions, revoke its credential) ...
//	d, _ = m.EvaluateFailover(true)
//	// ... reconcile in-flight orders with the broker before releasing flow ...
//
// A switch is first answered FenceRequired; evaluate again with the fence
// confirmed and it is Switched. NoTargetAvailable means halt;
// NoAction means keep trading. The Examples (failover, failback, halt) run
// these steps on a fake clock (enginetest.FakeClock) and print each
// decision.
//
// # The engine and its caller
//
// The engine is pure. It opens no sockets, starts no goroutines and reads time only
// from an injected [Clock]. The caller supplies the health probe ([ProbeFunc]) or feeds
// results measured elsewhere ([Manager.Observe]), performs the switch it is told
// about, fences the old path, and reconciles in-flight orders. The runtime in package
// pathdialer does all of that around a Manager.
//
// # What it guarantees
//
//   - New endpoints start [Unknown]. Unknown is never a target.
//   - A probe error or a panic inside the probe is a failure: it is counted and kept
//     in [Status.LastProbeError], wrapped so errors.Is finds the cause. So is a probe
//     that outlives a deadline set on the caller's context (it wraps
//     context.DeadlineExceeded). Cancellation of the caller's own context is not a
//     failure: [Manager.Probe] returns it (context.Canceled) and counts nothing.
//   - An endpoint is [Down] only at Config.FailureThreshold consecutive failures; below
//     that it is [Degraded] and no failover is warranted. A successful probe slower
//     than Config.DegradedLatency is Degraded evidence too, and an active endpoint
//     that stays Degraded for Config.MaxDegradedDuration, on fresh evidence, warrants
//     failover; with no eligible target it is kept ([NoAction]): a slow path that
//     still answers is not a reason to halt.
//   - A target is eligible only when it is [Healthy] with a success younger than
//     Config.MaxHealthAge. Of the eligible endpoints the one with the lowest
//     Priority wins; ties go to the one registered first.
//   - [NoAction] (keep trading) and [NoTargetAvailable] (halt: the active endpoint is
//     Down and no endpoint is eligible) are different outcomes;
//     Decision.RequiresTradingHalt is true for exactly the second, and the active
//     endpoint is left unchanged.
//   - Unless Config.BrokerFencesAtLogon is set, a switch is first answered with
//     [FenceRequired] and nothing changes until the caller evaluates again with the
//     fence confirmed.
//   - Failback to the primary is gated three ways: Config.Cooldown since the last
//     switch ([CooldownActive]), the flap limiter ([FlapSuppressed], an escalation
//     for a human), and Config.FailbackSuccessThreshold consecutive successes of a
//     fresh, healthy primary ([PrimaryNotStable]). Failover is never gated by any of
//     them.
//   - Staleness of the active endpoint's health is reported in Decision.Notes and is
//     never acted on: a stalled monitor is not evidence that the endpoint died.
//   - Every interval is the difference of two readings of the Clock. The default
//     clock is time.Now, whose readings carry Go's monotonic clock, so a wall-clock
//     step (NTP) neither releases nor extends a gate.
//   - A Manager is safe for concurrent use. The probe runs outside the Manager's
//     lock, so a slow probe never blocks an evaluation.
//   - Probe evidence ([Manager.Probe], [Manager.Observe]) and live-traffic evidence
//     ([Manager.ObserveTraffic], [Manager.ObserveTradePath]) are counted apart: a
//     probe success never resets failed orders, an order success never cancels
//     failed probes. Either count at the threshold makes the endpoint Down, with
//     one exception: a probe failing while live traffic vouches for the endpoint
//     (traffic succeeded since the probe began failing, none failed since, the
//     last success younger than Config.MaxHealthAge) is a broken probe
//     (Status.BrokenProbe): the endpoint is Degraded, not Down, and the active one
//     keeps the flow. One failed order makes it Down (failover at once), and so
//     does live traffic reported hung ([Manager.TrafficHung]) with no success
//     since, when the probe has failed Config.FailureThreshold times; traffic
//     quiet for MaxHealthAge lets the probe count again. Orders failing while the
//     probe fails is an outage, never a broken probe. A probe that never
//     succeeded is reported as a broken probe too.
//   - An endpoint taken Down by live traffic is a gray failure when a probe
//     sent after its live traffic began to fail passes: the probe cannot see
//     what breaks the orders. Until a probe sent since the first of those
//     failures has answered, the cause is undetermined (Status.GrayUndetermined):
//     the endpoint is Down (failover is not delayed) and that probe decides — it
//     fails, and the failure is an ordinary outage that the probe's next success
//     ends (its trade path then watched, Status.WatchTradePath, as below: a gray
//     failure whose probe failed for a while looks the same); it passes, and it
//     is a gray failure. A probe in flight when the
//     orders began to fail (sent before the first failure: its record's Clock
//     reading minus its latency) decides nothing.
//   - A gray failure is not brought back by probe results — successes, nor
//     successes after failures: it needs trade-path evidence or a wait of
//     Config.GrayFailbackWait per gray failure (bounded) with no trade-path
//     failure within MaxHealthAge. Until live traffic succeeds on it again it is
//     Status.WatchTradePath: the caller keeps checking its trade path, also while
//     it is considered for failback, and a failure keeps it out again. A check
//     that only reads ([Manager.ObserveLookup]) cannot vouch for submission:
//     after the broker answered an order there with a server error
//     ([Manager.ObserveSubmissionFailed], Status.SubmissionFailed) its success
//     ends nothing until an order or a check of submission succeeds there,
//     except as the last resort (no other endpoint eligible, the active one
//     Down, no failure there for its failback cooldown). Each bounce
//     (a failover within Config.BounceWindow of a failback) multiplies the failback
//     cooldown by Config.BounceFactor (bounded), and Config.FlapBounces bounces trip
//     the flap limiter.
//   - A decision that finds no target (or no failback) only because candidates'
//     evidence is stale — not because anything failed — names them in
//     Decision.Stale, so the caller can probe them at once instead of halting.
//   - Admission: an endpoint found fronting another account ([Manager.Admit] with
//     [ErrIdentityMismatch]) is never a target and is refused by [Manager.Assign];
//     with Config.RequireAdmission it must be verified (within
//     Config.VerificationMaxAge, and within Config.SwitchVerificationAge for a
//     switch). With Config.TargetJurisdictions a failover target must lie in an
//     allowed jurisdiction (Endpoint.Jurisdiction), compared exactly as written.
//
// Every switch increments the token (Decision.Token, [Manager.Token]);
// results that started under an older token can be recognised and dropped by
// the caller.
package engine
