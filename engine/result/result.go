// Package result is the result file one `buzzload run --result FILE` instance
// writes at the end of its run, and the merge of several of them.
//
// A result file is versioned JSON holding everything needed to judge and
// print the test again without the script: run metadata (script, start and
// end, execution segment and sequence, instance id, exit code), the
// thresholds configuration and summary options, the metrics snapshot
// (engine/metrics, HDR trends included, which merge exactly), the thresholds'
// final statuses and the per-stage verdicts of windowed thresholds.
//
// Merging (Merge) checks that the files are instances of one test (same
// script, same options apart from the segment and tags, one segment
// sequence, segments covering 0:1 exactly once), merges the snapshots and
// re-judges the thresholds on the merged sinks (Evaluate).
package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/buzzload/buzzload/engine/outfile"
	"github.com/buzzload/buzzload/engine/output"

	"github.com/buzzload/buzzload/engine/metrics"
)

// Kind marks a result file, so another JSON file given by mistake is named
// as such instead of failing on a missing field.
const Kind = "buzzload-result"

// Version is the result file format version. A reader refuses other
// versions: the merge must be exact or not happen.
const Version = 1

// File is one result file.
type File struct {
	Kind    string  `json:"kind"`
	Version int     `json:"version"`
	Run     Run     `json:"run"`
	Options Options `json:"options"`
	// Metrics is every sink of the run, groups and sub-metrics included.
	Metrics *metrics.Snapshot `json:"metrics"`
	// Thresholds are the final statuses as the instance judged them on its
	// own samples (informative: merge re-judges).
	Thresholds []ThresholdResult `json:"thresholds"`
	// StageVerdicts are windowed thresholds' results per ramp stage.
	StageVerdicts []StageVerdict `json:"stage_verdicts,omitempty"`
	// SetupData is setup()'s JSON result, when it returned something.
	SetupData json.RawMessage `json:"setup_data,omitempty"`
	// Buzz is the Buzz report (report.Report's JSON: steps, verdicts,
	// report windows, generator health) when the script loaded a scenario,
	// so `buzzload report` can plot the run over time. Bounded: the report
	// keeps at most report.MaxWindows windows. A merge drops it (the
	// instances' windows do not merge exactly).
	Buzz json.RawMessage `json:"buzz,omitempty"`
	// Outputs are what the run's outputs delivered and lost (pushes,
	// failed pushes, points lost, samples dropped), where they count it.
	Outputs []output.Counts `json:"outputs,omitempty"`
}

// Run is the run metadata.
type Run struct {
	// Script is the script path as given; ScriptSHA256 hashes its content
	// (the entry file only) when it could be read.
	Script       string `json:"script"`
	ScriptSHA256 string `json:"script_sha256,omitempty"`
	// InstanceID tells instances apart: the instance_id tag when set
	// (k6-operator sets it), otherwise host name and process id.
	InstanceID string    `json:"instance_id,omitempty"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	// ExecutionSegment and ExecutionSegmentSequence are exact fractions;
	// the sequence is the filled one the instance striped with.
	ExecutionSegment         string `json:"execution_segment"`
	ExecutionSegmentSequence string `json:"execution_segment_sequence"`
	// ExitCode and Error are how the instance ended.
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error,omitempty"`
	// Merged lists the instances a merged file was made of.
	Merged []string `json:"merged,omitempty"`
}

// Options are the options needed to judge and print the run again.
type Options struct {
	// Thresholds is options.thresholds as consolidated.
	Thresholds map[string]json.RawMessage `json:"thresholds,omitempty"`
	// NoThresholds is set when the run was told not to judge them (its
	// snapshot then lacks the thresholds' sub-metrics).
	NoThresholds      bool     `json:"no_thresholds,omitempty"`
	SummaryTrendStats []string `json:"summary_trend_stats,omitempty"`
	SummaryTimeUnit   string   `json:"summary_time_unit,omitempty"`
	// SummaryMode is how the run registered its summary sinks: full mode
	// keeps per-scenario groups, disabled keeps no checks tree.
	SummaryMode string `json:"summary_mode,omitempty"`
	// Test is the consolidated options (test.options): instances of one
	// test agree on it apart from the segment keys and tags.
	Test json.RawMessage `json:"test,omitempty"`
}

// ThresholdResult is one threshold's final status.
type ThresholdResult struct {
	Key       string  `json:"key"`
	Source    string  `json:"source"`
	Window    string  `json:"window,omitempty"`
	Evaluated bool    `json:"evaluated"`
	OK        bool    `json:"ok"`
	Value     float64 `json:"value"`
	HasValue  bool    `json:"has_value"`
}

// StageVerdict is a windowed threshold's result for one ramp stage.
type StageVerdict struct {
	Key       string    `json:"key"`
	Source    string    `json:"source"`
	Scenario  string    `json:"scenario"`
	Stage     int       `json:"stage"`
	StageName string    `json:"stage_name,omitempty"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	OK        bool      `json:"ok"`
	Value     float64   `json:"value"`
	HasValue  bool      `json:"has_value"`
	Samples   int64     `json:"samples"`
	// Exact is false in a merged verdict whose value could not be combined
	// from the instances' values (percentiles, gauges): its verdict is the
	// conservative one (failed when any instance failed).
	Exact *bool `json:"exact,omitempty"`
	// FailedOn names the instances that failed it (merged verdicts).
	FailedOn []string `json:"failed_on,omitempty"`
}

// Validate checks what a reader relies on.
func (f *File) Validate() error {
	if err := checkHead(f.Kind, f.Version); err != nil {
		return err
	}
	if f.Metrics == nil {
		return errors.New(`no "metrics" snapshot`)
	}
	if f.Run.ExecutionSegment == "" {
		return errors.New(`no "run.execution_segment"`)
	}
	return nil
}

func checkHead(kind string, version int) error {
	if kind != Kind {
		if kind == "" {
			return errors.New(`not a buzzload result file (no "kind": "` + Kind + `")`)
		}
		return fmt.Errorf("not a buzzload result file (kind %q, want %q)", kind, Kind)
	}
	if version != Version {
		return fmt.Errorf("result format version %d, this buzzload reads version %d", version, Version)
	}
	return nil
}

// Marshal writes f as indented JSON with its kind and version filled in.
func Marshal(f *File) ([]byte, error) {
	cp := *f
	cp.Kind, cp.Version = Kind, Version
	if err := cp.Validate(); err != nil {
		return nil, err
	}
	// Unescaped <, > and & keep threshold expressions readable.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(&cp); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Unmarshal reads and validates a result file's content.
func Unmarshal(b []byte) (*File, error) {
	// Read kind and version first, so a newer format is reported as such
	// rather than as whatever field it changed.
	var head struct {
		Kind    string `json:"kind"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, jsonError(b, err)
	}
	if err := checkHead(head.Kind, head.Version); err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, jsonError(b, err)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// jsonError says where in the text a syntax error is.
func jsonError(b []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n"))
		return fmt.Errorf("corrupt JSON at line %d (byte %d): %w", line, se.Offset, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("corrupt result: field %q: %w", te.Field, err)
	}
	return fmt.Errorf("corrupt result: %w", err)
}

// Read reads and validates a result file; errors name the file.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("result file: %w", err)
	}
	f, err := Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("result file %s: %w", path, err)
	}
	return f, nil
}

// Write writes f to path through a temporary file in the same directory
// and a rename, so a merge that watches a shared volume never reads half a
// file; a path that is not a regular file (a device, a symlink) is written
// through instead of renamed over (outfile.Replace). 0644: a result is read
// by the merge step, often another user on a shared volume.
func Write(path string, f *File) error {
	b, err := Marshal(f)
	if err != nil {
		return fmt.Errorf("result file %s: %w", path, err)
	}
	if err := outfile.Replace(path, b, 0o644); err != nil {
		return fmt.Errorf("result file %s: %w", path, err)
	}
	return nil
}
