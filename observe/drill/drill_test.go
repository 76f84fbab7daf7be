package drill

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

var t0 = time.Date(2025, 1, 2, 14, 2, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const sec = time.Second

// synthetic is a blackhole on eu at +2s, failover to us at +2.4s, a hold
// from +2.3s to +2.6s, recovery of eu at +6s.
func synthetic(primary, survivor string) Input {
	in := Input{
		Title: "drill", Start: t0, End: at(8 * sec), Fault: primary + ": blackhole",
		FaultAt: at(2 * sec), RecoverAt: at(6 * sec), Primary: primary, Survivor: survivor,
		Endpoints: []string{primary, survivor}, Budget: Budget{PerSecond: 40, Burst: 10},
		Checked: []string{"no lost order"},
	}
	ev := func(e pathdialer.Event, d time.Duration) { e.Time = at(d); in.Events = append(in.Events, e) }
	for d := time.Duration(0); d < 8*sec; d += 200 * time.Millisecond {
		ev(pathdialer.Event{Kind: pathdialer.EventProbe, Endpoint: survivor, Duration: 3 * time.Millisecond}, d)
		p := pathdialer.Event{Kind: pathdialer.EventProbe, Endpoint: primary, Duration: 3 * time.Millisecond}
		if d >= 2*sec && d < 6*sec {
			p.Err, p.Error = errors.New("Get https://10.1.2.3:8443/v1/account: probe timed out"), "Get https://10.1.2.3:8443/v1/account: probe timed out"
		}
		ev(p, d)
	}
	ev(pathdialer.Event{Kind: pathdialer.EventStateChange, Endpoint: primary, State: engine.Healthy}, 0)
	ev(pathdialer.Event{Kind: pathdialer.EventStateChange, Endpoint: survivor, State: engine.Healthy}, 0)
	ev(pathdialer.Event{Kind: pathdialer.EventStateChange, Endpoint: primary, PrevState: engine.Healthy, State: engine.Degraded}, 2100*time.Millisecond)
	ev(pathdialer.Event{Kind: pathdialer.EventStateChange, Endpoint: primary, PrevState: engine.Degraded, State: engine.Down}, 2300*time.Millisecond)
	ev(pathdialer.Event{Kind: pathdialer.EventDecision, Decision: &engine.Decision{Outcome: engine.FenceRequired, From: primary, To: survivor}}, 2300*time.Millisecond)
	ev(pathdialer.Event{Kind: pathdialer.EventHold, Cause: "failover: fencing " + primary}, 2300*time.Millisecond)
	ev(pathdialer.Event{Kind: pathdialer.EventFenceStart, Endpoint: primary, Attempt: 1}, 2300*time.Millisecond)
	ev(pathdialer.Event{Kind: pathdialer.EventFenceSuccess, Endpoint: primary, Duration: 100 * time.Millisecond}, 2400*time.Millisecond)
	ev(pathdialer.Event{Kind: pathdialer.EventDecision, Decision: &engine.Decision{Outcome: engine.Switched, From: primary, To: survivor}}, 2400*time.Millisecond)
	ev(pathdialer.Event{Kind: pathdialer.EventSwitch, From: primary, To: survivor, Token: 1}, 2400*time.Millisecond)
	ev(pathdialer.Event{Kind: pathdialer.EventReconcileStart, From: primary, To: survivor}, 2400*time.Millisecond)
	ev(pathdialer.Event{Kind: pathdialer.EventReconcileSuccess, Duration: 200 * time.Millisecond}, 2600*time.Millisecond)
	ev(pathdialer.Event{Kind: pathdialer.EventRelease, Endpoint: survivor, Duration: 300 * time.Millisecond}, 2600*time.Millisecond)
	ev(pathdialer.Event{Kind: pathdialer.EventSwitch, From: survivor, To: primary, Token: 2}, 7*sec)

	in.Orders = []Order{
		{ID: "R1", Transport: "rest", PlacedAt: at(1 * sec), Acked: true, AckedAt: at(1010 * time.Millisecond), AckEndpoint: primary},
		{ID: "R2", Transport: "rest", PlacedAt: at(2350 * time.Millisecond), Acked: true, AckedAt: at(2620 * time.Millisecond), AckEndpoint: survivor},
		{ID: "R3", Transport: "rest", PlacedAt: at(2500 * time.Millisecond), NotSent: true},
		{ID: "F1", Transport: "fix", PlacedAt: at(2650 * time.Millisecond), Acked: true, AckedAt: at(2700 * time.Millisecond), AckEndpoint: survivor},
		{ID: "F2", Transport: "fix", PlacedAt: at(6500 * time.Millisecond), Unknown: true},
	}
	in.Notes = []Note{{Time: at(2 * sec), Source: "scenario", Text: "FAULT " + primary}, {Time: at(2500 * time.Millisecond), Source: "ws", Text: "stream px resumed on " + survivor}}
	// Samples every 100 ms: the survivor takes 50 upgrades/s from +2.4s to
	// +3.4s; 10 of 10 population streams move there by +3.4s; one read in
	// four fails during the fault.
	for d := time.Duration(0); d <= 8*sec; d += 100 * time.Millisecond {
		h := 0.0
		if d > 2400*time.Millisecond {
			h = math.Min(50, 50*(d-2400*time.Millisecond).Seconds())
		}
		onS := int(math.Min(10, h/5))
		ok, failed := int(d/(250*time.Millisecond)), 0
		if d > 2*sec {
			failed = int((min(d, 6*sec) - 2*sec) / sec)
		}
		in.Samples = append(in.Samples, Sample{Time: at(d),
			Regions:   map[string]RegionWS{survivor: {Attempts: uint64(h * 2), Handshakes: uint64(h), OverBudget: uint64(h)}, primary: {Attempts: 10, Handshakes: 10}},
			Connected: map[string]int{primary: 10 - onS, survivor: onS},
			ReadsOK:   ok, ReadsFailed: failed})
	}
	in.Population = make([]ws.Stats, 10)
	for i := range in.Population {
		in.Population[i] = ws.Stats{Subscribes: 1, Resumes: 1, Reconnects: 1}
	}
	in.Population[0].Resumes, in.Population[0].Snapshots = 0, 1
	in.Population[1].Resumes, in.Population[1].Snapshots = 0, 1
	return in
}

func TestCompute(t *testing.T) {
	f := Compute(synthetic("eu", "us"))
	land := map[string]time.Duration{}
	for _, l := range f.Landing {
		land[l.Transport] = l.After
	}
	for what, want := range map[string]time.Duration{
		"rest orders": 620 * time.Millisecond, "fix orders": 700 * time.Millisecond,
		"WebSocket stream": 500 * time.Millisecond, "submission gate": 600 * time.Millisecond,
		"WS population": 500 * time.Millisecond,
	} {
		if got, ok := land[what]; !ok || got != want {
			t.Errorf("landing %s = %v (present %v), want %v", what, got, ok, want)
		}
	}
	if w := f.Wave; w.Size != 10 || w.P50 != 900*time.Millisecond || w.Last != 1400*time.Millisecond || w.Landed != 10 {
		t.Errorf("wave = %+v", w)
	}
	h := f.Handshakes
	if !h.Measured || math.Abs(h.PeakPerSecond-50) > 5 || h.Accepted != 50 || h.OverBudget != 50 || h.Attempts != 100 {
		t.Errorf("handshakes = %+v", h)
	}
	if !h.UnderBudget() || h.PeakAttemptsPerSecond < 90 {
		t.Errorf("under budget %v, peak attempts %v", h.UnderBudget(), h.PeakAttemptsPerSecond)
	}
	if got := f.Resume.ResumedFraction(); got != 0.8 || f.Resume.Subscribes != 10 {
		t.Errorf("resume = %+v, fraction %v", f.Resume, got)
	}
	rows := map[string]ErrorRate{}
	for _, r := range f.Errors {
		rows[r.What] = r
	}
	check := func(what string, want ...[2]int) {
		t.Helper()
		r, ok := rows[what]
		if !ok || len(r.Phases) != len(want) {
			t.Fatalf("%s: %+v", what, r)
		}
		for i, w := range want {
			if r.Phases[i].Failed != w[0] || r.Phases[i].Total != w[1] {
				t.Errorf("%s %s = %d/%d, want %d/%d", what, r.Phases[i].Phase, r.Phases[i].Failed, r.Phases[i].Total, w[0], w[1])
			}
		}
	}
	check("rest orders", [2]int{0, 1}, [2]int{1, 2}, [2]int{0, 0})
	check("fix orders", [2]int{0, 0}, [2]int{0, 1}, [2]int{1, 1})
	// Reads are counted per sample interval, in the phase of its end.
	check("account reads", [2]int{0, 7}, [2]int{3, 19}, [2]int{1, 10})
	if r := rows["rest orders"]; r.Detail != "not sent 1" {
		t.Errorf("rest detail %q", r.Detail)
	}
	if len(f.Holds) != 1 {
		t.Fatalf("holds = %+v", f.Holds)
	}
	hd := f.Holds[0]
	if hd.Start != 2300*time.Millisecond || hd.End != 2600*time.Millisecond || hd.Held != 300*time.Millisecond || hd.Endpoint != "us" ||
		hd.Orders["rest"] != 2 || hd.Answered != 1 || hd.MaxWait != 270*time.Millisecond {
		t.Errorf("hold = %+v", hd)
	}
	if len(f.Switches) != 2 || f.Switches[0].Failback || !f.Switches[1].Failback {
		t.Errorf("switches = %+v", f.Switches)
	}
}

func TestNoFaultNothingInvented(t *testing.T) {
	in := Input{Start: t0, End: at(3 * sec), Orders: []Order{{Transport: "rest", PlacedAt: at(sec), Acked: true, AckedAt: at(sec)}}}
	f := Compute(in)
	if f.Landing != nil || f.Wave.P95 != NotMeasured || f.Handshakes.Measured || f.Resume.Measured {
		t.Errorf("figures invented: %+v", f)
	}
	if !math.IsNaN(f.Resume.ResumedFraction()) {
		t.Error("resume fraction without resumes is not NaN")
	}
	if len(f.Errors) != 1 || f.Errors[0].Phases[0].Phase != Whole || f.Errors[0].Phases[0].Total != 1 {
		t.Errorf("errors = %+v", f.Errors)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, in); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"not measured", "No fault was injected"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

var svgRE = regexp.MustCompile(`(?s)<svg .*?</svg>`)

// The report is one self-contained page; every SVG in it is well-formed XML;
// hostile names and causes are escaped; order IDs never appear.
func TestHTMLSelfContainedWellFormedEscaped(t *testing.T) {
	evil := `eu<script>alert(1)</script>&"'`
	in := synthetic(evil, "us</svg><img src=x>")
	in.Title = `<b>game day</b>`
	in.Events = append(in.Events, pathdialer.Event{Kind: pathdialer.EventHalt, Time: at(5 * sec), Cause: `</title></svg><script>x()</script>`})
	in.Violations = []string{`<iframe src="//evil">`}
	var b bytes.Buffer
	if err := WriteHTML(&b, in); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, bad := range []string{"<script", "<img", "<iframe", "<b>game", "<link", "@import", "url(", "R1", "F2", "10.1.2.3", "8443"} {
		if strings.Contains(out, bad) {
			t.Errorf("report contains %q", bad)
		}
	}
	if loc := regexp.MustCompile(`<[^>]+\s(src|href)="`).FindStringIndex(out); loc != nil {
		t.Errorf("report loads an external asset: %q", out[loc[0]:min(loc[1]+40, len(out))])
	}
	if !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, "&lt;script&gt;") {
		t.Error("not an escaped HTML page")
	}
	svgs := svgRE.FindAllString(out, -1)
	if len(svgs) < 3 { // timeline, two handshake charts, population
		t.Fatalf("%d svg elements", len(svgs))
	}
	for i, s := range svgs {
		d := xml.NewDecoder(strings.NewReader(s))
		d.Strict = true
		depth := 0
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("svg %d is not well-formed XML: %v\n%s", i, err, s[:min(len(s), 400)])
			}
			switch tok.(type) {
			case xml.StartElement:
				depth++
			case xml.EndElement:
				depth--
			}
		}
		if depth != 0 {
			t.Errorf("svg %d: unbalanced (%d)", i, depth)
		}
	}
	// The timeline has a lane per endpoint and the decision markers.
	for _, want := range []string{"FENCE_REQUIRED", "SWITCHED", "held 300 ms", "HALT", "fence ", "reconcile OK", "budget 40/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// The report leads with what on-call asks: time to detect (fault → DOWN),
// time to switch (DOWN → switch), held and why, orders per transport
// including those only reconciliation saw (a FIX order in flight at the
// switch), ticks missed; the header names date, seed and commit; the
// invariants are listed; the legend names the order-error ticks as what they
// are.
func TestOnCallFigures(t *testing.T) {
	in := synthetic("eu", "us")
	for i, e := range in.Events {
		switch e.Kind {
		case pathdialer.EventReconcileStart:
			in.Events[i].Tickets = []pathdialer.TicketInfo{{OrderID: "F0", Service: "fix"}, {OrderID: "R0", Service: "rest"}}
		case pathdialer.EventReconcileSuccess:
			in.Events[i].Settlements = []pathdialer.Settlement{{OrderID: "F0", Service: "fix", Fate: pathdialer.FateNotReceived},
				{OrderID: "R0", Service: "rest", Fate: pathdialer.FateFilled}}
		}
	}
	i := slices.IndexFunc(in.Events, func(e pathdialer.Event) bool { return e.Kind == pathdialer.EventReconcileSuccess })
	in.Events = slices.Insert(in.Events, i, pathdialer.Event{Kind: pathdialer.EventReconcileFailure, Time: at(2500 * time.Millisecond),
		Error: "fix: reconcile incomplete: not logged on to us", Attempt: 1})
	in.Stream = &StreamSeen{Messages: 80, Missed: 3, Snapshots: 1, LongestSilence: 1500 * time.Millisecond}
	in.Seed, in.Commit = "42", "abc1234"
	in.Checked = []string{"no order booked twice", "no order lost"}

	oc := Compute(in).OnCall
	if oc.Endpoint != "eu" || oc.To != "us" || oc.Detect != 300*time.Millisecond || oc.Switch != 100*time.Millisecond || oc.Held != 300*time.Millisecond {
		t.Errorf("on-call times: %+v", oc)
	}
	if want := []string{"failover: fencing eu", "cutting eu off took 100 ms", "checking 2 order(s) with the broker on us took 200 ms (1 failed attempt(s): fix: reconcile incomplete: not logged on to us)"}; !slices.Equal(oc.HeldBecause, want) {
		t.Errorf("held because %q", oc.HeldBecause)
	}
	byT := map[string]TransportOrders{}
	for _, o := range oc.Orders {
		byT[o.Transport] = o
	}
	if r := byT["rest"]; r.Placed != 3 || r.Answered != 2 || r.Refused != 1 || r.Unknown != 0 || r.Checked != 1 || r.Settled["filled"] != 1 {
		t.Errorf("rest: %+v", r)
	}
	if f := byT["fix"]; f.Placed != 2 || f.Answered != 1 || f.Refused != 0 || f.Unknown != 1 || f.Checked != 1 || f.Settled["not received"] != 1 {
		t.Errorf("fix: %+v", f)
	}

	var buf bytes.Buffer
	if err := WriteHTML(&buf, in); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	oncall := html[strings.Index(html, `id="oncall"`):strings.Index(html, "Drill figures")]
	for _, want := range []string{"time to detect", "<b>300 ms</b>", "time to switch", "<b>100 ms</b>", "first switch: orders held around it",
		"ticks missed", "<b>3</b>", "longest silence", "<b>1.50 s</b>", "failover: fencing eu",
		"<td>fix</td><td class=\"n\">2</td><td class=\"n\">1</td><td class=\"n\">0</td><td class=\"n\">1</td><td class=\"n\">1</td><td class=\"small\">1 not received</td>"} {
		if !strings.Contains(oncall, want) {
			t.Errorf("the on-call section lacks %q", want)
		}
	}
	for _, want := range []string{"seed 42", "commit abc1234", "date 2025-01-02 14:02 UTC", "<li>no order booked twice</li>", "<li>no order lost</li>",
		"order: outcome unknown", "order: not sent", `stroke="` + colOrderUnknown + `"`, `stroke="` + colOrderNotSent + `"`} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, bad := range []string{"FENCE_REQUIRED / hold", "halt / not sent"} {
		if strings.Contains(html, bad) {
			t.Errorf("legend still says %q", bad)
		}
	}
	if strings.Index(html, `id="oncall"`) > strings.Index(html, "<h2>Timeline</h2>") {
		t.Error("the on-call figures do not lead the report")
	}
}

// The header does not read as a good run when the invariants held but the
// orders failed or trading halted before the fault: it leads with what share
// of orders failed and how often trading halted, and "invariants OK" is green
// only when nothing beside it is bad.
func TestHeaderVerdict(t *testing.T) {
	header := func(in Input) string {
		t.Helper()
		var b bytes.Buffer
		if err := WriteHTML(&b, in); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		i, j := strings.Index(out, "<h1>"), strings.Index(out, "</h1>")
		if i < 0 || j < i {
			t.Fatal("no header")
		}
		return out[i:j]
	}
	in := synthetic("eu", "us") // 2 of 5 orders failed, no halt
	h := header(in)
	for _, want := range []string{`badge bad">40.0% of orders failed</span> <span class="badge muted">invariants held`} {
		if !strings.Contains(h, want) {
			t.Errorf("header %q lacks %q", h, want)
		}
	}
	if strings.Contains(h, "halted") {
		t.Errorf("header %q: no halt happened", h)
	}
	in.Events = append(in.Events,
		pathdialer.Event{Kind: pathdialer.EventHalt, Time: at(1 * sec), Cause: "ws: dial endpoint \"eu\": i/o timeout"},
		pathdialer.Event{Kind: pathdialer.EventResume, Time: at(1500 * time.Millisecond)})
	slices.SortStableFunc(in.Events, func(a, b pathdialer.Event) int { return a.Time.Compare(b.Time) })
	in.Orders = in.Orders[:1] // the one that succeeded
	h = header(in)
	for _, want := range []string{`badge bad">halted 1× (1 before the fault)</span> <span class="badge muted">invariants held`, `badge good">0.0% of orders failed`} {
		if !strings.Contains(h, want) {
			t.Errorf("header %q lacks %q", h, want)
		}
	}
}
