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
<title>{{.Title}} — {{.Flow}} on {{.Active}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
header{background:#1d2330;color:#fff;padding:14px 24px;display:flex;flex-wrap:wrap;gap:28px;align-items:baseline}
header h1{font-size:20px;margin:0 12px 0 0}
header .kv span{color:#9aa3b5;margin-right:6px}
header a{color:#9cc3ff}
main{padding:16px 24px}
section{background:#fff;border-radius:6px;box-shadow:0 1px 2px rgba(0,0,0,.08);padding:12px 16px;margin-bottom:16px}
h2{font-size:15px;margin:0 0 8px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #e6e8ec;vertical-align:top}
th{font-weight:600;color:#4a5366;font-size:12px}
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
.grid{display:flex;flex-wrap:wrap;gap:28px}
.grid div span{display:block;color:#6b7385;font-size:12px}
.grid div b{font-size:22px}
.grid div i{display:block;color:#6b7385;font-size:11px;font-style:normal}
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<div class="kv"><span>orders go to</span><b id="active">{{.Active}}</b></div>
<div class="kv"><b class="badge {{.FlowClass}}" id="flow">{{.Flow}}</b>{{if .FlowFor}} <span>for {{.FlowFor}}</span>{{end}}</div>
<div class="kv"><span>switches since start</span><b>{{.Switches}}</b></div>
<div class="kv"><span>health checks</span>{{if .MonitorStale}}<b class="badge bad">STALLED</b>{{else}}<b class="badge good">running</b>{{end}} <span>every {{.MonitorInterval}}, last {{.MonitorAge}}</span></div>
<div class="kv small">{{.Now}} · <a href="{{.JSONURL}}">JSON</a>{{if .MetricsURL}} · <a href="{{.MetricsURL}}">metrics</a>{{end}}</div>
</header>
<main>
{{if .Worst}}<section id="worst"><h2>Worst since start</h2>{{range .Worst}}<div><span class="badge {{.Class}}">{{.Text}}</span></div>{{end}}</section>{{end}}
{{if .ProvisionalCount}}<section id="provisional">
<h2>Orders not yet known to be lost: {{.ProvisionalCount}} order{{if ne .ProvisionalCount 1}}s{{end}} NOT_RECEIVED, provisionally</h2>
<div class="small" style="margin-bottom:6px">The broker has no record of these orders, but a copy sent through the old path could still be booked. Do not place them again under a new client order ID. The Path looks each one up again when its re-query is due; place it again only when <span class="mono">Path.MayResend(id)</span> says yes, under the same client order ID. Until then, count each as possibly filled.</div>
<table>
<tr><th>order</th><th>transport</th><th>sent through</th><th>found at (UTC)</th><th>re-query</th></tr>
{{range .Provisional}}<tr><td class="mono">{{.Order}}</td><td>{{.Service}}</td><td>{{.Endpoint}}</td><td class="mono">{{.Found}}</td><td class="nw">{{.Requery}}</td></tr>
{{end}}</table>{{if .ProvisionalHidden}}<div class="small">Order IDs are hidden: set <span class="mono">status.Options.ShowOrderIDs</span> to show them here and in the JSON.</div>{{end}}{{if gt .ProvisionalMore 0}}<div class="small">… and {{.ProvisionalMore}} more (see the JSON)</div>{{end}}
</section>{{end}}
{{if .FlowCause}}<section><h2>Why orders are {{if eq .FlowClass "bad"}}refused{{else}}held{{end}}</h2><div class="mono" id="flow-cause">{{.FlowCause}}</div></section>{{end}}
<section>
<h2>Failback</h2>
<span class="badge {{.FailbackCls}}" id="failback">{{.Failback}}</span>
</section>
<section id="last-switch">
{{with .Last}}<h2>Last switch: {{.Title}}{{if .At}} at {{.At}} UTC{{end}}{{if .InProgress}} <span class="badge warn">in progress</span>{{end}}</h2>
<div class="grid">
<div><span>time to detect</span><b id="time-to-detect">{{.Detect}}</b><i>first failed probe → declared down</i></div>
<div><span>time to switch</span><b id="time-to-switch">{{.Switch}}</b><i>declared down → the new path chosen (orders stay held until checked)</i></div>
<div><span>orders held</span><b id="time-held">{{.Held}}</b><i>orders waited (or were refused) this long{{if .HeldSplit}}: {{.HeldSplit}}{{end}}</i>{{if .HeldBy}}<i id="held-by-service">by service: {{.HeldBy}}</i>{{end}}</div>
<div><span>orders checked with the broker</span><b id="reconciled">{{.Reconciled}}</b><i>outcome unknown at the switch, then settled</i></div>
</div>
{{if .Steps}}<div class="small mono" style="margin-top:8px" id="steps">{{range $i, $s := .Steps}}{{if $i}} → {{end}}{{$s}}{{end}}</div>{{end}}
{{if .Why}}<div class="small" style="margin-top:8px">held because: {{range $i, $w := .Why}}{{if $i}}; then {{end}}<span class="mono">{{$w}}</span>{{end}}</div>{{end}}
{{else}}<h2>Last switch</h2><div class="small">no switch since start</div>{{end}}
</section>
<section>
<h2>Orders per transport</h2>
{{if .Orders}}<table id="orders">
<tr><th>transport</th><th>sent</th><th>answered by the broker</th><th>refused (not sent)</th><th>outcome unknown now</th><th>checked with the broker after a switch</th><th>found</th></tr>
{{range .Orders}}<tr><td><b>{{.Transport}}</b></td><td class="num">{{.Sent}}</td><td class="num">{{.Answered}}</td><td class="num">{{.Refused}}</td><td class="num">{{.Unknown}}</td><td class="num">{{.Reconciled}}</td><td class="small">{{.Settled}}</td></tr>
{{end}}</table>{{else}}<div class="small">no transport watched and no order checked yet</div>{{end}}
<div class="small" style="margin-top:6px">in flight now: {{.InFlight}} · outcome unknown now: {{.Unknown}} · halts since start: {{.Halts}}</div>
<div class="small" id="resting">fence mode: <span class="mono">{{.FenceMode}}</span> · resting orders cancelled by switches: {{.RestingCancelled}}</div>
</section>
{{with .Stream}}<section>
<h2>Market data</h2>
<div class="grid">
<div><span>ticks missed</span><b id="ticks-missed">{{.Missed}}</b></div>
<div><span>longest silence</span><b>{{.Silence}}</b></div>
<div><span>messages</span><b>{{.Messages}}</b></div>
<div><span>reconnects</span><b>{{.Reconnects}}</b><i>{{.Resumes}} resumed, {{.Snapshots}} from a snapshot</i></div>
<div><span>time disconnected</span><b>{{.Disconnected}}</b></div>
<div><span>connected to</span><b>{{.Endpoint}}</b></div>
</div>
</section>{{end}}
<section>
<h2>Endpoints</h2>
<table>
<tr><th>endpoint</th><th>region</th><th>health</th><th>last good probe</th><th>failed in a row</th><th>good in a row</th><th>probe time</th><th>connections</th><th>notes</th><th>last probe error</th></tr>
{{range .Endpoints}}<tr{{if .Active}} class="active"{{end}}>
<td><b>{{.Name}}</b>{{if .Active}} <span class="badge good">ORDERS GO HERE</span>{{end}}</td>
<td>{{.Region}}</td>
<td><span class="badge {{.StateClass}}">{{.State}}</span></td>
<td class="nw{{if .Stale}} stale{{end}}">{{.Age}}</td>
<td class="num">{{.Failures}}</td>
<td class="num">{{.Successes}}</td>
<td class="num">{{.Latency}}</td>
<td class="num">{{.Conns}}</td>
<td class="small">{{range .Notes}}{{.}} {{end}}{{if .Fenced}}<span class="badge bad">CUT OFF</span>{{end}}</td>
<td class="mono">{{.LastError}}</td>
</tr>
{{end}}</table>
<div class="small" style="margin-top:6px">An endpoint can take orders when it is HEALTHY with a good probe within {{.MaxHealthAge}}. CUT OFF: switched away from; its connections were closed and new ones are refused.</div>
</section>
{{if .Incidents}}<section>
<h2>Recent switches (most recent first)</h2>
<table>
<tr><th>at (UTC)</th><th>what</th><th>time to detect</th><th>time to switch</th><th>held</th><th>checked with the broker</th><th>why held</th></tr>
{{range .Incidents}}<tr><td class="mono">{{.At}}</td><td>{{.Title}}</td><td class="num">{{.Detect}}</td><td class="num">{{.Switch}}</td><td class="num">{{.Held}}</td><td class="small">{{.Reconciled}}</td><td class="small">{{range $i, $w := .Why}}{{if $i}}; {{end}}{{$w}}{{end}}</td></tr>
{{end}}</table>
</section>{{end}}
<section>
<h2>Recent events (most recent first)</h2>
{{if .Events}}<table>
<tr><th>at (UTC)</th><th>kind</th><th>what happened</th></tr>
{{range .Events}}<tr><td class="mono">{{.Time}}</td><td><span class="badge {{.Class}}">{{.Kind}}</span></td><td>{{.Text}}</td></tr>
{{end}}</table>{{else}}<div class="small">none</div>{{end}}
</section>
</main>
</body>
</html>
`))
