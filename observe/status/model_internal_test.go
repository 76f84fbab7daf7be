package status

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

func TestHumanDurations(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 ms"}, {400 * time.Microsecond, "0.4 ms"}, {67893113 * time.Nanosecond, "68 ms"},
		{time.Second, "1 s"}, {1260 * time.Millisecond, "1.3 s"}, {2228 * time.Millisecond, "2.2 s"},
		{12 * time.Second, "12 s"}, {time.Minute, "1 m"}, {125 * time.Second, "2 m 5 s"},
		{time.Hour, "1 h"}, {63 * time.Minute, "1 h 3 m"},
	} {
		if got := human(c.d); got != c.want {
			t.Errorf("human(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// A failover as the Path reports it: two failed probes 250 ms apart, eu DOWN,
// the fence, the switch 68 ms after DOWN, two REST orders and one FIX order
// handed to reconciliation, release after 2.2 s. The report leads with those
// figures, in one unit.
func TestRecorderTimesASwitch(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	down := errors.New("connection refused")
	tickets := []pathdialer.TicketInfo{{OrderID: "a", Service: "rest"}, {OrderID: "b", Service: "rest"}, {OrderID: "c", Service: "fix"}}
	rec := NewRecorder()
	for _, e := range []pathdialer.Event{
		{Kind: pathdialer.EventProbe, Time: at(-250), Endpoint: "eu"},
		{Kind: pathdialer.EventProbe, Time: at(0), Endpoint: "eu", Err: down, Error: down.Error()},
		{Kind: pathdialer.EventStateChange, Time: at(0), Endpoint: "eu", PrevState: engine.Healthy, State: engine.Degraded},
		{Kind: pathdialer.EventProbe, Time: at(250), Endpoint: "eu", Err: down, Error: down.Error()},
		{Kind: pathdialer.EventStateChange, Time: at(250), Endpoint: "eu", PrevState: engine.Degraded, State: engine.Down},
		{Kind: pathdialer.EventDecision, Time: at(251), Decision: &engine.Decision{Outcome: engine.FenceRequired, From: "eu", To: "us"}},
		{Kind: pathdialer.EventHold, Time: at(251), Endpoint: "eu", Cause: "failover from eu to us: fencing"},
		{Kind: pathdialer.EventFenceStart, Time: at(252), Endpoint: "eu", Attempt: 1},
		{Kind: pathdialer.EventFenceSuccess, Time: at(300), Endpoint: "eu"},
		{Kind: pathdialer.EventSwitch, Time: at(318), From: "eu", To: "us", Token: 1},
		{Kind: pathdialer.EventHold, Time: at(318), Endpoint: "us", Cause: "waiting for FIX logon on us"},
		{Kind: pathdialer.EventReconcileStart, Time: at(400), From: "eu", To: "us", Tickets: tickets},
		{Kind: pathdialer.EventReconcileFailure, Time: at(1400), Error: "fix: reconcile incomplete: not logged on", Attempt: 1},
		{Kind: pathdialer.EventReconcileSuccess, Time: at(2400), Settlements: []pathdialer.Settlement{
			{OrderID: "a", Service: "rest", Fate: pathdialer.FateFilled}, {OrderID: "b", Service: "rest", Fate: pathdialer.FateNotReceived},
			{OrderID: "c", Service: "fix", Fate: pathdialer.FateFilled}}},
		{Kind: pathdialer.EventRelease, Time: at(2479), Endpoint: "us", Duration: 2228 * time.Millisecond},
		{Kind: pathdialer.EventDecision, Time: at(3000), Decision: &engine.Decision{Outcome: engine.PrimaryNotStable, From: "us", To: "eu", Failback: true}},
	} {
		rec.OnEvent(e)
	}
	snap := pathdialer.Snapshot{Time: at(3000), Active: "us", Token: 1, Gate: pathdialer.GateOpen, Endpoints: []pathdialer.EndpointSnapshot{
		{Endpoint: pathdialer.Endpoint{Name: "eu", Primary: true}, State: engine.Down, Fenced: true, LastSuccessAge: -1},
		{Endpoint: pathdialer.Endpoint{Name: "us", Priority: 1}, State: engine.Healthy, Active: true, LastSuccess: at(2900), LastSuccessAge: 100 * time.Millisecond},
	}}
	r := build(sources{snap: snap, engine: engine.DefaultConfig(), opts: Options{JSONURL: "status.json"}, rec: rec})
	ls := r.LastSwitch
	if ls == nil {
		t.Fatal("no last switch")
	}
	if ls.TimeToDetect == nil || *ls.TimeToDetect != 250 || ls.TimeToSwitch == nil || *ls.TimeToSwitch != 68 || ls.Held == nil || *ls.Held != 2228 {
		t.Errorf("detect %v switch %v held %v, want 250, 68, 2228 ms", deref(ls.TimeToDetect), deref(ls.TimeToSwitch), deref(ls.Held))
	}
	if want := []string{"failover from eu to us: fencing", "waiting for FIX logon on us", "cutting eu off took 48 ms",
		"checking 3 order(s) with the broker took 2 s (1 failed attempt(s): fix: reconcile incomplete: not logged on)"}; !slices.Equal(ls.HeldWhy, want) {
		t.Errorf("held because:\n%q\nwant\n%q", ls.HeldWhy, want)
	}
	if ls.Kind != "failover" || ls.InProgress || ls.Reconciled["rest"] != 2 || ls.Reconciled["fix"] != 1 ||
		ls.Settled["rest"]["not_received"] != 1 || ls.Settled["fix"]["filled"] != 1 {
		t.Errorf("last switch: %+v", *ls)
	}
	if r.Failback.State != "waiting_for_recovery" || r.Failback.Text != "waiting for eu to recover (DOWN)" {
		t.Errorf("failback: %+v", r.Failback)
	}

	v := newView(Options{}, r, 5*time.Second)
	if v.Last.Detect != "250 ms" || v.Last.Switch != "68 ms" || v.Last.Held != "2.2 s" || v.Last.Reconciled != "fix 1 (1 filled); rest 2 (1 filled, 1 not received)" {
		t.Errorf("view: %+v", *v.Last)
	}

	// JSON: snake_case keys only, durations only as _ms, no unset time.
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	checkJSONStyle(t, raw)
	if strings.Contains(string(raw), `"verified_at"`) {
		t.Errorf("unset verified_at in the JSON: %s", raw)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkJSONStyle fails on a key that is not snake_case, a duration key
// without the _ms suffix, and a zero time.
func checkJSONStyle(t *testing.T, raw []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if !snakeKey.MatchString(k) {
					t.Errorf("JSON key %s.%s is not snake_case", path, k)
				}
				for _, word := range []string{"duration", "latency", "age", "interval", "held", "silence", "timeout"} {
					if strings.Contains(k, word) && !strings.HasSuffix(k, "_ms") && !strings.HasSuffix(k, "_at") && k != "held_because" {
						t.Errorf("JSON key %s.%s looks like a duration without _ms", path, k)
					}
				}
				walk(path+"."+k, e)
			}
		case []any:
			for _, e := range x {
				walk(path+"[]", e)
			}
		case string:
			if strings.HasPrefix(x, "0001-01-01") {
				t.Errorf("JSON %s is the zero time", path)
			}
		}
	}
	walk("", v)
}

// Ticks counts the sequence numbers a snapshot stood in for, per stream, and
// the longest silence between two messages of one stream.
func TestTicksCountsMissedAndSilence(t *testing.T) {
	tk := NewTicks()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tk.now = func() time.Time { return now }
	var seen []uint64
	h := tk.Wrap(func(m ws.Message) { seen = append(seen, m.Seq) })
	for _, m := range []struct {
		stream string
		seq    uint64
		gap    time.Duration
	}{{"a", 1, 0}, {"b", 10, 0}, {"a", 2, 100 * time.Millisecond}, {"a", 6, 1500 * time.Millisecond}, {"b", 11, 10 * time.Millisecond}, {"a", 7, 100 * time.Millisecond}} {
		now = now.Add(m.gap)
		h(ws.Message{Stream: m.stream, Seq: m.seq, Snapshot: m.seq == 6})
	}
	c := tk.Counts()
	if c.Messages != 6 || c.Missed != 3 || c.LongestSilence != 1610*time.Millisecond || len(seen) != 6 {
		t.Errorf("counts %+v, handler saw %v", c, seen)
	}
}
