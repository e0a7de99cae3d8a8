// The scheduler's observer: stage windows for thresholds, dropped iterations, VU warnings.

package engine

import (
	"fmt"

	"github.com/buzzload/buzzload/engine/executor"
	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/engine/metrics"
)

// observer turns scheduler events into samples and threshold windows.
type observer runner

func (o *observer) ScenarioStarted(*executor.ScenarioInfo) {}

func (o *observer) ScenarioEnded(*executor.ScenarioInfo) {}

func (o *observer) StageStarted(ev executor.StageEvent) {
	r := (*runner)(o)
	if r.ev == nil || r.sameRun(ev.Scenario, ev.Index-1, ev.Index) {
		return // the window of the named run opened at its first stage
	}
	r.ev.StageStarted(ev.Scenario, ev.Index, ev.Name, ev.Time)
}

func (o *observer) StageEnded(ev executor.StageEvent) {
	r := (*runner)(o)
	if r.ev == nil {
		return
	}
	if !ev.Interrupted && r.sameRun(ev.Scenario, ev.Index, ev.Index+1) {
		return // judged at the end of the named run's last stage
	}
	r.coll.Flush()
	if out := r.ev.StageEnded(ev.Scenario, ev.Index, ev.Name, ev.Time); out.Abort {
		r.log.Log(jshost.LevelError, "stage thresholds crossed with abortOnFail; stopping the test")
		r.cancelRun(errThresholdAbort)
	}
}

// sameRun reports whether stages a and b of a scenario carry the same
// non-empty name: consecutive stages named alike are one window of the
// windowed thresholds (a Buzz step is its ramp and its hold).
func (r *runner) sameRun(scenario string, a, b int) bool {
	names := r.stageNames[scenario]
	return a >= 0 && b < len(names) && names[a] != "" && names[a] == names[b]
}

// stageNames lists the stage names of every scenario that has stages.
func stageNames(p *executor.Plan) map[string][]string {
	out := map[string][]string{}
	for _, c := range p.Scenarios {
		st := c.StageList()
		names := make([]string, len(st))
		for i, s := range st {
			names[i] = s.Name
		}
		out[c.Base().Name] = names
	}
	return out
}

func (o *observer) DroppedIterations(d executor.Dropped) {
	r := (*runner)(o)
	tags := r.testWide.With("scenario", d.Scenario)
	if d.VUIDInInstance != 0 && r.systemTag("vu") {
		tags = tags.With("vu", fmt.Sprint(d.VUIDInInstance))
	}
	r.coll.Add(metrics.Sample{Metric: r.bi.DroppedIterations, Tags: tags, Time: d.Time, Value: float64(d.Count)})
}

func (o *observer) InsufficientVUs(scenario string, maxVUs int64) {
	(*runner)(o).log.Log(jshost.LevelWarn, fmt.Sprintf("Insufficient VUs, reached %d active VUs and cannot initialize more", maxVUs), "executor", "arrival-rate", "scenario", scenario)
}

func (r *runner) systemTag(name string) bool {
	for _, t := range r.opts.SystemTags {
		if t == name {
			return true
		}
	}
	return false
}
