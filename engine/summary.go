package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/engine/summary"
)

// summaryOptions are the engine/summary switches of this run.
func (r *runner) summaryOptions() summary.Options {
	mode := r.cfg.SummaryMode
	if mode == "disabled" {
		mode = "compact"
	}
	_, noColor := lookupEnv(r.cfg.ProcessEnv, "NO_COLOR")
	if _, k6 := lookupEnv(r.cfg.ProcessEnv, "K6_NO_COLOR"); k6 {
		noColor = true
	}
	return summary.Options{
		Mode: mode, TrendStats: r.opts.SummaryTrendStats, TimeUnit: r.opts.SummaryTimeUnit,
		Color: r.cfg.StdoutTTY && !noColor, NoColor: noColor,
		IsStdOutTTY: r.cfg.StdoutTTY, IsStdErrTTY: r.cfg.StderrTTY,
	}
}

func lookupEnv(env map[string]string, k string) (string, bool) {
	v, ok := env[k]
	return v, ok
}

// summarize runs handleSummary (or prints the default summary) and writes
// --summary-export. Nothing here changes the exit code (k6 v2.2.0,
// observed: a handleSummary that throws is logged as a script exception
// and the default summary printed; one that times out is logged and no
// summary printed, exit unchanged; v1.8.1 exited 102 for the timeout).
func (r *runner) summarize(ctx context.Context) {
	if r.cfg.SummaryMode == "disabled" || r.bundle == nil || r.runStart.IsZero() {
		return
	}
	in := summary.Input{
		Snapshot:   r.coll.Snapshot(r.runEnd.Sub(r.runStart)),
		Thresholds: r.result().Thresholds,
		Options:    r.summaryOptions(),
	}
	data, err := summary.Data(in)
	if err != nil {
		r.log.Log(jshost.LevelError, "summary: "+err.Error())
		return
	}
	raw, err := json.Marshal(data)
	if err != nil {
		r.log.Log(jshost.LevelError, "summary data: "+err.Error())
		return
	}
	outs, handled, err := r.bundle.RunHandleSummary(ctx, r.opts.HandleSummaryTimeout, raw, r.setup())
	if err != nil {
		var to *jshost.TimeoutError
		if errors.As(err, &to) {
			if to.Where != "" {
				r.log.Log(jshost.LevelError, "context canceled at "+to.Where)
			}
			r.log.Log(jshost.LevelError, "failed to handle the end-of-test summary", "error", err.Error())
			outs, handled = nil, true // no summary at all, as k6 v2.2
		} else {
			msg, hint := jshost.ExceptionText(err)
			fields := []string{"source", "stacktrace"}
			if hint != "" {
				fields = append(fields, "hint", hint)
			}
			r.log.Log(jshost.LevelError, msg, fields...)
			handled = false
		}
	}
	var errs []string
	if !handled {
		text, err := summary.Text(in)
		if err != nil {
			r.log.Log(jshost.LevelError, "summary: "+err.Error())
		} else {
			fmt.Fprint(r.cfg.Stdout, text)
		}
	} else {
		for _, o := range outs {
			if err := r.writeSummaryOutput(o); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if r.cfg.SummaryExport != "" {
		in.SetupData = r.setup()
		b, err := summary.Export(in)
		if err == nil {
			err = os.WriteFile(r.cfg.SummaryExport, b, 0o666)
		}
		if err != nil {
			errs = append(errs, err.Error())
			r.failOutput(fmt.Errorf("--summary-export: %w", err))
		}
	}
	if len(errs) > 0 {
		r.log.Log(jshost.LevelError, "Could not save some summary information: "+strings.Join(errs, "; "))
	}
}

func (r *runner) writeSummaryOutput(o jshost.SummaryOutput) error {
	var w io.Writer
	switch o.Dest {
	case "stdout":
		w = r.cfg.Stdout
	case "stderr":
		w = r.cfg.Stderr
	default:
		f, err := os.OpenFile(o.Dest, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o666)
		if err != nil {
			return err
		}
		_, werr := f.Write(o.Data)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		return werr
	}
	_, err := w.Write(o.Data)
	return err
}
