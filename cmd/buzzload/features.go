package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine/features"
)

const featuresUsage = `usage: buzzload features [--json]

Lists the feature flags --features (or K6_FEATURES, or "features" in the
JSON config) can enable, with their lifecycle, as k6 v2.2's features does.

flags:
`

// featuresCmd is k6 v2.2's `features`: a table, or with --json an array
// of {feature, lifecycle, description} (the same bytes as k6 v2.2.0's,
// observed).
func featuresCmd(_ context.Context, args []string, env cliEnv) int {
	fs := pflag.NewFlagSet("features", pflag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	asJSON := fs.Bool("json", false, "output in JSON format")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return 255
	}
	if *help {
		fmt.Fprint(env.Stdout, featuresUsage+fs.FlagUsages())
		return 0
	}
	if *asJSON {
		type entry struct {
			Feature     string `json:"feature"`
			Lifecycle   string `json:"lifecycle"`
			Description string `json:"description"`
		}
		out := make([]entry, len(features.All))
		for i, f := range features.All {
			out[i] = entry{f.Name, f.Lifecycle, f.Description}
		}
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return 255
		}
		return 0
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "FEATURE\tLIFECYCLE\tDESCRIPTION")
	for _, f := range features.All {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, f.Lifecycle, f.Description)
	}
	if err := tw.Flush(); err != nil {
		return 255
	}
	return 0
}
