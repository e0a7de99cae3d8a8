// Package k6options turns a scenario file into k6 options (issue 3): one
// ramping-vus scenario per population, the [abort] rules as thresholds,
// and the script's overrides laid over them. Pure data in, data out.
package k6options

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/buzzload/buzzload/modules/models"
	"github.com/buzzload/buzzload/modules/models/desktop"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Population is one ramping-vus scenario of a loaded scenario file.
type Population struct {
	// Name is the k6 scenario name, Exec the exported function it runs.
	Name, Exec string
	Kind       scenario.Kind
}

// Populations are the kinds in the order options lists them.
var Populations = []Population{
	{Name: "humans", Exec: "human", Kind: scenario.KindHuman},
	{Name: "desktop", Exec: "desktop", Kind: scenario.KindDesktop},
	{Name: "agents", Exec: "agent", Kind: scenario.KindAgent},
	{Name: "hot_authors", Exec: "hotAuthor", Kind: scenario.KindHotAuthor},
}

func PopulationOf(name string) (Population, bool) {
	for _, p := range Populations {
		if p.Name == name {
			return p, true
		}
	}
	return Population{}, false
}

// GracefulStop is the shutdown grace (buzz-LOADGEN "Abort": 15 s).
const GracefulStop = 15 * time.Second

// OpsOf lists the operations a population can emit: the per-operation
// abort thresholds are declared for these (a threshold on an operation that
// never happens has no value and passes).
func OpsOf(k scenario.Kind) []string {
	common := []string{relayclient.OpConnect, relayclient.OpAuth, relayclient.OpPublish, relayclient.OpSubscribeEOSE, models.OpDeliver,
		relayclient.OpBadFrame, relayclient.OpNotice}
	switch k {
	case scenario.KindHuman:
		return append(common, models.OpHistory)
	case scenario.KindDesktop:
		// the shared activity's root search is history; the desktop
		// client's own seeded-root search is http_query
		return append(append(common, models.OpHistory, relayclient.OpHTTPQuery), desktop.Ops...)
	case scenario.KindAgent:
		return append(common, relayclient.OpHTTPQuery, relayclient.OpHTTPEvents, models.OpTurnContext)
	case scenario.KindHotAuthor:
		return append(common, relayclient.OpHTTPQuery, relayclient.OpHTTPEvents, models.OpHotReply, models.OpThreadFetch)
	}
	return common
}

// Emits reports whether sc's populations can record op at all: an agent
// without turns makes no turn_context read, so a threshold on it would
// only print a vacuous line (issue 26 item 8).
func Emits(sc *scenario.Scenario, op string) bool {
	switch op {
	case models.OpTurnContext:
		return sc.Agent.Turn.PerHour > 0
	}
	return true
}

// ThresholdSpec is one k6 threshold object.
type ThresholdSpec struct {
	Threshold   string `json:"threshold"`
	AbortOnFail bool   `json:"abortOnFail,omitempty"`
	Window      string `json:"window,omitempty"`
	Scenario    string `json:"scenario,omitempty"`
}

// ScenarioOptions is one ramping-vus scenario of Options.
type ScenarioOptions struct {
	Executor         string           `json:"executor"`
	StartVUs         int              `json:"startVUs"`
	Stages           []scenario.Stage `json:"stages"`
	GracefulStop     string           `json:"gracefulStop"`
	GracefulRampDown string           `json:"gracefulRampDown"`
	Exec             string           `json:"exec"`
}

// Options is what sc.options() returns before the script's overrides.
type Options struct {
	Scenarios         map[string]ScenarioOptions `json:"scenarios"`
	Thresholds        map[string][]ThresholdSpec `json:"thresholds"`
	SummaryTrendStats []string                   `json:"summaryTrendStats"`
	SetupTimeout      string                     `json:"setupTimeout"`
}

// Build turns a scenario into k6 options: one ramping-vus scenario
// per population with clients in this shard (startVUs 0, two stages per
// ramp step, both named step-<i>, gracefulStop and gracefulRampDown 15 s),
// and the abort rules as thresholds:
//
//   - judged per step over its ramp and hold (window 'stage', abortOnFail,
//     the runner's named-stage windows), over every population's samples:
//     p99 of buzz_op_duration{op:X} for every op any population emits, the
//     error rate buzz_op_failed{op:X} for every op but deliver, and
//     buzz_client_exits count. The windows follow the stage events of the
//     first population present (`scenario`); every population starts
//     together with the same stage durations, so its steps are everyone's;
//   - over the whole run, what settles after the last hold
//     (buzz_op_duration{op:X,step:shutdown}, buzz_op_failed{op:X,step:shutdown})
//     by the same limits, and buzz_client_exits count<1, so a client cancelled
//     at the end of the grace fails the run (exit 99).
func Build(sc *scenario.Scenario, shard scenario.Shard) (*Options, []string) {
	o := &Options{Scenarios: map[string]ScenarioOptions{}, Thresholds: map[string][]ThresholdSpec{},
		SummaryTrendStats: []string{"avg", "min", "med", "max", "p(95)", "p(99)"}, SetupTimeout: "10m"}
	warnings := sc.Warnings()
	rules := sc.Abort.Rules()
	peak := sc.CountsAt(sc.PeakUsers(), shard)
	opSet := map[string]bool{}
	grace := GracefulStop.String()
	clock := ""
	for _, p := range Populations {
		if peak[p.Kind] == 0 {
			continue
		}
		if clock == "" {
			clock = p.Name
		}
		o.Scenarios[p.Name] = ScenarioOptions{Executor: "ramping-vus", StartVUs: 0, Stages: sc.Stages(p.Kind, shard),
			GracefulStop: grace, GracefulRampDown: grace, Exec: p.Exec}
		for _, op := range OpsOf(p.Kind) {
			if !Emits(sc, op) {
				continue
			}
			opSet[op] = true
		}
	}
	ops := make([]string, 0, len(opSet))
	for op := range opSet {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		for _, r := range rules {
			if !r.PerOp || !r.Covers(op) {
				continue
			}
			key := fmt.Sprintf("%s{op:%s}", r.Metric, op)
			o.Thresholds[key] = append(o.Thresholds[key], ThresholdSpec{Threshold: r.Threshold(), AbortOnFail: true,
				Window: "stage", Scenario: clock})
			key = fmt.Sprintf("%s{op:%s,step:%s}", r.Metric, op, report.ShutdownStep)
			o.Thresholds[key] = append(o.Thresholds[key], ThresholdSpec{Threshold: r.Threshold()})
		}
	}
	for _, r := range rules {
		if r.PerOp {
			continue
		}
		if clock != "" {
			o.Thresholds[r.Metric] = append(o.Thresholds[r.Metric], ThresholdSpec{Threshold: r.Threshold(),
				AbortOnFail: true, Window: "stage", Scenario: clock})
		}
		o.Thresholds[r.Metric] = append(o.Thresholds[r.Metric], ThresholdSpec{Threshold: r.Threshold()})
	}
	if sc.Abort.FailOnGeneratorSaturation {
		// generator.go counts a saturated step when it ends.
		o.Thresholds["buzz_generator_saturated"] = append(o.Thresholds["buzz_generator_saturated"], ThresholdSpec{Threshold: "count<1"})
	}
	return o, warnings
}

// ClockScenario is the population whose stage events the built windowed
// thresholds follow: the first of Populations among scenarios.
func ClockScenario(scenarios map[string]any) string {
	for _, p := range Populations {
		if _, ok := scenarios[p.Name]; ok {
			return p.Name
		}
	}
	return ""
}

// Merge lays the script's overrides over the built options: every
// top-level key replaces the built one, except `scenarios` (merged by name,
// each field replacing; null removes a scenario) and `thresholds` (merged by
// key; null removes a key).
func Merge(built *Options, overrides map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(built)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	clock := ClockScenario(asMap(out["scenarios"]))
	for k, v := range overrides {
		switch k {
		case "scenarios", "thresholds":
			ov, ok := v.(map[string]any)
			if !ok && v != nil {
				return nil, fmt.Errorf("options override %s: want an object", k)
			}
			base, _ := out[k].(map[string]any)
			if base == nil {
				base = map[string]any{}
			}
			for name, val := range ov {
				cur, isMap := base[name].(map[string]any)
				nv, nvMap := val.(map[string]any)
				switch {
				case val == nil:
					delete(base, name)
				case k == "scenarios" && isMap && nvMap:
					for f, fv := range nv {
						cur[f] = fv
					}
				default:
					base[name] = val
				}
			}
			out[k] = base
		default:
			out[k] = v
		}
	}
	// A script that drops the population clocking the step windows (say
	// humans: null) moves them to the next population, or they would never
	// be judged.
	if now := ClockScenario(asMap(out["scenarios"])); clock != "" && now != clock {
		for _, specs := range asMap(out["thresholds"]) {
			list, _ := specs.([]any)
			for _, sp := range list {
				if m, ok := sp.(map[string]any); ok && m["window"] == "stage" && m["scenario"] == clock {
					if now == "" {
						delete(m, "scenario")
					} else {
						m["scenario"] = now
					}
				}
			}
		}
	}
	return out, nil
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// OpThresholds are whole-run thresholds by the scenario's abort limits for
// the given ops: p99 of buzz_op_duration at most max_p99_ms, and (except
// deliver) buzz_op_failed at most max_error_rate, with abortOnFail after
// delayAbortEval (so a paced scenario on an arrival-rate executor, which has
// no stages to judge, still stops on a breach).
func OpThresholds(sc *scenario.Scenario, ops []string, delayAbortEval string) map[string][]map[string]any {
	out := map[string][]map[string]any{}
	for _, op := range ops {
		for _, r := range sc.Abort.Rules() {
			if !r.PerOp || !r.Covers(op) {
				continue
			}
			spec := map[string]any{"threshold": r.Threshold(), "abortOnFail": true}
			if delayAbortEval != "" {
				spec["delayAbortEval"] = delayAbortEval
			}
			key := fmt.Sprintf("%s{op:%s}", r.Metric, op)
			out[key] = append(out[key], spec)
		}
	}
	return out
}
