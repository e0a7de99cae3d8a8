package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version and commit are set at build time with -ldflags (see the Makefile).
var (
	version = "dev"
	commit  = ""
)

// versionCmd is `buzzload version [--json]` and `buzzload --version`, in
// k6's form: "k6 v1.8.1 (commit/devel, go1.26.8, linux/amd64)", and with
// --json k6's fields. The Buzz module is built in (k6 lists xk6
// extensions the same way).
func versionCmd(_ context.Context, args []string, env cliEnv) int {
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
	for _, a := range args {
		switch a {
		case "--json":
			b, _ := json.Marshal(map[string]any{"version": version, "commit": c, "go_version": runtime.Version(),
				"go_os": runtime.GOOS, "go_arch": runtime.GOARCH,
				"extensions": []map[string]string{{"module": "github.com/buzzload/buzzload", "version": version, "import": "k6/x/buzz", "type": "js"}}})
			fmt.Fprintln(env.Stdout, string(b))
			return 0
		case "-h", "--help":
			fmt.Fprintln(env.Stdout, "usage: buzzload version [--json]   (also buzzload --version)")
			return 0
		default:
			fmt.Fprintf(env.Stderr, "buzzload version: unknown argument %q (want --json)\n", a)
			return 2
		}
	}
	fmt.Fprintf(env.Stdout, "buzzload %s (commit/%s, %s, %s/%s)\nExtensions:\n  github.com/buzzload/buzzload %s, k6/x/buzz [js]\n",
		version, c, runtime.Version(), runtime.GOOS, runtime.GOARCH, version)
	return 0
}
