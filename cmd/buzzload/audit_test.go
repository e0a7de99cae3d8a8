package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Issue 3, "How it starts": the operator secret may come from
// BUZZ_OPERATOR_SECRET (hex); then the printed operator pubkey is that
// key's, no file is written, the secret never appears in the output, and
// SIGINT stops the relay cleanly.
func TestAuditRelayOperatorSecretFromEnvironmentAndSIGINT(t *testing.T) {
	op := nostr.DeriveKeys("audit", nostr.RoleHuman, 7)
	secretFile := t.TempDir() + "/op.key"
	var out, errb syncBuffer
	sigs := make(chan os.Signal, 1)
	env := cliEnv{Stdout: &out, Stderr: &errb, Signals: sigs,
		Env: []string{"BUZZ_OPERATOR_SECRET=" + op.SecretHex(), "BUZZ_OPERATOR_SECRET_FILE=" + secretFile}}
	done := make(chan int, 1)
	go func() { done <- dispatch(context.Background(), []string{"relay", "--listen", "127.0.0.1:0"}, env) }()

	re := regexp.MustCompile(`operator pubkey: +([0-9a-f]{64})`)
	var got string
	for deadline := time.Now().Add(5 * time.Second); got == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			got = m[1]
		}
	}
	if got != op.PubKey() {
		t.Errorf("operator pubkey printed %q, want the key of BUZZ_OPERATOR_SECRET %q; stdout:\n%s", got, op.PubKey(), out.String())
	}
	if _, err := os.Stat(secretFile); !os.IsNotExist(err) {
		t.Errorf("a secret file was written although BUZZ_OPERATOR_SECRET was set (stat: %v)", err)
	}
	sigs <- syscall.SIGINT
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after SIGINT; stderr %q", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("relay did not stop on SIGINT")
	}
	if strings.Contains(out.String()+errb.String(), op.SecretHex()) {
		t.Fatal("the operator secret appears in the relay's output")
	}
}

// Issue 10: without BUZZ_OPERATOR_SECRET the generated secret goes into a new
// private (0700) directory, the printed mode is the file's own, and the file
// and directory are gone after the relay stops; an existing file given by
// --operator-secret-file is refused with exit 1.
func TestRelayGeneratedSecretInAPrivateDirectory(t *testing.T) {
	tmp := t.TempDir()
	var out, errb syncBuffer
	sigs := make(chan os.Signal, 1)
	env := cliEnv{Stdout: &out, Stderr: &errb, Signals: sigs, Env: []string{"TMPDIR=" + tmp}}
	t.Setenv("TMPDIR", tmp) // os.MkdirTemp reads the process environment
	done := make(chan int, 1)
	go func() { done <- dispatch(context.Background(), []string{"relay", "--listen", "127.0.0.1:0"}, env) }()
	re := regexp.MustCompile(`operator secret: written to (\S+) \(mode (\d+)\)`)
	var m []string
	for deadline := time.Now().Add(5 * time.Second); m == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		m = re.FindStringSubmatch(out.String())
	}
	if m == nil {
		t.Fatalf("no secret line; stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	path := m[1]
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || fmt.Sprintf("%04o", st.Mode().Perm()) != m[2] || m[2] != "0600" {
		t.Fatalf("printed mode %s, file %v %v", m[2], st, err)
	}
	dir := filepath.Dir(path)
	if ds, err := os.Lstat(dir); err != nil || !ds.IsDir() || ds.Mode().Perm() != 0o700 || filepath.Dir(dir) != tmp {
		t.Fatalf("secret directory %s: %v %v (want a 0700 directory under %s)", dir, ds, err, tmp)
	}
	sigs <- syscall.SIGINT
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d; stderr %q", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("relay did not stop on SIGINT")
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("secret directory left after stop: %v", err)
	}

	existing := filepath.Join(tmp, "op.key")
	if err := os.WriteFile(existing, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "relay", "--listen", "127.0.0.1:0", "--operator-secret-file", existing)
	if code != 1 || !strings.Contains(stderr, "already exists") || strings.Contains(stdout, "mode 0600") {
		t.Fatalf("existing secret file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
