package orderflow_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// A region outage against a broker whose FIX session cancels every open
// order of the profile on disconnect (Coinbase 8013=Y): the workload's
// resting orders are cancelled when the eu session drops, the open-order
// reconcile after the switch reports every one of them, and the dead-man
// timer, refreshed through whichever path reads are on, never lapses.
func TestOutageWithProfileCODReportsEveryCancel(t *testing.T) {
	b := startBroker(t)
	if err := b.SetCancelOnDisconnect(simbroker.FIX, simbroker.CODProfile); err != nil {
		t.Fatal(err)
	}
	cfg := orderflow.FromSimBroker(b)
	cfg.DeadManTimeout, cfg.DeadManRefresh = 10*time.Second, 500*time.Millisecond
	c, err := orderflow.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	sc, err := orderflow.NewScenario("down", "eu", "us")
	if err != nil {
		t.Fatal(err)
	}
	sc.Failback = orderflow.May
	tr := orderflow.StartTrading(c, orderflow.DefaultTradeOptions())
	eventually(t, 5*time.Second, "resting orders on eu", func() bool { return len(b.OpenOrders()) >= 3 })
	faultAt := time.Now()
	if err := sc.Inject(b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "switch to us and release", func() bool {
		ep, _ := c.Path().Active()
		g, _ := c.Path().GateState()
		return ep.Name == "us" && g == pathdialer.GateOpen
	})
	eventually(t, 10*time.Second, "the open-order reconcile after the release", func() bool { return len(c.RestingReports()) > 0 })
	tr.Stop()
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	c.Drain(dctx)
	if err := c.StopDeadMan(dctx); err != nil {
		t.Fatal(err)
	}
	sum := c.Check(orderflow.CheckOptions{Audit: b.Audit(), Scenario: &sc, FaultAt: faultAt, Backup: "us"})
	var w bytes.Buffer
	c.Recorder().WriteTimeline(&w, false)
	sum.Write(&w)
	if !sum.OK() {
		t.Fatal(w.String())
	}
	if sum.RestingCancelled == 0 || sum.RestingReported != sum.RestingCancelled || sum.DeadManGaps != 0 {
		t.Fatalf("resting: cancelled %d, reported %d, dead-man gaps %d\n%s", sum.RestingCancelled, sum.RestingReported, sum.DeadManGaps, w.String())
	}
	t.Logf("resting orders cancelled by the switch's COD: %d, all reported", sum.RestingCancelled)
	for _, inv := range sum.Invariants {
		if (inv.ID == orderflow.InvRestingReported || inv.ID == orderflow.InvDeadMan) && !inv.Checked {
			t.Errorf("I%d not checked: %s", inv.ID, inv.NotChecked)
		}
	}
}
