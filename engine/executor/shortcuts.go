package executor

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/configerr"
)

// ExecutionOptions are the five options that decide the scenarios: the four
// shortcuts and `scenarios`. A nil pointer (or nil Stages/Scenarios) means
// "not set in this layer".
type ExecutionOptions struct {
	VUs        *int64
	Duration   *time.Duration
	Iterations *int64
	Stages     []Stage // nil when unset; empty but non-nil when given as []
	Scenarios  json.RawMessage
}

// blockSet reports whether any of the four block-replaced fields is set.
func (o ExecutionOptions) blockSet() bool {
	return o.Duration != nil || o.Iterations != nil || o.Stages != nil || o.Scenarios != nil
}

// ParseExecutionOptions reads vus, duration, iterations, stages and
// scenarios from a JSON options object (script `options` or a config file).
// Other keys are ignored. null counts as unset.
func ParseExecutionOptions(options json.RawMessage) (ExecutionOptions, error) {
	var o ExecutionOptions
	if len(options) == 0 || isNull(options) {
		return o, nil
	}
	p := &fieldParser{}
	if err := json.Unmarshal(options, &p.fields); err != nil {
		return o, configerr.Errorf("", "", "options must be an object: %s", err)
	}
	if _, ok := p.get("vus"); ok {
		o.VUs = new(int64)
		p.integer("vus", o.VUs)
	}
	if _, ok := p.get("iterations"); ok {
		o.Iterations = new(int64)
		p.integer("iterations", o.Iterations)
	}
	if _, ok := p.get("duration"); ok {
		o.Duration = new(time.Duration)
		p.duration("duration", o.Duration)
	}
	if raw, ok := p.get("stages"); ok {
		st, errs := parseStages(raw, "", "stages", false)
		p.errs = append(p.errs, errs...)
		if st == nil {
			st = []Stage{}
		}
		o.Stages = st
	}
	if raw, ok := p.get("scenarios"); ok {
		o.Scenarios = raw
	}
	if p.errs != nil {
		return ExecutionOptions{}, errors.Join(p.errs...)
	}
	return o, nil
}

// Merge lays higher (a later config layer: script over config file, env
// over script, CLI over env) over lower, the way k6 does (§2.10, §8.2): if
// higher sets any of duration, iterations, stages or scenarios, all four are
// taken from higher and lower's are dropped; vus merges on its own. As in
// k6, the warning is given only when lower defined scenarios (`-d` over a
// script's own duration replaces it silently). layer names higher in the
// warning, e.g. "cli".
func Merge(lower, higher ExecutionOptions, layer string) (ExecutionOptions, []string) {
	out := lower
	var warnings []string
	if higher.blockSet() {
		if lower.Scenarios != nil {
			warnings = append(warnings, fmt.Sprintf("%q level configuration overrode scenarios configuration entirely", layer))
		}
		out.Duration, out.Iterations, out.Stages, out.Scenarios = higher.Duration, higher.Iterations, higher.Stages, higher.Scenarios
	}
	if higher.VUs != nil {
		out.VUs = higher.VUs
	}
	return out, warnings
}

// CLIOptions builds the CLI layer from `-u`, `-d`, `-i` and `-s` flags. Pass
// nil / empty for flags that were not given on the command line (the `-u`
// default of 1 counts as unset). stages are `-s` values ("10s:100").
func CLIOptions(vus *int64, duration *time.Duration, iterations *int64, stages []string) (ExecutionOptions, error) {
	o := ExecutionOptions{VUs: vus, Duration: duration, Iterations: iterations}
	for i, s := range stages {
		st, err := ParseStageFlag(s)
		if err != nil {
			return ExecutionOptions{}, fmt.Errorf("--stage #%d: %w", i+1, err)
		}
		o.Stages = append(o.Stages, st)
	}
	return o, nil
}

// ParseStageFlag parses one `-s duration:target` value ("10s:100"); the
// duration is plain Go syntax as on the k6 CLI.
func ParseStageFlag(s string) (Stage, error) {
	d, t, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return Stage{}, fmt.Errorf("%q: want duration:target, e.g. 10s:100", s)
	}
	dur, err := time.ParseDuration(d)
	if err != nil {
		return Stage{}, fmt.Errorf("%q: bad duration: %w", s, err)
	}
	target, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return Stage{}, fmt.Errorf("%q: bad target %q", s, t)
	}
	return Stage{Duration: dur, Target: target}, nil
}

// ParseStagesEnv parses K6_STAGES ("10s:5,20s:0").
func ParseStagesEnv(s string) ([]Stage, error) {
	var out []Stage
	for i, part := range strings.Split(s, ",") {
		st, err := ParseStageFlag(part)
		if err != nil {
			return nil, fmt.Errorf("K6_STAGES item %d: %w", i+1, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// DefaultScenarioName is the name of the scenario the shortcuts create.
const DefaultScenarioName = "default"

// BareVUs is k6 v2.1's rule 4: vus set, and neither iterations, duration
// nor stages (not even an empty list).
func (o ExecutionOptions) BareVUs() bool {
	return o.VUs != nil && o.Iterations == nil && o.Duration == nil && o.Stages == nil
}

// DeriveScenarios turns the merged execution options into scenarios, applying the
// shortcut rules of §2.10 with k6 v2.1+ semantics for a bare `vus` (that
// many VUs, one iteration each, replacing scenarios). The first rule that matches
// wins; conflicts are *configerr.Error values (exit 104).
func (o ExecutionOptions) DeriveScenarios() ([]Config, []string, error) {
	vus := int64(1)
	if o.VUs != nil {
		vus = *o.VUs
	}
	base := func(typ string) BaseConfig {
		return BaseConfig{Name: DefaultScenarioName, Type: typ, GracefulStop: DefaultGracefulStop, Exec: "default"}
	}
	conflict := func(a, b string) error {
		return configerr.Errorf("", "", "using multiple execution config shortcuts (%s and %s) simultaneously is not allowed", a, b)
	}
	withScenarios := func(a string) error {
		return configerr.Errorf("", "", "using an execution configuration shortcut (%s) and scenarios simultaneously is not allowed", a)
	}
	one := func(c Config) ([]Config, []string, error) {
		if err := c.Validate(); err != nil {
			return nil, nil, err
		}
		return []Config{c}, nil, nil
	}
	switch {
	case o.Iterations != nil:
		if len(o.Stages) > 0 {
			return nil, nil, conflict("iterations", "stages")
		}
		if o.Scenarios != nil {
			return nil, nil, withScenarios("iterations")
		}
		c := &SharedIterationsConfig{BaseConfig: base(SharedIterations), VUs: vus, Iterations: *o.Iterations, MaxDuration: DefaultMaxDuration}
		if o.Duration != nil {
			c.MaxDuration = *o.Duration
		}
		return one(c)
	case o.Duration != nil:
		if len(o.Stages) > 0 {
			return nil, nil, conflict("duration", "stages")
		}
		if o.Scenarios != nil {
			return nil, nil, withScenarios("duration")
		}
		if *o.Duration <= 0 {
			return nil, nil, configerr.Errorf("", "duration", "must be greater than 0, got %s", *o.Duration)
		}
		return one(&ConstantVUsConfig{BaseConfig: base(ConstantVUs), VUs: vus, Duration: *o.Duration})
	case len(o.Stages) > 0:
		if o.Scenarios != nil {
			return nil, nil, withScenarios("stages")
		}
		return one(&RampingVUsConfig{BaseConfig: base(RampingVUs), StartVUs: vus, Stages: o.Stages, GracefulRampDown: DefaultGracefulRampDown})
	case o.BareVUs():
		// k6 v2.1+ (lib/executor/execution_config_shortcuts.go, read in
		// v2.2.0): a bare vus runs that many VUs, one iteration each, and
		// replaces any scenarios, with k6's warning.
		var w []string
		if o.Scenarios != nil {
			w = append(w, fmt.Sprintf("`vus=%d` overrides scenarios configuration", *o.VUs))
		}
		cs, _, err := one(&SharedIterationsConfig{BaseConfig: base(SharedIterations), VUs: *o.VUs, Iterations: *o.VUs, MaxDuration: DefaultMaxDuration})
		return cs, w, err
	}
	var warnings []string
	if o.Scenarios != nil {
		cs, w, err := ParseScenarios(o.Scenarios)
		if err != nil || len(cs) > 0 {
			return cs, w, err
		}
		warnings = append(w, "the scenarios option is empty; running one iteration of one VU")
	}
	if o.Stages != nil {
		warnings = append(warnings, "the stages option is empty; running one iteration of one VU")
	}
	cs, _, err := one(&PerVUIterationsConfig{BaseConfig: base(PerVUIterations), VUs: 1, Iterations: 1, MaxDuration: DefaultMaxDuration})
	return cs, warnings, err
}

// ShortcutScenarioJSON is the k6 JSON form of a scenario derived from the
// shortcut options (shared-iterations, constant-vus or ramping-vus), so
// `exec.test.options.scenarios` shows it as k6 does. Other executors come
// only from explicit `scenarios`, whose JSON is kept as written; for them it
// returns the common fields.
func ShortcutScenarioJSON(c Config) map[string]any {
	b := c.Base()
	m := map[string]any{
		"executor":     b.Type,
		"startTime":    b.StartTime.String(),
		"gracefulStop": b.GracefulStop.String(),
		"exec":         b.Exec,
	}
	c.shortcutJSON(m)
	return m
}
