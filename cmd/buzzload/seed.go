package main

import (
	"context"
	"fmt"
)

// seedCmd is not built yet; its owner replaces this file.
func seedCmd(_ context.Context, _ []string, env cliEnv) int {
	fmt.Fprintln(env.Stderr, "buzzload seed: not implemented yet")
	return 2
}
