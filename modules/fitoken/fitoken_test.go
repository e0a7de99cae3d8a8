package fitoken

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A command source runs once per identity with its pubkey in the
// environment and reuses the token until a minute before its exp; a file
// source answers from the file; neither ever puts a token in an error.
func TestSources(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "runs")
	// A token whose payload is {"exp": now+3600} and whose other parts name the pubkey.
	exp := time.Now().Add(time.Hour).Unix()
	payload := strings.TrimRight(b64(`{"exp":`+itoa(exp)+`}`), "=")
	cmd := `echo run >> ` + count + `; printf 'h%s.` + payload + `.sig' "$` + PubkeyEnv + `"`
	s := FromCommand(cmd)
	ctx := context.Background()
	for range 3 {
		tok, err := s.Assertion(ctx, strings.Repeat("a", 64))
		if err != nil || tok != "h"+strings.Repeat("a", 64)+"."+payload+".sig" {
			t.Fatalf("token %q, %v", tok, err)
		}
	}
	if runs, _ := os.ReadFile(count); strings.Count(string(runs), "run") != 1 {
		t.Errorf("the command ran %d times for one identity, want once while its token is fresh", strings.Count(string(runs), "run"))
	}
	secret := "eyJhbGciOiJFUzI1NiJ9.c2VjcmV0.c2ln"
	bad := FromCommand(`printf '` + secret + ` extra'`)
	if _, err := bad.Assertion(ctx, strings.Repeat("b", 64)); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("a bad output: %v (the error must not carry it)", err)
	}
	failing := FromCommand(`echo 'no issuer' >&2; exit 3`)
	if _, err := failing.Assertion(ctx, strings.Repeat("c", 64)); err == nil || !strings.Contains(err.Error(), "no issuer") {
		t.Errorf("a failing command: %v", err)
	}
	f := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(f, []byte(`{"`+strings.Repeat("d", 64)+`":"`+secret+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fs, err := FromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := fs.Assertion(ctx, strings.Repeat("d", 64)); tok != secret || err != nil {
		t.Errorf("file token %q, %v", tok, err)
	}
	if _, err := fs.Assertion(ctx, strings.Repeat("e", 64)); err == nil || !strings.Contains(err.Error(), "no token for eeee") {
		t.Errorf("a pubkey the file lacks: %v", err)
	}
	if err := os.WriteFile(f, []byte(`{"x": "`+secret+`"`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := FromFile(f); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("a broken file: %v (the error must not quote it)", err)
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
