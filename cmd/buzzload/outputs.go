package main

import (
	"fmt"
	"strings"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/outfile"
)

// checkOutputs makes sure, before any load, that every file the run will
// write at its end can be written: a run must not find out after an hour
// that its data has nowhere to go (issue 30 F3). Nothing at the paths is
// changed. The error names the flag; it exits 104 like any bad option.
func checkOutputs(f *runFlags, cfg engine.RunConfig) error {
	type out struct{ flag, path string }
	var outs []out
	add := func(flag, path string) {
		if path != "" {
			outs = append(outs, out{flag, path})
		}
	}
	add("--summary-export", cfg.SummaryExport)
	add("--result", strings.ReplaceAll(f.result, "{instance_id}", "check"))
	add("--report", f.buzz.report)
	add("--report-html", f.buzz.reportHTML)
	for _, o := range cfg.Outputs {
		kind, arg, ok := strings.Cut(o, "=")
		if ok && (kind == "json" || kind == "csv") {
			if p, _, _ := strings.Cut(arg, ","); p != "" && p != "-" {
				add("--out "+kind, p)
			}
		}
	}
	for _, o := range outs {
		if err := outfile.Check(o.path); err != nil {
			return configerr.New(fmt.Errorf("%s %s: cannot be written: %w", o.flag, o.path, err))
		}
	}
	return nil
}
