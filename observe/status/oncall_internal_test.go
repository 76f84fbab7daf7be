package status

import (
	"bytes"
	"errors"
	"regexp"
	"slices"
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

// The page's figures agree with the run's own events: the worst box dates the
// longest hold by its switch (not its release); orders asked about again (a
// second attempt, a provisional verdict settled later) count once, under their
// last fate; and the provisional NOT_RECEIVED orders — the real risk for a
// trader — lead the worst box and come right after it, saying how to show
// their IDs when they are hidden.
func TestPageFiguresAgreeWithEvents(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 14, 36, 10, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	fixTickets := []pathdialer.TicketInfo{{OrderID: "f1", Service: "fix"}, {OrderID: "f2", Service: "fix"}}
	events := []pathdialer.Event{
		{Kind: pathdialer.EventStateChange, Time: at(1000), Endpoint: "eu", PrevState: engine.Degraded, State: engine.Down},
		{Kind: pathdialer.EventHold, Time: at(1001), Endpoint: "eu", Cause: "failover from eu to us: fencing"},
		{Kind: pathdialer.EventSwitch, Time: at(1388), From: "eu", To: "us", Token: 1},
		{Kind: pathdialer.EventReconcileStart, Time: at(1388), Service: "rest", Tickets: []pathdialer.TicketInfo{{OrderID: "r1", Service: "rest"}}},
		{Kind: pathdialer.EventReconcileSuccess, Time: at(1400), Service: "rest", Settlements: []pathdialer.Settlement{
			{OrderID: "r1", Service: "rest", Fate: pathdialer.FateFilled, Final: true}}},
		{Kind: pathdialer.EventReconcileStart, Time: at(1388), Service: "fix", Tickets: fixTickets},
		{Kind: pathdialer.EventReconcileFailure, Time: at(2388), Service: "fix", Attempt: 1, Error: "fix: not logged on to us"},
		{Kind: pathdialer.EventReconcileStart, Time: at(2388), Service: "fix", Attempt: 2, Tickets: fixTickets},
		{Kind: pathdialer.EventReconcileSuccess, Time: at(3300), Service: "fix", Settlements: []pathdialer.Settlement{
			{OrderID: "f1", Service: "fix", Fate: pathdialer.FateNotReceived, Provisional: true},
			{OrderID: "f2", Service: "fix", Fate: pathdialer.FateNotReceived, Provisional: true}}},
		{Kind: pathdialer.EventRelease, Time: at(3348), Endpoint: "us", Duration: 2347 * time.Millisecond},
		// Later f2 is looked up again and found filled; f1 is still provisional.
		{Kind: pathdialer.EventReconcileStart, Time: at(9000), Tickets: []pathdialer.TicketInfo{{OrderID: "f2", Service: "fix"}}},
		{Kind: pathdialer.EventReconcileSuccess, Time: at(9100), Settlements: []pathdialer.Settlement{
			{OrderID: "f2", Service: "fix", Fate: pathdialer.FateFilled, Final: true}}},
	}
	rec := NewRecorder()
	for _, e := range events {
		rec.OnEvent(e)
	}
	// What the events say.
	var switchedAt time.Time
	handed, last := map[string]map[string]bool{}, map[string]map[string]string{}
	for _, e := range events {
		switch e.Kind {
		case pathdialer.EventSwitch:
			switchedAt = e.Time
		case pathdialer.EventReconcileStart:
			for _, tk := range e.Tickets {
				if handed[tk.Service] == nil {
					handed[tk.Service] = map[string]bool{}
				}
				handed[tk.Service][tk.OrderID] = true
			}
		case pathdialer.EventReconcileSuccess:
			for _, s := range e.Settlements {
				if last[s.Service] == nil {
					last[s.Service] = map[string]string{}
				}
				last[s.Service][s.OrderID] = fateKey(s.Fate)
			}
		}
	}
	snap := pathdialer.Snapshot{Time: at(10_000), Active: "us", Token: 1, Gate: pathdialer.GateOpen, Endpoints: []pathdialer.EndpointSnapshot{
		{Endpoint: pathdialer.Endpoint{Name: "eu", Primary: true}, State: engine.Down, Fenced: true, LastSuccessAge: -1},
		{Endpoint: pathdialer.Endpoint{Name: "us", Priority: 1}, State: engine.Healthy, Active: true, LastSuccess: at(9900), LastSuccessAge: 100 * time.Millisecond},
	}, ProvisionalCount: 1, Provisional: []pathdialer.Verdict{
		{OrderID: "f1", Service: "fix", Endpoint: "eu", Region: "eu", Fate: pathdialer.FateNotReceived, FoundAt: at(3300), RequeryAt: at(3300 + 910_000)},
	}}
	r := build(sources{snap: snap, engine: engine.DefaultConfig(), opts: Options{JSONURL: "status.json"}, rec: rec})
	for _, o := range r.Orders {
		if o.Reconciled != len(handed[o.Transport]) {
			t.Errorf("%s: %d checked with the broker, the events handed %d distinct orders", o.Transport, o.Reconciled, len(handed[o.Transport]))
		}
		want := map[string]int{}
		for _, f := range last[o.Transport] {
			want[f]++
		}
		for f, n := range want {
			if o.Settled[f] != n {
				t.Errorf("%s: %d %s, the events' last fates give %d (%v)", o.Transport, o.Settled[f], f, n, o.Settled)
			}
		}
	}
	if ls := r.LastSwitch; ls == nil || ls.Reconciled["fix"] != 2 {
		t.Errorf("last switch %+v: want 2 fix orders checked (asked twice)", ls)
	} else if want := "checking 2 fix order(s) with the broker took 1.9 s (1 failed attempt(s): fix: not logged on to us)"; !slices.Contains(ls.HeldWhy, want) {
		t.Errorf("held because %q, want %q (the slowest service's check, with its own orders)", ls.HeldWhy, want)
	}

	var b bytes.Buffer
	if err := page.Execute(&b, newView(Options{}, r, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	i := strings.Index(html, `id="worst"`)
	if i < 0 {
		t.Fatalf("no worst-since-start section:\n%s", html)
	}
	worst := html[i:]
	worst = worst[:strings.Index(worst, "</section>")]
	if want := "at " + switchedAt.Format(clock); !strings.Contains(worst, want) {
		t.Errorf("the worst box does not date the longest hold by its switch (%s):\n%s", want, worst)
	}
	if strings.Contains(worst, "at "+at(3348).Format(clock)) {
		t.Errorf("the worst box gives the release time as the switch's:\n%s", worst)
	}
	lines := regexp.MustCompile(`<span class="badge ([a-z]+)">([^<]*)</span>`).FindAllStringSubmatch(worst, -1)
	if len(lines) < 2 || lines[0][1] != "bad" || !strings.Contains(lines[0][2], "1 order NOT_RECEIVED only provisionally") {
		t.Errorf("the worst box does not lead with the provisional verdict, in red: %q", lines)
	}
	p, ls := strings.Index(html, `id="provisional"`), strings.Index(html, `id="last-switch"`)
	if p < 0 || p > ls || p < i {
		t.Errorf("the provisional orders are not right after the worst box (worst %d, provisional %d, last switch %d)", i, p, ls)
	}
	if !strings.Contains(html, "ShowOrderIDs") {
		t.Errorf("hidden order IDs without a word on how to show them:\n%s", html[p:])
	}
	if t.Failed() {
		t.Logf("page:\n%s", html)
	}
}
