// Package features is k6 v2.1's opt-in feature flags (release notes
// v2.1.0, "feature-flag system"; behaviour read in k6 v2.2.0's
// internal/features and internal/cmd/features.go and observed, 6 Dec
// 2026): a flag is enabled from exactly one surface — the --features flag,
// else the environment (K6_FEATURES, or a legacy variable that is an alias
// of one), else the JSON config's "features" —, an unknown name is logged
// as an error and skipped, each enabled one is logged, and enabled flags
// become run tags k6_feature_<snake_name>="true".
package features

import (
	"slices"
	"strconv"
	"strings"
)

// Flag is one feature flag.
type Flag struct {
	Name, Lifecycle, Description string
}

// All are k6 v2.2's flags, in `k6 features`' order (lifecycle, then name).
var All = []Flag{
	{"freeze-env", "Experimental", "Freeze __ENV object to prevent modifications from JS code"},
	{"merge-run-tags", "Experimental", "Merge run tags across config layers instead of replacing"},
	{"native-histograms", "Experimental", "Use native histograms for trend metrics"},
}

// envAliases are legacy variables honoured as a flag (when true).
var envAliases = map[string]string{"K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": "native-histograms"}

// Source is one surface's values (each may be comma-separated) and
// whether the surface was given at all.
type Source struct {
	Values   []string
	Supplied bool
}

// Logf receives a log line: level (info, warning, error), message and
// key, value fields.
type Logf func(level, msg string, fields ...string)

// Flags are the resolved flags.
type Flags struct {
	FreezeEnv, MergeRunTags, NativeHistograms bool
	// Active are the enabled flags' names, sorted.
	Active []string
}

// Resolve enables the flags of the winning surface: cli, else env (its
// K6_FEATURES and aliases), else json.
func Resolve(cli Source, env map[string]string, json Source, logf Logf) Flags {
	aliasOf := map[string]string{}
	envSrc := Source{}
	for v, name := range envAliases {
		if b, err := strconv.ParseBool(env[v]); err == nil && b {
			envSrc.Values = append(envSrc.Values, name)
			envSrc.Supplied = true
			aliasOf[name] = v
		}
	}
	if v, ok := env["K6_FEATURES"]; ok {
		envSrc.Values = append(envSrc.Values, v)
		envSrc.Supplied = true
	}
	var win Source
	source := ""
	switch {
	case cli.Supplied:
		win, source = cli, "cli"
	case envSrc.Supplied:
		win, source = envSrc, "env"
	case json.Supplied:
		win, source = json, "json"
	default:
		return Flags{Active: []string{}}
	}
	var f Flags
	seen := map[string]bool{}
	for _, raw := range win.Values {
		for _, name := range strings.Split(raw, ",") {
			name = strings.TrimSpace(name)
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			src := source
			if v, ok := aliasOf[name]; ok && source == "env" {
				src = "env_legacy_alias"
				logf("warning", "Legacy env var detected, use --features or K6_FEATURES instead",
					"env", v, "feature", name, "lifecycle", "deprecated_alias", "source", src)
			}
			if !slices.ContainsFunc(All, func(fl Flag) bool { return fl.Name == name }) {
				logf("error", "Unknown feature flag", "feature", name, "outcome", "unknown", "source", src)
				continue
			}
			logf("info", "Experimental feature enabled", "feature", name, "lifecycle", "experimental")
			f.Active = append(f.Active, name)
			switch name {
			case "freeze-env":
				f.FreezeEnv = true
			case "merge-run-tags":
				f.MergeRunTags = true
			case "native-histograms":
				f.NativeHistograms = true
			}
		}
	}
	slices.Sort(f.Active)
	if f.Active == nil {
		f.Active = []string{}
	}
	return f
}

// Tags are the enabled flags' run tags: k6_feature_<name with _>="true".
func (f Flags) Tags() map[string]string {
	out := map[string]string{}
	for _, n := range f.Active {
		out["k6_feature_"+strings.ReplaceAll(n, "-", "_")] = "true"
	}
	return out
}
