// Package thresholds parses k6 threshold definitions and judges them over
// the sinks of a metrics.Collector.
//
// Use:
//
//	var cfg thresholds.Config            // json.Unmarshal(options.thresholds)
//	set, err := thresholds.New(cfg, reg) // *thresholds.Error → exit code 104
//	ev, err := thresholds.NewEvaluator(set, collector, thresholds.Options{RunStart: start})
//	every 2 s:  if out := ev.Check(); out.Abort { abort the run, exit 99 }
//	ramp stages: ev.StageStarted(...); out := ev.StageEnded(...)
//	at the end: out := ev.Final()          // len(out.Failed) > 0 → exit 99
//	summary:    ev.Statuses(), ev.StageVerdicts()
//
// Semantics follow the k6 spec §4: the grammar `<method> <op> <number>`,
// per-type methods, a missing value passes, periodic checks skip empty
// sinks and the final one includes them, and abortOnFail aborts on a
// periodic check once delayAbortEval is behind the run time.
//
// Extension: a threshold object with `window: 'stage'` (optionally
// `scenario: 'name'`) is judged when each ramp stage ends, over only the
// samples its selector matches that were recorded during that stage.
// `scenario` names whose stage events open and close the window; it does
// not filter samples (put `scenario:name` in the selector for that, e.g.
// `http_req_duration{scenario:api}`). Without `scenario` every scenario's
// stage events cut the window, so name one when more than one has stages.
// Scenarios that start together with the same stage durations share their
// stage boundaries, so one of them can clock a window over the samples of
// all. A windowed threshold fails the run when any stage failed it; it is
// not part of the periodic checks.
//
// Named runs: consecutive stages of a scenario that carry the same
// non-empty `name` are one window, opened at the first one's start and
// judged at the last one's end (the runner skips the inner end/start
// pairs; see Evaluator.StageEnded). Stages [{name:'a'},{name:'a'},
// {name:'b'}] are judged as two windows, 'a' and 'b'. A run the test stops
// early is judged at the stop.
package thresholds

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// Error is a bad threshold definition. It names the metric key and the
// expression; the runner exits with code 104 on it.
type Error struct {
	Metric string
	Expr   string
	Err    error
}

func (e *Error) Error() string {
	if e.Expr == "" {
		return fmt.Sprintf("threshold on %q: %v", e.Metric, e.Err)
	}
	return fmt.Sprintf("threshold on %q: %q: %v", e.Metric, e.Expr, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Spec is one threshold as declared: an expression string, or an object
// {threshold, abortOnFail, delayAbortEval, window, scenario}.
type Spec struct {
	Threshold      string `json:"threshold"`
	AbortOnFail    bool   `json:"abortOnFail,omitempty"`
	DelayAbortEval string `json:"delayAbortEval,omitempty"`
	// Window is "" (whole run) or "stage" (our extension).
	Window string `json:"window,omitempty"`
	// Scenario limits a windowed threshold to one scenario's stages.
	Scenario string `json:"scenario,omitempty"`
}

// UnmarshalJSON accepts a string or an object; unknown object keys are errors.
func (s *Spec) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = Spec{Threshold: str}
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("a threshold must be a string or an object, got %s", b)
	}
	var out Spec
	for k, v := range raw {
		var err error
		switch k {
		case "threshold":
			err = json.Unmarshal(v, &out.Threshold)
		case "abortOnFail":
			err = json.Unmarshal(v, &out.AbortOnFail)
		case "delayAbortEval":
			var d any
			if err = json.Unmarshal(v, &d); err == nil {
				switch d := d.(type) {
				case string:
					out.DelayAbortEval = d
				case float64: // a number is milliseconds
					out.DelayAbortEval = strconv.FormatFloat(d, 'f', -1, 64) + "ms"
				case nil:
				default:
					err = fmt.Errorf("want a duration string")
				}
			}
		case "window":
			err = json.Unmarshal(v, &out.Window)
		case "scenario":
			err = json.Unmarshal(v, &out.Scenario)
		default:
			err = fmt.Errorf("unknown key")
		}
		if err != nil {
			return fmt.Errorf("threshold key %q: %w", k, err)
		}
	}
	*s = out
	return nil
}

// Config is options.thresholds: metric key → thresholds.
type Config map[string][]Spec

// UnmarshalJSON reads the object, with errors that name the metric key.
func (c *Config) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("thresholds: want an object of metric name to array: %w", err)
	}
	out := make(Config, len(raw))
	for k, v := range raw {
		var specs []Spec
		if err := json.Unmarshal(v, &specs); err != nil {
			return &Error{Metric: k, Err: fmt.Errorf("want an array of thresholds: %w", err)}
		}
		out[k] = specs
	}
	*c = out
	return nil
}

// Op is a comparison operator.
type Op uint8

// Operators, in the order k6 searches for them.
const (
	OpLE Op = iota + 1
	OpLT
	OpGE
	OpGT
	OpEq // === and ==
	OpNE
)

var opTokens = []struct {
	tok string
	op  Op
}{{"<=", OpLE}, {"<", OpLT}, {">=", OpGE}, {">", OpGT}, {"===", OpEq}, {"==", OpEq}, {"!=", OpNE}}

// Compare reports whether v op target holds.
func (o Op) Compare(v, target float64) bool {
	switch o {
	case OpLE:
		return v <= target
	case OpLT:
		return v < target
	case OpGE:
		return v >= target
	case OpGT:
		return v > target
	case OpEq:
		return v == target
	case OpNE:
		return v != target
	}
	return false
}

// Expr is a parsed expression such as `p(95)<200`.
type Expr struct {
	Source string
	Stat   metrics.Stat
	Op     Op
	Value  float64
}

// ParseExpr parses `<method> <op> <number>`: the first operator found (in
// the order <=, <, >=, >, ===, ==, !=) splits the text, both sides are
// trimmed of spaces, the method is count, rate, value, avg, min, max, med or
// p(N), and the number goes through strconv.ParseFloat.
func ParseExpr(s string) (Expr, error) {
	for _, t := range opTokens {
		left, right, ok := strings.Cut(s, t.tok)
		if !ok {
			continue
		}
		method, num := strings.TrimSpace(left), strings.TrimSpace(right)
		st, err := metrics.ParseStat(method)
		if err != nil {
			return Expr{}, fmt.Errorf("malformed threshold expression: %w", err)
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return Expr{}, fmt.Errorf("malformed threshold expression: value %q is not a number", num)
		}
		return Expr{Source: s, Stat: st, Op: t.op, Value: v}, nil
	}
	return Expr{}, errors.New("malformed threshold expression: no operator (<=, <, >=, >, ===, ==, !=)")
}

// Threshold is one validated threshold.
type Threshold struct {
	// Key is the metric key as written (`name` or `name{k:v}`).
	Key    string
	Metric *metrics.Metric
	Expr
	AbortOnFail    bool
	DelayAbortEval time.Duration
	// Window is "" or "stage"; Scenario limits a stage window.
	Window   string
	Scenario string
	// Index is the position within its key's array.
	Index int
}

// Set is every threshold of a test, sorted by key then declaration order.
type Set struct {
	Thresholds []*Threshold
	// Warnings are problems k6 only warns about, such as a selector on vu or
	// iter (metadata, so it never matches).
	Warnings []string
}

// New validates cfg against the registry: each key must parse and name an
// existing metric, each expression must parse and use a method the metric's
// type supports. The first problem is returned as *Error.
func New(cfg Config, reg *metrics.Registry) (*Set, error) {
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	set := &Set{}
	for _, key := range keys {
		sel, err := metrics.ParseSelector(key)
		if err != nil {
			return nil, &Error{Metric: key, Err: err}
		}
		m := reg.Get(sel.Metric)
		if m == nil {
			return nil, &Error{Metric: key, Err: fmt.Errorf("metric %q does not exist", sel.Metric)}
		}
		for _, tag := range []string{"vu", "iter"} {
			if _, ok := sel.Tags.Get(tag); ok {
				set.Warnings = append(set.Warnings, fmt.Sprintf("threshold on %q selects on %q, which is metadata and never matches", key, tag))
			}
		}
		for i, sp := range cfg[key] {
			th, err := build(key, m, i, sp)
			if err != nil {
				return nil, &Error{Metric: key, Expr: sp.Threshold, Err: err}
			}
			set.Thresholds = append(set.Thresholds, th)
		}
	}
	return set, nil
}

func build(key string, m *metrics.Metric, i int, sp Spec) (*Threshold, error) {
	ex, err := ParseExpr(sp.Threshold)
	if err != nil {
		return nil, err
	}
	if !ex.Stat.AllowedFor(m.Type) {
		return nil, fmt.Errorf("aggregation %q is not supported by %s metric %q (%s)", ex.Stat.Name, m.Type, m.Name, allowedFor(m.Type))
	}
	th := &Threshold{Key: key, Metric: m, Expr: ex, AbortOnFail: sp.AbortOnFail, Window: sp.Window, Scenario: sp.Scenario, Index: i}
	if sp.DelayAbortEval != "" {
		d, err := parseDuration(sp.DelayAbortEval)
		if err != nil {
			return nil, fmt.Errorf("delayAbortEval: %w", err)
		}
		th.DelayAbortEval = d
	}
	switch sp.Window {
	case "", "stage":
	default:
		return nil, fmt.Errorf("window %q: the only window is \"stage\"", sp.Window)
	}
	if sp.Scenario != "" && sp.Window == "" {
		return nil, errors.New("scenario is only allowed with window: 'stage'")
	}
	return th, nil
}

func allowedFor(t metrics.Type) string {
	switch t {
	case metrics.Counter:
		return "use count or rate"
	case metrics.Gauge:
		return "use value"
	case metrics.Rate:
		return "use rate"
	default:
		return "use avg, min, max, med or p(N)"
	}
}

// parseDuration reads a Go duration ("10s", "1m30s") or a bare number of
// milliseconds.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		// Above MaxInt64 ns the conversion below has no defined result.
		if f < 0 || math.IsNaN(f) || f*float64(time.Millisecond) >= math.MaxInt64 {
			return 0, fmt.Errorf("%q is not a valid duration", s)
		}
		return time.Duration(f * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a valid duration", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// Keys returns the distinct metric keys of whole-run thresholds.
func (s *Set) Keys() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range s.Thresholds {
		if t.Window == "" && !seen[t.Key] {
			seen[t.Key] = true
			out = append(out, t.Key)
		}
	}
	return out
}
