package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), args, cliEnv{Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// k6's form: `version` and `--version` alike, "(commit/..., go..., os/arch)",
// the built-in module listed; --json with k6's fields (issue 29 item 5).
func TestVersionPrintsVersionAndCommit(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != 0 || !regexp.MustCompile(`^buzzload \S+ \(commit/\S+, go[0-9.]+, [a-z0-9]+/[a-z0-9]+\)\nExtensions:\n  .* k6/x/buzz \[js\]\n$`).MatchString(out) {
		t.Fatalf("version: code %d, output %q", code, out)
	}
	if code2, out2, _ := runCLI(t, "--version"); code2 != 0 || out2 != out {
		t.Fatalf("--version: code %d, %q, want %q", code2, out2, out)
	}
	code, out, _ = runCLI(t, "version", "--json")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["commit"] == nil || v["go_os"] == nil || v["go_arch"] == nil || v["version"] == nil {
		t.Fatalf("version --json: code %d, %q", code, out)
	}
}

func TestUnknownCommandFails(t *testing.T) {
	code, _, errs := runCLI(t, "frobnicate")
	if code != 2 || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
}
