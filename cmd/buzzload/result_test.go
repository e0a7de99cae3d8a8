package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A TestRun gives every runner the same arguments and env, so the result
// path comes from BUZZLOAD_RESULT with the instance's own id filled in;
// --result wins over the variable.
func TestResultPathFromEnvWithInstanceID(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "t.js")
	if err := os.WriteFile(script, []byte("export const options = { iterations: 1 };\nexport default function () {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		env := cliEnv{Stdout: &out, Stderr: &errb, Env: []string{"BUZZLOAD_RESULT=" + filepath.Join(dir, "result-{instance_id}.json")}}
		if code := dispatch(context.Background(), append([]string{"run", "-q"}, args...), env); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	}
	run("--tag", "instance_id=2", script)
	if f := readResult(t, filepath.Join(dir, "result-2.json")); f.Run.InstanceID != "2" {
		t.Fatalf("instance id %q", f.Run.InstanceID)
	}
	run("--tag", "instance_id=3", "--result", filepath.Join(dir, "flag.json"), script)
	if _, err := os.Stat(filepath.Join(dir, "result-3.json")); err == nil {
		t.Fatal("the variable was used although --result was given")
	}
	readResult(t, filepath.Join(dir, "flag.json"))
}
