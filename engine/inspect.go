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
	// k6 lists the system tags sorted (a set).
	if tags, ok := m["systemTags"].([]any); ok {
		sort.Slice(tags, func(i, j int) bool { return fmt.Sprint(tags[i]) < fmt.Sprint(tags[j]) })
	}
	// handleSummaryTimeout is not in k6's options struct: k6 prints none.
	delete(m, "handleSummaryTimeout")
	var tail [][2]any
	if withRequirements {
		tail = [][2]any{{"totalDuration", in.Plan.MaxDuration.String()}, {"maxVUs", in.Plan.MaxVUs}}
	}
	return k6Inspect(m, tail)
}
