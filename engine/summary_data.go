package engine

import (
	"crypto/md5" //nolint:gosec // k6 ids groups and checks by MD5 of the path
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/thresholds"
)

// trackSummaryGroups asks the collector for the per-check and per-group
// sinks the handleSummary data's group tree is rebuilt from.
func (r *runner) trackSummaryGroups() error {
	if err := r.coll.AddGroup(metrics.ChecksName, "group", "check"); err != nil {
		return err
	}
	return r.coll.AddGroup(metrics.GroupDurationName, "group")
}

type summaryCheck struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	ID     string `json:"id"`
	Passes int64  `json:"passes"`
	Fails  int64  `json:"fails"`
}

type summaryGroup struct {
	Name   string          `json:"name"`
	Path   string          `json:"path"`
	ID     string          `json:"id"`
	Groups []*summaryGroup `json:"groups"`
	Checks []*summaryCheck `json:"checks"`
}

type summaryThreshold struct {
	OK bool `json:"ok"`
}

type summaryMetric struct {
	Type       string                      `json:"type"`
	Contains   string                      `json:"contains"`
	Values     map[string]float64          `json:"values"`
	Thresholds map[string]summaryThreshold `json:"thresholds,omitempty"`
}

// SummaryData is the object handleSummary receives (k6-compat.md §6.4,
// the default shape); setup_data is added by the host.
type SummaryData struct {
	RootGroup *summaryGroup             `json:"root_group"`
	Options   summaryOptions            `json:"options"`
	State     summaryState              `json:"state"`
	Metrics   map[string]*summaryMetric `json:"metrics"`
}

type summaryOptions struct {
	SummaryTrendStats []string `json:"summaryTrendStats"`
	SummaryTimeUnit   string   `json:"summaryTimeUnit"`
	NoColor           bool     `json:"noColor"`
}

type summaryState struct {
	IsStdOutTTY       bool    `json:"isStdOutTTY"`
	IsStdErrTTY       bool    `json:"isStdErrTTY"`
	TestRunDurationMs float64 `json:"testRunDurationMs"`
}

func md5hex(s string) string {
	h := md5.Sum([]byte(s)) //nolint:gosec // an id, not security
	return hex.EncodeToString(h[:])
}

// buildSummaryData turns the final snapshot and threshold results into the
// handleSummary data.
func buildSummaryData(snap *metrics.Snapshot, statuses []thresholds.Status, trendStats []string, timeUnit string, stdoutTTY, stderrTTY bool, runDur time.Duration) *SummaryData {
	d := &SummaryData{
		RootGroup: newGroup("", ""),
		Options:   summaryOptions{SummaryTrendStats: trendStats, SummaryTimeUnit: timeUnit},
		State:     summaryState{IsStdOutTTY: stdoutTTY, IsStdErrTTY: stderrTTY, TestRunDurationMs: float64(runDur) / float64(time.Millisecond)},
		Metrics:   map[string]*summaryMetric{},
	}
	byKey := map[string][]thresholds.Status{}
	for _, st := range statuses {
		byKey[st.Key] = append(byKey[st.Key], st)
	}
	stats := make([]metrics.Stat, 0, len(trendStats))
	for _, s := range trendStats {
		if st, err := metrics.ParseStat(s); err == nil {
			stats = append(stats, st)
		}
	}
	add := func(key string, m *metrics.MetricSnapshot, sink metrics.Sink) {
		sm := &summaryMetric{Type: m.Type.String(), Contains: m.Contains.String(), Values: sinkValues(sink, stats, snap.Duration)}
		if sts := byKey[key]; len(sts) > 0 {
			sm.Thresholds = map[string]summaryThreshold{}
			for _, st := range sts {
				sm.Thresholds[st.Source] = summaryThreshold{OK: st.OK}
			}
		}
		d.Metrics[key] = sm
	}
	for _, m := range snap.Metrics {
		if m.Sink.IsEmpty() && !m.Tracked {
			continue
		}
		add(m.Name, m, m.Sink)
		for _, sub := range m.Submetrics {
			add(sub.Selector.Name, m, sub.Sink)
		}
	}
	// The group tree: groups first seen in group_duration or checks.
	root := d.RootGroup
	if gd := snap.Metric(metrics.GroupDurationName); gd != nil {
		if g := gd.Group("group"); g != nil {
			for _, row := range g.Rows {
				groupAt(root, row.Values[0])
			}
		}
	}
	if ch := snap.Metric(metrics.ChecksName); ch != nil {
		if g := ch.Group("group", "check"); g != nil {
			for _, row := range g.Rows {
				rs, ok := row.Sink.(*metrics.RateSink)
				if !ok {
					continue
				}
				grp := groupAt(root, row.Values[0])
				path := row.Values[0] + "::" + row.Values[1]
				grp.Checks = append(grp.Checks, &summaryCheck{Name: row.Values[1], Path: path, ID: md5hex(path), Passes: rs.Passes(), Fails: rs.Fails()})
			}
		}
	}
	return d
}

func newGroup(name, path string) *summaryGroup {
	return &summaryGroup{Name: name, Path: path, ID: md5hex(path), Groups: []*summaryGroup{}, Checks: []*summaryCheck{}}
}

// groupAt returns the node for a group path ("::a::b"), creating it.
func groupAt(root *summaryGroup, path string) *summaryGroup {
	if path == "" {
		return root
	}
	cur := root
	parts := strings.Split(strings.TrimPrefix(path, "::"), "::")
	p := ""
	for _, name := range parts {
		p += "::" + name
		var next *summaryGroup
		for _, g := range cur.Groups {
			if g.Name == name {
				next = g
				break
			}
		}
		if next == nil {
			next = newGroup(name, p)
			cur.Groups = append(cur.Groups, next)
		}
		cur = next
	}
	return cur
}

// sinkValues are a metric's summary values by type (§6.4).
func sinkValues(s metrics.Sink, trendStats []metrics.Stat, runDur time.Duration) map[string]float64 {
	v := map[string]float64{}
	switch sk := s.(type) {
	case *metrics.CounterSink:
		v["count"] = sk.Sum()
		if r, ok := sk.Rate(runDur); ok {
			v["rate"] = r
		} else {
			v["rate"] = 0
		}
	case *metrics.GaugeSink:
		v["value"], v["min"], v["max"] = sk.Last(), sk.Min(), sk.Max()
	case *metrics.RateSink:
		r, _ := sk.Ratio()
		v["rate"], v["passes"], v["fails"] = r, float64(sk.Passes()), float64(sk.Fails())
	case *metrics.TrendSink:
		for _, st := range trendStats {
			if st.Kind == metrics.StatCount {
				v[st.Name] = float64(sk.Count())
				continue
			}
			x, _ := sk.Value(st, runDur)
			v[st.Name] = x
		}
	}
	return v
}

// MarshalJSON keeps Go's map ordering (sorted) for stable output.
func (d *SummaryData) json() ([]byte, error) { return json.Marshal(d) }
