package outfile

import (
	"os"
	"path/filepath"
	"testing"
)

// A FIFO (a stand-in for a device node: mknod needs root) and a symlink
// stay what they are: they are written through, never renamed over. A new
// path and a regular file are replaced whole.
func TestReplaceKeepsWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.txt")
	link := filepath.Join(dir, "link")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Replace(link, []byte("via link"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a regular file")
	}
	if b, _ := os.ReadFile(target); string(b) != "via link" {
		t.Fatalf("target holds %q", b)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skip("no mkfifo:", err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- b
	}()
	if err := Replace(fifo, []byte("into the pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "into the pipe" {
		t.Fatalf("fifo read %q", b)
	}
	if fi, _ := os.Lstat(fifo); fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatal("the FIFO was replaced by a regular file")
	}
	fresh := filepath.Join(dir, "new.json")
	if err := Replace(fresh, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("new file: %v %v", fi, err)
	}
}

func TestCheckRefusesUnwritablePathsWithoutTouchingThem(t *testing.T) {
	dir := t.TempDir()
	if err := Check(filepath.Join(dir, "missing", "x.json")); err == nil {
		t.Fatal("a path in a missing directory passed")
	}
	if err := Check(dir); err == nil {
		t.Fatal("a directory passed")
	}
	ok := filepath.Join(dir, "ok.json")
	if err := Check(ok); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ok); err == nil {
		t.Fatal("Check created the file")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("Check left %v behind", entries)
	}
}
