// The processes the operator's tests start on loopback: the runners, the
// relay and one-shot commands, with their output kept for failures.

package k8s

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
)

// proc is a started process with its output in files.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  string // stdout+stderr file
	done chan struct{}
	err  error
}

func (p *proc) output() string {
	b, _ := os.ReadFile(p.out)
	return string(b)
}

func (p *proc) exitCode() int {
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		return -1
	}
	return 0
}

// start runs path with argv (argv[0] as given: `k6`) and env, output to a
// file in dir; the test kills it if it is still running at the end.
func start(t *testing.T, dir, name, path string, argv, env []string) *proc {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Stdout: f, Stderr: f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, out: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.exitCode()
	case <-time.After(d):
		t.Fatalf("%s still running after %s:\n%s", p.name, d, p.output())
		return -1
	}
}

// startRelay runs `buzzload relay` on a free loopback port, rate limits
// off (the test counts operations, not throttles), and returns its address.
func startRelay(t *testing.T, bin, dir, name string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "buzzload"), "relay", "--listen", "127.0.0.1:0", "--rate-limit=false")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "BUZZ_OPERATOR_SECRET_FILE=" + filepath.Join(dir, name+"-operator.key")}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "buzzload relay listening on "); ok {
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("buzzload relay did not say where it listens")
		return ""
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitStatus polls GET /v1/status until it answers below 400, as the
// operator does before it starts the test (k6_start.go).
func waitStatus(t *testing.T, p *proc, addr string, d time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	if waitfor.WithinEvery(d, 100*time.Millisecond, func() bool {
		select {
		case <-p.done:
			t.Fatalf("%s exited (%d) before its REST API answered:\n%s", p.name, p.exitCode(), p.output())
		default:
		}
		resp, err := client.Get("http://" + addr + "/v1/status")
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode < 400
	}) {
		return
	}
	t.Fatalf("%s: GET /v1/status did not answer below 400 within %s:\n%s", p.name, d, p.output())
}

// testEnv is the environment of the operator's pods here: PATH with the
// binary as `k6` first, and nothing of the test's own.
func testEnv(bin string, extra ...string) []string {
	return append([]string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + os.TempDir()}, extra...)
}

// run runs a command to its end and returns its exit code and output.
func run(t *testing.T, d time.Duration, env []string, path string, argv ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, path)
	cmd.Args, cmd.Env = argv, env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	return 0, out.String(), errb.String()
}
