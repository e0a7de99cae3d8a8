package main

import (
	"context"
	"fmt"
)

// mergeCmd is not built yet; its owner replaces this file.
func mergeCmd(_ context.Context, _ []string, env cliEnv) int {
	fmt.Fprintln(env.Stderr, "buzzload merge: not implemented yet")
	return 2
}
