package report

import (
	"strings"
	"testing"

	"github.com/buzzload/buzzload/modules/scenario"
)

// judge applies the abort limits: p99 and error rate per op, deliver's
// errors, throttles and pending not judged.
func TestJudge(t *testing.T) {
	lim := scenario.Abort{MaxP99Ms: 100, MaxErrorRate: 0.1}
	ops := map[string]*OpReport{
		"publish": {OK: 10, P99Ms: 150},
		"deliver": {OK: 1, Errors: 9, P99Ms: 50},
		"connect": {OK: 8, Errors: 2, P99Ms: 10},
		"auth":    {OK: 0, Throttled: 50, Pending: 3},
	}
	got := judge(lim, ops)
	if !strings.Contains(got, "publish p99 150.0 ms") || !strings.Contains(got, "connect error rate 20.00%") {
		t.Errorf("judge = %q", got)
	}
	if strings.Contains(got, "deliver") || strings.Contains(got, "auth") {
		t.Errorf("deliver errors, throttles or pending were judged: %q", got)
	}
}
