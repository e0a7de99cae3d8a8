// Inspecting a test without running it: what `buzzload inspect` prints and
// what `buzzload archive` packs.

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/buzzload/buzzload/engine/executor"
	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/engine/metrics"
)

// Inspection is what loading a test finds: its consolidated options and
// plan, and the files its first init read.
type Inspection struct {
	Consolidated
	// Script is the main script's absolute path.
	Script string
	// Files are the local files read by the first init, by absolute path.
	Files map[string][]byte
}

// Inspect compiles the script, runs its init once (__VU 0) and
// consolidates the options, scenarios, thresholds and plan as Run would,
// running no VU, setup or teardown. Errors map to exit codes with ExitCode.
func Inspect(ctx context.Context, cfg RunConfig) (*Inspection, error) {
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	r := &runner{cfg: cfg, now: time.Now}
	r.log = jshost.NewLogger(cfg.Stderr, jshost.LevelInfo)
	r.reg = metrics.NewRegistry()
	bi, err := r.reg.RegisterBuiltins()
	if err != nil {
		return nil, err
	}
	r.bi = bi
	r.coll = metrics.NewCollector(r.reg, metrics.CollectorOptions{BatchSize: SampleBatch})
	c, err := r.loadConsolidated(ctx)
	if err != nil {
		return nil, err
	}
	return &Inspection{Consolidated: c, Script: r.bundle.MainPath(), Files: r.bundle.Files()}, nil
}

// RequirementsJSON is `inspect --execution-requirements`: the consolidated
// options plus maxVUs and totalDuration (k6's GetMaxPossibleVUs and the end
// of the plan, graceful stops and ramp-downs included). With withDefaults
// false the options no layer set show null, as k6 shows a script's.
func (in *Inspection) RequirementsJSON(withRequirements, withDefaults bool) (json.RawMessage, error) {
	var m map[string]any
	if err := json.Unmarshal(in.Merged, &m); err != nil {
		return nil, err
	}
	if !withDefaults {
		for _, k := range in.Defaulted {
			m[k] = nil
		}
	}
	for _, k := range in.Unset {
		m[k] = nil
	}
	switch {
	case !withRequirements:
		// k6 v2.2.0 (observed): inspect prints the options as written —
		// scenarios only when given, iterations before the bare-vus rule.
		m["scenarios"], m["iterations"] = nil, nil
		if w := in.Written; w.Scenarios != nil {
			var sc any
			if json.Unmarshal(w.Scenarios, &sc) == nil {
				m["scenarios"] = sc
			}
		}
		if in.Written.Iterations != nil {
			m["iterations"] = *in.Written.Iterations
		}
	case in.Exec.Scenarios == nil:
		// Its execution requirements print the scenario the shortcuts
		// made with only what they set (the rest null).
		if sc, ok := m["scenarios"].(map[string]any); ok {
			for _, v := range sc {
				if o, ok := v.(map[string]any); ok {
					shortcutFieldsOnly(o, in.Exec)
				}
			}
		}
	}
	// k6 lists the system tags sorted (a set).
	if tags, ok := m["systemTags"].([]any); ok {
		sort.Slice(tags, func(i, j int) bool { return fmt.Sprint(tags[i]) < fmt.Sprint(tags[j]) })
	}
	var tail [][2]any
	if withRequirements {
		tail = [][2]any{{"totalDuration", in.Plan.MaxDuration.String()}, {"maxVUs", in.Plan.MaxVUs}}
	}
	return k6Inspect(m, tail)
}

// shortcutFieldsOnly nulls the fields of a shortcut scenario that no
// shortcut option set (k6 v2.2.0's --execution-requirements, observed).
func shortcutFieldsOnly(o map[string]any, e executor.ExecutionOptions) {
	o["startTime"], o["gracefulStop"], o["exec"] = nil, nil, nil
	set := func(k string, isSet bool) {
		if !isSet {
			o[k] = nil
		}
	}
	switch o["executor"] {
	case executor.SharedIterations:
		set("vus", e.VUs != nil)
		set("maxDuration", e.Duration != nil)
	case executor.ConstantVUs:
		set("vus", e.VUs != nil)
	case executor.RampingVUs:
		set("startVUs", e.VUs != nil)
		set("gracefulRampDown", false)
	case executor.PerVUIterations:
		set("vus", false)
		set("iterations", false)
		set("maxDuration", false)
	}
}
