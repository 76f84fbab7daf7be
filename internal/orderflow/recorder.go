package orderflow

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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
	// Order is the client order ID a note is about ("" for none).
	Order string
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

// NoteOrder records a client note about one order: the timeline folds the
// same note about several orders into one line.
func (r *Recorder) NoteOrder(level NoteLevel, source, order, format string, a ...any) {
	r.mu.Lock()
	r.entries = append(r.entries, Entry{Time: time.Now(), Note: fmt.Sprintf(format, a...), Source: source, Level: level, Order: order})
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

// WriteTimeline prints the timeline, one line per thing that happened.
// Unless verbose, it folds what would repeat: successful probes and Debug
// notes are left out; a run of failed probes of one endpoint shows its first
// failure and, when the endpoint answers again, a count; the same note about
// several orders within a short span (outcome UNKNOWN, re-sending) is one line
// listing the orders; a late finish of an order already handed to
// reconciliation is shown once per order; a decision to switch is shown by
// its SWITCHED line; and a RELEASE names what held the orders and for how
// long. Lines are in time order, durations are rounded for a reader, and a
// line longer than timelineWidth is wrapped at spaces, never cut.
func (r *Recorder) WriteTimeline(w io.Writer, verbose bool) {
	for _, l := range r.timeline(verbose) {
		stamp := r.Rel(l.t)
		indent := strings.Repeat(" ", utf8.RuneCountInString(stamp)+2+10) // under the text, past the source column
		for i, part := range wrap(roundDurations(l.text), timelineWidth-utf8.RuneCountInString(stamp)-2, 10) {
			if i == 0 {
				fmt.Fprintf(w, "%s  %s\n", stamp, part)
			} else {
				fmt.Fprintf(w, "%s%s\n", indent, part)
			}
		}
	}
}

// timelineWidth is the widest a timeline line gets before it wraps.
const timelineWidth = 118

// wrap breaks text at spaces into lines of at most width runes; lines after
// the first are hang runes narrower (they are indented by the caller). A
// word longer than a line is kept whole.
func wrap(text string, width, hang int) []string {
	var lines []string
	line, w := "", width
	for _, word := range strings.Split(text, " ") {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= w:
			line += " " + word
		default:
			lines = append(lines, line)
			line, w = word, width-hang
		}
	}
	return append(lines, line)
}

// goDurationRE matches a duration as Go prints it: 1.832453421s, 250ms,
// 1m59.999989635s.
var goDurationRE = regexp.MustCompile(`\b(?:\d+h)?(?:\d+m)?\d+(?:\.\d+)?(?:ms|µs|ns|s)\b`)

// roundDurations rewrites the Go durations in text for a reader ("1.83 s",
// "250 ms").
func roundDurations(text string) string {
	return goDurationRE.ReplaceAllStringFunc(text, func(m string) string {
		d, err := time.ParseDuration(m)
		if err != nil {
			return m
		}
		if d >= time.Second {
			d = d.Round(10 * time.Millisecond)
		}
		return human(d)
	})
}

type tline struct {
	t    time.Time
	text string
	// tmpl is text with the order ID replaced by {id}; id the order.
	tmpl, id string
}

// foldWindow is how close in time notes about different orders must be to be
// folded into one line.
const foldWindow = 300 * time.Millisecond

var quotedOrderRE = regexp.MustCompile(`order "[^"]*"`)

var lateOrderRE = regexp.MustCompile(`order "([^"]+)" finished \((.*)\) after it was handed to reconciliation`)

func (r *Recorder) timeline(verbose bool) []tline {
	entries := r.Entries()
	var lines []tline
	add := func(t time.Time, source, text, id string) {
		l := tline{t: t, text: fmt.Sprintf("%-9s %s", source, text)}
		if id != "" && !verbose {
			l.tmpl, l.id = strings.Replace(l.text, id, "{id}", 1), id
		}
		lines = append(lines, l)
	}
	failing := map[string]int{} // endpoint → failed probes since the first shown
	lateSeen := map[string]bool{}
	hc := holdCauses{}
	for _, e := range entries {
		if e.Event == nil {
			if e.Level == Debug && !verbose {
				continue
			}
			hc.note(e)
			add(e.Time, e.Source, e.Note, e.Order)
			continue
		}
		ev := *e.Event
		hc.event(ev)
		if verbose {
			add(ev.Time, "path", describe(ev), "")
			continue
		}
		switch ev.Kind {
		case pathdialer.EventProbe:
			if ev.Err != nil {
				if failing[ev.Endpoint] == 0 {
					add(ev.Time, "monitor", fmt.Sprintf("%s probe FAILED: %s", ev.Endpoint, shortErr(ev.Err)), "")
				}
				failing[ev.Endpoint]++
			} else if n := failing[ev.Endpoint]; n > 0 {
				failing[ev.Endpoint] = 0
				add(ev.Time, "monitor", fmt.Sprintf("%s probe ok again (%d probes had failed)", ev.Endpoint, n), "")
			}
			continue
		case pathdialer.EventRestingCancelled:
			// One line per order, folded with its neighbours; -v has the cause.
			add(ev.Time, "path", fmt.Sprintf("resting-cancelled %s→%s order %s (%s): cancelled by the switch", ev.From, ev.To, ev.OrderID, ev.Service), ev.OrderID)
			continue
		case pathdialer.EventDecision:
			if ev.Decision != nil && ev.Decision.Outcome == engine.Switched {
				continue // the SWITCHED event says it, with the generation
			}
		case pathdialer.EventLateTicket:
			m := lateOrderRE.FindStringSubmatch(ev.Cause)
			if m == nil {
				break
			}
			if ev.OrderID != "" {
				m[1] = ev.OrderID
			}
			if lateSeen[m[1]] {
				continue
			}
			lateSeen[m[1]] = true
			why := quotedOrderRE.ReplaceAllString(m[2], "the order")
			add(ev.Time, "path", fmt.Sprintf("order %s finished late on %s (%s), after it was handed to reconciliation: reconcile decides its fate", m[1], ev.Endpoint, shortErr(errors.New(why))), m[1])
			continue
		case pathdialer.EventRelease:
			add(ev.Time, "path", describe(ev)+hc.explain(ev), "")
			continue
		}
		add(ev.Time, "path", describe(ev), "")
	}
	// In time order: an event carries the time it happened, a note the time
	// it was recorded, and the two arrive interleaved.
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].t.Before(lines[j].t) })
	if verbose {
		return lines
	}
	// Fold: the same line about several orders within foldWindow.
	used := make([]bool, len(lines))
	var out []tline
	for i, l := range lines {
		if used[i] {
			continue
		}
		used[i] = true
		if l.id == "" {
			out = append(out, l)
			continue
		}
		ids := []string{l.id}
		for j := i + 1; j < len(lines) && lines[j].t.Sub(l.t) <= foldWindow; j++ {
			if !used[j] && lines[j].tmpl == l.tmpl {
				used[j] = true
				ids = append(ids, lines[j].id)
			}
		}
		if len(ids) == 1 {
			out = append(out, l)
			continue
		}
		list := idList(ids)
		text := strings.Replace(l.tmpl, "order {id}", "orders "+list, 1)
		text = strings.Replace(text, "{id}", list, 1)
		out = append(out, tline{t: l.t, text: text})
	}
	// Identical consecutive lines: the first and a count.
	var folded []tline
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && out[j].text == out[i].text {
			j++
		}
		folded = append(folded, out[i])
		if n := j - i - 1; n > 0 {
			folded = append(folded, tline{t: out[j-1].t, text: fmt.Sprintf("%-9s … the line above repeated %d more time(s), until %s", "", n, r.Rel(out[j-1].t))})
		}
		i = j
	}
	return folded
}

// idList renders order IDs: all of them up to 12, then a count.
func idList(ids []string) string {
	if len(ids) <= 12 {
		return strings.Join(ids, " ") + fmt.Sprintf(" (%d)", len(ids))
	}
	return strings.Join(ids[:12], " ") + fmt.Sprintf(" … (%d in all)", len(ids))
}

// holdCauses follows a hold from its start to its release, to say on the
// RELEASE line what held the orders: the fence, the reconcile, and within
// the reconcile the wait for the FIX session to log on through the new
// endpoint (the FIX reconciler asks the broker over that session).
type holdCauses struct {
	holdAt, fenceAt, fenceOK, reconAt, reconOK time.Time
	fixLogon                                   map[string]time.Time // endpoint → latest logon
}

func (h *holdCauses) event(e pathdialer.Event) {
	switch e.Kind {
	case pathdialer.EventHold, pathdialer.EventHalt:
		if h.holdAt.IsZero() {
			h.holdAt = e.Time
		}
	case pathdialer.EventFenceStart:
		if h.fenceAt.IsZero() {
			h.fenceAt = e.Time
		}
	case pathdialer.EventFenceSuccess:
		h.fenceOK = e.Time
	case pathdialer.EventReconcileStart:
		if h.reconAt.IsZero() || !h.reconOK.IsZero() {
			h.reconAt, h.reconOK = e.Time, time.Time{}
		}
	case pathdialer.EventReconcileSuccess:
		h.reconOK = e.Time
	}
}

func (h *holdCauses) note(e Entry) {
	const p = "FIX session logged on through "
	if e.Source == "fix" && strings.HasPrefix(e.Note, p) {
		if h.fixLogon == nil {
			h.fixLogon = map[string]time.Time{}
		}
		h.fixLogon[strings.Fields(e.Note[len(p):])[0]] = e.Time
	}
}

// explain returns " — held by: ..." for a release, and forgets the hold.
func (h *holdCauses) explain(rel pathdialer.Event) string {
	defer func() { *h = holdCauses{fixLogon: h.fixLogon} }()
	var parts []string
	if !h.fenceAt.IsZero() && !h.fenceOK.IsZero() && !h.fenceOK.Before(h.fenceAt) {
		parts = append(parts, "fence "+human(h.fenceOK.Sub(h.fenceAt)))
	}
	if !h.reconAt.IsZero() && !h.reconOK.IsZero() && !h.reconOK.Before(h.reconAt) {
		s := "reconcile " + human(h.reconOK.Sub(h.reconAt))
		if at, ok := h.fixLogon[rel.Endpoint]; ok && at.After(h.reconAt) && !at.After(h.reconOK) && at.Sub(h.reconAt) >= 100*time.Millisecond {
			s += fmt.Sprintf(", of which %s waiting for the FIX session to log on through %s (the FIX reconciler asks the broker over that session)",
				human(at.Sub(h.reconAt)), rel.Endpoint)
		}
		parts = append(parts, s)
	}
	if !h.holdAt.IsZero() && h.reconAt.IsZero() && h.fenceAt.IsZero() {
		parts = append(parts, "waiting for an eligible endpoint")
	}
	if len(parts) == 0 {
		return ""
	}
	return " — held by: " + strings.Join(parts, "; ")
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
		return fmt.Sprintf("fence %s: OK in %s (old connections closed, new dials refused)", e.Endpoint, human(e.Duration))
	case pathdialer.EventFenceFailure:
		return fmt.Sprintf("fence %s: FAILED (attempt %d)%s", e.Endpoint, e.Attempt, errSuffix(e))
	case pathdialer.EventSwitch:
		return fmt.Sprintf("SWITCHED %s → %s (generation %d)", e.From, e.To, e.Token)
	case pathdialer.EventReconcileStart:
		if e.Cause == pathdialer.ReasonRequery {
			return fmt.Sprintf("re-query on %s of %d provisional NOT_RECEIVED order(s), their quarantine over%s", e.To, len(e.Tickets), ticketList(e.Tickets))
		}
		return fmt.Sprintf("reconcile start %s→%s: %d order(s) of unknown fate%s", e.From, e.To, len(e.Tickets), ticketList(e.Tickets))
	case pathdialer.EventReconcileSuccess:
		if e.Service != "" {
			return fmt.Sprintf("reconcile %s OK in %s: %s", e.Service, human(e.Duration), settlementList(e.Settlements))
		}
		return fmt.Sprintf("reconcile OK in %s: %s", human(e.Duration), settlementList(e.Settlements))
	case pathdialer.EventReconcileFailure:
		return fmt.Sprintf("reconcile failed (attempt %d, retrying)%s", e.Attempt, errSuffix(e))
	case pathdialer.EventRelease:
		if e.Service != "" {
			return fmt.Sprintf("RELEASE %s: %s orders flow on %s (held %s)", e.Service, e.Service, e.Endpoint, human(e.Duration))
		}
		return fmt.Sprintf("RELEASE: submissions flow on %s (orders held %s)", e.Endpoint, human(e.Duration))
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
	case pathdialer.EventLateLanding:
		fate := "booked"
		if len(e.Settlements) > 0 {
			fate = e.Settlements[0].Fate.String()
		}
		return fmt.Sprintf("LATE LANDING: order %s, sent through %s (region %s) and found NOT_RECEIVED there provisionally, was booked after all (%s); reported, never re-sent",
			e.OrderID, e.Endpoint, e.Region, fate)
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

// shortErr renders an error for the timeline: whole, up to errorWidth
// runes; past that, cut at a space and the rest counted.
func shortErr(err error) string {
	s := err.Error()
	if utf8.RuneCountInString(s) <= errorWidth {
		return s
	}
	r := []rune(s)
	cut := errorWidth
	for cut > errorWidth/2 && r[cut] != ' ' {
		cut--
	}
	return fmt.Sprintf("%s (+%d characters)", strings.TrimRight(string(r[:cut]), " "), len(r)-cut)
}

const errorWidth = 240

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

// finality marks a NOT_RECEIVED settlement "(provisional)" or "(final)".
func finality(s pathdialer.Settlement) string {
	switch {
	case s.Fate != pathdialer.FateNotReceived:
		return ""
	case s.Provisional:
		return " (provisional)"
	case s.Final:
		return " (final)"
	}
	return ""
}

func all(xs []string, f func(string) bool) bool {
	for _, x := range xs {
		if !f(x) {
			return false
		}
	}
	return true
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
		by[s.Fate] = append(by[s.Fate], s.Service+"/"+s.OrderID+finality(s))
	}
	parts := make([]string, 0, len(order))
	for _, f := range order {
		ids := by[f]
		// One finality for all: say it once.
		fin := ""
		for _, suffix := range []string{" (provisional)", " (final)"} {
			if all(ids, func(id string) bool { return strings.HasSuffix(id, suffix) }) {
				fin = suffix
				for i := range ids {
					ids[i] = strings.TrimSuffix(ids[i], suffix)
				}
			}
		}
		parts = append(parts, fmt.Sprintf("%s%s %s", f, fin, idList(ids)))
	}
	return strings.Join(parts, "; ")
}
