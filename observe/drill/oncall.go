package drill

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// OnCall are the figures the report leads with: what the person on call asks
// first about the run's first failover.
type OnCall struct {
	// Endpoint is the endpoint that went down; To the one flow moved to.
	Endpoint, To string
	// Detect: from the fault (or, without one, the first failed probe of
	// Endpoint) until Endpoint was declared DOWN.
	Detect time.Duration
	// Switch: from DOWN until orders went to To.
	Switch time.Duration
	// Held: how long orders were held around that switch, as the Path
	// measured it at release; HeldBecause every cause it gave, in order.
	Held        time.Duration
	HeldBecause []string
	// DownAt, SwitchAt and ReleaseAt are relative to the run's start
	// (NotMeasured: it did not happen).
	DownAt, SwitchAt, ReleaseAt time.Duration
	// Orders per transport, over the whole run.
	Orders []TransportOrders
	// Stream is what the market data consumer lost (nil: no stream).
	Stream *StreamSeen
}

// TransportOrders counts one transport's orders by outcome.
type TransportOrders struct {
	Transport string
	// Placed by the driver; Answered by the broker (accepted or rejected).
	Placed, Answered int
	// Refused: never left the process (trading halted, held past the
	// caller's deadline, ticket expired).
	Refused int
	// Unknown: the caller was told the outcome was unknown.
	Unknown int
	// Checked: orders handed to reconciliation (unknown, or in flight at a
	// switch), each once however often it was asked about; Settled what the
	// broker said about them, by each order's last fate.
	Checked int
	Settled map[string]int
}

func onCall(in Input) OnCall {
	oc := OnCall{Detect: NotMeasured, Switch: NotMeasured, Held: NotMeasured,
		DownAt: NotMeasured, SwitchAt: NotMeasured, ReleaseAt: NotMeasured, Stream: in.Stream}
	var firstFail, down time.Time
	for _, e := range in.Events {
		if !in.FaultAt.IsZero() && e.Time.Before(in.FaultAt) {
			continue
		}
		if in.Primary != "" && e.Endpoint != in.Primary && e.Kind != pathdialer.EventSwitch {
			continue
		}
		if e.Kind == pathdialer.EventProbe && (e.Err != nil || e.Error != "") && firstFail.IsZero() {
			firstFail = e.Time
		}
		if e.Kind == pathdialer.EventStateChange && e.State == engine.Down {
			down, oc.Endpoint = e.Time, e.Endpoint
			break
		}
	}
	if !down.IsZero() {
		oc.DownAt = in.rel(down)
		from := in.FaultAt
		if from.IsZero() {
			from = firstFail
		}
		if !from.IsZero() {
			oc.Detect = down.Sub(from)
		}
		switched := false
		var fenceStart time.Time
		var fenceTook time.Duration
		// Each service reconciles on its own (Config.ReconcileByService; ""
		// for one reconcile of all): its first start, the distinct orders
		// it was asked about over its attempts, and until its success.
		type svcCheck struct {
			start  time.Time
			orders map[string]bool
			took   time.Duration
		}
		checks := map[string]*svcCheck{}
		recFailures, recFailed := 0, []string{}
		for _, e := range in.Events {
			if e.Time.Before(down) {
				continue
			}
			switch e.Kind {
			case pathdialer.EventFenceStart:
				if fenceStart.IsZero() {
					fenceStart = e.Time
				}
			case pathdialer.EventFenceSuccess:
				if !fenceStart.IsZero() && fenceTook == 0 {
					fenceTook = max(e.Time.Sub(fenceStart), time.Nanosecond)
				}
			case pathdialer.EventReconcileStart:
				if switched {
					c := checks[e.Service]
					if c == nil {
						c = &svcCheck{start: e.Time, orders: map[string]bool{}}
						checks[e.Service] = c
					}
					for _, t := range e.Tickets {
						c.orders[t.Service+"\x00"+t.OrderID] = true
					}
				}
			case pathdialer.EventReconcileFailure:
				if switched {
					recFailures++
				}
				if msg := redact(e.Error); switched && msg != "" && !slices.Contains(recFailed, msg) {
					recFailed = append(recFailed, msg)
				}
			case pathdialer.EventReconcileSuccess:
				if c := checks[e.Service]; c != nil && c.took == 0 {
					c.took = max(e.Time.Sub(c.start), time.Nanosecond)
				}
			}
			switch e.Kind {
			case pathdialer.EventHold, pathdialer.EventHalt:
				if e.Cause != "" && !slices.Contains(oc.HeldBecause, redact(e.Cause)) {
					oc.HeldBecause = append(oc.HeldBecause, redact(e.Cause))
				}
			case pathdialer.EventSwitch:
				if !switched && e.From == oc.Endpoint {
					switched, oc.To = true, e.To
					oc.SwitchAt, oc.Switch = in.rel(e.Time), e.Time.Sub(down)
				}
			case pathdialer.EventRelease:
				// A service released on its own leaves the others held: the
				// hold ends with the gate's release.
				if switched && oc.ReleaseAt == NotMeasured && e.Service == "" {
					oc.ReleaseAt, oc.Held = in.rel(e.Time), e.Duration
				}
			}
			if oc.ReleaseAt != NotMeasured {
				break
			}
		}
		// Where the held time went.
		if fenceTook > 0 {
			oc.HeldBecause = append(oc.HeldBecause, "cutting "+oc.Endpoint+" off took "+ms(fenceTook))
		}
		// The check that held flow longest: the slowest service's, with
		// that service's own orders.
		var slow *svcCheck
		slowSvc := ""
		for _, svc := range slices.Sorted(maps.Keys(checks)) {
			if c := checks[svc]; c.took > 0 && (slow == nil || c.took > slow.took) {
				slow, slowSvc = c, svc
			}
		}
		if slow != nil {
			what := "order(s)"
			if slowSvc != "" {
				what = slowSvc + " order(s)"
			}
			why := fmt.Sprintf("checking %d %s with the broker on %s took %s", len(slow.orders), what, orDash(oc.To), ms(slow.took))
			if recFailures > 0 {
				why += fmt.Sprintf(" (%d failed attempt(s): %s)", recFailures, strings.Join(recFailed, "; "))
			}
			oc.HeldBecause = append(oc.HeldBecause, why)
		}
	}

	byT := map[string]*TransportOrders{}
	row := func(t string) *TransportOrders {
		if byT[t] == nil {
			byT[t] = &TransportOrders{Transport: t, Settled: map[string]int{}}
		}
		return byT[t]
	}
	for _, o := range in.Orders {
		r := row(o.Transport)
		r.Placed++
		switch {
		case o.NotSent && !o.Acked:
			r.Refused++
		case o.Acked:
			r.Answered++
		}
		if o.Unknown {
			r.Unknown++
		}
	}
	// An order asked about again (a later attempt, a provisional verdict
	// settled later) is one order checked, counted under its last fate.
	type key struct{ svc, id string }
	fates := map[key]string{}
	var order []key
	for _, e := range in.Events {
		switch e.Kind {
		case pathdialer.EventReconcileSuccess:
			for _, s := range e.Settlements {
				k := key{s.Service, s.OrderID}
				if _, seen := fates[k]; !seen {
					order = append(order, k)
				}
				fates[k] = strings.ReplaceAll(strings.ToLower(s.Fate.String()), "_", " ")
			}
		}
	}
	for _, k := range order {
		r := row(k.svc)
		r.Checked++
		r.Settled[fates[k]]++
	}
	for _, r := range byT {
		oc.Orders = append(oc.Orders, *r)
	}
	sort.Slice(oc.Orders, func(i, j int) bool { return oc.Orders[i].Transport < oc.Orders[j].Transport })
	return oc
}
