package report

import (
	"strings"
	"testing"
)

// The printed summary folds the per-op abort thresholds into one line per
// rule and window, naming the worst op and any op that crossed; other
// metrics' thresholds stay (issue 26 item 8).
func TestFoldThresholds(t *testing.T) {
	th := func(expr string, ok bool) map[string]any { return map[string]any{expr: map[string]any{"ok": ok}} }
	m := func(expr string, ok bool, stat string, v float64) map[string]any {
		return map[string]any{"thresholds": th(expr, ok), "values": map[string]any{stat: v}}
	}
	data := map[string]any{"metrics": map[string]any{
		"buzz_op_duration{op:auth}":                m("p(99)<=2000", true, "p(99)", 1.5),
		"buzz_op_duration{op:publish}":             m("p(99)<=2000", false, "p(99)", 2500),
		"buzz_op_failed{op:auth,step:shutdown}":    m("rate<=0.01", true, "rate", 0),
		"buzz_op_failed{op:publish,step:shutdown}": m("rate<=0.01", true, "rate", 0.002),
		"buzz_client_exits":                        map[string]any{"thresholds": th("count<=0", true)},
		"buzz_op_duration":                         map[string]any{"values": map[string]any{"p(99)": 3.0}},
	}, "state": map[string]any{}}
	out, text := FoldThresholds(data, nil)
	kept := out["metrics"].(map[string]any)
	if len(kept) != 2 || kept["buzz_client_exits"] == nil || kept["buzz_op_duration"] == nil {
		t.Errorf("kept %v", kept)
	}
	if len(data["metrics"].(map[string]any)) != 6 {
		t.Error("the caller's data was changed")
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	want := []string{
		"abort rules as thresholds on every op (folded; each op's threshold still counts):",
		"✗ buzz_op_duration 'p(99)<=2000' on 2 ops, judged per step: worst over the run publish p(99)=2500.00ms; crossed by publish",
		"✓ buzz_op_failed 'rate<=0.01' on 2 ops, after the last hold: worst over the run publish rate=0.20%",
	}
	if len(lines) != len(want) {
		t.Fatalf("folded:\n%s", text)
	}
	for i := range want {
		if strings.TrimSpace(lines[i]) != want[i] {
			t.Errorf("line %d: %q, want %q", i, strings.TrimSpace(lines[i]), want[i])
		}
	}
	// A rule held per step and after the last hold is one line, its worst
	// op the worse of the two windows'.
	_, text = FoldThresholds(map[string]any{"metrics": map[string]any{
		"buzz_op_failed{op:auth}":                  m("rate<=0.01", true, "rate", 0.001),
		"buzz_op_failed{op:publish}":               m("rate<=0.01", true, "rate", 0),
		"buzz_op_failed{op:publish,step:shutdown}": m("rate<=0.01", true, "rate", 0.004),
	}}, nil)
	if want := "✓ buzz_op_failed 'rate<=0.01' on 2 ops, judged per step and after the last hold: worst over the run publish rate=0.40%"; !strings.Contains(text, want) ||
		strings.Count(text, "\n") != 2 {
		t.Errorf("held in both windows:\n%s\nwant %s", text, want)
	}
	if _, text := FoldThresholds(map[string]any{"metrics": map[string]any{"iterations": map[string]any{}}}, nil); text != "" {
		t.Errorf("nothing to fold: %q", text)
	}
}

// A script's own threshold on an abort-rule submetric is not an abort rule:
// it stays in k6's block with its value; the built rules beside it fold
// (issue 47 item 2: a k6 user's threshold vanished into "judged per step").
func TestOwnThresholdsStayInK6sBlock(t *testing.T) {
	data := map[string]any{"metrics": map[string]any{
		"buzz_op_duration{op:post}": map[string]any{
			"thresholds": map[string]any{"p(99)<0.001": map[string]any{"ok": false}, "p(99)<=2000": map[string]any{"ok": true}},
			"values":     map[string]any{"p(99)": 2.5},
		},
		"buzz_op_duration{op:auth}": map[string]any{"thresholds": map[string]any{"p(99)<=2000": map[string]any{"ok": true}},
			"values": map[string]any{"p(99)": 1.0}},
	}}
	rules := Rules{"buzz_op_duration{op:post}": {"p(99)<=2000"}, "buzz_op_duration{op:auth}": {"p(99)<=2000"}}
	out, text := FoldThresholds(data, rules)
	kept := out["metrics"].(map[string]any)
	post, _ := kept["buzz_op_duration{op:post}"].(map[string]any)
	th, _ := post["thresholds"].(map[string]any)
	if len(th) != 1 || th["p(99)<0.001"] == nil || post["values"] == nil {
		t.Fatalf("the script's threshold and its value did not stay: %v", kept)
	}
	if kept["buzz_op_duration{op:auth}"] != nil {
		t.Error("a built rule was not folded")
	}
	if !strings.Contains(text, "'p(99)<=2000' on 2 ops") || strings.Contains(text, "0.001") {
		t.Errorf("folded:\n%s", text)
	}
}
