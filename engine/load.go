// Loading the script: the bundle, the consolidated options, the thresholds.

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/features"
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
	r.resolveFeatures()
	b, err := jshost.NewBundle(ctx, jshost.Config{
		Filename: r.cfg.Script, Source: r.cfg.Source, Registry: r.cfg.Registry, Helpers: r.cfg.Helpers,
		Env: r.cfg.ScriptEnv, Logger: r.log, Collector: r.coll, Control: (*control)(r), ReadFile: r.cfg.ReadFile,
		FreezeEnv: r.features.FreezeEnv,
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
		MergeRunTags: r.features.MergeRunTags,
	})
	if raw := b.Options; len(raw) > 0 {
		var probe struct {
			Features json.RawMessage `json:"features"`
		}
		if json.Unmarshal(raw, &probe) == nil && len(probe.Features) > 0 && string(probe.Features) != "null" {
			r.log.Log(jshost.LevelWarn, "Feature flags in script options are not supported; use --features, K6_FEATURES, or the JSON config", "source", "options")
		}
	}
	for _, w := range c.Warnings {
		r.log.Log(jshost.LevelWarn, w)
	}
	if !r.cfg.NoDeriveWarnings {
		for _, w := range c.DeriveWarnings {
			r.log.Log(jshost.LevelWarn, w)
		}
	}
	if err != nil {
		return c, err
	}
	r.opts, r.tuple, r.plan = c.Options, c.Tuple, c.Plan
	if ft := r.features.Tags(); len(ft) > 0 {
		// k6 v2.1: every enabled feature flag is a run tag (a fresh map:
		// the consolidated options share theirs).
		tags := maps.Clone(r.opts.Tags)
		if tags == nil {
			tags = map[string]string{}
		}
		maps.Copy(tags, ft)
		r.opts.Tags = tags
	}
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

// resolveFeatures enables k6 v2.1's feature flags from --features, else
// the environment (the process's and -e's: K6_FEATURES and its legacy
// aliases), else the config file's "features" (features.Resolve), logs
// each as k6 does, and puts the enabled ones in the script's K6_FEATURES
// (k6 propagates them so __ENV and archives carry them).
func (r *runner) resolveFeatures() {
	env := maps.Clone(r.cfg.ProcessEnv)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, r.cfg.ScriptEnv)
	var file features.Source
	if len(r.cfg.ConfigFile) > 0 {
		var c struct {
			Features []string `json:"features"`
		}
		if json.Unmarshal(r.cfg.ConfigFile, &c) == nil && c.Features != nil {
			file = features.Source{Values: c.Features, Supplied: true}
		}
	}
	r.features = features.Resolve(r.cfg.Features, env, file, func(level, msg string, fields ...string) {
		r.log.Log(jshost.ParseLevel(level, jshost.LevelInfo), msg, fields...)
	})
	scriptEnv := maps.Clone(r.cfg.ScriptEnv)
	if scriptEnv == nil {
		scriptEnv = map[string]string{}
	}
	delete(scriptEnv, "K6_FEATURES")
	if len(r.features.Active) > 0 {
		scriptEnv["K6_FEATURES"] = strings.Join(r.features.Active, ",")
	}
	r.cfg.ScriptEnv = scriptEnv
}
