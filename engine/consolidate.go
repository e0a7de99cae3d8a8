package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/executor"
	"github.com/buzzload/buzzload/engine/segment"
	"github.com/buzzload/buzzload/engine/summary"
)

// Layers are the configuration layers of one run, lowest first after the
// defaults: config file < script < environment < flags (docs/k6-compat.md §8.2).
type Layers struct {
	// File is the JSON config (-c/--config); FileName names it in errors.
	File     json.RawMessage
	FileName string
	// Script is the options the script exports, as JSON.
	Script json.RawMessage
	// Archived are the env and flag layers an archive was made with
	// (`run x.tar`, `inspect x.tar`), lowest first: above the script,
	// below Env.
	Archived []Layer
	// Env is the K6_* environment layer, CLI the flag layer.
	Env, CLI Layer
	// SummaryMode is the --summary-mode flag (its value is validated with
	// the summary options).
	SummaryMode string
	// Exports are the script's exported names; every scenario's exec must
	// be one. Nil skips the check (inspect of options alone).
	Exports []string
	// MergeRunTags merges the tags option across the layers instead of
	// the highest replacing the rest (k6 v2.2's merge-run-tags feature
	// flag: internal/cmd/config.go mergeRunTags).
	MergeRunTags bool
}

// Consolidated is what the layers decide: the options, the execution
// options, the segment and the execution plan.
type Consolidated struct {
	Options Resolved
	// Exec is the merged execution options (shortcuts or scenarios);
	// Written is the same before k6 v2.1's bare-vus rule rewrote it, as
	// `inspect` prints a script's options.
	Exec    executor.ExecutionOptions
	Written executor.ExecutionOptions
	Tuple   *segment.Tuple
	Plan    *executor.Plan
	// Merged is the consolidated options JSON as test.options shows it.
	Merged json.RawMessage
	// Defaulted names the options no layer set that took k6's default
	// (summaryTrendStats, systemTags): `inspect` of a script shows them
	// null, as k6 does.
	Defaulted []string
	// Unset names the options no layer set that k6's inspect always shows
	// as null (its defaults apply at run time only).
	Unset []string
	// Warnings are to be logged (unknown keys, overridden layers), in
	// the order they arose; they are set also when an error is returned.
	Warnings []string
	// DeriveWarnings arose deriving the scenarios (k6 v2.1's bare-vus
	// override): k6 v2.2's plain inspect, which derives none, prints none.
	DeriveWarnings []string
}

// Consolidate merges the layers and derives the plan. It is pure: no I/O,
// no clock; the caller logs the warnings and maps errors to exit codes
// (ExitCode: config errors are 104, an unparsable segment 255).
func Consolidate(l Layers) (Consolidated, error) {
	var c Consolidated
	fileName := l.FileName
	if fileName == "" {
		fileName = "config file"
	}
	fileOpts, w1, err := ParseOptionsJSON(l.File, fileName)
	if err != nil {
		return c, configerr.New(err)
	}
	scriptOpts, w2, err := ParseOptionsJSON(l.Script, "options exported by the script")
	if err != nil {
		return c, configerr.New(err)
	}
	c.Warnings = append(append(c.Warnings, w1...), w2...)
	fileExec, err := executor.ParseExecutionOptions(l.File)
	if err != nil {
		return c, configerr.New(fmt.Errorf("%s: %w", fileName, err))
	}
	scriptExec, err := executor.ParseExecutionOptions(l.Script)
	if err != nil {
		return c, configerr.New(fmt.Errorf("script options: %w", err))
	}
	exec := fileExec
	type namedLayer struct {
		o    executor.ExecutionOptions
		name string
	}
	layers := []namedLayer{{scriptExec, "script"}}
	for _, a := range l.Archived {
		layers = append(layers, namedLayer{a.Exec, "archive"})
	}
	layers = append(layers, namedLayer{l.Env.Exec, "env"}, namedLayer{l.CLI.Exec, "cli"})
	for _, layer := range layers {
		var warns []string
		exec, warns = executor.Merge(exec, layer.o, layer.name)
		c.Warnings = append(c.Warnings, warns...)
	}
	c.Exec = exec
	opts := Options{}.Apply(fileOpts).Apply(scriptOpts)
	for _, a := range l.Archived {
		opts = opts.Apply(a.Options)
	}
	opts = opts.Apply(l.Env.Options).Apply(l.CLI.Options)
	if l.MergeRunTags {
		layers := []map[string]string{fileOpts.Tags, scriptOpts.Tags}
		for _, a := range l.Archived {
			layers = append(layers, a.Options.Tags)
		}
		merged := map[string]string{}
		for _, t := range append(layers, l.Env.Options.Tags, l.CLI.Options.Tags) {
			maps.Copy(merged, t)
		}
		if len(merged) > 0 {
			opts.Tags = merged
		}
	}
	if opts.SummaryTrendStats == nil {
		c.Defaulted = append(c.Defaulted, "summaryTrendStats")
	}
	if opts.SystemTags == nil {
		c.Defaulted = append(c.Defaulted, "systemTags")
	}
	// k6's inspect shows these as null until set, its execution
	// requirements and archives too (observed on v1.8.1).
	for k, unset := range map[string]bool{"noSetup": opts.NoSetup == nil, "setupTimeout": opts.SetupTimeout == nil,
		"noTeardown": opts.NoTeardown == nil, "teardownTimeout": opts.TeardownTimeout == nil, "throw": opts.Throw == nil,
		"handleSummaryTimeout": opts.HandleSummaryTimeout == nil} { // v2.2 prints it too (observed)
		if unset {
			c.Unset = append(c.Unset, k)
		}
	}
	sort.Strings(c.Unset)
	if c.Options, err = opts.Resolve(); err != nil {
		return c, configerr.New(err)
	}
	mode := l.SummaryMode
	if mode == "disabled" {
		mode = "compact"
	}
	if err := (summary.Options{Mode: mode, TrendStats: c.Options.SummaryTrendStats, TimeUnit: c.Options.SummaryTimeUnit}).Validate(); err != nil {
		return c, configerr.New(err)
	}

	configs, warns, err := exec.DeriveScenarios()
	c.DeriveWarnings = warns
	if err != nil {
		return c, err
	}
	c.Written = exec
	if exec.BareVUs() {
		// As k6 v2.1+ records it: the scenarios are the shortcut's, and
		// iterations is set to vus.
		exec.Scenarios, exec.Iterations = nil, exec.VUs
		c.Exec = exec
	}
	if l.Exports != nil {
		for _, sc := range configs {
			base := sc.Base()
			if !contains(l.Exports, base.Exec) {
				return c, configerr.New(fmt.Errorf("executor %s: function '%s' not found in exports", base.Name, base.Exec))
			}
		}
	}
	seg := segment.Full()
	// k6 exits 255 for a segment it cannot parse and 104 for one that is
	// not in the sequence (§3.1).
	if c.Options.ExecutionSegment != "" {
		if seg, err = segment.ParseSegment(c.Options.ExecutionSegment); err != nil {
			return c, fmt.Errorf("execution segment: %w", err)
		}
	}
	seq, err := segment.ParseSequence(c.Options.ExecutionSegmentSequence)
	if err != nil {
		return c, fmt.Errorf("execution segment sequence: %w", err)
	}
	if c.Tuple, err = segment.NewTuple(seg, seq); err != nil {
		return c, configerr.New(err)
	}
	if c.Plan, err = executor.NewPlan(configs, c.Tuple); err != nil {
		return c, err
	}
	if c.Merged, err = mergedOptionsJSON(c.Options, exec, c.Plan, passThrough(l.File, l.Script)); err != nil {
		return c, configerr.New(err)
	}
	return c, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mergedOptionsJSON is the consolidated options as scripts see them in
// test.options and their `options` export.
func mergedOptionsJSON(opts Resolved, exec executor.ExecutionOptions, plan *executor.Plan, extra map[string]json.RawMessage) (json.RawMessage, error) {
	m, err := opts.asMap()
	if err != nil {
		return nil, err
	}
	for k, v := range extra {
		m[k] = v
	}
	if exec.Scenarios != nil {
		var sc any
		if json.Unmarshal(exec.Scenarios, &sc) == nil {
			m["scenarios"] = sc
		}
	} else if plan != nil {
		// Shortcut options became scenarios; test.options shows those.
		sc := map[string]any{}
		for _, c := range plan.Scenarios {
			sc[c.Base().Name] = executor.ShortcutScenarioJSON(c)
		}
		m["scenarios"] = sc
	}
	if exec.VUs != nil {
		m["vus"] = *exec.VUs
	}
	if exec.Iterations != nil {
		m["iterations"] = *exec.Iterations
	}
	if exec.Duration != nil {
		m["duration"] = exec.Duration.String()
	}
	if exec.Stages != nil {
		st := make([]map[string]any, len(exec.Stages))
		for i, s := range exec.Stages {
			st[i] = map[string]any{"duration": s.Duration.String(), "target": s.Target}
			if s.Name != "" {
				st[i]["name"] = s.Name
			}
		}
		m["stages"] = st
	}
	return json.Marshal(m)
}

// asMap is the options as their JSON object, to add the execution options to.
func (r Resolved) asMap() (map[string]any, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}

// passThroughKeys are options buzzload does not use but shows as given:
// k6-operator reads `cloud` and `ext.loadimpact` from `inspect`.
var passThroughKeys = []string{"cloud", "ext"}

// passThrough picks passThroughKeys from the JSON layers, higher last.
func passThrough(layers ...json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, raw := range layers {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		for _, k := range passThroughKeys {
			if v, ok := m[k]; ok {
				out[k] = v
			}
		}
	}
	return out
}
