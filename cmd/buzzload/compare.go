package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/result"
	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/report/htmlreport"
)

// The buzz_op_* metrics compare reads (docs/architecture.md "Metrics").
const (
	opDurationMetric  = "buzz_op_duration"
	opFailedMetric    = "buzz_op_failed"
	opThrottledMetric = "buzz_op_throttled"
)

// opStats are one operation's numbers in one run.
type opStats struct {
	// Count is every settled operation: OK + Errors + Throttled.
	Count     int64   `json:"count"`
	OK        int64   `json:"ok"`
	Errors    int64   `json:"errors"`
	Throttled int64   `json:"throttled"`
	P50Ms     float64 `json:"p50_ms"`
	P95Ms     float64 `json:"p95_ms"`
	P99Ms     float64 `json:"p99_ms"`
	// ErrorRate is Errors / (OK + Errors), as buzz_op_failed.
	ErrorRate float64 `json:"error_rate"`
	// Absent names the statistics the source did not have (a
	// --summary-export keeps only those k6 was asked for): shown as "–",
	// never as 0 (issue 47 item 5).
	Absent []string `json:"absent,omitempty"`
}

// runOps is one side of a comparison.
type runOps struct {
	File   string `json:"file"`
	Format string `json:"format"` // "result" or "buzz-report"
	Script string `json:"script,omitempty"`
	// Note says how exact the percentiles are.
	Note string              `json:"note,omitempty"`
	Ops  map[string]*opStats `json:"-"`
	// Buzz is the run's Buzz report JSON (the file itself, or a result
	// file's "buzz"), for the HTML report; nil when it has none.
	Buzz json.RawMessage `json:"-"`
	// Thresholds and ExitCode are a result file's own verdict (the page
	// shows them for a run without a Buzz report).
	Thresholds []htmlreport.Threshold `json:"-"`
	ExitCode   *int                   `json:"-"`
}

// compareRow is one operation in both runs.
type compareRow struct {
	Op string   `json:"op"`
	A  *opStats `json:"a"`
	B  *opStats `json:"b"`
	// CountRatio is B.Count / A.Count; null when A has none.
	CountRatio *float64 `json:"count_ratio"`
}

type comparison struct {
	A     *runOps      `json:"a"`
	B     *runOps      `json:"b"`
	Ops   []compareRow `json:"ops"`
	Total compareRow   `json:"total"`
}

// compareCmd is `buzzload compare A B`: a side-by-side per-operation table
// of two runs (result files from run --result or merge -o, or Buzz JSON
// reports), for instance the desktop client's legacy and current modes.
func compareCmd(ctx context.Context, args []string, env cliEnv) int {
	stdout, stderr := orDiscard(env.Stdout), orDiscard(env.Stderr)
	fs := pflag.NewFlagSet("compare", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var asJSON, help bool
	var htmlOut string
	fs.BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	fs.StringVarP(&htmlOut, "output", "o", "", "also write one self-contained HTML page with both runs' plots overlaid (A solid, B dashed)")
	fs.BoolVarP(&help, "help", "h", false, "show this help")
	var repeat int
	var dir string
	fs.IntVar(&repeat, "repeat", 0, "run the two scenario files A.toml and B.toml alternately (A B A B …), this many times each, and compare the arms")
	fs.StringVar(&dir, "dir", "", "with --repeat: keep the runs' reports and logs here (default: a temporary directory, kept and named)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "buzzload compare: %s\n", termtext.Lines(err.Error()))
		return exitUsage
	}
	if help {
		fmt.Fprintln(stdout, "usage: buzzload compare [--json] [-o cmp.html] A B")
		fmt.Fprintln(stdout, "       buzzload compare [--json] [-o cmp.html] A1 A2 … -- B1 B2 …")
		fmt.Fprintln(stdout, "       buzzload compare --repeat R [--dir DIR] [--json] [-o cmp.html] A.toml B.toml")
		fmt.Fprintln(stdout, "\nA and B are result files (buzzload run --result, buzzload merge -o) or Buzz JSON")
		fmt.Fprintln(stdout, "reports. For each operation (the op tag of buzz_op_*): counts, p50/p95/p99, error")
		fmt.Fprintln(stdout, "rate, throttled, and the ratio B/A of the counts.")
		fmt.Fprintln(stdout, "\nWith two arms of several runs each (files around --, or --repeat running two")
		fmt.Fprintln(stdout, "scenario files alternately): per operation and statistic the difference B − A")
		fmt.Fprintln(stdout, "with Welch's 95 % interval and its verdict: \"B slower by x ms [lo, hi]\", \"B faster")
		fmt.Fprintln(stdout, "by …\" or \"no difference the data can show\". Arms whose load or buzzload version")
		fmt.Fprintln(stdout, "differ are refused (exit 1), naming what differs; an arm's runs share their target.")
		fmt.Fprintln(stdout)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	}
	if repeat < 0 {
		fmt.Fprintln(stderr, "buzzload compare: --repeat: want 1 or more")
		return exitUsage
	}
	if repeat > 0 {
		if fs.NArg() != 2 || !isScenarioFile(fs.Arg(0)) || !isScenarioFile(fs.Arg(1)) {
			fmt.Fprintln(stderr, "buzzload compare: --repeat wants two scenario files, A.toml and B.toml")
			return exitUsage
		}
		return armsCmd(ctx, env, []string{fs.Arg(0)}, []string{fs.Arg(1)}, repeat, dir, asJSON, htmlOut)
	}
	if at := fs.ArgsLenAtDash(); at >= 0 {
		if at == 0 || at == fs.NArg() {
			fmt.Fprintln(stderr, "buzzload compare: want arm A's files before -- and arm B's after it")
			return exitUsage
		}
		return armsCmd(ctx, env, fs.Args()[:at], fs.Args()[at:], 0, "", asJSON, htmlOut)
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "buzzload compare: want exactly two files, A and B (see buzzload compare --help)")
		return exitUsage
	}
	a, err := loadRunOps(fs.Arg(0))
	if err == nil {
		var b *runOps
		if b, err = loadRunOps(fs.Arg(1)); err == nil {
			c := compareRuns(a, b)
			if htmlOut != "" {
				page := htmlPage("buzzload compare: "+a.File+" vs "+b.File, htmlRun("A", a), htmlRun("B", b))
				if err := writeHTML(htmlOut, page); err != nil {
					fmt.Fprintf(stderr, "buzzload compare: %s\n", termtext.Lines(err.Error()))
					return 1
				}
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				err = enc.Encode(c)
			} else {
				err = writeComparison(stdout, c)
			}
			if err != nil {
				fmt.Fprintf(stderr, "buzzload compare: %s\n", termtext.Lines(err.Error()))
				return 1
			}
			return 0
		}
	}
	fmt.Fprintf(stderr, "buzzload compare: %s\n", termtext.Lines(err.Error()))
	return exitBadInput
}

// loadRunOps reads a result file or a Buzz JSON report.
func loadRunOps(path string) (*runOps, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var head map[string]json.RawMessage
	if err := json.Unmarshal(b, &head); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n"))
			return nil, fmt.Errorf("%s: corrupt JSON at line %d: %w", path, line, err)
		}
		return nil, fmt.Errorf("%s: want a JSON object: %w", path, err)
	}
	if _, ok := head["kind"]; ok {
		f, err := result.Unmarshal(b)
		if err != nil {
			return nil, fmt.Errorf("result file %s: %w", path, err)
		}
		ops, err := opsFromSnapshot(f.Metrics)
		note := ""
		if errors.Is(err, errNotBuzz) {
			ops, err = plainOpsFromSnapshot(f.Metrics)
			note = plainNote
		}
		if err != nil {
			return nil, fmt.Errorf("result file %s: %w", path, err)
		}
		r := &runOps{File: path, Format: "result", Script: f.Run.Script, Ops: ops, Buzz: f.Buzz, Note: note}
		code := f.Run.ExitCode
		r.ExitCode = &code
		for _, th := range f.Thresholds {
			r.Thresholds = append(r.Thresholds, htmlreport.Threshold{Metric: th.Key, Source: th.Source, OK: th.OK})
		}
		return r, nil
	}
	if isSummaryExport(head) {
		return loadSummaryExport(path, b)
	}
	_, hasSteps := head["steps"]
	_, hasRunID := head["run_id"]
	if !hasSteps || !hasRunID {
		return nil, fmt.Errorf("%s: neither a buzzload result file (no \"kind\"), a k6 --summary-export (no \"metrics\" and \"root_group\") nor a Buzz report (no \"run_id\" and \"steps\")", path)
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("the Buzz report %s: %w", path, err)
	}
	r := &runOps{File: path, Format: "buzz-report", Script: rep.Scenario, Ops: opsFromReport(&rep), Buzz: b}
	if len(rep.Steps) > 1 || len(rep.Shutdown.Ops) > 0 {
		r.Note = "counts add up the steps and the shutdown; a report keeps percentiles per step only, so p50/p95/p99 are the worst step's"
	}
	return r, nil
}

// errNotBuzz: a result without the Buzz module's samples (a plain k6 run).
var errNotBuzz = errors.New("no buzz_op_duration, buzz_op_failed or buzz_op_throttled samples: not a run of the Buzz module")

// opsFromSnapshot reads each op's sinks from the snapshot's grouping by op
// (run --result adds it), or from buzz_op_*{op:X} sub-metrics when a run
// has no grouping.
func opsFromSnapshot(s *metrics.Snapshot) (map[string]*opStats, error) {
	ops := map[string]*opStats{}
	get := func(op string) *opStats {
		if ops[op] == nil {
			ops[op] = &opStats{}
		}
		return ops[op]
	}
	found := false
	// The seed's operations are on their own metrics (setup, not load); a
	// comparison lists them beside the load's, as the report does.
	for _, name := range []string{opDurationMetric, opFailedMetric, opThrottledMetric, report.MetricSetupDuration, report.MetricSetupFailed} {
		m := s.Metric(name)
		if m == nil {
			continue
		}
		found = true
		for op, sink := range opSinks(m) {
			st := get(op)
			switch sk := sink.(type) {
			case *metrics.TrendSink:
				st.OK = sk.Count()
				st.P50Ms, st.P95Ms, st.P99Ms = sk.Percentile(50), sk.Percentile(95), sk.Percentile(99)
			case *metrics.RateSink:
				st.Errors = sk.Passes()
				st.ErrorRate, _ = sk.Ratio()
			case *metrics.CounterSink:
				st.Throttled = int64(math.Round(sk.Sum()))
			}
		}
	}
	if !found {
		return nil, errNotBuzz
	}
	for _, st := range ops {
		st.Count = st.OK + st.Errors + st.Throttled
	}
	return ops, nil
}

// opSinks are a metric's sinks per op value.
func opSinks(m *metrics.MetricSnapshot) map[string]metrics.Sink {
	out := map[string]metrics.Sink{}
	if g := m.Group("op"); g != nil {
		for _, r := range g.Rows {
			if r.Values[0] != "" {
				out[r.Values[0]] = r.Sink
			}
		}
		return out
	}
	for _, sm := range m.Submetrics {
		tags := sm.Selector.Tags
		if op, ok := tags.Get("op"); ok && tags.Len() == 1 {
			out[op] = sm.Sink
		}
	}
	return out
}

// opsFromReport adds each op up over the steps and the shutdown.
func opsFromReport(rep *report.Report) map[string]*opStats {
	ops := map[string]*opStats{}
	add := func(m map[string]*report.OpReport) {
		for op, r := range m {
			if r == nil {
				continue
			}
			st := ops[op]
			if st == nil {
				st = &opStats{}
				ops[op] = st
			}
			st.Count += r.Count
			st.OK += r.OK
			st.Errors += r.Errors
			st.Throttled += r.Throttled
			st.P50Ms = math.Max(st.P50Ms, r.P50Ms)
			st.P95Ms = math.Max(st.P95Ms, r.P95Ms)
			st.P99Ms = math.Max(st.P99Ms, r.P99Ms)
		}
	}
	for i := range rep.Steps {
		add(rep.Steps[i].Ops)
	}
	add(rep.Shutdown.Ops)
	for _, st := range ops {
		if n := st.OK + st.Errors; n > 0 {
			st.ErrorRate = float64(st.Errors) / float64(n)
		}
	}
	return ops
}

func compareRuns(a, b *runOps) *comparison {
	names := map[string]bool{}
	for op := range a.Ops {
		names[op] = true
	}
	for op := range b.Ops {
		names[op] = true
	}
	sorted := make([]string, 0, len(names))
	for op := range names {
		sorted = append(sorted, op)
	}
	sort.Strings(sorted)
	c := &comparison{A: a, B: b}
	ta, tb := &opStats{}, &opStats{}
	for _, op := range sorted {
		sa, sb := a.Ops[op], b.Ops[op]
		if sa == nil {
			sa = &opStats{}
		}
		if sb == nil {
			sb = &opStats{}
		}
		c.Ops = append(c.Ops, compareRow{Op: op, A: sa, B: sb, CountRatio: ratio(sb.Count, sa.Count)})
		for _, p := range [][2]*opStats{{ta, sa}, {tb, sb}} {
			p[0].Count += p[1].Count
			p[0].OK += p[1].OK
			p[0].Errors += p[1].Errors
			p[0].Throttled += p[1].Throttled
		}
	}
	for _, t := range []*opStats{ta, tb} {
		if n := t.OK + t.Errors; n > 0 {
			t.ErrorRate = float64(t.Errors) / float64(n)
		}
	}
	c.Total = compareRow{Op: "TOTAL", A: ta, B: tb, CountRatio: ratio(tb.Count, ta.Count)}
	return c
}

func ratio(b, a int64) *float64 {
	if a == 0 {
		return nil
	}
	r := float64(b) / float64(a)
	return &r
}

// writeComparison prints the table: one line per op, A and B side by side.
func writeComparison(w io.Writer, c *comparison) error {
	fmt.Fprintf(w, "A: %s (%s)\nB: %s (%s)\n", termtext.Clean(c.A.File), termtext.Clean(c.A.Script), termtext.Clean(c.B.File), termtext.Clean(c.B.Script))
	for _, n := range []struct{ side, note string }{{"A", c.A.Note}, {"B", c.B.Note}} {
		if n.note != "" {
			fmt.Fprintf(w, "%s: %s\n", n.side, termtext.Clean(n.note))
		}
	}
	fmt.Fprintln(w)
	// Numbers align right; op names are padded so they read left-aligned.
	// Op names come from scripts and result files: control characters are
	// escaped so they can neither drive the terminal nor break the table.
	width := len("TOTAL")
	for _, r := range c.Ops {
		width = max(width, len(termtext.Clean(r.Op)))
	}
	pad := func(s string) string { s = termtext.Clean(s); return s + strings.Repeat(" ", width-len(s)) }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, pad("op")+"\tcount A\tcount B\tB/A\tp50 A\tp50 B\tp95 A\tp95 B\tp99 A\tp99 B\terr A\terr B\tthrottled A\tthrottled B\t")
	row := func(r compareRow, lat bool) {
		cells := []string{pad(r.Op), strconv.FormatInt(r.A.Count, 10), strconv.FormatInt(r.B.Count, 10), fmtRatio(r.CountRatio)}
		if lat {
			cells = append(cells, fmtMs(r.A, r.A.P50Ms), fmtMs(r.B, r.B.P50Ms), fmtMs(r.A, r.A.P95Ms), fmtMs(r.B, r.B.P95Ms),
				fmtMs(r.A, r.A.P99Ms), fmtMs(r.B, r.B.P99Ms))
		} else {
			cells = append(cells, "", "", "", "", "", "")
		}
		cells = append(cells, fmtPct(r.A), fmtPct(r.B), strconv.FormatInt(r.A.Throttled, 10), strconv.FormatInt(r.B.Throttled, 10))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	for _, r := range c.Ops {
		row(r, true)
	}
	row(c.Total, false)
	return tw.Flush()
}

func fmtRatio(r *float64) string {
	if r == nil {
		return "-"
	}
	return strconv.FormatFloat(*r, 'f', 2, 64)
}

func fmtMs(s *opStats, v float64) string {
	if s.OK == 0 {
		return "-"
	}
	prec := 1
	if v < 10 {
		prec = 2 // loopback operations take well under a millisecond
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + "ms"
}

func fmtPct(s *opStats) string {
	if s.OK+s.Errors == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*s.ErrorRate, 'f', 2, 64) + "%"
}
