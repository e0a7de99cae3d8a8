package extension_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/extension"
)

var manifestMetricRe = regexp.MustCompile(`(?m)^\s*- \{ name: (buzz_[a-z_]+),`)

func manifestMetrics(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "xk6.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range manifestMetricRe.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

// xk6.yaml describes this module (name, import path, JS API, metrics): the
// manifest's import path is the module's, and its metrics
// are exactly the table of docs/architecture.md.
func TestManifestMatchesModuleAndArchitecture(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "xk6.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^import_path: ` + regexp.QuoteMeta(extension.ImportPath) + `$`).Match(b) {
		t.Errorf("xk6.yaml import_path is not %s", extension.ImportPath)
	}
	for _, api := range []string{"load(", "options(", "setup()", "human()", "agent()", "hotAuthor()", "report(", "connect(", "http("} {
		if !strings.Contains(string(b), api) {
			t.Errorf("xk6.yaml js_api lacks %s", api)
		}
	}
	arch, err := os.ReadFile(filepath.Join("..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(buzz_[a-z_]+)` \\|").FindAllStringSubmatch(string(arch), -1) {
		want[m[1]] = true
	}
	got := manifestMetrics(t)
	if len(want) == 0 || len(got) == 0 {
		t.Fatalf("no metrics found: architecture %v, manifest %v", want, got)
	}
	for m := range want {
		if !got[m] {
			t.Errorf("%s is in docs/architecture.md but not in xk6.yaml", m)
		}
	}
	for m := range got {
		if !want[m] {
			t.Errorf("%s is in xk6.yaml but not in docs/architecture.md", m)
		}
	}
}
