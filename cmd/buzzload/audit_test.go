package main

import (
	"context"
	"os"
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
