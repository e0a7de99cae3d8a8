package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/segment"
	"github.com/buzzload/buzzload/engine/thresholds"
)

// Input is one result file and the name messages call it by (its path).
type Input struct {
	Name string
	File *File
}

// perInstanceKeys are consolidated options that legitimately differ
// between the instances of one test: the segment and the test-wide tags
// (k6-operator tags each runner with instance_id).
var perInstanceKeys = []string{"executionSegment", "executionSegmentSequence", "tags"}

// CheckSameTest reports whether the inputs are instances of one test: the
// same script (by base name, and by content hash when both recorded one) and
// the same consolidated options apart from the segment and tags.
func CheckSameTest(ins []Input) error {
	if len(ins) == 0 {
		return errors.New("no result files")
	}
	a := ins[0]
	aOpts, err := testOptions(a)
	if err != nil {
		return err
	}
	for _, b := range ins[1:] {
		if x, y := filepath.Base(a.File.Run.Script), filepath.Base(b.File.Run.Script); x != y {
			return fmt.Errorf("%s ran script %q but %s ran %q: not the same test", a.Name, x, b.Name, y)
		}
		if x, y := a.File.Run.ScriptSHA256, b.File.Run.ScriptSHA256; x != "" && y != "" && x != y {
			return fmt.Errorf("%s and %s ran different versions of script %q (content hashes differ)", a.Name, b.Name, filepath.Base(a.File.Run.Script))
		}
		bOpts, err := testOptions(b)
		if err != nil {
			return err
		}
		if key := firstDifference(aOpts, bOpts); key != "" {
			return fmt.Errorf("%s and %s ran with different options: %q is %s in one and %s in the other",
				a.Name, b.Name, key, jsonText(aOpts[key]), jsonText(bOpts[key]))
		}
		if !reflect.DeepEqual(decode(a.File.Options.Thresholds), decode(b.File.Options.Thresholds)) {
			return fmt.Errorf("%s and %s ran with different thresholds", a.Name, b.Name)
		}
	}
	return nil
}

func testOptions(in Input) (map[string]any, error) {
	m := map[string]any{}
	if len(in.File.Options.Test) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(in.File.Options.Test, &m); err != nil {
		return nil, fmt.Errorf("%s: options.test: %w", in.Name, err)
	}
	for _, k := range perInstanceKeys {
		delete(m, k)
	}
	return m, nil
}

func firstDifference(a, b map[string]any) string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if !reflect.DeepEqual(a[k], b[k]) {
			return k
		}
	}
	return ""
}

func decode(m map[string]json.RawMessage) any {
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m)
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}

func jsonText(v any) string {
	if v == nil {
		return "unset"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// CheckCoverage reports whether the inputs' segments come from one
// sequence and cover 0:1 exactly once, naming the segments that are missing
// or overlap.
func CheckCoverage(ins []Input) error {
	type seg struct {
		name string
		s    segment.Segment
	}
	segs := make([]seg, 0, len(ins))
	var seq string
	var seqFrom string
	for _, in := range ins {
		s, err := segment.ParseSegment(in.File.Run.ExecutionSegment)
		if err != nil {
			return fmt.Errorf("%s: run.execution_segment: %w", in.Name, err)
		}
		q := in.File.Run.ExecutionSegmentSequence
		if seqFrom == "" {
			seq, seqFrom = q, in.Name
		} else if q != seq {
			return fmt.Errorf("%s ran with execution segment sequence %q but %s with %q: pass the same full --execution-segment-sequence to every instance (an instance without one completes the sequence on its own, and the VU counts no longer add up)",
				seqFrom, seq, in.Name, q)
		}
		segs = append(segs, seg{in.Name, s})
	}
	sort.SliceStable(segs, func(i, j int) bool { return segs[i].s.From.Cmp(segs[j].s.From) < 0 })
	var problems []string
	covered := new(big.Rat)
	last := ""
	for _, s := range segs {
		switch c := s.s.From.Cmp(covered); {
		case c > 0:
			problems = append(problems, fmt.Sprintf("segment %s is missing (no result covers it)", segment.Segment{From: covered, To: s.s.From}))
		case c < 0:
			to := s.s.To
			if to.Cmp(covered) > 0 {
				to = covered
			}
			problems = append(problems, fmt.Sprintf("segment %s overlaps: %s covers it and so does %s", segment.Segment{From: s.s.From, To: to}, last, s.name))
		}
		if s.s.To.Cmp(covered) > 0 {
			covered = new(big.Rat).Set(s.s.To)
			last = s.name + " (" + s.s.String() + ")"
		}
	}
	if one := big.NewRat(1, 1); covered.Cmp(one) < 0 {
		problems = append(problems, fmt.Sprintf("segment %s is missing (no result covers it)", segment.Segment{From: covered, To: one}))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the results do not cover the test exactly once: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Merge checks the inputs (CheckSameTest, CheckCoverage), merges their
// snapshots exactly and their stage verdicts, and re-judges the thresholds on
// the merged data. The merged file runs segment 0:1 of the same sequence.
// Warnings are things the caller should show but that do not stop a merge
// (an instance that ended with an error, for example).
func Merge(ins []Input) (merged *File, warnings []string, err error) {
	if err := CheckSameTest(ins); err != nil {
		return nil, nil, err
	}
	if err := CheckCoverage(ins); err != nil {
		return nil, nil, err
	}
	first := ins[0].File
	out := &File{
		Kind: Kind, Version: Version,
		Run: Run{
			Script: first.Run.Script, ScriptSHA256: first.Run.ScriptSHA256, InstanceID: "merged",
			Start: first.Run.Start, End: first.Run.End,
			ExecutionSegment:         segment.Full().String(),
			ExecutionSegmentSequence: first.Run.ExecutionSegmentSequence,
		},
		Options: first.Options,
		Metrics: first.Metrics.Clone(),
	}
	out.Options.Test = stripSegment(first.Options.Test)
	for i, in := range ins {
		f := in.File
		id := f.Run.InstanceID
		if id == "" {
			id = in.Name
		}
		out.Run.Merged = append(out.Run.Merged, fmt.Sprintf("%s=%s", f.Run.ExecutionSegment, id))
		if f.Run.ExitCode != 0 && f.Run.ExitCode != 99 {
			warnings = append(warnings, fmt.Sprintf("%s (segment %s) ended with exit code %d: %s", in.Name, f.Run.ExecutionSegment, f.Run.ExitCode, f.Run.Error))
		}
		if f.Options.SummaryMode == "disabled" {
			warnings = append(warnings, fmt.Sprintf("%s ran with the summary disabled: its checks are missing from the checks tree", in.Name))
		}
		if f.Options.NoThresholds && len(f.Options.Thresholds) > 0 {
			out.Options.NoThresholds = true
		}
		if !f.Run.Start.IsZero() && (out.Run.Start.IsZero() || f.Run.Start.Before(out.Run.Start)) {
			out.Run.Start = f.Run.Start
		}
		if f.Run.End.After(out.Run.End) {
			out.Run.End = f.Run.End
		}
		if seg, _ := segment.ParseSegment(f.Run.ExecutionSegment); seg.From.Sign() == 0 {
			// Every instance runs its own setup(); the first segment's is
			// the one a single run would have had.
			out.SetupData = f.SetupData
		}
		if i == 0 {
			continue
		}
		if err := out.Metrics.Merge(f.Metrics); err != nil {
			return nil, warnings, fmt.Errorf("%s: %w", in.Name, err)
		}
		if f.Options.SummaryMode != first.Options.SummaryMode {
			out.Options.SummaryMode = lowerMode(out.Options.SummaryMode, f.Options.SummaryMode)
		}
	}
	if out.Options.NoThresholds {
		warnings = append(warnings, "an instance ran with --no-thresholds, so the thresholds' sub-metrics are incomplete: thresholds are not judged on the merged data")
		out.Options.Thresholds = nil
	}
	set, err := ThresholdSet(out)
	if err != nil {
		return nil, warnings, err
	}
	out.StageVerdicts = mergeVerdicts(set, ins)
	statuses := Evaluate(set, out)
	out.Thresholds = Results(statuses)
	return out, warnings, nil
}

// lowerMode is the summary mode whose sinks both instances have.
func lowerMode(a, b string) string {
	rank := map[string]int{"disabled": 0, "compact": 1, "legacy": 1, "": 1, "full": 2}
	if rank[b] < rank[a] {
		return b
	}
	return a
}

// stripSegment drops the per-instance keys from consolidated options.
func stripSegment(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	delete(m, "executionSegment")
	delete(m, "executionSegmentSequence")
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

// ThresholdSet validates f's thresholds against the metrics of its snapshot
// (and the built-in ones). It is nil when there are none.
func ThresholdSet(f *File) (*thresholds.Set, error) {
	if len(f.Options.Thresholds) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(f.Options.Thresholds)
	if err != nil {
		return nil, fmt.Errorf("thresholds: %w", err)
	}
	var cfg thresholds.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("thresholds: %w", err)
	}
	reg := metrics.NewRegistry()
	if _, err := reg.RegisterBuiltins(); err != nil {
		return nil, err
	}
	for _, m := range f.Metrics.Metrics {
		if _, err := reg.New(m.Name, m.Type, m.Contains); err != nil {
			return nil, fmt.Errorf("metric %q: %w", m.Name, err)
		}
	}
	return thresholds.New(cfg, reg)
}

// Evaluate judges set over f's snapshot as the runner's final evaluation
// does: empty sinks are judged too, a missing value passes, Counter rates
// divide by the snapshot's duration. A windowed threshold fails when any of
// f's stage verdicts for it failed; its value is the first failing stage's,
// or the last stage's when all passed.
func Evaluate(set *thresholds.Set, f *File) []thresholds.Status {
	if set == nil {
		return nil
	}
	out := make([]thresholds.Status, 0, len(set.Thresholds))
	for _, t := range set.Thresholds {
		st := thresholds.Status{Threshold: t, Evaluated: true, OK: true}
		if t.Window != "" {
			for _, v := range f.StageVerdicts {
				if v.Key != t.Key || v.Source != t.Source || (t.Scenario != "" && v.Scenario != t.Scenario) {
					continue
				}
				if st.OK {
					st.Value, st.HasValue = v.Value, v.HasValue
				}
				st.OK = st.OK && v.OK
			}
			out = append(out, st)
			continue
		}
		sink, _ := f.Metrics.Lookup(t.Key)
		if sink == nil {
			sink = metrics.NewSink(t.Metric.Type)
		}
		if v, has := sink.Value(t.Stat, f.Metrics.Duration); has {
			st.Value, st.HasValue, st.OK = v, true, t.Op.Compare(v, t.Value)
		}
		out = append(out, st)
	}
	return out
}

// Results turns statuses into the file form.
func Results(sts []thresholds.Status) []ThresholdResult {
	out := make([]ThresholdResult, 0, len(sts))
	for _, s := range sts {
		out = append(out, ThresholdResult{Key: s.Key, Source: s.Source, Window: s.Window, Evaluated: s.Evaluated,
			OK: s.OK, Value: s.Value, HasValue: s.HasValue})
	}
	return out
}

// FromVerdicts turns the runner's stage verdicts into the file form.
func FromVerdicts(vs []thresholds.StageVerdict) []StageVerdict {
	out := make([]StageVerdict, 0, len(vs))
	for _, v := range vs {
		out = append(out, StageVerdict{Key: v.Key, Source: v.Source, Scenario: v.Scenario, Stage: v.Stage,
			StageName: v.StageName, Start: v.Start, End: v.End, OK: v.OK, Value: v.Value, HasValue: v.HasValue, Samples: v.Samples})
	}
	return out
}

// mergeVerdicts combines the instances' verdicts of each (threshold, scenario,
// stage).
//
// A stage window's sinks are not in the snapshot (only the verdict is), so
// an exact re-judgement is possible only where the judged value can be
// combined from the instances' values and sample counts: a Counter's count
// (a sum), a Rate (passes recovered from rate × samples), a Trend's avg
// (weighted by samples), min and max. A Counter's rate is summed, which is
// exact when the instances started together (--start-at). A percentile,
// median or Gauge value cannot be combined: that verdict is conservative, it
// fails when any instance failed it, and its value is the worst instance's.
// Exact percentiles per stage would need per-stage snapshots (the stage
// window's HDR sinks written into the result file).
func mergeVerdicts(set *thresholds.Set, ins []Input) []StageVerdict {
	type key struct {
		key, source, scenario string
		stage                 int
	}
	type part struct {
		name string
		v    StageVerdict
	}
	var order []key
	groups := map[key][]part{}
	for _, in := range ins {
		name := in.File.Run.InstanceID
		if name == "" {
			name = in.Name
		}
		for _, v := range in.File.StageVerdicts {
			k := key{v.Key, v.Source, v.Scenario, v.Stage}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], part{name, v})
		}
	}
	var out []StageVerdict
	for _, k := range order {
		parts := groups[k]
		m := parts[0].v
		m.FailedOn = nil
		m.Samples = 0
		unknown := false // counters and gauges report -1 samples
		for _, p := range parts {
			if p.v.Start.Before(m.Start) || m.Start.IsZero() {
				m.Start = p.v.Start
			}
			if p.v.End.After(m.End) {
				m.End = p.v.End
			}
			if p.v.Samples < 0 {
				unknown = true
			}
			m.Samples += max(p.v.Samples, 0)
			if !p.v.OK {
				m.FailedOn = append(m.FailedOn, p.name)
			}
		}
		if unknown {
			m.Samples = -1
		}
		vals := make([]StageVerdict, len(parts))
		for i, p := range parts {
			vals[i] = p.v
		}
		t := findThreshold(set, k.key, k.source, k.scenario)
		v, has, exact := combine(t, vals)
		m.Value, m.HasValue = v, has
		if exact {
			m.OK = !has || t.Op.Compare(v, t.Value)
		} else {
			m.OK = len(m.FailedOn) == 0
		}
		m.Exact = &exact
		out = append(out, m)
	}
	return out
}

func findThreshold(set *thresholds.Set, key, source, scenario string) *thresholds.Threshold {
	if set == nil {
		return nil
	}
	for _, t := range set.Thresholds {
		if t.Key == key && t.Source == source && t.Window != "" && (t.Scenario == "" || t.Scenario == scenario) {
			return t
		}
	}
	return nil
}

// combine merges the instances' values of one stage verdict; exact is false
// when the value cannot be combined (the verdict is then conservative).
func combine(t *thresholds.Threshold, vs []StageVerdict) (v float64, has, exact bool) {
	if t == nil {
		return worst(nil, vs)
	}
	switch {
	case t.Metric.Type == metrics.Counter && (t.Stat.Kind == metrics.StatCount || t.Stat.Kind == metrics.StatRate):
		for _, x := range vs {
			if x.HasValue {
				v, has = v+x.Value, true
			}
		}
		return v, has, true
	case t.Metric.Type == metrics.Rate && t.Stat.Kind == metrics.StatRate:
		var passes, total int64
		for _, x := range vs {
			if x.HasValue && x.Samples > 0 {
				passes += int64(math.Round(x.Value * float64(x.Samples)))
				total += x.Samples
			}
		}
		if total == 0 {
			return 0, false, true
		}
		return float64(passes) / float64(total), true, true
	case t.Metric.Type == metrics.Trend && t.Stat.Kind == metrics.StatAvg:
		var sum float64
		var n int64
		for _, x := range vs {
			sum += x.Value * float64(x.Samples)
			n += x.Samples
		}
		if n == 0 {
			return 0, true, true
		}
		return sum / float64(n), true, true
	case t.Metric.Type == metrics.Trend && (t.Stat.Kind == metrics.StatMin || t.Stat.Kind == metrics.StatMax):
		seen := false
		for _, x := range vs {
			if x.Samples == 0 {
				continue
			}
			switch {
			case !seen:
				v, seen = x.Value, true
			case t.Stat.Kind == metrics.StatMin:
				v = math.Min(v, x.Value)
			default:
				v = math.Max(v, x.Value)
			}
		}
		return v, true, true
	}
	return worst(t, vs)
}

// worst is the conservative value: the one farthest on the failing side of
// the threshold's operator (the first failing one for == and !=).
func worst(t *thresholds.Threshold, vs []StageVerdict) (v float64, has, exact bool) {
	for _, x := range vs {
		if !x.HasValue {
			continue
		}
		if !has {
			v, has = x.Value, true
			continue
		}
		if t == nil {
			continue
		}
		switch t.Op {
		case thresholds.OpLT, thresholds.OpLE:
			v = math.Max(v, x.Value)
		case thresholds.OpGT, thresholds.OpGE:
			v = math.Min(v, x.Value)
		}
	}
	if t != nil && (t.Op == thresholds.OpEq || t.Op == thresholds.OpNE) {
		for _, x := range vs {
			if x.HasValue && !x.OK {
				return x.Value, true, false
			}
		}
	}
	return v, has, false
}
