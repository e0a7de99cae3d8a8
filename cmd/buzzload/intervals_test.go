package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `run` warns at parse time, naming the key, when the run is shorter than
// twice an interval that shapes it; `run -d` of a scenario file sets the
// run's length (the ramp cut or its last hold lengthened) and the warning
// considers it. Fails without SetDuration's wiring: -d replaced the
// populations' scenarios ("function 'default' not found", exit 104).
func TestRunWarnsAboutIntervalsLongerThanTheRun(t *testing.T) {
	t.Parallel() // a subprocess that mostly waits on its timeline
	dir := copyTestdata(t, "ops-tiny.toml")
	p := filepath.Join(dir, "ops-tiny.toml")
	src, _ := os.ReadFile(p)
	src = []byte(strings.Replace(string(src), "[human]\n", "[human]\nmean_session_secs = 4\n", 1))
	if err := os.WriteFile(p, src, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runBin(t, dir, nil, "run", "-q", "--report-interval", "0s", "ops-tiny.toml")
	if code != 0 || !strings.Contains(errs, "human.mean_session_secs: 4 s is more than half the run (5 s)") {
		t.Errorf("exit %d, stderr:\n%s\nstdout:\n%s", code, errs, out)
	}
	code, out, errs = runBin(t, dir, nil, "run", "-q", "--report-interval", "0s", "-d", "8s", "ops-tiny.toml")
	if code != 0 || strings.Contains(errs, "mean_session_secs") || !strings.Contains(out, "users 2  2s–8s") {
		t.Errorf("-d 8s: exit %d, stderr:\n%s\nstdout:\n%s", code, errs, out)
	}
	code, out, errs = runBin(t, dir, []string{"K6_DURATION=3s"}, "run", "-q", "--report-interval", "0s", "ops-tiny.toml")
	if code != 0 || !strings.Contains(errs, "more than half the run (3 s)") || !strings.Contains(out, "users 2  2s–3s") {
		t.Errorf("K6_DURATION=3s: exit %d, stderr:\n%s\nstdout:\n%s", code, errs, out)
	}
}

// writeFile writes dir/name and returns name.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}
