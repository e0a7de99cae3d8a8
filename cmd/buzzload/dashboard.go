package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/buzzload/buzzload/engine/output/prometheusrw"
	"github.com/buzzload/buzzload/engine/output/webdashboard"
	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/report/htmlreport"
)

// takeDashboard takes `--out web-dashboard[=ARGS]` out of the outputs the
// engine makes (this command owns its server and its end: the export
// carries the Buzz report, built after the outputs stop), or turns
// K6_WEB_DASHBOARD=true into one, as k6 does. At most one.
func takeDashboard(outs []string, environ []string) ([]string, *webdashboard.Config, error) {
	env := envMap(environ)
	var rest []string
	var arg *string
	for _, o := range outs {
		kind, a, _ := strings.Cut(o, "=")
		if kind != webdashboard.Name {
			rest = append(rest, o)
			continue
		}
		if arg != nil {
			return nil, nil, optErr("--out %s given twice", webdashboard.Name)
		}
		arg = &a
	}
	if arg == nil {
		if !webdashboard.Enabled(env) {
			return rest, nil, nil
		}
		arg = new(string)
	}
	c, err := webdashboard.Parse(*arg, env)
	if err != nil {
		return nil, nil, optErr("%w", err)
	}
	return rest, &c, nil
}

// finishDashboard ends the dashboard after the run: the export and the
// live pages get the run's Buzz report when it has one.
func finishDashboard(d *webdashboard.Dashboard, rep *report.Report, stderr io.Writer) error {
	var raw json.RawMessage
	if rep != nil {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		raw = b
	}
	if err := d.Finish(raw); err != nil {
		fmt.Fprintf(stderr, "buzzload run: %s\n", termtext.Lines(err.Error()))
		return err
	}
	return nil
}

// grafanaHint says which shipped Grafana dashboard fits a remote-write
// output's settings (issue 29 item 4): native histograms read
// dashboards/buzzload-run.json; per-stat trends the -stats one, whose p50,
// p95 and throughput panels need those stats (k6's default is p(99) alone).
func grafanaHint(outs []string, environ []string) string {
	for _, o := range outs {
		kind, arg, _ := strings.Cut(o, "=")
		if kind == "opentelemetry" || kind == "experimental-opentelemetry" {
			return "Grafana: dashboards/buzzload-otel.json reads these series once stored in Prometheus (its OTLP receiver or a collector)"
		}
		if kind != "experimental-prometheus-rw" {
			continue
		}
		c, err := prometheusrw.ParseConfig(arg, envMap(environ))
		if err != nil {
			return "" // the output reports it
		}
		if c.NativeHistograms {
			return "Grafana: dashboards/buzzload-run.json fits these settings (native histograms)"
		}
		have := map[string]bool{}
		for _, s := range c.TrendStats {
			have[s.Name] = true
		}
		var miss []string
		for _, s := range []string{"p(50)", "p(95)", "count"} {
			if !have[s] {
				miss = append(miss, s)
			}
		}
		if len(miss) == 0 {
			return "Grafana: dashboards/buzzload-run-stats.json fits these settings (per-stat trends)"
		}
		return "Grafana: dashboards/buzzload-run-stats.json fits per-stat trends; add " + strings.Join(miss, ",") +
			" to K6_PROMETHEUS_RW_TREND_STATS for its p50, p95 and throughput panels (or K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM=true for dashboards/buzzload-run.json)"
	}
	return ""
}

// dashboardView is the web dashboard's page and operation view: the Buzz
// report's page (htmlreport), reading the Buzz module's metrics by op.
var dashboardView = webdashboard.View{
	Render: func(w io.Writer, page []byte) error {
		var p htmlreport.Page
		if err := json.Unmarshal(page, &p); err != nil {
			return err
		}
		return htmlreport.Write(w, p)
	},
	Ops: webdashboard.OpMetrics{Duration: report.MetricOpDuration, Failed: report.MetricOpFailed,
		Throttled: report.MetricOpThrottled, Clients: report.MetricClients},
}
