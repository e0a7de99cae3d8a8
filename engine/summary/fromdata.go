package summary

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/thresholds"
)

// TextOptions are textSummary's options (the k6-summary jslib's
// {indent, enableColors}).
type TextOptions struct {
	Indent string
	Color  bool
}

// TextFromData renders the compact text summary from handleSummary's data
// object (as JSON), the way the k6-summary jslib's textSummary(data,
// options) does: scripts with their own handleSummary, and the Buzz report,
// print k6's summary from it. For an unmodified data object it is what
// Text prints in compact mode, except that a threshold's value is left
// empty when data has no value for its aggregation (a percentile not in
// summaryTrendStats) and thresholds of one metric are listed by source.
func TextFromData(raw []byte, o TextOptions) (string, error) {
	var d SummaryData
	if err := json.Unmarshal(raw, &d); err != nil {
		return "", fmt.Errorf("textSummary: data is not the handleSummary data object: %w", err)
	}
	stats, err := metrics.ParseTrendStats(d.Options.SummaryTrendStats)
	if d.Options.SummaryTrendStats == nil || err != nil {
		stats, _ = metrics.ParseTrendStats(metrics.DefaultTrendStats())
	}
	r := &renderer{in: &Input{Options: Options{Color: o.Color, TimeUnit: d.Options.SummaryTimeUnit}}, stats: stats}
	dur := time.Duration(d.State.TestRunDurationMs * float64(time.Millisecond))
	r.b.WriteString("\n\n")
	keys := make([]string, 0, len(d.Metrics))
	for k := range d.Metrics {
		keys = append(keys, k)
	}
	sortKeys(keys)
	r.dataThresholds(&d, keys)
	var v dataView
	for _, k := range keys {
		parent, _, _ := strings.Cut(k, "{")
		if !r.listed(parent) {
			continue
		}
		md := d.Metrics[k]
		display := k
		if sel, err := metrics.ParseSelector(k); err == nil && sel.IsSubmetric() {
			display = "  " + sel.Display()
		}
		v.entries = append(v.entries, dataEntry{name: k, display: display, md: md})
	}
	v.checks = dataChecks(d.RootGroup)
	r.dataSection("TOTAL RESULTS", v, dur)
	r.b.WriteString("\n\n")
	out := r.b.String()
	if o.Indent != "" {
		lines := strings.Split(out, "\n")
		for i, l := range lines {
			if l != "" {
				lines[i] = o.Indent + l
			}
		}
		out = strings.Join(lines, "\n")
	}
	return out, nil
}

// dataEntry is one metric line from data.
type dataEntry struct {
	name, display string
	md            *MetricData
}

type dataView struct {
	entries []dataEntry
	checks  []*Check
}

func (r *renderer) dataThresholds(d *SummaryData, keys []string) {
	var with []string
	parents := map[string]bool{}
	for _, k := range keys {
		if len(d.Metrics[k].Thresholds) > 0 {
			with = append(with, k)
			if !strings.Contains(k, "{") {
				parents[k] = true
			}
		}
	}
	if len(with) == 0 {
		return
	}
	sortKeys(with)
	r.title("THRESHOLDS")
	for _, key := range with {
		indent := r.thresholdKey(key, parents)
		md := d.Metrics[key]
		var srcs []string
		if md != nil {
			for s := range md.Thresholds {
				srcs = append(srcs, s)
			}
		}
		sort.Strings(srcs)
		for _, src := range srcs {
			mark, code := "✓", ansiGreen
			if !md.Thresholds[src].OK {
				mark, code = "✗", ansiRed
			}
			stat, val := "", ""
			if e, err := thresholds.ParseExpr(src); err == nil {
				stat = e.Stat.Name
				if x, ok := md.Values[e.Stat.Name]; ok {
					val = formatStat(e.Stat, x, md.Type, md.Contains, r.in.Options.TimeUnit)
				} else if e.Stat.Kind == metrics.StatRate && md.Type == metrics.Rate {
					val = formatPercent(0)
				}
			}
			r.b.WriteString(indent + r.paint(code, fmt.Sprintf("%s '%s' %s=%s", mark, src, stat, val)) + "\n")
		}
		r.b.WriteString("\n")
	}
	r.b.WriteString("\n")
}

// dataChecks aggregates the group tree's checks by name, first seen first.
func dataChecks(root *Group) []*Check {
	var out []*Check
	idx := map[string]*Check{}
	var walk func(g *Group)
	walk = func(g *Group) {
		if g == nil {
			return
		}
		for _, c := range g.Checks {
			a := idx[c.Name]
			if a == nil {
				a = &Check{Name: c.Name}
				idx[c.Name] = a
				out = append(out, a)
			}
			a.Passes += c.Passes
			a.Fails += c.Fails
		}
		for _, sub := range g.Groups {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// dataCells are a metric line's cells from its values.
func (r *renderer) dataCells(e dataEntry) ([]string, bool) {
	tu := r.in.Options.TimeUnit
	vals := e.md.Values
	contains := e.md.Contains
	switch e.md.Type {
	case metrics.Counter:
		return []string{formatValue(vals["count"], contains, tu), formatValue(vals["rate"], contains, tu) + "/s"}, false
	case metrics.Gauge:
		return []string{formatValue(vals["value"], contains, tu), "min=" + formatValue(vals["min"], contains, tu), "max=" + formatValue(vals["max"], contains, tu)}, false
	case metrics.Rate:
		p, f := int64(vals["passes"]), int64(vals["fails"])
		return []string{formatPercent(vals["rate"]), fmt.Sprintf("%d out of %d", p, p+f)}, false
	case metrics.Trend:
		out := make([]string, len(r.stats))
		for i, st := range r.stats {
			out[i] = st.Name + "=" + formatStat(st, vals[st.Name], metrics.Trend, contains, tu)
		}
		return out, true
	}
	return nil, false
}

// dataSection is section for data: the same layout from values.
func (r *renderer) dataSection(title string, v dataView, dur time.Duration) {
	r.title(title)
	r.checks(v.checks, dur)
	var lines []line
	for _, e := range v.entries {
		cells, trend := r.dataCells(e)
		parent, _, _ := strings.Cut(e.name, "{")
		lines = append(lines, line{display: e.display, cells: cells, trend: trend, cat: category(parent)})
	}
	r.writeLines(byCategory(lines), true)
}
