package report

import (
	"fmt"
	"sort"
	"strings"
)

// OutputDelivery is what one metric output (--out cloud,
// experimental-prometheus-rw) delivered: its counts as the output keeps
// them (pushes, failed_pushes, points_sent, points_lost, samples_dropped).
type OutputDelivery struct {
	Output string           `json:"output"`
	Counts map[string]int64 `json:"counts"`
}

// check judges an output's delivery: a warning when nothing reached it or
// something was lost, so a run whose metrics went nowhere does not pass in
// silence (issue 43 L6). The run's own verdict is not failed: the outputs
// carry a copy of the results, not the run.
func (o OutputDelivery) check() Check {
	c := o.Counts
	delivered := c["pushes"] - c["failed_pushes"]
	if _, ok := c["points_sent"]; ok {
		delivered = c["points_sent"]
	}
	lost := c["failed_pushes"] + c["points_lost"] + c["samples_dropped"]
	name := "output " + o.Output
	switch {
	case delivered <= 0:
		return Check{Name: name, Level: CheckWarn, Detail: "no metrics reached it: " + countsText(c)}
	case lost > 0:
		return Check{Name: name, Level: CheckWarn, Detail: "some metrics were lost: " + countsText(c)}
	}
	return Check{Name: name, Level: CheckPass, Detail: countsText(c)}
}

func countsText(c map[string]int64) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", strings.ReplaceAll(k, "_", " "), c[k])
	}
	return strings.Join(parts, ", ")
}
