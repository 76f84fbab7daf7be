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

// degradedOnly is the configuration "fail over to a degraded mode (read-only)
// rather than across borders": the primary in the EU, the only backup in the
// US, orders allowed in the EU only.
func degradedOnly(degradedReads bool) func(*pathdialer.Config) {
	return func(c *pathdialer.Config) {
		c.Endpoints[0].Jurisdiction = "EU"
		c.Endpoints[1].Jurisdiction = "US"
		c.Engine.TargetJurisdictions = []string{"EU"}
		c.DegradedReads = degradedReads
	}
}

// With DegradedReads, a rule no backup satisfies is meaningful (the backup
// carries reads while orders halt) and New accepts it; without, New refuses
// it and says that DegradedReads would make it meaningful.
func TestDegradedOnlyBackupConfig(t *testing.T) {
	for _, tc := range []struct {
		degraded bool
		want     []string // "" = accepted
	}{
		{degraded: true},
		{degraded: false, want: []string{"no backup lies in the allowed jurisdictions [EU]", "DegradedReads"}},
	} {
		cfg := baseConfig()
		cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
		cfg.Fencer = pathdialer.LocalFenceOnly
		cfg.Reconcile = pathdialer.NoReconcile
		degradedOnly(tc.degraded)(&cfg)
		p, err := pathdialer.New(cfg)
		if tc.want == nil {
			if err != nil {
				t.Fatalf("DegradedReads %v: New: %v", tc.degraded, err)
			}
			_ = p.Close()
			continue
		}
		if !errors.Is(err, pathdialer.ErrInvalidConfig) {
			t.Fatalf("DegradedReads %v: err = %v, want ErrInvalidConfig", tc.degraded, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("DegradedReads %v: err = %v, want one naming %q", tc.degraded, err, w)
			}
		}
	}
}

// The EU outage with an EU-only rule and a US backup: orders halt (not one
// crosses the border, nothing switches), reads go to the US (degraded mode),
// and when the EU answers again orders resume there and reads follow.
func TestDegradedOnlyBackupOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, degradedOnly(true))
		defer h.close()
		h.start()
		if tk := mustAcquire(t, h.p, "o-before"); tk.Endpoint != "eu" {
			t.Fatalf("ticket before the outage on %q", tk.Endpoint)
		} else {
			tk.Done()
		}
		acq := startAcquirer(h.p)
		h.probes.set("eu", probeBlackhole)
		deg := h.await(pathdialer.EventDegraded, nil)
		if deg.Endpoint != "us" {
			t.Fatalf("degraded event %v", deg)
		}
		// Reads go to the US: the read endpoint, and a read-only dial there.
		re, _ := h.p.ReadEndpoint()
		if re.Name != "us" {
			t.Fatalf("reads go to %q in degraded mode", re.Name)
		}
		before := h.net.count("us")
		c, err := h.p.DialReadOnly(context.Background(), re.Name, "tcp", "api-us.broker.example:443")
		if err != nil {
			t.Fatalf("read dial in degraded mode: %v", err)
		}
		_ = c.Close()
		if h.net.count("us") != before+1 {
			t.Fatal("the read dial did not reach the US endpoint")
		}
		// Orders halt, loudly, naming the rule.
		_, err = h.p.Acquire(context.Background(), pathdialer.ServiceREST, "o-during")
		if !errors.Is(err, pathdialer.ErrTradingHalted) || !strings.Contains(err.Error(), "allowed jurisdictions [EU]") || !strings.Contains(err.Error(), `reads go to "us"`) {
			t.Fatalf("order during the EU outage: %v", err)
		}
		<-time.After(30 * time.Second)
		on := acq.halt()
		if on["us"] != 0 {
			t.Fatalf("%d order tickets granted across the border", on["us"])
		}
		if on["eu"] == 0 {
			t.Fatal("no ticket before the outage: the acquirer did not run")
		}
		if a, _ := h.p.Active(); a.Name != "eu" {
			t.Fatalf("active moved to %q", a.Name)
		}
		if n := countKind(h.rec.all(), pathdialer.EventSwitch); n != 0 {
			t.Fatalf("%d switches with no allowed backup", n)
		}
		if snap := h.p.Snapshot(); snap.Gate != pathdialer.GateHalted || snap.ReadEndpoint != "us" {
			t.Fatalf("snapshot gate=%v read=%q", snap.Gate, snap.ReadEndpoint)
		}
		// The EU answers again: orders resume there, reads follow.
		h.probes.set("eu", probeOK)
		rel := h.await(pathdialer.EventRelease, nil)
		if rel.Endpoint != "eu" {
			t.Fatalf("release %v", rel)
		}
		if re, _ := h.p.ReadEndpoint(); re.Name != "eu" {
			t.Fatalf("reads still go to %q after the EU recovered", re.Name)
		}
		if tk := mustAcquire(t, h.p, "o-after"); tk.Endpoint != "eu" {
			t.Fatalf("ticket after recovery on %q", tk.Endpoint)
		} else {
			tk.Done()
		}
	})
}
