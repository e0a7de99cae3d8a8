package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/result"
	"github.com/buzzload/buzzload/engine/summary"
	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/engine/thresholds"
	"github.com/buzzload/buzzload/modules/report"
)

// Exit codes of merge and compare besides 0 and 99 (thresholds failed on
// the merged data).
const (
	exitBadInput = 1 // unreadable, foreign or mismatched result files
	exitUsage    = 2
)

// mergeCmd is `buzzload merge result1.json result2.json ...`: the results of
// the instances of a distributed run (one --execution-segment each) merged
// into the run a single instance would have made, with the thresholds judged
// again on the merged data.
func mergeCmd(_ context.Context, args []string, env cliEnv) int {
	stdout, stderr := orDiscard(env.Stdout), orDiscard(env.Stderr)
	fs := pflag.NewFlagSet("merge", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		export, mode, trendStats, timeUnit, out string
		noThresholds, noSummary, help           bool
	)
	fs.StringVar(&export, "summary-export", "", "write the merged end-of-test summary JSON (k6's old format) to this file")
	fs.StringVar(&mode, "summary-mode", "", "summary mode: compact, full or disabled (default: as the instances ran)")
	fs.BoolVar(&noSummary, "no-summary", false, "print no summary (same as --summary-mode=disabled)")
	fs.StringVar(&trendStats, "summary-trend-stats", "", "trend stats in the summary (default: the instances' summaryTrendStats)")
	fs.StringVar(&timeUnit, "summary-time-unit", "", "fixed time unit in the summary: s, ms or us")
	fs.BoolVar(&noThresholds, "no-thresholds", false, "do not judge thresholds on the merged data")
	fs.StringVarP(&out, "output", "o", "", "write the merged result file (segment 0:1) here, e.g. for buzzload compare")
	fs.BoolVarP(&help, "help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "buzzload merge: %s\n", termtext.Lines(err.Error()))
		return exitUsage
	}
	if help {
		fmt.Fprintln(stdout, "usage: buzzload merge [flags] result1.json result2.json ...")
		fmt.Fprintln(stdout, "\nMerges the --result files of the instances of one distributed run, re-judges the")
		fmt.Fprintln(stdout, "thresholds on the merged data and prints the summary. Exit 0, 99 when a threshold")
		fmt.Fprintln(stdout, "fails on the merged data, 112 when the merged Buzz verdict fails otherwise (an instance's")
		fmt.Fprintln(stdout, "own verdict, its durability audit or relay log), 1 on bad or mismatched result files,")
		fmt.Fprintln(stdout, "2 on bad flags; an instance that did not complete (interrupted 105, script error 107,")
		fmt.Fprintln(stdout, "aborted 108, marked failed 110, ...) makes the merge exit with its code. A run of the")
		fmt.Fprintln(stdout, "Buzz module gets its merged Buzz report (steps, windows,")
		fmt.Fprintln(stdout, "verdict, checks) in the summary and in -o's result file.")
		fmt.Fprintln(stdout)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "buzzload merge: want one or more result files (see buzzload merge --help)")
		return exitUsage
	}
	if noSummary {
		if mode != "" && mode != "disabled" {
			fmt.Fprintf(stderr, "buzzload merge: --no-summary and --summary-mode=%s contradict each other\n", mode)
			return exitUsage
		}
		mode = "disabled"
	}
	switch mode {
	case "", "compact", "full", "disabled":
	default:
		fmt.Fprintf(stderr, "buzzload merge: --summary-mode %q: want compact, full or disabled\n", mode)
		return exitUsage
	}

	ins := make([]result.Input, 0, fs.NArg())
	for _, p := range fs.Args() {
		f, err := result.Read(p)
		if err != nil {
			fmt.Fprintf(stderr, "buzzload merge: %s\n", termtext.Lines(err.Error()))
			return exitBadInput
		}
		ins = append(ins, result.Input{Name: p, File: f})
	}
	merged, warns, err := result.Merge(ins)
	for _, w := range warns {
		fmt.Fprintf(stderr, "buzzload merge: warning: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(stderr, "buzzload merge: %s\n", termtext.Lines(err.Error()))
		return exitBadInput
	}
	if noThresholds {
		merged.Options.Thresholds = nil
		merged.Thresholds = nil
		merged.StageVerdicts = nil
	}
	set, err := result.ThresholdSet(merged)
	if err != nil {
		fmt.Fprintf(stderr, "buzzload merge: thresholds: %s\n", termtext.Lines(err.Error()))
		return exitBadInput
	}
	statuses := result.Evaluate(set, merged)
	buzzRep, err := mergeBuzz(ins, failedKeys(statuses))
	if err != nil {
		fmt.Fprintf(stderr, "buzzload merge: %s\n", termtext.Lines(err.Error()))
		return exitBadInput
	}
	if buzzRep != nil {
		if merged.Buzz, err = json.Marshal(buzzRep); err != nil {
			fmt.Fprintf(stderr, "buzzload merge: %s\n", termtext.Lines(err.Error()))
			return engine.ExitGeneric
		}
	}

	opts := summary.Options{
		Mode:       mode,
		TrendStats: merged.Options.SummaryTrendStats,
		TimeUnit:   merged.Options.SummaryTimeUnit,
	}
	if opts.Mode == "" {
		opts.Mode = "compact"
		if merged.Options.SummaryMode == "full" {
			opts.Mode = "full"
		}
	}
	if opts.Mode == "full" && merged.Options.SummaryMode != "full" {
		fmt.Fprintln(stderr, "buzzload merge: --summary-mode=full needs every instance to have run with --summary-mode=full (its per-scenario and per-group sinks are made while the run goes)")
		return exitUsage
	}
	if trendStats != "" {
		opts.TrendStats = splitList(trendStats)
	}
	if timeUnit != "" {
		opts.TimeUnit = timeUnit
	}
	_, noColor := lookupFrom(env.Env)("NO_COLOR")
	opts.IsStdOutTTY, opts.IsStdErrTTY = isTerminal(stdout), isTerminal(stderr)
	opts.Color, opts.NoColor = opts.IsStdOutTTY && !noColor, noColor
	printMode := opts.Mode
	if printMode == "disabled" {
		opts.Mode = "compact" // still needed for --summary-export
	}
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(stderr, "buzzload merge: %s\n", termtext.Lines(err.Error()))
		return exitUsage
	}

	fmt.Fprintf(stderr, "buzzload merge: %d results of %s (sequence %s): %s\n", len(ins), merged.Run.Script,
		merged.Run.ExecutionSegmentSequence, strings.Join(merged.Run.Merged, ", "))
	in := summary.Input{Snapshot: merged.Metrics, Thresholds: statuses, Options: opts}
	if printMode != "disabled" {
		text, err := summary.Text(in)
		if err != nil {
			fmt.Fprintf(stderr, "buzzload merge: summary: %s\n", termtext.Lines(err.Error()))
			return engine.ExitGeneric
		}
		fmt.Fprint(stdout, text)
		if buzzRep != nil {
			fmt.Fprint(stdout, buzzRep.Text())
		}
	}
	code := engine.ExitOK
	if export != "" {
		in.SetupData = merged.SetupData
		b, err := summary.Export(in)
		if err == nil {
			err = os.WriteFile(export, b, 0o666)
		}
		if err != nil {
			fmt.Fprintf(stderr, "buzzload merge: --summary-export: %s\n", termtext.Lines(err.Error()))
			code = engine.ExitGeneric
		}
	}
	if out != "" {
		if err := result.Write(out, merged); err != nil {
			fmt.Fprintf(stderr, "buzzload merge: --output: %s\n", termtext.Lines(err.Error()))
			code = engine.ExitGeneric
		}
	}
	reportStageVerdicts(stderr, merged.StageVerdicts)
	failed := failedKeys(statuses)
	if len(failed) > 0 {
		fmt.Fprintf(stderr, "buzzload merge: thresholds on metrics '%s' have been crossed on the merged data\n", strings.Join(failed, "', '"))
	}
	// An instance that did not run its plan to the end (interrupted, a
	// script error, aborted, marked failed) leaves the merged data short:
	// the whole run cannot pass, whatever its thresholds say (issue 31: a
	// runner pod killed mid-run wrote a partial result).
	if in, ok := unfinished(ins); ok {
		f := in.File.Run
		fmt.Fprintf(stderr, "buzzload merge: %s (segment %s, instance %s) ended with exit code %d (%s): the run did not complete, so the merged verdict cannot pass (exit %d)\n",
			in.Name, f.ExecutionSegment, f.InstanceID, f.ExitCode, termtext.Lines(f.Error), f.ExitCode)
		return f.ExitCode
	}
	if len(failed) > 0 {
		return engine.ExitThresholdsFailed
	}
	if buzzRep != nil && !buzzRep.OK && code == engine.ExitOK {
		fmt.Fprintf(stderr, "buzzload merge: the Buzz verdict failed: %s (exit %d)\n", termtext.Lines(buzzRep.AbortReason), ExitRelayEvidence)
		return ExitRelayEvidence
	}
	return code
}

// unfinished is the first instance whose run ended otherwise than by its
// plan: an exit code other than 0, 99 (its share failed a threshold) and
// 112 (the relay's evidence, judged in the merged Buzz verdict).
func unfinished(ins []result.Input) (result.Input, bool) {
	for _, in := range ins {
		switch in.File.Run.ExitCode {
		case engine.ExitOK, engine.ExitThresholdsFailed, ExitRelayEvidence:
		default:
			return in, true
		}
	}
	return result.Input{}, false
}

// mergeBuzz is the merged Buzz report when every instance has one (a run
// of the Buzz module): its steps, windows and verdict (report.MergeReports).
func mergeBuzz(ins []result.Input, thresholdsFailed []string) (*report.Report, error) {
	var names []string
	var reps []*report.Report
	for _, in := range ins {
		if len(in.File.Buzz) == 0 {
			return nil, nil
		}
		var r report.Report
		if err := json.Unmarshal(in.File.Buzz, &r); err != nil {
			return nil, fmt.Errorf("%s: its Buzz report: %w", in.Name, err)
		}
		names, reps = append(names, in.Name), append(reps, &r)
	}
	joined, why := joinLedgers(ins, reps)
	return report.MergeReports(names, reps, thresholdsFailed, report.JoinedLedger{Ledger: joined, Why: why})
}

// reportStageVerdicts names the stages a windowed threshold failed on the
// merged data, and how the verdict was reached.
func reportStageVerdicts(w io.Writer, vs []result.StageVerdict) {
	for _, v := range vs {
		if v.OK {
			continue
		}
		how := "re-judged on the combined value"
		if v.Exact != nil && !*v.Exact {
			how = "conservative: failed on " + strings.Join(v.FailedOn, ", ")
		}
		name := ""
		if v.StageName != "" {
			name = " (" + v.StageName + ")"
		}
		fmt.Fprintf(w, "buzzload merge: stage threshold '%s' on %s failed in scenario %s stage %d%s: value %g over %d samples (%s)\n",
			v.Source, v.Key, v.Scenario, v.Stage, name, v.Value, v.Samples, how)
	}
}

// failedKeys are the metric keys of failed thresholds, first-seen order.
func failedKeys(sts []thresholds.Status) []string {
	var keys []string
	seen := map[string]bool{}
	for _, s := range sts {
		if !s.OK && !seen[s.Key] {
			seen[s.Key] = true
			keys = append(keys, s.Key)
		}
	}
	return keys
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
