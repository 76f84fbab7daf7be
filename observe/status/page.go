package status

import "html/template"

// page is the HTML status page: one file, inline CSS, no script, no external
// asset. html/template escapes every value.
var page = template.Must(template.New("status").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{{if gt .RefreshSeconds 0}}<meta http-equiv="refresh" content="{{.RefreshSeconds}}">{{end}}
<title>{{.Title}} — {{.Gate}} on {{.Active}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
header{background:#1d2330;color:#fff;padding:14px 24px;display:flex;flex-wrap:wrap;gap:28px;align-items:baseline}
header h1{font-size:20px;margin:0 12px 0 0}
header .kv span{color:#9aa3b5;margin-right:6px}
main{padding:16px 24px}
section{background:#fff;border-radius:6px;box-shadow:0 1px 2px rgba(0,0,0,.08);padding:12px 16px;margin-bottom:16px}
h2{font-size:15px;margin:0 0 8px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #e6e8ec;vertical-align:top}
th{font-weight:600;color:#4a5366;font-size:12px;text-transform:uppercase;letter-spacing:.03em}
td.num{text-align:right;font-variant-numeric:tabular-nums}
th,td.num,.nw{white-space:nowrap}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:12px}
.good,.healthy{background:#d7f5df;color:#11652b}
.warn,.degraded{background:#fff1cc;color:#7a5300}
.bad,.down{background:#fde0de;color:#9b1c13}
.muted,.unknown{background:#e6e8ec;color:#4a5366}
tr.active td{background:#eef5ff}
.stale{color:#9b1c13;font-weight:600}
.small{color:#6b7385;font-size:12px}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.grid{display:flex;flex-wrap:wrap;gap:24px}
.grid div span{display:block;color:#6b7385;font-size:12px}
.grid div b{font-size:18px}
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<div class="kv"><span>active</span><b id="active">{{.Active}}</b></div>
<div class="kv"><span>generation</span><b>{{.Generation}}</b></div>
<div class="kv"><span>gate</span><b class="badge {{.GateClass}}" id="gate">{{.Gate}}</b>{{if .GateAge}} <span>for {{.GateAge}}</span>{{end}}</div>
<div class="kv"><span>monitor</span>{{if .MonitorStale}}<b class="badge bad">STALLED</b>{{else}}<b class="badge good">LIVE</b>{{end}} <span>last round {{.MonitorAge}}, every {{.MonitorInterval}}</span></div>
<div class="kv small">{{.Now}}</div>
</header>
<main>
{{if .GateCause}}<section><h2>Gate cause</h2><div class="mono">{{.GateCause}}</div></section>{{end}}
<section>
<div class="grid">
<div><span>tickets in flight</span><b>{{.InFlight}}</b></div>
<div><span>unknown outcome (to reconcile)</span><b>{{.Unknown}}</b></div>
<div><span>halts</span><b>{{.Halts}}</b></div>
<div><span>dropped stale reports</span><b>{{.Dropped}}</b></div>
<div><span>fresh if success within</span><b>{{.MaxHealthAge}}</b></div>
</div>
</section>
<section>
<h2>Endpoints</h2>
<table>
<tr><th>endpoint</th><th>region</th><th>prio</th><th>state</th><th>last success</th><th>fails</th><th>oks</th><th>latency</th><th>conns</th><th>services</th><th>flags</th><th>last probe error</th></tr>
{{range .Endpoints}}<tr{{if .Active}} class="active"{{end}}>
<td><b>{{.Name}}</b>{{if .Active}} <span class="badge good">ACTIVE</span>{{end}}</td>
<td>{{.Region}}</td>
<td class="num">{{.Priority}}</td>
<td><span class="badge {{.StateClass}}">{{.State}}</span></td>
<td class="nw{{if .Stale}} stale{{end}}">{{.Age}}</td>
<td class="num">{{.Failures}}</td>
<td class="num">{{.Successes}}</td>
<td class="num">{{.Latency}}</td>
<td class="num">{{.Conns}}</td>
<td class="small">{{.Services}}</td>
<td class="small">{{if .Primary}}primary {{end}}{{if .Eligible}}eligible {{end}}{{if .Fenced}}<span class="badge bad">FENCED</span>{{end}}</td>
<td class="mono">{{.LastError}}</td>
</tr>
{{end}}</table>
</section>
<section>
<h2>Switches (most recent first)</h2>
{{if .Switches}}<table>
<tr><th>at (UTC)</th><th>kind</th><th>from → to</th><th>generation</th><th>notes</th></tr>
{{range .Switches}}<tr><td class="mono">{{.At}}</td><td>{{.Kind}}</td><td class="nw">{{.From}} → {{.To}}</td><td class="num">{{.Generation}}</td><td class="small">{{.Notes}}</td></tr>
{{end}}</table>{{else}}<div class="small">none since start</div>{{end}}
</section>
<section>
<h2>Recent decisions</h2>
{{if .Decisions}}<table>
<tr><th>at (UTC)</th><th>kind</th><th>outcome</th><th>from → to</th><th>notes</th></tr>
{{range .Decisions}}<tr><td class="mono">{{.At}}</td><td>{{.Kind}}</td><td><span class="badge {{.OutcomeClass}}">{{.Outcome}}</span></td><td class="nw">{{.From}} → {{.To}}</td><td class="small">{{.Notes}}</td></tr>
{{end}}</table>{{else}}<div class="small">no decision other than NO_ACTION</div>{{end}}
</section>
<section>
<h2>Recent events (most recent first)</h2>
{{if .Events}}<table>
<tr><th>at (UTC)</th><th>kind</th><th>event</th></tr>
{{range .Events}}<tr><td class="mono">{{.Time}}</td><td><span class="badge {{.Class}}">{{.Kind}}</span></td><td class="mono">{{.Text}}</td></tr>
{{end}}</table>{{else}}<div class="small">none</div>{{end}}
</section>
</main>
</body>
</html>
`))
