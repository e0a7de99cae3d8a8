package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/gorilla/websocket"
)

// syncBuffer is a bytes.Buffer safe for the command's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRelayCommandServesAndStopsOnSignal(t *testing.T) {
	var out, errb syncBuffer
	sigs := make(chan os.Signal, 1)
	secretFile := t.TempDir() + "/op.key"
	env := cliEnv{Stdout: &out, Stderr: &errb, Signals: sigs,
		Env: []string{"BUZZ_OPERATOR_SECRET_FILE=" + secretFile, "BUZZ_RATE_LIMIT=false"}}
	done := make(chan int, 1)
	go func() { done <- dispatch(context.Background(), []string{"relay", "--listen", "127.0.0.1:0"}, env) }()

	wsRe := regexp.MustCompile(`websocket: +(ws://\S+)`)
	var wsURL string
	waitfor.Within(5*time.Second, func() bool {
		if m := wsRe.FindStringSubmatch(out.String()); m != nil {
			wsURL = m[1]
		}
		return wsURL != ""
	})
	if wsURL == "" {
		t.Fatalf("no WebSocket URL printed; stdout %q stderr %q", out.String(), errb.String())
	}
	for _, want := range []string{"http://127.0.0.1:", "relay pubkey:", "operator pubkey:", "written to " + secretFile} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	secret, _ := os.ReadFile(secretFile)
	if s := strings.TrimSpace(string(secret)); len(s) != 64 || strings.Contains(out.String()+errb.String(), s) {
		t.Fatal("operator secret missing from its file or printed")
	}
	ws, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, msg, err := ws.ReadMessage()
	if err != nil || !strings.HasPrefix(string(msg), `["AUTH","`) {
		t.Fatalf("first frame %q %v", msg, err)
	}
	resp, err := http.Get(strings.Replace(wsURL, "ws://", "http://", 1) + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/health: %v", err)
	}
	resp.Body.Close()
	// The second line is the metrics URL alone (issue 45), and it answers
	// Prometheus text with the socket just opened counted.
	lines := strings.Split(out.String(), "\n")
	addr := strings.TrimPrefix(lines[0], "buzzload relay listening on ")
	if len(lines) < 2 || lines[1] != "http://"+addr+"/metrics" {
		t.Fatalf("first lines %q, want the listening line then http://%s/metrics", lines[:2], addr)
	}
	resp, err = http.Get(lines[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "buzz_ws_connections_active 1\n") {
		t.Fatalf("/metrics %d:\n%s", resp.StatusCode, body)
	}

	sigs <- syscall.SIGTERM
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d; stderr %q", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("relay did not stop on SIGTERM")
	}
	// The open socket was closed with 1012 "relay restarting".
	ws.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, _, err = ws.ReadMessage()
	if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != websocket.CloseServiceRestart || ce.Text != "relay restarting" {
		t.Fatalf("socket end: %v", err)
	}
	if !strings.Contains(out.String(), "stopped") {
		t.Errorf("no shutdown line: %q", out.String())
	}
}

func TestRelayHelpDocumentsFlagsAndEnvironment(t *testing.T) {
	code, out, _ := runCLI(t, "relay", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--listen", "[BUZZ_LISTEN]", "--rate-limit", "[BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN]",
		"[BUZZ_SEND_BUFFER]", "BUZZ_OPERATOR_SECRET", "--legacy-rate-limit-notice", "[BUZZ_V1_ENABLED]", "[BUZZ_MAX_EVENTS_PER_COMMUNITY]"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestRelayBadConfigurationNamesTheKey(t *testing.T) {
	cases := []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--listen", "nonsense"}, nil, "BUZZ_LISTEN"},
		{nil, []string{"BUZZ_SEND_BUFFER=lots"}, "BUZZ_SEND_BUFFER"},
		{[]string{"--send-buffer", "0"}, nil, "BUZZ_SEND_BUFFER"},
		{nil, []string{"BUZZ_OPERATOR_SECRET=zz"}, "BUZZ_OPERATOR_SECRET"},
		{[]string{"--frobnicate"}, nil, "frobnicate"},
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), append([]string{"relay"}, tc.args...), cliEnv{Stdout: &out, Stderr: &errb, Env: tc.env})
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v %v: exit %d, stderr %q", tc.args, tc.env, code, errb.String())
		}
		if strings.Contains(errb.String(), "zz\"") {
			t.Errorf("secret value echoed: %q", errb.String())
		}
	}
}

// The operator secret may come from BUZZ_OPERATOR_SECRET (hex); then the printed operator pubkey is that
// key's, no file is written, the secret never appears in the output, and
// SIGINT stops the relay cleanly.
func TestRelayOperatorSecretFromEnvironmentAndSIGINT(t *testing.T) {
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
	waitfor.Within(5*time.Second, func() bool {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			got = m[1]
		}
		return got != ""
	})
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

// Without BUZZ_OPERATOR_SECRET the generated secret goes into a new
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
	waitfor.Within(5*time.Second, func() bool {
		m = re.FindStringSubmatch(out.String())
		return m != nil
	})
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
