package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/stats"
)

// Comparisons that say whether a difference is real (issue 44 §2): two
// arms of several runs each, per operation and statistic the difference
// B − A with Welch's 95 % interval, and a verdict the interval supports —
// as Buzz's ingest-ceiling harness judges two builds. Arms whose load or
// buzzload version differ are refused, naming what differs; the runs of
// one arm must also share their target.

// armRun is one run of an arm: its file, its Buzz report's identity and
// its operations.
type armRun struct {
	File    string
	Version string
	Target  string
	Load    string // the steps: users, times, clients planned by kind
	Ops     map[string]*opStats
}

// armDiff is one operation's statistic compared.
type armDiff struct {
	Op      string         `json:"op"`
	Stat    string         `json:"stat"` // p50, p95, p99 (ms) or error_rate
	A       []float64      `json:"a"`
	B       []float64      `json:"b"`
	MeanA   float64        `json:"mean_a"`
	MeanB   float64        `json:"mean_b"`
	Diff    stats.Interval `json:"diff"` // B − A
	Verdict string         `json:"verdict"`
}

// armsComparison is compare's answer for two arms.
type armsComparison struct {
	A []string `json:"a"`
	B []string `json:"b"`
	// Confidence is each interval's: 1 − 0.05/len(Diffs), so that all of
	// them hold together with 95 % confidence.
	Confidence float64   `json:"confidence"`
	Diffs      []armDiff `json:"diffs"`
}

// loadArmRun reads one run's report (a Buzz JSON report or a result file
// with its Buzz report).
func loadArmRun(path string) (*armRun, error) {
	ro, err := loadRunOps(path)
	if err != nil {
		return nil, err
	}
	if len(ro.Buzz) == 0 {
		return nil, fmt.Errorf("%s: no Buzz report: arms are compared by their Buzz reports (run --report or --result)", path)
	}
	var rep report.Report
	if err := json.Unmarshal(ro.Buzz, &rep); err != nil {
		return nil, fmt.Errorf("the Buzz report of %s: %w", path, err)
	}
	var load []string
	for _, s := range rep.Steps {
		var cl []string
		for _, k := range sortedKeysInt(s.Clients) {
			cl = append(cl, fmt.Sprintf("%s %d", k, s.Clients[k]))
		}
		load = append(load, fmt.Sprintf("step %d: users %g, %g–%gs, %s", s.Index, s.Users, s.StartS, s.EndS, strings.Join(cl, ", ")))
	}
	return &armRun{File: path, Version: rep.Version, Target: rep.Target, Load: strings.Join(load, "; "), Ops: ro.Ops}, nil
}

func sortedKeysInt(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// sameArms refuses arms that cannot be compared: within an arm, runs of
// other loads, versions or targets; between arms, other loads or
// versions (the target, or the relay's build behind it, is what an A/B
// of a deployment changes).
func sameArms(a, b []*armRun) error {
	for _, arm := range []struct {
		name string
		runs []*armRun
	}{{"A", a}, {"B", b}} {
		first := arm.runs[0]
		for _, r := range arm.runs[1:] {
			for _, d := range []struct{ what, x, y string }{{"load", first.Load, r.Load}, {"buzzload version", first.Version, r.Version}, {"target", first.Target, r.Target}} {
				if d.x != d.y {
					return fmt.Errorf("arm %s's runs differ in %s: %s has %q, %s has %q", arm.name, d.what, first.File, d.x, r.File, d.y)
				}
			}
		}
	}
	for _, d := range []struct{ what, x, y string }{{"load", a[0].Load, b[0].Load}, {"buzzload version", a[0].Version, b[0].Version}} {
		if d.x != d.y {
			return fmt.Errorf("the arms differ in %s: A (%s) has %q, B (%s) has %q", d.what, a[0].File, d.x, b[0].File, d.y)
		}
	}
	return nil
}

// compareArms is every operation's p50, p95, p99 and error rate, B − A.
func compareArms(a, b []*armRun) *armsComparison {
	c := &armsComparison{}
	for _, r := range a {
		c.A = append(c.A, r.File)
	}
	for _, r := range b {
		c.B = append(c.B, r.File)
	}
	ops := map[string]bool{}
	for _, r := range append(append([]*armRun(nil), a...), b...) {
		for op, st := range r.Ops {
			if st.OK > 0 {
				ops[op] = true
			}
		}
	}
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	get := map[string]func(*opStats) float64{
		"p50": func(s *opStats) float64 { return s.P50Ms }, "p95": func(s *opStats) float64 { return s.P95Ms },
		"p99": func(s *opStats) float64 { return s.P99Ms }, "error_rate": func(s *opStats) float64 { return s.ErrorRate },
	}
	for _, op := range names {
		for _, stat := range []string{"p50", "p95", "p99", "error_rate"} {
			d := armDiff{Op: op, Stat: stat}
			for _, side := range []struct {
				runs []*armRun
				dst  *[]float64
			}{{a, &d.A}, {b, &d.B}} {
				for _, r := range side.runs {
					if st := r.Ops[op]; st != nil && (st.OK > 0 || stat == "error_rate" && st.OK+st.Errors > 0) {
						*side.dst = append(*side.dst, get[stat](st))
					}
				}
			}
			if len(d.A) == 0 || len(d.B) == 0 {
				continue
			}
			d.MeanA, d.MeanB = stats.Mean(d.A), stats.Mean(d.B)
			c.Diffs = append(c.Diffs, d)
		}
	}
	// Simultaneous intervals: each at 1 − 0.05/k (Bonferroni), so that the
	// k comparisons together are wrong with at most 5 % probability — two
	// identical arms otherwise "differ" in one statistic of twenty.
	c.Confidence = 1 - 0.05/float64(max(1, len(c.Diffs)))
	for i := range c.Diffs {
		d := &c.Diffs[i]
		var ok bool
		d.Diff, ok = stats.DiffCI(d.A, d.B, c.Confidence)
		d.Verdict = armVerdict(*d, ok)
	}
	return c
}

func armVerdict(d armDiff, ok bool) string {
	if !ok {
		return "no interval: each arm needs at least two runs"
	}
	unit, f := " ms", "%.3g"
	if d.Stat == "error_rate" {
		unit, f = " points", "%.3g"
		d.Diff = stats.Interval{Estimate: 100 * d.Diff.Estimate, Lo: 100 * d.Diff.Lo, Hi: 100 * d.Diff.Hi}
	}
	iv := fmt.Sprintf("["+f+", "+f+"]", d.Diff.Lo, d.Diff.Hi)
	switch {
	case d.Diff.Lo > 0:
		return fmt.Sprintf("B slower by "+f+"%s %s", d.Diff.Estimate, unit, iv)
	case d.Diff.Hi < 0:
		return fmt.Sprintf("B faster by "+f+"%s %s", -d.Diff.Estimate, unit, iv)
	}
	return "no difference the data can show " + iv
}

// writeArms prints the comparison, one row per operation and statistic.
func writeArms(w io.Writer, c *armsComparison) error {
	fmt.Fprintf(w, "A: %d runs (%s)\nB: %d runs (%s)\n", len(c.A), termtext.Clean(strings.Join(c.A, ", ")), len(c.B), termtext.Clean(strings.Join(c.B, ", ")))
	fmt.Fprintf(w, "intervals of B − A: Welch's, simultaneous 95 %% over the %d comparisons (each at %.4g %%)\n\n", len(c.Diffs), 100*c.Confidence)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "op\tstat\tA mean\tB mean\tB − A\tverdict [interval of B − A]\t")
	for _, d := range c.Diffs {
		ma, mb, diff := fmt.Sprintf("%.3g ms", d.MeanA), fmt.Sprintf("%.3g ms", d.MeanB), fmt.Sprintf("%+.3g ms", d.Diff.Estimate)
		if d.Stat == "error_rate" {
			ma, mb, diff = fmt.Sprintf("%.2f%%", 100*d.MeanA), fmt.Sprintf("%.2f%%", 100*d.MeanB), fmt.Sprintf("%+.2f pts", 100*d.Diff.Estimate)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", termtext.Clean(d.Op), d.Stat, ma, mb, diff, d.Verdict)
	}
	return tw.Flush()
}

// armsCmd is compare's two-arm form: the files before "--" are arm A's
// runs, after it arm B's; or with repeat > 0 two scenario files run
// alternately (A B A B …) repeat times each.
func armsCmd(ctx context.Context, env cliEnv, aFiles, bFiles []string, repeat int, dir string, asJSON bool, htmlOut string) int {
	stdout, stderr := orDiscard(env.Stdout), orDiscard(env.Stderr)
	if repeat > 0 {
		var err error
		if aFiles, bFiles, err = runArms(ctx, env, aFiles[0], bFiles[0], repeat, dir); err != nil {
			fmt.Fprintf(stderr, "buzzload compare: %s\n", termtext.Lines(err.Error()))
			return 1
		}
	}
	var a, b []*armRun
	for _, side := range []struct {
		files []string
		dst   *[]*armRun
	}{{aFiles, &a}, {bFiles, &b}} {
		for _, f := range side.files {
			r, err := loadArmRun(f)
			if err != nil {
				fmt.Fprintf(stderr, "buzzload compare: %s\n", termtext.Lines(err.Error()))
				return exitBadInput
			}
			*side.dst = append(*side.dst, r)
		}
	}
	if err := sameArms(a, b); err != nil {
		fmt.Fprintf(stderr, "buzzload compare: refused: %s\n", termtext.Lines(err.Error()))
		return exitBadInput
	}
	c := compareArms(a, b)
	if htmlOut != "" {
		if err := os.WriteFile(htmlOut, armsHTML(c), 0o644); err != nil {
			fmt.Fprintf(stderr, "buzzload compare: %s\n", termtext.Lines(err.Error()))
			return 1
		}
	}
	var err error
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(c)
	} else {
		err = writeArms(stdout, c)
	}
	if err != nil {
		fmt.Fprintf(stderr, "buzzload compare: %s\n", termtext.Lines(err.Error()))
		return 1
	}
	return 0
}

// runArms runs the two scenarios alternately, repeat times each, each a
// `buzzload run` of its own writing its report into dir.
func runArms(ctx context.Context, env cliEnv, aPath, bPath string, repeat int, dir string) (aFiles, bFiles []string, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "buzzload-compare-"); err != nil {
			return nil, nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	for i := 1; i <= repeat; i++ {
		for _, arm := range []struct {
			name, path string
			dst        *[]string
		}{{"A", aPath, &aFiles}, {"B", bPath, &bFiles}} {
			rep := filepath.Join(dir, fmt.Sprintf("%s-%d.json", arm.name, i))
			log, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.log", arm.name, i)))
			if err != nil {
				return nil, nil, err
			}
			cmd := exec.CommandContext(ctx, self, "run", "-q", "--address", "", "--report-interval", "0s", "--report", rep, arm.path)
			cmd.Env, cmd.Stdout, cmd.Stderr = env.Env, log, log
			runErr := cmd.Run()
			log.Close()
			if _, err := os.Stat(rep); err != nil {
				return nil, nil, fmt.Errorf("run %d of arm %s (%s) wrote no report (%v; its log: %s)", i, arm.name, arm.path, runErr, log.Name())
			}
			fmt.Fprintf(orDiscard(env.Stderr), "buzzload compare: run %d of %d, arm %s: %s\n", i, repeat, arm.name, rep)
			*arm.dst = append(*arm.dst, rep)
		}
	}
	return aFiles, bFiles, nil
}

// armsHTML is the comparison as a page: per operation and statistic the
// interval of B − A drawn against zero.
func armsHTML(c *armsComparison) []byte {
	type row struct {
		armDiff
		Bar template.HTML
	}
	var rows []row
	for _, d := range c.Diffs {
		rows = append(rows, row{armDiff: d, Bar: template.HTML(intervalBar(d))})
	}
	var b strings.Builder
	_ = armsPage.Execute(&b, map[string]any{"A": c.A, "B": c.B, "Rows": rows})
	return []byte(b.String())
}

var armsPage = template.Must(template.New("arms").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>buzzload compare</title>
<style>body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; } table { border-collapse: collapse; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; } .slower { color: #c33; } .faster { color: #2a7; }</style>
</head><body><h1>A/B comparison</h1>
<p>A: {{range .A}}<code>{{.}}</code> {{end}}<br>B: {{range .B}}<code>{{.}}</code> {{end}}</p>
<table id="diffs"><tr><th>op</th><th>stat</th><th>A mean</th><th>B mean</th><th>B − A, 95 % interval</th><th>verdict</th></tr>
{{range .Rows}}<tr><td>{{.Op}}</td><td>{{.Stat}}</td><td>{{printf "%.3g" .MeanA}}</td><td>{{printf "%.3g" .MeanB}}</td><td>{{.Bar}}</td>
<td class="{{if eq (slice .Verdict 0 3) "B s"}}slower{{else if eq (slice .Verdict 0 3) "B f"}}faster{{end}}">{{.Verdict}}</td></tr>
{{end}}</table></body></html>
`))

// intervalBar is an SVG of the interval [lo, hi] and its estimate
// against zero (the middle line).
func intervalBar(d armDiff) string {
	const w, h = 240.0, 18.0
	span := math.Max(math.Abs(d.Diff.Lo), math.Abs(d.Diff.Hi))
	if span == 0 {
		span = 1
	}
	x := func(v float64) float64 { return w/2 + (w/2-8)*v/span }
	return fmt.Sprintf(`<svg class="interval" width="%g" height="%g" viewBox="0 0 %g %g"><line x1="%g" x2="%g" y1="0" y2="%g" stroke="#999"/>`+
		`<line x1="%.1f" x2="%.1f" y1="9" y2="9" stroke="#333" stroke-width="3"/><circle cx="%.1f" cy="9" r="3" fill="#c33"/></svg>`,
		w, h, w, h, w/2, w/2, h, x(d.Diff.Lo), x(d.Diff.Hi), x(d.Diff.Estimate))
}
