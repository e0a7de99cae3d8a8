package main

import (
	"context"
	"fmt"
)

// teardownCmd is not built yet; its owner replaces this file.
func teardownCmd(_ context.Context, _ []string, env cliEnv) int {
	fmt.Fprintln(env.Stderr, "buzzload teardown: not implemented yet")
	return 2
}
