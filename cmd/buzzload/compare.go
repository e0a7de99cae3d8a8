package main

import (
	"context"
	"fmt"
)

// compareCmd is not built yet; its owner replaces this file.
func compareCmd(_ context.Context, _ []string, env cliEnv) int {
	fmt.Fprintln(env.Stderr, "buzzload compare: not implemented yet")
	return 2
}
