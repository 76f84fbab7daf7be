package orderflow_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// quickfix v0.9.10 leaves its logon/logout timer callbacks blocked after a
// session stops (see transports/fix's TestMain).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/quickfixgo/quickfix.(*stateMachine).Connect.func1"),
		goleak.IgnoreTopFunction("github.com/quickfixgo/quickfix.(*session).initiateLogoutInReplyTo.func1"),
		goleak.IgnoreTopFunction("github.com/quickfixgo/quickfix.readLoop"),
		goleak.IgnoreTopFunction("github.com/quickfixgo/quickfix.(*session).waitForInSessionTime"),
	)
}

var comp atomic.Int64

func startBroker(t *testing.T) *simbroker.Broker {
	t.Helper()
	cfg := simbroker.DefaultConfig()
	cfg.TickInterval = 25 * time.Millisecond
	cfg.Streams = []string{"px.EURUSD"}
	cfg.ClientCompID = fmt.Sprintf("OFTEST%d", comp.Add(1))
	b, err := simbroker.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func startClient(t *testing.T, b *simbroker.Broker) *orderflow.Client {
	t.Helper()
	cfg := orderflow.FromSimBroker(b)
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
	return c
}

// eventually polls cond every 10 ms for up to d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	tk := time.NewTicker(10 * time.Millisecond)
	defer tk.Stop()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-tk.C:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func order(c *orderflow.Client, id string) orderflow.OrderRecord {
	for _, o := range c.Orders() {
		if o.ClOrdID == id {
			return o
		}
	}
	return orderflow.OrderRecord{}
}

func TestRESTAndFIXOrdersAcked(t *testing.T) {
	b := startBroker(t)
	c := startClient(t, b)
	ctx := context.Background()
	if err := c.PlaceREST(ctx, "r-1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Place(ctx, orderflow.REST, orderflow.OrderSpec{ClOrdID: "r-2", Limit: "0.5"}); err != nil {
		t.Fatal(err)
	}
	if err := c.PlaceFIX(ctx, "f-1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "FIX ack", func() bool { return order(c, "f-1").Acked })
	for _, id := range []string{"r-1", "r-2", "f-1"} {
		o := order(c, id)
		if !o.Sent || !o.Acked || o.AckEndpoint != "eu" {
			t.Errorf("%s: %+v", id, o)
		}
		if bo, ok := b.Order(id); !ok || bo.Region != "eu" {
			t.Errorf("%s: broker %+v %v", id, bo, ok)
		}
	}
	if acct, err := c.Account(ctx); err != nil || acct["account_id"] == nil {
		t.Fatalf("account %v %v", acct, err)
	}
	eventually(t, 5*time.Second, "prices", func() bool {
		st := c.Prices().Stats()
		return len(st) == 1 && st[0].Messages > 5
	})
	sum := c.Check(orderflow.CheckOptions{Audit: b.Audit()})
	if !sum.OK() || sum.Transport("rest").Acked != 2 || sum.Transport("fix").Acked != 1 {
		var w bytes.Buffer
		sum.Write(&w)
		t.Fatal(w.String())
	}
}

func TestBlackholeFailoverKeepsInvariants(t *testing.T) {
	b := startBroker(t)
	c := startClient(t, b)
	sc, err := orderflow.NewScenario("blackhole", "eu", "us")
	if err != nil {
		t.Fatal(err)
	}
	sc.Failback = orderflow.May
	opts := orderflow.DefaultTradeOptions()
	tr := orderflow.StartTrading(c, opts)
	eventually(t, 5*time.Second, "orders on eu", func() bool { return len(c.Orders()) > 10 })
	faultAt := time.Now()
	if err := sc.Inject(b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "switch to us and release", func() bool {
		ep, _ := c.Path().Active()
		g, _ := c.Path().GateState()
		return ep.Name == "us" && g == pathdialer.GateOpen
	})
	eventually(t, 5*time.Second, "acks from us", func() bool {
		for _, o := range c.Orders() {
			if o.Acked && o.AckEndpoint == "us" && o.Transport == orderflow.FIX {
				return true
			}
		}
		return false
	})
	tr.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if p := c.Drain(ctx); len(p) > 0 {
		var w bytes.Buffer
		c.Recorder().WriteTimeline(&w, false)
		t.Fatalf("pending after drain: %v\n%s", p, w.String())
	}
	sum := c.Check(orderflow.CheckOptions{Audit: b.Audit(), Scenario: &sc, FaultAt: faultAt, Backup: "us"})
	var w bytes.Buffer
	c.Recorder().WriteTimeline(&w, false)
	sum.Write(&w)
	if !sum.OK() {
		t.Fatal(w.String())
	}
	if len(sum.Switches) == 0 || sum.Switches[0].To != "us" || sum.Halts != 0 {
		t.Fatalf("switches %+v halts %d\n%s", sum.Switches, sum.Halts, w.String())
	}
	for _, name := range []string{"rest", "fix"} {
		ts := sum.Transport(name)
		if ts.FirstAckOnBackup <= 0 || ts.Lost != 0 || ts.Duplicated != 0 {
			t.Errorf("%s: %+v", name, ts)
		}
	}
	out := w.String()
	for _, want := range []string{"FENCE_REQUIRED eu → us", "SWITCHED eu → us", "reconcile rest OK", "RELEASE", "resumed on us", "logged on through us"} {
		if !strings.Contains(out, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	if strings.Contains(out, b.APIKey()) {
		t.Error("timeline shows the API key")
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := orderflow.DefaultConfig()
	if err := cfg.Validate(); err == nil {
		t.Fatal("no endpoints accepted")
	}
	cfg.Endpoints = []orderflow.Endpoint{{Name: "a", Region: "a", Primary: true, REST: "https://a"}, {Name: "b", Region: "b", REST: "https://b"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.FIXSenderCompID = "ME"
	if err := cfg.Validate(); err == nil {
		t.Fatal("FIX without addresses accepted")
	}
	cfg.FIXSenderCompID = ""
	cfg.SessionPolicy = "maybe"
	if err := cfg.Validate(); err == nil {
		t.Fatal("bad policy accepted")
	}
	if _, err := orderflow.NewScenario("nope", "eu", "us"); err == nil {
		t.Fatal("unknown fault accepted")
	}
	for _, k := range orderflow.FaultKinds() {
		if _, err := orderflow.NewScenario(k, "eu", "us"); err != nil {
			t.Fatal(k, err)
		}
	}
}

func TestTimelineFoldsRepeats(t *testing.T) {
	r := orderflow.NewRecorder()
	for range 5 {
		r.OnEvent(pathdialer.Event{Kind: pathdialer.EventProbe, Endpoint: "eu", Time: time.Now(), Err: pathdialer.ErrProbeTimeout})
	}
	r.OnEvent(pathdialer.Event{Kind: pathdialer.EventProbe, Endpoint: "eu", Time: time.Now()})
	for range 3 {
		r.Note(orderflow.Info, "x", "same")
	}
	r.Note(orderflow.Debug, "x", "hidden")
	var w bytes.Buffer
	r.WriteTimeline(&w, false)
	out := w.String()
	for _, want := range []string{"eu probe FAILED", "probe ok again (5 probes had failed)", "repeated 2 more time(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hidden") || strings.Count(out, "FAILED") != 1 {
		t.Errorf("not folded:\n%s", out)
	}
}

// The timeline says each thing once: one SWITCHED per switch (not the
// decision too), one late finish per order however often the transport
// reports it, one line for the same note about several orders, and a
// RELEASE that names what held the orders.
func TestTimelineSaysEachThingOnce(t *testing.T) {
	r := orderflow.NewRecorder()
	// Events from 2 s ago to 0.5 s ahead: the notes, stamped now, fall
	// inside the reconcile.
	now := time.Now().Add(-2 * time.Second)
	ev := func(ms int, e pathdialer.Event) {
		e.Time = now.Add(time.Duration(ms) * time.Millisecond)
		r.OnEvent(e)
	}
	ev(0, pathdialer.Event{Kind: pathdialer.EventHold, Cause: "fencing"})
	ev(1, pathdialer.Event{Kind: pathdialer.EventFenceStart, Endpoint: "eu", Attempt: 1})
	ev(2, pathdialer.Event{Kind: pathdialer.EventFenceSuccess, Endpoint: "eu", Duration: time.Millisecond})
	ev(3, pathdialer.Event{Kind: pathdialer.EventDecision, Decision: &engine.Decision{Outcome: engine.Switched, From: "eu", To: "us"}})
	ev(3, pathdialer.Event{Kind: pathdialer.EventSwitch, From: "eu", To: "us", Token: 1})
	ev(4, pathdialer.Event{Kind: pathdialer.EventReconcileStart, From: "eu", To: "us"})
	for i := range 3 {
		for _, id := range []string{"F1", "F2"} {
			ev(10+100*i, pathdialer.Event{Kind: pathdialer.EventLateTicket, Endpoint: "eu",
				Cause: `order "` + id + `" finished (unknown: fix: session ended before the order was answered: order "` + id + `") after it was handed to reconciliation`})
		}
	}
	for _, id := range []string{"R1", "R2", "R3"} {
		r.NoteOrder(orderflow.Info, "rest", id, "order %s: outcome UNKNOWN on eu (cut): handed to reconcile", id)
	}
	r.Note(orderflow.Info, "fix", "FIX session logged on through us (logon #2)")
	ev(2500, pathdialer.Event{Kind: pathdialer.EventReconcileSuccess, Duration: 2496 * time.Millisecond})
	ev(2500, pathdialer.Event{Kind: pathdialer.EventRelease, Endpoint: "us", Duration: 2500 * time.Millisecond})
	var w bytes.Buffer
	r.WriteTimeline(&w, false)
	out := w.String()
	if n := strings.Count(out, "SWITCHED"); n != 1 {
		t.Errorf("%d SWITCHED lines, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "finished late"); n != 1 || !strings.Contains(out, "orders F1 F2 (2) finished late") {
		t.Errorf("late finishes not one line for F1 and F2:\n%s", out)
	}
	if !strings.Contains(out, "orders R1 R2 R3 (3): outcome UNKNOWN on eu") {
		t.Errorf("UNKNOWN notes not folded:\n%s", out)
	}
	if !strings.Contains(out, "waiting for the FIX session to log on through us") || !strings.Contains(out, "orders held 2.50 s") {
		t.Errorf("RELEASE does not name the hold's cause:\n%s", out)
	}
}

// A 503 fault is described for a reader: how long, and Retry-After, never a
// raw timestamp.
func TestScenarioDescribes503ForAReader(t *testing.T) {
	sc, err := orderflow.NewScenario("503", "eu", "us")
	if err != nil {
		t.Fatal(err)
	}
	d := sc.Describe()
	if !strings.Contains(d, "503 (until recovered, Retry-After 1 s)") || strings.Contains(d, "until=") {
		t.Errorf("503 described as %q", d)
	}
}
