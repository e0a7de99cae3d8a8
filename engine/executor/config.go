package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/segment"
)

// Executor type names as scripts spell them.
const (
	SharedIterations    = "shared-iterations"
	PerVUIterations     = "per-vu-iterations"
	ConstantVUs         = "constant-vus"
	RampingVUs          = "ramping-vus"
	ConstantArrivalRate = "constant-arrival-rate"
	RampingArrivalRate  = "ramping-arrival-rate"
	// ExternallyControlled was removed in k6 v2.0.0 (#5846): a script that
	// names it is refused at the start (exit 104), as k6 v2 refuses it.
	ExternallyControlled = "externally-controlled"
)

// Defaults shared by the executors (docs/k6-compat.md §2).
const (
	DefaultGracefulStop     = 30 * time.Second
	DefaultGracefulRampDown = 30 * time.Second
	DefaultMaxDuration      = 10 * time.Minute
	DefaultTimeUnit         = time.Second
	maxRampingVUs           = 100_000_000
)

// Stage is one step of a ramping executor: move linearly to Target over
// Duration. Name is our extension: it labels the stage in iteration info and
// stage events (for per-stage thresholds).
type Stage struct {
	Duration time.Duration
	Target   int64
	Name     string
}

// BaseConfig holds the fields every scenario has (docs/k6-compat.md §2.1).
type BaseConfig struct {
	Name         string
	Type         string // executor name
	StartTime    time.Duration
	GracefulStop time.Duration
	Exec         string // exported function; "default" unless given
	Env          map[string]string
	Tags         map[string]string
	Options      json.RawMessage // browser options, passed through untouched
}

// Config is one scenario's typed configuration. Each executor has its own
// type; Base gives the common fields.
type Config interface {
	Base() *BaseConfig
	// Validate returns every problem, each a *configerr.Error, joined.
	Validate() error
	// ExecutionSteps is the pure plan of VUs this scenario needs on the
	// instance described by t, offsets relative to the scenario's startTime.
	// The last step is at the end of the scenario (including its graceful
	// stop) with zero VUs.
	ExecutionSteps(t *segment.Tuple) []Step
	// Description is the one-line banner text for this scenario.
	Description(t *segment.Tuple) string
	// StageList is the scenario's named stages (nil for executors without).
	StageList() []Stage

	// run executes the scenario on r until it ends: each executor's own,
	// in its file (k6's lib/executor: the scheduler sees only this).
	run(ctx context.Context, r *scenarioRun, t *segment.Tuple)
	// prepare sets up what the scheduler keeps for the run before it
	// starts (BaseConfig: nothing).
	prepare(s *Scheduler)
	// shortcutJSON adds the executor's own fields to its shortcut
	// scenario's JSON (BaseConfig: none; ShortcutScenarioJSON).
	shortcutJSON(m map[string]any)
}

func (b *BaseConfig) Base() *BaseConfig { return b }

// StageList is nil: an executor with stages has its own.
func (b *BaseConfig) StageList() []Stage { return nil }

func (b *BaseConfig) prepare(*Scheduler)          {}
func (b *BaseConfig) shortcutJSON(map[string]any) {}

var scenarioName = regexp.MustCompile(`^[0-9a-zA-Z_-]+$`)

var commonKeys = []string{"executor", "startTime", "gracefulStop", "exec", "env", "tags", "options"}

var executorKeys = map[string][]string{
	SharedIterations:    {"vus", "iterations", "maxDuration"},
	PerVUIterations:     {"vus", "iterations", "maxDuration"},
	ConstantVUs:         {"vus", "duration"},
	RampingVUs:          {"startVUs", "stages", "gracefulRampDown"},
	ConstantArrivalRate: {"rate", "timeUnit", "duration", "preAllocatedVUs", "maxVUs"},
	RampingArrivalRate:  {"startRate", "timeUnit", "stages", "preAllocatedVUs", "maxVUs"},
}

// ParseScenarios parses the `scenarios` object of the options into validated
// configs sorted by (startTime, name), the order k6 plans and shows them in.
// Warnings (unknown keys) are returned separately; errors are *configerr.Error
// values joined with errors.Join.
func ParseScenarios(raw json.RawMessage) ([]Config, []string, error) {
	var objs map[string]json.RawMessage
	if err := json.Unmarshal(raw, &objs); err != nil {
		return nil, nil, configerr.Errorf("", "scenarios", "must be an object of named scenarios: %s", err)
	}
	names := make([]string, 0, len(objs))
	for n := range objs {
		names = append(names, n)
	}
	sort.Strings(names)
	var (
		configs  []Config
		warnings []string
		errs     []error
	)
	for _, name := range names {
		c, w, err := ParseScenario(name, objs[name])
		warnings = append(warnings, w...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		configs = append(configs, c)
	}
	if len(errs) > 0 {
		return nil, warnings, errors.Join(errs...)
	}
	SortConfigs(configs)
	return configs, warnings, nil
}

// SortConfigs orders scenarios by (startTime, name).
func SortConfigs(cs []Config) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i].Base(), cs[j].Base()
		if a.StartTime != b.StartTime {
			return a.StartTime < b.StartTime
		}
		return a.Name < b.Name
	})
}

// ParseScenario parses and validates one scenario object.
func ParseScenario(name string, raw json.RawMessage) (Config, []string, error) {
	p := &fieldParser{scenario: name}
	if !scenarioName.MatchString(name) {
		return nil, nil, configerr.Errorf(name, "", "invalid scenario name (allowed: letters, digits, '_' and '-')")
	}
	if err := json.Unmarshal(raw, &p.fields); err != nil || p.fields == nil {
		return nil, nil, configerr.Errorf(name, "", "must be an object")
	}
	var typ string
	if _, ok := p.fields["executor"]; !ok {
		return nil, nil, configerr.Errorf(name, "executor", "is required")
	}
	p.str("executor", &typ)
	if p.errs != nil {
		return nil, nil, errors.Join(p.errs...)
	}
	keys, ok := executorKeys[typ]
	if !ok && typ == ExternallyControlled {
		return nil, nil, configerr.Errorf(name, "executor", "unknown executor type %q: the externally-controlled executor was removed in k6 v2.0.0 (one of %s)", typ, strings.Join(ExecutorTypes(), ", "))
	}
	if !ok {
		return nil, nil, configerr.Errorf(name, "executor", "unknown executor %q (one of %s)", typ, strings.Join(ExecutorTypes(), ", "))
	}
	base := BaseConfig{Name: name, Type: typ, GracefulStop: DefaultGracefulStop, Exec: "default"}
	p.duration("startTime", &base.StartTime)
	p.duration("gracefulStop", &base.GracefulStop)
	if _, ok := p.fields["exec"]; ok {
		p.str("exec", &base.Exec)
	}
	p.strMap("env", &base.Env)
	p.strMap("tags", &base.Tags)
	if o, ok := p.fields["options"]; ok {
		base.Options = o
	}
	var c Config
	switch typ {
	case SharedIterations, PerVUIterations:
		vus, iters, maxDur := int64(1), int64(1), DefaultMaxDuration
		p.integer("vus", &vus)
		p.integer("iterations", &iters)
		p.duration("maxDuration", &maxDur)
		if typ == SharedIterations {
			c = &SharedIterationsConfig{BaseConfig: base, VUs: vus, Iterations: iters, MaxDuration: maxDur}
		} else {
			c = &PerVUIterationsConfig{BaseConfig: base, VUs: vus, Iterations: iters, MaxDuration: maxDur}
		}
	case ConstantVUs:
		cc := &ConstantVUsConfig{BaseConfig: base, VUs: 1}
		p.integer("vus", &cc.VUs)
		p.required("duration")
		p.duration("duration", &cc.Duration)
		c = cc
	case RampingVUs:
		cc := &RampingVUsConfig{BaseConfig: base, StartVUs: 1, GracefulRampDown: DefaultGracefulRampDown}
		p.integer("startVUs", &cc.StartVUs)
		p.required("stages")
		p.stages("stages", &cc.Stages)
		p.duration("gracefulRampDown", &cc.GracefulRampDown)
		c = cc
	case ConstantArrivalRate:
		cc := &ConstantArrivalRateConfig{BaseConfig: base, TimeUnit: DefaultTimeUnit, MaxVUs: -1}
		p.required("rate", "duration", "preAllocatedVUs")
		p.integer("rate", &cc.Rate)
		p.duration("timeUnit", &cc.TimeUnit)
		p.duration("duration", &cc.Duration)
		p.integer("preAllocatedVUs", &cc.PreAllocatedVUs)
		p.integer("maxVUs", &cc.MaxVUs)
		if cc.MaxVUs == -1 {
			cc.MaxVUs = cc.PreAllocatedVUs
		}
		c = cc
	case RampingArrivalRate:
		cc := &RampingArrivalRateConfig{BaseConfig: base, TimeUnit: DefaultTimeUnit, MaxVUs: -1}
		p.required("stages", "preAllocatedVUs")
		p.integer("startRate", &cc.StartRate)
		p.duration("timeUnit", &cc.TimeUnit)
		p.stages("stages", &cc.Stages)
		p.integer("preAllocatedVUs", &cc.PreAllocatedVUs)
		p.integer("maxVUs", &cc.MaxVUs)
		if cc.MaxVUs == -1 {
			cc.MaxVUs = cc.PreAllocatedVUs
		}
		c = cc
	}
	// Unknown keys inside a scenario are errors, as in k6 (strict decoding):
	// a typo such as "startime" must not silently run a different test.
	var warnings []string
	known := map[string]bool{}
	for _, k := range append(append([]string{}, commonKeys...), keys...) {
		known[k] = true
	}
	var unknown []string
	for k := range p.fields {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		p.fail(k, "unknown option for %s", typ)
	}
	if p.errs != nil {
		return nil, warnings, errors.Join(p.errs...)
	}
	if err := c.Validate(); err != nil {
		return nil, warnings, err
	}
	return c, warnings, nil
}

// ExecutorTypes lists the supported executor names.
func ExecutorTypes() []string {
	return []string{SharedIterations, PerVUIterations, ConstantVUs, RampingVUs, ConstantArrivalRate, RampingArrivalRate}
}

// fieldParser reads typed fields out of one JSON object and collects errors
// that name the scenario and key.
type fieldParser struct {
	scenario string
	fields   map[string]json.RawMessage
	errs     []error
}

func (p *fieldParser) fail(key, format string, args ...any) {
	p.errs = append(p.errs, configerr.Errorf(p.scenario, key, format, args...))
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func (p *fieldParser) get(key string) (json.RawMessage, bool) {
	raw, ok := p.fields[key]
	if !ok || isNull(raw) {
		return nil, false
	}
	return raw, true
}

func (p *fieldParser) required(keys ...string) {
	for _, k := range keys {
		if _, ok := p.get(k); !ok {
			p.fail(k, "is required")
		}
	}
}

func (p *fieldParser) str(key string, dst *string) {
	raw, ok := p.get(key)
	if !ok {
		return
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		p.fail(key, "must be a string, got %s", raw)
	}
}

func (p *fieldParser) integer(key string, dst *int64) {
	raw, ok := p.get(key)
	if !ok {
		return
	}
	v, err := parseInteger(raw)
	if err != nil {
		p.fail(key, "%v", err)
		return
	}
	*dst = v
}

// parseInteger accepts JSON numbers with no fractional part (JS numbers
// arrive as 5 or 5.0).
func parseInteger(raw json.RawMessage) (int64, error) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, fmt.Errorf("must be a number, got %s", raw)
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fmt.Errorf("must be a whole number, got %s", raw)
	}
	return int64(f), nil
}

func (p *fieldParser) duration(key string, dst *time.Duration) {
	raw, ok := p.get(key)
	if !ok {
		return
	}
	d, err := parseDurationJSON(raw)
	if err != nil {
		p.fail(key, "%v", err)
		return
	}
	*dst = d
}

func (p *fieldParser) strMap(key string, dst *map[string]string) {
	raw, ok := p.get(key)
	if !ok {
		return
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		p.fail(key, "must be an object of strings, got %s", raw)
		return
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case string:
			out[k] = x
		case float64, bool:
			out[k] = fmt.Sprint(x)
		default:
			p.fail(key+"."+k, "must be a string, number or boolean")
		}
	}
	*dst = out
}

// stages parses scenario stages; duration and target are both required.
func (p *fieldParser) stages(key string, dst *[]Stage) {
	raw, ok := p.get(key)
	if !ok {
		return
	}
	st, errs := parseStages(raw, p.scenario, key, true)
	p.errs = append(p.errs, errs...)
	*dst = st
}

// parseStages parses a JSON array of {duration, target, name}. With strict,
// a missing duration or target is an error; otherwise (the `stages`
// shortcut) stages without a duration are dropped and a missing target is 0.
func parseStages(raw json.RawMessage, scenario, key string, strict bool) ([]Stage, []error) {
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, []error{configerr.Errorf(scenario, key, "must be an array of {duration, target} objects")}
	}
	var (
		out  []Stage
		errs []error
	)
	for i, it := range items {
		k := fmt.Sprintf("%s[%d]", key, i)
		sp := &fieldParser{scenario: scenario, fields: it}
		var s Stage
		if _, ok := sp.get("duration"); !ok {
			if strict {
				sp.fail(k+".duration", "is required")
			} else {
				continue
			}
		}
		if _, ok := sp.get("target"); !ok && strict {
			sp.fail(k+".target", "is required")
		}
		sp.duration("duration", &s.Duration)
		sp.integer("target", &s.Target)
		sp.str("name", &s.Name)
		for _, e := range sp.errs {
			var ce *configerr.Error
			if errors.As(e, &ce) && !strings.HasPrefix(ce.Key, k) {
				ce.Key = k + "." + ce.Key
			}
		}
		errs = append(errs, sp.errs...)
		out = append(out, s)
	}
	return out, errs
}

// --- validation -------------------------------------------------------------

type validator struct {
	scenario string
	errs     []error
}

func (v *validator) check(ok bool, key, format string, args ...any) {
	if !ok {
		v.errs = append(v.errs, configerr.Errorf(v.scenario, key, format, args...))
	}
}

func (v *validator) err() error { return errors.Join(v.errs...) }

func (b *BaseConfig) validate() *validator {
	v := &validator{scenario: b.Name}
	v.check(scenarioName.MatchString(b.Name), "", "invalid scenario name (allowed: letters, digits, '_' and '-')")
	v.check(b.StartTime >= 0, "startTime", "must not be negative, got %s", b.StartTime)
	v.check(b.GracefulStop >= 0, "gracefulStop", "must not be negative, got %s", b.GracefulStop)
	v.check(b.Exec != "", "exec", "must name an exported function, got an empty string")
	return v
}

func validateMaxDuration(v *validator, key string, d time.Duration) {
	v.check(d >= time.Second, key, "must be at least 1s, got %s", d)
}
