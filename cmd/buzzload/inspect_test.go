package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inspect prints what k6 v2.2.0 prints, byte for byte (issue 28 item 4,
// issue 46): its whole options struct in its order with null for what is
// unset (v2.2 added handleSummaryTimeout and features), the defaults shown
// with --execution-requirements and for an archive, an archive's
// requirements equal its script's, and no newline at the end. The golden
// files are k6 v2.2.0's own output for testdata/inspect/script.js (v1.8.1's
// differed only by those two keys and the newline).
func TestInspectPrintsWhatK6Prints(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "inspect", "script.js"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "script.js"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"shortcut-stages.js", "bare-vus.js"} {
		b, err := os.ReadFile(filepath.Join("testdata", "inspect", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// One script per segment of segments.js (its SEG placeholder).
	segs, err := os.ReadFile(filepath.Join("testdata", "inspect", "segments.js"))
	if err != nil {
		t.Fatal(err)
	}
	for _, seg := range []string{"0:1/3", "1/3:2/3", "2/3:1"} {
		n := strings.NewReplacer(":", "_", "/", "_").Replace(seg)
		if err := os.WriteFile(filepath.Join(dir, "segments-"+n+".js"), []byte(strings.Replace(string(segs), "SEG", seg, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "inspect", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b) // byte for byte: k6 v2.2.0 ends it without a newline
	}
	if code, _, errs := runBin(t, dir, nil, "archive", "-O", "a.tar", "script.js"); code != 0 {
		t.Fatalf("archive: exit %d %s", code, errs)
	}
	for _, c := range []struct {
		args   []string
		golden string
	}{
		{[]string{"inspect", "script.js"}, "k6-v2.2.0-inspect.json"},
		{[]string{"inspect", "--execution-requirements", "script.js"}, "k6-v2.2.0-requirements.json"},
		{[]string{"inspect", "--execution-requirements", "a.tar"}, "k6-v2.2.0-requirements.json"},
		{[]string{"inspect", "a.tar"}, "k6-v2.2.0-archive-inspect.json"},
		// Shortcut scenarios: none printed as written, only the fields the
		// shortcuts set in the requirements; a bare vus (k6 v2.1's rule)
		// replaces the scenarios there.
		{[]string{"inspect", "shortcut-stages.js"}, "k6-v2.2.0-shortcut-stages.json"},
		{[]string{"inspect", "--execution-requirements", "shortcut-stages.js"}, "k6-v2.2.0-shortcut-stages-requirements.json"},
		{[]string{"inspect", "bare-vus.js"}, "k6-v2.2.0-bare-vus.json"},
		{[]string{"inspect", "--execution-requirements", "bare-vus.js"}, "k6-v2.2.0-bare-vus-requirements.json"},
		// Per segment: a scenario with no VUs in it does not stretch the
		// plan; a segment with no work ends where its first scenario starts.
		{[]string{"inspect", "--execution-requirements", "segments-0_1_3.js"}, "k6-v2.2.0-segments-0_1_3-requirements.json"},
		{[]string{"inspect", "--execution-requirements", "segments-1_3_2_3.js"}, "k6-v2.2.0-segments-1_3_2_3-requirements.json"},
		{[]string{"inspect", "--execution-requirements", "segments-2_3_1.js"}, "k6-v2.2.0-segments-2_3_1-requirements.json"},
	} {
		code, out, errs := runBin(t, dir, nil, c.args...)
		if code != 0 || out != golden(c.golden) {
			t.Errorf("%v: exit %d %s\ngot:\n%s\nwant (%s):\n%s", c.args, code, errs, out, c.golden, golden(c.golden))
		}
	}
}

// k6 v2.1's bare-vus rule warns when `vus` replaces the scenarios; k6
// v2.2.0's plain inspect derives no scenarios and prints no warning, its
// --execution-requirements (and run) do (observed on k6 v2.2.0).
func TestInspectWarnsOfTheVUsOverrideOnlyWithRequirements(t *testing.T) {
	script := filepath.Join(t.TempDir(), "bv.js")
	if err := os.WriteFile(script, []byte("export const options = { vus: 3, scenarios: { s: { executor: 'shared-iterations', iterations: 2 } } };\nexport default function () {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const warn = "`vus=3` overrides scenarios configuration"
	if code, _, errs := runCLI(t, "inspect", script); code != 0 || strings.Contains(errs, warn) {
		t.Errorf("plain inspect: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := runCLI(t, "inspect", "--execution-requirements", script); code != 0 || !strings.Contains(errs, warn) {
		t.Errorf("inspect --execution-requirements: exit %d, stderr %q", code, errs)
	}
}
