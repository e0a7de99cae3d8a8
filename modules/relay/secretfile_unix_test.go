//go:build unix

package relay

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A link planted at the secret path (in a shared /tmp anyone can do it) is
// refused: nothing is written through it, and the link stays as it was.
func TestOperatorSecretFileRefusesAPlantedSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "attacker-readable")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, dest := range map[string]string{"to an existing file": target, "dangling": filepath.Join(dir, "not-yet")} {
		t.Run(name, func(t *testing.T) {
			link := filepath.Join(dir, "op-"+strings.ReplaceAll(name, " ", "-")+".key")
			if err := os.Symlink(dest, link); err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.OperatorSecretFile = link
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), "already exists") || !strings.Contains(err.Error(), "BUZZ_OPERATOR_SECRET_FILE") {
				t.Fatalf("New through a planted link: %v", err)
			}
			if b, _ := os.ReadFile(target); len(b) != 0 {
				t.Fatalf("the secret was written through the link (%d bytes)", len(b))
			}
			if _, err := os.Stat(filepath.Join(dir, "not-yet")); !os.IsNotExist(err) {
				t.Fatalf("a dangling link's target was created: %v", err)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("the link was replaced: %v %v", err, fi)
			}
		})
	}
}

// A file another user created at the path (and could still read, or hold
// open) is refused, not truncated, rewritten or re-moded.
func TestOperatorSecretFileRefusesAnotherUsersFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "op.key")
	if err := os.WriteFile(path, []byte("theirs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const otherUID = 65534 // nobody
	if os.Geteuid() == 0 {
		if err := os.Chown(path, otherUID, otherUID); err != nil {
			t.Fatal(err)
		}
	} else if os.Getenv("CI") == "true" {
		t.Fatal("CI runs as root so the file can belong to another user")
	}
	cfg := DefaultConfig()
	cfg.OperatorSecretFile = path
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("New over an existing file: %v", err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("the existing file's mode changed: %v %v", err, st)
	}
	if b, _ := os.ReadFile(path); string(b) != "theirs\n" {
		t.Fatalf("the existing file was rewritten: %q", b)
	}
	if os.Geteuid() == 0 {
		if sys, ok := st.Sys().(*syscall.Stat_t); !ok || sys.Uid != otherUID {
			t.Fatalf("the existing file changed owner: %+v", st.Sys())
		}
	}
}
