package main

import (
	"context"
	"fmt"
)

// runCmd is not built yet; its owner replaces this file.
func runCmd(_ context.Context, _ []string, env cliEnv) int {
	fmt.Fprintln(env.Stderr, "buzzload run: not implemented yet")
	return 2
}
