package pathdialer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// The promise: flow is released on an endpoint only after the switch that
// brought it there re-proved its identity, also when that endpoint is the one
// flow was last released on. A switch away that never released (abandoned:
// here the backup fronted another account) and a switch back again is a
// switch: the endpoint left may have changed meanwhile (a DNS change, a
// gateway re-pointed), so its old release proves nothing.
//
// A coordinator assigns eu (flow released there), then us, which fronts
// another account (the Assign ends in the halt, nothing released on us);
// meanwhile eu begins answering for another account too, and the coordinator
// assigns eu back. The return re-proves eu: the Assign ends in the halt
// naming the mismatch, and no order is granted on eu after the flip. As a
// control, when eu still fronts the account the return is released.
func TestReturnToLastReleasedEndpointReprovesIdentity(t *testing.T) {
	for _, flip := range []bool{true, false} {
		name := "eu-changed"
		if !flip {
			name = "eu-unchanged"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ids := &identities{acc: map[string]string{"eu": "ACC-1", "us": "ACC-1"}}
				h := newHarness(t, func(c *pathdialer.Config) {
					c.ExternalDecisions = true
					c.Identity = ids.check
					c.ExpectedIdentity = pathdialer.Identity{Account: "ACC-1"}
					c.IdentityInterval = time.Hour // no periodic check: only the switches' re-checks
				})
				defer h.close()
				h.start()
				ctx := context.Background()
				if err := h.p.Assign(ctx, "eu", 1); err != nil {
					t.Fatalf("premise: first Assign to eu: %v", err)
				}
				tk, err := h.p.Acquire(ctx, pathdialer.ServiceREST, "o-before")
				if err != nil || tk.Endpoint != "eu" {
					t.Fatalf("premise: no flow on eu after its Assign: %v", err)
				}
				tk.Done()

				// The switch away: us fronts another account, nothing is released there.
				ids.set("us", "SOMEONE-ELSE")
				if err := h.p.Assign(ctx, "us", 2); !errors.Is(err, pathdialer.ErrTradingHalted) {
					t.Fatalf("premise: Assign to us (another account) released or failed otherwise: %v", err)
				}
				<-time.After(time.Second)

				if flip {
					ids.set("eu", "ANOTHER-ACCOUNT")
				}
				err = h.p.Assign(ctx, "eu", 3)
				actx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				tk, aerr := h.p.Acquire(actx, pathdialer.ServiceREST, "o-after-return")
				cancel()
				if !flip {
					if err != nil || aerr != nil || tk.Endpoint != "eu" {
						t.Fatalf("the return to eu, still fronting the account, was not released: Assign %v, Acquire %v", err, aerr)
					}
					tk.Done()
					return
				}
				if aerr == nil {
					t.Fatalf("order granted on %q (token %d) after the return to eu, which now fronts another account, without a re-check", tk.Endpoint, tk.Token)
				}
				if !errors.Is(err, pathdialer.ErrTradingHalted) || !strings.Contains(err.Error(), "ANOTHER-ACCOUNT") {
					t.Fatalf("Assign back to eu (now another account): %v; want the halt naming the mismatch", err)
				}
				if !errors.Is(aerr, pathdialer.ErrTradingHalted) {
					t.Fatalf("Acquire after the refused return: %v; want ErrTradingHalted", aerr)
				}
			})
		})
	}
}
