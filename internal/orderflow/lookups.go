package orderflow

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
	"github.com/brokerpath/brokerpath/venue"
)

// lookups paces the client's order lookups and listings within the venue's
// lookup budget (Config.Venue), shared by every reconcile: the budget is the
// account's, not one reconcile's. A venue whose budget is not stated is not
// paced (a 429 is backed off as told).
type lookups struct {
	every time.Duration // 0: not paced
	// listing: the venue has no lookup by client order ID, only order
	// listings (the REST reconcile preset of rest.VenueReconcileOptions
	// reads listings): one listing settles every order of a reconcile.
	listing bool

	mu   sync.Mutex
	next time.Time
}

func newLookups(p venue.Profile) *lookups {
	l := &lookups{}
	if p.LookupBudget.Reliable() {
		l.every = p.LookupInterval()
	}
	if p.Name != "" {
		if o, err := rest.VenueReconcileOptions(p.Name, "https://venue.invalid", nil); err == nil && len(o.ListURLs) > 0 {
			l.listing = true
		}
	}
	return l
}

// wait takes the next slot of the budget: it returns at once when the last
// request was at least the spacing ago, else when the spacing has passed
// (or ctx is done).
func (l *lookups) wait(ctx context.Context) error {
	if l == nil || l.every <= 0 {
		return ctx.Err()
	}
	l.mu.Lock()
	now := time.Now()
	at := l.next
	if at.Before(now) {
		at = now
	}
	l.next = at.Add(l.every)
	l.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxListing bounds the body of one order listing.
const maxListing = 64 << 20

// listBook settles the tickets of service from one listing of the account's
// orders (GET /v1/orders?status=all, every order the venue still shows): a
// listed order settles by its status, an unlisted one is NOT_RECEIVED (as a
// lookup's 404 would be). The simulated broker lists without pages; a venue
// that pages its listing must read every page first (rest.ReconcileOptions'
// ListLimit makes an order missing from a full page undetermined).
func (c *Client) listBook(ctx context.Context, r pathdialer.Reconciliation, service string) ([]pathdialer.Settlement, error) {
	var list struct {
		Orders []restOrder `json:"orders"`
	}
	for {
		if err := c.lk.wait(ctx); err != nil {
			return nil, fmt.Errorf("orderflow: order listing: waiting for the venue's lookup budget: %w", err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/v1/orders?status=all", nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set(c.cfg.APIKeyHeader, c.cfg.APIKey)
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, fmt.Errorf("orderflow: order listing: %w", rest.RedactError(err))
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
			if err := backOff(ctx, resp.Header.Get("Retry-After")); err != nil {
				return nil, fmt.Errorf("orderflow: order listing: HTTP 429, backing off: %w", err)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
			return nil, fmt.Errorf("orderflow: order listing: HTTP %d", resp.StatusCode)
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, maxListing)).Decode(&list)
		_ = resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("orderflow: order listing: %w", err)
		}
		break
	}
	byID := make(map[string]restOrder, len(list.Orders))
	for _, o := range list.Orders {
		byID[o.ClientOrderID] = o
	}
	var out []pathdialer.Settlement
	for _, t := range r.Tickets {
		if t.Service != service {
			continue
		}
		o, ok := byID[t.OrderID]
		if !ok {
			out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: service, Fate: pathdialer.FateNotReceived, Detail: "not in the order listing"})
			continue
		}
		fate := fateOfStatus(o.Status)
		if fate == pathdialer.FateUndetermined {
			return out, fmt.Errorf("orderflow: order listing: %s has unknown status %q", t.OrderID, o.Status)
		}
		out = append(out, pathdialer.Settlement{OrderID: t.OrderID, Service: service, Fate: fate, Detail: "booked through " + o.Region})
	}
	return out, nil
}

// fateOfStatus maps the broker's order status to a fate (UNDETERMINED for
// a status it does not know).
func fateOfStatus(status string) pathdialer.Fate {
	switch status {
	case "filled":
		return pathdialer.FateFilled
	case "new", "partially_filled":
		return pathdialer.FateResting
	case "canceled", "cancelled", "expired":
		return pathdialer.FateCanceled
	case "rejected":
		return pathdialer.FateRejected
	}
	return pathdialer.FateUndetermined
}
