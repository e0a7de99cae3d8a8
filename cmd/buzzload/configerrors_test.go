package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A typo in a scenario file is one readable line naming the file, the key
// and the key meant, and exit 104, whichever command meets it (issue 47
// item 3: run printed a JS stack, plan exited 2, seed and teardown 1).
func TestAScenarioTypoIsOneLineAnd104Everywhere(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.toml")
	src := "run_id = \"typo\"\n[target]\nws_url = \"ws://127.0.0.1:1\"\nhttp_url = \"http://127.0.0.1:1\"\ncommunity_host_template = \"c{n}.{run}.localhost\"\n[population]\nhumanz = 3\n[[ramp]]\nusers = 1\nhold_secs = 1\n"
	if err := os.WriteFile(typo, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"run", "-q", typo}, {"plan", typo}, {"seed", typo}, {"teardown", typo}} {
		code, _, stderr := runCLIEnv(t, nil, cmd...)
		if code != 104 {
			t.Errorf("%s: exit %d, want 104\n%s", cmd[0], code, stderr)
		}
		if !strings.Contains(stderr, "typo.toml: unknown key population.humanz (did you mean humans?)") {
			t.Errorf("%s: no line naming the key and the key meant:\n%s", cmd[0], stderr)
		}
		for _, bad := range []string{"GoError", "at jsLoad", `\n\tat`, "file://"} {
			if strings.Contains(stderr, bad) {
				t.Errorf("%s: %q in:\n%s", cmd[0], bad, stderr)
			}
		}
	}
}

// A missing operator key is one line and exit 104 for run (it was a JS
// stack and 107), seed and teardown alike.
func TestAMissingOperatorKeyIsOneLineAnd104(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "nokey.toml")
	src := "run_id = \"nokey\"\n[target]\nws_url = \"ws://127.0.0.1:1\"\nhttp_url = \"http://127.0.0.1:1\"\ncommunity_host_template = \"c{n}.{run}.localhost\"\noperator_key_env = \"BUZZLOAD_TEST_NO_SUCH_KEY\"\n[[ramp]]\nusers = 1\nhold_secs = 1\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"seed", p}, {"teardown", p}} {
		code, _, stderr := runCLIEnv(t, nil, cmd...)
		if code != 104 || !strings.Contains(stderr, "no operator key") {
			t.Errorf("%s: exit %d, want 104 naming the key:\n%s", cmd[0], code, stderr)
		}
	}
}
