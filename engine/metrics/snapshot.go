package metrics

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// SnapshotVersion is the version of the snapshot JSON format.
const SnapshotVersion = 1

// Snapshot is a deep copy of a Collector's sinks at one moment. It marshals
// to a stable JSON form (metrics and sub-metrics sorted by name, group rows in
// first-seen order, histogram buckets ascending), and snapshots from several
// instances merge exactly.
type Snapshot struct {
	// Duration is the test-run time the snapshot was taken at (Counter rates
	// divide by it).
	Duration time.Duration
	// Metrics are sorted by name. A metric is present when it has samples or
	// was tracked (Collector.Track).
	Metrics []*MetricSnapshot
}

// MetricSnapshot is one metric's sinks.
type MetricSnapshot struct {
	Name     string
	Type     Type
	Contains ValueType
	// Tracked means a threshold or the summary asked for it.
	Tracked    bool
	Sink       Sink
	Submetrics []*SubmetricSnapshot // sorted by name
	Groups     []*GroupSnapshot
}

// SubmetricSnapshot is one sub-metric's sink.
type SubmetricSnapshot struct {
	Selector Selector
	Sink     Sink
}

// GroupSnapshot is a grouped aggregation: one row per distinct combination of
// the values of the tags By.
type GroupSnapshot struct {
	By   []string
	Rows []*GroupRow // first-seen order
}

// GroupRow is one combination of tag values and its sink.
type GroupRow struct {
	Values []string
	Sink   Sink
}

// Snapshot flushes every buffer and copies the sinks. With keys (metric or
// sub-metric keys) only those metrics are copied and groups are left out,
// which keeps the periodic threshold check cheap; without keys everything is.
func (c *Collector) Snapshot(runDuration time.Duration, keys ...string) *Snapshot {
	c.Flush()
	var want map[string]bool
	if len(keys) > 0 {
		want = make(map[string]bool, len(keys))
		for _, k := range keys {
			name, _, _ := strings.Cut(k, "{")
			want[name] = true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	snap := &Snapshot{Duration: runDuration}
	for _, st := range c.states {
		if st == nil || (st.sink.IsEmpty() && !st.tracked) {
			continue
		}
		if want != nil && !want[st.m.Name] {
			continue
		}
		ms := &MetricSnapshot{Name: st.m.Name, Type: st.m.Type, Contains: st.m.Contains, Tracked: st.tracked,
			Sink: st.sink.Clone()}
		for _, s := range st.subs {
			if s.sink.IsEmpty() && !s.tracked {
				continue
			}
			ms.Submetrics = append(ms.Submetrics, &SubmetricSnapshot{Selector: s.sel, Sink: s.sink.Clone()})
		}
		sort.Slice(ms.Submetrics, func(i, j int) bool { return ms.Submetrics[i].Selector.Name < ms.Submetrics[j].Selector.Name })
		if want == nil {
			for _, g := range st.groups {
				gs := &GroupSnapshot{By: append([]string(nil), g.by...)}
				for _, r := range g.order {
					gs.Rows = append(gs.Rows, &GroupRow{Values: append([]string(nil), r.values...), Sink: r.sink.Clone()})
				}
				ms.Groups = append(ms.Groups, gs)
			}
		}
		snap.Metrics = append(snap.Metrics, ms)
	}
	sort.Slice(snap.Metrics, func(i, j int) bool { return snap.Metrics[i].Name < snap.Metrics[j].Name })
	return snap
}

// Metric returns the named metric's snapshot, or nil.
func (s *Snapshot) Metric(name string) *MetricSnapshot {
	if s == nil {
		return nil
	}
	i := sort.Search(len(s.Metrics), func(i int) bool { return s.Metrics[i].Name >= name })
	if i < len(s.Metrics) && s.Metrics[i].Name == name {
		return s.Metrics[i]
	}
	return nil
}

// Lookup returns the sink for a key (`name` or `name{k:v}` as written when it
// was tracked) and its metric, or nil.
func (s *Snapshot) Lookup(key string) (Sink, *MetricSnapshot) {
	name, _, isSub := strings.Cut(key, "{")
	m := s.Metric(name)
	if m == nil {
		return nil, nil
	}
	if !isSub {
		return m.Sink, m
	}
	for _, sm := range m.Submetrics {
		if sm.Selector.Name == key {
			return sm.Sink, m
		}
	}
	return nil, m
}

// Group returns the metric's grouped aggregation by exactly these tags, or nil.
func (m *MetricSnapshot) Group(by ...string) *GroupSnapshot {
	for _, g := range m.Groups {
		if equalStrings(g.By, by) {
			return g
		}
	}
	return nil
}

// Clone returns a deep copy.
func (s *Snapshot) Clone() *Snapshot {
	out := &Snapshot{Duration: s.Duration}
	for _, m := range s.Metrics {
		out.Metrics = append(out.Metrics, m.clone())
	}
	return out
}

func (m *MetricSnapshot) clone() *MetricSnapshot {
	cp := *m
	cp.Sink = m.Sink.Clone()
	cp.Submetrics = nil
	for _, sm := range m.Submetrics {
		cp.Submetrics = append(cp.Submetrics, &SubmetricSnapshot{Selector: sm.Selector, Sink: sm.Sink.Clone()})
	}
	cp.Groups = nil
	for _, g := range m.Groups {
		gs := &GroupSnapshot{By: append([]string(nil), g.By...)}
		for _, r := range g.Rows {
			gs.Rows = append(gs.Rows, &GroupRow{Values: append([]string(nil), r.Values...), Sink: r.Sink.Clone()})
		}
		cp.Groups = append(cp.Groups, gs)
	}
	return &cp
}

// Merge adds o into s exactly: sinks of the same metric, sub-metric and group
// row are merged, missing ones are copied, and the duration becomes the
// longer of the two (instances of a distributed run run side by side). A
// metric with another type or value type is an error naming it.
func (s *Snapshot) Merge(o *Snapshot) error {
	if o.Duration > s.Duration {
		s.Duration = o.Duration
	}
	for _, om := range o.Metrics {
		m := s.Metric(om.Name)
		if m == nil {
			s.Metrics = append(s.Metrics, om.clone())
			sort.Slice(s.Metrics, func(i, j int) bool { return s.Metrics[i].Name < s.Metrics[j].Name })
			continue
		}
		if m.Type != om.Type || m.Contains != om.Contains {
			return fmt.Errorf("merge: metric %q is a %s/%s in one snapshot and a %s/%s in the other",
				om.Name, m.Type, m.Contains, om.Type, om.Contains)
		}
		m.Tracked = m.Tracked || om.Tracked
		if err := m.Sink.Merge(om.Sink); err != nil {
			return fmt.Errorf("merge: metric %q: %w", om.Name, err)
		}
	subs:
		for _, osm := range om.Submetrics {
			for _, sm := range m.Submetrics {
				if sm.Selector.Name == osm.Selector.Name {
					if err := sm.Sink.Merge(osm.Sink); err != nil {
						return fmt.Errorf("merge: sub-metric %q: %w", osm.Selector.Name, err)
					}
					continue subs
				}
			}
			m.Submetrics = append(m.Submetrics, &SubmetricSnapshot{Selector: osm.Selector, Sink: osm.Sink.Clone()})
			sort.Slice(m.Submetrics, func(i, j int) bool { return m.Submetrics[i].Selector.Name < m.Submetrics[j].Selector.Name })
		}
		for _, og := range om.Groups {
			g := m.Group(og.By...)
			if g == nil {
				g = &GroupSnapshot{By: append([]string(nil), og.By...)}
				m.Groups = append(m.Groups, g)
			}
			idx := make(map[string]*GroupRow, len(g.Rows))
			for _, r := range g.Rows {
				idx[strings.Join(r.Values, "\x00")] = r
			}
			for _, or := range og.Rows {
				if r := idx[strings.Join(or.Values, "\x00")]; r != nil {
					if err := r.Sink.Merge(or.Sink); err != nil {
						return fmt.Errorf("merge: metric %q group %v row %v: %w", om.Name, og.By, or.Values, err)
					}
					continue
				}
				g.Rows = append(g.Rows, &GroupRow{Values: append([]string(nil), or.Values...), Sink: or.Sink.Clone()})
			}
		}
	}
	return nil
}

type snapshotJSON struct {
	Version    int               `json:"version"`
	DurationNs int64             `json:"duration_ns"`
	Metrics    []json.RawMessage `json:"metrics"`
}

type metricJSON struct {
	Name       string          `json:"name"`
	Type       Type            `json:"type"`
	Contains   ValueType       `json:"contains"`
	Tracked    bool            `json:"tracked,omitempty"`
	Sink       json.RawMessage `json:"sink"`
	Submetrics []submetricJSON `json:"submetrics,omitempty"`
	Groups     []groupJSON     `json:"groups,omitempty"`
}

type submetricJSON struct {
	Name string          `json:"name"`
	Sink json.RawMessage `json:"sink"`
}

type groupJSON struct {
	By   []string  `json:"by"`
	Rows []rowJSON `json:"rows"`
}

type rowJSON struct {
	Values []string        `json:"values"`
	Sink   json.RawMessage `json:"sink"`
}

// MarshalJSON writes the stable snapshot form.
func (s *Snapshot) MarshalJSON() ([]byte, error) {
	out := snapshotJSON{Version: SnapshotVersion, DurationNs: int64(s.Duration), Metrics: []json.RawMessage{}}
	for _, m := range s.Metrics {
		mj := metricJSON{Name: m.Name, Type: m.Type, Contains: m.Contains, Tracked: m.Tracked}
		var err error
		if mj.Sink, err = MarshalSink(m.Sink); err != nil {
			return nil, err
		}
		for _, sm := range m.Submetrics {
			b, err := MarshalSink(sm.Sink)
			if err != nil {
				return nil, err
			}
			mj.Submetrics = append(mj.Submetrics, submetricJSON{Name: sm.Selector.Name, Sink: b})
		}
		for _, g := range m.Groups {
			gj := groupJSON{By: g.By, Rows: []rowJSON{}}
			for _, r := range g.Rows {
				b, err := MarshalSink(r.Sink)
				if err != nil {
					return nil, err
				}
				gj.Rows = append(gj.Rows, rowJSON{Values: r.Values, Sink: b})
			}
			mj.Groups = append(mj.Groups, gj)
		}
		b, err := json.Marshal(mj)
		if err != nil {
			return nil, err
		}
		out.Metrics = append(out.Metrics, b)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads and validates a snapshot; errors name the metric.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	var in snapshotJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if in.Version != SnapshotVersion {
		return fmt.Errorf("snapshot: version %d is not supported (want %d)", in.Version, SnapshotVersion)
	}
	*s = Snapshot{Duration: time.Duration(in.DurationNs)}
	for i, raw := range in.Metrics {
		var mj metricJSON
		if err := json.Unmarshal(raw, &mj); err != nil {
			return fmt.Errorf("snapshot: metrics[%d]: %w", i, err)
		}
		if err := ValidateName(mj.Name); err != nil {
			return fmt.Errorf("snapshot: metrics[%d]: %w", i, err)
		}
		sink, err := unmarshalTyped(mj.Sink, mj.Type)
		if err != nil {
			return fmt.Errorf("snapshot: metric %q: %w", mj.Name, err)
		}
		m := &MetricSnapshot{Name: mj.Name, Type: mj.Type, Contains: mj.Contains, Tracked: mj.Tracked, Sink: sink}
		for _, sj := range mj.Submetrics {
			sel, err := ParseSelector(sj.Name)
			if err != nil || sel.Metric != mj.Name {
				return fmt.Errorf("snapshot: metric %q: bad sub-metric name %q", mj.Name, sj.Name)
			}
			sk, err := unmarshalTyped(sj.Sink, mj.Type)
			if err != nil {
				return fmt.Errorf("snapshot: sub-metric %q: %w", sj.Name, err)
			}
			m.Submetrics = append(m.Submetrics, &SubmetricSnapshot{Selector: sel, Sink: sk})
		}
		sort.Slice(m.Submetrics, func(i, j int) bool { return m.Submetrics[i].Selector.Name < m.Submetrics[j].Selector.Name })
		for _, gj := range mj.Groups {
			g := &GroupSnapshot{By: gj.By}
			for k, rj := range gj.Rows {
				if len(rj.Values) != len(gj.By) {
					return fmt.Errorf("snapshot: metric %q group %v row %d: %d values for %d tags", mj.Name, gj.By, k, len(rj.Values), len(gj.By))
				}
				sk, err := unmarshalTyped(rj.Sink, mj.Type)
				if err != nil {
					return fmt.Errorf("snapshot: metric %q group %v row %d: %w", mj.Name, gj.By, k, err)
				}
				g.Rows = append(g.Rows, &GroupRow{Values: rj.Values, Sink: sk})
			}
			m.Groups = append(m.Groups, g)
		}
		if prev := s.Metric(mj.Name); prev != nil {
			return fmt.Errorf("snapshot: metric %q appears twice", mj.Name)
		}
		s.Metrics = append(s.Metrics, m)
		sort.Slice(s.Metrics, func(i, j int) bool { return s.Metrics[i].Name < s.Metrics[j].Name })
	}
	return nil
}

func unmarshalTyped(b json.RawMessage, t Type) (Sink, error) {
	sk, err := UnmarshalSink(b)
	if err != nil {
		return nil, err
	}
	if sk.Type() != t {
		return nil, fmt.Errorf("sink is a %s but the metric is a %s", sk.Type(), t)
	}
	return sk, nil
}
