// sc.report(data, opts) from a script's handleSummary: k6's summary and the
// text report on stdout, the JSON report in a file, and which thresholds
// failed, read from k6's summary data.

package extension

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/buzzload/buzzload/engine/jshost/textsummary"
	"github.com/buzzload/buzzload/modules/k6options"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/grafana/sobek"
)

// failedThresholds reads handleSummary's data: "metric: expression" of
// every threshold whose last evaluation failed.
func failedThresholds(data any) []string {
	d, _ := data.(map[string]any)
	ms, _ := d["metrics"].(map[string]any)
	var out []string
	for name, mv := range ms {
		m, _ := mv.(map[string]any)
		th, _ := m["thresholds"].(map[string]any)
		for src, tv := range th {
			t, _ := tv.(map[string]any)
			if ok, isBool := t["ok"].(bool); isBool && !ok {
				out = append(out, name+": "+src)
			}
		}
	}
	sort.Strings(out)
	return out
}

// jsReport is sc.report(data, {json, k6Summary}) for handleSummary: k6's
// summary then the text report on stdout (k6Summary: false leaves k6's
// out) and the JSON report in a file (default buzz-report.json; an empty
// string writes none). It also stops the embedded relay.
func (in *instance) jsReport(l *loaded, data, opts sobek.Value) sobek.Value {
	d, err := in.fromJS(data)
	if err != nil {
		in.throw(fmt.Errorf("report(data): %w", err))
	}
	path := "buzz-report.json"
	var profile *report.ProfileVerdict
	if o, _ := in.fromJS(opts); o != nil {
		om, ok := o.(map[string]any)
		if !ok {
			in.throw(fmt.Errorf("report(data, opts): opts must be an object"))
		}
		if v, ok := om["json"]; ok {
			s, _ := v.(string)
			path = s
		}
		if v, ok := om["profile"]; ok && v != nil {
			raw, _ := json.Marshal(v)
			profile = &report.ProfileVerdict{}
			if err := json.Unmarshal(raw, profile); err != nil {
				in.throw(fmt.Errorf("report(data, opts): profile: want pacedVerdict()'s object: %w", err))
			}
		}
	}
	if in.m.opts.ReportPath != "" {
		path = in.m.opts.ReportPath // --report wins over the script's choice
	}
	_ = in.m.Close()
	rep := l.buildReport(failedThresholds(d), profile)
	in.m.keepReport(rep)
	// k6's own summary (thresholds, checks, built-in metrics) stays in
	// front of the Buzz report, as k6 would have printed it.
	k6Text, folded := "", ""
	if optBool(opts, "k6Summary", true) {
		color := false
		if dm, ok := d.(map[string]any); ok {
			o, _ := dm["options"].(map[string]any)
			st, _ := dm["state"].(map[string]any)
			noColor, _ := o["noColor"].(bool)
			tty, _ := st["isStdOutTTY"].(bool)
			color = tty && !noColor
		}
		co := in.rt().NewObject()
		_ = co.Set("enableColors", color)
		shown := data
		if dm, ok := d.(map[string]any); ok && optBool(opts, "foldThresholds", true) {
			var f map[string]any
			f, folded = report.FoldThresholds(dm, builtRules(l))
			shown = in.rt().ToValue(f)
		}
		t, err := textsummary.Render(in.rt(), shown, co)
		if err != nil {
			in.throw(fmt.Errorf("report(data): %w", err))
		}
		k6Text = t
	}
	// k6's summary ends in blank lines; one is enough before what follows.
	text := k6Text
	if t := strings.TrimRight(k6Text, "\n"); t != "" {
		text = t + "\n"
	}
	if folded != "" {
		text += "\n" + folded
	}
	text += rep.Text()
	if path != "" {
		// Written here, not returned to the runner, so a report that cannot
		// be written fails the run (Module.FinishReports) instead of only
		// being logged.
		raw, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			in.throw(err)
		}
		if err := in.m.writeReport(path, append(raw, '\n')); err != nil {
			text += "  ✗ " + err.Error() + "\n\n"
		}
	}
	return in.rt().ToValue(map[string]any{"stdout": text})
}

// optBool reads a boolean option of an options object (def when absent).
func optBool(opts sobek.Value, key string, def bool) bool {
	o, ok := opts.(*sobek.Object)
	if !ok {
		return def
	}
	v := o.Get(key)
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return def
	}
	return v.ToBoolean()
}

// builtRules are the abort rules k6options.Build made of l's scenario, the
// thresholds the summary folds (the script's own are k6's to print).
func builtRules(l *loaded) report.Rules {
	o, _ := k6options.Build(l.base, l.shard)
	rules := report.Rules{}
	for key, specs := range o.Thresholds {
		for _, s := range specs {
			rules[key] = append(rules[key], s.Threshold)
		}
	}
	return rules
}
