package drill

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// view is what the template renders.
type view struct {
	Title      string
	Fault      string
	Primary    string
	Survivor   string
	Duration   string
	OK         bool
	InvClass   string // the invariants badge when they held
	InvText    string
	Verdict    []kv // beside the invariants: what the orders went through
	Checked    int
	Invariants []string
	Violations []string
	Seed       string
	Date       string
	Commit     string
	OnCall     []kv
	HeldWhy    []string
	Orders     [][]string
	Headline   []kv
	Timeline   svgDoc
	Charts     []svgDoc
	Landing    [][]string
	Wave       [][]string
	Handshake  [][]string
	Resume     [][]string
	Phases     []string
	Errors     []errRow
	Holds      [][]string
	Halts      [][]string
	Switches   [][]string
	Notes      []string
	Gaps       []string
}

type kv struct {
	K, V  string
	Class string // good, warn, bad or ""
}

type errRow struct {
	What   string
	Cells  []errCell
	Detail string
}

type errCell struct {
	Text, Class string
}

// WriteHTML renders in as one self-contained HTML page.
func WriteHTML(w io.Writer, in Input) error {
	if err := page.Execute(w, buildView(in, Compute(in))); err != nil {
		return fmt.Errorf("drill: render: %w", err)
	}
	return nil
}

// verdict is what the header says beside the invariants, so that a run whose
// invariants held but whose orders failed or halted does not read as a good
// one: the share of orders that failed (bad from 10 %) and the halts (bad;
// it says how many began before the fault, which the fault cannot explain).
func verdict(in Input, f Figures) []kv {
	var out []kv
	failed, total := 0, 0
	for _, o := range in.Orders {
		total++
		if o.Failed() {
			failed++
		}
	}
	if total > 0 {
		r := float64(failed) / float64(total)
		c := "good"
		switch {
		case r >= 0.10:
			c = "bad"
		case failed > 0:
			c = "warn"
		}
		out = append(out, kv{K: "orders", V: pct(r) + " of orders failed", Class: c})
	}
	if n := len(f.Halts); n > 0 {
		early := 0
		for _, h := range f.Halts {
			if !in.FaultAt.IsZero() && h.Start < in.rel(in.FaultAt) {
				early++
			}
		}
		// A halt refuses every order: always red, as in the on-call tiles.
		k := kv{K: "halts", V: fmt.Sprintf("halted %d×", n), Class: "bad"}
		if early > 0 {
			k.V += fmt.Sprintf(" (%d before the fault)", early)
		}
		out = append(out, k)
	}
	return out
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*f)
}

func buildView(in Input, f Figures) view {
	v := view{Title: in.Title, Fault: redact(in.Fault), Primary: in.Primary, Survivor: in.Survivor,
		Duration: ms(in.rel(in.end())), OK: len(in.Violations) == 0, Checked: len(in.Checked)}
	for _, s := range in.Violations {
		v.Violations = append(v.Violations, redact(s))
	}
	if v.Title == "" {
		v.Title = "brokerpath drill"
	}
	v.Invariants = in.Checked
	v.Verdict = verdict(in, f)
	// Green only when nothing beside the invariants is bad: a run whose
	// orders failed does not read as a good one.
	v.InvClass, v.InvText = "good", "invariants OK"
	for _, k := range v.Verdict {
		if k.Class == "bad" {
			v.InvClass, v.InvText = "muted", "invariants held"
		}
	}
	v.Seed, v.Commit = orNotRecorded(in.Seed), orNotRecorded(in.Commit)
	if !in.Start.IsZero() {
		v.Date = in.Start.UTC().Format("2006-01-02 15:04 UTC")
	}
	// What on-call asks first: the worst that happened (halts, the longest
	// any transport's orders waited after the fault, the share of orders
	// that failed), then how fast the first switch saw and acted on the
	// fault, how long orders waited there and why, what happened to the
	// orders, what the market data consumer lost.
	v.OnCall = worst(in, f)
	oc := f.OnCall
	down := orDash(oc.Endpoint)
	v.OnCall = append(v.OnCall,
		kv{K: "first switch: time to detect (fault → " + down + " declared down)", V: ms(oc.Detect), Class: timeClass(oc.Detect)},
		kv{K: "first switch: time to switch (declared down → orders go to " + orDash(oc.To) + ")", V: ms(oc.Switch), Class: timeClass(oc.Switch)},
		kv{K: "first switch: orders held around it", V: ms(oc.Held), Class: timeClass(oc.Held)})
	v.HeldWhy = oc.HeldBecause
	for _, t := range oc.Orders {
		v.Orders = append(v.Orders, []string{t.Transport, fmt.Sprint(t.Placed), fmt.Sprint(t.Answered), fmt.Sprint(t.Refused),
			fmt.Sprint(t.Unknown), fmt.Sprint(t.Checked), settledText(t.Settled)})
	}
	if st := oc.Stream; st != nil {
		c := "good"
		if st.Missed > 0 {
			c = "bad"
		}
		v.OnCall = append(v.OnCall, kv{K: fmt.Sprintf("ticks missed (%d delivered, %d snapshots)", st.Messages, st.Snapshots), V: fmt.Sprint(st.Missed), Class: c},
			kv{K: "longest silence of the price stream", V: ms(st.LongestSilence)})
	} else {
		v.OnCall = append(v.OnCall, kv{K: "ticks missed", V: "no stream recorded"})
	}
	land := NotMeasured
	for _, l := range f.Landing {
		if l.Transport == "submission gate" {
			land = l.After
		}
	}
	v.Headline = append(v.Headline, kv{K: "orders flow again on " + orDash(in.Survivor), V: afterFault(land)})
	if f.Wave.Size > 0 {
		v.Headline = append(v.Headline, kv{K: fmt.Sprintf("95%% of %d WS clients on %s", f.Wave.Size, in.Survivor), V: afterFault(f.Wave.P95)})
	}
	if f.Handshakes.Measured {
		hs := kv{K: fmt.Sprintf("peak handshakes/s at %s (requests %.0f/s, %d refused 503)", in.Survivor, f.Handshakes.PeakAttemptsPerSecond, f.Handshakes.OverBudget+f.Handshakes.Unavailable),
			V: fmt.Sprintf("%.0f", f.Handshakes.PeakPerSecond)}
		if b := f.Handshakes.Budget; b.PerSecond > 0 {
			hs.V += fmt.Sprintf(" / budget %.0f (+%d burst)", b.PerSecond, b.Burst)
			hs.Class = "good"
			if !f.Handshakes.UnderBudget() {
				hs.Class = "bad"
			}
		}
		v.Headline = append(v.Headline, hs)
	}
	if f.Resume.Measured {
		r := kv{K: "resumed from sequence", V: pct(f.Resume.ResumedFraction()), Class: "good"}
		if fr := f.Resume.ResumedFraction(); !math.IsNaN(fr) && fr < 0.9 {
			r.Class = "warn"
		}
		v.Headline = append(v.Headline, r)
	}
	failed, total := 0, 0
	for _, o := range in.Orders {
		total++
		if o.Failed() {
			failed++
		}
	}
	if total > 0 {
		c := "good"
		if failed > 0 {
			c = "warn"
		}
		v.Headline = append(v.Headline, kv{K: "orders with an error", V: fmt.Sprintf("%d / %d (%s)", failed, total, pct(float64(failed)/float64(total))), Class: c})
	}
	held, refused, answered := 0, 0, 0
	var longest time.Duration
	for _, h := range f.Holds {
		for _, n := range h.Orders {
			held += n
		}
		refused += h.Refused
		answered += h.Answered
		longest = max(longest, h.MaxWait)
	}
	if held > 0 {
		v.Headline = append(v.Headline, kv{K: "orders placed while held",
			V: fmt.Sprintf("%d: %d answered after release (longest wait %s), %d refused", held, answered, ms(longest), refused)})
	}

	v.Timeline = timeline(in, f)
	v.Charts = charts(in)

	for _, l := range f.Landing {
		v.Landing = append(v.Landing, []string{l.Transport, afterFault(l.After), l.How})
	}
	if w := f.Wave; w.Size > 0 {
		v.Wave = [][]string{{"first", afterFault(w.First)}, {"50%", afterFault(w.P50)}, {"95%", afterFault(w.P95)}, {"all", afterFault(w.Last)},
			{"most connected to " + in.Survivor + " at once", fmt.Sprintf("%d of %d", w.Landed, w.Size)}}
	}
	if h := f.Handshakes; h.Measured {
		v.Handshake = [][]string{
			{"peak upgrades in one second", fmt.Sprintf("%.0f /s (window ending %s)", h.PeakPerSecond, rels(h.PeakAt))},
			{"peak handshake requests in one second", fmt.Sprintf("%.0f /s", h.PeakAttemptsPerSecond)},
			{"budget", budgetText(h.Budget)},
			{"within budget", yesNo(h.UnderBudget())},
			{"since the fault: requests / upgrades", fmt.Sprintf("%d / %d", h.Attempts, h.Accepted)},
			{"since the fault: 503 over budget / 503 faulted", fmt.Sprintf("%d / %d", h.OverBudget, h.Unavailable)},
		}
		for _, r := range f.ByRegion {
			if r.Region == in.Survivor || !r.Measured {
				continue
			}
			v.Handshake = append(v.Handshake, []string{"peak at " + r.Region + " (whole run): upgrades / requests",
				fmt.Sprintf("%.0f /s / %.0f /s (ending %s), %d over budget since the fault", r.PeakPerSecond, r.PeakAttemptsPerSecond, rels(r.PeakAt), r.OverBudget)})
		}
	}
	if r := f.Resume; r.Measured {
		v.Resume = [][]string{
			{"resumed from their last sequence", fmt.Sprintf("%d (%s)", r.Resumes, pct(r.ResumedFraction()))},
			{"handed a snapshot instead", fmt.Sprintf("%d (%s)", r.Snapshots, pct(1-r.ResumedFraction()))},
			{"fresh subscribes (first connect)", fmt.Sprint(r.Subscribes)},
			{"reconnects / make-before-break migrations", fmt.Sprintf("%d / %d", r.Reconnects, r.Migrations)},
			{"failed dials (503s included)", fmt.Sprint(r.DialFailures)},
			{"longest total disconnection of one client", ms(r.MaxDisconnected)},
		}
	}
	v.Phases = in.phases()
	for _, e := range f.Errors {
		row := errRow{What: e.What, Detail: e.Detail}
		for _, p := range e.Phases {
			c := errCell{Text: "—"}
			if p.Total >= 0 {
				c.Text = fmt.Sprintf("%d / %d", p.Failed, p.Total)
				if p.Total > 0 {
					c.Text += " (" + pct(p.Rate()) + ")"
				}
				if p.Failed > 0 {
					c.Class = "warn"
				}
			}
			row.Cells = append(row.Cells, c)
		}
		v.Errors = append(v.Errors, row)
	}
	for _, h := range f.Holds {
		var parts []string
		keys := make([]string, 0, len(h.Orders))
		for k := range h.Orders {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, h.Orders[k]))
		}
		end, held, cause := "never released", "—", redact(h.Cause)
		if h.End != NotMeasured {
			// Held agrees with its own start and end; the Path's own figure
			// also counts a halt that preceded the hold.
			end, held = rels(h.End), ms(h.End-h.Start)
			if h.Held > h.End-h.Start+time.Millisecond {
				cause += fmt.Sprintf(" (orders waited %s counting the halt before)", ms(h.Held))
			}
		}
		v.Holds = append(v.Holds, []string{rels(h.Start), end, held, orDash(h.Endpoint), orDash(strings.Join(parts, ", ")),
			fmt.Sprintf("%d, longest wait %s", h.Answered, ms(h.MaxWait)), fmt.Sprint(h.Refused), cause})
	}
	for _, h := range f.Halts {
		end := "still halted"
		if h.End != NotMeasured {
			end = rels(h.End)
		}
		v.Halts = append(v.Halts, []string{rels(h.Start), end, redact(h.Cause)})
	}
	for _, s := range f.Switches {
		kind := "failover"
		if s.Failback {
			kind = "failback"
		}
		v.Switches = append(v.Switches, []string{rels(s.At), s.From + " → " + s.To, kind})
	}
	for _, n := range in.Notes {
		if n.Source == "scenario" {
			v.Notes = append(v.Notes, rels(in.rel(n.Time))+"  "+redact(n.Text))
		}
	}
	if !f.Handshakes.Measured {
		v.Gaps = append(v.Gaps, "No broker handshake counters (real endpoints): the peak handshake rate at the survivor is not measured; read it from the broker's own metrics.")
	}
	if !f.Resume.Measured {
		v.Gaps = append(v.Gaps, "No WebSocket population: resume vs snapshot and the reconnect wave are not measured.")
	}
	if in.FaultAt.IsZero() {
		v.Gaps = append(v.Gaps, "No fault was injected: times to land are not measured.")
	}
	return v
}

// worst are the on-call tiles for the worst of the run, most severe first:
// the halts, the transport whose orders waited longest after the fault, and
// the share of orders that failed.
func worst(in Input, f Figures) []kv {
	var out []kv
	if n := len(f.Halts); n > 0 {
		var total, longest time.Duration
		open := false
		for _, h := range f.Halts {
			end := h.End
			if end == NotMeasured {
				end, open = in.rel(in.end()), true
			}
			total += end - h.Start
			longest = max(longest, end-h.Start)
		}
		v := fmt.Sprintf("%d× — %s in all, longest %s", n, ms(total), ms(longest))
		if open {
			v += ", still halted at the end"
		}
		out = append(out, kv{K: "trading halted (orders refused at once)", V: v, Class: "bad"})
	}
	var slowest Landing
	found := false
	for _, l := range f.Landing {
		if !strings.HasSuffix(l.Transport, " orders") || found && slowest.After == NotMeasured {
			continue
		}
		if !found || l.After == NotMeasured || l.After > slowest.After {
			slowest, found = l, true
		}
	}
	if found {
		k := kv{K: "slowest back after the fault: " + slowest.Transport + " (" + slowest.How + ")", V: afterFault(slowest.After), Class: "good"}
		switch {
		case slowest.After == NotMeasured || slowest.After >= 10*time.Second:
			k.Class = "bad"
		case slowest.After >= time.Second:
			k.Class = "warn"
		}
		if slowest.After == NotMeasured {
			k.V = "never"
		}
		out = append(out, k)
	}
	failed, total := 0, 0
	for _, o := range in.Orders {
		total++
		if o.Failed() {
			failed++
		}
	}
	if total > 0 {
		r := float64(failed) / float64(total)
		k := kv{K: "orders with an error (not sent, unknown, rejected or never answered)", V: fmt.Sprintf("%s (%d of %d)", pct(r), failed, total), Class: "good"}
		switch {
		case r >= 0.10:
			k.Class = "bad"
		case failed > 0:
			k.Class = "warn"
		}
		out = append(out, k)
	}
	rank := map[string]int{"bad": 0, "warn": 1, "good": 2, "": 3}
	slices.SortStableFunc(out, func(a, b kv) int { return rank[a.Class] - rank[b.Class] })
	return out
}

func timeClass(d time.Duration) string {
	if d == NotMeasured {
		return ""
	}
	return "good"
}

func orNotRecorded(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}

// settledText renders {"filled": 2, "not received": 1} as "2 filled, 1 not received".
func settledText(m map[string]int) string {
	if len(m) == 0 {
		return "—"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

func afterFault(d time.Duration) string {
	if d == NotMeasured {
		return "not measured"
	}
	return ms(d) + " after the fault"
}

func budgetText(b Budget) string {
	if b.PerSecond <= 0 {
		return "none configured"
	}
	return fmt.Sprintf("%.0f /s, burst %d", b.PerSecond, b.Burst)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// charts: handshakes per second per region against the budget, and the
// population's connections per endpoint.
func charts(in Input) []svgDoc {
	var out []svgDoc
	regions := map[string]bool{}
	hasPop := false
	for _, s := range in.Samples {
		for r := range s.Regions {
			regions[r] = true
		}
		hasPop = hasPop || s.Connected != nil
	}
	names := laneOrder(in)
	for _, r := range names {
		if !regions[r] {
			continue
		}
		read := func(f func(RegionWS) uint64) func(Sample) (float64, bool) {
			return func(s Sample) (float64, bool) {
				st, ok := s.Regions[r]
				return float64(f(st)), ok
			}
		}
		acc := rateSeries(in, 250*time.Millisecond, "upgrades/s at "+r, colOK, read(func(s RegionWS) uint64 { return s.Handshakes }))
		rej := rateSeries(in, 250*time.Millisecond, "503 over budget/s at "+r, colFail, read(func(s RegionWS) uint64 { return s.OverBudget + s.Unavailable }))
		ref, refLabel := 0.0, ""
		if in.Budget.PerSecond > 0 {
			ref, refLabel = in.Budget.PerSecond, fmt.Sprintf("budget %.0f/s", in.Budget.PerSecond)
		}
		out = append(out, chart(in, "WebSocket handshakes per second at "+r+" (250 ms buckets)", nil, ref, refLabel, []series{rej, acc}))
	}
	if hasPop {
		var ss []series
		palette := []string{colDown, colActive, colReconcile, colHold}
		for i, r := range names {
			s := series{name: "population connected to " + r, color: palette[i%len(palette)]}
			for _, sm := range in.Samples {
				if sm.Connected != nil {
					s.t = append(s.t, in.rel(sm.Time))
					s.v = append(s.v, float64(sm.Connected[r]))
				}
			}
			ss = append(ss, s)
		}
		out = append(out, chart(in, "WebSocket population: streams connected per endpoint", ss, 0, "", nil))
	}
	return out
}

var page = template.Must(template.New("drill").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
header{background:#1d2330;color:#fff;padding:14px 24px}
header h1{font-size:20px;margin:0 0 4px}
header .sub{color:#c4cad6;font-size:13px}
main{padding:14px 24px}
section{background:#fff;border-radius:6px;box-shadow:0 1px 2px rgba(0,0,0,.08);padding:10px 16px;margin-bottom:14px}
h2{font-size:15px;margin:0 0 8px}
h3{font-size:13px;margin:10px 0 4px;color:#4a5366}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #e6e8ec;vertical-align:top}
th{font-weight:600;color:#4a5366;font-size:12px;text-transform:uppercase;letter-spacing:.03em;white-space:nowrap}
td.n{white-space:nowrap;font-variant-numeric:tabular-nums}
.tiles{display:flex;flex-wrap:wrap;gap:10px}
.tile{border:1px solid #e6e8ec;border-radius:6px;padding:6px 12px;min-width:170px}
.tile span{display:block;color:#6b7385;font-size:12px}
.tile b{font-size:17px}
.good b,.badge.good{color:#11652b}.warn b,.badge.warn{color:#7a5300}.bad b,.badge.bad{color:#9b1c13}
.badge.muted{color:#4a5366;background:#e6e8ec}
td.warn{color:#7a5300;font-weight:600}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:700;background:#fff}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:14px}
.cols section{margin:0}
.legend{font-size:12px;color:#4a5366;margin:4px 0 0}
.legend i{display:inline-block;width:11px;height:11px;margin:0 4px -1px 12px;border-radius:2px}
.small{color:#6b7385;font-size:12px}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;white-space:pre-wrap}
svg{display:block}
svg .lane{font:600 13px system-ui,sans-serif;fill:#1d2330}
svg .small{font:11px system-ui,sans-serif;fill:#6b7385}
svg .tick{font:11px system-ui,sans-serif;fill:#6b7385}
svg .mark{font:600 11px system-ui,sans-serif}
svg .bold{font:700 12px system-ui,sans-serif}
</style>
</head>
<body>
<header>
<h1>{{.Title}}{{range .Verdict}}{{if eq .Class "bad"}} <span class="badge {{.Class}}">{{.V}}</span>{{end}}{{end}} {{if .OK}}<span class="badge {{.InvClass}}">{{.InvText}}</span>{{else}}<span class="badge bad">INVARIANTS BROKEN</span>{{end}}{{range .Verdict}}{{if ne .Class "bad"}} <span class="badge {{.Class}}">{{.V}}</span>{{end}}{{end}}</h1>
<div class="sub">fault: {{if .Fault}}{{.Fault}}{{else}}none{{end}} · primary {{if .Primary}}{{.Primary}}{{else}}—{{end}} · survivor {{if .Survivor}}{{.Survivor}}{{else}}—{{end}} · run {{.Duration}} · {{.Checked}} invariants checked</div>
<div class="sub" id="provenance">date {{if .Date}}{{.Date}}{{else}}—{{end}} · seed {{.Seed}} · commit {{.Commit}}</div>
</header>
<main>
<section>
<h2>For on-call</h2>
<div class="tiles" id="oncall">{{range .OnCall}}<div class="tile {{.Class}}"><span>{{.K}}</span><b>{{.V}}</b></div>{{end}}</div>
{{if .HeldWhy}}<p class="small">held because: {{range $i, $w := .HeldWhy}}{{if $i}}; then {{end}}<span class="mono">{{$w}}</span>{{end}}</p>{{end}}
{{if .Orders}}<h3>Orders per transport</h3>
<table id="orders"><tr><th>transport</th><th>placed</th><th>answered</th><th>refused (not sent)</th><th>outcome unknown</th><th>checked with the broker</th><th>found</th></tr>
{{range .Orders}}<tr><td>{{index . 0}}</td><td class="n">{{index . 1}}</td><td class="n">{{index . 2}}</td><td class="n">{{index . 3}}</td><td class="n">{{index . 4}}</td><td class="n">{{index . 5}}</td><td class="small">{{index . 6}}</td></tr>{{end}}</table>
<p class="small">Checked with the broker: orders whose outcome was unknown, or that were still in flight when the old path was cut off, looked up on the new path before orders were released; each counted once, under what the broker last said of it.</p>{{end}}
</section>
<section>
<h2>Drill figures</h2>
<div class="tiles">{{range .Headline}}<div class="tile {{.Class}}"><span>{{.K}}</span><b>{{.V}}</b></div>{{end}}</div>
</section>
<section id="invariants">
<h2>Invariants {{if .OK}}<span class="badge good">all held</span>{{else}}<span class="badge bad">{{len .Violations}} broken</span>{{end}}</h2>
{{if .Violations}}<h3>Broken</h3><ul>{{range .Violations}}<li class="bad">{{.}}</li>{{end}}</ul>{{end}}
{{if .Invariants}}<h3>Checked</h3><ol class="small">{{range .Invariants}}<li>{{.}}</li>{{end}}</ol>{{else}}<p class="small">none checked</p>{{end}}
</section>
<section>
<h2>Timeline</h2>
{{template "svg" .Timeline}}
</section>
{{range .Charts}}<section><h2>{{.Label}}</h2>{{template "svg" .}}</section>{{end}}
<div class="cols">
<section>
<h2>Time until flow landed on {{.Survivor}}</h2>
{{if .Landing}}<table><tr><th>flow</th><th>landed</th><th>measured as</th></tr>
{{range .Landing}}<tr><td>{{index . 0}}</td><td class="n">{{index . 1}}</td><td class="small">{{index . 2}}</td></tr>{{end}}</table>{{else}}<p class="small">not measured</p>{{end}}
{{if .Wave}}<h3>Reconnect wave of the WebSocket population onto {{.Survivor}}</h3>
<table>{{range .Wave}}<tr><td>{{index . 0}}</td><td class="n">{{index . 1}}</td></tr>{{end}}</table>{{end}}
</section>
<section>
<h2>Handshakes at {{.Survivor}} against its budget</h2>
{{if .Handshake}}<table>{{range .Handshake}}<tr><td>{{index . 0}}</td><td class="n">{{index . 1}}</td></tr>{{end}}</table>{{else}}<p class="small">not measured</p>{{end}}
<h3>Resume vs snapshot (WebSocket population)</h3>
{{if .Resume}}<table>{{range .Resume}}<tr><td>{{index . 0}}</td><td class="n">{{index . 1}}</td></tr>{{end}}</table>{{else}}<p class="small">not measured</p>{{end}}
</section>
</div>
<section>
<h2>Error rates (failed / total) before, during and after the fault</h2>
<table><tr><th>what</th>{{range .Phases}}<th>{{.}}</th>{{end}}<th>breakdown</th></tr>
{{range .Errors}}<tr><td>{{.What}}</td>{{range .Cells}}<td class="n {{.Class}}">{{.Text}}</td>{{end}}<td class="small">{{.Detail}}</td></tr>{{end}}</table>
<p class="small">Orders are attributed to the phase they were placed in; reads and handshakes to the sample interval they happened in. An order counts as failed when its caller saw an error (not sent, unknown outcome, rejected) or it was never answered.</p>
</section>
<section>
<h2>Orders held</h2>
{{if .Holds}}<table><tr><th>hold</th><th>release</th><th>held</th><th>released on</th><th>orders placed while held</th><th>answered after</th><th>refused</th><th>cause</th></tr>
{{range .Holds}}<tr><td class="n">{{index . 0}}</td><td class="n">{{index . 1}}</td><td class="n">{{index . 2}}</td><td>{{index . 3}}</td><td>{{index . 4}}</td><td class="n">{{index . 5}}</td><td class="n">{{index . 6}}</td><td class="small">{{index . 7}}</td></tr>{{end}}</table>{{else}}<p class="small">no hold</p>{{end}}
{{if .Halts}}<h3>Halts</h3><table><tr><th>halt</th><th>end</th><th>cause</th></tr>{{range .Halts}}<tr><td class="n">{{index . 0}}</td><td class="n">{{index . 1}}</td><td class="small">{{index . 2}}</td></tr>{{end}}</table>{{end}}
{{if .Switches}}<h3>Switches</h3><table><tr><th>at</th><th>switch</th><th>kind</th></tr>{{range .Switches}}<tr><td class="n">{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td></tr>{{end}}</table>{{end}}
</section>
{{if .Notes}}<section><h2>Script</h2><div class="mono">{{range .Notes}}{{.}}
{{end}}</div></section>{{end}}
{{if .Gaps}}<section><h2>Not measured</h2><ul>{{range .Gaps}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
</main>
</body>
</html>
{{define "svg"}}<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="{{.Label}}">
{{range .Rects}}<rect x="{{printf "%.1f" .X}}" y="{{printf "%.1f" .Y}}" width="{{printf "%.1f" .W}}" height="{{printf "%.1f" .H}}" fill="{{.Fill}}" fill-opacity="{{.Opacity}}">{{if .Title}}<title>{{.Title}}</title>{{end}}</rect>
{{end}}{{range .Lines}}<line x1="{{printf "%.1f" .X1}}" y1="{{printf "%.1f" .Y1}}" x2="{{printf "%.1f" .X2}}" y2="{{printf "%.1f" .Y2}}" stroke="{{.Stroke}}" stroke-width="{{.Width}}"{{if .Dash}} stroke-dasharray="{{.Dash}}"{{end}}>{{if .Title}}<title>{{.Title}}</title>{{end}}</line>
{{end}}{{range .Polys}}<polyline points="{{.Points}}" fill="none" stroke="{{.Stroke}}" stroke-width="2"{{if .Dash}} stroke-dasharray="{{.Dash}}"{{end}}><title>{{.Title}}</title></polyline>
{{end}}{{range .Marks}}<polygon points="{{.Points}}" fill="{{.Fill}}" stroke="#fff" stroke-width="1"><title>{{.Title}}</title></polygon>
{{end}}{{range .Texts}}<text x="{{printf "%.1f" .X}}" y="{{printf "%.1f" .Y}}" text-anchor="{{.Anchor}}"{{if .Class}} class="{{.Class}}"{{end}}{{if .Fill}} fill="{{.Fill}}"{{end}}>{{.Text}}</text>
{{end}}</svg>
{{if .Legend}}<div class="legend">{{range .Legend}}<i style="background:{{.Color}}"></i>{{.Text}}{{end}}</div>{{end}}{{end}}
`))
