package orderflow

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// pathResting hands resting orders to the Path (Config.PathResting): the
// fence mode, the dead-man timer armed through the endpoint a switch goes
// to before the old path is fenced, and one open-order check per transport
// after every switch. Its reports become the client's RestingReports.
func (c *Client) pathResting(pc *pathdialer.Config, tlsCfg *tls.Config, hdr http.Header) {
	pc.FenceMode = c.cfg.FenceMode
	pc.CODSettle = c.cfg.CODSettle
	// Arms and open-order reads go straight to the endpoint (as probes
	// do): an arm runs while the switch holds, the active endpoint being the
	// one left; the reads stay out of the REST transport's circuit breaker,
	// which the switch's own reconcile reads share.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg,
		DialContext: (&net.Dialer{Timeout: time.Second}).DialContext, DisableKeepAlives: true}}
	if c.cfg.DeadManTimeout > 0 {
		pc.DeadMan = func(ctx context.Context, a pathdialer.DeadManArm) error {
			return c.armDeadManAt(ctx, hc, hdr, a.Endpoint)
		}
		pc.DeadManTimeout = time.Second
	}
	pc.OpenOrders = map[string]pathdialer.OpenOrderCheck{}
	for _, svc := range []string{REST, FIX} {
		if svc == FIX && c.cfg.FIXSenderCompID == "" {
			continue
		}
		pc.OpenOrders[svc] = pathdialer.OpenOrderCheck{Ours: c.openOrdersOf, Venue: func(ctx context.Context, q pathdialer.OpenOrderQuery) ([]pathdialer.VenueOrder, error) {
			return c.venueOpenOrders(ctx, q, hc, hdr)
		}}
	}
	pc.OnEvent = chainEvent(pc.OnEvent, c.onRestingEvent)
}

func chainEvent(a, b func(pathdialer.Event)) func(pathdialer.Event) {
	return func(e pathdialer.Event) {
		if a != nil {
			a(e)
		}
		b(e)
	}
}

// armDeadManAt arms the broker's dead-man timer through ep (the Path's
// DeadMan hook): the refresher keeps it armed through the active path after.
func (c *Client) armDeadManAt(ctx context.Context, hc *http.Client, hdr http.Header, ep pathdialer.Endpoint) error {
	base, ok := ep.Services[REST]
	if !ok {
		return fmt.Errorf("orderflow: endpoint %q has no REST address for the dead-man timer", ep.Name)
	}
	if err := postDeadMan(ctx, hc, hdr, ep.Name, base, c.cfg.DeadManTimeout); err != nil {
		return err
	}
	c.rec.Note(Info, "client", "dead-man timer armed through %s before the old path is fenced", ep.Name)
	return nil
}

// postDeadMan arms the broker's dead-man timer with timeout through the
// REST base URL of endpoint name, straight to it (hc does not go through
// the Path).
func postDeadMan(ctx context.Context, hc *http.Client, hdr http.Header, name, base string, timeout time.Duration) error {
	body := fmt.Sprintf(`{"timeout":%g}`, timeout.Seconds())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/v1/account/cancel-all-after", strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("orderflow: dead-man arm on %q: bad URL", name)
	}
	req.Header = hdr.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("orderflow: dead-man arm on %q: %w", name, rest.RedactError(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("orderflow: dead-man arm on %q: HTTP %d", name, resp.StatusCode)
	}
	return nil
}

// openOrdersOf is the client's record of its resting orders of one
// transport: limit orders the broker acknowledged (or a reconcile found
// resting), not yet reported closed, each with the endpoint it was placed
// through.
func (c *Client) openOrdersOf(_ context.Context, service string) ([]pathdialer.OpenOrder, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rst.mu.Lock()
	defer c.rst.mu.Unlock()
	var out []pathdialer.OpenOrder
	for _, id := range c.ids {
		r := c.orders[id]
		if r.Transport != service || r.Spec.Limit == "" || r.Rejected || c.rst.closed[id] {
			continue
		}
		if r.Settled && r.Fate != pathdialer.FateResting && !(r.Fate == pathdialer.FateNotReceived && r.Acked) {
			continue // filled, cancelled or never booked, as a reconcile said (a NOT_RECEIVED order accepted since, re-sent, is booked)
		}
		if !r.Acked && !(r.Settled && r.Fate == pathdialer.FateResting) {
			continue
		}
		out = append(out, pathdialer.OpenOrder{OrderID: id, Symbol: r.Spec.Symbol, Endpoint: r.AckEndpoint})
	}
	return out, nil
}

// venueOpenOrders reads the broker's open orders through q.Endpoint (GET
// /v1/orders?status=open) and looks up each of q.Ours missing from it, so
// every difference carries the broker's word: filled, cancelled, unknown.
func (c *Client) venueOpenOrders(ctx context.Context, q pathdialer.OpenOrderQuery, hc *http.Client, hdr http.Header) ([]pathdialer.VenueOrder, error) {
	base, ok := q.Endpoint.Services[REST]
	if !ok {
		return nil, fmt.Errorf("orderflow: endpoint %q has no REST address for its open orders", q.Endpoint.Name)
	}
	getJSON := func(ctx context.Context, path string, v any) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+path, nil)
		if err != nil {
			return 0, fmt.Errorf("orderflow: open orders of %q: bad URL", q.Endpoint.Name)
		}
		req.Header = hdr.Clone()
		resp, err := hc.Do(req)
		if err != nil {
			return 0, rest.RedactError(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode, nil
		}
		return resp.StatusCode, json.NewDecoder(resp.Body).Decode(v)
	}
	var list struct {
		Orders []restOrder `json:"orders"`
	}
	if code, err := getJSON(ctx, "/v1/orders?status=open", &list); err != nil || code != http.StatusOK {
		if err == nil {
			err = fmt.Errorf("orderflow: open orders: HTTP %d", code)
		}
		return nil, err
	}
	var out []pathdialer.VenueOrder
	open := map[string]bool{}
	c.mu.Lock()
	for _, o := range list.Orders {
		open[o.ClientOrderID] = true
		if r, known := c.orders[o.ClientOrderID]; known && r.Transport != q.Service {
			continue // the other transport's check covers it
		}
		out = append(out, pathdialer.VenueOrder{OrderID: o.ClientOrderID, State: pathdialer.VenueOpen})
	}
	c.mu.Unlock()
	for _, o := range q.Ours {
		if open[o.OrderID] {
			continue
		}
		var ro restOrder
		code, err := getJSON(ctx, "/v1/orders/"+url.PathEscape(o.OrderID), &ro)
		switch {
		case err != nil:
			return nil, err
		case code == http.StatusNotFound:
			out = append(out, pathdialer.VenueOrder{OrderID: o.OrderID, State: pathdialer.VenueNotFound})
		case code != http.StatusOK:
			return nil, fmt.Errorf("orderflow: order %s: HTTP %d", o.OrderID, code)
		case ro.Status == simbroker.StatusCanceled:
			out = append(out, pathdialer.VenueOrder{OrderID: o.OrderID, State: pathdialer.VenueCancelled})
		case ro.Status == simbroker.StatusFilled:
			out = append(out, pathdialer.VenueOrder{OrderID: o.OrderID, State: pathdialer.VenueFilled})
		default:
			out = append(out, pathdialer.VenueOrder{OrderID: o.OrderID, State: pathdialer.VenueOpen}) // open again by now
		}
	}
	return out, nil
}

// onRestingEvent takes the Path's open-order reconciles as the client's
// resting-order reports: each difference (cancelled by the switch, filled,
// unknown to the venue) is one report, and a reconcile that ran is one
// entry of OpenReconciles.
func (c *Client) onRestingEvent(e pathdialer.Event) {
	if e.Kind != pathdialer.EventOpenOrderDiff || e.Err != nil {
		return
	}
	var out []RestingReport
	for _, d := range e.Diffs {
		var cause string
		switch d.Cause {
		case pathdialer.DiffCancelledBySwitch:
			cause = RestingCancelled
		case pathdialer.DiffFilled:
			cause = RestingFilled
		case pathdialer.DiffUnknownToVenue:
			cause = RestingUnknown
		default:
			continue
		}
		out = append(out, RestingReport{At: e.Time, Order: d.OrderID, Cause: cause, After: e.To})
		c.rec.NoteOrder(Info, "client", d.OrderID, "resting order %s: no longer open, %s (the Path's open-order reconcile on %s)", d.OrderID, cause, e.To)
	}
	c.rst.mu.Lock()
	if c.rst.closed == nil {
		c.rst.closed = map[string]bool{}
	}
	for _, r := range out {
		c.rst.closed[r.Order] = true
	}
	c.rst.reports = append(c.rst.reports, out...)
	c.rst.reconciles = append(c.rst.reconciles, e.Time)
	c.rst.mu.Unlock()
}

// kickOpenReconcileAfter asks for the client's own open-order reconcile
// after a release: always without Config.PathResting; with it, only after a
// release that ends a halt or hold with no switch (the same generation as
// the last release: no fence, so the Path owes no open-order reconcile,
// while an outage of every region may have dropped the session or let the
// dead-man timer lapse). After a switch the Path reconciles.
func (c *Client) kickOpenReconcileAfter(e pathdialer.Event) {
	if c.cfg.PathResting {
		if e.Service != "" {
			return // one service released; the whole gate's release follows
		}
		c.rst.mu.Lock()
		same := c.rst.released && c.rst.lastGen == e.Token
		c.rst.lastGen, c.rst.released = e.Token, true
		c.rst.mu.Unlock()
		if !same {
			return
		}
		c.rec.Note(Info, "client", "released on %s with no switch (generation %d): the client reconciles its open orders (the Path does after switches)", e.Endpoint, e.Token)
	}
	c.kickOpenReconcile(e.Endpoint)
}
