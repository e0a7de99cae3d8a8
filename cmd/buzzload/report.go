package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine/outfile"
	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/report/htmlreport"
)

// reportCmd is `buzzload report FILE -o report.html`: the run of a result
// file (run --result) or a Buzz JSON report (run --report) as one
// self-contained HTML page (modules/report/htmlreport).
func reportCmd(_ context.Context, args []string, env cliEnv) int {
	stdout, stderr := orDiscard(env.Stdout), orDiscard(env.Stderr)
	fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var out, title string
	var help bool
	fs.StringVarP(&out, "output", "o", "report.html", "the HTML file to write")
	fs.StringVar(&title, "title", "", "the page's title (default: the file's name)")
	fs.BoolVarP(&help, "help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "buzzload report: %s\n", termtext.Lines(err.Error()))
		return exitUsage
	}
	if help {
		fmt.Fprintln(stdout, "usage: buzzload report [-o report.html] FILE")
		fmt.Fprintln(stdout, "\nFILE is a result file (buzzload run --result) or a Buzz JSON report (--report).")
		fmt.Fprintln(stdout, "Writes one HTML file that opens anywhere, offline: per-operation plots over the")
		fmt.Fprintln(stdout, "report windows, the steps and their verdicts, clients, the generator's health.")
		fmt.Fprintln(stdout)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "buzzload report: want exactly one file (see buzzload report --help)")
		return exitUsage
	}
	r, err := loadRunOps(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "buzzload report: %s\n", termtext.Lines(err.Error()))
		return exitBadInput
	}
	if title == "" {
		title = "buzzload report: " + r.File
	}
	if err := writeHTML(out, htmlPage(title, htmlRun(r.File, r))); err != nil {
		fmt.Fprintf(stderr, "buzzload report: %s\n", termtext.Lines(err.Error()))
		return 1
	}
	return 0
}

func htmlPage(title string, runs ...htmlreport.Run) htmlreport.Page {
	return htmlreport.Page{Title: title, Runs: runs}
}

// htmlRun is one side of a page: the Buzz report for the plots, and a
// result file's exact whole-run sinks for the totals.
func htmlRun(label string, r *runOps) htmlreport.Run {
	run := htmlreport.Run{Label: label, File: r.File, Report: r.Buzz, Note: r.Note, Thresholds: r.Thresholds, ExitCode: r.ExitCode}
	if r.Format == "result" || r.Format == "summary-export" {
		run.Ops = r.Ops
		run.Note = ""
	}
	if len(r.Buzz) == 0 {
		run.Note = "no Buzz report in this file (a merged result, or a script without buzz.load): whole-run numbers only, no plots over time"
		if r.Note != "" {
			run.Note = r.Note + "; whole-run numbers only, no plots over time (the web dashboard's export has them)"
		}
	}
	return run
}

func writeHTML(path string, p htmlreport.Page) error {
	var b bytes.Buffer
	if err := htmlreport.Write(&b, p); err != nil {
		return err
	}
	if err := outfile.Replace(path, b.Bytes(), 0o644); err != nil { // the previous page whole if this write fails
		return fmt.Errorf("HTML report: %w", err)
	}
	return nil
}

// writeRunHTML is run --report-html: the run's Buzz report as a page.
func writeRunHTML(path, script string, rep *report.Report) error {
	if rep == nil {
		return fmt.Errorf("--report-html %s: the script loaded no scenario (buzz.load), or several", path)
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	run := htmlreport.Run{Label: script, File: script, Report: raw}
	return writeHTML(path, htmlPage("buzzload run: "+script, run))
}
