package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/buzzload/buzzload/engine/metrics"
)

// Runs of plain k6 scripts (no Buzz module) in report and compare (issue
// 29 item 3): their "operations" are the run's Trend metrics, each with
// its sample count and percentiles; http_req_duration's errors are
// http_req_failed's. A result file gives them exactly; a --summary-export
// gives what k6's summary kept (the trend stats it was asked for, counts
// only where a counter says them: http_reqs, iterations).

// plainNote says what a plain run's rows are.
const plainNote = "a run without the Buzz module: its Trend metrics compared (count = samples; http_req_duration's errors are http_req_failed's)"

// plainOpsFromSnapshot is a result file's Trend metrics as rows.
func plainOpsFromSnapshot(s *metrics.Snapshot) (map[string]*opStats, error) {
	ops := map[string]*opStats{}
	if s != nil {
		for _, m := range s.Metrics {
			ts, ok := m.Sink.(*metrics.TrendSink)
			if !ok || ts.Count() == 0 {
				continue
			}
			ops[m.Name] = &opStats{OK: int64(ts.Count()), Count: int64(ts.Count()),
				P50Ms: ts.Percentile(50), P95Ms: ts.Percentile(95), P99Ms: ts.Percentile(99)}
		}
		if st := ops["http_req_duration"]; st != nil {
			if m := s.Metric("http_req_failed"); m != nil {
				if rs, ok := m.Sink.(*metrics.RateSink); ok {
					st.Errors = rs.Passes()
					st.OK = max(0, st.Count-st.Errors)
					st.ErrorRate, _ = rs.Ratio()
				}
			}
		}
	}
	if len(ops) == 0 {
		return nil, errors.New("no Buzz operations and no Trend metric with samples: nothing to compare")
	}
	return ops, nil
}

// isSummaryExport: k6's --summary-export file ({"metrics", "root_group"}).
func isSummaryExport(head map[string]json.RawMessage) bool {
	_, m := head["metrics"]
	_, g := head["root_group"]
	return m && g
}

// loadSummaryExport reads a --summary-export: a Buzz run's per-op
// sub-metrics are not in it, so every run is read as a plain one.
func loadSummaryExport(path string, b []byte) (*runOps, error) {
	var f struct {
		Metrics map[string]map[string]json.RawMessage `json:"metrics"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("summary export %s: %w", path, err)
	}
	num := func(m map[string]json.RawMessage, k string) (float64, bool) {
		var v float64
		raw, ok := m[k]
		return v, ok && json.Unmarshal(raw, &v) == nil
	}
	// Counts k6 keeps beside the trends they count.
	counts := map[string]string{"http_req_duration": "http_reqs", "iteration_duration": "iterations"}
	ops := map[string]*opStats{}
	names := make([]string, 0, len(f.Metrics))
	for n := range f.Metrics {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		m := f.Metrics[name]
		if strings.Contains(name, "{") {
			continue // sub-metrics: their parent is the row
		}
		med, isTrend := num(m, "med")
		if _, hasAvg := num(m, "avg"); !isTrend || !hasAvg {
			continue
		}
		st := &opStats{P50Ms: med}
		var ok bool
		if st.P95Ms, ok = num(m, "p(95)"); !ok {
			st.Absent = append(st.Absent, "p95_ms")
		}
		if st.P99Ms, ok = num(m, "p(99)"); !ok {
			st.Absent = append(st.Absent, "p99_ms")
		}
		st.Absent = append(st.Absent, "count", "ok") // unless a counter gives them
		if c := counts[name]; c != "" {
			if n, ok := num(f.Metrics[c], "count"); ok {
				st.Count, st.OK = int64(n), int64(n)
				st.Absent = st.Absent[:len(st.Absent)-2]
			}
		}
		ops[name] = st
	}
	if st := ops["http_req_duration"]; st != nil {
		if failed := f.Metrics["http_req_failed"]; failed != nil {
			// k6's summary export gives a rate as passes (non-zero samples)
			// and fails (zero samples) beside its value.
			passes, _ := num(failed, "passes")
			fails, _ := num(failed, "fails")
			st.Errors = int64(passes)
			if passes+fails > 0 {
				st.ErrorRate = passes / (passes + fails)
			}
			st.OK = max(0, st.Count-st.Errors)
		}
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("summary export %s: no Trend metric: nothing to compare", path)
	}
	return &runOps{File: path, Format: "summary-export", Ops: ops,
		Note: "from a --summary-export: the trend stats k6 was asked for (p99 only with summaryTrendStats), counts where a counter gives them"}, nil
}
