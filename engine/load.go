// Loading the script: the bundle, the consolidated options, the thresholds.

package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/thresholds"
)

// load compiles the script, runs the first init and consolidates the
// options, scenarios, thresholds and the execution plan.
func (r *runner) load(ctx context.Context) error {
	_, err := r.loadConsolidated(ctx)
	return err
}

// loadConsolidated is load, returning what Consolidate decided.
func (r *runner) loadConsolidated(ctx context.Context) (Consolidated, error) {
	b, err := jshost.NewBundle(ctx, jshost.Config{
		Filename: r.cfg.Script, Source: r.cfg.Source, Registry: r.cfg.Registry, Helpers: r.cfg.Helpers,
		Env: r.cfg.ScriptEnv, Logger: r.log, Collector: r.coll, Control: (*control)(r), ReadFile: r.cfg.ReadFile,
	})
	if err != nil {
		return Consolidated{}, err
	}
	r.bundle = b
	r.bundleRef.Store(b)

	exports := b.Exports
	if exports == nil {
		exports = []string{}
	}
	c, err := Consolidate(Layers{
		File: r.cfg.ConfigFile, FileName: r.cfg.ConfigFileName, Script: b.Options,
		Archived: r.cfg.ArchiveLayers, Env: r.cfg.Env, CLI: r.cfg.CLI, SummaryMode: r.cfg.SummaryMode, Exports: exports,
	})
	for _, w := range c.Warnings {
		r.log.Log(jshost.LevelWarn, w)
	}
	if err != nil {
		return c, err
	}
	r.opts, r.tuple, r.plan = c.Options, c.Tuple, c.Plan
	r.testWide = metrics.TagsFromMap(r.opts.Tags)
	r.stageNames = stageNames(r.plan)

	if len(r.opts.Thresholds) > 0 {
		// With --no-thresholds the definitions are still parsed, and what
		// would have been an error is a warning (as k6 does).
		raw, err := json.Marshal(r.opts.Thresholds)
		var tc thresholds.Config
		if err == nil {
			err = json.Unmarshal(raw, &tc)
		}
		var set *thresholds.Set
		if err == nil {
			set, err = thresholds.New(tc, r.reg)
		}
		switch {
		case err != nil && r.cfg.NoThresholds:
			r.log.Log(jshost.LevelWarn, "thresholds (not evaluated, --no-thresholds): "+err.Error())
		case err != nil:
			return c, configerr.New(fmt.Errorf("thresholds: %w", err))
		case !r.cfg.NoThresholds:
			r.thr = set
			for _, w := range set.Warnings {
				r.log.Log(jshost.LevelWarn, w)
			}
		}
	}
	merged := c.Merged
	if err := b.SetMergedOptions(merged); err != nil {
		return c, err
	}
	r.merged = merged
	b.SetThrow(r.opts.Throw)
	b.SetSystemTags(jshost.NewSystemTags(r.opts.SystemTags))
	b.SetTestTags(r.opts.Tags)
	return c, nil
}
