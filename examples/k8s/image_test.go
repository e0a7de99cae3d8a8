package k8s

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The image as a pod runs it: UID 10001, working directory /, a writable
// /tmp, `k6` on PATH, the smoke script on the embedded relay writing its
// report to a mounted directory.
func TestImageRunsTheSmokeScenario(t *testing.T) {
	image(t)
	out, errs, code := podmanRun(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "buzzload ") {
		t.Fatalf("version: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = podmanRun(t, []string{"--entrypoint", "sh"}, "-c",
		`id -u; pwd; stat -c %a /tmp; command -v k6; k6 version | head -n 1; echo "$HOME"; touch /tmp/w && echo writable`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 7 || lines[0] != "10001" || lines[1] != "/" || lines[2] != "1777" ||
		lines[3] != "/usr/bin/k6" || !strings.HasPrefix(lines[4], "buzzload ") || lines[6] != "writable" {
		t.Fatalf("inside the image: exit %d\n%s%s", code, out, errs)
	}

	scripts := t.TempDir()
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "scenarios", "local-smoke.js"))
	if err != nil {
		t.Fatal(err)
	}
	toml, err := os.ReadFile(filepath.Join("testdata", "short-smoke.toml"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(scripts, "local-smoke.js"), src)
	write(t, filepath.Join(scripts, "local-smoke.toml"), toml)
	results := t.TempDir()
	if err := os.Chmod(results, 0o777); err != nil { // UID 10001 writes the report
		t.Fatal(err)
	}
	out, errs, code = podmanRun(t, []string{"--user", "10001:10001", "-v", scripts + ":/test:ro", "-v", results + ":/results"},
		"run", "--quiet", "-e", "BUZZ_REPORT=/results/report.json", "/test/local-smoke.js")
	if code != 0 {
		t.Fatalf("smoke in the image: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	raw, err := os.ReadFile(filepath.Join(results, "report.json"))
	if err != nil {
		t.Fatalf("no report on the mounted volume: %v\n%s", err, out)
	}
	var rep struct {
		OK    bool `json:"ok"`
		Steps []struct {
			Ops map[string]struct {
				Count int64 `json:"count"`
			} `json:"ops"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Steps) != 1 || rep.Steps[0].Ops["connect"].Count == 0 || rep.Steps[0].Ops["publish"].Count == 0 {
		t.Fatalf("report: %s", raw)
	}
	if !strings.Contains(out, "result: ok") {
		t.Errorf("the report's text is not on stdout:\n%s", out)
	}
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The initializer's exact script in the image, on the TestRun example's
// script (examples/k8s mounted where the ConfigMap would be): stdout is one
// JSON document with what the operator reads.
func TestImageInitializerOnTheExample(t *testing.T) {
	image(t)
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	archive := "/tmp/buzz-test.js.archived.tar"
	script := initializerScript(archive, "k6 archive /test/buzz-test.js -O "+archive+" ")
	out, errs, code := podmanRun(t, []string{"-v", here + ":/test:ro", "--entrypoint", "sh"}, "-c", script)
	if code != 0 {
		t.Fatalf("initializer: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	doc, err := oneJSONDocument(out)
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	// buzz-test.toml's peak: 2 × (200 humans + 20 agents) VUs.
	if v, _ := doc["maxVUs"].(float64); v < 440 {
		t.Errorf("maxVUs %v:\n%s", doc["maxVUs"], out)
	}
	if d, _ := doc["totalDuration"].(string); d == "" {
		t.Errorf("no totalDuration:\n%s", out)
	}
	if _, ok := doc["scenarios"].(map[string]any)["humans"]; !ok {
		t.Errorf("no humans scenario:\n%s", out)
	}

	// Without k6 on PATH the script says so and exits 127 (what the
	// operator reports for an image that is not a k6 image).
	_, errs, code = podmanRun(t, []string{"--entrypoint", "sh", "-e", "PATH=/bin"}, "-c", script)
	if code != 127 || !strings.Contains(errs, missingK6) {
		t.Errorf("no k6: exit %d, stderr %q", code, errs)
	}
}
