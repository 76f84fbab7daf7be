package pathdialer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// venueStandIn is a small venue over real HTTP holding resting orders, with
// the cancel-on-disconnect and dead-man rules of one venue profile:
//
//	POST /order?id=&via=          a resting order placed through an endpoint
//	POST /leave?via=&keep=1       the session on via ends; keep=1 is the
//	                              venue's graceful way to keep orders
//	POST /deadman?via=            arms the account's cancel-all-after timer
//	GET  /orders                  every order and its state
//
// A leave without keep (or where the profile documents no way to keep)
// cancels what the profile's cancel-on-disconnect scope says.
type venueStandIn struct {
	srv  *httptest.Server
	prof venue.Profile

	mu        sync.Mutex
	orders    map[string]*standInOrder
	armedVia  string   // endpoint the dead-man timer was last armed through
	leaves    []string // "eu keep=false armed-via=us", in order
	cancelled []string
}

type standInOrder struct {
	via   string
	state pathdialer.VenueOrderState
}

func newVenueStandIn(t *testing.T, prof venue.Profile) *venueStandIn {
	v := &venueStandIn{prof: prof, orders: map[string]*standInOrder{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /order", func(w http.ResponseWriter, r *http.Request) {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.orders[r.FormValue("id")] = &standInOrder{via: r.FormValue("via"), state: pathdialer.VenueOpen}
	})
	mux.HandleFunc("POST /leave", func(w http.ResponseWriter, r *http.Request) {
		v.leave(r.FormValue("via"), r.FormValue("keep") == "1")
	})
	mux.HandleFunc("POST /deadman", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := v.prof.DeadManTimer(); !ok {
			http.Error(w, "no dead-man timer at this venue", http.StatusNotFound)
			return
		}
		v.mu.Lock()
		v.armedVia = r.FormValue("via")
		v.mu.Unlock()
	})
	mux.HandleFunc("GET /orders", func(w http.ResponseWriter, r *http.Request) {
		v.mu.Lock()
		var out []pathdialer.VenueOrder
		for id, o := range v.orders {
			out = append(out, pathdialer.VenueOrder{OrderID: id, State: o.state})
		}
		v.mu.Unlock()
		_ = json.NewEncoder(w).Encode(out)
	})
	v.srv = httptest.NewServer(mux)
	t.Cleanup(v.srv.Close)
	return v
}

func (v *venueStandIn) leave(via string, keep bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.leaves = append(v.leaves, fmt.Sprintf("%s keep=%v armed-via=%s", via, keep, v.armedVia))
	cod := v.prof.CancelOnDisconnect
	// keep=1 where the venue keeps orders only by a choice made at logon
	// (KeepAtLogon) stands for sessions that logged on that way.
	if !cod.Known() || cod.Value.Scope == venue.CODNone || (keep && (cod.Value.KeepOrders != "" || cod.Value.KeepAtLogon != "")) {
		return
	}
	for id, o := range v.orders {
		if o.state != pathdialer.VenueOpen {
			continue
		}
		switch cod.Value.Scope {
		case venue.CODConnection, venue.CODSession:
			if o.via != via {
				continue
			}
		}
		o.state = pathdialer.VenueCancelled
		v.cancelled = append(v.cancelled, id)
	}
	slices.Sort(v.cancelled)
}

func (v *venueStandIn) post(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.srv.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := v.srv.Client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", path, resp.Status)
	}
	return nil
}

// fencer leaves the old path the way the fence mode says: gracefully (the
// venue's way to keep orders) in preserve mode, a plain drop in flatten mode.
func (v *venueStandIn) fencer(ctx context.Context, f pathdialer.Fence) error {
	keep := "0"
	if f.Mode == venue.Preserve {
		keep = "1"
	}
	return v.post(ctx, "/leave?via="+f.Endpoint.Name+"&keep="+keep)
}

func (v *venueStandIn) deadMan(ctx context.Context, a pathdialer.DeadManArm) error {
	return v.post(ctx, "/deadman?via="+a.Endpoint.Name)
}

func (v *venueStandIn) openOrders(ctx context.Context, q pathdialer.OpenOrderQuery) ([]pathdialer.VenueOrder, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.srv.URL+"/orders", nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.srv.Client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []pathdialer.VenueOrder
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// One test per class of shipped profile — cancel-on-disconnect of the
// connection (Deribit), of the session with a dead-man timer (Kraken spot),
// of the whole profile (Coinbase Exchange FIX) — in both fence modes: what the
// venue cancelled is exactly what the Path reported cancelled by the switch,
// preserve cancels nothing where the venue documents how, and the dead-man
// timer was armed on the new path before the old one was left.
func TestFenceModeEffectPerProfileClass(t *testing.T) {
	cases := []struct {
		prof          venue.Profile
		mode          pathdialer.FenceMode
		wantCancelled []string
		deadMan       bool
	}{
		{venue.Deribit(), pathdialer.FencePreserve, nil, false},
		{venue.Deribit(), pathdialer.FenceFlatten, []string{"eu-1", "eu-2"}, false},
		{venue.KrakenSpot(), pathdialer.FencePreserve, nil, true},
		{venue.KrakenSpot(), pathdialer.FenceFlatten, []string{"eu-1", "eu-2"}, true},
		{venue.CoinbaseExchangeFIX(), pathdialer.FencePreserve, nil, false},
		// Profile-wide: the order already placed through the new path goes too.
		{venue.CoinbaseExchangeFIX(), pathdialer.FenceFlatten, []string{"eu-1", "eu-2", "us-1"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.prof.Name+"/"+tc.mode.String(), func(t *testing.T) {
			t.Parallel()
			v := newVenueStandIn(t, tc.prof)
			led := &ledger{}
			h := newHarness(t, func(c *pathdialer.Config) {
				c.Venue = tc.prof
				c.FenceMode = tc.mode
				c.Fencer = v.fencer
				c.CODSettle = 20 * time.Millisecond
				c.OpenOrders = map[string]pathdialer.OpenOrderCheck{
					pathdialer.ServiceFIX: {Ours: led.ours, Venue: v.openOrders},
				}
				if tc.deadMan {
					c.DeadMan = v.deadMan
				}
			})
			defer h.close()
			ctx := context.Background()
			for _, o := range []struct{ id, via string }{{"eu-1", "eu"}, {"eu-2", "eu"}, {"us-1", "us"}} {
				if err := v.post(ctx, "/order?id="+o.id+"&via="+o.via); err != nil {
					t.Fatal(err)
				}
				led.add(o.id, o.via)
			}
			h.start()
			reportDown(h.p, "eu", 0)
			h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
			e := h.await(pathdialer.EventOpenOrderDiff, nil)
			if e.Err != nil {
				t.Fatalf("open-order reconcile failed: %v", e.Err)
			}
			var reported []string
			for _, d := range e.Diffs {
				if d.Cause != pathdialer.DiffCancelledBySwitch || d.Presumed {
					t.Fatalf("diff %+v: want only cancels the venue confirmed", d)
				}
				reported = append(reported, d.OrderID)
			}
			v.mu.Lock()
			cancelled, leaves := slices.Clone(v.cancelled), slices.Clone(v.leaves)
			v.mu.Unlock()
			if !slices.Equal(cancelled, tc.wantCancelled) {
				t.Fatalf("the venue cancelled %v, want %v (profile %s, %s)", cancelled, tc.wantCancelled, tc.prof.Name, tc.mode)
			}
			if !slices.Equal(reported, cancelled) {
				t.Fatalf("reported cancelled by the switch %v, the venue cancelled %v: a silent cancel", reported, cancelled)
			}
			if s := h.p.Snapshot(); s.RestingCancelled != uint64(len(cancelled)) {
				t.Fatalf("Snapshot().RestingCancelled = %d, want %d", s.RestingCancelled, len(cancelled))
			}
			if tc.deadMan && (len(leaves) == 0 || !strings.HasSuffix(leaves[0], "armed-via=us")) {
				t.Fatalf("leaves %v: the old path was left before the dead-man timer was armed on us", leaves)
			}
		})
	}
}
