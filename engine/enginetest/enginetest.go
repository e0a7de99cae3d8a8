// Package enginetest runs a k6 script through engine.Run for the tests of
// the k6 modules (k6/http, k6/experimental/websockets), which check what a
// script sees through a whole run rather than a module in isolation.
package enginetest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine"
)

// Run writes src to a temporary script and runs it quietly with env as its
// __ENV, bounded by a minute; it returns the result and what the run wrote
// on stderr (its log lines).
func Run(t *testing.T, src string, env map[string]string) (engine.Result, string) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "script.js")
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := engine.Run(ctx, engine.RunConfig{Script: script, Quiet: true, SummaryMode: "disabled", Stdout: &out, Stderr: &errb, ScriptEnv: env})
	return res, errb.String()
}
