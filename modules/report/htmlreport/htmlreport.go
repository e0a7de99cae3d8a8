// Package htmlreport renders runs as one self-contained HTML page (issue
// 14): the k6 metrics over the run's periods (VUs, iterations, HTTP,
// checks) and, for a Buzz run, plots per operation over the report windows
// (p50/p95/p99, throughput, errors, throttles) with the ramp steps and
// their verdicts, clients by kind, the generator's health, desktop
// operations grouped. Two runs on one page overlay (buzzload compare -o).
// The same page is the live web dashboard (Page.Live: it follows the run's
// event stream) and its export.
//
// The page carries its data as JSON and draws it with a small hand-written
// SVG plotter (report.js): a vendored chart library would be 50-200 KB of
// someone else's code in every report for a handful of line charts, and the
// page must open anywhere with no network (its Content-Security-Policy
// allows nothing but its own inline script and style).
//
// The package reads the report as JSON, not as report.Report, so it
// renders any version's file and stays below the extension.
package htmlreport

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
)

//go:embed report.js
var script string

//go:embed report.css
var style string

// Run is one run on the page.
type Run struct {
	// Label names the run in legends ("A", "B", or the file name).
	Label string `json:"label"`
	File  string `json:"file"`
	// Report is the Buzz report's JSON (report.Report), or nil when the
	// run has none (a merged result file): then only Ops are shown.
	Report json.RawMessage `json:"report,omitempty"`
	// Ops are whole-run totals per operation (count, ok, errors, throttled,
	// p50_ms, p95_ms, p99_ms), from a result file's metrics.
	Ops any `json:"ops,omitempty"`
	// Note says how exact the numbers are.
	Note string `json:"note,omitempty"`
	// Thresholds and ExitCode are a result file's own verdict, shown when
	// the run has no Buzz report (a plain k6 script: issue 47 item 5).
	Thresholds []Threshold `json:"thresholds,omitempty"`
	ExitCode   *int        `json:"exit_code,omitempty"`
	// Metrics are every metric's numbers per period (the web dashboard's
	// webdashboard.Window), for any script.
	Metrics *Metrics `json:"metrics,omitempty"`
}

// Threshold is one threshold's final result.
type Threshold struct {
	Metric string `json:"metric"`
	Source string `json:"source"`
	OK     bool   `json:"ok"`
}

// Metrics are a run's periods.
type Metrics struct {
	PeriodS float64           `json:"period_s"`
	Windows []json.RawMessage `json:"windows"`
}

// Page is one HTML report.
type Page struct {
	Title string `json:"title"`
	Runs  []Run  `json:"runs"`
	// Live is the event stream the page follows (the web dashboard's
	// "/events"); "" for a page that is complete.
	Live string `json:"live,omitempty"`
}

// Write writes the page.
func Write(w io.Writer, p Page) error {
	if len(p.Runs) == 0 {
		return fmt.Errorf("htmlreport: no run to show")
	}
	var data bytes.Buffer
	enc := json.NewEncoder(&data)
	enc.SetEscapeHTML(true) // no "</script>" can close the data block early
	if err := enc.Encode(p); err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")
	// Nothing outside the page: a report opens the same offline, and a
	// test that sees a CSP violation in the console knows something tried.
	b.WriteString("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	fmt.Fprintf(&b, "<title>%s</title>\n<style>\n%s</style>\n</head><body>\n", html.EscapeString(p.Title), style)
	b.WriteString("<div id=\"app\"><noscript>This report draws its plots with JavaScript.</noscript></div>\n")
	b.WriteString("<script type=\"application/json\" id=\"data\">")
	b.Write(bytes.TrimSpace(data.Bytes()))
	b.WriteString("</script>\n<script>\n")
	b.WriteString(script)
	b.WriteString("</script>\n</body></html>\n")
	_, err := w.Write(b.Bytes())
	return err
}
