// Package summary renders the end-of-test summary from a metrics snapshot:
// the v1 compact/full text (spec §6.2), the `data` object handed to
// handleSummary (§6.4) and the --summary-export file (§6.5).
//
// Use:
//
//	summary.Register(collector, opts)  // before samples flow: checks and groups trees, full-mode sinks
//	in := summary.Input{Snapshot: collector.Snapshot(runTime), Thresholds: ev.Statuses(), Options: opts}
//	text, err := summary.Text(in)      // what k6 prints to stdout
//	data, err := summary.Data(in)      // json.Marshal(data) → handleSummary's argument
//	file, err := summary.Export(in)    // --summary-export content
//
// Everything is a pure function of its input: no clock, terminal or
// environment is read, so the output is the same for the same input.
package summary

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/thresholds"
)

// Options are the summary switches.
type Options struct {
	// Mode is "compact" (default) or "full".
	Mode string
	// TrendStats is summaryTrendStats (k6's default when nil).
	TrendStats []string
	// TimeUnit is "", "s", "ms" or "us".
	TimeUnit string
	// Color turns on ANSI colours (k6 does when stdout is a TTY and
	// noColor is off).
	Color bool
	// NoColor, IsStdOutTTY and IsStdErrTTY are reported in data.
	NoColor                  bool
	IsStdOutTTY, IsStdErrTTY bool
}

func (o Options) trendStats() ([]metrics.Stat, []string, error) {
	names := o.TrendStats
	if names == nil {
		names = metrics.DefaultTrendStats()
	}
	st, err := metrics.ParseTrendStats(names)
	return st, names, err
}

// Validate checks the mode, trend stats and time unit.
func (o Options) Validate() error {
	switch o.Mode {
	case "", "compact", "full":
	default:
		return fmt.Errorf("summary mode %q: want compact or full", o.Mode)
	}
	switch o.TimeUnit {
	case "", "s", "ms", "us":
	default:
		return fmt.Errorf("summary time unit %q: want s, ms or us", o.TimeUnit)
	}
	_, _, err := o.trendStats()
	return err
}

// Input is everything a summary is made of.
type Input struct {
	Snapshot *metrics.Snapshot
	// Thresholds are the last results (Evaluator.Statuses); nil when none.
	Thresholds []thresholds.Status
	Options    Options
	// SetupData is setup()'s JSON result; nil when setup returned nothing.
	SetupData json.RawMessage
}

// Register adds the sinks the summary reads: checks by group and check name,
// group_duration by group, and in full mode every metric by scenario and by
// group.
func Register(c *metrics.Collector, o Options) error {
	reg := c.Registry()
	if reg.Get(metrics.ChecksName) != nil {
		if err := c.AddGroup(metrics.ChecksName, "group", "check"); err != nil {
			return err
		}
		if o.Mode == "full" {
			if err := c.AddGroup(metrics.ChecksName, "scenario", "check"); err != nil {
				return err
			}
		}
	}
	if reg.Get(metrics.GroupDurationName) != nil {
		if err := c.AddGroup(metrics.GroupDurationName, "group"); err != nil {
			return err
		}
	}
	if o.Mode == "full" {
		if err := c.AddGroup("", "scenario"); err != nil {
			return err
		}
		if err := c.AddGroup("", "group"); err != nil {
			return err
		}
	}
	return nil
}

// Group is a node of the group tree (handleSummary's root_group).
type Group struct {
	Name   string   `json:"name"`
	Path   string   `json:"path"`
	ID     string   `json:"id"`
	Groups []*Group `json:"groups"`
	Checks []*Check `json:"checks"`
}

// Check is one check's counts within its group.
type Check struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	ID     string `json:"id"`
	Passes int64  `json:"passes"`
	Fails  int64  `json:"fails"`
}

func md5hex(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

func newGroup(name, path string) *Group {
	return &Group{Name: name, Path: path, ID: md5hex(path), Groups: []*Group{}, Checks: []*Check{}}
}

// groupAt returns the node for a path like "::a::b", creating it.
func (g *Group) groupAt(path string) *Group {
	if path == "" {
		return g
	}
	node := g
	cur := ""
	for _, name := range strings.Split(strings.TrimPrefix(path, "::"), "::") {
		cur += "::" + name
		var next *Group
		for _, c := range node.Groups {
			if c.Name == name {
				next = c
				break
			}
		}
		if next == nil {
			next = newGroup(name, cur)
			node.Groups = append(node.Groups, next)
		}
		node = next
	}
	return node
}

// RootGroup rebuilds the group and check tree from the grouped sinks of
// `checks` (by group, check) and `group_duration` (by group), first-seen order.
func RootGroup(s *metrics.Snapshot) *Group {
	root := newGroup("", "")
	if m := s.Metric(metrics.ChecksName); m != nil {
		if g := m.Group("group", "check"); g != nil {
			for _, r := range g.Rows {
				node := root.groupAt(r.Values[0])
				rs := r.Sink.(*metrics.RateSink)
				path := node.Path + "::" + r.Values[1]
				node.Checks = append(node.Checks, &Check{Name: r.Values[1], Path: path, ID: md5hex(path), Passes: rs.Passes(), Fails: rs.Fails()})
			}
		}
	}
	if m := s.Metric(metrics.GroupDurationName); m != nil {
		if g := m.Group("group"); g != nil {
			for _, r := range g.Rows {
				root.groupAt(r.Values[0])
			}
		}
	}
	return root
}

// MetricData is one entry of data.metrics.
type MetricData struct {
	Type       metrics.Type              `json:"type"`
	Contains   metrics.ValueType         `json:"contains"`
	Values     map[string]float64        `json:"values"`
	Thresholds map[string]ThresholdState `json:"thresholds,omitempty"`
}

// ThresholdState is a threshold's last result.
type ThresholdState struct {
	OK bool `json:"ok"`
}

// SummaryData is the object handed to handleSummary (k6's default shape).
type SummaryData struct {
	RootGroup *Group                 `json:"root_group"`
	Options   DataOptions            `json:"options"`
	State     DataState              `json:"state"`
	Metrics   map[string]*MetricData `json:"metrics"`
	SetupData json.RawMessage        `json:"setup_data,omitempty"`
}

// DataOptions is data.options.
type DataOptions struct {
	SummaryTrendStats []string `json:"summaryTrendStats"`
	SummaryTimeUnit   string   `json:"summaryTimeUnit"`
	NoColor           bool     `json:"noColor"`
}

// DataState is data.state.
type DataState struct {
	IsStdOutTTY       bool    `json:"isStdOutTTY"`
	IsStdErrTTY       bool    `json:"isStdErrTTY"`
	TestRunDurationMs float64 `json:"testRunDurationMs"`
}

// sinkValues is a metric's `values`: counter {count, rate}, gauge {value,
// min, max}, rate {rate, passes, fails}, trend the configured stats.
func sinkValues(sk metrics.Sink, in *Input, stats []metrics.Stat) map[string]float64 {
	d := in.Snapshot.Duration
	switch s := sk.(type) {
	case *metrics.CounterSink:
		r, _ := s.Rate(d)
		return map[string]float64{"count": s.Sum(), "rate": r}
	case *metrics.GaugeSink:
		return map[string]float64{"value": s.Last(), "min": s.Min(), "max": s.Max()}
	case *metrics.RateSink:
		r, _ := s.Ratio()
		return map[string]float64{"rate": r, "passes": float64(s.Passes()), "fails": float64(s.Fails())}
	case *metrics.TrendSink:
		out := make(map[string]float64, len(stats))
		for _, st := range stats {
			v, _ := s.Value(st, d)
			out[st.Name] = v
		}
		return out
	}
	return map[string]float64{}
}

// Data builds handleSummary's data object.
func Data(in Input) (*SummaryData, error) {
	if err := in.Options.Validate(); err != nil {
		return nil, err
	}
	if in.Snapshot == nil {
		return nil, fmt.Errorf("summary: no snapshot")
	}
	stats, names, _ := in.Options.trendStats()
	out := &SummaryData{
		RootGroup: RootGroup(in.Snapshot),
		Options:   DataOptions{SummaryTrendStats: names, SummaryTimeUnit: in.Options.TimeUnit, NoColor: in.Options.NoColor},
		State: DataState{IsStdOutTTY: in.Options.IsStdOutTTY, IsStdErrTTY: in.Options.IsStdErrTTY,
			TestRunDurationMs: float64(in.Snapshot.Duration) / 1e6},
		Metrics:   map[string]*MetricData{},
		SetupData: in.SetupData,
	}
	for _, m := range in.Snapshot.Metrics {
		out.Metrics[m.Name] = &MetricData{Type: m.Type, Contains: m.Contains, Values: sinkValues(m.Sink, &in, stats)}
		for _, sm := range m.Submetrics {
			out.Metrics[sm.Selector.Name] = &MetricData{Type: m.Type, Contains: m.Contains, Values: sinkValues(sm.Sink, &in, stats)}
		}
	}
	for _, st := range in.Thresholds {
		md := out.Metrics[st.Key]
		if md == nil {
			continue
		}
		if md.Thresholds == nil {
			md.Thresholds = map[string]ThresholdState{}
		}
		ok := !st.Evaluated || st.OK
		if prev, seen := md.Thresholds[st.Source]; seen {
			ok = ok && prev.OK
		}
		md.Thresholds[st.Source] = ThresholdState{OK: ok}
	}
	return out, nil
}

type exportGroup struct {
	Name   string                  `json:"name"`
	Path   string                  `json:"path"`
	ID     string                  `json:"id"`
	Groups map[string]*exportGroup `json:"groups"`
	Checks map[string]*Check       `json:"checks"`
}

func toExportGroup(g *Group) *exportGroup {
	e := &exportGroup{Name: g.Name, Path: g.Path, ID: g.ID, Groups: map[string]*exportGroup{}, Checks: map[string]*Check{}}
	for _, c := range g.Groups {
		e.Groups[c.Name] = toExportGroup(c)
	}
	for _, c := range g.Checks {
		e.Checks[c.Name] = c
	}
	return e
}

type exportFile struct {
	RootGroup *exportGroup              `json:"root_group"`
	Metrics   map[string]map[string]any `json:"metrics"`
	SetupData json.RawMessage           `json:"setup_data,omitempty"`
}

// Export renders the --summary-export file (k6's old JSON format): options
// and state dropped, each metric flattened to its values (a Rate's `rate`
// renamed `value`) plus `thresholds: {source: failed}`, groups and checks
// keyed by name, indented with 4 spaces.
func Export(in Input) ([]byte, error) {
	d, err := Data(in)
	if err != nil {
		return nil, err
	}
	f := exportFile{RootGroup: toExportGroup(d.RootGroup), Metrics: map[string]map[string]any{}, SetupData: d.SetupData}
	for name, m := range d.Metrics {
		flat := map[string]any{}
		for k, v := range m.Values {
			if m.Type == metrics.Rate && k == "rate" {
				k = "value"
			}
			flat[k] = v
		}
		if len(m.Thresholds) > 0 {
			th := map[string]bool{}
			for src, st := range m.Thresholds {
				th[src] = !st.OK // true means the threshold failed
			}
			flat["thresholds"] = th
		}
		f.Metrics[name] = flat
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // JSON.stringify leaves `<` in `p(95)<200` alone
	enc.SetIndent("", "    ")
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
