package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const tinyScript = `export const options = { iterations: 1 };
export default function () {}
`

// Every output path is checked before the run (a path that cannot be
// written is exit 104 naming the flag, no load made), a write that still
// fails at the end exits non-zero (it was 0 for --summary-export and
// --out json), and a device or a symlink at an output path stays what it
// is (--result renamed a temp file over it: as root, --result /dev/null
// broke the machine). Device nodes are private ones in a temp directory.
func TestOutputPathsAreCheckedAndNeverReplaced(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s.js")
	if err := os.WriteFile(script, []byte(tinyScript), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no-such-dir", "x.json")
	for _, flag := range []string{"--summary-export", "--result", "--report-html"} {
		code, _, stderr := runCLI(t, "run", "-q", "--address", "", flag, missing, script)
		if code != 104 || !strings.Contains(stderr, flag+" "+missing+": cannot be written") {
			t.Errorf("%s into a missing directory: exit %d, stderr %q", flag, code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "run", "-q", "--address", "", "--out", "json="+missing, script); code != 104 || !strings.Contains(stderr, "--out json") {
		t.Errorf("--out json into a missing directory: exit %d, stderr %q", code, stderr)
	}
	if os.Getuid() != 0 {
		t.Skip("device nodes need root (mknod)")
	}
	null, full := filepath.Join(dir, "null"), filepath.Join(dir, "full")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skip("mknod:", err)
	}
	if err := syscall.Mknod(full, syscall.S_IFCHR|0o666, 1<<8|7); err != nil {
		t.Skip("mknod:", err)
	}
	if code, _, stderr := runCLI(t, "run", "-q", "--address", "", "--result", null, script); code != 0 {
		t.Errorf("--result to a null device: exit %d, stderr %q", code, stderr)
	}
	if fi, err := os.Lstat(null); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("--result replaced the device node: %v %v", fi.Mode(), err)
	}
	for _, args := range [][]string{{"--summary-export", full}, {"--out", "json=" + full}, {"--result", full}} {
		code, _, stderr := runCLI(t, append(append([]string{"run", "-q", "--address", ""}, args...), script)...)
		if code == 0 {
			t.Errorf("%v: a write that failed (no space left) exited 0; stderr %q", args, stderr)
		}
	}
	if fi, err := os.Lstat(full); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("the full device was replaced: %v %v", fi.Mode(), err)
	}
}
