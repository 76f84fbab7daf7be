package orderflow

import (
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// Attempt is one send of an order: the first placement or a re-send.
type Attempt struct {
	// At is when the attempt began, before the transport asked the Path for a
	// ticket: the ticket was granted at or after At.
	At time.Time
	// Resend: a re-send of an order reconciliation had found NOT_RECEIVED.
	Resend bool
	// Sent: the order left (or may have left) the process on this attempt.
	Sent bool
	// Endpoint is where the attempt was sent, when the transport says (FIX:
	// the endpoint the session was logged on through when the order left).
	Endpoint string
	// Granted is an instant by which the Path had granted the attempt its
	// ticket: when the transport returned from an attempt that left (or may
	// have left), or that was refused because its ticket's endpoint had been
	// fenced (only a granted ticket names an endpoint to dial). Zero when
	// the attempt is not known to have been granted (held past its deadline,
	// refused by a halt).
	Granted time.Time
}

// Verdict is one thing the library (reconciliation, a re-query, a late
// landing report) said about an order's fate.
type Verdict struct {
	At   time.Time
	Fate pathdialer.Fate
	// Final: the library called this fate final (a NOT_RECEIVED the user may
	// act on by re-sending). A provisional NOT_RECEIVED is not final.
	Final bool
	// Region is where the order was booked, when the verdict says so.
	Region string
	// Source: "reconcile", "in-place reconcile", "re-query", "late landing".
	Source string
}

// Booked reports whether the verdict says the broker holds the order.
func (v Verdict) Booked() bool {
	return v.Fate == pathdialer.FateFilled || v.Fate == pathdialer.FateResting || v.Fate == pathdialer.FateCanceled
}

// History is what a run leaves behind, and all the checker (CheckHistory)
// reads: the client's records of every order, the Path's events, the
// streams' and the FIX session's counters and, the truth, the broker's
// audit. A Client produces one with History; tests build them by hand to
// plant violations.
type History struct {
	// Start is the origin of the relative times in the Summary.
	Start time.Time
	// Endpoints name every endpoint with its region; the primary is marked.
	Endpoints []Endpoint
	// Orders are the client's records, in placement order.
	Orders []OrderRecord
	// Events are the Path's events, in order.
	Events []pathdialer.Event
	// Audit is the broker's audit log; nil when there is none (a real
	// broker): the checks that need it are reported as not checked.
	Audit simbroker.AuditLog
	// Streams are the price streams' counters; StreamsConfigured how many
	// streams were subscribed (0: no stream, not checked).
	Streams           []StreamStats
	StreamsConfigured int
	// FIX is the FIX session's sequence counters; nil without FIX.
	FIX *FIXSeqStats
	// Sequence is the FIX sequence model (SequenceContinue or
	// SequenceResetOnSwitch).
	Sequence string
	// ReadsOK and ReadsFail count account reads.
	ReadsOK, ReadsFail int
	// Resting are the open-order reconciles' reports (what the client was
	// told about its resting orders), OpenReconciles when each ran.
	Resting        []RestingReport
	OpenReconciles []time.Time
	// DeadMan is when the client needed an armed dead-man timer (zero: never).
	DeadMan DeadManWindow
	// BrokerFence: the Path's fence includes the broker's kill switch for
	// the region being left (its audit records each fence).
	BrokerFence bool
	// Failback is the engine's failback gating as configured (zero: not
	// known; the failback check is then not made).
	Failback FailbackRule
	// End is when the run was checked (zero: its last event); Judge, what
	// tells a loss from a host too starved to judge (zero: every unsettled
	// order is a loss).
	End   time.Time
	Judge JudgeTiming
}

// FailbackRule is the failback gating a Path was configured with.
type FailbackRule struct {
	// Cooldown is the least time from a switch to the next failback.
	Cooldown time.Duration
	// Successes is FailbackSuccessThreshold: answers in a row the primary
	// must give before flow goes back to it; ProbeInterval spaces the probes.
	Successes     int
	ProbeInterval time.Duration
	// ProbeJitter and ProbeTimeout bound when a probe sent after a fault
	// was armed answers: a fault armed less than ProbeInterval +
	// ProbeJitter + ProbeTimeout before a failback may not have failed a
	// probe by then.
	ProbeJitter, ProbeTimeout time.Duration
	// TradePathCheck: the Path has a trade-path check, which it runs beside
	// the probe every round on a primary whose orders met an outage, also
	// while it is considered for failback; each of its successes counts
	// towards Successes as the probe's does, so the answers may come two a
	// round.
	TradePathCheck bool
}

// Fault is one fault injected during a run, as the run's schedule did it:
// its region, when it was armed and when healed (zero: never), and whether
// it makes the region's probe fail (its probe door down, blackholed or
// flapping) and its orders fail (its REST door too).
type Fault struct {
	Region         string
	Kind           string
	At, Recovered  time.Time
	FailsProbe     bool
	FailsTradePath bool
}

// History returns the run so far as a History, with audit as the broker's
// truth (nil: none).
func (c *Client) History(audit simbroker.AuditLog) History {
	h := History{
		Start:             c.rec.Start(),
		Endpoints:         append([]Endpoint(nil), c.cfg.Endpoints...),
		Orders:            c.Orders(),
		Events:            c.rec.Events(),
		Audit:             audit,
		StreamsConfigured: len(c.cfg.Streams),
		Sequence:          c.cfg.Sequence,
	}
	if c.prices != nil {
		h.Streams = c.prices.Stats()
	}
	if c.app != nil {
		st := c.app.seqStats()
		h.FIX = &st
	}
	h.ReadsOK, h.ReadsFail = c.Reads()
	c.restingHistory(&h)
	h.BrokerFence = c.cfg.BrokerFence != nil && c.cfg.SessionPolicy != PolicyOnePerCred
	t := c.cfg.Timing
	h.End = time.Now()
	h.Judge = JudgeTiming{SettleBound: t.OrderTimeout + c.settleUnknown + t.ProbeInterval + t.ReconcileTimeout}
	h.Failback = FailbackRule{Cooldown: c.cfg.Timing.Cooldown, Successes: c.cfg.Timing.FailbackSuccessThreshold, ProbeInterval: c.cfg.Timing.ProbeInterval,
		ProbeJitter: c.cfg.Timing.ProbeJitter, ProbeTimeout: c.cfg.Timing.ProbeTimeout,
		TradePathCheck: c.cfg.TradePathCheck != ""}
	return h
}

// settlementFinal reports whether the library called a settlement final: a
// NOT_RECEIVED is final unless the settlement says it is provisional.
func settlementFinal(s pathdialer.Settlement) bool {
	return !s.Provisional
}

// pathAllowsResend asks the Path whether an order it judged may be re-sent,
// and why not.
func (c *Client) pathAllowsResend(id, source string) (bool, string) {
	if source == "in-place reconcile" {
		return true, "" // judged by the client (ReconcileUnknown), not the Path
	}
	r, err := c.path.MayResend(id)
	if err != nil {
		return false, err.Error()
	}
	return r.Allowed, r.Reason
}

// regionOfEndpoint returns the region of an endpoint name ("" if unknown).
func (c *Client) regionOfEndpoint(ep string) string {
	for _, e := range c.cfg.Endpoints {
		if e.Name == ep {
			return e.Region
		}
	}
	return ""
}
