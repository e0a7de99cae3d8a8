package engine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/executor"
	"github.com/buzzload/buzzload/engine/metrics"
)

func TestConsolidateLayers(t *testing.T) {
	i64 := func(n int64) *int64 { return &n }
	dur := func(s string) *time.Duration { d, _ := time.ParseDuration(s); return &d }
	str := func(s string) *string { return &s }
	cases := []struct {
		name string
		l    Layers
		// check inspects the result; wantErr/wantCode are for failures.
		check    func(t *testing.T, c Consolidated)
		wantErr  string
		wantCode int
		wantWarn string
	}{
		{
			name: "defaults: one VU, one iteration of default, k6's timeouts and system tags",
			l:    Layers{Exports: []string{"default"}},
			check: func(t *testing.T, c Consolidated) {
				if len(c.Plan.Scenarios) != 1 || c.Plan.Scenarios[0].Base().Type != executor.PerVUIterations || c.Plan.MaxVUs != 1 {
					t.Fatalf("plan %+v", c.Plan.Scenarios)
				}
				if c.Options.SetupTimeout != DefaultSetupTimeout || strings.Join(c.Options.SystemTags, ",") != strings.Join(metrics.DefaultSystemTags(), ",") {
					t.Fatalf("defaults %+v", c.Options)
				}
			},
		},
		{
			name: "script over file, env over script, flags over env",
			l: Layers{
				File:    json.RawMessage(`{"vus": 2, "duration": "1s", "setupTimeout": "5s", "tags": {"a": "file"}, "teardownTimeout": "7s"}`),
				Script:  json.RawMessage(`{"vus": 3, "setupTimeout": "6s", "tags": {"a": "script"}}`),
				Env:     Layer{Exec: executor.ExecutionOptions{VUs: i64(4)}, Options: Options{Tags: map[string]string{"a": "env"}}},
				CLI:     Layer{Exec: executor.ExecutionOptions{VUs: i64(5)}, Options: Options{SetupTimeout: dur("9s")}},
				Exports: []string{"default"},
			},
			check: func(t *testing.T, c Consolidated) {
				if c.Plan.MaxVUs != 5 || c.Options.SetupTimeout != 9*time.Second || c.Options.TeardownTimeout != 7*time.Second || c.Options.Tags["a"] != "env" {
					t.Fatalf("vus %d setup %s teardown %s tags %v", c.Plan.MaxVUs, c.Options.SetupTimeout, c.Options.TeardownTimeout, c.Options.Tags)
				}
			},
		},
		{
			name: "a higher layer's duration replaces the script's scenarios, with k6's warning",
			l: Layers{
				Script:  json.RawMessage(`{"scenarios": {"s": {"executor": "shared-iterations", "iterations": 4}}}`),
				CLI:     Layer{Exec: executor.ExecutionOptions{Duration: dur("2s"), VUs: i64(2)}},
				Exports: []string{"default"},
			},
			wantWarn: `"cli" level configuration overrode scenarios configuration entirely`,
			check: func(t *testing.T, c Consolidated) {
				if c.Plan.Scenarios[0].Base().Type != executor.ConstantVUs {
					t.Fatalf("scenario %+v", c.Plan.Scenarios[0].Base())
				}
				var m map[string]any
				if err := json.Unmarshal(c.Merged, &m); err != nil || m["duration"] != "2s" || m["vus"] != float64(2) {
					t.Fatalf("merged options %s (%v)", c.Merged, err)
				}
			},
		},
		{
			name:     "unknown keys warn and name the layer",
			l:        Layers{File: json.RawMessage(`{"nope": 1}`), FileName: "cfg.json", Exports: []string{"default"}},
			wantWarn: "There were unknown fields in the cfg.json: nope",
		},
		{
			name:     "a scenario's exec must be exported (104)",
			l:        Layers{Script: json.RawMessage(`{"scenarios": {"s": {"executor": "shared-iterations", "exec": "nope"}}}`), Exports: []string{"default"}},
			wantErr:  "executor s: function 'nope' not found in exports",
			wantCode: ExitInvalidConfig,
		},
		{
			name:     "without exports the check is skipped",
			l:        Layers{Script: json.RawMessage(`{"scenarios": {"s": {"executor": "shared-iterations", "exec": "nope"}}}`)},
			check:    func(t *testing.T, c Consolidated) {},
			wantCode: ExitOK,
		},
		{
			name:     "a wrong type names the layer and key (104)",
			l:        Layers{Script: json.RawMessage(`{"setupTimeout": true}`)},
			wantErr:  "options exported by the script: setupTimeout",
			wantCode: ExitInvalidConfig,
		},
		{
			name:     "a bad summary trend stat (104)",
			l:        Layers{Script: json.RawMessage(`{"summaryTrendStats": ["p(101)"]}`)},
			wantErr:  "summaryTrendStats",
			wantCode: ExitInvalidConfig,
		},
		{
			name:     "an unparsable segment (255)",
			l:        Layers{CLI: Layer{Options: Options{ExecutionSegment: str("x:y")}}},
			wantErr:  "execution segment",
			wantCode: ExitGeneric,
		},
		{
			name:     "a segment not in the sequence (104)",
			l:        Layers{CLI: Layer{Options: Options{ExecutionSegment: str("0:1/3"), ExecutionSegmentSequence: str("0,1/2,1")}}},
			wantCode: ExitInvalidConfig,
			wantErr:  "",
		},
		{
			name: "a segment shares the plan's VUs",
			l: Layers{
				Script: json.RawMessage(`{"vus": 10, "duration": "1s"}`),
				CLI:    Layer{Options: Options{ExecutionSegment: str("0:1/2")}},
			},
			check: func(t *testing.T, c Consolidated) {
				if c.Plan.MaxVUs != 5 || c.Tuple.Segment().String() != "0:1/2" {
					t.Fatalf("maxVUs %d segment %s", c.Plan.MaxVUs, c.Tuple.Segment())
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Consolidate(tc.l)
			if tc.wantWarn != "" && !strings.Contains(strings.Join(append(c.Warnings, c.DeriveWarnings...), "\n"), tc.wantWarn) {
				t.Errorf("warnings %q, want one containing %q", c.Warnings, tc.wantWarn)
			}
			if tc.check == nil && tc.wantErr == "" && tc.wantCode == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if tc.check != nil {
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, c)
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || ExitCode(err) != tc.wantCode {
				t.Fatalf("error %q (exit %d), want %q (exit %d)", err, ExitCode(err), tc.wantErr, tc.wantCode)
			}
		})
	}
}

// TestConsolidateIsRepeatable pins purity: the same layers give the same
// result, with nothing carried over between calls.
func TestConsolidateIsRepeatable(t *testing.T) {
	l := Layers{Script: json.RawMessage(`{"stages": [{"duration": "1s", "target": 3}], "tags": {"x": "y"}}`), Exports: []string{"default"}}
	a, err1 := Consolidate(l)
	b, err2 := Consolidate(l)
	if err1 != nil || err2 != nil || string(a.Merged) != string(b.Merged) || a.Plan.MaxVUs != b.Plan.MaxVUs {
		t.Fatalf("%v %v\n%s\n%s", err1, err2, a.Merged, b.Merged)
	}
}
