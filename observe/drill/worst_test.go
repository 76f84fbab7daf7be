package drill

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// worstRun is the synthetic run made worse after its first switch: trading
// halts three times (the last for 12.5 s), FIX orders land on the survivor
// only 13 s after the fault, and the hold that ends the last halt is released
// 31 ms after it began while the Path counts 12.5 s held (since the halt).
func worstRun() Input {
	in := synthetic("eu", "us")
	in.End = at(20 * sec)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, h := range []struct{ start, end time.Duration }{{3 * sec, 4 * sec}, {5 * sec, 6 * sec}, {ms(6840), ms(19340)}} {
		// The Path measures the hold that ends a halt from the halt's start.
		in.Events = append(in.Events,
			pathdialer.Event{Kind: pathdialer.EventHalt, Time: at(h.start), Cause: "no endpoint eligible: us DOWN"},
			pathdialer.Event{Kind: pathdialer.EventResume, Time: at(h.end), Endpoint: "us"},
			pathdialer.Event{Kind: pathdialer.EventHold, Time: at(h.end), Cause: "resuming on us: reconciling"},
			pathdialer.Event{Kind: pathdialer.EventRelease, Time: at(h.end + ms(31)), Endpoint: "us", Duration: h.end + ms(31) - h.start},
		)
	}
	slices.SortStableFunc(in.Events, func(a, b pathdialer.Event) int { return a.Time.Compare(b.Time) })
	// FIX: the only FIX order answered by us comes 13 s after the fault.
	for i := range in.Orders {
		if in.Orders[i].ID == "F1" {
			in.Orders[i].PlacedAt, in.Orders[i].AckedAt = at(14*sec), at(15*sec)
		}
	}
	return in
}

// On-call sees the worst thing that happened first: the halts, then how long
// the slowest transport's orders waited after the fault, then the share of
// orders that failed; the first switch's figures come after. The header does
// not show a green "invariants OK" above a run where 40 % of orders failed,
// and a hold's "held" agrees with its own start and end.
func TestOnCallLeadsWithTheWorst(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, worstRun()); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	oncall := html[strings.Index(html, `id="oncall"`):strings.Index(html, "Drill figures")]
	tiles := regexp.MustCompile(`<div class="tile ([a-z]*)"><span>([^<]*)</span><b>([^<]*)</b>`).FindAllStringSubmatch(oncall, -1)
	if len(tiles) < 4 {
		t.Fatalf("on-call tiles: %q", tiles)
	}
	if tl := tiles[0]; tl[1] != "bad" || !strings.Contains(tl[2], "trading halted") || !strings.Contains(tl[3], "3×") {
		t.Errorf("first on-call tile %q, want the halts, in red", tl[1:])
	}
	found := false
	for i, tl := range tiles {
		if strings.Contains(tl[2], "time to detect") {
			if i < 3 {
				t.Errorf("the first switch's figures come before the worst: %q", tiles)
			}
		}
		if strings.Contains(tl[2], "fix orders") && strings.Contains(tl[3], "13.0 s") {
			found = true
			if tl[1] == "good" || tl[1] == "" {
				t.Errorf("FIX orders waiting 13 s after the fault shown as %q", tl[1])
			}
		}
	}
	if !found {
		t.Errorf("no on-call tile says FIX orders waited 13.0 s after the fault: %q", tiles)
	}
	if !strings.Contains(oncall, "40.0%") {
		t.Errorf("on-call does not say 40%% of orders failed")
	}

	h1 := html[strings.Index(html, "<h1>"):strings.Index(html, "</h1>")]
	if strings.Contains(h1, `badge good">invariants`) {
		t.Errorf("header %q: a green invariants badge above a run where 40%% of orders failed", h1)
	}
	if strings.Index(h1, "40.0% of orders failed") > strings.Index(h1, "invariants") {
		t.Errorf("header %q: the failures come after the invariants", h1)
	}

	rows := regexp.MustCompile(`<tr><td class="n">&#43;19\.340s</td><td class="n">&#43;19\.371s</td><td class="n">([^<]*)</td>`).FindStringSubmatch(html)
	if rows == nil {
		t.Fatalf("no hold +19.340 s → +19.371 s in the holds table")
	}
	if rows[1] != "31 ms" {
		t.Errorf("hold +19.340 s → +19.371 s listed as held %q, want 31 ms", rows[1])
	}
}

// Services released one by one: the first switch's hold, and the hold in the
// holds table, end at the last release (the gate's), not at the first
// service's.
func TestHoldEndsAtTheLastServiceRelease(t *testing.T) {
	in := synthetic("eu", "us")
	i := slices.IndexFunc(in.Events, func(e pathdialer.Event) bool { return e.Kind == pathdialer.EventRelease })
	in.Events = slices.Insert(in.Events, i, pathdialer.Event{Kind: pathdialer.EventRelease, Time: at(2450 * time.Millisecond),
		Endpoint: "us", Service: "rest", Duration: 150 * time.Millisecond})
	f := Compute(in)
	if f.OnCall.Held != 300*time.Millisecond {
		t.Errorf("first switch held %v, want 300 ms (the last service released)", f.OnCall.Held)
	}
	if len(f.Holds) == 0 || f.Holds[0].End != 2600*time.Millisecond {
		t.Errorf("holds %+v, want the first to end at +2.6 s", f.Holds)
	}
}

// The on-call counts agree with the run's own events: an order the Path asks
// the broker about again (a second attempt, a provisional NOT_RECEIVED
// settled later) is one order checked, with its last fate; and the time spent
// checking is the slowest service's, with that service's own orders — not the
// first service's count beside another's time.
func TestOnCallCountsAgreeWithEvents(t *testing.T) {
	in := synthetic("eu", "us")
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tickets := func(svc string, ids ...string) []pathdialer.TicketInfo {
		var out []pathdialer.TicketInfo
		for _, id := range ids {
			out = append(out, pathdialer.TicketInfo{OrderID: id, Service: svc})
		}
		return out
	}
	settled := func(svc string, f pathdialer.Fate, prov bool, ids ...string) []pathdialer.Settlement {
		var out []pathdialer.Settlement
		for _, id := range ids {
			out = append(out, pathdialer.Settlement{OrderID: id, Service: svc, Fate: f, Provisional: prov, Final: !prov})
		}
		return out
	}
	// Replace the synthetic run's one reconcile by one per service, as
	// Config.ReconcileByService makes them.
	in.Events = slices.DeleteFunc(in.Events, func(e pathdialer.Event) bool {
		return e.Kind == pathdialer.EventReconcileStart || e.Kind == pathdialer.EventReconcileSuccess
	})
	i := slices.IndexFunc(in.Events, func(e pathdialer.Event) bool { return e.Kind == pathdialer.EventRelease })
	in.Events = slices.Insert(in.Events, i,
		pathdialer.Event{Kind: pathdialer.EventReconcileStart, Time: at(ms(2400)), Service: ""},
		pathdialer.Event{Kind: pathdialer.EventReconcileSuccess, Time: at(ms(2410)), Service: ""},
		pathdialer.Event{Kind: pathdialer.EventReconcileStart, Time: at(ms(2400)), Service: "rest", Tickets: tickets("rest", "R7", "R8")},
		pathdialer.Event{Kind: pathdialer.EventReconcileSuccess, Time: at(ms(2420)), Service: "rest",
			Settlements: settled("rest", pathdialer.FateNotReceived, true, "R7", "R8")},
		pathdialer.Event{Kind: pathdialer.EventReconcileStart, Time: at(ms(2400)), Service: "fix", Tickets: tickets("fix", "F7", "F8", "F9", "F10")},
		pathdialer.Event{Kind: pathdialer.EventReconcileFailure, Time: at(ms(2500)), Service: "fix", Attempt: 1, Error: "fix: not logged on to us"},
		pathdialer.Event{Kind: pathdialer.EventReconcileStart, Time: at(ms(2500)), Service: "fix", Attempt: 2, Tickets: tickets("fix", "F7", "F8", "F9", "F10")},
		pathdialer.Event{Kind: pathdialer.EventReconcileSuccess, Time: at(ms(2590)), Service: "fix",
			Settlements: append(settled("fix", pathdialer.FateFilled, false, "F7", "F8", "F9"), settled("fix", pathdialer.FateNotReceived, true, "F10")...)},
	)
	// Later, the provisional verdicts are settled again.
	in.Events = append(in.Events,
		pathdialer.Event{Kind: pathdialer.EventReconcileStart, Time: at(5 * sec), Tickets: append(tickets("rest", "R7", "R8"), tickets("fix", "F10")...)},
		pathdialer.Event{Kind: pathdialer.EventReconcileSuccess, Time: at(ms(5100)),
			Settlements: append(append(settled("rest", pathdialer.FateNotReceived, false, "R7"), settled("rest", pathdialer.FateFilled, false, "R8")...),
				settled("fix", pathdialer.FateNotReceived, false, "F10")...)},
	)
	slices.SortStableFunc(in.Events, func(a, b pathdialer.Event) int { return a.Time.Compare(b.Time) })

	// What the events say: distinct orders per service, each with its last fate.
	last := map[string]map[string]string{}
	for _, e := range in.Events {
		if e.Kind != pathdialer.EventReconcileSuccess {
			continue
		}
		for _, s := range e.Settlements {
			if last[s.Service] == nil {
				last[s.Service] = map[string]string{}
			}
			last[s.Service][s.OrderID] = strings.ReplaceAll(strings.ToLower(s.Fate.String()), "_", " ")
		}
	}
	oc := Compute(in).OnCall
	for _, o := range oc.Orders {
		want := map[string]int{}
		for _, f := range last[o.Transport] {
			want[f]++
		}
		if o.Checked != len(last[o.Transport]) {
			t.Errorf("%s: checked %d, the events settled %d distinct orders", o.Transport, o.Checked, len(last[o.Transport]))
		}
		for f, n := range want {
			if o.Settled[f] != n {
				t.Errorf("%s: %d %s, the events' last fates give %d (%v)", o.Transport, o.Settled[f], f, n, o.Settled)
			}
		}
	}
	want := "checking 4 fix order(s) with the broker on us took 190 ms (1 failed attempt(s): fix: not logged on to us)"
	if !slices.Contains(oc.HeldBecause, want) {
		t.Errorf("held because %q, want %q", oc.HeldBecause, want)
	}
}
