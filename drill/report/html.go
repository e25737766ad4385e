package report

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/drctl/drctl/drill"
)

// HTML writes the record as one self-contained HTML file: the verdict, the
// measurements against objectives, the Evidence section for an auditor,
// the records lost to source retention per link, a timeline of the steps and the canary latency over time, both
// as inline SVG. No external asset, no script.
func HTML(w io.Writer, r *drill.Record) error {
	cs := checks(r)
	data := struct {
		R                          *drill.Record
		Checks                     []check
		Tested, Integrity          []evidenceFact
		Topics                     []evidenceTopic
		Rules                      []ruleRow
		EvidenceIntro, Disclaimer  string
		Losses                     []linkLosses
		LossesIntro                template.HTML
		Timeline, Latency          template.HTML
		Started, Duration, PassTxt string
	}{R: r, Checks: cs, Tested: testedFacts(r, cs), Integrity: integrityFacts(r), Topics: evidenceTopics(r, cs), Rules: ruleRows,
		EvidenceIntro: evidenceIntro, Disclaimer: evidenceDisclaimer, Losses: lossesOf(r), LossesIntro: template.HTML(lossesIntro(htmlCode)),
		Timeline: template.HTML(timelineSVG(r)), Latency: template.HTML(latencySVG(r)),
		Started: r.StartedAt.UTC().Format(time.RFC3339), Duration: r.Duration().Round(time.Millisecond).String(), PassTxt: passText(cs)}
	return page.Execute(w, data)
}

func htmlCode(s string) string { return "<code>" + html.EscapeString(s) + "</code>" }

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"upper":  func(v drill.Verdict) string { return strings.ToUpper(string(v)) },
	"dur":    dur,
	"inc":    func(i int) int { return i + 1 },
	"title":  directionTitle,
	"n64":    n64,
	"lostAt": lostAt,
	"resultClass": func(r result) string {
		switch r {
		case resultOK:
			return "ok"
		case resultFail:
			return "bad"
		case resultNoObjective:
			return "info"
		}
		return "na"
	},
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("15:04:05.000")
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>drctl drill {{.R.ID}}: {{upper .R.Verdict}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:960px;color:#1d2430;padding:0 1rem}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d8dee8;padding-bottom:.3rem}
.verdict{display:inline-block;padding:.2rem .8rem;border-radius:4px;color:#fff;font-weight:700}
.pass{background:#1f8a4c}.fail{background:#c0392b}
table{border-collapse:collapse;width:100%;font-size:.92rem}td,th{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #e6eaf0;vertical-align:top}
th{background:#f4f6fa}.ok{color:#1f8a4c;font-weight:600}.bad{color:#c0392b;font-weight:700}.info{color:#1d2430}
.na{color:#8a93a2;font-style:italic}tr.unmeasured td{color:#8a93a2;background:#fafbfc}
.meta td:first-child{width:9rem;color:#5a6473}code{font-size:.88rem}svg{display:block;margin-top:.5rem}
.note{color:#5a6473;font-size:.9rem}table.evidence td.what{width:10rem;font-weight:600}table.evidence td.note{width:16rem}
table.evidence td{overflow-wrap:anywhere}h3{font-size:1rem;margin-top:1.4rem}.evidence-box{border-left:4px solid #2e7dd7;padding-left:1rem}.note code{white-space:nowrap}.link small{display:block;color:#5a6473}td.num{text-align:right}
</style></head><body>
<h1>Drill {{.R.Drill}} <span class="verdict {{.R.Verdict}}">{{upper .R.Verdict}}</span></h1>
<table class="meta">
<tr><td>Drill id</td><td><code>{{.R.ID}}</code> (kind {{.R.Kind}})</td></tr>
<tr><td>Topology</td><td>{{.R.Topology}}, digest <code>{{.R.TopologyDigest}}</code></td></tr>
<tr><td>Roles</td><td>active {{.R.Active}}, standby {{.R.Standby}}</td></tr>
<tr><td>Run by</td><td>{{.R.By}}</td></tr>
<tr><td>Started</td><td>{{.Started}}, took {{.Duration}}</td></tr>
</table>
{{with .R.Next}}<p class="next"><strong>Next:</strong> {{.}}</p>{{end}}
<h2>Verdict</h2>
{{if .R.Reasons}}<ul>{{range .R.Reasons}}<li>{{.}}</li>{{end}}</ul>{{else}}<p>Pass: {{.PassTxt}}</p>{{end}}
<h2>Measurements</h2>
<table><tr><th>Check</th><th>Measured</th><th>Objective</th><th>Result</th></tr>
{{range .Checks}}<tr{{if not .Result.Measured}} class="unmeasured"{{end}}><td>{{.Name}}</td><td>{{.Measured}}</td><td>{{.Objective}}</td><td><span class="{{resultClass .Result}}">{{.Result}}</span></td></tr>
{{end}}</table>
{{with .R.Preflight}}{{if .Problems}}<p>Failover preflight problems:</p><ul>{{range .Problems}}<li>{{.}}</li>{{end}}</ul>{{end}}{{end}}
<h2>Evidence</h2>
<div class="evidence-box">
<p class="note">{{.EvidenceIntro}}</p>
<h3>What was tested</h3>
<table class="evidence"><tr><th></th><th>This drill</th><th>What it is</th></tr>
{{range .Tested}}<tr><td class="what">{{.Name}}</td><td{{if .Bad}} class="bad"{{end}}>{{.Value}}</td><td class="note">{{.Note}}</td></tr>
{{end}}</table>
<h3>What was measured</h3>
<table class="evidence"><tr><th>Evidence</th><th>What it shows</th><th>Measured</th><th>Result</th></tr>
{{range .Topics}}{{if .Checks}}{{$t := .}}{{range $i, $c := .Checks}}<tr>{{if eq $i 0}}<td class="what" rowspan="{{len $t.Checks}}">{{$t.Name}}</td><td class="note" rowspan="{{len $t.Checks}}">{{$t.Shows}}</td>{{end}}<td>{{$c.Name}}: {{$c.Measured}}</td><td><span class="{{resultClass $c.Result}}">{{$c.Result}}</span></td></tr>
{{end}}{{else}}<tr class="unmeasured"><td class="what">{{.Name}}</td><td class="note">{{.Shows}}</td><td>{{.Missing}}</td><td><span class="na">{{.MissingResult}}</span></td></tr>
{{end}}{{end}}</table>
<h3>Integrity of this record</h3>
<table class="evidence"><tr><th></th><th>This record</th><th>How to check</th></tr>
{{range .Integrity}}<tr><td class="what">{{.Name}}</td><td{{if .Bad}} class="bad"{{end}}>{{.Value}}</td><td class="note">{{.Note}}</td></tr>
{{end}}</table>
<h3>What recovery-testing rules ask</h3>
<table class="evidence"><tr><th>Rule</th><th>What it asks</th><th>Where this report answers</th></tr>
{{range .Rules}}<tr><td class="what">{{.Rule}}</td><td>{{.Asks}}</td><td>{{.Where}}</td></tr>
{{end}}</table>
<p class="note">{{.Disclaimer}}</p>
</div>
<h2>Lost to source retention</h2>
<p class="note">{{.LossesIntro}}</p>
<table class="losses"><tr><th>Link</th><th>Topic</th><th>Partition</th><th>Offsets</th><th>Records</th><th>Found at</th></tr>
{{range .Losses}}{{if not .Read}}<tr class="unmeasured"><td class="link">{{.Name}}<small>link {{.Link}}</small></td><td colspan="5"><span class="na">not measured</span>: {{.Why}}</td></tr>
{{else if not .Ranges}}<tr><td class="link">{{.Name}}<small>link {{.Link}}</small></td><td colspan="5">{{.Summary}}</td></tr>
{{else}}{{$l := .}}{{range $i, $r := .Ranges}}<tr>{{if eq $i 0}}<td class="link" rowspan="{{len $l.Ranges}}">{{$l.Name}}<small>link {{$l.Link}}: {{n64 $l.Records}} records in {{len $l.Ranges}} range(s), not acknowledged</small></td>{{end}}<td>{{$r.Topic}}</td><td class="num">{{$r.Partition}}</td><td class="num">{{$r.From}}-{{$r.To}}</td><td class="num">{{n64 $r.Records}}</td><td>{{lostAt $r.At}}</td></tr>
{{end}}{{end}}{{end}}</table>
<h2>Timeline</h2>
{{.Timeline}}
{{if .Latency}}<h2>Canary latency</h2>
{{.Latency}}{{end}}
<h2>Steps</h2>
{{template "steps" .R.Steps}}
{{range .R.Directions}}{{if .RunSteps}}<h3>{{title .}}: run <code>{{.RunID}}</code></h3>
{{template "steps" .RunSteps}}{{end}}{{end}}
<p style="color:#8a93a2;font-size:.8rem;margin-top:2rem">Generated by drctl drill report.</p>
</body></html>
{{define "steps"}}<table><tr><th>#</th><th>Step</th><th>Started</th><th>Took</th><th>Status</th><th>Result</th></tr>
{{range $i, $s := .}}<tr><td>{{inc $i}}</td><td>{{$s.Title}}</td><td>{{clock $s.StartedAt}}</td><td>{{dur $s.ElapsedMS}}</td><td{{if eq $s.Status "failed"}} class="bad"{{end}}>{{$s.Status}}</td><td>{{if $s.Error}}{{$s.Error}}{{else}}{{$s.Summary}}{{end}}</td></tr>
{{end}}</table>{{end}}
`))

const (
	svgWidth   = 900
	labelWidth = 260
)

// timelineSVG draws one bar per step at its start and length, relative to
// the drill's start.
func timelineSVG(r *drill.Record) string {
	total := r.Duration()
	if total <= 0 {
		total = time.Millisecond
	}
	rowH, top := 24, 10
	height := top + rowH*len(r.Steps) + 30
	plotW := float64(svgWidth - labelWidth - 20)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="timeline of the drill's steps">`, svgWidth, height, svgWidth, height)
	for i, s := range r.Steps {
		y := top + i*rowH
		fmt.Fprintf(&b, `<text x="0" y="%d" font-size="12" fill="#1d2430">%s</text>`, y+15, html.EscapeString(clip(s.Title, 40)))
		if s.StartedAt.IsZero() {
			continue
		}
		x := labelWidth + int(plotW*float64(s.StartedAt.Sub(r.StartedAt))/float64(total))
		w := max(2, int(plotW*float64(time.Duration(s.ElapsedMS)*time.Millisecond)/float64(total)))
		color := "#2e7dd7"
		if s.Status == "failed" {
			color = "#c0392b"
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="16" rx="2" fill="%s"><title>%s: %s</title></rect>`, x, y+3, w, color,
			html.EscapeString(s.Name), dur(s.ElapsedMS))
		if x+w+4 < svgWidth-60 { // the duration after the bar, or before it when the bar reaches the end
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#5a6473">%s</text>`, x+w+4, y+15, dur(s.ElapsedMS))
		} else {
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#5a6473" text-anchor="end">%s</text>`, x-4, y+15, dur(s.ElapsedMS))
		}
	}
	axisY := top + rowH*len(r.Steps) + 8
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#8a93a2"/>`, labelWidth, axisY, labelWidth+int(plotW), axisY)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#5a6473">0 s</text>`, labelWidth, axisY+16)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#5a6473" text-anchor="end">%.1f s</text>`, labelWidth+int(plotW), axisY+16, total.Seconds())
	b.WriteString(`</svg>`)
	return b.String()
}

// latencySVG plots each canary sample's latency against its send time, with
// the objective as a dashed line; "" when there are no samples.
func latencySVG(r *drill.Record) string {
	if r.Canary == nil || len(r.Canary.Samples) == 0 {
		return ""
	}
	ss := r.Canary.Samples
	const height, left, bottom, top = 260, 60, 30, 10
	plotW, plotH := float64(svgWidth-left-20), float64(height-top-bottom)
	t0 := ss[0].SentAt
	span := ss[len(ss)-1].SentAt.Sub(t0).Seconds()
	if span <= 0 {
		span = 1
	}
	maxMS := r.Objectives.MaxCanaryLatencyMS
	for _, s := range ss {
		maxMS = max(maxMS, s.LatencyMS)
	}
	maxMS = max(maxMS*1.1, 1)
	px := func(s drill.Sample) (float64, float64) {
		return left + plotW*s.SentAt.Sub(t0).Seconds()/span, top + plotH*(1-s.LatencyMS/maxMS)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="canary latency over time">`, svgWidth, height, svgWidth, height)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="#f7f9fc" stroke="#d8dee8"/>`, left, top, plotW, plotH)
	for _, f := range []float64{0, 0.5, 1} {
		y := top + plotH*(1-f)
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" font-size="11" fill="#5a6473" text-anchor="end">%s</text>`, left-6, y+4, ms(maxMS*f))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#5a6473">0 s</text>`, left, height-10)
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" font-size="11" fill="#5a6473" text-anchor="end">%.1f s after the first canary record</text>`, left+plotW, height-10, span)
	if o := r.Objectives.MaxCanaryLatencyMS; o > 0 {
		y := top + plotH*(1-o/maxMS)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#c0392b" stroke-dasharray="6 4"><title>objective %s</title></line>`, left, y, left+plotW, y, ms(o))
	}
	b.WriteString(`<polyline fill="none" stroke="#2e7dd7" stroke-width="1.5" points="`)
	for _, s := range ss {
		x, y := px(s)
		fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
	}
	b.WriteString(`"/>`)
	for _, s := range ss {
		x, y := px(s)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="#2e7dd7"><title>#%d: %s</title></circle>`, x, y, s.Seq, ms(s.LatencyMS))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
