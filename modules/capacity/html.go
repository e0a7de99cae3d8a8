package capacity

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
)

// HTML is the search as a self-contained page: the people of each probe
// (pass, fail, invalid) with the answer and its interval, and the
// statistic nearest its limit in each valid probe against that limit.
func HTML(scenarioPath string, a Answer, slo []string) []byte {
	var b bytes.Buffer
	_ = page.Execute(&b, map[string]any{
		"Scenario": scenarioPath, "Text": a.Text(), "SLO": slo, "Answer": a,
		"People": template.HTML(peoplePlot(a)), "Limits": template.HTML(limitPlot(a)),
	})
	return b.Bytes()
}

var page = template.Must(template.New("capacity").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>buzzload capacity: {{.Scenario}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
.answer { font-size: 16px; font-weight: 600; }
table { border-collapse: collapse; margin-top: 8px; } td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
.pass { color: #2a7; } .fail { color: #c33; } .invalid { color: #888; }
svg text { font: 11px system-ui, sans-serif; fill: #444; }
</style></head><body>
<h1>Capacity of {{.Scenario}}</h1>
<p class="answer" id="answer">{{.Text}}</p>
<p>Service level: {{range $i, $s := .SLO}}{{if $i}}; {{end}}<code>{{$s}}</code>{{end}}</p>
<h2>The search</h2>
<figure id="plot-people" data-plot="people">{{.People}}<figcaption>People per probe: pass (green), fail (red), invalid (grey); the answer and its 95 % interval.</figcaption></figure>
<h2>The limiting statistic</h2>
<figure id="plot-limit" data-plot="limit">{{.Limits}}<figcaption>In each valid probe, the statistic nearest its limit, as a share of the limit (1: at the limit).</figcaption></figure>
<h2>Probes</h2>
<table><tr><th>#</th><th>people</th><th>search</th><th>outcome</th><th>why / nearest its limit</th><th>secs</th></tr>
{{range $i, $p := .Answer.Probes}}<tr><td>{{$i}}</td><td>{{$p.Users}}</td><td>{{$p.Repeat}}</td>
<td class="{{if not $p.Valid}}invalid{{else if $p.Pass}}pass{{else}}fail{{end}}">{{if not $p.Valid}}invalid{{else if $p.Pass}}pass{{else}}fail{{end}}</td>
<td>{{if $p.Reason}}{{$p.Reason}}{{else}}{{$p.Limit}}{{end}}</td><td>{{printf "%.0f" $p.Secs}}</td></tr>
{{end}}</table>
</body></html>
`))

const (
	plotW, plotH     = 720.0, 240.0
	padL, padR, padT = 56.0, 12.0, 16.0
	padB             = 30.0
)

func axes(b *bytes.Buffer, n int, ymax float64, ylabel func(float64) string) (x func(int) float64, y func(float64) float64) {
	x = func(i int) float64 { return padL + (plotW-padL-padR)*(float64(i)+0.5)/float64(max(n, 1)) }
	y = func(v float64) float64 { return padT + (plotH-padT-padB)*(1-v/ymax) }
	fmt.Fprintf(b, `<svg viewBox="0 0 %g %g" width="%g" height="%g" role="img"><rect width="100%%" height="100%%" fill="#fff"/>`, plotW, plotH, plotW, plotH)
	for k := 0; k <= 4; k++ {
		v := ymax * float64(k) / 4
		fmt.Fprintf(b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%g" y="%.1f" text-anchor="end">%s</text>`,
			padL, plotW-padR, y(v), y(v), padL-4, y(v)+4, template.HTMLEscapeString(ylabel(v)))
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(b, `<text x="%.1f" y="%g" text-anchor="middle">%d</text>`, x(i), plotH-padB+14, i)
	}
	return x, y
}

func color(p Probe) string {
	switch {
	case !p.Valid:
		return "#999"
	case p.Pass:
		return "#2a7"
	}
	return "#c33"
}

func peoplePlot(a Answer) string {
	var b bytes.Buffer
	top := float64(a.CI95[1])
	for _, p := range a.Probes {
		top = math.Max(top, float64(p.Users))
	}
	top = niceMax(top * 1.1)
	x, y := axes(&b, len(a.Probes), top, func(v float64) string { return fmt.Sprintf("%.0f", v) })
	if len(a.Knees) > 0 {
		fmt.Fprintf(&b, `<rect class="ci" x="%g" width="%g" y="%.1f" height="%.1f" fill="#2a7" fill-opacity="0.12"/>`,
			padL, plotW-padL-padR, y(float64(a.CI95[1])), math.Max(1, y(float64(a.CI95[0]))-y(float64(a.CI95[1]))))
		fmt.Fprintf(&b, `<line class="answer" x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#2a7" stroke-dasharray="6 4"/>`, padL, plotW-padR, y(float64(a.Users)), y(float64(a.Users)))
	}
	for i, p := range a.Probes {
		fmt.Fprintf(&b, `<circle class="probe" cx="%.1f" cy="%.1f" r="5" fill="%s"><title>%d people</title></circle>`, x(i), y(float64(p.Users)), color(p), p.Users)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func limitPlot(a Answer) string {
	var b bytes.Buffer
	top := 1.2
	for _, p := range a.Probes {
		if p.Limit != nil && p.Limit.Max > 0 {
			top = math.Max(top, p.Limit.Value/p.Limit.Max)
		}
	}
	top = niceMax(top * 1.1)
	x, y := axes(&b, len(a.Probes), top, func(v float64) string { return fmt.Sprintf("%.2g", v) })
	fmt.Fprintf(&b, `<line class="limit" x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#c33" stroke-dasharray="4 3"/>`, padL, plotW-padR, y(1), y(1))
	for i, p := range a.Probes {
		if p.Limit == nil || p.Limit.Max <= 0 || !p.Valid {
			continue
		}
		fmt.Fprintf(&b, `<rect class="stat" x="%.1f" y="%.1f" width="10" height="%.1f" fill="%s"><title>%s</title></rect>`,
			x(i)-5, y(p.Limit.Value/p.Limit.Max), math.Max(0, y(0)-y(p.Limit.Value/p.Limit.Max)), color(p), template.HTMLEscapeString(p.Limit.String()))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func niceMax(m float64) float64 {
	if m <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(m)))
	for _, s := range []float64{1, 2, 2.5, 5, 10} {
		if s*p >= m {
			return s * p
		}
	}
	return 10 * p
}
