package drill

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// svgDoc is one inline SVG picture, drawn from a handful of primitives so the
// template stays small and every value goes through html/template.
type svgDoc struct {
	W, H   int
	Label  string
	Rects  []svgRect
	Lines  []svgLine
	Polys  []svgPoly
	Texts  []svgText
	Marks  []svgMark
	Legend []legendItem
}

type svgRect struct {
	X, Y, W, H float64
	Fill       string
	Opacity    float64
	Title      string
}

type svgLine struct {
	X1, Y1, X2, Y2 float64
	Stroke         string
	Width          float64
	Dash           string
	Title          string
}

type svgPoly struct {
	Points string
	Stroke string
	Dash   string
	Title  string
}

type svgText struct {
	X, Y   float64
	Text   string
	Anchor string // start, middle, end
	Class  string // lane, tick, mark, small, bold
	Fill   string
}

// svgMark is a diamond marker (a decision) with a tooltip.
type svgMark struct {
	Points string
	Fill   string
	Title  string
}

type legendItem struct {
	Color, Text string
}

// Colours, shared by the timeline, the charts and the CSS.
const (
	colOK        = "#2e9d4f"
	colFail      = "#d0342c"
	colHealthy   = "#bfe8cb"
	colDegraded  = "#ffd978"
	colDown      = "#f19a93"
	colUnknown   = "#dfe2e8"
	colActive    = "#2f6fdb"
	colHold      = "#f0a202"
	colHalt      = "#b3261e"
	colFence     = "#3d4556"
	colReconcile = "#7e57c2"
	colFault     = "#b3261e"
	colRecover   = "#2e9d4f"
	colGrid      = "#e6e8ec"
	colText      = "#1d2330"
	colMuted     = "#6b7385"
	// Order-error ticks have colours of their own, so the legend cannot
	// confuse them with the hold and halt spans.
	colOrderUnknown  = "#e8590c"
	colOrderNotSent  = "#862e9c"
	colOrderRejected = "#c2255c"
)

const (
	svgW     = 1320
	padLeft  = 130
	padRight = 24
)

// scale maps run-relative durations to x.
type scale struct {
	total time.Duration
}

func (s scale) x(d time.Duration) float64 {
	if s.total <= 0 {
		return padLeft
	}
	d = min(max(d, 0), s.total)
	return padLeft + float64(d)/float64(s.total)*float64(svgW-padLeft-padRight)
}

func stateColor(st engine.HealthState) string {
	switch st {
	case engine.Healthy:
		return colHealthy
	case engine.Degraded:
		return colDegraded
	case engine.Down:
		return colDown
	}
	return colUnknown
}

func decisionColor(o engine.Outcome) string {
	switch o {
	case engine.FenceRequired:
		return colHold
	case engine.Switched:
		return colActive
	case engine.NoTargetAvailable:
		return colHalt
	}
	return colFail // FLAP_SUPPRESSED: a human should look
}

func ms(d time.Duration) string {
	switch {
	case d == NotMeasured:
		return "—"
	case d > 0 && d < time.Millisecond:
		return "< 1 ms"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func rels(d time.Duration) string { return fmt.Sprintf("+%.3fs", d.Seconds()) }

// axis draws time ticks from y0 to y1 and labels below y1.
func (doc *svgDoc) axis(sc scale, y0, y1 float64) {
	step := niceStep(sc.total.Seconds() / 12)
	for t := 0.0; t <= sc.total.Seconds()+1e-9; t += step {
		x := sc.x(time.Duration(t * float64(time.Second)))
		doc.Lines = append(doc.Lines, svgLine{X1: x, Y1: y0, X2: x, Y2: y1, Stroke: colGrid, Width: 1})
		doc.Texts = append(doc.Texts, svgText{X: x, Y: y1 + 14, Text: trimFloat(t) + "s", Anchor: "middle", Class: "tick"})
	}
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.2f", f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// niceStep rounds a raw step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// laneOrder lists the endpoint lanes.
func laneOrder(in Input) []string {
	if len(in.Endpoints) > 0 {
		return in.Endpoints
	}
	seen := map[string]bool{}
	for _, e := range in.Events {
		for _, n := range []string{e.Endpoint, e.From, e.To} {
			if n != "" {
				seen[n] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// timeline draws the run: one lane per endpoint (health state band, probe
// ticks, active bar), then verdicts, the gate (hold, halt), fence,
// reconcile and order errors, with the fault and its recovery across all.
func timeline(in Input, f Figures) svgDoc {
	end := in.rel(in.end())
	sc := scale{total: max(end, time.Second)}
	lanes := laneOrder(in)
	const top, laneH, small = 30.0, 58.0, 28.0
	doc := svgDoc{W: svgW, Label: "timeline of the drill"}
	y := top
	laneY := map[string]float64{}
	for _, name := range lanes {
		laneY[name] = y
		doc.Rects = append(doc.Rects, svgRect{X: padLeft, Y: y, W: svgW - padLeft - padRight, H: laneH - 6, Fill: "#fafbfc", Opacity: 1})
		doc.Texts = append(doc.Texts, svgText{X: padLeft - 10, Y: y + 20, Text: name, Anchor: "end", Class: "lane"})
		doc.Texts = append(doc.Texts, svgText{X: padLeft - 10, Y: y + 36, Text: "state · probes · active", Anchor: "end", Class: "small"})
		y += laneH
	}
	rows := []string{"verdicts", "gate", "fence", "reconcile", "order errors"}
	rowY := map[string]float64{}
	for _, r := range rows {
		h := small
		if r == "verdicts" {
			h = 62
		}
		rowY[r] = y
		doc.Rects = append(doc.Rects, svgRect{X: padLeft, Y: y, W: svgW - padLeft - padRight, H: h - 6, Fill: "#fafbfc", Opacity: 1})
		doc.Texts = append(doc.Texts, svgText{X: padLeft - 10, Y: y + h/2, Text: r, Anchor: "end", Class: "lane"})
		y += h
	}
	bottom := y
	doc.axis(sc, top-4, bottom)
	doc.H = int(bottom + 24)

	// State bands: from each state change to the next.
	type stateAt struct {
		at time.Duration
		st engine.HealthState
	}
	states := map[string][]stateAt{}
	active := map[string][]Span{}
	curActive, curSince := "", time.Duration(0)
	if in.Primary != "" {
		curActive = in.Primary
	}
	for _, e := range in.Events {
		at := in.rel(e.Time)
		switch e.Kind {
		case pathdialer.EventStateChange:
			states[e.Endpoint] = append(states[e.Endpoint], stateAt{at, e.State})
		case pathdialer.EventSwitch:
			if e.From != "" {
				curActive = e.From
			}
			active[curActive] = append(active[curActive], Span{Start: curSince, End: at})
			curActive, curSince = e.To, at
		}
	}
	if curActive != "" {
		active[curActive] = append(active[curActive], Span{Start: curSince, End: end})
	}
	for _, name := range lanes {
		ly := laneY[name]
		prev := stateAt{0, engine.Unknown}
		for _, s := range append(states[name], stateAt{end, engine.Unknown}) {
			if s.at > prev.at {
				doc.Rects = append(doc.Rects, svgRect{X: sc.x(prev.at), Y: ly + 3, W: sc.x(s.at) - sc.x(prev.at), H: 14, Fill: stateColor(prev.st), Opacity: 1,
					Title: fmt.Sprintf("%s %s from %s", name, prev.st, rels(prev.at))})
			}
			prev = s
		}
		for _, sp := range active[name] {
			doc.Rects = append(doc.Rects, svgRect{X: sc.x(sp.Start), Y: ly + 42, W: max(sc.x(sp.End)-sc.x(sp.Start), 1), H: 6, Fill: colActive, Opacity: 1,
				Title: fmt.Sprintf("%s active %s → %s", name, rels(sp.Start), rels(sp.End))})
		}
	}
	// Probe ticks.
	for _, e := range in.Events {
		ly, ok := laneY[e.Endpoint]
		if e.Kind != pathdialer.EventProbe || !ok {
			continue
		}
		x := sc.x(in.rel(e.Time))
		l := svgLine{X1: x, Y1: ly + 21, X2: x, Y2: ly + 38, Stroke: colOK, Width: 1.2, Title: fmt.Sprintf("%s probe OK %s in %s", e.Endpoint, rels(in.rel(e.Time)), e.Duration.Round(time.Millisecond))}
		if e.Err != nil || e.Error != "" {
			l.Stroke, l.Width = colFail, 1.6
			msg := e.Error
			if msg == "" {
				msg = e.Err.Error()
			}
			l.Title = fmt.Sprintf("%s probe FAILED %s: %s", e.Endpoint, rels(in.rel(e.Time)), redact(msg))
		}
		doc.Lines = append(doc.Lines, l)
	}
	// Verdicts: diamonds, labels staggered over three rows.
	vy := rowY["verdicts"]
	n := 0
	lastX := map[int]float64{0: -1e9, 1: -1e9, 2: -1e9}
	for _, e := range in.Events {
		if e.Kind != pathdialer.EventDecision || e.Decision == nil || !decisionShown(e.Decision.Outcome) {
			continue
		}
		d := e.Decision
		at := in.rel(e.Time)
		x := sc.x(at)
		label := d.Outcome.String()
		if d.To != "" {
			label += " " + d.From + "→" + d.To
		}
		row := n % 3
		for r := 0; r < 3; r++ { // the row whose last label is furthest left
			if lastX[r] < lastX[row] {
				row = r
			}
		}
		n++
		cy := vy + 10 + float64(row)*16
		doc.Marks = append(doc.Marks, svgMark{Points: diamond(x, cy, 5), Fill: decisionColor(d.Outcome),
			Title: fmt.Sprintf("%s %s %s", rels(at), label, redact(strings.Join(d.Notes, "; ")))})
		tw := float64(len([]rune(label))) * 6.6
		if x+8+tw > svgW-padRight/2 { // no room on the right: label to the left
			doc.Texts = append(doc.Texts, svgText{X: x - 8, Y: cy + 4, Text: label, Anchor: "end", Class: "mark", Fill: decisionColor(d.Outcome)})
		} else {
			doc.Texts = append(doc.Texts, svgText{X: x + 8, Y: cy + 4, Text: label, Anchor: "start", Class: "mark", Fill: decisionColor(d.Outcome)})
		}
		lastX[row] = x + 8 + tw
	}
	// Gate: holds and halts.
	span := func(row string, sp Span, fill, label, title string) {
		ry := rowY[row]
		e := sp.End
		if e == NotMeasured {
			e = end
		}
		x0, x1 := sc.x(sp.Start), sc.x(e)
		doc.Rects = append(doc.Rects, svgRect{X: x0, Y: ry + 3, W: max(x1-x0, 2), H: small - 12, Fill: fill, Opacity: 0.9, Title: title})
		if label != "" {
			doc.Texts = append(doc.Texts, svgText{X: max(x1, x0+2) + 4, Y: ry + 15, Text: label, Anchor: "start", Class: "small"})
		}
	}
	for _, h := range f.Holds {
		label := "held " + ms(h.Held)
		if h.Endpoint == "" {
			label = "held"
		}
		span("gate", h.Span, colHold, label, fmt.Sprintf("hold %s → %s: %s", rels(h.Start), rels(h.End), redact(h.Cause)))
	}
	for _, h := range f.Halts {
		span("gate", h, colHalt, "HALT", fmt.Sprintf("halt %s → %s: %s", rels(h.Start), rels(h.End), redact(h.Cause)))
	}
	// Fence and reconcile spans from start → success/failure events.
	var fenceAt, recAt time.Duration = NotMeasured, NotMeasured
	for _, e := range in.Events {
		at := in.rel(e.Time)
		switch e.Kind {
		case pathdialer.EventFenceStart:
			fenceAt = at
		case pathdialer.EventFenceSuccess, pathdialer.EventFenceFailure:
			s := fenceAt
			if s == NotMeasured {
				s = at - e.Duration
			}
			fill, what := colFence, "fence "+e.Endpoint+" OK"
			if e.Kind == pathdialer.EventFenceFailure {
				fill, what = colFail, "fence "+e.Endpoint+" FAILED"
			}
			span("fence", Span{Start: s, End: at}, fill, what, fmt.Sprintf("%s %s in %s", rels(s), what, e.Duration.Round(time.Millisecond)))
			fenceAt = NotMeasured
		case pathdialer.EventReconcileStart:
			recAt = at
		case pathdialer.EventReconcileSuccess, pathdialer.EventReconcileFailure:
			s := recAt
			if s == NotMeasured {
				s = at - e.Duration
			}
			fill, what := colReconcile, fmt.Sprintf("reconcile OK (%d settled)", len(e.Settlements))
			if e.Kind == pathdialer.EventReconcileFailure {
				fill, what = colFail, "reconcile failed"
			}
			span("reconcile", Span{Start: s, End: at}, fill, what, fmt.Sprintf("%s %s in %s", rels(s), what, e.Duration.Round(time.Millisecond)))
			recAt = NotMeasured
		}
	}
	// Order errors: one tick per order whose caller saw an error.
	oy := rowY["order errors"]
	for _, o := range in.Orders {
		if !o.Failed() {
			continue
		}
		at := in.rel(o.PlacedAt)
		x := sc.x(at)
		kind, col := "never answered", colMuted
		switch {
		case o.NotSent:
			kind, col = "not sent", colOrderNotSent
		case o.Unknown:
			kind, col = "unknown outcome", colOrderUnknown
		case o.Rejected:
			kind, col = "rejected", colOrderRejected
		}
		doc.Lines = append(doc.Lines, svgLine{X1: x, Y1: oy + 3, X2: x, Y2: oy + small - 9, Stroke: col, Width: 1.5,
			Title: fmt.Sprintf("%s %s order: %s", rels(at), o.Transport, kind)})
	}
	// Fault and recovery across every lane; switches as faint lines.
	for _, sw := range f.Switches {
		x := sc.x(sw.At)
		doc.Lines = append(doc.Lines, svgLine{X1: x, Y1: top - 4, X2: x, Y2: bottom - 6, Stroke: colActive, Width: 1, Dash: "2 3",
			Title: fmt.Sprintf("%s SWITCHED %s → %s", rels(sw.At), sw.From, sw.To)})
	}
	vline := func(t time.Time, col, label string) {
		if t.IsZero() {
			return
		}
		x := sc.x(in.rel(t))
		doc.Lines = append(doc.Lines, svgLine{X1: x, Y1: 12, X2: x, Y2: bottom - 6, Stroke: col, Width: 2, Dash: "6 4", Title: label + " " + rels(in.rel(t))})
		doc.Texts = append(doc.Texts, svgText{X: x, Y: 12, Text: label + " " + rels(in.rel(t)), Anchor: "middle", Class: "bold", Fill: col})
	}
	vline(in.FaultAt, colFault, "FAULT")
	vline(in.RecoverAt, colRecover, "RECOVER")
	doc.Legend = []legendItem{{colHealthy, "HEALTHY"}, {colDegraded, "DEGRADED"}, {colDown, "DOWN"}, {colUnknown, "UNKNOWN"},
		{colOK, "probe OK"}, {colFail, "probe, fence or reconcile failed / FLAP_SUPPRESSED"}, {colActive, "active endpoint / SWITCHED"},
		{colHold, "FENCE_REQUIRED / orders held"}, {colHalt, "halt / NO_TARGET_AVAILABLE"},
		{colFence, "fence"}, {colReconcile, "reconcile"},
		{colOrderUnknown, "order: outcome unknown"}, {colOrderNotSent, "order: not sent"}, {colOrderRejected, "order: rejected"},
		{colMuted, "order: never answered"}}
	return doc
}

var (
	urlRE  = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)
	addrRE = regexp.MustCompile(`(\[[0-9a-fA-F:.]+\]|\b\d{1,3}(\.\d{1,3}){3}):\d+`)
)

// redact removes URLs and host:port addresses from free text (probe errors,
// causes, notes): the report names endpoints, never addresses.
func redact(s string) string {
	return addrRE.ReplaceAllString(urlRE.ReplaceAllString(s, "<url>"), "<addr>")
}

func diamond(x, y, r float64) string {
	return fmt.Sprintf("%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f", x, y-r, x+r, y, x, y+r, x-r, y)
}

// series is one line of a chart: values at run-relative times.
type series struct {
	name  string
	color string
	dash  string
	t     []time.Duration
	v     []float64
}

// chart draws series on the timeline's time axis, with an optional
// horizontal reference line (a budget).
func chart(in Input, label string, ss []series, ref float64, refLabel string, bars []series) svgDoc {
	end := in.rel(in.end())
	sc := scale{total: max(end, time.Second)}
	const top, h = 14.0, 150.0
	doc := svgDoc{W: svgW, H: int(top + h + 30), Label: label}
	maxV := ref
	for _, s := range append(append([]series{}, ss...), bars...) {
		for _, v := range s.v {
			maxV = max(maxV, v)
		}
	}
	maxV = max(maxV*1.15, 1)
	step := niceStep(maxV / 4)
	y := func(v float64) float64 { return top + h - v/maxV*h }
	doc.Rects = append(doc.Rects, svgRect{X: padLeft, Y: top, W: svgW - padLeft - padRight, H: h, Fill: "#fafbfc", Opacity: 1})
	for v := 0.0; v <= maxV; v += step {
		doc.Lines = append(doc.Lines, svgLine{X1: padLeft, Y1: y(v), X2: svgW - padRight, Y2: y(v), Stroke: colGrid, Width: 1})
		doc.Texts = append(doc.Texts, svgText{X: padLeft - 6, Y: y(v) + 4, Text: trimFloat(v), Anchor: "end", Class: "tick"})
	}
	doc.axis(sc, top, top+h)
	for _, b := range bars {
		for i := range b.t {
			if b.v[i] <= 0 || i+1 >= len(b.t) {
				continue
			}
			x0, x1 := sc.x(b.t[i]), sc.x(b.t[i+1])
			doc.Rects = append(doc.Rects, svgRect{X: x0, Y: y(b.v[i]), W: max(x1-x0-0.5, 1), H: top + h - y(b.v[i]), Fill: b.color, Opacity: 0.75,
				Title: fmt.Sprintf("%s %s: %.0f/s", rels(b.t[i]), b.name, b.v[i])})
		}
		doc.Legend = append(doc.Legend, legendItem{b.color, b.name})
	}
	for _, s := range ss {
		var pts []string
		for i := range s.t {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sc.x(s.t[i]), y(s.v[i])))
		}
		doc.Polys = append(doc.Polys, svgPoly{Points: strings.Join(pts, " "), Stroke: s.color, Dash: s.dash, Title: s.name})
		doc.Legend = append(doc.Legend, legendItem{s.color, s.name})
	}
	if ref > 0 {
		doc.Lines = append(doc.Lines, svgLine{X1: padLeft, Y1: y(ref), X2: svgW - padRight, Y2: y(ref), Stroke: colHalt, Width: 1.5, Dash: "6 4", Title: refLabel})
		doc.Texts = append(doc.Texts, svgText{X: svgW - padRight - 4, Y: y(ref) - 4, Text: refLabel, Anchor: "end", Class: "small", Fill: colHalt})
	}
	vline := func(t time.Time, col, text string) {
		if !t.IsZero() {
			x := sc.x(in.rel(t))
			doc.Lines = append(doc.Lines, svgLine{X1: x, Y1: top, X2: x, Y2: top + h, Stroke: col, Width: 1.5, Dash: "6 4", Title: text})
		}
	}
	vline(in.FaultAt, colFault, "fault")
	vline(in.RecoverAt, colRecover, "recover")
	return doc
}

// rateSeries turns a cumulative counter into per-second rates per bucket.
func rateSeries(in Input, bucket time.Duration, name, color string, read func(Sample) (float64, bool)) series {
	s := series{name: name, color: color}
	var lastT time.Time
	var lastV float64
	have := false
	for _, sm := range in.Samples {
		v, ok := read(sm)
		if !ok {
			continue
		}
		if !have {
			lastT, lastV, have = sm.Time, v, true
			continue
		}
		if sm.Time.Sub(lastT) < bucket {
			continue
		}
		s.t = append(s.t, in.rel(lastT))
		s.v = append(s.v, (v-lastV)/sm.Time.Sub(lastT).Seconds())
		lastT, lastV = sm.Time, v
	}
	if have {
		s.t = append(s.t, in.rel(lastT))
		s.v = append(s.v, 0)
	}
	return s
}
