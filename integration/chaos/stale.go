package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// maxStaleWrites bounds the stale writes of one cell (the latest epochs).
const maxStaleWrites = 20

// staleWrites exercises, in a cell whose broker checks fencing tokens, the
// promise tokens make: after the run (the client closed, every fault
// cleared) it writes one order for each earlier token the broker booked
// under, through the region that token's orders came through, as a copy
// of an order held on the old path and delivered late would arrive. The
// broker has booked a higher token since (the path that replaced it), so
// each must be refused as stale: one booked is a violation (the switch did
// not advance the token the orders carry, or the broker let a stale token
// through), and a cell with no earlier token to write (no switch moved
// flow, nothing exercised) is one too, as is a token booked through two
// regions (a switch that did not advance it). It returns the writes sent
// and those refused as stale. Judged from the broker's audit alone.
func (r *runner) staleWrites(ctx context.Context, audit simbroker.AuditLog) (sent, refused int, violations []string) {
	if r.pol.Tokens != "checked" {
		return 0, 0, nil
	}
	region := map[uint64]string{} // token -> the region its first booking came through
	twice := map[uint64]bool{}
	var highest uint64
	for _, rec := range audit.Booked() {
		first, ok := region[rec.Token]
		if !ok {
			region[rec.Token] = rec.Region
		} else if first != rec.Region && !twice[rec.Token] {
			twice[rec.Token] = true
			violations = append(violations, fmt.Sprintf("token names one path: token %d booked through %s and through %s (%s): a switch did not advance the token", rec.Token, first, rec.Region, rec.ClientOrderID))
		}
		highest = max(highest, rec.Token)
	}
	var older []uint64
	for t := range region {
		if t < highest {
			older = append(older, t)
		}
	}
	sort.Slice(older, func(i, j int) bool { return older[i] < older[j] })
	if len(older) > maxStaleWrites {
		older = older[len(older)-maxStaleWrites:]
	}
	if len(older) == 0 {
		return 0, 0, append(violations, fmt.Sprintf("stale tokens refused: not exercised (every booking carried token %d: no switch moved flow under a new token)", highest))
	}
	hc := r.b.HTTPClient()
	defer hc.CloseIdleConnections()
	ids := map[string]uint64{}
	for _, t := range older {
		id := fmt.Sprintf("stale-%d", t)
		ids[id] = t
		if err := r.writeStale(ctx, hc, region[t], id, t); err != nil {
			violations = append(violations, fmt.Sprintf("stale write %s through %s: %v", id, region[t], err))
			continue
		}
		sent++
	}
	for _, rec := range r.b.Audit() {
		t, ok := ids[rec.ClientOrderID]
		if !ok || rec.Kind != simbroker.KindOrder {
			continue
		}
		switch rec.Outcome {
		case simbroker.OutcomeStaleToken:
			refused++
		case simbroker.OutcomeNew, simbroker.OutcomeCut:
			violations = append(violations, fmt.Sprintf("stale token booked: %s carried token %d through %s after the account had booked token %d (a switch that does not advance the token lets the old path's late copies through)", rec.ClientOrderID, t, rec.Region, highest))
		}
	}
	return sent, refused, violations
}

// writeStale sends one market order with token tok through region's REST
// address, directly (no Path).
func (r *runner) writeStale(ctx context.Context, hc *http.Client, region, id string, tok uint64) error {
	rg := r.b.Region(region)
	if rg == nil {
		return fmt.Errorf("no region %q", region)
	}
	body, _ := json.Marshal(map[string]string{"client_order_id": id, "symbol": "EURUSD", "side": "buy", "qty": "1", "type": "market"})
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rg.RESTURL()+"/v1/orders", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", r.b.APIKey())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(simbroker.TokenHeader, strconv.FormatUint(tok, 10))
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	return nil
}
