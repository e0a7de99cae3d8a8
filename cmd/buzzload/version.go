package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version and commit are set at build time with -ldflags (see the Makefile).
var (
	version = "dev"
	commit  = ""
)

func versionCmd(_ context.Context, _ []string, env cliEnv) int {
	c := commit
	if c == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	if c == "" {
		c = "unknown"
	}
	fmt.Fprintf(env.Stdout, "buzzload %s (commit %s, %s)\n", version, c, runtime.Version())
	return 0
}
