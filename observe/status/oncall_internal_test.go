package status

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// A failover whose services are released one by one (REST after 150 ms, FIX
// after 2.5 s), with two NOT_RECEIVED verdicts still provisional. The page
// says when the switch happened (not when the trouble began, which it lists
// with the other steps), that the hold was mostly the check with the broker
// and how long each service waited, and which orders are still provisional
// and what to do about them.
func TestPageSaysSwitchTimeHoldAndProvisional(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 14, 36, 14, 342_000_000, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	down := errors.New("connection refused")
	tickets := []pathdialer.TicketInfo{{OrderID: "r1", Service: "rest"}, {OrderID: "f1", Service: "fix"}, {OrderID: "f2", Service: "fix"}}
	rec := NewRecorder()
	for _, e := range []pathdialer.Event{
		{Kind: pathdialer.EventProbe, Time: at(0), Endpoint: "eu", Err: down, Error: down.Error()},
		{Kind: pathdialer.EventStateChange, Time: at(162), Endpoint: "eu", PrevState: engine.Degraded, State: engine.Down},
		{Kind: pathdialer.EventDecision, Time: at(163), Decision: &engine.Decision{Outcome: engine.FenceRequired, From: "eu", To: "us"}},
		{Kind: pathdialer.EventHold, Time: at(163), Endpoint: "eu", Cause: "failover from eu to us: fencing"},
		{Kind: pathdialer.EventFenceStart, Time: at(200), Endpoint: "eu", Attempt: 1},
		{Kind: pathdialer.EventFenceSuccess, Time: at(236), Endpoint: "eu"},
		{Kind: pathdialer.EventSwitch, Time: at(237), From: "eu", To: "us", Token: 1},
		{Kind: pathdialer.EventReconcileStart, Time: at(237), From: "eu", To: "us", Tickets: tickets},
		{Kind: pathdialer.EventReconcileSuccess, Time: at(300), Service: "rest", Settlements: []pathdialer.Settlement{
			{OrderID: "r1", Service: "rest", Fate: pathdialer.FateFilled}}},
		{Kind: pathdialer.EventRelease, Time: at(313), Endpoint: "us", Service: "rest", Duration: 150 * time.Millisecond},
		{Kind: pathdialer.EventReconcileSuccess, Time: at(2600), Service: "fix", Settlements: []pathdialer.Settlement{
			{OrderID: "f1", Service: "fix", Fate: pathdialer.FateNotReceived, Provisional: true},
			{OrderID: "f2", Service: "fix", Fate: pathdialer.FateNotReceived, Provisional: true}}},
		{Kind: pathdialer.EventRelease, Time: at(2663), Endpoint: "us", Duration: 2500 * time.Millisecond},
	} {
		rec.OnEvent(e)
	}
	snap := pathdialer.Snapshot{Time: at(3000), Active: "us", Token: 1, Gate: pathdialer.GateOpen, Endpoints: []pathdialer.EndpointSnapshot{
		{Endpoint: pathdialer.Endpoint{Name: "eu", Primary: true}, State: engine.Down, Fenced: true, LastSuccessAge: -1},
		{Endpoint: pathdialer.Endpoint{Name: "us", Priority: 1}, State: engine.Healthy, Active: true, LastSuccess: at(2900), LastSuccessAge: 100 * time.Millisecond},
	}, ProvisionalCount: 2, Provisional: []pathdialer.Verdict{
		{OrderID: "f1", Service: "fix", Endpoint: "eu", Region: "eu", Fate: pathdialer.FateNotReceived, FoundAt: at(2600), RequeryAt: at(2600 + 910_000)},
		{OrderID: "f2", Service: "fix", Endpoint: "eu", Region: "eu", Fate: pathdialer.FateNotReceived, FoundAt: at(2600), RequeryAt: at(2600 + 910_000)},
	}}
	r := build(sources{snap: snap, engine: engine.DefaultConfig(), opts: Options{JSONURL: "status.json"}, rec: rec})
	if ls := r.LastSwitch; ls == nil || ls.Held == nil || *ls.Held != 2500 {
		t.Fatalf("last switch %+v: want held 2500 ms (the last service released)", ls)
	}
	var page1 bytes.Buffer
	if err := page.Execute(&page1, newView(Options{}, r, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	html := page1.String()
	for _, want := range []string{
		"Last switch: failover from eu to us at 14:36:14.579 UTC",
		"first failed probe 14:36:14.342", "declared down 14:36:14.504", "switched 14:36:14.579", "orders released 14:36:17.005",
		"cutting eu off 36 ms", "checking 3 order(s) with the broker 2.4 s",
		"rest 150 ms", "fix 2.5 s",
		`id="provisional"`, "2 orders", "fix", "due in 15 m",
		"MayResend",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(html, "at 14:36:14.342 UTC") {
		t.Errorf("the heading gives the first failed probe as the switch's time")
	}
	if t.Failed() {
		t.Logf("page:\n%s", html)
	}
}

// After a run with halts the page leads with the worst since start — how
// often trading halted, for how long in all and at most — above the last
// switch, even once orders flow again.
func TestPageLeadsWithTheWorstSinceStart(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	rec := NewRecorder()
	for _, e := range []pathdialer.Event{
		{Kind: pathdialer.EventHalt, Time: at(1000), Endpoint: "eu", Cause: "no endpoint eligible"},
		{Kind: pathdialer.EventResume, Time: at(3000), Endpoint: "us"},
		{Kind: pathdialer.EventRelease, Time: at(3100), Endpoint: "us", Duration: 2100 * time.Millisecond},
		{Kind: pathdialer.EventHalt, Time: at(10_000), Endpoint: "us", Cause: "no endpoint eligible"},
		{Kind: pathdialer.EventResume, Time: at(16_000), Endpoint: "us"},
		{Kind: pathdialer.EventRelease, Time: at(16_050), Endpoint: "us", Duration: 6050 * time.Millisecond},
	} {
		rec.OnEvent(e)
	}
	snap := pathdialer.Snapshot{Time: at(20_000), Active: "us", Token: 1, Gate: pathdialer.GateOpen, Halts: 2, Endpoints: []pathdialer.EndpointSnapshot{
		{Endpoint: pathdialer.Endpoint{Name: "eu", Primary: true}, State: engine.Down, LastSuccessAge: -1},
		{Endpoint: pathdialer.Endpoint{Name: "us", Priority: 1}, State: engine.Healthy, Active: true, LastSuccess: at(19_900), LastSuccessAge: 100 * time.Millisecond},
	}}
	r := build(sources{snap: snap, engine: engine.DefaultConfig(), opts: Options{JSONURL: "status.json"}, rec: rec})
	var b bytes.Buffer
	if err := page.Execute(&b, newView(Options{}, r, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	i := strings.Index(html, `id="worst"`)
	if i < 0 {
		t.Fatalf("no worst-since-start section:\n%s", html)
	}
	if j := strings.Index(html, `id="last-switch"`); j < i {
		t.Errorf("the last switch comes before the worst since start")
	}
	worst := html[i:]
	worst = worst[:strings.Index(worst, "</section>")]
	for _, want := range []string{"trading halted 2×", "8 s in all", "longest 6 s", "last at 14:00:10.000", "badge bad"} {
		if !strings.Contains(worst, want) {
			t.Errorf("worst since start lacks %q:\n%s", want, worst)
		}
	}
}
