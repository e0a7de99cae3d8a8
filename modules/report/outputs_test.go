package report

import (
	"strings"
	"testing"
)

// An output that received nothing, or lost some, is a warning the checks
// show with its totals; one that got everything passes (issue 43 L6).
func TestOutputChecks(t *testing.T) {
	cases := []struct {
		name   string
		counts map[string]int64
		level  string
		says   string
	}{
		{"cloud refused every push", map[string]int64{"pushes": 4, "failed_pushes": 4, "points_sent": 0, "points_lost": 9}, CheckWarn, "no metrics reached it: failed pushes 4, points lost 9"},
		{"cloud never pushed", map[string]int64{"pushes": 0, "points_sent": 0, "samples_dropped": 12}, CheckWarn, "no metrics reached it"},
		{"remote write lost some", map[string]int64{"pushes": 10, "failed_pushes": 1, "points_lost": 3}, CheckWarn, "some metrics were lost"},
		{"cloud got it all", map[string]int64{"pushes": 3, "failed_pushes": 0, "points_sent": 30}, CheckPass, "points sent 30"},
	}
	for _, c := range cases {
		r := &Report{OK: true, Outputs: []OutputDelivery{{Output: "cloud", Counts: c.counts}}}
		var got *Check
		for _, ch := range checksOf(r) {
			if ch.Name == "output cloud" {
				ch := ch
				got = &ch
			}
		}
		if got == nil || got.Level != c.level || !strings.Contains(got.Detail, c.says) {
			t.Errorf("%s: check %+v, want %s saying %q", c.name, got, c.level, c.says)
		}
	}
}
