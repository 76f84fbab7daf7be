package pathdialer_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// OnEvent is called outside every lock of the Path: it may read the Path and even
// acquire tickets. Events arrive in the order they happened, none missing (the
// non-probe tail equals Snapshot.Events).
func TestOnEventMayCallThePathAndSeesOrderedEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			p        *pathdialer.Path
			mu       sync.Mutex
			problems []string
			acquired []string
		)
		problem := func(s string) { mu.Lock(); problems = append(problems, s); mu.Unlock() }
		h := newHarness(t, nil)
		defer h.close()
		p = h.p
		h.rec.also = func(e pathdialer.Event) {
			s := p.Snapshot()
			_, _ = p.Active()
			_, _ = p.GateState()
			_ = p.Unknown()
			_ = p.Fenced("eu")
			switch e.Kind {
			case pathdialer.EventHold:
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				if _, err := p.Acquire(ctx, pathdialer.ServiceREST, "from-hook-held"); err == nil {
					problem("Acquire granted from OnEvent while held")
				}
			case pathdialer.EventRelease:
				if s.Gate != pathdialer.GateOpen {
					problem("snapshot at release: gate " + s.Gate.String())
				}
				tk, err := p.Acquire(context.Background(), pathdialer.ServiceREST, "from-hook-"+e.Endpoint)
				if err != nil {
					problem("Acquire from OnEvent at release: " + err.Error())
					return
				}
				mu.Lock()
				acquired = append(acquired, tk.Endpoint)
				mu.Unlock()
				tk.Done()
			}
		}
		h.start()
		mustAcquire(t, h.p, "o-1") // in flight: the switch waits InflightGrace for it, held
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, nil)
		<-time.After(5 * time.Second)

		mu.Lock()
		if len(problems) > 0 {
			t.Errorf("problems: %v", problems)
		}
		if !slices.Equal(acquired, []string{"us"}) {
			t.Errorf("acquired from the hook on %v, want [us]", acquired)
		}
		mu.Unlock()

		evs := h.rec.all()
		for i := 1; i < len(evs); i++ {
			if evs[i].Time.Before(evs[i-1].Time) {
				t.Fatalf("event %d (%v) delivered after a later one (%v)", i, evs[i], evs[i-1])
			}
		}
		var nonProbe []pathdialer.Event
		for _, e := range evs {
			if e.Kind != pathdialer.EventProbe {
				nonProbe = append(nonProbe, e)
			}
		}
		hist := p.Snapshot().Events
		if len(hist) == 0 || len(hist) > len(nonProbe) {
			t.Fatalf("snapshot holds %d events, %d delivered", len(hist), len(nonProbe))
		}
		tail := nonProbe[len(nonProbe)-len(hist):]
		for i := range hist {
			if hist[i].Kind != tail[i].Kind || !hist[i].Time.Equal(tail[i].Time) || hist[i].String() != tail[i].String() {
				t.Fatalf("delivered events differ from the recorded history at %d: %v vs %v", i, tail[i], hist[i])
			}
		}
	})
}

// The hook may be slow: events queue (none dropped) and the Path goes on.
func TestSlowOnEventDoesNotStallThePath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		block := make(chan struct{})
		h := newHarness(t, nil)
		defer h.close()
		var once sync.Once
		h.rec.also = func(pathdialer.Event) { once.Do(func() { <-block }) }
		h.start()
		h.probes.set("eu", probeBlackhole)
		// The switch completes while the hook is stuck on the first event.
		for i := 0; gateState(h.p) != pathdialer.GateOpen || func() bool { a, _ := h.p.Active(); return a.Name != "us" }(); i++ {
			if i == 1000 {
				t.Fatal("the Path stalled behind a slow OnEvent")
			}
			<-time.After(100 * time.Millisecond)
		}
		close(block)
		h.await(pathdialer.EventRelease, nil)
	})
}

func TestSnapshotMarshalsStatesAsStrings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.close()
		h.start()
		mustAcquire(t, h.p, "o-1")
		mustAcquire(t, h.p, "o-2").Unknown(errors.New("timeout"))
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventRelease, nil)
		mustAcquire(t, h.p, "o-3") // in flight on us
		b, err := json.Marshal(h.p.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Active    string `json:"active"`
			Token     uint64 `json:"token"`
			Gate      string `json:"gate"`
			InFlight  int    `json:"in_flight"`
			Endpoints []struct {
				Name   string `json:"name"`
				State  string `json:"state"`
				Fenced bool   `json:"fenced"`
				Active bool   `json:"active"`
			} `json:"endpoints"`
			Switches []struct{ Outcome string } `json:"switches"`
			Events   []struct {
				Kind     string `json:"kind"`
				State    string `json:"state"`
				Decision *struct{ Outcome string }
				Tickets  []struct {
					OrderID string `json:"order_id"`
					State   string `json:"state"`
				} `json:"tickets"`
				Settlements []struct {
					Fate string `json:"fate"`
				} `json:"settlements"`
			} `json:"events"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		if s.Active != "us" || s.Token != 1 || s.Gate != "OPEN" || s.InFlight != 1 {
			t.Errorf("snapshot head: %+v", s)
		}
		if len(s.Endpoints) != 2 || s.Endpoints[0].Name != "eu" || s.Endpoints[0].State != "DOWN" || !s.Endpoints[0].Fenced ||
			s.Endpoints[1].State != "HEALTHY" || !s.Endpoints[1].Active {
			t.Errorf("endpoints: %+v", s.Endpoints)
		}
		if len(s.Switches) != 1 || s.Switches[0].Outcome != "SWITCHED" {
			t.Errorf("switches: %+v", s.Switches)
		}
		kinds := map[string]bool{}
		for _, e := range s.Events {
			kinds[e.Kind] = true
			if e.Kind == "state" && e.State != "DEGRADED" && e.State != "DOWN" && e.State != "HEALTHY" {
				t.Errorf("state event with state %q", e.State)
			}
			if e.Kind == "reconcile-start" {
				got := map[string]string{}
				for _, tk := range e.Tickets {
					got[tk.OrderID] = tk.State
				}
				if got["o-1"] != "IN_FLIGHT" || got["o-2"] != "UNKNOWN" {
					t.Errorf("reconcile tickets in JSON: %v", got)
				}
			}
			if e.Kind == "reconcile-ok" && (len(e.Settlements) != 2 || e.Settlements[0].Fate != "NOT_RECEIVED") {
				t.Errorf("settlements in JSON: %+v", e.Settlements)
			}
		}
		for _, k := range []string{"decision", "hold", "fence-start", "fence-ok", "switch", "reconcile-start", "reconcile-ok", "release"} {
			if !kinds[k] {
				t.Errorf("no %q event in the snapshot JSON:\n%s", k, b)
			}
		}
		if strings.Contains(string(b), `"kind":"probe"`) {
			t.Error("probe results in the snapshot history")
		}
	})
}

func TestStringers(t *testing.T) {
	cases := []struct {
		got, want string
	}{
		{pathdialer.GateHeld.String(), "HELD"},
		{pathdialer.GateState(99).String(), "GateState(99)"},
		{pathdialer.TicketHanded.String(), "HANDED"},
		{pathdialer.TicketState(-1).String(), "TicketState(-1)"},
		{pathdialer.FateFilled.String(), "FILLED"},
		{pathdialer.Fate(42).String(), "Fate(42)"},
		{pathdialer.EventFenceSuccess.String(), "fence-ok"},
		{pathdialer.EventLateTicket.String(), "late-ticket"},
		{pathdialer.EventKind(99).String(), "EventKind(99)"},
		{pathdialer.Event{Kind: pathdialer.EventSwitch, From: "eu", To: "us", Token: 1, Cause: "failover"}.String(), "switch eu→us gen=1: failover"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// Several goroutines report on one endpoint while probes run: every event is
// numbered without a gap, Time never goes backwards, and each endpoint's
// state-change events chain (PrevState equals the previous one's State).
func TestEventsNumberedTimedAndChainedUnderConcurrentReports(t *testing.T) {
	h := newHarness(t, func(c *pathdialer.Config) {
		c.ProbeInterval = 2 * time.Millisecond
		c.ProbeTimeout = time.Millisecond
		c.Engine.FailureThreshold = 2
		c.Engine.DegradedLatency = 50 * time.Microsecond
	})
	defer h.close()
	h.start()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				var err error
				lat := time.Duration(i%3) * 40 * time.Microsecond
				if (i+w)%4 == 0 {
					err = errReset
				}
				h.p.Report("us", 0, err, lat)
			}
		}()
	}
	wg.Wait()
	_ = h.p.Close()
	evs := h.rec.all()
	last := map[string]pathdialer.Event{}
	changes := 0
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has Seq %d (want %d): %v", i, e.Seq, i+1, e)
		}
		if i > 0 && e.Time.Before(evs[i-1].Time) {
			t.Fatalf("event %d (%v) at %v is before event %d at %v", e.Seq, e, e.Time, evs[i-1].Seq, evs[i-1].Time)
		}
		if e.Kind != pathdialer.EventStateChange {
			continue
		}
		changes++
		if prev, ok := last[e.Endpoint]; ok && prev.State != e.PrevState {
			t.Fatalf("state changes of %s do not chain: #%d %v→%v, then #%d %v→%v", e.Endpoint, prev.Seq, prev.PrevState, prev.State, e.Seq, e.PrevState, e.State)
		}
		last[e.Endpoint] = e
	}
	if changes < 20 {
		t.Fatalf("only %d state changes: the test proves nothing", changes)
	}
}

// Snapshot never shows credentials carried in a service address.
func TestSnapshotRedactsAddresses(t *testing.T) {
	h := newHarness(t, func(c *pathdialer.Config) {
		eu := epEU
		eu.Services = map[string]string{"rest": "https://api-eu.broker.example/v1?token=s3cret#s3cret", "ws": "wss://stream-eu.broker.example/ws?token=s3cret", "fix": "fix-eu.broker.example:9878"}
		us := epUS
		us.Services = map[string]string{"rest": "https://api-us.broker.example", "ws": "wss://stream-us.broker.example/ws", "fix": "fix-us.broker.example:9878"}
		c.Endpoints = []pathdialer.Endpoint{eu, us}
	})
	defer h.close()
	b, err := json.Marshal(h.p.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cret") {
		t.Fatalf("snapshot leaks a credential: %s", b)
	}
	for _, want := range []string{"https://api-eu.broker.example/v1?REDACTED", "wss://stream-eu.broker.example/ws?REDACTED", "fix-eu.broker.example:9878"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("snapshot does not show %q: %s", want, b)
		}
	}
	// The Path itself keeps the addresses as configured, for the transports.
	if ep, _ := h.p.Endpoint("eu"); !strings.Contains(ep.Services["ws"], "token=s3cret") {
		t.Errorf("Endpoint(eu) lost its configured address")
	}
}
