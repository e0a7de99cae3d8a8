package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inspect prints what k6 v1.8.1 prints, byte for byte (issue 28 item 4):
// its whole options struct in its order with null for what is unset, the
// defaults shown with --execution-requirements and for an archive, and an
// archive's requirements equal its script's. The golden files are k6
// v1.8.1's own output for testdata/inspect/script.js.
func TestInspectPrintsWhatK6Prints(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "inspect", "script.js"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "script.js"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	golden := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "inspect", name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if code, _, errs := runBin(t, dir, nil, "archive", "-O", "a.tar", "script.js"); code != 0 {
		t.Fatalf("archive: exit %d %s", code, errs)
	}
	for _, c := range []struct {
		args   []string
		golden string
	}{
		{[]string{"inspect", "script.js"}, "k6-v1.8.1-inspect.json"},
		{[]string{"inspect", "--execution-requirements", "script.js"}, "k6-v1.8.1-requirements.json"},
		{[]string{"inspect", "--execution-requirements", "a.tar"}, "k6-v1.8.1-requirements.json"},
		{[]string{"inspect", "a.tar"}, "k6-v1.8.1-archive-inspect.json"},
	} {
		code, out, errs := runBin(t, dir, nil, c.args...)
		if code != 0 || strings.TrimSpace(out) != golden(c.golden) {
			t.Errorf("%v: exit %d %s\ngot:\n%s\nwant (%s):\n%s", c.args, code, errs, out, c.golden, golden(c.golden))
		}
	}
}
