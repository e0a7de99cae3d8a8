package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/buzzload/buzzload/engine/js"
)

// summarize runs handleSummary (or prints the default summary) and writes
// --summary-export. Nothing here changes the exit code except a
// handleSummary timeout (102) (§1.5).
func (r *runner) summarize(ctx context.Context) {
	if r.cfg.SummaryMode == "disabled" || r.bundle == nil || r.runStart.IsZero() {
		return
	}
	runDur := r.runEnd.Sub(r.runStart)
	snap := r.coll.Snapshot(runDur)
	var statuses = r.result().Thresholds
	data := buildSummaryData(snap, statuses, r.opts.SummaryTrendStats, r.opts.SummaryTimeUnit, r.cfg.StdoutTTY, r.cfg.StderrTTY, runDur)
	raw, err := data.json()
	if err != nil {
		r.log.Log(js.LevelError, "summary data: "+err.Error())
		return
	}
	outs, handled, err := r.bundle.RunHandleSummary(ctx, r.opts.HandleSummaryTimeout, raw, r.setupData)
	if err != nil {
		var to *js.TimeoutError
		if errors.As(err, &to) {
			r.fail(ExitGenericTimeout, err)
		}
		r.log.Log(js.LevelError, "handleSummary() failed: "+err.Error(), "source", "handleSummary")
		handled = false
	}
	if !handled {
		text := r.renderText(data)
		fmt.Fprint(r.cfg.Stdout, "\n"+text+"\n\n")
	} else {
		var errs []string
		for _, o := range outs {
			if err := r.writeSummaryOutput(o); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			r.log.Log(js.LevelError, "Could not save some summary information: "+strings.Join(errs, "; "))
		}
	}
	if r.cfg.SummaryExport != "" {
		if err := r.writeSummaryExport(raw); err != nil {
			r.log.Log(js.LevelError, "Could not save some summary information: "+err.Error())
		}
	}
}

func (r *runner) writeSummaryOutput(o js.SummaryOutput) error {
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

// writeSummaryExport writes the old JSON export format (§6.5): values
// flattened, a Rate's rate renamed value, thresholds true when FAILED,
// groups and checks keyed by name, options and state removed.
func (r *runner) writeSummaryExport(raw []byte) error {
	var d struct {
		RootGroup json.RawMessage `json:"root_group"`
		Metrics   map[string]struct {
			Type       string                      `json:"type"`
			Values     map[string]float64          `json:"values"`
			Thresholds map[string]summaryThreshold `json:"thresholds"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return err
	}
	out := map[string]any{}
	ms := map[string]any{}
	for name, m := range d.Metrics {
		v := map[string]any{}
		for k, x := range m.Values {
			if m.Type == "rate" && k == "rate" {
				k = "value"
			}
			v[k] = x
		}
		if len(m.Thresholds) > 0 {
			th := map[string]bool{}
			for src, st := range m.Thresholds {
				th[src] = !st.OK
			}
			v["thresholds"] = th
		}
		ms[name] = v
	}
	out["metrics"] = ms
	var root summaryGroup
	if err := json.Unmarshal(d.RootGroup, &root); err != nil {
		return err
	}
	out["root_group"] = exportGroup(&root)
	if r.setupData != nil {
		out["setup_data"] = json.RawMessage(r.setupData)
	}
	b, err := json.MarshalIndent(out, "", "    ")
	if err != nil {
		return err
	}
	return os.WriteFile(r.cfg.SummaryExport, b, 0o666)
}

func exportGroup(g *summaryGroup) map[string]any {
	groups := map[string]any{}
	for _, c := range g.Groups {
		groups[c.Name] = exportGroup(c)
	}
	checks := map[string]any{}
	for _, c := range g.Checks {
		checks[c.Name] = c
	}
	return map[string]any{"name": g.Name, "path": g.Path, "id": g.ID, "groups": groups, "checks": checks}
}

// renderText is the plain end-of-test summary. It lists thresholds, checks
// and every metric with the values handleSummary gets.
func (r *runner) renderText(d *SummaryData) string {
	var b strings.Builder
	names := make([]string, 0, len(d.Metrics))
	for n := range d.Metrics {
		names = append(names, n)
	}
	sort.Strings(names)
	var thr []string
	for _, n := range names {
		m := d.Metrics[n]
		srcs := make([]string, 0, len(m.Thresholds))
		for s := range m.Thresholds {
			srcs = append(srcs, s)
		}
		sort.Strings(srcs)
		for _, s := range srcs {
			mark := "✓"
			if !m.Thresholds[s].OK {
				mark = "✗"
			}
			thr = append(thr, fmt.Sprintf("    %s %s '%s'", mark, n, s))
		}
	}
	if len(thr) > 0 {
		b.WriteString("  █ THRESHOLDS \n\n")
		b.WriteString(strings.Join(thr, "\n"))
		b.WriteString("\n\n\n")
	}
	b.WriteString("  █ TOTAL RESULTS \n\n")
	for _, n := range names {
		m := d.Metrics[n]
		keys := make([]string, 0, len(m.Values))
		for k := range m.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%s", k, trimFloat(m.Values[k]))
		}
		fmt.Fprintf(&b, "    %s: %s\n", n, strings.Join(parts, " "))
	}
	return strings.TrimRight(b.String(), "\n")
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.6f", f)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
