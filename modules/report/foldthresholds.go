package report

import (
	"fmt"
	"sort"
	"strings"
)

// The abort rules are thresholds on every op's submetric, per step and
// after the last hold (buzz_op_duration{op:X}, buzz_op_failed{op:X,
// step:shutdown}, ...): k6's summary would print two lines each, about
// 150 lines before the Buzz report for the smoke scenario (issue 26 item
// 8). The printed summary folds them: one line per rule and window, the
// worst op named; every threshold still counts (the exit code, the
// --summary-export and the report's thresholds_failed are untouched).

// foldedMetric says whether a summary metric is an abort-rule submetric.
func foldedMetric(name string) bool {
	return (strings.HasPrefix(name, "buzz_op_duration{") || strings.HasPrefix(name, "buzz_op_failed{")) &&
		strings.Contains(name, "op:")
}

// Rules are the abort rules as thresholds, by metric key: the expressions
// k6options.Build made. Only these fold; a script's own thresholds on the
// same submetrics stay in k6's THRESHOLDS block with their values (issue
// 47 item 2). nil folds every threshold of an abort-rule submetric.
type Rules map[string][]string

func (r Rules) built(name, expr string) bool {
	if r == nil {
		return true
	}
	for _, e := range r[name] {
		if e == expr {
			return true
		}
	}
	return false
}

// FoldThresholds returns data without the abort rules' entries and the
// folded lines that stand for them ("" when there were none).
func FoldThresholds(data map[string]any, rules Rules) (map[string]any, string) {
	metrics, _ := data["metrics"].(map[string]any)
	if metrics == nil {
		return data, ""
	}
	type group struct {
		metric, window, expr string
		pass, fail           []string
		worst                string
		worstV               float64
		stat                 string
	}
	groups := map[string]*group{}
	kept := make(map[string]any, len(metrics))
	for name, v := range metrics {
		m, _ := v.(map[string]any)
		all, _ := m["thresholds"].(map[string]any)
		if !foldedMetric(name) || len(all) == 0 {
			kept[name] = v
			continue
		}
		// The script's own thresholds on this submetric stay, with its values.
		th, own := map[string]any{}, map[string]any{}
		for expr, res := range all {
			if rules.built(name, expr) {
				th[expr] = res
			} else {
				own[expr] = res
			}
		}
		if len(own) > 0 {
			mine := make(map[string]any, len(m))
			for k, x := range m {
				mine[k] = x
			}
			mine["thresholds"] = own
			kept[name] = mine
		}
		if len(th) == 0 {
			continue
		}
		base, tags, _ := strings.Cut(strings.TrimSuffix(name, "}"), "{")
		op, window := "", "judged per step"
		for _, kv := range strings.Split(tags, ",") {
			k, val, _ := strings.Cut(kv, ":")
			switch k {
			case "op":
				op = val
			case "step":
				window = "after the last hold"
				if val != ShutdownStep {
					window = "step " + val
				}
			}
		}
		values, _ := m["values"].(map[string]any)
		for expr, res := range th {
			key := base + "|" + window + "|" + expr
			g := groups[key]
			if g == nil {
				g = &group{metric: base, window: window, expr: expr, stat: statOf(expr)}
				groups[key] = g
			}
			ok := true
			if r, _ := res.(map[string]any); r != nil {
				if b, isBool := r["ok"].(bool); isBool {
					ok = b
				}
			}
			if ok {
				g.pass = append(g.pass, op)
			} else {
				g.fail = append(g.fail, op)
			}
			if x, isNum := values[g.stat].(float64); isNum && (g.worst == "" || x > g.worstV) {
				g.worst, g.worstV = op, x
			}
		}
	}
	if len(groups) == 0 {
		return data, ""
	}
	// A rule that held both per step and after the last hold is one line
	// (kept apart when either was crossed, to name the ops that crossed it).
	for k, g := range groups {
		if g.window != "judged per step" || len(g.fail) > 0 {
			continue
		}
		hk := g.metric + "|after the last hold|" + g.expr
		h := groups[hk]
		if h == nil || len(h.fail) > 0 {
			continue
		}
		ops := map[string]bool{}
		for _, op := range append(append([]string(nil), g.pass...), h.pass...) {
			ops[op] = true
		}
		m := &group{metric: g.metric, window: "judged per step and after the last hold", expr: g.expr, stat: g.stat,
			worst: g.worst, worstV: g.worstV}
		for op := range ops {
			m.pass = append(m.pass, op)
		}
		if h.worst != "" && (m.worst == "" || h.worstV > m.worstV) {
			m.worst, m.worstV = h.worst, h.worstV
		}
		delete(groups, k)
		delete(groups, hk)
		groups[g.metric+"|"+m.window+"|"+g.expr] = m
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := groups[keys[i]], groups[keys[j]]
		if a.window != b.window {
			return strings.HasPrefix(a.window, "judged per step") || (!strings.HasPrefix(b.window, "judged per step") && a.window < b.window)
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	b.WriteString("  abort rules as thresholds on every op (folded; each op's threshold still counts):\n")
	for _, k := range keys {
		g := groups[k]
		mark := "✓"
		if len(g.fail) > 0 {
			mark = "✗"
		}
		n := len(g.pass) + len(g.fail)
		fmt.Fprintf(&b, "    %s %s '%s' on %d ops, %s", mark, g.metric, g.expr, n, g.window)
		if g.worst != "" {
			fmt.Fprintf(&b, ": worst over the run %s %s=%s", tc(g.worst), g.stat, fmtStat(g.metric, g.worstV))
		}
		if len(g.fail) > 0 {
			sort.Strings(g.fail)
			fmt.Fprintf(&b, "; crossed by %s", tc(strings.Join(g.fail, ", ")))
		}
		b.WriteString("\n")
	}
	out := make(map[string]any, len(data))
	for k, v := range data {
		out[k] = v
	}
	out["metrics"] = kept
	return out, b.String()
}

// statOf is the statistic a threshold expression judges ("p(99)<=2000" →
// "p(99)", "rate<=0.01" → "rate").
func statOf(expr string) string {
	for i, r := range expr {
		if r == '<' || r == '>' || r == '=' || r == '!' {
			return strings.TrimSpace(expr[:i])
		}
	}
	return expr
}

func fmtStat(metric string, v float64) string {
	if metric == "buzz_op_failed" {
		return fmt.Sprintf("%.2f%%", 100*v)
	}
	return fmt.Sprintf("%.2fms", v)
}
