package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), args, cliEnv{Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

func TestVersionPrintsVersionAndCommit(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "buzzload ") || !strings.Contains(out, "commit ") {
		t.Fatalf("version: code %d, output %q", code, out)
	}
}

func TestUnknownCommandFails(t *testing.T) {
	code, _, errs := runCLI(t, "frobnicate")
	if code != 2 || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
}
