package simbroker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// deadMan is the account's cancel-all-after timer (Kraken
// cancelAllOrdersAfter style): armed with a timeout, refreshed by arming
// again, disarmed with 0; when it lapses every open order of the account is
// cancelled.
type deadMan struct {
	timer   *time.Timer
	expires time.Time
	gen     uint64
	closed  bool
	running sync.WaitGroup // an armed timer, until it is stopped or has fired
}

// ArmDeadMan arms (or refreshes) the account's dead-man timer through the
// Go API: unless armed again within timeout, every open order is cancelled
// when it lapses. A timeout of 0 disarms it. It returns when the timer
// fires (zero when disarmed).
func (b *Broker) ArmDeadMan(timeout time.Duration) (time.Time, error) {
	return b.armDeadMan(timeout, "", "", "")
}

// DeadMan reports whether the dead-man timer is armed, and when it fires.
func (b *Broker) DeadMan() (armed bool, expires time.Time) {
	b.rest.mu.Lock()
	defer b.rest.mu.Unlock()
	return b.rest.dm.timer != nil, b.rest.dm.expires
}

func (b *Broker) armDeadMan(timeout time.Duration, region, svc, connID string) (time.Time, error) {
	if timeout < 0 {
		return time.Time{}, fmt.Errorf("%w: dead-man timeout %v is negative", ErrInvalidConfig, timeout)
	}
	// The order lock orders the arm against the timer's firing in the audit.
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	b.rest.mu.Lock()
	dm := &b.rest.dm
	if dm.closed {
		b.rest.mu.Unlock()
		return time.Time{}, ErrClosed
	}
	dm.stopLocked()
	dm.gen++
	now := time.Now()
	rec := Record{Time: now, Kind: KindDeadMan, Region: region, Service: svc, ConnID: connID, Outcome: OutcomeOK, Detail: "disarm"}
	if timeout > 0 {
		gen := dm.gen
		dm.expires = now.Add(timeout)
		dm.running.Add(1)
		dm.timer = time.AfterFunc(timeout, func() {
			defer dm.running.Done()
			b.fireDeadMan(gen)
		})
		rec.Detail = "arm timeout=" + timeout.String()
	}
	exp := dm.expires
	b.rest.mu.Unlock()
	b.audit.add(rec)
	return exp, nil
}

// stopLocked stops an armed timer that has not fired.
func (dm *deadMan) stopLocked() {
	if dm.timer != nil && dm.timer.Stop() {
		dm.running.Done()
	}
	dm.timer, dm.expires = nil, time.Time{}
}

// fireDeadMan cancels every open order, unless the timer of generation gen
// was refreshed or disarmed in the meantime.
func (b *Broker) fireDeadMan(gen uint64) {
	b.orderMu.Lock()
	defer b.orderMu.Unlock()
	b.rest.mu.Lock()
	dm := &b.rest.dm
	if dm.gen != gen || dm.closed {
		b.rest.mu.Unlock()
		return
	}
	dm.timer, dm.expires = nil, time.Time{}
	b.rest.mu.Unlock()
	now := time.Now()
	b.audit.add(Record{Time: now, Kind: KindDeadMan, Outcome: OutcomeOK, Detail: "fired"})
	cancelled := b.book.cancelWhere(func(*Order) bool { return true }, now)
	for _, o := range cancelled {
		b.audit.add(Record{Time: now, Kind: KindDeadManCancel, Region: o.Region, Service: o.Service,
			ClientOrderID: o.ClientOrderID, OrderID: o.OrderID, Outcome: OutcomeOK, Detail: "dead-man timer lapsed"})
	}
	b.log.Info("dead-man timer fired", "cancelled", len(cancelled))
}

// stopDeadMan stops the timer for good and waits for a firing under way.
func (b *Broker) stopDeadMan() {
	b.rest.mu.Lock()
	dm := &b.rest.dm
	dm.closed = true
	dm.stopLocked()
	b.rest.mu.Unlock()
	dm.running.Wait()
}

// DeadManSpan is an interval in which an armed dead-man timer protected the
// account.
type DeadManSpan struct {
	From time.Time `json:"from"`
	// Until is when the protection ended: the timer's firing (it cancelled
	// every open order then), its expiry when no firing is recorded, or a
	// disarm. Refreshes before expiry extend one span.
	Until time.Time `json:"until"`
	// Ended says how: "lapsed" (the timer fired, or expired with no fire
	// recorded yet), "disarmed", or "open" (armed at the end of the log).
	Ended string `json:"ended"`
	// ArmedVia lists the connections that armed or refreshed it.
	ArmedVia []string `json:"armed_via,omitempty"`
}

// DeadManSpans returns the intervals in which the dead-man timer was armed,
// from the KindDeadMan records, in order. A span still armed at end ends at
// its expiry: Ended "open" when that is after end, "lapsed" otherwise.
func (l AuditLog) DeadManSpans(end time.Time) []DeadManSpan {
	var out []DeadManSpan
	var cur *DeadManSpan
	var expires time.Time
	closeAt := func(t time.Time, how string) {
		if cur != nil {
			cur.Until, cur.Ended = t, how
			out = append(out, *cur)
			cur = nil
		}
	}
	for _, r := range l {
		if r.Kind != KindDeadMan {
			continue
		}
		if r.Detail == "fired" {
			// Protected until the firing itself: it cancelled what was open.
			closeAt(r.Time, "lapsed")
			continue
		}
		if cur != nil && !expires.IsZero() && r.Time.After(expires) {
			closeAt(expires, "lapsed")
		}
		switch {
		case strings.HasPrefix(r.Detail, "arm timeout="):
			d, err := time.ParseDuration(strings.TrimPrefix(r.Detail, "arm timeout="))
			if err != nil {
				continue
			}
			if cur == nil {
				cur = &DeadManSpan{From: r.Time}
			}
			if r.ConnID != "" {
				cur.ArmedVia = append(cur.ArmedVia, r.ConnID)
			}
			expires = r.Time.Add(d)
		case r.Detail == "disarm":
			closeAt(r.Time, "disarmed")
		}
	}
	if cur != nil {
		if end.After(expires) {
			closeAt(expires, "lapsed")
		} else {
			closeAt(expires, "open")
		}
	}
	return out
}

// deadManBody is the body of POST /v1/account/cancel-all-after.
type deadManBody struct {
	// Timeout in seconds; 0 disarms.
	Timeout *float64 `json:"timeout"`
}

// handleDeadMan serves POST /v1/account/cancel-all-after {"timeout":60}:
// arms or refreshes the account's dead-man timer (0 disarms) and answers
// {"armed":true,"expires":"..."}.
func (rg *Region) handleDeadMan(w http.ResponseWriter, r *http.Request) {
	var body deadManBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&body); err != nil || body.Timeout == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": `body must be {"timeout":<seconds, 0 disarms>}`, "code": "invalid_request"})
		return
	}
	if *body.Timeout < 0 || *body.Timeout > 86400 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "timeout must be 0..86400 seconds", "code": "invalid_request"})
		return
	}
	svc, id := rg.source(r)
	exp, err := rg.b.armDeadMan(time.Duration(*body.Timeout*float64(time.Second)), rg.name, string(svc), id)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error(), "code": "unavailable"})
		return
	}
	out := map[string]any{"armed": !exp.IsZero()}
	if !exp.IsZero() {
		out["expires"] = exp.UTC()
	}
	writeJSON(w, http.StatusOK, out)
}

// handleCancelAll serves DELETE /v1/orders: cancels every open order (a
// client's request, audited as KindCancel each) and answers {"orders":[...]}
// with the cancelled orders.
func (rg *Region) handleCancelAll(w http.ResponseWriter, r *http.Request) {
	svc, id := rg.source(r)
	var done []Order
	for _, o := range rg.b.OpenOrders() {
		c, err := rg.b.cancelByClient(rg, svc, id, o.ClientOrderID)
		if err == nil {
			done = append(done, c)
		}
	}
	if done == nil {
		done = []Order{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"orders": done})
}

// restingRoutes adds the resting-order endpoints to a region's REST mux.
func (rg *Region) restingRoutes(mux *http.ServeMux) {
	mux.Handle("POST /v1/account/cancel-all-after", rg.guard(http.HandlerFunc(rg.handleDeadMan)))
	mux.Handle("DELETE /v1/orders", rg.guard(http.HandlerFunc(rg.handleCancelAll)))
}
