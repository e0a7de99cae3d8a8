package summary

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/thresholds"
)

const (
	ansiReset = "\x1b[0m"
	ansiGreen = "\x1b[32m"
	ansiRed   = "\x1b[31m"
	ansiCyan  = "\x1b[36m"
	ansiFaint = "\x1b[2m"
	ansiBold  = "\x1b[1m"
)

type renderer struct {
	in    *Input
	stats []metrics.Stat
	full  bool
	b     strings.Builder
}

func (r *renderer) paint(code, s string) string {
	if !r.in.Options.Color || s == "" {
		return s
	}
	return code + s + ansiReset
}

// Text renders the end-of-test summary in compact or full mode.
func Text(in Input) (string, error) {
	if err := in.Options.Validate(); err != nil {
		return "", err
	}
	if in.Snapshot == nil {
		return "", fmt.Errorf("summary: no snapshot")
	}
	stats, _, _ := in.Options.trendStats()
	r := &renderer{in: &in, stats: stats, full: in.Options.Mode == "full"}
	r.b.WriteString("\n\n")
	if len(in.Thresholds) > 0 {
		r.thresholds()
	}
	all := r.viewAll()
	r.section("TOTAL RESULTS", all)
	if r.full {
		for _, g := range r.topGroups() {
			r.b.WriteString("\n")
			r.section("GROUP: "+strings.TrimPrefix(g, "::"), r.viewRows("group", g, []string{"group", "check"}))
		}
		for _, sc := range r.scenarios() {
			r.b.WriteString("\n")
			r.section("SCENARIO: "+sc, r.viewRows("scenario", sc, []string{"scenario", "check"}))
		}
	}
	r.b.WriteString("\n\n")
	return r.b.String(), nil
}

func (r *renderer) title(t string) {
	r.b.WriteString("  " + r.paint(ansiBold, "█ "+t) + " \n\n")
}

// sortKeys orders metric keys by name with sub-metrics right after their parent.
func sortKeys(keys []string) {
	sort.Slice(keys, func(i, j int) bool {
		pi, _, si := strings.Cut(keys[i], "{")
		pj, _, sj := strings.Cut(keys[j], "{")
		if pi != pj {
			return pi < pj
		}
		if si != sj {
			return !si
		}
		return keys[i] < keys[j]
	})
}

func (r *renderer) thresholds() {
	byKey := map[string][]thresholds.Status{}
	parents := map[string]bool{}
	var keys []string
	for _, st := range r.in.Thresholds {
		if _, ok := byKey[st.Key]; !ok {
			keys = append(keys, st.Key)
		}
		byKey[st.Key] = append(byKey[st.Key], st)
		if !strings.Contains(st.Key, "{") {
			parents[st.Key] = true
		}
	}
	sortKeys(keys)
	r.title("THRESHOLDS")
	for _, key := range keys {
		indent := r.thresholdKey(key, parents)
		for _, st := range byKey[key] {
			ok := !st.Evaluated || st.OK
			mark, code := "✓", ansiGreen
			if !ok {
				mark, code = "✗", ansiRed
			}
			line := fmt.Sprintf("%s '%s' %s=%s", mark, st.Source, st.Stat.Name, r.thresholdValue(st))
			r.b.WriteString(indent + r.paint(code, line) + "\n")
		}
		r.b.WriteString("\n")
	}
	r.b.WriteString("\n")
}

// thresholdValue is the aggregation named in the expression, formatted; empty
// for a Trend aggregation that is neither a configured stat nor a percentile
// (k6 quirk).
func (r *renderer) thresholdValue(st thresholds.Status) string {
	sink, m := r.in.Snapshot.Lookup(st.Key)
	if m == nil {
		return ""
	}
	if sink == nil {
		sink = metrics.NewSink(m.Type)
	}
	if m.Type == metrics.Trend && st.Stat.Kind != metrics.StatPercentile {
		found := false
		for _, s := range r.stats {
			if s.Name == st.Stat.Name {
				found = true
			}
		}
		if !found {
			return ""
		}
	}
	v, ok := sink.Value(st.Stat, r.in.Snapshot.Duration)
	if !ok {
		v = 0
	}
	return formatStat(st.Stat, v, m.Type, m.Contains, r.in.Options.TimeUnit)
}

// entry is one metric (or sub-metric) to list in a section.
type entry struct {
	name     string // key as in the snapshot: parent or parent{sel}
	display  string // what is printed before the dots
	typ      metrics.Type
	contains metrics.ValueType
	sink     metrics.Sink
}

// view is what one section lists.
type view struct {
	entries []entry
	checks  []*Check // aggregated by name, first-seen order
}

var compactHidden = map[string]bool{
	"http_req_blocked": true, "http_req_connecting": true, "http_req_receiving": true,
	"http_req_sending": true, "http_req_tls_handshaking": true, "http_req_waiting": true,
}

func (r *renderer) listed(name string) bool {
	if strings.HasPrefix(name, "checks") || strings.HasPrefix(name, "group_duration") {
		return false
	}
	return r.full || !compactHidden[name]
}

func (r *renderer) viewAll() view {
	var v view
	for _, m := range r.in.Snapshot.Metrics {
		if !r.listed(m.Name) {
			continue
		}
		v.entries = append(v.entries, entry{m.Name, m.Name, m.Type, m.Contains, m.Sink})
		for _, sm := range m.Submetrics {
			v.entries = append(v.entries, entry{sm.Selector.Name, "  " + sm.Selector.Display(), m.Type, m.Contains, sm.Sink})
		}
	}
	v.checks = aggregateChecks(r.in.Snapshot, []string{"group", "check"}, func(string) bool { return true })
	return v
}

// viewRows lists, for a full-mode section, each metric's row of a grouping
// by one tag (`group` or `scenario`) with that value.
func (r *renderer) viewRows(tag, value string, checkBy []string) view {
	var v view
	for _, m := range r.in.Snapshot.Metrics {
		if !r.listed(m.Name) {
			continue
		}
		g := m.Group(tag)
		if g == nil {
			continue
		}
		for _, row := range g.Rows {
			if row.Values[0] == value && !row.Sink.IsEmpty() {
				v.entries = append(v.entries, entry{m.Name, m.Name, m.Type, m.Contains, row.Sink})
			}
		}
	}
	v.checks = aggregateChecks(r.in.Snapshot, checkBy, func(x string) bool { return x == value })
	return v
}

func aggregateChecks(s *metrics.Snapshot, by []string, keep func(string) bool) []*Check {
	m := s.Metric(metrics.ChecksName)
	if m == nil {
		return nil
	}
	g := m.Group(by...)
	if g == nil {
		return nil
	}
	var out []*Check
	idx := map[string]*Check{}
	for _, row := range g.Rows {
		if !keep(row.Values[0]) {
			continue
		}
		rs := row.Sink.(*metrics.RateSink)
		c := idx[row.Values[1]]
		if c == nil {
			c = &Check{Name: row.Values[1]}
			idx[c.Name] = c
			out = append(out, c)
		}
		c.Passes += rs.Passes()
		c.Fails += rs.Fails()
	}
	return out
}

// topGroups are the top-level groups, setup and teardown excluded, first seen.
func (r *renderer) topGroups() []string {
	var out []string
	seen := map[string]bool{}
	add := func(path string) {
		if path == "" {
			return
		}
		top := "::" + strings.Split(strings.TrimPrefix(path, "::"), "::")[0]
		if top == "::setup" || top == "::teardown" || seen[top] {
			return
		}
		seen[top] = true
		out = append(out, top)
	}
	for _, name := range []string{metrics.ChecksName, metrics.GroupDurationName} {
		if m := r.in.Snapshot.Metric(name); m != nil {
			for _, g := range m.Groups {
				if len(g.By) > 0 && g.By[0] == "group" {
					for _, row := range g.Rows {
						add(row.Values[0])
					}
				}
			}
		}
	}
	return out
}

// scenarios are the non-default scenarios, sorted.
func (r *renderer) scenarios() []string {
	seen := map[string]bool{}
	for _, m := range r.in.Snapshot.Metrics {
		if g := m.Group("scenario"); g != nil {
			for _, row := range g.Rows {
				if v := row.Values[0]; v != "" && v != "default" {
					seen[v] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

var categories = []string{"CUSTOM", "HTTP", "EXECUTION", "NETWORK", "BROWSER", "WEB_VITALS", "GRPC", "WEBSOCKET"}

// category puts a metric in a section by its name prefix, as k6 does.
func category(name string) string {
	switch {
	case strings.HasPrefix(name, "http_req"):
		return "HTTP"
	case strings.HasPrefix(name, "vus"), strings.HasPrefix(name, "iterations"), strings.HasPrefix(name, "iteration_duration"),
		strings.HasPrefix(name, "dropped_iterations"):
		return "EXECUTION"
	case strings.HasPrefix(name, "data_"):
		return "NETWORK"
	case strings.HasPrefix(name, "browser_web_vital_"):
		return "WEB_VITALS"
	case strings.HasPrefix(name, "browser_"):
		return "BROWSER"
	case strings.HasPrefix(name, "grpc_"):
		return "GRPC"
	case strings.HasPrefix(name, "ws_"):
		return "WEBSOCKET"
	}
	return "CUSTOM"
}

// line is a metric line before alignment.
type line struct {
	display string
	cells   []string
	trend   bool
	cat     string
}

func (r *renderer) cells(e entry) ([]string, bool) {
	tu := r.in.Options.TimeUnit
	d := r.in.Snapshot.Duration
	switch s := e.sink.(type) {
	case *metrics.CounterSink:
		rate, _ := s.Rate(d)
		return []string{formatValue(s.Sum(), e.contains, tu), formatValue(rate, e.contains, tu) + "/s"}, false
	case *metrics.GaugeSink:
		return []string{formatValue(s.Last(), e.contains, tu), "min=" + formatValue(s.Min(), e.contains, tu), "max=" + formatValue(s.Max(), e.contains, tu)}, false
	case *metrics.RateSink:
		ratio, _ := s.Ratio()
		return []string{formatPercent(ratio), fmt.Sprintf("%d out of %d", s.Passes(), s.Total())}, false
	case *metrics.TrendSink:
		out := make([]string, len(r.stats))
		for i, st := range r.stats {
			v, _ := s.Value(st, d)
			out[i] = st.Name + "=" + formatStat(st, v, metrics.Trend, e.contains, tu)
		}
		return out, true
	}
	return nil, false
}

func width(s string) int { return utf8.RuneCountInString(s) }

// writeLines aligns a block: names padded with dots to the longest name + 3;
// non-trend cells padded per column except each line's last, trend cells
// padded per column (k6 leaves the trailing spaces).
func (r *renderer) writeLines(lines []line, withCategories bool) {
	nameW := 0
	colW := map[bool][]int{}
	for _, l := range lines {
		nameW = max(nameW, width(l.display))
		for i, c := range l.cells {
			for len(colW[l.trend]) <= i {
				colW[l.trend] = append(colW[l.trend], 0)
			}
			colW[l.trend][i] = max(colW[l.trend][i], width(c))
		}
	}
	cat := ""
	for i, l := range lines {
		if withCategories && l.cat != cat {
			if i > 0 {
				r.b.WriteString("\n")
			}
			cat = l.cat
			r.b.WriteString("    " + r.paint(ansiBold, cat) + "\n")
		}
		dots := max(3, nameW-width(l.display)+3)
		r.b.WriteString("    " + l.display + r.paint(ansiFaint, strings.Repeat(".", dots)) + ": ")
		for j, c := range l.cells {
			if j > 0 {
				r.b.WriteString(" ")
			}
			pad := ""
			if l.trend || j < len(l.cells)-1 {
				pad = strings.Repeat(" ", colW[l.trend][j]-width(c))
			}
			r.b.WriteString(r.paint(ansiCyan, c) + pad)
		}
		r.b.WriteString("\n")
	}
	if len(lines) > 0 {
		r.b.WriteString("\n")
	}
}

func (r *renderer) section(title string, v view) {
	r.title(title)
	r.checks(v.checks, r.in.Snapshot.Duration)
	var lines []line
	for _, e := range v.entries {
		cells, trend := r.cells(e)
		parent, _, _ := strings.Cut(e.name, "{")
		lines = append(lines, line{display: e.display, cells: cells, trend: trend, cat: category(parent)})
	}
	r.writeLines(byCategory(lines), true)
}

// checks writes the checks block of a section (k6's checks_total,
// checks_succeeded, checks_failed and one line per check), over a run of dur.
// The live summary and the one rendered from SummaryData share it.
func (r *renderer) checks(checks []*Check, dur time.Duration) {
	if len(checks) == 0 {
		return
	}
	var passes, fails int64
	for _, c := range checks {
		passes += c.Passes
		fails += c.Fails
	}
	total := passes + fails
	rate := 0.0
	if s := dur.Seconds(); s > 0 {
		rate = float64(total) / s
	}
	pct := func(n int64) string {
		if total == 0 {
			return formatPercent(0)
		}
		return formatPercent(float64(n) / float64(total))
	}
	r.writeLines([]line{
		{display: "checks_total", cells: []string{formatPlain(float64(total)), formatPlain(rate) + "/s"}},
		{display: "checks_succeeded", cells: []string{pct(passes), fmt.Sprintf("%d out of %d", passes, total)}},
		{display: "checks_failed", cells: []string{pct(fails), fmt.Sprintf("%d out of %d", fails, total)}},
	}, false)
	for _, c := range checks {
		if c.Fails == 0 {
			r.b.WriteString("    " + r.paint(ansiGreen, "✓ "+c.Name) + "\n")
			continue
		}
		r.b.WriteString("    " + r.paint(ansiRed, "✗ "+c.Name) + "\n")
		nn := int64(math.Floor(100 * float64(c.Passes) / float64(c.Passes+c.Fails)))
		r.b.WriteString(r.paint(ansiRed, fmt.Sprintf("      ↳  %d%% — ✓ %d / ✗ %d", nn, c.Passes, c.Fails)) + "\n")
	}
	r.b.WriteString("\n")
}

// thresholdKey writes a THRESHOLDS entry's heading, a metric or, further
// in under its parent, a sub-metric's {selector}, and returns the indent
// of its lines. A sub-metric whose parent has no threshold of its own is
// its whole name at the metrics' indent (k6 v2.2.0, observed:
// `http_req_duration{status:200}`).
func (r *renderer) thresholdKey(key string, listed map[string]bool) (indent string) {
	indent = "    "
	if sel, err := metrics.ParseSelector(key); err == nil && sel.IsSubmetric() && listed[sel.Metric] {
		indent = "      "
		r.b.WriteString(indent + "{" + sel.Suffix + "}\n")
	} else {
		r.b.WriteString(indent + key + "\n")
	}
	return indent
}

// byCategory orders lines by k6's metric categories (stable within one).
func byCategory(lines []line) []line {
	rank := map[string]int{}
	for i, c := range categories {
		rank[c] = i
	}
	sort.SliceStable(lines, func(i, j int) bool { return rank[lines[i].cat] < rank[lines[j].cat] })
	return lines
}
