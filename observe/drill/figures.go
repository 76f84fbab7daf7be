package drill

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// NotMeasured marks a duration figure the Input cannot give.
const NotMeasured time.Duration = -1

// Figures are the drill's numbers (what on-call asks first, the game-day
// metrics of a WebSocket reconnect wave, and the Path's own: holds, halts,
// switches). Durations relative to the fault are
// NotMeasured when there was no fault or nothing landed.
type Figures struct {
	// OnCall: time to detect, to switch, held and why, orders per transport,
	// ticks missed: what the report leads with.
	OnCall OnCall
	// Landing: per transport, from the fault to the first success on the
	// survivor.
	Landing []Landing
	// Wave: the population's reconnect wave onto the survivor.
	Wave Wave
	// Handshakes at the survivor against its budget; ByRegion the same for
	// every region sampled (a failback is a second wave, at the primary).
	Handshakes Handshakes
	ByRegion   []Handshakes
	// Resume counts the population's reattachments.
	Resume Resume
	// Errors per transport (and per region for WebSocket handshakes) and phase.
	Errors []ErrorRate
	// Holds: every hold → release (or halt) span of the submission gate.
	Holds []Hold
	// Halts: every halt → resume span.
	Halts []Span
	// Switches of the active endpoint.
	Switches []Switch
}

// Landing is when one transport's flow first succeeded on the survivor.
type Landing struct {
	Transport string
	// After is measured from the fault (NotMeasured: never).
	After time.Duration
	// How says what counted ("first order acknowledged by us").
	How string
}

// Wave is the population's arrival on the survivor: how long after the fault
// the first, half, 95% and all of the population were connected there.
type Wave struct {
	Size                  int // population size (0: no population)
	Landed                int // most streams connected to the survivor at once after the fault
	First, P50, P95, Last time.Duration
}

// Handshakes are the survivor's WebSocket handshakes during the run.
type Handshakes struct {
	Region   string
	Measured bool // the broker's counters were sampled
	// PeakPerSecond is the most upgrades completed in any one-second window,
	// ending PeakAt after the run's start; Budget is the survivor's budget.
	PeakPerSecond float64
	PeakAt        time.Duration
	Budget        Budget
	// PeakAttemptsPerSecond: the most handshake requests in one second.
	PeakAttemptsPerSecond float64
	// Since the fault: attempts, upgrades, refusals for the budget and for a fault.
	Attempts, Accepted, OverBudget, Unavailable uint64
}

// UnderBudget reports whether the peak stayed within the budget (true when
// there is no budget).
func (h Handshakes) UnderBudget() bool {
	return h.Budget.PerSecond <= 0 || h.PeakPerSecond <= h.Budget.PerSecond+float64(h.Budget.Burst)
}

// Resume counts how the population's streams reattached after their first
// subscribe: resumed from their last sequence, or handed a snapshot.
type Resume struct {
	Measured                       bool
	Subscribes, Resumes, Snapshots uint64
	Reconnects, Migrations         uint64
	DialFailures                   uint64
	// MaxDisconnected is the longest total time one stream was disconnected.
	MaxDisconnected time.Duration
}

// ResumedFraction is Resumes / (Resumes + Snapshots); NaN when neither happened.
func (r Resume) ResumedFraction() float64 {
	if r.Resumes+r.Snapshots == 0 {
		return math.NaN()
	}
	return float64(r.Resumes) / float64(r.Resumes+r.Snapshots)
}

// Phase names.
const (
	Before = "before"
	During = "during"
	After  = "after"
	Whole  = "whole run"
)

// ErrorRate is one row of the error table: failures over totals per phase.
type ErrorRate struct {
	// What: "REST orders", "FIX orders", "account reads", "WS handshakes at eu".
	What   string
	Phases []PhaseRate
	// Detail breaks the failures down ("not sent 3, unknown 1").
	Detail string
}

// PhaseRate is failures over a total in one phase (Total -1: not measured).
type PhaseRate struct {
	Phase         string
	Failed, Total int
}

// Rate is Failed/Total (NaN when nothing happened or it was not measured).
func (p PhaseRate) Rate() float64 {
	if p.Total <= 0 {
		return math.NaN()
	}
	return float64(p.Failed) / float64(p.Total)
}

// Span is an interval of the run, relative to its start (End NotMeasured:
// still open at the end).
type Span struct {
	Start, End time.Duration
	Cause      string
}

// Hold is one span of held submissions, with the orders placed while held.
type Hold struct {
	Span
	// Endpoint flow was released on ("" if never released).
	Endpoint string
	// Held is the time held as the Path reported it at release.
	Held time.Duration
	// Orders placed during the hold, per transport; Answered those answered
	// afterwards; Refused those that never left (their caller stopped
	// waiting, or trading halted); MaxWait the longest from placement to
	// answer.
	Orders   map[string]int
	Answered int
	Refused  int
	MaxWait  time.Duration
}

// Switch is one change of the active endpoint.
type Switch struct {
	At       time.Duration
	From, To string
	Failback bool
}

// phaseOf names the phase of t.
func (in Input) phaseOf(t time.Time) string {
	if in.FaultAt.IsZero() {
		return Whole
	}
	if t.Before(in.FaultAt) {
		return Before
	}
	if in.RecoverAt.IsZero() || t.Before(in.RecoverAt) {
		return During
	}
	return After
}

func (in Input) phases() []string {
	if in.FaultAt.IsZero() {
		return []string{Whole}
	}
	if in.RecoverAt.IsZero() {
		return []string{Before, During}
	}
	return []string{Before, During, After}
}

// end is the last instant of the run.
func (in Input) end() time.Time {
	if !in.End.IsZero() {
		return in.End
	}
	e := in.Start
	for _, ev := range in.Events {
		if ev.Time.After(e) {
			e = ev.Time
		}
	}
	for _, n := range in.Notes {
		if n.Time.After(e) {
			e = n.Time
		}
	}
	for _, s := range in.Samples {
		if s.Time.After(e) {
			e = s.Time
		}
	}
	return e
}

func (in Input) rel(t time.Time) time.Duration { return t.Sub(in.Start) }

// Compute derives the Figures from in.
func Compute(in Input) Figures {
	var f Figures
	f.OnCall = onCall(in)
	f.Landing = landing(in)
	f.Wave = wave(in)
	f.Handshakes = handshakes(in, in.Survivor)
	for _, r := range sampledRegions(in) {
		f.ByRegion = append(f.ByRegion, handshakes(in, r))
	}
	f.Resume = resume(in.Population)
	f.Errors = errorRates(in)
	f.Holds, f.Halts = holds(in)
	for _, e := range in.Events {
		if e.Kind == pathdialer.EventSwitch {
			sw := Switch{At: in.rel(e.Time), From: e.From, To: e.To}
			sw.Failback = slices.Contains(in.primaries(), e.To)
			f.Switches = append(f.Switches, sw)
		}
	}
	return f
}

func (in Input) primaries() []string {
	if in.Primary != "" {
		return []string{in.Primary}
	}
	return nil
}

func landing(in Input) []Landing {
	if in.FaultAt.IsZero() || in.Survivor == "" {
		return nil
	}
	var out []Landing
	transports := map[string]bool{}
	for _, o := range in.Orders {
		transports[o.Transport] = true
	}
	names := make([]string, 0, len(transports))
	for t := range transports {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		l := Landing{Transport: t + " orders", After: NotMeasured, How: "first order acknowledged by " + in.Survivor}
		for _, o := range in.Orders {
			if o.Transport == t && o.Acked && !o.Rejected && o.AckEndpoint == in.Survivor && !o.AckedAt.Before(in.FaultAt) {
				if d := o.AckedAt.Sub(in.FaultAt); l.After == NotMeasured || d < l.After {
					l.After = d
				}
			}
		}
		out = append(out, l)
	}
	// Notes the driver wrote when a read or a stream moved to the survivor.
	for _, m := range []struct{ src, what, needle string }{
		{"rest", "account reads", "answered by " + in.Survivor},
		{"ws", "WebSocket stream", "on " + in.Survivor},
		{"fix", "FIX session", "through " + in.Survivor},
	} {
		l := Landing{Transport: m.what, After: NotMeasured, How: "first note “" + m.needle + "”"}
		for _, n := range in.Notes {
			if n.Source == m.src && !n.Time.Before(in.FaultAt) && strings.Contains(n.Text, m.needle) {
				l.After = n.Time.Sub(in.FaultAt)
				break
			}
		}
		if l.After != NotMeasured {
			out = append(out, l)
		}
	}
	if w := wave(in); w.Size > 0 {
		out = append(out, Landing{Transport: "WS population", After: w.First, How: "first extra stream connected to " + in.Survivor})
	}
	for _, e := range in.Events {
		if e.Kind != pathdialer.EventRelease || e.Endpoint != in.Survivor || e.Time.Before(in.FaultAt) {
			continue
		}
		if e.Service != "" { // this service's orders flow; the others are still held
			out = append(out, Landing{Transport: e.Service + " released", After: e.Time.Sub(in.FaultAt), How: e.Service + " orders released on " + in.Survivor})
			continue
		}
		out = append(out, Landing{Transport: "submission gate", After: e.Time.Sub(in.FaultAt), How: "every service released on " + in.Survivor})
		break
	}
	return out
}

func wave(in Input) Wave {
	w := Wave{Size: len(in.Population), First: NotMeasured, P50: NotMeasured, P95: NotMeasured, Last: NotMeasured}
	if w.Size == 0 || in.FaultAt.IsZero() || in.Survivor == "" {
		return w
	}
	base := 0
	for _, s := range in.Samples {
		if s.Connected == nil {
			continue
		}
		if s.Time.Before(in.FaultAt) {
			base = s.Connected[in.Survivor]
			continue
		}
		if !in.RecoverAt.IsZero() && s.Time.After(in.RecoverAt) {
			break
		}
		n := s.Connected[in.Survivor] - base
		w.Landed = max(w.Landed, s.Connected[in.Survivor])
		d := s.Time.Sub(in.FaultAt)
		mark := func(p *time.Duration, need int) {
			if *p == NotMeasured && n >= need {
				*p = d
			}
		}
		target := w.Size - base
		if target <= 0 {
			continue
		}
		mark(&w.First, 1)
		mark(&w.P50, (target+1)/2)
		mark(&w.P95, int(math.Ceil(0.95*float64(target))))
		mark(&w.Last, target)
	}
	return w
}

// sampledRegions lists the regions whose counters were sampled, sorted.
func sampledRegions(in Input) []string {
	seen := map[string]bool{}
	for _, s := range in.Samples {
		for name := range s.Regions {
			seen[name] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func handshakes(in Input, region string) Handshakes {
	h := Handshakes{Region: region, Budget: in.Budget}
	var pts []Sample
	for _, s := range in.Samples {
		if _, ok := s.Regions[region]; ok {
			pts = append(pts, s)
		}
	}
	if len(pts) < 2 || region == "" {
		return h
	}
	h.Measured = true
	// Peak over one-second windows ending at each sample.
	j := 0
	for i := range pts {
		for j < i && pts[i].Time.Sub(pts[j+1].Time) >= time.Second {
			j++
		}
		if i == j {
			continue
		}
		dt := pts[i].Time.Sub(pts[j].Time).Seconds()
		dt = max(dt, 1) // a window shorter than a second counts as one second
		a, b := pts[j].Regions[region], pts[i].Regions[region]
		if r := float64(b.Handshakes-a.Handshakes) / dt; r > h.PeakPerSecond {
			h.PeakPerSecond, h.PeakAt = r, in.rel(pts[i].Time)
		}
		h.PeakAttemptsPerSecond = max(h.PeakAttemptsPerSecond, float64(b.Attempts-a.Attempts)/dt)
	}
	from := pts[0].Regions[region]
	if !in.FaultAt.IsZero() {
		for _, s := range pts {
			if s.Time.After(in.FaultAt) {
				break
			}
			from = s.Regions[region]
		}
	}
	to := pts[len(pts)-1].Regions[region]
	h.Attempts = to.Attempts - from.Attempts
	h.Accepted = to.Handshakes - from.Handshakes
	h.OverBudget = to.OverBudget - from.OverBudget
	h.Unavailable = to.Unavailable - from.Unavailable
	return h
}

func resume(pop []ws.Stats) Resume {
	r := Resume{Measured: len(pop) > 0}
	for _, s := range pop {
		r.Subscribes += s.Subscribes
		r.Resumes += s.Resumes
		r.Snapshots += s.Snapshots
		r.Reconnects += s.Reconnects
		r.Migrations += s.Migrations
		r.DialFailures += s.DialFailures
		r.MaxDisconnected = max(r.MaxDisconnected, s.Disconnected)
	}
	return r
}

func errorRates(in Input) []ErrorRate {
	phases := in.phases()
	newRow := func(what string) ErrorRate {
		r := ErrorRate{What: what}
		for _, p := range phases {
			r.Phases = append(r.Phases, PhaseRate{Phase: p})
		}
		return r
	}
	var out []ErrorRate
	byT := map[string]int{}
	kinds := map[string]map[string]int{}
	for _, o := range in.Orders {
		i, ok := byT[o.Transport]
		if !ok {
			i = len(out)
			byT[o.Transport] = i
			out = append(out, newRow(o.Transport+" orders"))
			kinds[o.Transport] = map[string]int{}
		}
		p := slices.Index(phases, in.phaseOf(o.PlacedAt))
		out[i].Phases[p].Total++
		if o.Failed() {
			out[i].Phases[p].Failed++
			switch {
			case o.NotSent:
				kinds[o.Transport]["not sent"]++
			case o.Unknown:
				kinds[o.Transport]["unknown outcome"]++
			case o.Rejected:
				kinds[o.Transport]["rejected"]++
			default:
				kinds[o.Transport]["never answered"]++
			}
		}
	}
	for t, i := range byT {
		var parts []string
		for _, k := range []string{"not sent", "unknown outcome", "rejected", "never answered"} {
			if n := kinds[t][k]; n > 0 {
				parts = append(parts, k+" "+strconv.Itoa(n))
			}
		}
		out[i].Detail = strings.Join(parts, ", ")
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].What < out[b].What })

	// Reads: cumulative counters, differenced at the phase boundaries.
	if r, ok := sampledRows(in, phases, "account reads", func(s Sample) (int, int, bool) {
		return s.ReadsFailed, s.ReadsOK + s.ReadsFailed, s.ReadsOK >= 0
	}); ok {
		out = append(out, r)
	}
	// WebSocket handshakes refused, per region.
	for _, name := range sampledRegions(in) {
		if r, ok := sampledRows(in, phases, "WS handshakes at "+name, func(s Sample) (int, int, bool) {
			st, ok := s.Regions[name]
			return int(st.OverBudget + st.Unavailable), int(st.Attempts), ok
		}); ok {
			r.Detail = "503 over budget or faulted / handshake requests (the clients retry)"
			out = append(out, r)
		}
	}
	return out
}

// sampledRows differences a cumulative (failed, total) counter across phases.
func sampledRows(in Input, phases []string, what string, read func(Sample) (failed, total int, ok bool)) (ErrorRate, bool) {
	r := ErrorRate{What: what}
	type acc struct{ f0, t0, f1, t1 int }
	got := map[string]*acc{}
	prevF, prevT, have := 0, 0, false
	for _, s := range in.Samples {
		f, t, ok := read(s)
		if !ok {
			continue
		}
		p := in.phaseOf(s.Time)
		a := got[p]
		if a == nil {
			// A phase starts where the previous sample left off.
			a = &acc{f0: f, t0: t}
			if have {
				a.f0, a.t0 = prevF, prevT
			}
			got[p] = a
		}
		a.f1, a.t1 = f, t
		prevF, prevT, have = f, t, true
	}
	if !have {
		return r, false
	}
	for _, p := range phases {
		pr := PhaseRate{Phase: p, Total: -1}
		if a := got[p]; a != nil {
			pr.Failed, pr.Total = a.f1-a.f0, a.t1-a.t0
		}
		r.Phases = append(r.Phases, pr)
	}
	return r, true
}

func holds(in Input) ([]Hold, []Span) {
	var hs []Hold
	var halts []Span
	var open *Hold
	var halt *Span
	closeHold := func(e pathdialer.Event) {
		if open == nil {
			return
		}
		open.End = in.rel(e.Time)
		if e.Kind == pathdialer.EventRelease {
			open.Endpoint, open.Held = e.Endpoint, e.Duration
		}
		hs = append(hs, *open)
		open = nil
	}
	for _, e := range in.Events {
		switch e.Kind {
		case pathdialer.EventHold:
			if open == nil {
				open = &Hold{Span: Span{Start: in.rel(e.Time), End: NotMeasured, Cause: e.Cause}}
			}
		case pathdialer.EventRelease, pathdialer.EventResume:
			if e.Kind == pathdialer.EventRelease && e.Service != "" {
				continue // one service flows again; the gate stays held for the others
			}
			if e.Kind == pathdialer.EventRelease {
				closeHold(e)
			}
			if halt != nil {
				halt.End = in.rel(e.Time)
				halts = append(halts, *halt)
				halt = nil
			}
		case pathdialer.EventHalt:
			closeHold(e)
			if halt == nil {
				halt = &Span{Start: in.rel(e.Time), End: NotMeasured, Cause: e.Cause}
			}
		}
	}
	if open != nil {
		hs = append(hs, *open)
	}
	if halt != nil {
		halts = append(halts, *halt)
	}
	for i := range hs {
		h := &hs[i]
		h.Orders = map[string]int{}
		for _, o := range in.Orders {
			at := in.rel(o.PlacedAt)
			if at < h.Start || (h.End != NotMeasured && at >= h.End) {
				continue
			}
			h.Orders[o.Transport]++
			if o.NotSent && !o.Acked {
				h.Refused++
			}
			if o.Acked && !o.AckedAt.IsZero() {
				h.Answered++
				h.MaxWait = max(h.MaxWait, o.AckedAt.Sub(o.PlacedAt))
			}
		}
	}
	return hs, halts
}

// decisionShown reports whether a decision gets a marker on the timeline.
func decisionShown(o engine.Outcome) bool {
	switch o {
	case engine.FenceRequired, engine.Switched, engine.NoTargetAvailable, engine.FlapSuppressed:
		return true
	}
	return false
}
