package orderflow

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// NoteLevel says how interesting a client note is: Info notes are always in
// the timeline, Debug notes (every acknowledgement) only in verbose mode.
type NoteLevel int

// Note levels.
const (
	Info NoteLevel = iota
	Debug
)

// Entry is one line of the record: a Path event or a client note.
type Entry struct {
	Time time.Time
	// Event is set for Path events.
	Event *pathdialer.Event
	// Note is set for client notes (Source says who: "rest", "fix", "ws",
	// "scenario", "client").
	Note   string
	Source string
	Level  NoteLevel
}

// Recorder keeps every Path event with its time (not only the last 64 that a
// Snapshot holds) and the client's own notes, and prints them as a timeline.
// Chain OnEvent into pathdialer.Config.OnEvent (the Client does). Safe for
// concurrent use.
type Recorder struct {
	mu      sync.Mutex
	start   time.Time
	entries []Entry
}

// NewRecorder returns a Recorder whose timeline counts from now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Start returns the time the timeline counts from.
func (r *Recorder) Start() time.Time { return r.start }

// OnEvent records one Path event.
func (r *Recorder) OnEvent(e pathdialer.Event) {
	r.mu.Lock()
	r.entries = append(r.entries, Entry{Time: e.Time, Event: &e})
	r.mu.Unlock()
}

// Note records a client note.
func (r *Recorder) Note(level NoteLevel, source, format string, a ...any) {
	r.mu.Lock()
	r.entries = append(r.entries, Entry{Time: time.Now(), Note: fmt.Sprintf(format, a...), Source: source, Level: level})
	r.mu.Unlock()
}

// Entries returns a copy of everything recorded, in recording order.
func (r *Recorder) Entries() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Entry(nil), r.entries...)
}

// Events returns the recorded Path events of the given kinds (all when none).
func (r *Recorder) Events(kinds ...pathdialer.EventKind) []pathdialer.Event {
	var out []pathdialer.Event
	for _, e := range r.Entries() {
		if e.Event == nil {
			continue
		}
		if len(kinds) == 0 {
			out = append(out, *e.Event)
			continue
		}
		for _, k := range kinds {
			if e.Event.Kind == k {
				out = append(out, *e.Event)
				break
			}
		}
	}
	return out
}

// Rel renders t relative to the start of the timeline, "+12.345s".
func (r *Recorder) Rel(t time.Time) string {
	return fmt.Sprintf("+%6.3fs", t.Sub(r.start).Seconds())
}

// WriteTimeline prints the timeline. Unless verbose, successful probes, Debug
// notes and repeated identical lines are folded: a run of failed probes of one
// endpoint shows its first failure and a count; a run of identical decisions
// (COOLDOWN_ACTIVE every probe round) shows its first and a count.
func (r *Recorder) WriteTimeline(w io.Writer, verbose bool) {
	entries := r.Entries()
	failing := map[string]int{} // endpoint → failed probes since the first shown
	var lastLine string
	var repeat int
	var repeatAt time.Time
	flush := func() {
		if repeat > 0 {
			fmt.Fprintf(w, "%s   … repeated %d more times, until %s\n", strings.Repeat(" ", 8), repeat, r.Rel(repeatAt))
			repeat = 0
		}
	}
	emit := func(t time.Time, line string) {
		if line == lastLine && !verbose {
			repeat++
			repeatAt = t
			return
		}
		flush()
		lastLine = line
		fmt.Fprintf(w, "%s  %s\n", r.Rel(t), line)
	}
	for _, e := range entries {
		if e.Event == nil {
			if e.Level == Debug && !verbose {
				continue
			}
			emit(e.Time, fmt.Sprintf("%-9s %s", e.Source, e.Note))
			continue
		}
		ev := *e.Event
		if ev.Kind == pathdialer.EventProbe && !verbose {
			if ev.Err != nil {
				if failing[ev.Endpoint] == 0 {
					emit(ev.Time, fmt.Sprintf("%-9s %s probe FAILED: %s", "monitor", ev.Endpoint, shortErr(ev.Err)))
				}
				failing[ev.Endpoint]++
			} else if n := failing[ev.Endpoint]; n > 0 {
				failing[ev.Endpoint] = 0
				emit(ev.Time, fmt.Sprintf("%-9s %s probe ok again (%d probes had failed)", "monitor", ev.Endpoint, n))
			}
			continue
		}
		emit(ev.Time, fmt.Sprintf("%-9s %s", "path", describe(ev)))
	}
	flush()
}

// describe renders a Path event for a human.
func describe(e pathdialer.Event) string {
	switch e.Kind {
	case pathdialer.EventProbe:
		if e.Err != nil {
			return fmt.Sprintf("%s probe FAILED: %s", e.Endpoint, shortErr(e.Err))
		}
		return fmt.Sprintf("%s probe ok (%s)", e.Endpoint, e.Duration.Round(time.Millisecond))
	case pathdialer.EventStateChange:
		return fmt.Sprintf("%s %v → %v%s", e.Endpoint, e.PrevState, e.State, errSuffix(e))
	case pathdialer.EventDecision:
		d := e.Decision
		if d == nil {
			return "decision"
		}
		s := d.Outcome.String()
		switch d.Outcome {
		case engine.FenceRequired:
			s += fmt.Sprintf(" %s → %s: fence %s first", d.From, d.To, d.From)
		case engine.Switched:
			s += fmt.Sprintf(" %s → %s", d.From, d.To)
		case engine.NoTargetAvailable:
			s += fmt.Sprintf(" (active %s is down, nothing eligible: HALT)", d.From)
		case engine.CooldownActive, engine.PrimaryNotStable, engine.FlapSuppressed:
			s = "failback refused: " + s
		}
		if d.Failback {
			s += " [failback]"
		}
		if len(d.Notes) > 0 {
			s += " — " + strings.Join(d.Notes, "; ")
		}
		return s
	case pathdialer.EventHold:
		return "HOLD submissions: " + e.Cause
	case pathdialer.EventFenceStart:
		return fmt.Sprintf("fence %s: start (attempt %d)", e.Endpoint, e.Attempt)
	case pathdialer.EventFenceSuccess:
		return fmt.Sprintf("fence %s: OK in %s (old connections closed, new dials refused)", e.Endpoint, e.Duration.Round(time.Millisecond))
	case pathdialer.EventFenceFailure:
		return fmt.Sprintf("fence %s: FAILED (attempt %d)%s", e.Endpoint, e.Attempt, errSuffix(e))
	case pathdialer.EventSwitch:
		return fmt.Sprintf("SWITCHED %s → %s (generation %d)", e.From, e.To, e.Generation)
	case pathdialer.EventReconcileStart:
		return fmt.Sprintf("reconcile start %s→%s: %d order(s) of unknown fate%s", e.From, e.To, len(e.Tickets), ticketList(e.Tickets))
	case pathdialer.EventReconcileSuccess:
		return fmt.Sprintf("reconcile OK in %s: %s", e.Duration.Round(time.Millisecond), settlementList(e.Settlements))
	case pathdialer.EventReconcileFailure:
		return fmt.Sprintf("reconcile failed (attempt %d, retrying)%s", e.Attempt, errSuffix(e))
	case pathdialer.EventRelease:
		return fmt.Sprintf("RELEASE: submissions flow on %s (held %s)", e.Endpoint, e.Duration.Round(time.Millisecond))
	case pathdialer.EventHalt:
		return "HALT: trading halted, orders refused at once: " + e.Cause
	case pathdialer.EventResume:
		return fmt.Sprintf("RESUME after halt on %s (reconcile before release)", e.Endpoint)
	case pathdialer.EventFlapSuppressed:
		return "FLAP SUPPRESSED: failback suppressed by the flap limiter; a human should look at " + e.Endpoint
	case pathdialer.EventMonitorStale:
		return "monitor stale: " + e.Cause
	case pathdialer.EventUnfence:
		return fmt.Sprintf("unfence %s (active again)", e.Endpoint)
	case pathdialer.EventLateTicket:
		return fmt.Sprintf("late finish of an order already handed to reconciliation: %s", e.String())
	}
	return e.String()
}

func errSuffix(e pathdialer.Event) string {
	if e.Err != nil {
		return ": " + shortErr(e.Err)
	}
	if e.Error != "" {
		return ": " + e.Error
	}
	if e.Cause != "" {
		return ": " + e.Cause
	}
	return ""
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 110 {
		s = s[:107] + "..."
	}
	return s
}

func ticketList(ts []pathdialer.TicketInfo) string {
	if len(ts) == 0 {
		return ""
	}
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s/%s@%s", t.Service, t.OrderID, t.Endpoint))
	}
	return " [" + strings.Join(parts, " ") + "]"
}

func settlementList(ss []pathdialer.Settlement) string {
	if len(ss) == 0 {
		return "nothing to settle"
	}
	by := map[pathdialer.Fate][]string{}
	var order []pathdialer.Fate
	for _, s := range ss {
		if _, ok := by[s.Fate]; !ok {
			order = append(order, s.Fate)
		}
		by[s.Fate] = append(by[s.Fate], s.Service+"/"+s.OrderID)
	}
	parts := make([]string, 0, len(order))
	for _, f := range order {
		parts = append(parts, fmt.Sprintf("%s %s", f, strings.Join(by[f], " ")))
	}
	return strings.Join(parts, "; ")
}
