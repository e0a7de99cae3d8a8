package main

import (
	"context"
	"fmt"
)

// relayCmd is not built yet; its owner replaces this file.
func relayCmd(_ context.Context, _ []string, env cliEnv) int {
	fmt.Fprintln(env.Stderr, "buzzload relay: not implemented yet")
	return 2
}
