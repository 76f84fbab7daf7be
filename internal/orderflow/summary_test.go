package orderflow_test

import (
	"bytes"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/orderflow"
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
