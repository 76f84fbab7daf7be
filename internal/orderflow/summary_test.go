package orderflow_test

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// Each service is released on its own: the summary says how long each
// service's orders were held, and a switch's hold is the longest of them (REST
// released after 100 ms, FIX after 2.64 s: held 2.64 s, not 100 ms).
func TestSummarySaysEachServiceHold(t *testing.T) {
	h := cleanHistory()
	var evs []pathdialer.Event
	for _, e := range h.Events {
		switch e.Kind {
		case pathdialer.EventReconcileSuccess, pathdialer.EventRelease:
			continue
		}
		evs = append(evs, e)
	}
	evs = append(evs,
		pathdialer.Event{Kind: pathdialer.EventReconcileSuccess, Time: at(1100), Service: "rest", Duration: 100 * time.Millisecond},
		pathdialer.Event{Kind: pathdialer.EventRelease, Time: at(1100), Endpoint: "us", Service: "rest", Duration: 160 * time.Millisecond},
		pathdialer.Event{Kind: pathdialer.EventReconcileSuccess, Time: at(3580), Service: "fix", Duration: 2580 * time.Millisecond},
		pathdialer.Event{Kind: pathdialer.EventRelease, Time: at(3580), Endpoint: "us", Duration: 2640 * time.Millisecond},
	)
	h.Events = evs
	sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
	if len(sum.Switches) != 1 {
		t.Fatalf("switches %+v", sum.Switches)
	}
	if sw := sum.Switches[0]; sw.Held != 2640*time.Millisecond {
		t.Errorf("held %v, want 2.64 s (the last service released)", sw.Held)
	}
	var out bytes.Buffer
	sum.Write(&out)
	for _, want := range []string{"orders held 2.64 s", "rest 160 ms (reconcile 100 ms)", "fix 2.64 s (reconcile 2.58 s)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

var (
	rawDurationRE = regexp.MustCompile(`\d\.\d{4,}(s|ms|µs)`)
	stampRE       = regexp.MustCompile(`^\+\s*([0-9.]+)s `)
)

// The timeline reads top to bottom in time, never cuts a word, and shows no
// raw Go duration.
func TestTimelineInOrderWholeWordsRoundDurations(t *testing.T) {
	r := orderflow.NewRecorder()
	base := time.Now()
	// An event stamped after the note that follows it in the recording.
	r.OnEvent(pathdialer.Event{Kind: pathdialer.EventHold, Time: base.Add(2 * time.Second), Cause: "fencing"})
	r.Note(orderflow.Info, "scenario", "FAULT eu: blackhole")
	long := errors.New(`Get "https://broker.invalid/v1/account": rest: read on endpoint "eu": read tcp 127.0.0.1:41290->127.0.0.1:39735: use of closed network connection`)
	r.OnEvent(pathdialer.Event{Kind: pathdialer.EventProbe, Time: base.Add(2100 * time.Millisecond), Endpoint: "eu", Err: long})
	r.OnEvent(pathdialer.Event{Kind: pathdialer.EventDecision, Time: base.Add(2200 * time.Millisecond), Decision: &engine.Decision{
		Outcome: engine.CooldownActive, Failback: true, Notes: []string{"cooldown: 1.832453421s of 3s since the last switch", "held 59.999989635s"}}})
	var w bytes.Buffer
	r.WriteTimeline(&w, false)
	out := w.String()
	var last float64 = -1
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(l); n > 120 {
			t.Errorf("line of %d characters (wrap at a space instead):\n%s", n, l)
		}
		if strings.HasSuffix(l, "...") || strings.HasSuffix(l, "…") {
			t.Errorf("line cut:\n%s", l)
		}
		if !strings.HasPrefix(l, "+") {
			continue // a continuation
		}
		m := stampRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("no time on %q", l)
		}
		s, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		if s < last {
			t.Errorf("the timeline goes backwards at:\n%s\n%s", l, out)
		}
		last = s
	}
	joined := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(joined, "use of closed network connection") {
		t.Errorf("the probe error lost its end:\n%s", out)
	}
	if m := rawDurationRE.FindString(out); m != "" {
		t.Errorf("raw duration %q:\n%s", m, out)
	}
	if !strings.Contains(joined, "1.83 s of 3 s") || !strings.Contains(joined, "60.00 s") && !strings.Contains(joined, "1 min 0 s") {
		t.Errorf("durations not rounded for a reader:\n%s", out)
	}
}

// The summary leads with the result and the worst of the run, each figure as
// the run's own record gives it (halts from the Path's events, late landings
// and repeated submissions from the broker's book); a repeat's explanation is
// on the line that counts it, beside "booked twice"; and an order both
// NOT_RECEIVED and booked is said to be a late landing.
func TestSummaryLeadsWithTheWorst(t *testing.T) {
	h := cleanHistory()
	// F3: found NOT_RECEIVED provisionally, then booked through the fenced eu.
	h.Orders = append(h.Orders, orderflow.OrderRecord{ClOrdID: "F3", Transport: "fix", PlacedAt: at(935), AttemptAt: at(935),
		Sent: true, Unknown: true, Settled: true, Fate: pathdialer.FateFilled, SettledAt: at(1600),
		Attempts: []orderflow.Attempt{{At: at(935), Sent: true}},
		Verdicts: []orderflow.Verdict{{At: at(1100), Fate: pathdialer.FateNotReceived, Source: "reconcile"},
			{At: at(1600), Fate: pathdialer.FateFilled, Final: true, Region: "eu", Source: "late landing"}}})
	bookIn(&h, 1500, "eu", "fix", "eu/fix/1", "F3", simbroker.OutcomeNew)
	// R3's first copy reached eu, which could not take it (503); its re-send was booked on us.
	bookIn(&h, 925, "eu", "rest", "eu/rest/1", "R3", simbroker.OutcomeUnavailable)
	// A halt for want of a target, later.
	h.Events = append(h.Events,
		pathdialer.Event{Kind: pathdialer.EventDecision, Time: at(2000), Decision: &engine.Decision{Outcome: engine.NoTargetAvailable, From: "us"}},
		pathdialer.Event{Kind: pathdialer.EventHalt, Time: at(2000), Cause: "no endpoint eligible"},
		pathdialer.Event{Kind: pathdialer.EventResume, Time: at(2500), Endpoint: "us"},
		pathdialer.Event{Kind: pathdialer.EventRelease, Time: at(2500), Endpoint: "us", Duration: 500 * time.Millisecond},
	)
	renumber(&h)

	// The run's own record.
	halts := 0
	for _, e := range h.Events {
		if e.Kind == pathdialer.EventHalt {
			halts++
		}
	}
	subs := map[string]int{}
	for _, r := range h.Audit {
		if r.Kind == simbroker.KindOrder {
			subs[r.ClientOrderID]++
		}
	}
	repeats := 0
	for _, n := range subs {
		if n > 1 {
			repeats++
		}
	}
	if halts != 1 || repeats != 1 {
		t.Fatalf("the history has %d halts and %d repeats; the test wants 1 and 1", halts, repeats)
	}

	sum := orderflow.CheckHistory(h, orderflow.CheckOptions{})
	var out bytes.Buffer
	sum.Write(&out)
	lines := strings.Split(out.String(), "\n")
	if lines[0] != "SUMMARY" || !strings.HasPrefix(strings.TrimSpace(lines[1]), "RESULT: OK") {
		t.Errorf("the summary does not lead with its result:\n%s", strings.Join(lines[:min(4, len(lines))], "\n"))
	}
	head := strings.Join(lines[:min(6, len(lines))], "\n")
	for _, want := range []string{fmt.Sprintf("trading halted %d×", halts), "1 late landing(s) through fenced eu: 1 reported"} {
		if !strings.Contains(head, want) {
			t.Errorf("the summary's first lines lack %q:\n%s", want, head)
		}
	}
	var repLine, provLine string
	for _, l := range lines {
		if strings.Contains(l, "submitted more than once") && strings.Contains(l, "booked twice") && strings.HasPrefix(l, "       ") && repLine == "" && strings.Contains(l, "submitted more than once 1") {
			repLine = l
		}
		if strings.Contains(l, "were provisional") && strings.Contains(l, "fix") || strings.Contains(l, "were provisional") && provLine == "" && strings.Contains(l, "late landing") {
			provLine = l
		}
	}
	if !strings.Contains(repLine, "1 re-sent with the same ID after a NOT_RECEIVED verdict") {
		t.Errorf("the repeat is not explained on its own line: %q\n%s", repLine, out.String())
	}
	if !strings.Contains(provLine, "1 booked after all through the fenced region: late landing") {
		t.Errorf("an order NOT_RECEIVED then booked is not said to be a late landing: %q\n%s", provLine, out.String())
	}

	// A failed run: the result and its first violation lead.
	h2 := cleanHistory()
	bookIn(&h2, 1300, "us", "rest", "us/rest/1", "R4", simbroker.OutcomeNew) // R4 booked twice
	renumber(&h2)
	sum2 := orderflow.CheckHistory(h2, orderflow.CheckOptions{})
	if sum2.OK() {
		t.Fatal("a second booking of R4 passed")
	}
	out.Reset()
	sum2.Write(&out)
	lines = strings.Split(out.String(), "\n")
	if !strings.HasPrefix(strings.TrimSpace(lines[1]), "RESULT: FAILED") || !strings.Contains(lines[2], "✗ "+sum2.Violations[0]) {
		t.Errorf("a failed run does not lead with its result and first violation:\n%s", strings.Join(lines[:min(4, len(lines))], "\n"))
	}
}
