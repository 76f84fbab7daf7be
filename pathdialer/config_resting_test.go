package pathdialer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// Every resting-order field is validated as written, and the error names it.
func TestConfigRestingFieldsValidated(t *testing.T) {
	ours := func(context.Context, string) ([]pathdialer.OpenOrder, error) { return nil, nil }
	theirs := func(context.Context, pathdialer.OpenOrderQuery) ([]pathdialer.VenueOrder, error) { return nil, nil }
	arm := func(context.Context, pathdialer.DeadManArm) error { return nil }
	cases := []struct {
		name string
		edit func(*pathdialer.Config)
		want string
	}{
		{"farewell timeout", func(c *pathdialer.Config) { c.FarewellTimeout = 0 }, "FarewellTimeout is 0s"},
		{"dead-man timeout", func(c *pathdialer.Config) { c.DeadMan, c.DeadManTimeout = arm, -1 }, "DeadManTimeout is -1ns"},
		{"dead-man with broker fences", func(c *pathdialer.Config) { c.DeadMan, c.Engine.BrokerFencesAtLogon = arm, true }, "DeadMan needs a fence step"},
		{"COD settle", func(c *pathdialer.Config) { c.CODSettle = -1 }, "CODSettle is -1ns"},
		{"blank service", func(c *pathdialer.Config) {
			c.OpenOrders = map[string]pathdialer.OpenOrderCheck{" ": {Ours: ours, Venue: theirs}}
		}, "OpenOrders has a blank service name"},
		{"no Ours", func(c *pathdialer.Config) {
			c.OpenOrders = map[string]pathdialer.OpenOrderCheck{"rest": {Venue: theirs}}
		}, `OpenOrders["rest"].Ours is nil`},
		{"no Venue", func(c *pathdialer.Config) {
			c.OpenOrders = map[string]pathdialer.OpenOrderCheck{"rest": {Ours: ours}}
		}, `OpenOrders["rest"].Venue is nil`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Probe = newProbes().probe
			cfg.Fencer = pathdialer.LocalFenceOnly
			cfg.Reconcile = pathdialer.NoReconcile
			tc.edit(&cfg)
			_, err := pathdialer.New(cfg)
			if !errors.Is(err, pathdialer.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want ErrInvalidConfig naming %q", err, tc.want)
			}
		})
	}
	// The defaults are valid, and a complete setting is accepted.
	cfg := baseConfig()
	cfg.Probe = newProbes().probe
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	cfg.DeadMan = arm
	cfg.OpenOrders = map[string]pathdialer.OpenOrderCheck{"rest": {Ours: ours, Venue: theirs}}
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatalf("New with every resting-order field set: %v", err)
	}
	_ = p.Close()
}
